"""Simplex's prediction variance, generative (closed-loop) forecasts and S-map with a
scikit-learn-style solver: against tests/naive.py, each other, and their error messages.
Parity with pyEDM is in tests/test_parity_extras.py."""

from __future__ import annotations

import naive
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xedm
from conftest import logistic


def _series(T=80):
    t = np.arange(T)
    return xr.DataArray(np.sin(0.37 * t) + 0.3 * np.cos(1.3 * t) + 0.05 * logistic(T), dims="time",
                        coords={"time": t}, name="x")


# ----------------------------------------------------------------------------- pred_variance
def test_pred_variance_matches_naive():
    x = _series()
    out = xedm.simplex(x, 3, knn=5, exclusion_radius=2, lib=slice(0, 50), pred=slice(40, 79))
    pred = np.zeros(80, bool)
    pred[40:] = True
    p, var = naive.simplex_variance(x.values[None], x.values, 3, knn=5, excl=2, lib=[(0, 50)],
                                    pred=pred)
    np.testing.assert_allclose(out.prediction.values, p, atol=1e-12)
    np.testing.assert_allclose(out.pred_variance.values, var, atol=1e-12)
    assert (var[np.isfinite(var)] > 0).all()


# ----------------------------------------------------------------------------- generate
@pytest.mark.parametrize(("E", "tau", "knn", "excl"), [(3, 1, None, 0), (2, 3, 6, 4)])
def test_generate_simplex_matches_naive(E, tau, knn, excl):
    x = _series()
    out = xedm.simplex(x, E, tau=tau, knn=knn, exclusion_radius=excl, generate_steps=12)
    ref = naive.generate(x.values, 12, E=E, tau=tau, knn=knn, excl=excl)
    np.testing.assert_allclose(out.prediction.values, ref, atol=1e-12)
    np.testing.assert_array_equal(out.time.values, np.arange(80, 92))
    assert np.isnan(out.observed.values).all()
    assert out.attrs["generate_steps"] == 12


def test_generate_smap_matches_naive_and_lib():
    x = _series()
    out = xedm.smap(x, 2, theta=3.0, lib=[slice(0, 30), slice(40, 79)], generate_steps=8)
    ref = naive.generate(x.values, 8, kind="smap", E=2, theta=3.0, lib=[(0, 30), (40, 79)])
    np.testing.assert_allclose(out.prediction.values, ref, atol=1e-10)
    assert out.coefficients.shape == (8, 3)


def test_generate_broadcasts_and_datetime_step():
    t = pd.date_range("2020-01-01", periods=80, freq="D")
    base = _series().values
    da = xr.DataArray(np.stack([base, base[::-1]]), dims=("site", "time"),
                      coords={"time": t, "site": ["a", "b"]})
    out = da.edm.simplex(E=2, generate_steps=5)
    assert out.prediction.dims == ("site", "time")
    assert out.time.values[0] == np.datetime64("2020-03-21")
    one = xedm.simplex(da.sel(site="b"), 2, generate_steps=5)
    np.testing.assert_array_equal(out.prediction.sel(site="b").values, one.prediction.values)


@pytest.mark.parametrize(("kw", "match"), [
    ({"Tp": 2}, "Tp=2"),
    ({"pred": slice(0, 40)}, "pred is given"),
    ({"generate_steps": -1}, "generate_steps"),
])
def test_generate_errors(kw, match):
    x = _series()
    with pytest.raises(ValueError, match=match):
        xedm.simplex(x, 2, **{"generate_steps": 3, **kw})


def test_generate_needs_one_column_as_target():
    ds = xr.Dataset({"a": _series(), "b": _series() * 2})
    with pytest.raises(ValueError, match="columns="):
        xedm.smap(ds, 2, columns="a", target="b", generate_steps=3)
    with pytest.raises(ValueError, match="embedded=True"):
        xedm.simplex(ds, columns=["a", "b"], target="a", embedded=True, generate_steps=3)


# ----------------------------------------------------------------------------- solver
def test_solver_regressors_match_builtin_and_naive():
    lm = pytest.importorskip("sklearn.linear_model")
    x = _series(70)
    kw = {"theta": 2.0, "lib": slice(0, 45), "pred": slice(46, 69)}
    ridge = xedm.smap(x, 3, solver="ridge", alpha=0.3, **kw)
    est = lm.Ridge(alpha=0.3)
    sk = xedm.smap(x, 3, solver=est, **kw)  # the same objective: Ridge with w**2 weights
    np.testing.assert_allclose(sk.prediction, ridge.prediction, atol=1e-10)
    np.testing.assert_allclose(sk.coefficients, ridge.coefficients, atol=1e-9)
    assert not hasattr(est, "coef_")  # the user's estimator is not fitted: a clone is
    lin = xedm.smap(x, 3, solver=lm.LinearRegression(), **kw)
    np.testing.assert_allclose(lin.prediction, xedm.smap(x, 3, **kw).prediction, atol=1e-10)
    lasso = xedm.smap(x, 3, solver=lm.Lasso(alpha=0.01), knn=20, **kw)
    pred = np.zeros(70, bool)
    pred[46:] = True
    ref = naive.smap_estimator(x.values[None], x.values, 3, lm.Lasso(alpha=0.01), theta=2.0,
                               knn=20, lib=[(0, 45)], pred=pred)
    np.testing.assert_allclose(lasso.prediction.values, ref, atol=1e-10)
    assert lasso.attrs["solver"] == "Lasso(alpha=0.01)"


def test_generate_with_a_regressor():
    lm = pytest.importorskip("sklearn.linear_model")
    x = _series(60)
    lin = xedm.smap(x, 2, theta=1.5, solver=lm.LinearRegression(), generate_steps=5)
    ref = xedm.smap(x, 2, theta=1.5, generate_steps=5)
    np.testing.assert_allclose(lin.prediction, ref.prediction, atol=1e-9)
    np.testing.assert_allclose(lin.coefficients, ref.coefficients, atol=1e-8)


def test_solver_errors():
    lm = pytest.importorskip("sklearn.linear_model")
    x = _series(40)
    with pytest.raises(TypeError, match="scikit-learn-style regressor"):
        xedm.smap(x, 2, solver=object())
    with pytest.raises(ValueError, match="alpha=0.5 is for solver='ridge'"):
        xedm.smap(x, 2, solver=lm.Ridge(), alpha=0.5)
    with pytest.raises(ValueError, match="singular_values=True"):
        xedm.smap(x, 2, solver=lm.Ridge(), singular_values=True)
    with pytest.raises(TypeError, match="no sample_weight"):
        xedm.smap(x, 2, solver=lm.Lars())
