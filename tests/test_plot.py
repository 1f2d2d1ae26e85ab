"""Tests for xedm.plot on small synthetic results of the documented shapes (no core needed)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

from xedm import plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def legend_texts(ax):
    return sorted(t.get_text() for t in ax.get_legend().get_texts())


# ----------------------------------------------------------------- skill
@pytest.mark.quick
def test_skill_marks_best_from_attrs():
    ds = xr.Dataset(
        {"rho": ("E", [0.4, 0.95, 0.97, 0.9]), "mae": ("E", [0.3, 0.1, 0.09, 0.12])},
        coords={"E": [1, 2, 3, 4]},
        attrs={"best_E": 2},  # attrs win over the maximum (e.g. a parsimony rule)
    )
    ax = plot.skill(ds)
    line, star = ax.lines
    np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3, 4])
    np.testing.assert_array_equal(line.get_ydata(), [0.4, 0.95, 0.97, 0.9])
    assert star.get_xdata()[0] == 2 and star.get_ydata()[0] == 0.95
    assert "best E = 2" in legend_texts(ax)
    assert ax.get_ylabel() == "skill ρ (Pearson)"


def test_skill_theta_without_attrs_uses_max_and_min_for_errors():
    theta = [0.0, 0.5, 1.0, 2.0]
    ds = xr.Dataset(
        {"rho": ("theta", [0.6, 0.8, 0.7, 0.5]), "rmse": ("theta", [0.5, 0.2, 0.3, 0.6])},
        coords={"theta": theta},
    )
    ax = plot.skill(ds)
    assert ax.lines[1].get_xdata()[0] == 0.5
    assert "θ" in ax.get_xlabel()
    ax = plot.skill(ds, var="rmse")
    assert ax.lines[1].get_xdata()[0] == 0.5 and ax.lines[1].get_ydata()[0] == 0.2


def test_skill_broadcast_dim_one_line_each():
    rho = xr.DataArray(
        np.random.default_rng(0).random((3, 5)),
        dims=("neuron", "Tp"),
        coords={"neuron": ["a", "b", "c"], "Tp": np.arange(1, 6)},
        name="rho",
    )
    ax = plot.skill(rho)
    lines = [ln for ln in ax.lines if ln.get_marker() == "o"]
    stars = [ln for ln in ax.lines if ln.get_marker() == "*"]
    assert len(lines) == 3 and len(stars) == 3  # each series' best marked in its colour
    for line, star in zip(lines, stars, strict=True):
        y = line.get_ydata()
        assert star.get_ydata()[0] == np.nanmax(y) and star.get_color() == line.get_color()
    assert legend_texts(ax) == ["a", "b", "c"]
    np.testing.assert_allclose(ax.lines[1].get_ydata(), rho.sel(neuron="b").values)


def test_skill_needs_a_sweep_dim():
    ds = xr.Dataset({"rho": ("k", [0.1, 0.2])})
    with pytest.raises(ValueError, match="dim"):
        plot.skill(ds)
    with pytest.raises(ValueError, match="not in the result"):
        plot.skill(ds, var="nope")


def test_skill_draws_on_given_axes():
    fig, axes = plt.subplots(1, 2)
    ds = xr.Dataset({"rho": ("E", [0.1, 0.2])}, coords={"E": [1, 2]})
    assert plot.skill(ds, ax=axes[1]) is axes[1]
    assert not axes[0].lines


# ----------------------------------------------------------------- prediction
def simplex_like(n=40):
    t = np.arange(n)
    obs = np.sin(t / 4.0)
    pred = obs + 0.05
    pred[0] = np.nan
    return xr.Dataset(
        {"observed": ("time", obs), "prediction": ("time", pred), "rho": 0.98, "mae": 0.05},
        coords={"time": t},
        attrs={"E": 3, "Tp": 1, "method": "simplex"},
    )


def test_prediction_lines_and_title():
    ds = simplex_like()
    ax = plot.prediction(ds)
    obs, pred = ax.lines
    np.testing.assert_array_equal(obs.get_ydata(), ds.observed.values)
    np.testing.assert_array_equal(pred.get_ydata(), ds.prediction.values)
    title = ax.get_title()
    assert "ρ = 0.980" in title and "E=3" in title and "simplex" in title
    assert legend_texts(ax) == ["observed", "predicted"]


def test_prediction_rejects_extra_dims_and_missing_vars():
    ds = simplex_like().expand_dims(neuron=2)
    with pytest.raises(ValueError, match="neuron"):
        plot.prediction(ds)
    with pytest.raises(ValueError, match="observed"):
        plot.prediction(simplex_like().drop_vars("observed"))


# ----------------------------------------------------------------- ccm
def ccm_like(samples=False):
    rng = np.random.default_rng(1)
    sizes = [10, 50, 100, 200]
    shape = (2, 2, 4) + ((6,) if samples else ())
    dims = ("library", "target", "lib_size") + (("sample",) if samples else ())
    rho = xr.DataArray(rng.random(shape), dims=dims,
                       coords={"library": ["x", "y"], "target": ["x", "y"], "lib_size": sizes})
    return xr.Dataset({"rho": rho})


def test_ccm_convergence_labels_are_target_to_library():
    ds = ccm_like()
    ax = plot.ccm_convergence(ds)
    assert legend_texts(ax) == ["x → y", "y → x"]
    # the line labelled "y → x" must show rho(library=x, target=y)
    line = next(ln for ln in ax.lines if ln.get_label() == "y → x")
    np.testing.assert_allclose(line.get_ydata(), ds.rho.sel(library="x", target="y").values)
    np.testing.assert_array_equal(line.get_xdata(), [10, 50, 100, 200])


def test_ccm_convergence_samples_mean_and_band():
    ds = ccm_like(samples=True)
    ax = plot.ccm_convergence(ds, include_self=True, panels=False)
    assert len(ax.lines) == 4
    assert len(ax.collections) == 4  # one band per line
    line = next(ln for ln in ax.lines if ln.get_label() == "x → y")
    np.testing.assert_allclose(
        line.get_ydata(), ds.rho.sel(library="y", target="x").mean("sample").values
    )


def test_ccm_convergence_needs_dims():
    with pytest.raises(ValueError, match="lib_size"):
        plot.ccm_convergence(xr.Dataset({"rho": (("library", "target"), np.ones((2, 2)))}))


def test_arrow():
    assert plot.arrow(library="x", target="y") == "y → x"
    assert plot.arrow(library=np.int64(3), target=np.int64(7)) == "7 → 3"


# ----------------------------------------------------------------- causal map
def test_causal_map_orientation_diagonal_and_truth():
    labels = [0, 1, 2]
    rho = xr.DataArray(
        np.arange(9.0).reshape(3, 3),
        dims=("target", "library"),  # deliberately transposed: the plot must fix it
        coords={"library": labels, "target": labels},
        name="rho",
    )
    truth = xr.DataArray(
        np.zeros((3, 3), bool), dims=("driver", "driven"),
        coords={"driver": labels, "driven": labels},
    )
    truth[0, 2] = True  # 0 drives 2 -> expect (library=2, target=0)
    ax = plot.causal_map(rho, truth=truth)
    img = ax.images[0].get_array()
    expected = rho.transpose("library", "target").values.astype(float)
    np.fill_diagonal(expected, np.nan)
    np.testing.assert_array_equal(np.ma.filled(img, np.nan), expected)
    marks = ax.lines[0]  # a dot in the cell's upper left corner (beside the outline)
    np.testing.assert_allclose(marks.get_xdata(), [0 - 0.22])
    np.testing.assert_allclose(marks.get_ydata(), [2 - 0.22])
    assert ax.get_xlabel() == "target (cause)"


def test_causal_map_keeps_diagonal_when_asked_and_checks_dims():
    rho = xr.DataArray(np.ones((2, 2)), dims=("library", "target"),
                       coords={"library": ["a", "b"], "target": ["a", "b"]})
    ax = plot.causal_map(rho, mask_diagonal=False)
    assert np.isfinite(np.ma.filled(ax.images[0].get_array(), np.nan)).all()
    with pytest.raises(ValueError, match="library, target"):
        plot.causal_map(rho.expand_dims(neuron=[5]))
    # a ccm result is drawn at its largest library size
    ccm = xr.concat([rho * 0.1, rho * 0.7], dim=xr.DataArray([10, 90], dims="lib_size"))
    ax = plot.causal_map(ccm, mask_diagonal=False)
    np.testing.assert_allclose(ax.images[0].get_array(), 0.7)


# ----------------------------------------------------------------- recurrence plot
def test_recurrence_plot_image_and_axes():
    x = np.sin(np.arange(60) / 4.0)
    R = xr.DataArray(
        np.abs(x[:, None] - x[None, :]) < 0.2,
        dims=("time", "time_"),
        coords={"time": np.arange(60), "time_": np.arange(60)},
        attrs={"E": 2, "tau": 1, "eps": 0.2},
    )
    ax = plot.recurrence_plot(R)
    np.testing.assert_array_equal(ax.images[0].get_array(), R.values.astype(float))
    # the second time dim ("time_") reads as time, not as a raw dim name
    assert ax.get_xlabel() == "time" and ax.get_ylabel() == "time"
    assert ax.images[0].get_extent() == [0, 59, 0, 59]
    assert "ε=0.2" in ax.get_title()
    assert f"RR={100 * R.values.mean():.3g} %" in ax.get_title()
    with pytest.raises(ValueError, match="2-D"):
        plot.recurrence_plot(R.isel(time=0))


def test_plot_module_does_not_import_pyplot_at_import():
    import subprocess
    import sys

    code = "import sys, xedm.plot; print('matplotlib.pyplot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


# ----------------------------------------------------------------- real results, .edm.plot()
import xedm  # noqa: E402


def no_overlap(ax):
    """The legend's box (the axes', else the figure's) lies outside the axes' data area."""
    fig = ax.figure
    fig.canvas.draw()
    leg = (ax.get_legend() or fig.legends[0]).get_window_extent()
    box = ax.get_window_extent()
    inter_w = min(leg.x1, box.x1) - max(leg.x0, box.x0)
    inter_h = min(leg.y1, box.y1) - max(leg.y0, box.y0)
    return inter_w <= 0 or inter_h <= 0


@pytest.fixture(scope="module")
def logistic():
    return xedm.datasets.coupled_logistic(300)


@pytest.mark.parametrize("func,dim", [("embed_dimension", "E"), ("predict_interval", "Tp"),
                                      ("predict_nonlinear", "theta")])
def test_edm_plot_of_sweeps(logistic, func, dim):
    kw = {"E_max": 5} if func == "embed_dimension" else {"E": 2}
    if func == "predict_nonlinear":
        kw["theta"] = [0, 0.5, 2, 4]
    res = getattr(logistic.edm, func)(columns="x", **kw)
    assert res.attrs["xedm_function"] == func
    ax = res.edm.plot()
    line = ax.lines[0]
    np.testing.assert_array_equal(line.get_xdata(), res[dim].values)
    np.testing.assert_array_equal(line.get_ydata(), res.rho.values)
    star = ax.lines[1]
    best = res.attrs[f"best_{dim}"]
    assert star.get_xdata()[0] == best
    assert star.get_ydata()[0] == float(res.rho.sel({dim: best}))
    assert f"best {'θ' if dim == 'theta' else dim} = {best:.3g}" in legend_texts(ax)
    assert ax.get_title().startswith(f"{func} of x")
    assert no_overlap(ax)


def test_edm_plot_of_simplex_and_the_dispatch_without_attrs(logistic):
    res = logistic.edm.simplex(columns="x", target="y", E=2, lib=slice(0, 149),
                               pred=slice(150, 299))
    ax = res.edm.plot()
    obs, pred = ax.lines
    np.testing.assert_array_equal(pred.get_xdata(), res.time.values)
    np.testing.assert_array_equal(pred.get_ydata(), res.prediction.values)
    np.testing.assert_array_equal(obs.get_ydata(), res.observed.values)
    assert ax.get_title().startswith("simplex of y: E=2, τ=1, Tp=1")
    assert f"ρ = {float(res.rho):.3f}" in ax.get_title()
    assert ax.get_ylabel() == "y" and ax.get_xlabel() == "time"
    assert no_overlap(ax)
    # attrs dropped: told by the variables
    bare = res.copy()
    bare.attrs = {}
    assert plot.made_by(bare) == "simplex"
    assert plot.made_by(res.rho.expand_dims(E=[1])) == "embed_dimension"
    with pytest.raises(ValueError, match="cannot tell"):
        plot.plot(xr.Dataset({"foo": ("t", [1.0])}))


def test_edm_plot_of_smap_is_coefficients_over_time(logistic):
    res = logistic.x.edm.smap(E=2, theta=2.0, pred=slice(200, 299))
    fig = res.edm.plot()
    axes = fig.axes
    assert len(axes) == 3  # forecast + two coefficients (intercept left out)
    np.testing.assert_array_equal(axes[0].lines[1].get_ydata(), res.prediction.values)
    for ax, name in zip(axes[1:], ["x(t-0)", "x(t-1)"], strict=True):
        np.testing.assert_array_equal(ax.lines[0].get_ydata(),
                                      res.coefficients.sel(coef=name).values)
        np.testing.assert_array_equal(ax.lines[0].get_xdata(), res.time.values)
        assert ax.get_ylabel() == f"∂x(t+1)/∂{name}"
    fig = plot.smap_coefficients(res, intercept=True, with_prediction=False)
    assert [a.get_ylabel() for a in fig.axes][0] == "intercept"
    with pytest.raises(ValueError, match="coefficients"):
        plot.smap_coefficients(res.drop_vars("coefficients"))


def test_edm_plot_of_ccm_both_directions_with_sample_spread(logistic):
    res = logistic.edm.ccm(["x", "y"], lib_sizes=[10, 50, 200], E=2, samples=8, seed=3,
                           keep_samples=True)
    ax = res.edm.plot()
    assert legend_texts(ax) == ["x → y", "y → x"]
    for lib, tgt in [("x", "y"), ("y", "x")]:
        line = next(ln for ln in ax.lines if ln.get_label() == plot.arrow(lib, tgt))
        np.testing.assert_allclose(line.get_ydata(), res.rho.sel(library=lib, target=tgt))
        np.testing.assert_array_equal(line.get_xdata(), [10, 50, 200])
    # one band per direction, spanning the 5-95 % quantiles of rho_sample
    assert len(ax.collections) == 2
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    one = res.rho_sample.sel(library="x", target="y")
    lo, hi = one.quantile(0.05, "sample").values, one.quantile(0.95, "sample").values
    assert np.isclose(band.min(), min(lo.min(), hi.min()))
    assert np.isclose(band.max(), max(lo.max(), hi.max()))
    assert no_overlap(ax)


def test_ccm_convergence_draws_a_null_band_and_p_values_when_present():
    ds = ccm_like()
    q = xr.DataArray([0.05, 0.95], dims="quantile")
    ds["rho_null"] = (ds.rho * 0 + 0.1 + 0.2 * q).transpose(..., "quantile")
    ds["p_value"] = xr.DataArray([[1.0, 0.01], [0.2, 1.0]], dims=("library", "target"),
                                 coords={"library": ["x", "y"], "target": ["x", "y"]})
    ax = plot.ccm_convergence(ds)
    texts = legend_texts(ax)
    assert "y → x (p = 0.01)" in texts and "x → y (p = 0.2)" in texts
    # at the floor of 19 surrogates (empirical p-values), p ≤ 1/20, not p = 0.05
    ds.attrs.update(surrogates=19, p_method="empirical")
    ds["p_value"][0, 1] = 0.05
    assert "y → x (p ≤ 1/20)" in legend_texts(plot.ccm_convergence(ds))
    assert sum(t.startswith("surrogates") for t in texts) == 2
    null = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert np.isclose(null.min(), 0.11) and np.isclose(null.max(), 0.29)


def test_edm_plot_of_xmap_with_truth_cluster_order_and_significance():
    net = xedm.datasets.many_series(6, 300, seed=0)
    res = net.x.edm.xmap(series_dim="series", E=2, progress=False)
    ax = res.edm.plot(truth=net.adjacency, order="cluster")
    order = plot.cluster_order(res.rho.values)
    img = np.ma.filled(ax.images[0].get_array(), np.nan)
    want = res.rho.values[np.ix_(order, order)].copy()
    np.fill_diagonal(want, np.nan)
    np.testing.assert_array_equal(img, want)
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(i) for i in order]
    # known links marked at (library=driven, target=driver) in the clustered order
    drivers, driven = np.nonzero(net.adjacency.values)
    pos = {s: i for i, s in enumerate(order)}
    marks = ax.lines[-1]
    got = sorted(zip(np.round(marks.get_xdata() + 0.22).astype(int),
                     np.round(marks.get_ydata() + 0.22).astype(int), strict=True))
    assert got == sorted((pos[d], pos[v]) for d, v in zip(drivers, driven, strict=True))
    assert no_overlap(ax)
    # significance: cells with q < alpha outlined
    q = xr.full_like(res.rho, 1.0)
    q[0, 1] = 0.001
    ax = plot.causal_map(res.assign(q_value=q))
    assert cells(ax, "significant") == [(1, 0)]
    assert any(t.get_text().startswith("q-value < 0.05")
               for t in ax.figure.legends[0].get_texts())


def cells(ax, gid):
    """(column, row) of the cells a causal map marks with the collection ``gid``."""
    coll = next(c for c in ax.collections if c.get_gid() == gid)
    return sorted((int(round(p.vertices[:4, 0].mean())), int(round(p.vertices[:4, 1].mean())))
                  for p in coll.get_paths())


def test_causal_map_p_floor_and_network_matrix_marks():
    """With 19 surrogates no p-value is under 0.05: the legend says so; a network's
    matrix outlines its links and hatches its undetermined pairs."""
    labels = ["a", "b", "c"]
    rho = xr.DataArray(np.full((3, 3), 0.5), dims=("library", "target"),
                       coords={"library": labels, "target": labels})
    ds = xr.Dataset({"rho": rho, "p_value": rho * 0 + 0.05},
                    attrs={"surrogates": 19, "p_method": "empirical"})
    ax = plot.causal_map(ds)
    texts = [t.get_text() for t in ax.figure.legends[0].get_texts()]
    assert any("none can be: p ≥ 1/20 with 19 surrogates" in t.replace("\n", " ")
               for t in texts), texts
    net = ds.assign(link=rho > 1, undetermined=rho > 1)
    net["link"][0, 1] = True
    net["undetermined"][2, 0] = True
    net.attrs["xedm_function"] = "causal_network"
    ax = net.edm.plot(kind="matrix")
    assert cells(ax, "links") == [(1, 0)] and cells(ax, "undetermined") == [(0, 2)]


def test_cluster_order_groups_similar_series():
    rho = np.full((4, 4), 0.1)
    rho[np.ix_([0, 2], [0, 2])] = 0.9
    rho[np.ix_([1, 3], [1, 3])] = 0.9
    order = plot.cluster_order(rho).tolist()
    pos = {s: i for i, s in enumerate(order)}
    assert abs(pos[0] - pos[2]) == 1 and abs(pos[1] - pos[3]) == 1


def test_edm_plot_of_recurrence_plot_rounds_eps(logistic):
    R = logistic.x.isel(time=slice(0, 120)).edm.recurrence_plot(E=2, recurrence_rate=0.1)
    ax = R.edm.plot()
    eps = R.attrs["eps"]
    assert f"ε={eps:.3g}," in ax.get_title() and repr(eps) not in ax.get_title()
    np.testing.assert_array_equal(ax.images[0].get_array(), R.values.astype(float))
    assert f"RR={100 * R.values.mean():.3g} %" in ax.get_title()
    assert ax.get_xlabel() == "time" and ax.get_ylabel() == "time"


def test_edm_plot_of_rqa_windows_thresholds_and_histograms(logistic):
    q = logistic.x.edm.rqa(E=2, recurrence_rate=0.05, window=100, step=20)
    fig = q.edm.plot()
    assert [a.get_ylabel() for a in fig.axes] == ["RR", "DET", "L", "LAM", "TT", "ENTR"]
    np.testing.assert_array_equal(fig.axes[1].lines[0].get_xdata(), q.time.values)
    np.testing.assert_array_equal(fig.axes[1].lines[0].get_ydata(), q.DET.values)
    assert "window=100" in fig.axes[0].get_title()
    q = logistic.x.edm.rqa(E=2, eps=[0.02, 0.05, 0.1])
    fig = plot.rqa_measures(q, ["DET"])
    np.testing.assert_array_equal(fig.axes[0].lines[0].get_xdata(), [0.02, 0.05, 0.1])
    assert fig.axes[0].get_xlabel() == "threshold ε"
    q = logistic.x.edm.rqa(E=2, eps=0.05)
    fig = q.edm.plot()
    heights = [p.get_height() for p in fig.axes[0].patches]
    counts = q.diagonal_lines.values.astype(float)
    np.testing.assert_array_equal(np.nan_to_num(heights), counts)
    assert f"DET={float(q.DET):.3g}" in fig.axes[0].get_title()


# ----------------------------------------------------------------- network graph, style
def test_network_graph_groups_lags_and_undetermined():
    names = [f"s{i}" for i in range(6)]
    link = np.zeros((6, 6), bool)
    link[1, 0] = link[0, 1] = link[4, 3] = True  # 0 <-> 1, 3 -> 4
    und = np.zeros((6, 6), bool)
    und[5, 2] = True
    dims = ("library", "target")
    net = xr.Dataset({"link": (dims, link), "undetermined": (dims, und),
                      "rho": (dims, np.full((6, 6), 0.6)),
                      "driver_Tp": (dims, np.where(link, -1, 0) + np.eye(6, dtype=int) * 0)},
                     coords={"library": names, "target": names},
                     attrs={"xedm_function": "causal_network", "alpha": 0.05})
    net["driver_Tp"][4, 3] = -2
    assert plot.network.__module__ == "xedm.plot.network"
    from xedm.plot.network import groups

    assert [sorted(g) for g in groups(np.array(link).T)] == [[0, 1], [3, 4], [2, 5]]
    ax = net.edm.plot()
    assert ax.get_title() == "causal network: 3 links, 1 undetermined"
    legend = [t.get_text() for t in ax.figure.legends[0].get_texts()]
    assert {"Tp = -2", "Tp = -1", "undetermined"} <= set(legend)
    arrows = [p for p in ax.patches if p.get_zorder() == 2]
    dashed = [p for p in ax.patches if p.get_zorder() == 1]
    assert len(arrows) == 3 and len(dashed) == 1
    colours = {tuple(p.get_edgecolor()) for p in arrows}
    assert len(colours) == 2  # one colour per lag
    assert not plot.text_problems(ax.figure)
    with pytest.raises(ValueError, match="layout="):
        net.edm.plot(layout="bogus")


def test_paper_style_width_fonts_and_savefig(tmp_path):
    ds = xr.Dataset({"rho": ("E", [0.5, 0.9, 0.8])}, coords={"E": [1, 2, 3]})
    ax = ds.edm.plot(style="paper", width="double")
    fig = ax.figure
    assert fig.get_figwidth() == 7.2
    assert not plot.text_problems(fig, min_size=7)
    plot.savefig(fig, tmp_path / "f.svg")
    assert "<text" in (tmp_path / "f.svg").read_text()  # text kept as text
    with pytest.raises(ValueError, match="width="):
        ds.edm.plot(style="paper", width="A4")
    with pytest.raises(ValueError, match="style="):
        ds.edm.plot(style="poster")
    with pytest.raises(ValueError, match="needs style='paper'"):
        ds.edm.plot(width="single")


def test_wrap_keeps_relations_and_fractions_whole():
    from xedm.plot._base import p_text, wrap

    assert wrap("ρ = 0.990, MAE = 0.045, RMSE = 0.293", 14).split("\n") == [
        "ρ = 0.990,", "MAE = 0.045,", "RMSE = 0.293"]
    assert p_text(0.05, 1 / 20) == "p ≤ 1/20"
    assert wrap("both p ≤ 1/20", 9) == "both\np ≤ 1/20"
