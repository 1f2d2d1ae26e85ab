"""test_nonlinearity (rEDM) against tests/naive.py; linear series are not significant,
nonlinear maps are."""

import naive
import numpy as np
import pytest
import xarray as xr

import xedm


def _ar1(n, phi=0.7, seed=1):
    rng = np.random.default_rng(seed)
    a = np.zeros(n)
    for t in range(1, n):
        a[t] = phi * a[t - 1] + rng.standard_normal()
    return a


def _tent(n, x0=0.3):
    out = np.empty(n)
    x = x0
    for t in range(n):
        out[t] = x
        x = 1.99 * min(x, 1 - x)
    return out


@pytest.mark.quick
def test_matches_naive():
    x = xedm.datasets.logistic_map(50).values
    thetas = [0.0, 3.0]
    res = xedm.test_nonlinearity(xr.DataArray(x, dims="time"), E=2, theta=thetas,
                                 surrogates=3, seed=3)
    S = xedm.surrogates(xr.DataArray(x, dims="time"), "ebisuzaki", 3, seed=3).values
    d_rho, d_mae = naive.nonlinearity_gain(x, 2, thetas)
    null = [naive.nonlinearity_gain(s, 2, thetas) for s in S]
    np.testing.assert_allclose(float(res.delta_rho), d_rho, rtol=1e-8)
    np.testing.assert_allclose(float(res.delta_mae), d_mae, rtol=1e-8)
    np.testing.assert_allclose(res.delta_rho_null.values, [n[0] for n in null], rtol=1e-7,
                               atol=1e-12)
    assert float(res.p_value) == naive.p_value(d_rho, [n[0] for n in null])
    assert float(res.p_value_mae) == naive.p_value(d_mae, [n[1] for n in null])


@pytest.mark.parametrize(("name", "series", "significant"), [
    ("ar1", _ar1(200), False),
    ("logistic", xedm.datasets.logistic_map(200).values, True),
    ("tent", _tent(200), True),
])
def test_decision(name, series, significant):
    res = xedm.test_nonlinearity(xr.DataArray(series, dims="time"), E=2,
                                 theta=[0.0, 0.5, 2.0, 6.0], surrogates=19, seed=0)
    p = float(res.p_value)
    assert (p <= 0.05) == significant, f"{name}: p = {p}"


def test_broadcast_iaaft_and_errors():
    X = np.stack([_ar1(120, seed=s) for s in (2, 3)])
    da = xr.DataArray(X, dims=("site", "t"))
    res = xedm.test_nonlinearity(da, E=2, theta=[0.0, 2.0], surrogates=5, seed=1,
                                 time_dim="t", method="iaaft",
                                 surrogate_options={"max_iter": 50})
    assert res.p_value.dims == ("site",)
    assert res.delta_rho_null.dims == ("surrogate", "site")
    assert res.attrs["surrogate_method"] == "iaaft"
    with pytest.raises(ValueError, match="include 0"):
        xedm.test_nonlinearity(da, E=2, theta=[1.0, 2.0], time_dim="t")
    with pytest.raises(TypeError, match="target="):
        xedm.test_nonlinearity(xr.Dataset({"a": ("time", X[0])}), E=2)
