"""Explorers: widget values set in code; the state and the redrawn figure checked."""

from __future__ import annotations

import asyncio
import sys

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import xedm  # noqa: E402
from xedm import widgets  # noqa: E402
from xedm.plot._base import p_text  # noqa: E402

pytest.importorskip("ipywidgets")


@pytest.fixture(scope="module")
def pair():
    return xedm.datasets.coupled_logistic(300)


def legend(ax):
    return sorted(t.get_text() for t in ax.get_legend().get_texts())


def test_forecast_explorer_redraws_from_the_state(pair):
    ex = pair.edm.explore(column="x", target="x", E=2, theta=1.0, debounce=0)
    assert isinstance(ex, widgets.ForecastExplorer)
    first = ex.image.value
    ex.set(E=3)
    assert ex.state.params["E"] == 3
    ax_e, ax_t, ax_f = ex.figure.axes
    want = xedm.smap(pair, E=3, theta=1.0, columns="x", target="x")
    # the forecast panel draws the last ZOOM steps (a long forecast whole is a solid band)
    zoom = widgets.forecast.ZOOM
    assert want.sizes["time"] > zoom
    np.testing.assert_array_equal(ax_f.lines[1].get_ydata(), want.prediction.values[-zoom:])
    title = " ".join(ax_f.get_title().split())  # long titles are wrapped to their axes
    assert f"(last {zoom} of {want.sizes['time']} steps)" in title
    assert "E=3" in ax_f.get_title() and f"ρ = {float(want.rho):.3f}" in ax_f.get_title()
    # the chosen E is marked on the skill-vs-E panel, the chosen theta on skill-vs-theta
    assert ax_e.lines[-1].get_xdata()[0] == 3 and ax_t.lines[-1].get_xdata()[0] == 1.0
    skill = xedm.embed_dimension(pair, E_max=8, columns="x", target="x")
    np.testing.assert_array_equal(ax_e.lines[0].get_ydata(), skill.rho.values)
    assert ex.image.value != first and ex.image.value[:4] == b"\x89PNG"
    assert "ρ = " in ex.status.value
    # simplex and another target
    ex.set(method="simplex", target="y", Tp=2)
    want = xedm.simplex(pair, E=3, Tp=2, columns="x", target="y")
    np.testing.assert_array_equal(ex.figure.axes[2].lines[1].get_ydata(),
                                  want.prediction.values[-zoom:])
    assert ex.figure.axes[2].get_title().startswith("simplex of y")


def test_forecast_results_are_cached(pair):
    ex = widgets.ForecastExplorer(pair.x, E=2, debounce=0)
    assert ex.state.computed == 3  # skill vs E, skill vs theta, forecast
    ex.set(E=3)
    assert ex.state.computed == 5  # skill vs E does not depend on E
    ex.set(E=2)
    assert ex.state.computed == 5  # back to E=2: all from the cache
    ex.set(tau=2)
    assert ex.state.computed == 8


def test_redraw_is_debounced():
    x = xedm.datasets.logistic_map(200)

    async def main():
        ex = widgets.ForecastExplorer(x, E=2, debounce=0.05)
        n = ex.redraws
        for e in (3, 4, 5):  # a user dragging the slider: values from the browser
            ex.controls["E"].set_state({"value": e})
        assert ex.redraws == n and ex._debounced.pending
        assert ex.state.params["E"] == 5  # the state follows at once
        await asyncio.sleep(0.3)
        assert ex.redraws == n + 1
        # a value set in code (a notebook cell) redraws at once, inside the running loop
        ex.controls["E"].value = 3
        assert ex.redraws == n + 2 and not ex._debounced.pending
        assert "E=3" in ex.figure.axes[2].get_title()
        return ex, n

    ex, n = asyncio.run(main())
    assert ex.redraws == n + 2


def test_bad_parameters_show_an_error_not_a_traceback():
    x = xedm.datasets.logistic_map(40)
    ex = widgets.ForecastExplorer(x, E=2, debounce=0)
    ex.set(tau=10, E=8)
    assert "E" in ex.status.value and "color:#b00" in ex.status.value
    with pytest.raises(ValueError, match="no control"):
        ex.set(bogus=1)
    with pytest.raises(ValueError, match="unknown parameter"):
        ex.state.update(bogus=1)


def test_backend_and_neighbors_are_passed_through():
    x = xedm.datasets.logistic_map(200)
    st = widgets.ForecastState(x, backend="cpu", neighbors="exact", E=2)
    res = st.results()
    for r in res.values():
        assert r.attrs["backend"] == "cpu" and r.attrs["neighbors"] == "exact"
    calls = []

    def f(data, *, E, backend=None):
        calls.append(backend)
        return E

    assert st.call(f, x, E=3) == 3 and calls == ["cpu"]  # neighbors: f does not take it


def test_causality_explorer(pair):
    ex = pair.edm.explore("causality", samples=5, n_sizes=4, lib_min=10, lib_max=200,
                          debounce=0)
    ex.set(lib_size=(20, 250), samples=8)
    st = ex.state
    assert (st.params["lib_min"], st.params["lib_max"], st.params["samples"]) == (20, 250, 8)
    ax = ex.figure.axes[0]
    want = xedm.ccm(pair, ["x", "y"], lib_sizes=st.lib_sizes(), E=2, samples=8, seed=1,
                    surrogates=19)
    # each direction's p-value (at the largest library size) in its label
    # ("p ≤ 1/20" at the floor of 19 surrogates, where 0.05 is the smallest p they give)
    p = {d: p_text(want.p_value.sel(library=lib, target=tgt).isel(lib_size=-1).item(),
                   1 / 20)
         for d, lib, tgt in (("x → y", "y", "x"), ("y → x", "x", "y"))}
    assert legend(ax) == ["surrogates x → y (0.05–0.95)", "surrogates y → x (0.05–0.95)",
                          f"x → y ({p['x → y']})", f"y → x ({p['y → x']})"]
    line = next(ln for ln in ax.lines if ln.get_label().startswith("x → y"))
    np.testing.assert_allclose(line.get_ydata(), want.rho.sel(library="y", target="x"))
    np.testing.assert_array_equal(line.get_xdata(), st.lib_sizes())
    # the spread over samples and the surrogate null band, both directions
    assert len(ax.collections) == 4
    np.testing.assert_array_equal(st.results()["ccm"].p_value.values, want.p_value.values)
    ex.set(surrogates=0)
    assert len(ex.figure.axes[0].collections) == 2  # no null band without surrogates
    assert "x → y" in ex.status.value


def test_causal_map_explorer_pick_a_pair():
    net = xedm.datasets.many_series(5, 250, seed=0)
    ex = net.x.edm.explore("causal_map", dim="series", truth=net.adjacency, samples=5,
                           n_sizes=3, debounce=0)
    ex.select(3, 1)
    assert (ex.state.params["library"], ex.state.params["target"]) == ("3", "1")
    ax_m, ax_c, _ = ex.figure.axes  # map, convergence, the map's colorbar
    want = xedm.xmap(net.x, series_dim="series", E_max=6, progress=False)
    got = ex.state.results()["xmap"]
    np.testing.assert_allclose(got.rho.values, want.rho.values)
    assert "1 → 3" in legend(ax_c) and "3 → 1" in legend(ax_c)
    rows = [t.get_text() for t in ax_m.get_yticklabels()]
    cols = [t.get_text().split(" (E=")[0] for t in ax_m.get_xticklabels()]  # "1 (E=2)"
    picked = ax_m.lines[-1]
    assert (picked.get_xdata()[0], picked.get_ydata()[0]) == (cols.index("1"), rows.index("3"))
    assert f"{float(want.rho.sel(library=3, target=1)):.3f}" in ex.status.value
    n = ex.state.computed
    ex.set(order=None)  # redraw only: nothing recomputed
    assert ex.state.computed == n
    assert [t.get_text() for t in ex.figure.axes[0].get_yticklabels()] == list("01234")


def test_recurrence_explorer(pair):
    ex = pair.x.edm.explore("recurrence", max_points=200, debounce=0)
    ex.set(threshold="eps", value=0.1, E=3)
    ax = ex.figure.axes[0]
    R = xedm.recurrence_plot(pair.x.isel(time=slice(0, 200)), E=3, eps=0.1)
    np.testing.assert_array_equal(ax.images[0].get_array(), R.values.astype(float))
    assert "ε=0.1" in ax.get_title() and "E=3" in ax.get_title()
    q = xedm.rqa(pair.x, E=3, eps=0.1)
    assert f"DET = {float(q.DET):.3g}" in ex.status.value


def test_explore_checks_kind_and_data():
    x = xedm.datasets.logistic_map(100)
    with pytest.raises(ValueError, match="kind="):
        x.edm.explore("nope")
    with pytest.raises(ValueError, match="two series"):
        x.edm.explore("causality")
    with pytest.raises(ValueError, match="select first"):
        xr.DataArray(np.zeros((2, 2, 50)), dims=("a", "b", "time")).edm.explore()


def test_missing_ipywidgets_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(ImportError, match=r"xedm\[widgets\]"):
        widgets.ForecastExplorer(xedm.datasets.logistic_map(100), debounce=0)
    # the state works without ipywidgets
    st = widgets.ForecastState(xedm.datasets.logistic_map(100), E=2)
    assert set(st.results()) == {"skill_E", "skill_theta", "forecast"}


def test_table_shaped_data_lib_pred_rows_and_fitted_titles():
    """A pyEDM-style table (a Time dim, Year and Month columns) explores its first real
    series over Time; the lib/pred row sliders give the forecast of those rows."""
    x = xedm.datasets.coupled_logistic(120)
    T = x.sizes["time"]
    table = xr.Dataset({"Year": ("Time", np.arange(1900, 1900 + T)),
                        "Month": ("Time", np.arange(T) % 12 + 1),
                        "Thrips_imaginis_abundance_long_name": ("Time", x.x.values),
                        "maxT_degC": ("Time", x.y.values)},
                       coords={"Time": np.arange(1, T + 1)})
    ex = table.edm.explore(E=2, method="simplex", debounce=0)
    st = ex.state
    assert st.dim == "Time" and st.params["column"] == "Thrips_imaginis_abundance_long_name"
    assert st.names[-2:] == ["Year", "Month"]  # clocks are listed last
    assert {"lib", "pred"} <= set(ex.controls)
    ex.set(lib=(0, 59), pred=(60, T - 1))
    want = xedm.simplex(table, E=2, columns="Thrips_imaginis_abundance_long_name",
                        dim="Time", lib=slice(1, 60), pred=slice(61, T))
    np.testing.assert_allclose(ex.figure.axes[2].lines[1].get_ydata(),
                               want.prediction.values)
    assert f"ρ = {float(want.rho):.3f}" in ex.status.value
    # the figure's titles fit their panels (wrapped, not clipped)
    from xedm.plot._base import renderer

    r = renderer(ex.figure)
    for ax in ex.figure.axes:
        assert ax.title.get_window_extent(r).width <= ax.get_window_extent(r).width + 1
    with pytest.raises(ValueError, match="lib"):
        st.update(lib=(5,))
    assert widgets.base._time_dim(table.Year.to_dataset(), None) == "Time"
    with pytest.raises(ValueError, match="time_dim"):
        widgets.base._time_dim(xr.DataArray(np.zeros((2, 3)), dims=("a", "b")), None)
