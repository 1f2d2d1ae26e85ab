"""Rows of benchmarks/compare.py for what only xedm and pyEDM do (issue 24): Multiview and
generative (closed-loop) forecasts.  kEDM has neither, so its columns stay blank.

- ``multiview-2k``: pyEDM's block_3sp (x_t, y_t, z_t) repeated to L = 2,000 plus noise of
  10 % of each column's sd (exact copies make every view's in-sample rho 1, all ties),
  E = 3, D = 3 (84 views), the defaults otherwise (in-sample ranking on the first half,
  forecast of the second); the rho agreement is the largest |rho| difference over the top
  views and the ensemble forecast, and the notes say whether both tools ranked the same views.
- ``generate-simplex-100`` / ``generate-smap-100``: 100 closed-loop steps from the first
  L = 1,000 points of the Lorenz-63 x series (simplex E = 3; S-map E = 3, theta = 2); the rho
  is each tool's forecast against the 100 points that follow in the data, and the notes give
  the largest difference between the two tools' forecasts.  S-map gets knn = L - 10 in both
  (their defaults differ on purpose: CONVENTIONS.md, difference 2).
"""

from __future__ import annotations

from _compare_data import as_dataarray, as_frame
from _compare_measure import Row, maxabs, pyedm_rho, rho_of

MV_L, MV_E, MV_D = 2_000, 3, 3
GEN_L, GEN_STEPS = 1_000, 100


def _block_3sp(pyedm, L, noise=0.1, seed=0):
    """block_3sp's x_t, y_t, z_t (pyEDM's own sample data) tiled to L rows, plus Gaussian
    noise of ``noise`` times each column's sd: exact copies would put a copy of every state in
    the library at distance 0, every view's in-sample rho would be 1, and the ranking would
    be all ties."""
    import numpy as np

    df = pyedm.sampleData["block_3sp"]
    reps = -(-L // len(df))
    rng = np.random.default_rng(seed)
    out = {}
    for c in ("x_t", "y_t", "z_t"):
        v = np.tile(df[c].to_numpy(float), reps)[:L]
        out[c] = v + noise * v.std() * rng.standard_normal(L)
    return out


def multiview_row(bench, name, L=MV_L, E=MV_E, D=MV_D, k=None):
    import numpy as np
    import xarray as xr

    row = Row(name, f"multiview block_3sp x{L / 198:.1f} +10% noise L={L:,} E={E} D={D}",
              target=">= 20x pyEDM")
    f = bench.xfn("multiview")
    if bench.pyedm is None:
        row.notes.append("needs pyEDM for its sample data (block_3sp)")
        return row
    cols = _block_3sp(bench.pyedm, L)
    rx = rp = None
    if f is None:
        row.notes.append("xedm.multiview missing")
    else:
        ds = xr.Dataset({c: ("time", v) for c, v in cols.items()},
                        coords={"time": np.arange(1, L + 1)})
        row.xedm_s, rx = bench.run_tool(row, "xedm", lambda: f(ds, list(cols), "x_t", E, D=D,
                                                                    multiview=k))
    df = as_frame(cols)
    row.pyedm_s, rp = bench.run_tool(row, "pyEDM", lambda: bench.pyedm.Multiview(
        df, columns="x_t y_t z_t", target="x_t", E=E, D=D, multiview=k or 0,
        numProcess=bench.threads,
        returnObject=True))
    if rx is not None and rp is not None:
        same = rx.view_columns.values.tolist() == [list(c) for c in rp.View["Columns"]]
        row.notes.append(f"same top {rx.sizes['view']} views in the same order: {same}")
        rho_p = pyedm_rho(rp.Projection)
        row.d_rho_pyedm = maxabs((rx.view_rho.values, rp.View["rho"].to_numpy()),
                                 (float(rx.rho), rho_p))
        row.rho = float(rx.rho)
    return row


def generate_row(bench, name, kind, L=GEN_L, steps=GEN_STEPS, E=3, theta=2.0):
    x = bench.series(L + steps)
    truth = x[L:]
    label = f"{kind} generate_steps={steps} L={L:,} E={E}" + (
        f" theta={theta:g}" if kind == "smap" else "")
    row = Row(name, label, target=">= 20x pyEDM")
    f = bench.xfn(kind)
    px = pp = None
    if f is None:
        row.notes.append(f"xedm.{kind} missing")
    else:
        da = as_dataarray(x[:L])
        kw = {"theta": theta, "knn": L - 10} if kind == "smap" else {}
        row.xedm_s, out = bench.run_tool(row, "xedm",
                                         lambda: f(da, E, generate_steps=steps, **kw))
        if out is not None:
            px = out.prediction.values
            row.rho = rho_of(truth, px)
    if bench.pyedm is not None:
        df = as_frame({"x": x[:L]})
        fn = bench.pyedm.Simplex if kind == "simplex" else bench.pyedm.SMap
        kw = {"theta": theta, "knn": L - 10} if kind == "smap" else {}
        row.pyedm_s, out = bench.run_tool(row, "pyEDM", lambda: fn(
            df, columns="x", target="x", lib=f"1 {L}", pred="1 2", E=E, generateSteps=steps,
            **kw))
        if out is not None:
            pp = (out if kind == "simplex" else out["predictions"])["Predictions"].to_numpy()
    if px is not None and pp is not None:
        row.d_rho_pyedm = maxabs((row.rho, rho_of(truth, pp)))
        row.notes.append(f"max |forecast xedm - pyEDM| = {maxabs((px, pp)):.2g}")
    return row


def plan_rows(bench):
    """(name, callable) rows for Bench.plan (``--quick``: 3 views, 5 steps: seconds; two
    views averaged, since pyEDM 2.5.7's Multiview fails when it averages only one)."""
    q = bench.quick
    return [
        ("multiview-2k", lambda: multiview_row(bench, "multiview-2k", 300 if q else MV_L,
                                               E=1 if q else MV_E, D=2 if q else MV_D,
                                               k=2 if q else None)),
        ("generate-simplex-100", lambda: generate_row(
            bench, "generate-simplex-100", "simplex", 300 if q else GEN_L, 5 if q else GEN_STEPS)),
        ("generate-smap-100", lambda: generate_row(
            bench, "generate-smap-100", "smap", 300 if q else GEN_L, 5 if q else GEN_STEPS)),
    ]
