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
    assert ax.get_ylabel() == "rho"


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
    assert len(ax.lines) == 3
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
    assert "rho = 0.980" in title and "E=3" in title and "simplex" in title
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
    ax = plot.ccm_convergence(ds, include_self=True)
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
    marks = ax.lines[0]
    assert list(marks.get_xdata()) == [0] and list(marks.get_ydata()) == [2]
    assert ax.get_xlabel() == "target (cause)"


def test_causal_map_keeps_diagonal_when_asked_and_checks_dims():
    rho = xr.DataArray(np.ones((2, 2)), dims=("library", "target"),
                       coords={"library": ["a", "b"], "target": ["a", "b"]})
    ax = plot.causal_map(rho, mask_diagonal=False)
    assert np.isfinite(np.ma.filled(ax.images[0].get_array(), np.nan)).all()
    with pytest.raises(ValueError, match="library, target"):
        plot.causal_map(rho.expand_dims(lib_size=[5]))


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
    assert ax.get_xlabel() == "time_" and ax.get_ylabel() == "time"
    assert ax.images[0].get_extent() == [0, 59, 0, 59]
    assert "eps=0.2" in ax.get_title()
    with pytest.raises(ValueError, match="2-D"):
        plot.recurrence_plot(R.isel(time=0))


def test_plot_module_does_not_import_pyplot_at_import():
    import subprocess
    import sys

    code = "import sys, xedm.plot; print('matplotlib.pyplot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
