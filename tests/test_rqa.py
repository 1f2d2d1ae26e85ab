"""Recurrence quantification: exact histograms against the dense reference (naive_rqa),
every norm, Theiler window, cross and joint recurrence, sweeps, windows, the xarray layer,
input checks, and parity with pyrqa / AccRQA when they are installed."""

from __future__ import annotations

import importlib.util

import naive_rqa as nr
import numpy as np
import pytest
import xarray as xr

import xedm
from conftest import logistic  # noqa: E402
from xedm.recurrence.measures import MEASURES, rqa_measures
from xedm.recurrence.recurrence import RecurrenceProblem, line_histograms, squared_threshold
from xedm.recurrence.threshold import eps_for_recurrence_rate

NORMS = ["euclidean", "maximum", "manhattan"]


def _check(prob, R, eps, norm, theiler, symmetric, tile):
    h = line_histograms(prob, [eps], norm, "cpu", tile)
    hd, hv, hw = nr.naive_line_histograms(R, theiler, symmetric)
    L = hv.size
    np.testing.assert_array_equal(h["diagonal"][0, 0][:L], hd)
    np.testing.assert_array_equal(h["vertical"][0, 0], hv)
    np.testing.assert_array_equal(h["white"][0, 0], hw)
    assert int(h["recurrent"][0, 0]) == int(R.sum())


# ----------------------------------------------------------------------------- histograms
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("theiler", [0, 1, 5])
def test_self_matches_dense(norm, theiler):
    rng = np.random.default_rng(theiler + 10 * NORMS.index(norm))
    for _ in range(4):
        n = int(rng.integers(8, 60))
        E, tau = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        # values on a 0.1 grid: many distances tie exactly with eps (strict < matters)
        x = np.round(rng.normal(size=n), 1)
        eps = float(rng.choice([0.5, 1.0, 1.3]))
        prob = RecurrenceProblem.single(x, E=E, tau=tau, theiler=theiler)
        R = nr.naive_recurrence_matrix(x, E=E, tau=tau, eps=eps, norm=norm)
        for tile in (1, 3, 7, 128):
            _check(prob, R, eps, norm, theiler, True, tile)


def test_ties_at_eps_are_not_recurrent():
    x = np.array([0.0, 1.0, 2.0, 3.0, 2.0, 1.0, 0.0])
    prob = RecurrenceProblem.single(x)
    h = line_histograms(prob, [1.0])
    # only the line of identity: every |x_i - x_j| is an integer, none < 1 but 0
    assert int(h["recurrent"][0, 0]) == 7 + 2 * 3  # identity plus the three exact repeats
    R = nr.naive_recurrence_matrix(x, eps=1.0)
    _check(prob, R, 1.0, "euclidean", 1, True, 2)


@pytest.mark.parametrize("norm", NORMS)
def test_cross_matches_dense(norm):
    rng = np.random.default_rng(7)
    for _ in range(5):
        n, m = int(rng.integers(5, 50)), int(rng.integers(5, 50))  # lengths differ
        E, tau = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        x, y = np.round(rng.normal(size=n), 1), np.round(rng.normal(size=m), 1)
        prob = RecurrenceProblem.single(x, y, E=E, tau=tau)
        R = nr.naive_recurrence_matrix(x, y, E=E, tau=tau, eps=1.0, norm=norm)
        for tile in (1, 4, 128):
            _check(prob, R, 1.0, norm, 0, False, tile)


@pytest.mark.parametrize("theiler", [0, 1, 5])
def test_joint_matches_dense(theiler):
    rng = np.random.default_rng(3)
    for _ in range(4):
        n = int(rng.integers(8, 50))
        x, z = np.round(rng.normal(size=n), 1), np.round(rng.normal(size=n), 1)
        prob = RecurrenceProblem.single(x, z, E=2, tau=1, theiler=theiler, joint=True)
        R = nr.naive_recurrence_matrix(x, E=2, tau=1, eps=1.2, joint=z)
        for tile in (1, 5, 128):
            _check(prob, R, 1.2, "euclidean", theiler, True, tile)


def test_eps_list_equals_separate_runs():
    x = logistic(300)
    prob = RecurrenceProblem.single(x, E=3, tau=2)
    eps = [0.05, 0.2, 0.4]
    together = line_histograms(prob, eps)
    for k, e in enumerate(eps):
        alone = line_histograms(prob, [e])
        for key in ("diagonal", "vertical", "white"):
            np.testing.assert_array_equal(together[key][0, k], alone[key][0, 0])


def test_tile_size_never_changes_counts():
    x = logistic(517)
    prob = RecurrenceProblem.single(x, E=5, tau=3)
    ref = line_histograms(prob, [0.3], tile=1)
    for tile in (2, 13, 64, 129, 1000):
        h = line_histograms(prob, [0.3], tile=tile)
        for key in ("diagonal", "vertical", "white"):
            np.testing.assert_array_equal(h[key], ref[key])


def test_squared_threshold_is_exact():
    rng = np.random.default_rng(0)
    for eps in np.concatenate([rng.uniform(1e-3, 10, 200), [1.0, 0.1, 0.3, 2.0]]):
        s = squared_threshold(eps)
        assert np.sqrt(s) >= eps and np.sqrt(np.nextafter(s, 0)) < eps


# ----------------------------------------------------------------------------- measures
@pytest.mark.parametrize("l_min", [2, 3, 4])
def test_measures_match_dense(l_min):
    x = xr.DataArray(logistic(250), dims="time")
    for theiler in (0, 1, 5):
        res = x.edm.rqa(E=3, tau=2, eps=0.25, theiler=theiler, l_min=l_min, v_min=l_min,
                        w_min=l_min, backend="cpu")
        R = nr.naive_recurrence_matrix(x.values, E=3, tau=2, eps=0.25)
        ref = nr.naive_measures(R, theiler, l_min, l_min, l_min)
        for name in MEASURES:
            np.testing.assert_allclose(float(res[name]), ref[name], rtol=1e-12, atol=0,
                                       equal_nan=True, err_msg=name)


def test_empty_histograms_give_nan():
    h = np.zeros(6, np.uint64)
    m = rqa_measures(h, h, h, 25)
    assert all(np.isnan(m[k]) for k in MEASURES if k != "RR") and m["RR"] == 0


def test_constant_series():
    x = xr.DataArray(np.full(40, 2.5), dims="time")
    res = x.edm.rqa(E=2, eps=0.1, backend="cpu")
    R = nr.naive_recurrence_matrix(x.values, E=2, eps=0.1)
    ref = nr.naive_measures(R)
    # all recurrent: one vertical line per column; the two corner diagonals are single points
    assert float(res.RR) == 1.0 and float(res.LAM) == 1.0 and float(res.L_max) == 38
    assert float(res.V_max) == 39 and np.isnan(float(res.W))
    for name in MEASURES:
        np.testing.assert_allclose(float(res[name]), ref[name], equal_nan=True, err_msg=name)


# ----------------------------------------------------------------------------- xarray layer
def test_result_layout_and_attrs():
    x = xr.DataArray(logistic(300), dims="time", coords={"time": np.arange(300) * 0.5})
    res = x.edm.rqa(E=3, tau=2, eps=0.2, backend="cpu")
    assert set(MEASURES) <= set(res.data_vars)
    for var in ("diagonal_lines", "vertical_lines", "white_vertical_lines"):
        assert res[var].dims == ("line_length",) and res[var].dtype == np.uint64
    assert res.line_length[0] == 1 and res.sizes["line_length"] == 296
    assert res.attrs["E"] == 3 and res.attrs["eps"] == 0.2 and res.attrs["backend"] == "cpu"
    assert res.attrs["theiler"] == 1 and res.attrs["kind"] == "self"


def test_accessor_equals_function():
    ds = xedm.datasets.coupled_logistic(200)
    a = ds.edm.rqa("x", E=2, eps=0.1, backend="cpu")
    b = xedm.rqa(ds, "x", E=2, eps=0.1, backend="cpu")
    c = ds["x"].edm.rqa(E=2, eps=0.1, backend="cpu")
    xr.testing.assert_identical(a, b)
    xr.testing.assert_equal(a, c)


def test_broadcast_over_extra_dims():
    rng = np.random.default_rng(1)
    data = xr.DataArray(rng.normal(size=(3, 120)), dims=("neuron", "time"),
                        coords={"neuron": ["a", "b", "c"]})
    res = data.edm.rqa(E=2, eps=[0.5, 1.0], backend="cpu")
    assert res.RR.dims == ("neuron", "eps")
    for i, name in enumerate("abc"):
        one = data.sel(neuron=name).edm.rqa(E=2, eps=[0.5, 1.0], backend="cpu")
        xr.testing.assert_allclose(res.isel(neuron=i, drop=True), one, rtol=0, atol=0)


def test_eps_list_dim():
    x = xr.DataArray(logistic(200), dims="time")
    res = x.edm.rqa(E=2, eps=[0.1, 0.3], backend="cpu")
    assert res.RR.dims == ("eps",) and res.diagonal_lines.dims == ("eps", "line_length")
    one = x.edm.rqa(E=2, eps=0.3, backend="cpu")
    assert float(res.DET[1]) == float(one.DET)


def test_windowed_rqa_is_rqa_of_each_window():
    t = np.arange(400)
    x = xr.DataArray(logistic(400), dims="time", coords={"time": t * 2})
    res = x.edm.rqa(E=2, tau=1, eps=0.2, window=100, step=37, backend="cpu")
    starts = list(range(0, 301, 37))
    assert res.sizes["time"] == len(starts)
    np.testing.assert_array_equal(res.time, [(s + 99) * 2 for s in starts])
    for w, s in enumerate(starts):
        one = x.isel(time=slice(s, s + 100)).edm.rqa(E=2, eps=0.2, backend="cpu")
        for name in MEASURES:
            np.testing.assert_array_equal(float(res[name][w]), float(one[name]))
    assert "diagonal_lines" not in res and res.attrs["window"] == 100


def test_cross_recurrence_api_lengths_differ():
    x = xr.DataArray(logistic(150), dims="time")
    y = xr.DataArray(logistic(120, x0=0.3), dims="time")
    res = x.edm.rqa(other=y, E=2, eps=0.2, backend="cpu")
    # rows of the matrix are the states of `other` (pyrqa's orientation of vertical lines)
    R = nr.naive_recurrence_matrix(y.values, x.values, E=2, eps=0.2)
    ref = nr.naive_measures(R, symmetric=False)
    assert res.attrs["kind"] == "cross" and res.attrs["theiler"] == 0
    for name in MEASURES:
        np.testing.assert_allclose(float(res[name]), ref[name], rtol=1e-12, equal_nan=True)


def test_dataset_cross_joint_and_multivariate():
    ds = xedm.datasets.coupled_logistic(150)
    x, y = ds.x.values, ds.y.values
    cross = ds.edm.rqa("x", other="y", E=2, eps=0.3, backend="cpu")
    ref = nr.naive_measures(nr.naive_recurrence_matrix(y, x, E=2, eps=0.3), symmetric=False)
    assert float(cross.DET) == pytest.approx(ref["DET"], rel=1e-12)
    assert float(cross.LAM) == pytest.approx(ref["LAM"], rel=1e-12)
    joint = ds.edm.rqa("x", joint="y", E=2, eps=0.3, backend="cpu")
    R = nr.naive_recurrence_matrix(x, E=2, eps=0.3, joint=y)
    assert float(joint.RR) == pytest.approx(R.mean(), rel=1e-12)
    both = ds.edm.rqa(["x", "y"], E=2, eps=0.3, backend="cpu")
    R = nr.naive_recurrence_matrix(np.stack([x, y]), E=2, eps=0.3)
    assert float(both.RR) == pytest.approx(R.mean(), rel=1e-12)


def test_recurrence_rate_selection():
    x = xr.DataArray(logistic(400), dims="time")
    res = x.edm.rqa(E=3, recurrence_rate=[0.05, 0.1], backend="cpu")
    assert res.attrs["eps_method"] == "exact"
    # no ties: exactly round(rr * N'^2) distances, up to the pairing of the symmetric halves
    np.testing.assert_allclose(res.RR, [0.05, 0.1], atol=2 / 398)
    one = x.edm.rqa(E=3, eps=float(res.eps[1]), backend="cpu")
    assert float(one.RR) == float(res.RR[1])
    prob = RecurrenceProblem.single(x.values, E=3)
    eps_s, how = eps_for_recurrence_rate(prob, [0.1], method="sample", n_sample=200_000)
    assert how == "sample" and abs(eps_s[0, 0, 0] - float(res.eps[1])) < 0.05


def test_joint_recurrence_rate_one_eps_per_channel():
    ds = xedm.datasets.coupled_logistic(200)
    res = ds.edm.rqa("x", joint="y", E=2, recurrence_rate=0.2, backend="cpu")
    assert res.eps.dims == ("channel",)
    for ch, name in enumerate(["x", "y"]):
        alone = ds.edm.rqa(name, E=2, eps=float(res.eps[ch]), backend="cpu")
        assert abs(float(alone.RR) - 0.2) < 0.01


def test_recurrence_plot():
    x = xr.DataArray(logistic(80), dims="time", coords={"time": np.arange(80) + 100})
    R = x.edm.recurrence_plot(E=3, tau=2, eps=0.3)
    assert R.dims == ("time", "time_") and R.dtype == bool
    np.testing.assert_array_equal(R.values, nr.naive_recurrence_matrix(x.values, E=3, tau=2,
                                                                        eps=0.3))
    assert int(R.time[0]) == 104  # labelled by the most recent value of each state
    with pytest.raises(ValueError, match="use xedm.rqa"):
        x.edm.recurrence_plot(E=1, eps=0.3, max_states=50)


# ----------------------------------------------------------------------------- input checks
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"E": 0, "eps": 0.1}, "E="),
        ({"tau": 0, "eps": 0.1}, "tau="),
        ({"E": 30, "tau": 2, "eps": 0.1}, "too short"),
        ({"eps": 0.1, "recurrence_rate": 0.1}, "eps= and recurrence_rate="),
        ({}, "eps= and recurrence_rate="),
        ({"eps": 0.1, "norm": "cosine"}, "norm="),
        ({"eps": -1.0}, "eps="),
        ({"recurrence_rate": 1.5}, "recurrence_rate="),
        ({"eps": 0.1, "theiler": -1}, "theiler="),
        ({"eps": 0.1, "l_min": 0}, "l_min="),
        ({"eps": 0.1, "window": 5000}, "window="),
        ({"eps": 0.1, "step": 3}, "step="),
    ],
)
def test_bad_inputs(kwargs, match):
    x = xr.DataArray(logistic(50), dims="time")
    with pytest.raises(ValueError, match=match):
        x.edm.rqa(backend="cpu", **kwargs)


def test_nan_input_is_an_error_and_inputs_are_untouched():
    vals = logistic(60)
    vals[10] = np.nan
    x = xr.DataArray(vals, dims="time")
    with pytest.raises(ValueError, match="NaN"):
        x.edm.rqa(E=2, eps=0.1, backend="cpu")
    clean = xr.DataArray(logistic(60), dims="time")
    before = clean.copy(deep=True)
    clean.edm.rqa(E=2, recurrence_rate=0.1, backend="cpu")
    clean.edm.recurrence_plot(E=2, eps=0.1)
    xr.testing.assert_identical(clean, before)


# ----------------------------------------------------------------------------- parity
def _pyrqa_result(x, y, E, tau, eps, theiler):
    from pyrqa.analysis_type import Classic, Cross
    from pyrqa.computation import RQAComputation
    from pyrqa.metric import EuclideanMetric
    from pyrqa.neighbourhood import FixedRadius
    from pyrqa.settings import Settings
    from pyrqa.time_series import TimeSeries

    ts = TimeSeries(x, embedding_dimension=E, time_delay=tau, dtype=np.float64)
    if y is None:
        settings = Settings(ts, analysis_type=Classic, neighbourhood=FixedRadius(eps),
                            similarity_measure=EuclideanMetric, theiler_corrector=theiler)
    else:
        ty = TimeSeries(y, embedding_dimension=E, time_delay=tau, dtype=np.float64)
        settings = Settings((ts, ty), analysis_type=Cross, neighbourhood=FixedRadius(eps),
                            similarity_measure=EuclideanMetric, theiler_corrector=0)
    return RQAComputation.create(settings, verbose=False).run()


@pytest.mark.skipif(importlib.util.find_spec("pyrqa") is None, reason="pyrqa not installed")
@pytest.mark.parametrize("cross", [False, True])
def test_pyrqa_parity(cross):
    x = logistic(400)
    y = logistic(350, x0=0.31) if cross else None
    try:
        res = _pyrqa_result(x, y, 3, 2, 0.2123, 1)
    except Exception as err:  # no OpenCL device
        pytest.skip(f"pyrqa could not run: {err}")
    da = xr.DataArray(x, dims="time")
    other = None if y is None else xr.DataArray(y, dims="time")
    ours = da.edm.rqa(E=3, tau=2, eps=0.2123, other=other, backend="cpu")
    for mine, theirs in (("diagonal_lines", res.diagonal_frequency_distribution),
                         ("vertical_lines", res.vertical_frequency_distribution),
                         ("white_vertical_lines", res.white_vertical_frequency_distribution)):
        a = ours[mine].values
        b = np.asarray(theirs, np.uint64)
        n = max(a.size, b.size)
        np.testing.assert_array_equal(np.pad(a, (0, n - a.size)), np.pad(b, (0, n - b.size)))
    n_points = (x.size - 4) * ((y if cross else x).size - 4)
    assert int(res.number_of_recurrence_points) == round(float(ours.RR) * n_points)
    np.testing.assert_allclose(float(ours.DET), float(res.determinism), rtol=1e-5)
    np.testing.assert_allclose(float(ours.LAM), float(res.laminarity), rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(importlib.util.find_spec("accrqa") is None, reason="accrqa not installed")
def test_accrqa_parity_theiler_zero():
    import accrqa

    x = logistic(600)
    dist = accrqa.accrqaDistance("euclidean")
    cpu = accrqa.accrqaCompPlatform("cpu")
    try:
        det = accrqa.DET(x, 3, 5, 2, 0.3, dist, comp_platform=cpu, tidy_data=False).ravel()
        lam = accrqa.LAM(x, 3, 5, 2, 0.3, dist, comp_platform=cpu, tidy_data=False).ravel()
    except Exception as err:
        pytest.skip(f"accrqa could not run: {err}")
    # AccRQA keeps the line of identity in DET, L and ENTR (theiler=0) but not in L_max
    ours = xr.DataArray(x, dims="time").edm.rqa(E=5, tau=3, eps=0.3, theiler=0, backend="cpu")
    np.testing.assert_allclose([ours.DET, ours.L, ours.ENTR, ours.RR], det[[0, 1, 3, 4]],
                               rtol=1e-9)
    np.testing.assert_allclose(float(ours.RR), lam[4], rtol=1e-9)
    np.testing.assert_allclose(float(ours.LAM), lam[0], rtol=1e-9, atol=1e-12)


def test_benchmark_script_runs():
    """benchmarks/rqa.py runs (tiny size) so it cannot rot."""
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "rqa.py"
    spec = importlib.util.spec_from_file_location("rqa_benchmark", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["cpu", "--sizes", "600", "--quick", "--no-pyrqa"])
    row = out["rows"][0]
    assert row["N"] == 600 and abs(row["xedm"]["RR"] - 0.05) < 0.01
