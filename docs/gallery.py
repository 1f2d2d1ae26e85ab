"""The gallery of xedm's plot views: every view of ``result.edm.plot()`` drawn with long
series names, at three figure sizes (a journal's single and double column in the paper style,
and matplotlib's default screen figure).

``python docs/gallery.py`` renders every case into ``docs/_static/gallery`` (PNG, at the
single- and double-column widths), writes the page ``docs/gallery.md`` that shows them, and
prints any text problem (:func:`xedm.plot.text_problems`); ``tests/test_plot_layout.py``
draws the same cases with the same code at the three sizes and fails on any.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

import xedm
from xedm import plot

#: long series names, as real data has them
NAMES = ["sea_surface_temperature_north_pacific_anomaly", "anchovy landings in tonnes",
         "sardine_biomass_index_southern_california", "upwelling index (CUI) at 33N"]
VAR = "north_pacific_sea_surface_temperature_long_name"

#: the three figure sizes: (style, width) as result.edm.plot takes them
SIZES = {"single": ("paper", "single"), "double": ("paper", "double"), "screen": (None, None)}


@dataclass
class Case:
    """One figure of the gallery: a result (made from the shared ``data``) and how it is
    drawn."""

    name: str
    caption: str
    make: object  # data -> result
    kwargs: dict = field(default_factory=dict)
    sizes: tuple = tuple(SIZES)


def coupled(n_series: int = len(NAMES), n: int = 120, seed: int = 4) -> xr.Dataset:
    """:func:`xedm.datasets.many_series` with a few links among ``n_series`` series."""
    return xedm.datasets.many_series(n_series, n, seed=seed, density=0.3, coupling=0.3)


def series(n_series: int = len(NAMES), n: int = 120, seed: int = 4) -> xr.DataArray:
    """``n_series`` coupled logistic maps named by :data:`NAMES` (numbered beyond them)."""
    x = coupled(n_series, n, seed).x.transpose("series", "time")
    names = [NAMES[i] if i < len(NAMES) else f"{NAMES[i % len(NAMES)]}_{i}"
             for i in range(n_series)]
    return x.assign_coords(series=names).rename(VAR)


def network_result(n: int, seed: int = 0, long_names: bool = True) -> xr.Dataset:
    """A result with the variables and attrs of :func:`xedm.causal_network` for ``n``
    series (``link``, ``undetermined``, ``decision``, ``rho``, ``p_value``, ``q_value``,
    ``driver_Tp``), made by hand so that a 100-series network costs no computation: series
    in groups of about five, linked mostly within their group."""
    rng = np.random.default_rng(seed)
    names = ([f"{NAMES[i % len(NAMES)][:18 + i % 17]}_{i}" for i in range(n)] if long_names
             else [f"s{i}" for i in range(n)])
    group = np.sort(rng.integers(0, max(1, n // 5), n))
    same = group[:, None] == group[None, :]
    p_link = np.where(same, 0.35, 0.4 / n)
    link = rng.random((n, n)) < p_link
    np.fill_diagonal(link, False)
    undetermined = ~link & (rng.random((n, n)) < np.where(same, 0.1, 0.2 / n))
    np.fill_diagonal(undetermined, False)
    rho = np.where(link, rng.uniform(0.3, 0.95, (n, n)), rng.uniform(0.0, 0.3, (n, n)))
    np.fill_diagonal(rho, 1.0)
    surrogates = 19
    p = np.where(link, 1 / (surrogates + 1), rng.uniform(0.1, 1, (n, n)))
    q = np.where(link, rng.uniform(0.001, 0.08, (n, n)), np.minimum(1.0, p * 2))
    lags = rng.choice([-2, -1, 0], (n, n), p=[0.3, 0.3, 0.4])
    decision = np.where(link, "link", np.where(undetermined, "undetermined", "no link"))
    dims = ("library", "target")
    return xr.Dataset(
        {"rho": (dims, rho), "p_value": (dims, p), "q_value": (dims, q),
         "driver_Tp": (dims, lags), "link": (dims, link),
         "undetermined": (dims, undetermined), "decision": (dims, decision)},
        coords={"library": names, "target": names},
        attrs={"xedm_function": "causal_network", "alpha": 0.05, "surrogates": surrogates,
               "p_method": "normal",
               "E_max": 2, "tau": 1, "lags": [-2, -1, 0, 1, 2]})


def _ccm(data):
    return xedm.ccm(data.to_dataset("series"), columns=NAMES, lib_sizes=[20, 50, 80], E=2,
                    samples=4, surrogates=19, seed=0)


def _xmap(data):
    out = xedm.xmap(data.to_dataset("series"), columns=NAMES, E=2, surrogates=99, seed=0)
    return out


def _truth(data):
    adj = coupled().adjacency
    return adj.assign_coords(driver=NAMES, driven=NAMES)


def _smap(data):
    return data.isel(series=0).edm.smap(E=2, theta=2.0)


CASES = [
    Case("embed_dimension", "skill against E, the chosen E starred",
         lambda d: d.isel(series=0).edm.embed_dimension(E_max=6)),
    Case("predict_interval", "skill against the horizon Tp",
         lambda d: d.isel(series=0).edm.predict_interval(E=2, Tp_max=5)),
    Case("predict_nonlinear", "skill against the S-map nonlinearity θ of four series",
         lambda d: d.edm.predict_nonlinear(E=2,
                                            theta=[0.0, 0.5, 1.0, 2.0, 4.0])),
    Case("simplex", "observed and predicted, the skill in the title",
         lambda d: d.isel(series=0).edm.simplex(E=2)),
    Case("smap", "the forecast and the S-map coefficients over time", _smap),
    Case("ccm", "CCM convergence, one panel per pair of series, surrogate band and p-values "
         "(p ≤ 1/(n+1) at the floor of n surrogates)", _ccm),
    Case("xmap", "the causal map: significant cells outlined and starred, known links "
         "dotted", _xmap, {"truth": "truth"}),
    Case("xmap_lagged", "skill against the lag Tp (extended cross map)",
         lambda d: xedm.xmap(d.to_dataset("series"), columns=NAMES, E=2, Tp=[-2, -1, 0, 1])),
    Case("network_10", "causal network of 10 series: grouped circle, colour = lag, "
         "dashed grey = undetermined", lambda d: network_result(10)),
    Case("network_30", "causal network of 30 series", lambda d: network_result(30, seed=1)),
    Case("network_100", "causal network of 100 series (double column)",
         lambda d: network_result(100, seed=2), sizes=("double", "screen")),
    Case("network_matrix", "the network as a matrix: links outlined in black, significant "
         "cells in vermilion, undetermined pairs hatched", lambda d: network_result(12, seed=3),
         {"kind": "matrix"}),
    Case("network_matrix_30", "the matrix of 30 series (double column)",
         lambda d: network_result(30, seed=1), {"kind": "matrix"}, sizes=("double", "screen")),
    Case("rqa", "RQA measures against the threshold ε",
         lambda d: d.isel(series=0).edm.rqa(E=2, eps=[0.05, 0.1, 0.2])),
    Case("rqa_histograms", "line-length histograms of one RQA",
         lambda d: d.isel(series=0).edm.rqa(E=2, eps=0.2)),
    Case("recurrence_plot", "a recurrence plot",
         lambda d: d.isel(series=0).edm.recurrence_plot(E=2, recurrence_rate=0.1)),
    Case("recurrence_network", "a recurrence network",
         lambda d: d.isel(series=0).edm.recurrence_network(E=2, eps=0.2)),
]


def results(data=None) -> dict:
    """name -> (result, plot keywords) of every case."""
    data = series() if data is None else data
    out = {}
    with xedm.set_options(progress=False):
        for case in CASES:
            kwargs = dict(case.kwargs)
            if kwargs.get("truth") == "truth":
                kwargs["truth"] = _truth(data)
            out[case.name] = (case.make(data), kwargs)
    return out


def draw(result, kwargs: dict, size: str):
    """The Figure of ``result.edm.plot(**kwargs)`` at ``size`` (a key of :data:`SIZES`)."""
    style, width = SIZES[size]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "constrained_layout not applied")
        out = plot.plot(result, style=style, width=width, **kwargs)
    return out if hasattr(out, "savefig") else out.figure


def problems(fig, size: str) -> list[str]:
    """The text problems of a figure drawn at ``size`` (7 pt at least in the paper style)."""
    return plot.text_problems(fig, min_size=plot.style.MIN_PT if SIZES[size][0] else None)


def _shrink(path: Path) -> None:
    """The PNG at ``path`` in 64 colours (a third of the bytes; the docs keep the images)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def render(outdir: Path, sizes=("single", "double"), dpi: int = 110) -> dict:
    """Write ``<case>_<size>.png`` of every case into ``outdir``; name -> problems."""
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    found = {}
    for name, (result, kwargs) in results().items():
        case = next(c for c in CASES if c.name == name)
        for size in sizes:
            if size not in case.sizes:
                continue
            fig = draw(result, kwargs, size)
            bad = problems(fig, size)
            if bad:
                found[f"{name}_{size}"] = bad
            path = outdir / f"{name}_{size}.png"
            fig.savefig(path, dpi=dpi)
            plt.close(fig)
            _shrink(path)
    return found


PAGE_HEAD = """# Gallery

Every view of `result.edm.plot()`, drawn by `docs/gallery.py` in the paper style
(`result.edm.plot(style="paper", width="single")` and `width="double"`) with long series
names.  The same code draws them in `tests/test_plot_layout.py`, at these two widths and at
matplotlib's default size, and fails if any text overlaps another, leaves the figure or is
smaller than 7 pt.  Regenerate the page and its images with `python docs/gallery.py`.
The networks of 30 and 100 series and the matrix are made by hand with the variables of
{func}`xedm.causal_network` (so that the test needs no network computation); the rest are
real results of 120 steps of coupled logistic maps.
"""


def page(sizes=("single", "double")) -> str:
    """The text of docs/gallery.md: one section per case, its image at each size."""
    out = [PAGE_HEAD]
    for case in CASES:
        out.append(f"\n## {case.name.replace('_', ' ')}\n\n{case.caption[0].upper()}"
                   f"{case.caption[1:]}.\n")
        for size in sizes:
            if size in case.sizes:
                width = "50%" if size == "single" else "100%"
                out.append(f"\n```{{image}} _static/gallery/{case.name}_{size}.png\n"
                           f":alt: {case.name} at the {size}-column width\n"
                           f":width: {width}\n```\n")
    return "".join(out)


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    here = Path(__file__).parent
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else here / "_static" / "gallery"
    bad = render(where)
    (here / "gallery.md").write_text(page())
    for key, items in bad.items():
        print(key, items[:3])
    print(f"{len(CASES)} cases written to {where} and docs/gallery.md; {len(bad)} figures "
          "with text problems")
