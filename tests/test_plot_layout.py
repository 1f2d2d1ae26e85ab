"""Every plot view, drawn with long names at three figure sizes (a journal's single and
double column in the paper style, matplotlib's default figure): no text runs into another,
leaves the figure or (in the paper style) is smaller than 7 pt, as the Agg renderer measures
the boxes.  The cases are docs/gallery.py's, which renders the docs' gallery from them; the
views of methods declared in xedm/api.py are drawn here too (a new view is checked at once)."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import xedm  # noqa: E402
from xedm import api, plot  # noqa: E402

_GALLERY = Path(__file__).resolve().parents[1] / "docs" / "gallery.py"
if not _GALLERY.exists():  # an installed wheel's tests, without the docs
    pytest.skip("docs/gallery.py is not here", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("xedm_gallery", _GALLERY)
gallery = importlib.util.module_from_spec(_spec)
sys.modules["xedm_gallery"] = gallery  # (its dataclass looks its module up)
_spec.loader.exec_module(gallery)

TIMES: dict = {}


@pytest.fixture(scope="module")
def data():
    return gallery.series()


@pytest.fixture(scope="module")
def results(data):
    out = gallery.results(data)
    # the first declared call of each method with a view, on the same long-named series
    with xedm.set_options(progress=False):
        for m in api.METHODS:
            if not (m.view and m.lazy_cases) or any(c.name == m.name for c in gallery.CASES):
                continue
            _, kwargs = m.lazy_cases[0]
            res = api.method(m.name).function()(data, **kwargs)
            if "series" in res.dims and m.view in ("prediction", "smap_coefficients"):
                res = res.isel(series=0)
            out[m.name] = (res, {})
    return out


def test_overlap_check_can_fail():
    fig, ax = plt.subplots()
    ax.set_title("a title")
    ax.text(0.5, 1.02, "on the title", transform=ax.transAxes)
    ax.text(1.5, 0.5, "outside", transform=ax.transAxes)
    ax.text(0.2, 0.2, "tiny", fontsize=5)
    problems = plot.text_problems(fig, min_size=7)
    assert any("overlaps" in p for p in problems) and any("leaves" in p for p in problems)
    assert any("'tiny' is 5 pt" in p for p in problems)
    # turned text is measured by its turned box: two parallel 45° labels side by side are
    # apart though their upright boxes overlap
    fig, ax = plt.subplots()
    for x in (0.4, 0.45):
        ax.text(x, 0.5, "a long turned label", rotation=45, rotation_mode="anchor",
                transform=ax.transAxes)
    assert plot.text_problems(fig) == []
    plt.close("all")


@pytest.mark.parametrize("size", list(gallery.SIZES))
def test_every_view_fits(results, size):
    """Draw every view (``result.edm.plot()``) at ``size``; each figure's texts must neither
    overlap nor leave it, nor be under 7 pt in the paper style."""
    drawn, problems = set(), {}
    sizes = {c.name: c.sizes for c in gallery.CASES}
    for name, (result, kwargs) in results.items():
        if size not in sizes.get(name, gallery.SIZES):
            continue
        t0 = time.perf_counter()
        fig = gallery.draw(result, kwargs, size)
        bad = gallery.problems(fig, size)
        TIMES[(name, size)] = time.perf_counter() - t0
        made = plot.made_by(result)
        lagged = made in ("ccm", "xmap") and "Tp" in result.dims
        drawn.add("lag_plot" if lagged else plot.VIEWS[made].__name__)
        if bad:
            problems[name] = bad[:4]
        plt.close("all")
    missing = {v.__name__ for v in plot.VIEWS.values()} - drawn
    assert not missing, f"views never drawn (add a case to docs/gallery.py): {missing}"
    print(sorted(TIMES.items(), key=lambda kv: -kv[1])[:4])
    assert not problems, f"{len(problems)} figures with text problems: {problems}"
