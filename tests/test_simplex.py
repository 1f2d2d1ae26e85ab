"""simplex, embed_dimension and predict_interval against tests/naive.py on many inputs."""

import naive
import numpy as np
import pytest
import xarray as xr

import xedm
from conftest import logistic, make_dataset


def compare(out, ref, atol=1e-10):
    """xedm output Dataset vs a naive result dict (predictions on the target times)."""
    t = out.time.values
    np.testing.assert_array_equal(t, ref["out_t"])
    np.testing.assert_allclose(out.prediction.values, ref["prediction"], atol=atol, rtol=1e-9)
    np.testing.assert_allclose(out.observed.values, ref["observed"], atol=0)
    for k in ("rho", "mae", "rmse"):
        np.testing.assert_allclose(float(out[k]), ref[k], atol=atol, rtol=1e-9, err_msg=k)
    assert int(out.n) == ref["n"]


def run_both(X, y, *, lib=None, pred=None, E=3, **kw):
    """xedm.simplex on a Dataset with time = positions, and naive.simplex on the same."""
    names = [f"v{i}" for i in range(X.shape[0])]
    ds = make_dataset(X, y, names)
    lib_sel = None if lib is None else (
        lib if isinstance(lib, np.ndarray) else [slice(a, b) for a, b in lib])
    pred_mask = None
    if pred is not None:
        pred_mask = np.zeros(X.shape[1], bool)
        for a, b in pred:
            pred_mask[a : b + 1] = True
    pred_sel = None if pred is None else [slice(a, b) for a, b in pred]
    out = xedm.simplex(ds, E, columns=names, target="target", lib=lib_sel, pred=pred_sel, **kw)
    kw_ref = {k: kw[k] for k in ("tau", "Tp", "knn", "embedded") if k in kw}
    ref = naive.simplex(X, y, E, excl=kw.get("exclusion_radius", 0), lib=lib, pred=pred_mask,
                        **kw_ref)
    return out, ref


@pytest.mark.parametrize("E", [1, 2, 4])
@pytest.mark.parametrize("tau", [1, 3])
@pytest.mark.parametrize("Tp", [1, 0, -2, 3])
def test_simplex_random(rng, E, tau, Tp):
    x = rng.standard_normal(90)
    out, ref = run_both(x[None], x, E=E, tau=tau, Tp=Tp)
    compare(out, ref)


@pytest.mark.parametrize("knn", [1, 2, 9])
@pytest.mark.parametrize("excl", [0, 1, 5])
def test_simplex_knn_exclusion(rng, knn, excl):
    x = logistic(120)
    out, ref = run_both(x[None], x, E=2, knn=knn, exclusion_radius=excl)
    compare(out, ref)


@pytest.mark.parametrize("seed", range(4))
def test_simplex_exact_ties(seed):
    # small integers: many exactly equal distances, decided by (|dt|, t)
    r = np.random.default_rng(seed)
    x = r.integers(0, 3, 80).astype(float)
    for E, knn in [(1, 4), (2, 5), (3, None)]:
        out, ref = run_both(x[None], x, E=E, knn=knn)
        compare(out, ref)


@pytest.mark.parametrize("where", [[0], [5], [40, 41], [89], [10, 50, 70]])
def test_simplex_nan_positions(rng, where):
    x = rng.standard_normal(90)
    x[where] = np.nan
    x_before = x.copy()
    out, ref = run_both(x[None], x, E=3, tau=2)
    compare(out, ref)
    np.testing.assert_array_equal(x, x_before)  # input untouched


def test_simplex_nan_in_target_only(rng):
    x = rng.standard_normal(70)
    y = np.sin(np.arange(70.0))
    y[[3, 30, 31]] = np.nan
    out, ref = run_both(x[None], y, E=2)
    compare(out, ref)


@pytest.mark.parametrize("Tp", [pytest.param(1, marks=pytest.mark.quick), -1, 4])
def test_simplex_disjoint_lib_segments(rng, Tp):
    x = logistic(140, x0=0.3)
    out, ref = run_both(x[None], x, E=3, Tp=Tp, lib=[(0, 40), (60, 99), (110, 139)],
                        pred=[(30, 80)])
    compare(out, ref)


def test_simplex_lib_mask(rng):
    x = rng.standard_normal(100)
    mask = rng.random(100) < 0.6
    out, ref = run_both(x[None], x, E=2, Tp=2, lib=mask)
    compare(out, ref)


def test_simplex_short_series(rng):
    x = rng.standard_normal(12)
    out, ref = run_both(x[None], x, E=3, tau=2, knn=3)
    compare(out, ref)


@pytest.mark.quick
def test_simplex_multivariate_and_embedded(rng):
    X = rng.standard_normal((3, 80))
    y = X[0] + 0.5 * X[2] ** 2
    out, ref = run_both(X, y, E=2, Tp=1)
    compare(out, ref)
    out, ref = run_both(X, y, E=3, Tp=1, embedded=True)
    compare(out, ref)


def test_forecast_past_end_on_extended_time():
    x = xr.DataArray(logistic(50), dims="time", coords={"time": np.arange(10, 60) * 2})
    out = x.edm.simplex(E=2, Tp=3)
    assert out.time.values[-1] == 59 * 2 + 3 * 2
    assert np.all(np.isnan(out.observed.values[-3:]))
    assert np.all(np.isfinite(out.prediction.values[-3:]))
    day = np.timedelta64(1, "D")
    dates = x.assign_coords(time=np.datetime64("2020-01-01") + np.arange(50) * day)
    out = dates.edm.simplex(E=2, Tp=-2)
    assert out.time.values[0] == np.datetime64("2020-01-01") + np.timedelta64(-1, "D")


@pytest.mark.parametrize("Tp", [pytest.param(1, marks=pytest.mark.quick), 2])
def test_embed_dimension_matches_naive(rng, Tp):
    x = logistic(110) + 0.01 * rng.standard_normal(110)
    x[37] = np.nan
    out = xr.DataArray(x, dims="time").edm.embed_dimension(E_max=6, Tp=Tp, tau=2)
    ref = naive.embed_dimension(x[None], x, 6, Tp=Tp, tau=2)
    np.testing.assert_allclose(out.rho.values, ref, rtol=1e-9)
    assert out.attrs["best_E"] == int(np.argmax(ref)) + 1
    # the sweep equals separate simplex calls
    for E in (1, 4):
        s = xr.DataArray(x, dims="time").edm.simplex(E=E, Tp=Tp, tau=2)
        np.testing.assert_allclose(float(s.rho), out.rho.sel(E=E), rtol=1e-12)


@pytest.mark.quick
def test_predict_interval_matches_naive(rng):
    x = logistic(100)
    x[[20, 60]] = np.nan
    lib = [(0, 45), (50, 99)]
    da = xr.DataArray(x, dims="time", coords={"time": np.arange(100)})
    out = da.edm.predict_interval(E=2, Tp_max=5, lib=[slice(0, 45), slice(50, 99)])
    ref = naive.predict_interval(x[None], x, 2, 5, lib=lib)
    np.testing.assert_allclose(out.rho.values, ref, rtol=1e-9)
    out2 = da.edm.predict_interval(E=2, Tp=[-3, -1, 2], knn=4, exclusion_radius=2)
    ref2 = [naive.simplex(x[None], x, 2, Tp=tp, knn=4, excl=2)["rho"] for tp in (-3, -1, 2)]
    np.testing.assert_allclose(out2.rho.values, ref2, rtol=1e-9)


def test_broadcast_over_extra_dims_and_dask(rng):
    X = rng.standard_normal((4, 120)).cumsum(axis=1)
    X[1, 17] = np.nan
    da = xr.DataArray(X, dims=("neuron", "time"), coords={"neuron": list("abcd")})
    out = da.edm.simplex(E=3, Tp=2)
    assert out.rho.dims == ("neuron",)
    for i in range(4):
        ref = naive.simplex(X[i][None], X[i], 3, Tp=2)
        np.testing.assert_allclose(out.prediction.values[i], ref["prediction"], rtol=1e-9)
        np.testing.assert_allclose(float(out.rho[i]), ref["rho"], rtol=1e-9)
    lazy = da.chunk({"neuron": 2}).edm.simplex(E=3, Tp=2)
    assert lazy.rho.chunks is not None
    xr.testing.assert_allclose(lazy.compute(), out)
    sweep = da.edm.embed_dimension(E_max=4)
    assert sweep.rho.dims == ("neuron", "E") and sweep.best_E.dims == ("neuron",)


@pytest.mark.quick
def test_accessor_equals_function(rng):
    x = xr.DataArray(rng.standard_normal(60), dims="time", name="x")
    ds = x.to_dataset()
    for name, kw in [("simplex", {"E": 2}), ("smap", {"E": 2, "theta": 1.0}),
                     ("embed_dimension", {"E_max": 3}), ("predict_interval", {"E": 2, "Tp_max": 2}),
                     ("predict_nonlinear", {"E": 2, "theta": [0, 1]})]:
        a = getattr(x.edm, name)(**kw)
        b = getattr(xedm, name)(x, **kw)
        c = getattr(ds.edm, name)(columns="x", **kw)
        xr.testing.assert_identical(a, b)
        xr.testing.assert_allclose(a, c)
