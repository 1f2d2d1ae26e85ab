"""xedm.datasets.sparse_network: the equation against naive.sparse_network, the graph's rules
(in-degrees, no self-loops or repeats, uniform choice), delays, seeds and parameter checks."""

import itertools
from collections import Counter

import naive
import numpy as np
import pytest
import xarray as xr

from xedm import datasets
from xedm.datasets import sparse


def _reference(ds, n):
    h = ds.attrs["lags"][1]
    return naive.sparse_network(ds.x.values[:, :h], ds.r.values, ds.driver.values,
                                ds.driven.values, ds.weight.values, ds.lag.values, n)


@pytest.mark.quick
@pytest.mark.parametrize("kwargs", [
    {"drivers": (0, 3), "lags": (1, 4), "coupling": 0.5, "seed": 3},
    {"drivers": 4, "lags": 1, "coupling": 1.0, "seed": 1, "r": 3.9},  # every other series
    {"drivers": (1, 2), "lags": 3, "coupling": 0.3, "seed": 8},
], ids=["ranges", "complete", "one-lag"])
def test_matches_naive(kwargs):
    # chaotic orbits amplify rounding, but the kernel adds in the reference's order, so they
    # agree to the last bit; 70 steps cross two of the kernel's staging blocks (32 steps)
    n_series = 5 if kwargs["drivers"] == 4 else 9
    ds = datasets.sparse_network(n_series, 70, transient=0, **kwargs)
    key = ds.driven.values * n_series + ds.driver.values
    assert len(key) > 0 and (np.diff(key) > 0).all() and (ds.driver != ds.driven).all()
    np.testing.assert_allclose(ds.x.values, _reference(ds, 70), rtol=1e-9, atol=1e-12)


def test_transient_and_length_change_only_the_span():
    long = datasets.sparse_network(12, 40, lags=(1, 3), transient=0, seed=4)
    short = datasets.sparse_network(12, 25, lags=(1, 3), transient=15, seed=4)
    np.testing.assert_array_equal(short.x.values, long.x.values[:, 15:])
    for name in ("driver", "driven", "weight", "lag", "r"):
        np.testing.assert_array_equal(short[name].values, long[name].values)


def test_seed_determinism_and_independent_streams():
    a = datasets.sparse_network(50, 60, lags=(1, 3), seed=5)
    xr.testing.assert_identical(a, datasets.sparse_network(50, 60, lags=(1, 3), seed=5))
    b = datasets.sparse_network(50, 60, lags=(1, 3), seed=6)
    assert not np.array_equal(a.driver.values, b.driver.values)
    assert not np.allclose(a.x.values, b.x.values)
    # the graph depends on seed, n_series and drivers only
    c = datasets.sparse_network(50, 20, lags=(2, 6), coupling=0.7, r=3.6, seed=5)
    np.testing.assert_array_equal(a.driver.values, c.driver.values)
    np.testing.assert_array_equal(a.driven.values, c.driven.values)
    # one number is the range (v, v)
    xr.testing.assert_identical(datasets.sparse_network(10, 20, drivers=2, lags=3, r=3.8),
                                datasets.sparse_network(10, 20, drivers=(2, 2), lags=(3, 3),
                                                        r=(3.8, 3.8)))


def test_graph_rules():
    n_series = 3000
    ds = datasets.sparse_network(n_series, 5, drivers=(1, 4), coupling=0.3, lags=(2, 5), seed=2)
    drv, dvn, w, lag = (ds[k].values for k in ("driver", "driven", "weight", "lag"))
    assert ds.attrs["n_edges"] == ds.sizes["edge"] == len(drv)
    assert drv.dtype == dvn.dtype == lag.dtype == np.int64 and w.dtype == np.float64
    assert ((drv >= 0) & (drv < n_series)).all() and not (drv == dvn).any()
    key = dvn * n_series + drv
    assert (np.diff(key) > 0).all()  # sorted by driven, then driver: no repeated link
    degree = np.bincount(dvn, minlength=n_series)
    assert degree.min() >= 1 and degree.max() <= 4
    counts = np.bincount(degree)[1:]  # in-degrees 1..4 equally often (sd about 24)
    assert len(counts) == 4 and abs(counts - n_series / 4).max() < 120, counts
    np.testing.assert_allclose(w, 0.3 / degree[dvn])
    np.testing.assert_allclose(np.bincount(dvn, weights=w), 0.3)
    assert sorted(set(lag.tolist())) == [2, 3, 4, 5]
    # drivers uniform over the others: no lean towards low labels or towards i's neighbours
    offset = (drv - dvn) % n_series
    hist = np.histogram(offset, bins=10, range=(1, n_series))[0]
    assert abs(hist - len(drv) / 10).max() < 5 * np.sqrt(len(drv) / 10)
    assert 0 <= float(ds.x.min()) and float(ds.x.max()) <= 1
    assert ds.x.dims == ("series", "time") and ds.driver.dims == ("edge",)


def test_driver_sets_are_uniform():
    # 6 series, 3 drivers each: every one of the C(5, 3) = 10 sets of others equally often
    seen = Counter()
    for seed in range(150):
        ds = datasets.sparse_network(6, 1, drivers=3, transient=0, seed=seed)
        for i in range(6):
            seen[tuple(sorted((ds.driver.values[ds.driven.values == i] - i) % 6))] += 1
    assert set(seen) == set(itertools.combinations(range(1, 6), 3))
    expected = 900 / 10
    assert all(abs(c - expected) < 5 * np.sqrt(expected) for c in seen.values()), seen


def test_no_drivers_means_independent_maps():
    ds = datasets.sparse_network(4, 30, drivers=0, transient=0, seed=1)
    assert ds.sizes["edge"] == 0 and ds.attrs["n_edges"] == 0
    for i in range(4):
        x, r = ds.x.values[i], float(ds.r[i])
        np.testing.assert_allclose(x[1:], r * x[:-1] * (1 - x[:-1]), rtol=1e-12)


def _first_change(series, perturbed):
    moved = np.nonzero(series != perturbed)[0]
    return int(moved[0]) if len(moved) else None


def test_a_change_reaches_each_series_after_its_delays():
    # perturb series j at the last of the h first states (time h - 1): series i first moves
    # at h - 1 + the shortest sum of delays along a path j -> ... -> i
    n_series = 10
    ds = datasets.sparse_network(n_series, 25, drivers=(1, 2), lags=(1, 3), coupling=0.5,
                                 transient=0, seed=6)
    h = ds.attrs["lags"][1]
    drv, dvn, w, lag = (ds[k].values for k in ("driver", "driven", "weight", "lag"))

    def run(init):  # the generator's kernel from the given first states
        return sparse._sparse_kernel(25, ds.r.values, init, dvn, drv, w, lag, 0)

    init = np.ascontiguousarray(ds.x.values[:, :h].T)
    np.testing.assert_array_equal(run(init), ds.x.values)
    checked = set()
    for j in range(n_series):
        dist = {j: 0}
        for _ in range(n_series):  # Bellman-Ford over the delays
            for a, b, lg in zip(drv, dvn, lag, strict=True):
                if a in dist and dist[a] + lg < dist.get(b, 10**9):
                    dist[b] = dist[a] + lg
        bumped = init.copy()
        bumped[h - 1, j] += 1e-6
        moved = run(bumped)
        for i in range(n_series):
            expect = h - 1 + dist[i] if i in dist and h - 1 + dist[i] < 25 else None
            assert _first_change(ds.x.values[i], moved[i]) == expect, (j, i)
            if i != j and expect is not None:
                checked.add(dist[i])
    assert {1, 2, 3} <= checked  # paths of every delay were exercised


def test_attrs_and_custom_dim():
    ds = datasets.sparse_network(6, 20, drivers=(0, 2), lags=(1, 2), seed=3,
                                 series_dim="neuron")
    assert ds.x.dims == ("neuron", "time") and ds.r.dims == ("neuron",)
    assert (ds.neuron.values == np.arange(6)).all() and (ds.time.values == np.arange(20)).all()
    a = ds.attrs
    assert a["drivers"] == [0, 2] and a["lags"] == [1, 2] and a["coupling"] == 0.2
    assert a["r_range"] == [3.7, 3.9] and a["seed"] == 3 and a["transient"] == 100
    assert "lag_ji" in a["equations"] and a["system"]
    for value in a.values():
        assert isinstance(value, (str, int, float, list)) and not isinstance(value, bool)
    assert datasets.sparse_network(4, 5, seed=None).attrs["seed"] == -1


def _raises_naming(exc, param, call):
    with pytest.raises(exc, match=rf"(?<![A-Za-z0-9_]){param}(?![A-Za-z0-9_])") as info:
        call()
    return info.value


@pytest.mark.parametrize("kwargs,exc,param", [
    ({"n_series": 0}, ValueError, "n_series"),
    ({"n_series": 2.0}, TypeError, "n_series"),
    ({"n": 0}, ValueError, "n"),
    ({"drivers": -1}, ValueError, "drivers"),
    ({"drivers": (3, 1)}, ValueError, "drivers"),
    ({"drivers": (1, 2, 3)}, ValueError, "drivers"),
    ({"drivers": 10}, ValueError, "drivers"),  # at most n_series - 1 = 9
    ({"drivers": 2.5}, TypeError, "drivers"),
    ({"drivers": "2"}, TypeError, "drivers"),
    ({"drivers": (1, None)}, TypeError, "drivers"),
    ({"drivers": True}, TypeError, "drivers"),
    ({"coupling": 1.5}, ValueError, "coupling"),
    ({"coupling": "a"}, TypeError, "coupling"),
    ({"r": (3.0, 4.5)}, ValueError, "r"),
    ({"lags": 0}, ValueError, "lags"),
    ({"lags": (0, 2)}, ValueError, "lags"),
    ({"lags": (3, 2)}, ValueError, "lags"),
    ({"lags": 1.5}, TypeError, "lags"),
    ({"lags": None}, TypeError, "lags"),
    ({"seed": -1}, ValueError, "seed"),
    ({"transient": -1}, ValueError, "transient"),
    ({"series_dim": "edge"}, ValueError, "series_dim"),
    ({"series_dim": "driver"}, ValueError, "series_dim"),
    ({"series_dim": 3}, TypeError, "series_dim"),
])
def test_bad_input_names_the_parameter(kwargs, exc, param):
    call = {"n_series": 10, "n": 20, **kwargs}
    _raises_naming(exc, param, lambda: datasets.sparse_network(**call))


def test_size_limit_before_allocating():
    err = _raises_naming(ValueError, "n_series",
                         lambda: datasets.sparse_network(10**6, 10**4))
    assert "2**31" in str(err)
    err = _raises_naming(ValueError, "n", lambda: datasets.sparse_network(10, 2**31))
    assert "2**31" in str(err)
