"""Recurrence networks: every measure against the dense reference (naive_rqa) and against
pyunicorn's RecurrenceNetwork on three cases (logistic map, Lorenz x, noise)."""

from __future__ import annotations

import importlib.util

import naive_rqa as nr
import numpy as np
import pytest
import xarray as xr

import xedm
from conftest import logistic  # noqa: E402

SCALARS = ("global_clustering", "transitivity", "average_path_length", "assortativity",
           "link_density")


def _lorenz_x(n, dt=0.02, transient=1000):
    """x of Lorenz-63 (sigma 10, rho 28, beta 8/3), fourth-order Runge-Kutta in numpy."""
    def f(s):
        return np.array([10 * (s[1] - s[0]), s[0] * (28 - s[2]) - s[1],
                         s[0] * s[1] - 8 / 3 * s[2]])
    s, out = np.ones(3), np.empty(n)
    for t in range(transient + n):
        k1 = f(s)
        k2 = f(s + dt / 2 * k1)
        k3 = f(s + dt / 2 * k2)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + f(s + dt * k3))
        if t >= transient:
            out[t - transient] = s[0]
    return out


def _cases(n=220):
    """(name, float32-exact series, E, tau): pyunicorn stores series as float32."""
    lor = _lorenz_x(n)
    noise = np.random.default_rng(7).normal(size=n)
    out = [("logistic", logistic(n), 3, 1), ("lorenz_x", lor / 10, 3, 4),
           ("noise", noise, 2, 1)]
    return [(a, b.astype(np.float32).astype(np.float64), E, tau) for a, b, E, tau in out]


def _assert_equal_measures(ours, ref):
    np.testing.assert_array_equal(ours["degree"].values, ref["degree"])
    np.testing.assert_allclose(ours["local_clustering"].values, ref["local_clustering"],
                               rtol=1e-12, atol=0)
    for name in SCALARS:
        np.testing.assert_allclose(float(ours[name]), ref[name], rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("case, norm", [pytest.param(0, "euclidean", marks=pytest.mark.quick),
                                        (1, "maximum"), (2, "manhattan")])
def test_network_matches_dense_reference(case, norm):
    name, x, E, tau = _cases(150)[case]
    eps = nr.gap_eps(x, 0.08, E, tau, norm)
    ours = xr.DataArray(x, dims="time").edm.recurrence_network(E=E, tau=tau, eps=eps,
                                                               norm=norm)
    R = nr.naive_recurrence_matrix(x, E=E, tau=tau, eps=eps, norm=norm)
    _assert_equal_measures(ours, nr.naive_recurrence_network(R))
    assert ours.degree.dims == ("time",)
    assert ours.time.values[0] == (E - 1) * tau


def test_disconnected_and_empty_networks():
    # two far-apart clusters: paths only inside each; a tiny eps: no link at all
    x = np.r_[np.linspace(0, 1, 40), np.linspace(100, 101, 40)]
    ours = xedm.recurrence_network(xr.DataArray(x, dims="time"), eps=0.06)
    ref = nr.naive_recurrence_network(nr.naive_recurrence_matrix(x, eps=0.06))
    _assert_equal_measures(ours, ref)
    empty = xedm.recurrence_network(xr.DataArray(x, dims="time"), eps=1e-6)
    assert int(empty.degree.sum()) == 0
    assert np.isnan(float(empty.average_path_length)) and np.isnan(float(empty.transitivity))
    assert np.isnan(float(empty.assortativity)) and float(empty.global_clustering) == 0.0


@pytest.mark.quick
def test_broadcast_rate_and_measure_subset():
    xs = np.stack([logistic(120), logistic(120, x0=0.2)])
    da = xr.DataArray(xs, dims=("series", "time"), coords={"series": ["a", "b"]})
    net = da.edm.recurrence_network(E=2, recurrence_rate=0.05)
    assert net.degree.dims == ("series", "time") and net.eps.dims == ("series",)
    for s in range(2):
        eps = nr.naive_eps_for_recurrence_rate(xs[s], 0.05, E=2)
        assert float(net.eps[s]) == eps
        ref = nr.naive_recurrence_network(nr.naive_recurrence_matrix(xs[s], E=2, eps=eps))
        _assert_equal_measures(net.isel(series=s), ref)
    sub = da.edm.recurrence_network(E=2, eps=0.1, measures=["degree", "assortativity"])
    assert set(sub.data_vars) == {"degree", "assortativity"}
    full = da.edm.recurrence_network(E=2, eps=0.1)
    xr.testing.assert_equal(sub.assortativity, full.assortativity)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"eps": [0.1, 0.2]}, ValueError, "must be one number"),
    ({"eps": 0.1, "measures": ["degree", "betweenness"]}, ValueError, "measures="),
    ({"eps": 0.1, "norm": "supremum"}, ValueError, "norm="),
    ({}, ValueError, "exactly one of eps= and recurrence_rate="),
    ({"eps": 0.1, "E": 0}, ValueError, "E"),
])
def test_bad_inputs(kwargs, error, match):
    x = xr.DataArray(logistic(50), dims="time")
    with pytest.raises(error, match=match):
        x.edm.recurrence_network(**kwargs)


def test_nan_is_refused_and_input_untouched():
    x = logistic(60)
    x[10] = np.nan
    da = xr.DataArray(x, dims="time")
    before = da.copy(deep=True)
    with pytest.raises(ValueError, match="NaN"):
        da.edm.recurrence_network(eps=0.1)
    xr.testing.assert_identical(da, before)


@pytest.mark.skipif(importlib.util.find_spec("pyunicorn") is None,
                    reason="pyunicorn not installed")
@pytest.mark.parametrize("case", [0, 1, 2], ids=["logistic", "lorenz_x", "noise"])
def test_pyunicorn_parity(case):
    from pyunicorn.timeseries import RecurrenceNetwork

    name, x, E, tau = _cases()[case]
    norm, metric = [("euclidean", "euclidean"), ("maximum", "supremum"),
                    ("euclidean", "euclidean")][case]
    eps = nr.gap_eps(x, 0.05, E, tau, norm)
    rn = RecurrenceNetwork(x, dim=E, tau=tau, metric=metric, threshold=eps, silence_level=3)
    ours = xr.DataArray(x, dims="time").edm.recurrence_network(E=E, tau=tau, eps=eps,
                                                               norm=norm)
    np.testing.assert_array_equal(ours.degree.values, rn.degree())
    np.testing.assert_allclose(ours.local_clustering.values, rn.local_clustering(),
                               rtol=1e-12)
    for mine, theirs in (("global_clustering", rn.global_clustering()),
                         ("transitivity", rn.transitivity()),
                         ("average_path_length", rn.average_path_length()),
                         ("assortativity", rn.assortativity()),
                         ("link_density", rn.link_density)):
        assert float(ours[mine]) == pytest.approx(theirs, rel=1e-12), mine


def test_network_view_draws_the_result():
    import matplotlib

    matplotlib.use("Agg")
    net = xr.DataArray(logistic(150), dims="time").edm.recurrence_network(E=2, eps=0.1)
    fig = net.edm.plot()  # dispatch on attrs["xedm_function"]
    deg, clu, scatter = fig.axes
    np.testing.assert_array_equal(deg.lines[0].get_ydata(), net.degree.values)
    np.testing.assert_array_equal(clu.lines[0].get_xdata(), net.time.values)
    np.testing.assert_array_equal(scatter.collections[0].get_offsets()[:, 0], net.degree)
    assert f"{float(net.transitivity):.3g}" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="lacks"):
        xedm.plot.recurrence_network(net[["transitivity"]])
