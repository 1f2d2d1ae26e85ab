"""Every plot view, drawn with long names and many pairs: no text runs into another or out of
the figure (the boxes the Agg renderer gives).  The views come from xedm/api.py: a new
public function with a view is drawn here from its declared ``lazy_cases`` calls."""

from __future__ import annotations

import time
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import xedm  # noqa: E402
from xedm import api, plot  # noqa: E402
from xedm.plot._base import renderer  # noqa: E402

NAMES = ["sea_surface_temperature_north_pacific_anomaly", "anchovy landings in tonnes",
         "sardine_biomass_index_southern_california", "upwelling index (CUI) at 33N"]
VAR = "north_pacific_sea_surface_temperature_long_name"

#: calls beyond the declared lazy cases: the views' harder shapes (and a view whose method
#: declares no lazy case); (method, keyword arguments, input: "one" series, or "table", a
#: Dataset of one variable per series)
EXTRA = {
    "ccm_surrogates": ("ccm", {"lib_sizes": [20, 50, 80], "E": 2, "samples": 4,
                               "surrogates": 9, "seed": 0, "columns": NAMES}, "table"),
    "xmap_annotated": ("xmap", {"E": 2, "surrogates": 9, "seed": 0, "columns": NAMES},
                       "table"),
    "xmap_lagged": ("xmap", {"E": 2, "Tp": [-2, -1, 0], "columns": NAMES}, "table"),
    "recurrence_plot": ("recurrence_plot", {"E": 2, "recurrence_rate": 0.1}, "one"),
    "rqa_histograms": ("rqa", {"E": 2, "eps": 0.2}, "one"),
    "causal_network": ("causal_network", {"E": 2, "surrogates": 9, "seed": 0}, "all"),
}


@pytest.fixture(scope="module")
def data():
    x = xedm.datasets.many_series(len(NAMES), 90, seed=4).x.transpose("series", "time")
    return x.assign_coords(series=NAMES).rename(VAR)


def _cases():
    # the first declared call of each method with a view (ccm's: with surrogates, below)
    cases = [(m.name, *m.lazy_cases[0], "all") for m in api.METHODS
             if m.view and m.lazy_cases and m.name != "ccm"]
    cases += [(name, case, kw, one) for case, (name, kw, one) in EXTRA.items()]
    return cases


CASES = _cases()
TIMES: dict = {}


def visible_texts(fig):
    """(text, box) of every text the figure draws: titles, labels, tick labels, legends,
    annotations, the figure's own texts."""
    r = renderer(fig)
    fig.draw_without_rendering()
    found = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        found += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.axison:
            found += [ax.xaxis.label, ax.yaxis.label]
            for axis in (ax.xaxis, ax.yaxis):
                for tick in axis._update_ticks():  # the ticks drawn (inside the view)
                    found += [tick.label1, tick.label2]
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            found += [*leg.get_texts(), leg.get_title()]
    found += [t for t in (fig._suptitle, fig._supxlabel, fig._supylabel) if t is not None]
    found += [*fig.texts, *(t for leg in fig.legends for t in leg.get_texts())]
    unique = list({id(t): t for t in found}.values())  # (the suptitle is in fig.texts too)
    return [(t, t.get_window_extent(r)) for t in unique
            if t.get_visible() and t.get_text().strip()]


def layout_problems(fig) -> list[str]:
    texts = visible_texts(fig)
    page = fig.bbox
    out = [f"{t.get_text()!r} leaves the figure ({b} not in {page})" for t, b in texts
           if b.x0 < page.x0 - 1 or b.y0 < page.y0 - 1 or b.x1 > page.x1 + 1
           or b.y1 > page.y1 + 1]
    for i, (t, a) in enumerate(texts):
        for u, b in texts[i + 1:]:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1:
                out.append(f"{t.get_text()!r} overlaps {u.get_text()!r}")
    return out


def test_overlap_check_can_fail():
    fig, ax = plt.subplots()
    ax.set_title("a title")
    ax.text(0.5, 1.02, "on the title", transform=ax.transAxes)
    ax.text(1.5, 0.5, "outside", transform=ax.transAxes)
    problems = layout_problems(fig)
    assert any("overlaps" in p for p in problems) and any("leaves" in p for p in problems)
    plt.close(fig)


def test_every_view_fits(data):
    """Draw every view of every registered method (``result.edm.plot()``) with long names
    and many pairs; each figure's texts must neither overlap nor leave it."""
    drawn, problems = set(), {}
    with xedm.set_options(progress=False):
        for name, case, kwargs, one in CASES:
            given = {"one": data.isel(series=0), "all": data,
                     "table": data.to_dataset("series")}[one]
            result = api.method(name).function()(given, **kwargs)
            if "series" in result.dims and name in ("simplex", "smap", "recurrence_network"):
                result = result.isel(series=0)  # their views draw one series
            lagged = name in ("ccm", "xmap") and "Tp" in result.dims  # a list of Tp
            view = plot.lag_plot if lagged else plot.VIEWS[name]
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.filterwarnings("error", "constrained_layout not applied")
                out = plot.plot(result)
                fig = out if hasattr(out, "savefig") else out.figure
                bad = layout_problems(fig)
            TIMES[case] = time.perf_counter() - t0
            drawn.add(view.__name__)
            if bad:
                problems[f"{case}: {view.__name__}"] = bad[:4]
            plt.close("all")
    missing = {v.__name__ for v in plot.VIEWS.values()} - drawn
    assert not missing, f"views never drawn (declare a lazy case or add one to EXTRA): {missing}"
    assert "lag_plot" in drawn
    assert not problems, problems
    print(sorted(TIMES.items(), key=lambda kv: -kv[1])[:4])
    print(f"views checked: {len(drawn)} views ({sorted(drawn)}) in {len(CASES)} figures")
