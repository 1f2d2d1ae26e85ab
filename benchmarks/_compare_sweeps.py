"""Rows of benchmarks/compare.py for the sweeps pyEDM has beyond embed_dimension:
PredictExclusionRadius (xedm ``predict_exclusion_radius``).  xedm and pyEDM only (kEDM has
no such sweep)."""

from __future__ import annotations

from _compare_data import as_dataarray, as_frame
from _compare_measure import Row, maxabs

#: pyEDM's default radii, which both tools get
RADII = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30]


def exclusion_row(bench, name, L, E=3):
    """Simplex skill over pyEDM's 18 default exclusion radii, leave-one-out on all of L."""
    import numpy as np

    x = bench.series(L)
    row = Row(name, f"predict_exclusion_radius L={L:,} E={E} ({len(RADII)} radii)",
              target="" if bench.quick else ">= 20x pyEDM")
    f = bench.xfn("predict_exclusion_radius")
    rho_x = None
    if f is None:
        row.notes.append("xedm.predict_exclusion_radius missing")
    else:
        da = as_dataarray(x)
        row.xedm_s, res = bench.run_tool(row, "xedm",
                                         lambda: f(da, E=E, exclusion_radius=RADII))
        if res is not None:
            rho_x = np.asarray(res["rho"].values, dtype=float)
            row.rho = float(np.nanmax(rho_x))
    if bench.pyedm is not None:
        df = as_frame({"x": x})
        row.pyedm_s, out = bench.run_tool(
            row,
            "pyEDM",
            lambda: bench.pyedm.PredictExclusionRadius(
                df, columns="x", target="x", lib=f"1 {L}", pred=f"1 {L}", E=E, Tp=1, tau=-1,
                exclusionRadius=RADII, numProcess=bench.threads, kdWorkers=1,
                showPlot=False),
        )
        if out is not None and rho_x is not None:
            row.d_rho_pyedm = maxabs((rho_x, out["rho"].to_numpy(dtype=float)))
    row.notes.append("pyEDM rho rounded to 6 dp; pyEDM runs the radii in a process pool")
    return row
