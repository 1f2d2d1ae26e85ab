"""IAAFT surrogates: values exact, amplitude spectrum within IAAFT_SPECTRUM_TOL, converged
surrogates a fixed point of one naive IAAFT round, rounds recorded."""

import naive
import numpy as np
import pytest
import xarray as xr

import xedm
from xedm.stats.surrogates import IAAFT_SPECTRUM_TOL, make_surrogates


def _series():
    rng = np.random.default_rng(0)
    ar = np.zeros(256)
    for t in range(1, 256):
        ar[t] = 0.8 * ar[t - 1] + rng.standard_normal()
    return {"ar1": ar, "logistic": xedm.datasets.logistic_map(255).values,
            "sine": np.sin(np.arange(200) * 0.3) + 0.1 * rng.standard_normal(200)}


@pytest.mark.parametrize("name", ["ar1", "logistic", "sine"])
def test_values_spectrum_fixed_point(name):
    x = _series()[name]
    S, info = make_surrogates(x[None], "iaaft", 6, seed=2)
    its, err = info["iaaft_iterations"][0], info["iaaft_spectrum_error"][0]
    A = np.abs(np.fft.rfft(x))
    for s, k, e in zip(S[0], its, err, strict=True):
        assert np.array_equal(np.sort(s), np.sort(x))  # the values, exactly
        spec = np.linalg.norm(np.abs(np.fft.rfft(s)) - A) / np.linalg.norm(A)
        assert spec == pytest.approx(e, rel=1e-9) and spec < IAAFT_SPECTRUM_TOL
        assert 1 <= k < 1000
        np.testing.assert_array_equal(naive.iaaft_round(s, x), s)  # converged: a fixed point
    assert not np.allclose(S[0, 0], x)


@pytest.mark.quick
def test_labeled_attrs_nan_and_max_iter():
    x = _series()["ar1"].copy()
    x[:3] = np.nan
    da = xr.DataArray(x, dims="time")
    s = xedm.surrogates(da, "iaaft", n=4, seed=1)
    assert np.isnan(s.values[:, :3]).all()
    assert np.array_equal(np.sort(s.values[2, 3:]), np.sort(x[3:]))
    assert 1 <= s.attrs["iaaft_iterations_max"] < 1000
    assert s.attrs["iaaft_spectrum_error_max"] < IAAFT_SPECTRUM_TOL
    one = xedm.surrogates(da, "iaaft", n=4, seed=1, max_iter=1)
    assert one.attrs["iaaft_iterations_max"] == 1 and one.attrs["surrogate_max_iter"] == 1
    np.testing.assert_array_equal(xedm.surrogates(da, "iaaft", n=4, seed=1).values, s.values)
    x[50] = np.nan
    with pytest.raises(ValueError, match="consecutive"):
        xedm.surrogates(xr.DataArray(x, dims="time"), "iaaft", n=2, seed=0)
    with pytest.raises(ValueError, match="max_iter"):
        xedm.surrogates(da, "iaaft", n=2, seed=0, max_iter=0)
    with pytest.raises(ValueError, match="iaaft"):
        xedm.surrogates(da, "shuffle", n=2, seed=0, max_iter=5)


def test_ccm_null():
    ds = xedm.datasets.coupled_logistic(200)
    r = xedm.ccm(ds, columns=["x", "y"], E=2, lib_sizes=[40, 190], samples=3, seed=0,
                 surrogates=9, surrogate_method="iaaft", surrogate_options={"max_iter": 100})
    assert r.attrs["surrogate_method"] == "iaaft"
    assert np.isfinite(r.p_value.values).all()
