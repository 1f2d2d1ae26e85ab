"""pool_replicates (multispatial EDM): the pooled series against tests/naive.py with one lib
segment per replicate, and ccm's pooled library against simplex's lib segments."""

from __future__ import annotations

import naive
import numpy as np
import pytest
import xarray as xr

import xedm


@pytest.fixture(scope="module")
def reps():
    ds = xedm.datasets.lorenz63(150)
    data = np.stack([ds.x.values[:50], ds.x.values[50:100], ds.x.values[100:]])
    return xr.DataArray(data, dims=("replicate", "time"),
                        coords={"replicate": ["a", "b", "c"], "time": np.arange(10, 60)})


@pytest.mark.quick
def test_pooled_simplex_matches_naive_segments(reps):
    E, Tp = 3, 1
    pooled = xedm.pool_replicates(reps, E=E, Tp=Tp)
    gap = (E - 1) + Tp
    assert pooled.sizes["time"] == 150 + 2 * gap
    assert pooled.replicate.values.tolist()[48:54] == ["a", "a", "", "", "", "b"]
    np.testing.assert_array_equal(pooled.replicate_time.values[:50], np.arange(10, 60))
    out = xedm.simplex(pooled, E, Tp=Tp)
    # naive: the replicates side by side, one lib segment each, predictions whose window and
    # target stay inside their replicate
    x = pooled.values
    starts = [0, 50 + gap, 100 + 2 * gap]
    lib = [(s, s + 49) for s in starts]
    pred = np.zeros(len(x), bool)
    for s in starts:
        pred[s + E - 1: s + 50 - Tp] = True
    ref = naive.simplex(np.nan_to_num(x)[None], np.nan_to_num(x), E, Tp=Tp, lib=lib, pred=pred)
    got = out.prediction.reindex(time=ref["out_t"]).values
    np.testing.assert_allclose(got, ref["prediction"], atol=1e-12)
    assert int(out.n) == len(ref["out_t"])


@pytest.mark.quick
def test_ccm_pools_replicates(reps):
    """At the full library size ccm's rho is simplex's cross map with one lib (and pred)
    segment per replicate."""
    E = 3
    both = xr.Dataset({"x": reps, "y": reps ** 2 + 0.1 * reps.shift(time=1).fillna(0)})
    pooled = xedm.pool_replicates(both, E=E)
    c = xedm.ccm(pooled, ["x", "y"], lib_sizes=[pooled.sizes["time"]], E=E, samples=1, seed=0)
    gap = E - 1
    segs = [slice(s, s + 49) for s in (0, 50 + gap, 100 + 2 * gap)]
    s = xedm.simplex(pooled, E, Tp=0, columns="x", target="y", lib=segs, pred=segs)
    assert float(c.rho.sel(library="x", target="y").squeeze()) == pytest.approx(float(s.rho),
                                                                                abs=1e-12)


def test_errors(reps):
    with pytest.raises(ValueError, match="replicate_dim='site'"):
        xedm.pool_replicates(reps, "site")
    with pytest.raises(ValueError, match="E=0"):
        xedm.pool_replicates(reps, E=0)
