"""smap and predict_nonlinear against tests/naive.py."""

import naive
import numpy as np
import pytest
import xarray as xr

import xedm
from conftest import logistic, make_dataset


def check(out, ref, rtol=1e-7, atol=1e-9):
    np.testing.assert_array_equal(out.time.values, ref["out_t"])
    np.testing.assert_allclose(out.prediction.values, ref["prediction"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(float(out.rho), ref["rho"], rtol=rtol)
    assert int(out.n) == ref["n"]
    for i, c in enumerate(ref["coefficients"]):
        if c is None:
            assert np.all(np.isnan(out.coefficients.values[i]))
        else:
            np.testing.assert_allclose(out.coefficients.values[i], c, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("theta", [0.0, 0.5, 3.0])
@pytest.mark.parametrize("knn", [None, 6])
@pytest.mark.parametrize("Tp", [1, -1])
def test_smap_matches_naive(rng, theta, knn, Tp):
    x = logistic(80) + 0.01 * rng.standard_normal(80)
    x[33] = np.nan
    da = xr.DataArray(x, dims="time")
    out = da.edm.smap(E=2, theta=theta, knn=knn, Tp=Tp, exclusion_radius=1)
    ref = naive.smap(x[None], x, 2, theta=theta, knn=knn, Tp=Tp, excl=1)
    check(out, ref)


@pytest.mark.quick
def test_smap_multivariate_embedded_ridge_segments(rng):
    X = rng.standard_normal((2, 70))
    y = X[0] * X[1]
    ds = make_dataset(X, y, ["a", "b"])
    out = ds.edm.smap(E=2, theta=2.0, columns=["a", "b"], target="target", embedded=True)
    check(out, naive.smap(X, y, 2, theta=2.0, embedded=True))
    assert list(out.coef.values) == ["intercept", "a(t-0)", "b(t-0)"]
    out = ds.edm.smap(E=2, theta=1.0, columns=["a", "b"], target="target", tau=2,
                      lib=[slice(0, 30), slice(40, 69)], solver="ridge", alpha=0.5)
    check(out, naive.smap(X, y, 2, theta=1.0, tau=2, lib=[(0, 30), (40, 69)], alpha=0.5))


def test_smap_theta0_is_global_linear_fit(rng):
    # theta = 0 with every library point: one ordinary least-squares AR fit (up to leave-one-out)
    x = rng.standard_normal(200).cumsum()
    out = xr.DataArray(x, dims="time").edm.smap(E=1, theta=0.0, singular_values=True)
    lib = np.delete(np.arange(199), 50)  # library points for prediction point t = 50
    c = np.linalg.lstsq(np.c_[np.ones(198), x[lib]], x[lib + 1], rcond=None)[0]
    np.testing.assert_allclose(out.coefficients.values[50], c, rtol=1e-9)
    assert out.singular_values.shape == (200, 2)  # E=1: every t predicts


@pytest.mark.quick
def test_predict_nonlinear_matches_naive(rng):
    x = logistic(70)
    thetas = [0, 0.5, 2, 6]
    out = xr.DataArray(x, dims="time").edm.predict_nonlinear(E=2, theta=thetas)
    ref = naive.predict_nonlinear(x[None], x, 2, thetas)
    np.testing.assert_allclose(out.rho.values, ref, rtol=1e-8)
    assert out.attrs["best_theta"] == thetas[int(np.argmax(ref))]
    one = xedm.smap(xr.DataArray(x, dims="time"), 2, theta=2.0)
    np.testing.assert_allclose(float(one.rho), out.rho.sel(theta=2.0), rtol=1e-12)


def test_smap_broadcast(rng):
    X = np.stack([logistic(60, x0=x0) for x0 in (0.2, 0.3, 0.7)])
    out = xr.DataArray(X, dims=("site", "time")).edm.smap(E=2, theta=1.0)
    assert out.coefficients.dims == ("site", "time", "coef")
    for i in range(3):
        ref = naive.smap(X[i][None], X[i], 2, theta=1.0)
        np.testing.assert_allclose(float(out.rho[i]), ref["rho"], rtol=1e-8)
