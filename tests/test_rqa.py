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
from xedm.kernels import gpu_available
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


@pytest.mark.parametrize("theiler", [0, 3])
def test_symmetric_pass_equals_general_pass(theiler):
    """Self and joint recurrence run one pass over the upper triangle with bit-packed rows
    and stitched columns; it must give the counts of the general (both triangles, whole
    columns) kernel for blocks narrower and wider than a 64-bit word, several thresholds
    and several matrices, and the dense reference on one of them."""
    from xedm.recurrence.recurrence import NORMS as ALL
    from xedm.recurrence.recurrence import _cpu_histograms, _cpu_symmetric, thresholds

    rng = np.random.default_rng(theiler)
    x, z = np.round(rng.normal(size=300), 1), rng.normal(size=300)
    for norm, joint in (("euclidean", False), ("maximum", True), ("manhattan", False)):
        prob = RecurrenceProblem.single(x, z if joint else None, E=3, tau=2,
                                        theiler=theiler, joint=joint)
        na = prob.na
        prob.matrices = np.array([[0, 0, na, 0, 0, na], [0, 5, 150, 0, 5, 150]], np.int64)
        eps = [0.4, 1.0, 1.6] if norm != "manhattan" else [1.0, 2.5]
        thr = thresholds(eps, norm, prob.nch, 2)
        code = ALL.index(norm)
        ref = _cpu_histograms(prob, thr, code, 37)
        for tile in (1, 63, 64, 65, 129, None):
            got = _cpu_symmetric(prob, thr, code, tile)
            for a, b in zip(ref, got, strict=True):
                np.testing.assert_array_equal(a, b)
    R = nr.naive_recurrence_matrix(x, E=3, tau=2, eps=1.6, norm="manhattan")
    _check(RecurrenceProblem.single(x, E=3, tau=2, theiler=theiler), R, 1.6, "manhattan",
           theiler, True, 100)


def test_squared_threshold_is_exact():
    rng = np.random.default_rng(0)
    for eps in np.concatenate([rng.uniform(1e-3, 10, 200), [1.0, 0.1, 0.3, 2.0]]):
        s = squared_threshold(eps)
        assert np.sqrt(s) >= eps and np.sqrt(np.nextafter(s, 0)) < eps


# ----------------------------------------------------------------------------- measures
@pytest.mark.parametrize("l_min", [pytest.param(2, marks=pytest.mark.quick), 3, 4])
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


def test_joint_recurrence_rate_one_eps_per_series():
    ds = xedm.datasets.coupled_logistic(200)
    res = ds.edm.rqa("x", joint="y", E=2, recurrence_rate=0.2, backend="cpu")
    assert res.eps.dims == () and res.joint_eps.dims == ()
    assert res.attrs["joint_threshold"] == "recurrence_rate"
    assert res.attrs["joint_recurrence_rate"] == 0.2
    for var, name in (("eps", "x"), ("joint_eps", "y")):
        assert res.attrs[var] == float(res[var])
        alone = ds.edm.rqa(name, E=2, eps=float(res[var]), backend="cpu")
        assert abs(float(alone.RR) - 0.2) < 0.01


@pytest.mark.quick
def test_recurrence_plot():
    x = xr.DataArray(logistic(80), dims="time", coords={"time": np.arange(80) + 100})
    R = x.edm.recurrence_plot(E=3, tau=2, eps=0.3)
    assert R.dims == ("time", "time_") and R.dtype == bool
    np.testing.assert_array_equal(R.values, nr.naive_recurrence_matrix(x.values, E=3, tau=2,
                                                                        eps=0.3))
    assert int(R.time[0]) == 104  # labelled by the most recent value of each state
    with pytest.raises(ValueError, match="use xedm.rqa"):
        x.edm.recurrence_plot(E=1, eps=0.3, max_states=50)


# ----------------------------------------------------------------------------- joint thresholds
def _joint_pair(n=160, scale=4.0):
    """x and a y of another scale (so one eps would not suit both), as DataArrays."""
    x = xr.DataArray(logistic(n), dims="time")
    y = xr.DataArray(scale * logistic(n, x0=0.123), dims="time")
    return x, y


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("theiler", [0, 1, 5])
def test_joint_separate_thresholds_histograms_match_dense(norm, theiler):
    rng = np.random.default_rng(11 + theiler + 10 * NORMS.index(norm))
    for _ in range(4):
        n = int(rng.integers(8, 60))
        E, tau = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        # 0.1 grids: distances tie exactly with both thresholds (strict < in each channel)
        x, z = np.round(rng.normal(size=n), 1), np.round(3 * rng.normal(size=n), 1)
        ex, ez = float(rng.choice([0.5, 1.0, 1.3])), float(rng.choice([1.5, 3.0, 4.2]))
        prob = RecurrenceProblem.single(x, z, E=E, tau=tau, theiler=theiler, joint=True)
        R = nr.naive_recurrence_matrix(x, E=E, tau=tau, eps=ex, norm=norm, joint=z,
                                       joint_eps=ez)
        hd, hv, hw = nr.naive_line_histograms(R, theiler, True)
        for tile in (1, 5, 128):
            h = line_histograms(prob, [[ex, ez]], norm, "cpu", tile)
            np.testing.assert_array_equal(h["diagonal"][0, 0][:hv.size], hd)
            np.testing.assert_array_equal(h["vertical"][0, 0], hv)
            np.testing.assert_array_equal(h["white"][0, 0], hw)


def _assert_measures(res, R, theiler=1):
    ref = nr.naive_measures(R, theiler)
    for name in MEASURES:
        np.testing.assert_allclose(float(res[name]), ref[name], rtol=1e-12, atol=0,
                                   equal_nan=True, err_msg=name)
    hd, hv, hw = nr.naive_line_histograms(R, theiler)
    np.testing.assert_array_equal(res.vertical_lines.values, hv[1:])
    np.testing.assert_array_equal(res.diagonal_lines.values, hd[1:])
    np.testing.assert_array_equal(res.white_vertical_lines.values, hw[1:])


@pytest.mark.parametrize("norm", NORMS)
def test_joint_eps_matches_dense(norm):
    x, y = _joint_pair()
    res = x.edm.rqa(joint=y, E=3, tau=2, eps=0.2, joint_eps=0.9, norm=norm, backend="cpu")
    R = nr.naive_recurrence_matrix(x.values, E=3, tau=2, eps=0.2, norm=norm, joint=y.values,
                                   joint_eps=0.9)
    _assert_measures(res, R)
    assert res.attrs["eps"] == 0.2 and res.attrs["joint_eps"] == 0.9
    assert res.attrs["joint_threshold"] == "joint_eps" and res.attrs["kind"] == "joint"
    # the AND is symmetric: swapping the series and their thresholds changes nothing
    swapped = y.edm.rqa(joint=x, E=3, tau=2, eps=0.9, joint_eps=0.2, norm=norm, backend="cpu")
    for name in MEASURES:
        np.testing.assert_array_equal(float(swapped[name]), float(res[name]))


def test_joint_eps_lists_are_an_outer_product():
    x, y = _joint_pair()
    eps, jeps = [0.1, 0.25], [0.5, 0.9, 2.0]
    res = x.edm.rqa(joint=y, E=2, eps=eps, joint_eps=jeps, theiler=3, backend="cpu")
    assert res.RR.dims == ("eps", "joint_eps")
    assert res.diagonal_lines.dims == ("eps", "joint_eps", "line_length")
    np.testing.assert_array_equal(res.joint_eps, jeps)
    for e in eps:
        for j in jeps:
            R = nr.naive_recurrence_matrix(x.values, E=2, eps=e, joint=y.values, joint_eps=j)
            _assert_measures(res.sel(eps=e, joint_eps=j), R, theiler=3)
    one = x.edm.rqa(joint=y, E=2, eps=0.25, joint_eps=jeps, theiler=3, backend="cpu")
    assert one.RR.dims == ("joint_eps",) and one.attrs["eps"] == 0.25
    xr.testing.assert_equal(one.RR, res.RR.sel(eps=0.25, drop=True))


def test_joint_recurrence_rate_matches_dense():
    x, y = _joint_pair()
    E, tau = 2, 3
    res = x.edm.rqa(joint=y, E=E, tau=tau, eps=0.2, joint_recurrence_rate=0.1, backend="cpu")
    ey = nr.naive_eps_for_recurrence_rate(y.values, 0.1, E=E, tau=tau)
    assert float(res.joint_eps) == ey and res.attrs["joint_eps"] == ey
    assert res.attrs["eps"] == 0.2 and "eps" not in res.data_vars
    assert res.attrs["joint_recurrence_rate"] == 0.1
    R = nr.naive_recurrence_matrix(x.values, E=E, tau=tau, eps=0.2, joint=y.values,
                                   joint_eps=ey)
    _assert_measures(res, R)
    # each series its own rate: eps of x from recurrence_rate, of y from joint_recurrence_rate
    res = x.edm.rqa(joint=y, E=E, tau=tau, recurrence_rate=[0.05, 0.2],
                    joint_recurrence_rate=[0.1, 0.3], backend="cpu")
    assert res.eps.dims == ("recurrence_rate",)
    assert res.joint_eps.dims == ("joint_recurrence_rate",)
    for rx in (0.05, 0.2):
        ex = nr.naive_eps_for_recurrence_rate(x.values, rx, E=E, tau=tau)
        assert float(res.eps.sel(recurrence_rate=rx)) == ex
        for ry in (0.1, 0.3):
            ey = nr.naive_eps_for_recurrence_rate(y.values, ry, E=E, tau=tau)
            assert float(res.joint_eps.sel(joint_recurrence_rate=ry)) == ey
            R = nr.naive_recurrence_matrix(x.values, E=E, tau=tau, eps=ex, joint=y.values,
                                           joint_eps=ey)
            _assert_measures(res.sel(recurrence_rate=rx, joint_recurrence_rate=ry), R)
    # a rate for x, a fixed threshold for y
    res = x.edm.rqa(joint=y, E=E, tau=tau, recurrence_rate=0.1, joint_eps=1.1, backend="cpu")
    ex = nr.naive_eps_for_recurrence_rate(x.values, 0.1, E=E, tau=tau)
    assert float(res.eps) == ex and res.attrs["joint_eps"] == 1.1 and "joint_eps" not in res
    _assert_measures(res, nr.naive_recurrence_matrix(x.values, E=E, tau=tau, eps=ex,
                                                     joint=y.values, joint_eps=1.1))


def test_joint_default_follows_the_data():
    x, y = _joint_pair()
    # eps: the same eps for both (the behaviour before joint_eps existed)
    res = x.edm.rqa(joint=y, E=2, eps=0.4, backend="cpu")
    same = x.edm.rqa(joint=y, E=2, eps=0.4, joint_eps=0.4, backend="cpu")
    for name in MEASURES:
        assert float(res[name]) == float(same[name]) or np.isnan(float(res[name]))
    assert res.attrs["joint_eps"] == 0.4 and res.attrs["joint_threshold"] == "eps"
    _assert_measures(res, nr.naive_recurrence_matrix(x.values, E=2, eps=0.4, joint=y.values))
    sweep = x.edm.rqa(joint=y, E=2, eps=[0.2, 0.4], backend="cpu")
    np.testing.assert_array_equal(sweep.joint_eps, [0.2, 0.4])  # a coord along eps
    assert sweep.joint_eps.dims == ("eps",)
    # recurrence_rate: each series its own eps for the same rate
    res = x.edm.rqa(joint=y, E=2, recurrence_rate=[0.1, 0.2], backend="cpu")
    own = x.edm.rqa(joint=y, E=2, recurrence_rate=[0.1, 0.2], joint_recurrence_rate=[0.1, 0.2],
                    backend="cpu")
    for k in range(2):
        assert float(res.joint_eps[k]) == float(own.joint_eps[k])
        assert float(res.RR[k]) == float(own.RR[k, k])


def test_joint_windowed_own_thresholds():
    x, y = _joint_pair(300)
    res = x.edm.rqa(joint=y, E=2, eps=0.2, joint_recurrence_rate=0.1, window=100, step=50,
                    backend="cpu")
    assert res.joint_eps.dims == ("time",) and res.attrs["eps"] == 0.2
    for w, s in enumerate(range(0, 201, 50)):
        xs, ys = x.values[s:s + 100], y.values[s:s + 100]
        ey = nr.naive_eps_for_recurrence_rate(ys, 0.1, E=2)
        assert float(res.joint_eps[w]) == ey
        R = nr.naive_recurrence_matrix(xs, E=2, eps=0.2, joint=ys, joint_eps=ey)
        np.testing.assert_allclose(float(res.DET[w]), nr.naive_measures(R)["DET"], rtol=1e-12)


def test_joint_dataset_and_recurrence_plot():
    ds = xedm.datasets.coupled_logistic(120)
    ds["y"] = 5 * ds.y
    res = ds.edm.rqa("x", joint="y", E=2, eps=0.2, joint_eps=1.0, backend="cpu")
    R = nr.naive_recurrence_matrix(ds.x.values, E=2, eps=0.2, joint=ds.y.values, joint_eps=1.0)
    _assert_measures(res, R)
    plot = ds.edm.recurrence_plot("x", joint="y", E=2, eps=0.2, joint_eps=1.0)
    np.testing.assert_array_equal(plot.values, R)
    assert plot.attrs["eps"] == 0.2 and plot.attrs["joint_eps"] == 1.0
    plot = ds.edm.recurrence_plot("x", joint="y", E=2, eps=0.2, joint_recurrence_rate=0.1)
    ey = nr.naive_eps_for_recurrence_rate(ds.y.values, 0.1, E=2)
    assert plot.attrs["joint_eps"] == ey and plot.attrs["joint_recurrence_rate"] == 0.1
    np.testing.assert_array_equal(plot.values, nr.naive_recurrence_matrix(
        ds.x.values, E=2, eps=0.2, joint=ds.y.values, joint_eps=ey))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"joint_eps": 0.5, "joint_recurrence_rate": 0.1}, ValueError,
         "joint_eps= and joint_recurrence_rate="),
        ({"joint_eps": 0.0}, ValueError, "joint_eps="),
        ({"joint_eps": np.nan}, ValueError, "joint_eps="),
        ({"joint_eps": [0.5, 0.5]}, ValueError, "joint_eps=.*repeats"),
        ({"joint_eps": "big"}, TypeError, "joint_eps="),
        ({"joint_recurrence_rate": 1.0}, ValueError, "joint_recurrence_rate="),
        ({"joint_recurrence_rate": [0.1, 0.1]}, ValueError, "joint_recurrence_rate=.*repeats"),
    ],
)
def test_joint_threshold_errors(kwargs, error, match):
    x, y = _joint_pair(60)
    with pytest.raises(error, match=match):
        x.edm.rqa(joint=y, E=2, eps=0.2, backend="cpu", **kwargs)
    if error is ValueError and "exclude" not in match:
        with pytest.raises(error, match=match):
            x.edm.recurrence_plot(joint=y, E=2, eps=0.2, **kwargs)


@pytest.mark.parametrize("name", ["joint_eps", "joint_recurrence_rate"])
def test_joint_thresholds_need_joint(name):
    x, y = _joint_pair(60)
    with pytest.raises(ValueError, match=f"{name}= .*needs joint="):
        x.edm.rqa(E=2, eps=0.2, backend="cpu", **{name: 0.1})
    with pytest.raises(ValueError, match=f"{name}= .*needs joint="):
        x.edm.rqa(other=y, E=2, eps=0.2, backend="cpu", **{name: 0.1})
    with pytest.raises(ValueError, match=f"{name}= .*needs joint="):
        x.edm.recurrence_plot(E=2, eps=0.2, **{name: 0.1})


@pytest.mark.skipif(importlib.util.find_spec("pyunicorn") is None,
                    reason="pyunicorn not installed")
@pytest.mark.parametrize("norm, metric", [("euclidean", "euclidean"), ("maximum", "supremum"),
                                          ("manhattan", "manhattan")])
def test_pyunicorn_joint_parity(norm, metric):
    from pyunicorn.timeseries import JointRecurrencePlot

    # float32-exact values: pyunicorn stores the series as float32
    x = logistic(300).astype(np.float32).astype(np.float64)
    y = (3 * logistic(300, x0=0.123)).astype(np.float32).astype(np.float64)
    E, tau = 3, 2
    ex, ey = nr.gap_eps(x, 0.1, E, tau, norm), nr.gap_eps(y, 0.05, E, tau, norm)
    try:
        jrp = JointRecurrencePlot(x, y, metric=(metric, metric), threshold=(ex, ey),
                                  dim=(E, E), tau=(tau, tau), silence_level=3)
    except TypeError as err:  # an older API (threshold_y=)
        pytest.skip(f"pyunicorn's JointRecurrencePlot API differs: {err}")
    ours = xr.DataArray(x, dims="time").edm.rqa(
        joint=xr.DataArray(y, dims="time"), E=E, tau=tau, eps=ex, joint_eps=ey, norm=norm,
        backend="cpu")
    JR = np.asarray(jrp.recurrence_matrix(), bool)
    plot = xr.DataArray(x, dims="time").edm.recurrence_plot(
        joint=xr.DataArray(y, dims="time"), E=E, tau=tau, eps=ex, joint_eps=ey, norm=norm)
    np.testing.assert_array_equal(plot.values, JR)
    # pyunicorn's histograms are indexed by length - 1; theiler=1 leaves out the identity
    for mine, theirs in (("diagonal_lines", jrp.diagline_dist()),
                         ("vertical_lines", jrp.vertline_dist()),
                         ("white_vertical_lines", jrp.white_vertline_dist())):
        a = ours[mine].values
        b = np.asarray(theirs, np.uint64)
        n = max(a.size, b.size)
        np.testing.assert_array_equal(np.pad(a, (0, n - a.size)), np.pad(b, (0, n - b.size)),
                                      err_msg=mine)
    assert float(ours.RR) == pytest.approx(jrp.recurrence_rate(), rel=1e-12)
    assert float(ours.DET) == pytest.approx(jrp.determinism(l_min=2), rel=1e-9)
    assert float(ours.L) == pytest.approx(jrp.average_diaglength(l_min=2), rel=1e-9)
    assert float(ours.L_max) == jrp.max_diaglength()


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
        ({"eps": np.nan}, "eps="),
        ({"eps": np.inf}, "eps="),
        ({"eps": [0.1, np.nan]}, "eps="),
        ({"eps": []}, "eps="),
        ({"eps": [[0.1, 0.2]]}, "eps="),
        ({"recurrence_rate": 0.0}, "recurrence_rate="),
        ({"recurrence_rate": 1.0}, "recurrence_rate=.*eps larger than the largest distance"),
        ({"recurrence_rate": np.nan}, "recurrence_rate="),
        ({"eps": 0.1, "theiler": 50}, "theiler=50 leaves no diagonal.*theiler < 50"),
        ({"eps": 0.1, "E": 3, "tau": 2, "theiler": 500}, "theiler=500.*theiler < 46"),
        ({"eps": 0.1, "theiler": 10, "window": 10}, "theiler=10.*window=10.*theiler < 10"),
        ({"recurrence_rate": 0.1, "eps_method": "fast"}, "eps_method="),
        ({"eps": 0.1, "tile": 0}, "tile="),
    ],
)
def test_bad_inputs(kwargs, match):
    x = xr.DataArray(logistic(50), dims="time")
    with pytest.raises(ValueError, match=match):
        x.edm.rqa(backend="cpu", **kwargs)


def test_non_integer_counts_are_type_errors():
    x = xr.DataArray(logistic(50), dims="time")
    for name, value in (("E", 2.0), ("tau", "1"), ("theiler", True), ("l_min", None)):
        with pytest.raises(TypeError, match=f"{name}="):
            x.edm.rqa(backend="cpu", eps=0.1, **{name: value})


@pytest.mark.parametrize(
    "kwargs",
    [{"eps": "0.1"}, {"eps": True}, {"eps": [0.1, None]}, {"recurrence_rate": "5%"},
     {"recurrence_rate": [True]}],
)
def test_non_numeric_thresholds_are_type_errors(kwargs):
    x = xr.DataArray(logistic(50), dims="time")
    name = next(iter(kwargs))
    with pytest.raises(TypeError, match=f"{name}="):
        x.edm.rqa(backend="cpu", **kwargs)


@pytest.mark.parametrize("name, values", [("eps", [0.1, 0.2, 0.1]),
                                          ("recurrence_rate", [0.05, 0.05])])
def test_repeated_sweep_values_are_refused(name, values):
    """A repeated value would give duplicate labels on the eps / recurrence_rate dim."""
    x = xr.DataArray(logistic(50), dims="time")
    with pytest.raises(ValueError, match=f"{name}=.*repeats"):
        x.edm.rqa(backend="cpu", **{name: values})
    # np.float64 and int spellings of the same number are the same value
    if name == "eps":
        with pytest.raises(ValueError, match="repeats"):
            x.edm.rqa(eps=[1, np.float64(1.0)], backend="cpu")


def test_repeated_variable_names_are_refused():
    ds = xedm.datasets.coupled_logistic(80)
    ds["z"] = ds.x * 2
    with pytest.raises(ValueError, match=r"columns=.*\['x'\] more than once"):
        ds.edm.rqa(["x", "x"], E=2, eps=0.1, backend="cpu")
    with pytest.raises(ValueError, match=r"joint=.*\['y'\] more than once"):
        ds.edm.rqa(["x", "z"], joint=["y", "y"], E=2, eps=0.1, backend="cpu")
    with pytest.raises(ValueError, match=r"other=.*\['y'\] more than once"):
        ds.edm.rqa(["x", "z"], other=["y", "y"], E=2, eps=0.1, backend="cpu")
    with pytest.raises(ValueError, match="more than once"):
        ds.edm.recurrence_plot(["x", "x"], E=2, eps=0.1)


def test_recurrence_plot_takes_one_threshold():
    x = xr.DataArray(logistic(60), dims="time")
    with pytest.raises(ValueError, match="eps=.*one number"):
        x.edm.recurrence_plot(E=2, eps=[0.1, 0.2])
    with pytest.raises(ValueError, match="recurrence_rate=.*one number"):
        x.edm.recurrence_plot(E=2, recurrence_rate=[0.1, 0.2])
    with pytest.raises(ValueError, match="recurrence_rate="):
        x.edm.recurrence_plot(E=2, recurrence_rate=1.0)
    with pytest.raises(ValueError, match="eps="):
        x.edm.recurrence_plot(E=2, eps=0.0)
    with pytest.raises(ValueError, match="eps_method="):
        x.edm.recurrence_plot(E=2, recurrence_rate=0.1, eps_method="fast")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int16, np.int64, np.uint8])
def test_other_real_dtypes_are_computed_in_float64(dtype):
    raw = np.round(logistic(120) * 100)
    x = xr.DataArray(raw.astype(dtype), dims="time")
    res = x.edm.rqa(E=2, eps=4.0, backend="cpu")
    R = nr.naive_recurrence_matrix(x.values.astype(np.float64), E=2, eps=4.0)
    _assert_measures(res, R)
    assert x.dtype == dtype  # the input keeps its dtype


@pytest.mark.parametrize("dtype", [bool, complex, "datetime64[ns]", object])
def test_non_real_dtypes_are_type_errors(dtype):
    vals = np.arange(40) % 3
    x = xr.DataArray(vals.astype(dtype), dims="time")
    with pytest.raises(TypeError, match=r"astype\(float\)"):
        x.edm.rqa(E=2, eps=0.5, backend="cpu")
    y = xr.DataArray(logistic(40), dims="time")
    with pytest.raises(TypeError, match=r"astype\(float\)"):
        y.edm.rqa(joint=x, E=2, eps=0.5, backend="cpu")


def test_all_nan_and_short_series_are_errors():
    x = xr.DataArray(logistic(50), dims="time")
    nan = xr.DataArray(np.full(50, np.nan), dims="time")
    with pytest.raises(ValueError, match="data contains NaN"):
        nan.edm.rqa(E=2, eps=0.1, backend="cpu")
    with pytest.raises(ValueError, match="joint contains NaN"):
        x.edm.rqa(joint=nan, E=2, eps=0.1, backend="cpu")
    with pytest.raises(ValueError, match="other contains NaN"):
        x.edm.rqa(other=nan, E=2, eps=0.1, backend="cpu")
    with pytest.raises(ValueError, match="data contains NaN"):
        nan.edm.recurrence_plot(E=2, eps=0.1)
    for n, E, tau in ((0, 1, 1), (1, 1, 1), (3, 3, 1), (10, 4, 3)):
        with pytest.raises(ValueError, match="too short.*E=.*tau="):
            xr.DataArray(logistic(10)[:n], dims="time").edm.rqa(E=E, tau=tau, eps=0.1,
                                                                backend="cpu")
    with pytest.raises(ValueError, match="too short: the cross series of 3 points"):
        x.edm.rqa(other=xr.DataArray(logistic(3), dims="time"), E=3, eps=0.1, backend="cpu")
    with pytest.raises(ValueError, match="too short"):
        xr.DataArray(logistic(3), dims="time").edm.recurrence_plot(E=3, eps=0.1)


def test_joint_series_must_share_time_labels():
    x = xr.DataArray(logistic(50), dims="time", coords={"time": np.arange(50)})
    y = xr.DataArray(logistic(50, x0=0.2), dims="time", coords={"time": np.arange(50) + 10})
    with pytest.raises(ValueError, match="different 'time' labels.*align"):
        x.edm.rqa(joint=y, E=2, eps=0.1, backend="cpu")
    with pytest.raises(ValueError, match="same length"):
        x.edm.rqa(joint=y[:40], E=2, eps=0.1, backend="cpu")
    # no coordinate on one side: paired by position
    res = x.edm.rqa(joint=y.drop_vars("time"), E=2, eps=0.1, backend="cpu")
    assert res.attrs["kind"] == "joint"


def test_dask_backed_input():
    pytest.importorskip("dask")
    x, y = _joint_pair(150)
    xd, yd = x.chunk({"time": 40}), y.chunk({"time": 25})
    for kw in ({"eps": [0.1, 0.3]}, {"recurrence_rate": 0.1, "joint": yd, "joint_eps": 1.0},
               {"eps": 0.2, "other": yd}):
        with pytest.warns(UserWarning, match="'time' is split into"):  # one chunk needed
            lazy = xd.edm.rqa(E=2, backend="cpu", **kw)
        assert lazy.RR.chunks is not None  # stays lazy (issue 13)
        kw = {k: (y if v is yd else v) for k, v in kw.items()}
        ref = x.edm.rqa(E=2, backend="cpu", **kw)
        # the attrs found from the values (a recurrence rate's eps, the eps method) are not
        # in a lazy result; its eps variable holds them
        ref.attrs = {k: a for k, a in ref.attrs.items()
                     if k not in ("eps", "eps_method") or k in lazy.attrs}
        xr.testing.assert_identical(lazy.compute(), ref)
    plot = xd.edm.recurrence_plot(E=2, eps=0.2, joint=yd, joint_eps=1.0)
    np.testing.assert_array_equal(plot.values, nr.naive_recurrence_matrix(
        x.values, E=2, eps=0.2, joint=y.values, joint_eps=1.0))
    assert xd.chunks is not None and yd.chunks is not None  # still lazy, never loaded in place


def test_nan_input_is_an_error_and_inputs_are_untouched():
    vals = logistic(60)
    vals[10] = np.nan
    x = xr.DataArray(vals, dims="time")
    with pytest.raises(ValueError, match="NaN"):
        x.edm.rqa(E=2, eps=0.1, backend="cpu")
    clean = xr.DataArray(logistic(60), dims="time")
    partner = xr.DataArray(logistic(60, x0=0.2), dims="time")
    before, partner_before = clean.copy(deep=True), partner.copy(deep=True)
    clean.edm.rqa(E=2, recurrence_rate=0.1, backend="cpu")
    clean.edm.recurrence_plot(E=2, eps=0.1)
    clean.edm.rqa(E=2, recurrence_rate=[0.1, 0.2], joint=partner, joint_eps=[0.3, 0.5],
                  window=30, step=10, backend="cpu")
    clean.edm.rqa(E=2, eps=0.1, other=partner, backend="cpu")
    clean.edm.recurrence_plot(E=2, eps=0.1, joint=partner, joint_recurrence_rate=0.2)
    xr.testing.assert_identical(clean, before)
    xr.testing.assert_identical(partner, partner_before)


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


def test_variable_names_must_be_str():
    ds = xedm.datasets.coupled_logistic(60)
    for func in (xedm.rqa, xedm.recurrence_plot):
        for bad in (0, [0], ["x", 1]):  # was "'int' object is not iterable"
            with pytest.raises(TypeError, match="columns must be a variable name or a list"):
                func(ds, bad, eps=0.5)
        with pytest.raises(TypeError, match="other must be a variable name or a list"):
            func(ds, "x", other=0, eps=0.5)


@pytest.mark.parametrize("func", [xedm.rqa, xedm.recurrence_plot])
@pytest.mark.parametrize("what", ["other", "joint"])
def test_partner_needs_as_many_variables_as_columns(func, what):
    """Cross distances and the joint matrix pair the state coordinates one to one: a
    multivariate state (columns= of several variables) needs a partner of as many variables
    (it was a reshape error for a one-variable partner)."""
    ds = xedm.datasets.coupled_logistic(60)
    ds["z"] = ds.x * 2
    before = ds.copy(deep=True)
    with pytest.raises(ValueError, match=f"{what}= is one series, but columns= names 2 "
                                         f"variables.*{what}= as a list of 2 variable names"):
        func(ds, ["x", "y"], eps=0.5, **{what: ds.z})
    with pytest.raises(ValueError, match=f"{what}= names 1 variable.*columns has 2"):
        func(ds, ["x", "y"], eps=0.5, **{what: "z"})
    xr.testing.assert_identical(ds, before)
    # as many variables: fine, and equal to the DataArray partner with one column
    func(ds, ["x", "y"], eps=0.5, **{what: ["z", "x"]})
    a = func(ds, "x", eps=0.5, **{what: ds.z})
    b = func(ds, "x", eps=0.5, **{what: "z"})
    xr.testing.assert_equal(a, b)


@pytest.mark.parametrize("func", [xedm.rqa, xedm.recurrence_plot])
def test_dim_missing_from_the_chosen_variables(func):
    """The Dataset has the dim, the chosen variable does not: the message names time_dim= and the
    variable (it named an internal dim)."""
    rng = np.random.default_rng(0)
    ds = xr.Dataset({"x": ("time", rng.random(60)), "y": ("time", rng.random(60)),
                     "w2": (("series", "time"), rng.random((2, 60)))})
    with pytest.raises(ValueError,
                       match=r"time_dim='series': variable 'x' has no dim 'series'") as e:
        func(ds, "x", eps=0.5, time_dim="series")
    assert "_rqa" not in str(e.value)
    with pytest.raises(ValueError, match=r"time_dim='series': variable 'y' has no dim 'series'"):
        func(ds, "w2", other="y", eps=0.5, time_dim="series")
    # a DataArray partner without the data's time dim: named as other=
    with pytest.raises(ValueError, match=r"other=: the series has no dim 'time'"):
        func(ds, "x", other=ds.y.rename(time="t"), eps=0.5)
    # a numpy partner takes the data's time dim on its last axis
    a = func(ds.rename(time="t"), "x", other=ds.y.values, eps=0.5, time_dim="t")
    b = func(ds.rename(time="t"), "x", other="y", eps=0.5, time_dim="t")
    if isinstance(a, xr.Dataset):
        a, b = a.to_dataarray(), b.to_dataarray()
    np.testing.assert_array_equal(a.values, b.values)


# ----------------------------------------------------------------------------- units
# the GPU runs the same cases (its kernels receive the scaled series and thresholds)
BACKENDS = pytest.mark.parametrize("backend", [
    "cpu",
    pytest.param("gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(
        not gpu_available(), reason="needs CuPy and an NVIDIA GPU")]),
])


@BACKENDS
def test_rqa_is_unit_free_against_dense_reference(backend):
    """Issue 21 item 8: RQA on the data times s equals RQA on the data (eps times s), from
    1e-300 to 1e+300: distances are computed on series scaled by a power of 2 (exact).
    Before, 1e-300 gave RR near 1 (squared distances underflowed) and 1e+300 inf distances."""
    x = logistic(160)
    n = x.size - 1  # E = 2
    R = nr.naive_recurrence_matrix(x, E=2, eps=0.1)
    ref = nr.naive_measures(R)
    base_rate = xedm.rqa(x, E=2, recurrence_rate=0.05, backend=backend)
    base = xedm.rqa(x, E=2, eps=0.1, backend=backend)
    for m in MEASURES:
        np.testing.assert_allclose(base[m].values, ref[m], rtol=1e-12, err_msg=m)
    for s in (2.0**-1000, 2.0**-600, 2.0**600, 2.0**1000):  # exact: identical to the bit
        out = xedm.rqa(x * s, E=2, eps=0.1 * s, backend=backend)
        xr.testing.assert_identical(out.drop_attrs(), base.drop_attrs())
        rate = xedm.rqa(x * s, E=2, recurrence_rate=0.05, backend=backend)
        xr.testing.assert_identical(rate.drop_vars("eps").drop_attrs(),
                                    base_rate.drop_vars("eps").drop_attrs())
        assert float(rate.eps) == float(base_rate.eps) * s
    for s in (1e-300, 1e-200, 1e200, 1e300):  # rounded by the product: ties may move
        out = xedm.rqa(x * s, E=2, eps=0.1 * s, backend=backend)
        assert abs(float(out.RR) - ref["RR"]) <= 4 / n**2, s
        for m in ("DET", "LAM", "L", "TT"):
            np.testing.assert_allclose(float(out[m]), ref[m], rtol=1e-2, err_msg=f"{m} {s}")
        rate = xedm.rqa(x * s, E=2, recurrence_rate=0.05, backend=backend)
        assert abs(float(rate.RR) - float(base_rate.RR)) <= 4 / n**2, s
        np.testing.assert_allclose(float(rate.eps), float(base_rate.eps) * s, rtol=1e-12)
        assert np.all(np.isfinite(rate.eps))


@BACKENDS
def test_joint_and_cross_rqa_scale_each_channel(backend):
    x, y = logistic(120), logistic(120, r=3.7)
    base = xedm.rqa(x, joint=y, E=2, eps=0.1, joint_eps=0.2, backend=backend)
    s, t = 2.0**-900, 2.0**900  # a channel each, far apart: each gets its own power of 2
    out = xedm.rqa(x * s, joint=y * t, E=2, eps=0.1 * s, joint_eps=0.2 * t, backend=backend)
    for m in MEASURES:
        np.testing.assert_array_equal(out[m].values, base[m].values, err_msg=m)
    cross = xedm.rqa(x, other=y, E=2, recurrence_rate=0.1, backend=backend)
    out = xedm.rqa(x * s, other=y * s, E=2, recurrence_rate=0.1, backend=backend)
    xr.testing.assert_identical(out.drop_vars("eps").drop_attrs(),
                                cross.drop_vars("eps").drop_attrs())
    R = xedm.recurrence_plot(x * 1e-300, E=2, eps=0.1 * 1e-300)
    np.testing.assert_array_equal(R.values, nr.naive_recurrence_matrix(x, E=2, eps=0.1))
    assert R.attrs["eps"] == 0.1 * 1e-300


@pytest.mark.parametrize("norm", [0, 1, 2])
def test_float32_guard_band_bounds_the_float32_distance(norm):
    # the GPU's float32 filter (xedm.kernels.rqa.gpu_f32) is exact only if every float32
    # distance lies within the guard band's bound of the float64 one; checked here in NumPy
    # (float32 arithmetic, data far from 0, several scales) against the band's bound / 8
    from xedm.kernels.rqa.gpu_f32 import guard_bands

    rng = np.random.default_rng(norm)
    for scale, offset in ((1.0, 0.0), (1e-3, 5.0), (50.0, -3e3)):
        x = offset + scale * np.cumsum(rng.normal(size=3000))
        E, tau = 6, 2
        idx = np.arange(0, (E - 1) * tau + 1, tau)
        emb = np.stack([x[i + idx] for i in range(len(x) - (E - 1) * tau)])
        c = 0.5 * (x.min() + x.max())
        e32 = (emb - c).astype(np.float32)
        M = float(np.abs(e32).max())
        i, j = rng.integers(0, len(emb), (2, 20000))
        diff64, diff32 = emb[i] - emb[j], e32[i] - e32[j]
        if norm == 0:
            d64, d32 = (diff64 ** 2).sum(1), (diff32 * diff32).sum(1, dtype=np.float32)
        elif norm == 1:
            d64, d32 = np.abs(diff64).max(1), np.abs(diff32).max(1)
        else:
            d64, d32 = np.abs(diff64).sum(1), np.abs(diff32).sum(1, dtype=np.float32)
        thr = np.array([[np.median(d64)]])
        lo, hi = guard_bands(thr, M, E, norm)[0, 0]
        bound = (float(hi) - float(thr[0, 0])) / 8
        assert np.abs(d32.astype(np.float64) - d64).max() <= bound
        assert lo < thr[0, 0] < hi
