"""Odd but possible input to simplex, smap and the sweeps (issue 9): each works, or raises a
ValueError/TypeError naming the parameter and the fix; never a silent all-NaN result, an
internal error or a hang; inputs never change."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xedm

T = 60
_rng = np.random.default_rng(7)
BASE = np.sin(0.5 * np.arange(T)) + 0.1 * _rng.standard_normal(T)
x = xr.DataArray(BASE, dims="time", name="x", coords={"time": np.arange(T)})

CALLS = {
    "simplex": lambda d, **k: xedm.simplex(d, **{"E": 2, **k}),
    "smap": lambda d, **k: xedm.smap(d, **{"E": 2, "theta": 1.0, **k}),
    "embed_dimension": lambda d, **k: xedm.embed_dimension(d, **{"E_max": 4, **k}),
    "predict_interval": lambda d, **k: xedm.predict_interval(d, **{"E": 2, "Tp_max": 3, **k}),
    "predict_nonlinear": lambda d, **k: xedm.predict_nonlinear(d, **{"E": 2, "theta": [0, 2],
                                                                     **k}),
}
SWEEPS = {"embed_dimension": "E", "predict_interval": "Tp", "predict_nonlinear": "theta"}
ALL = list(CALLS)


def _quiet(func, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning expected
        return func(*args, **kw)


# ----------------------------------------------------------------------------- no finite result
@pytest.mark.parametrize("func", ALL)
def test_all_nan_input_raises(func):
    with pytest.raises(ValueError, match="no finite values"):
        CALLS[func](x * np.nan)


@pytest.mark.parametrize("func", ALL)
def test_exclusion_radius_past_the_series_raises(func):
    with pytest.raises(ValueError, match=r"exclusion_radius=1000 excludes every library point.*"
                                         r"use exclusion_radius <"):
        CALLS[func](x, exclusion_radius=1000)


@pytest.mark.parametrize("func", ["simplex", "smap"])
def test_no_finite_prediction_says_why(func):
    xn = x.copy()
    xn[:30] = np.nan
    with pytest.raises(ValueError, match=f"{func}: no prediction is finite: .*NaN gaps"):
        CALLS[func](xn, lib=slice(0, 29))


@pytest.mark.parametrize("func", list(SWEEPS))
def test_sweep_without_finite_rho_raises(func):
    with pytest.raises(ValueError, match="zero variance"):
        CALLS[func](x * 0 + 1.0)  # constant: rho undefined for every value
    with pytest.raises(ValueError, match="rho needs 3"):
        CALLS[func](x, pred=slice(58, 59))


@pytest.mark.parametrize("func", ALL)
def test_some_series_all_nan_warns_and_others_unchanged(func):
    X = np.stack([BASE, np.full(T, np.nan), BASE[::-1].copy()])
    da = xr.DataArray(X, dims=("neuron", "time"))
    with pytest.warns(UserWarning, match="1 of 3 series .*no finite.*1 of them all-NaN"):
        out = CALLS[func](da)
    assert np.isnan(out.rho.isel(neuron=1)).all()
    d = SWEEPS.get(func)
    if d:
        best = out[f"best_{d}"].values
        assert best.dtype == np.float64 and np.isnan(best[1])
    for i in (0, 2):
        alone = _quiet(CALLS[func], da.isel(neuron=i))
        # S-map's solver reassociates its dot products (about 5x faster): the vectorised
        # loop's split, and so the last bit, can follow the alignment of its buffers
        np.testing.assert_allclose(out.rho.isel(neuron=i).values, alone.rho.values,
                                   rtol=1e-14 if func == "smap" else 0, atol=0)
        if d:
            assert best[i] == alone.attrs[f"best_{d}"]


def test_sweep_warns_naming_the_values_without_finite_rho():
    xn = x.copy()
    xn[::4] = np.nan  # no complete window of 3 or more lags has a finite target
    with pytest.warns(UserWarning, match=r"embed_dimension: E = 3, 4, 5 gave no finite rho"):
        out = xedm.embed_dimension(xn, E_max=5)
    assert out.attrs["best_E"] in (1, 2) and out.best_E.dtype.kind == "i"
    with pytest.warns(UserWarning, match=r"predict_interval: Tp = 8, 9 gave no finite rho"):
        out = xedm.predict_interval(x, 2, Tp=[1, 8, 9], pred=slice(50, 59))
    assert out.attrs["best_Tp"] == 1
    da = xr.DataArray(np.stack([BASE, xn.values]), dims=("neuron", "time"))
    with pytest.warns(UserWarning, match=r"E = 3 \(1 of 2 series\), 4 \(1 of 2 series\)"):
        out = xedm.embed_dimension(da, E_max=4)
    assert out.best_E.dtype.kind == "i"  # every series has a finite rho somewhere


def test_forecast_only_simplex_is_not_an_error():
    # one forecast past the data: no observed value, no rho, but a real prediction
    out = _quiet(xedm.simplex, x, 2, pred=slice(59, 59))
    assert np.isfinite(out.prediction.values).all() and int(out.n) == 0


# ----------------------------------------------------------------------------- invalid lists
def test_repeated_values_refused():
    with pytest.raises(ValueError, match="theta has repeated values"):
        xedm.predict_nonlinear(x, 2, theta=[1, 1])
    with pytest.raises(ValueError, match="E has repeated values"):
        xedm.embed_dimension(x, E=[2, 3, 2])
    with pytest.raises(ValueError, match="Tp has repeated values"):
        xedm.predict_interval(x, 2, Tp=[2, 2])


@pytest.mark.parametrize("theta", ["abc", [0, "a"], True, [[0, 1]], []])
def test_theta_must_be_numbers(theta):
    with pytest.raises((TypeError, ValueError), match="theta must be a number"):
        xedm.predict_nonlinear(x, 2, theta=theta)


def test_huge_list_values_refused_clearly():
    with pytest.raises(ValueError, match="Tp"):
        xedm.predict_interval(x, 2, Tp=[1, 10**30])
    with pytest.raises(ValueError, match="E"):
        xedm.embed_dimension(x, E=[1, 10**30])


# ----------------------------------------------------------------------------- dask
@pytest.mark.parametrize("func", ALL)
@pytest.mark.parametrize("chunks", [{}, {"time": 20}])
def test_dask_1d_equals_numpy(func, chunks):
    eager = CALLS[func](x)
    lazy = CALLS[func](x.chunk(chunks))
    assert lazy.rho.chunks is not None  # still lazy
    done = lazy.compute()
    np.testing.assert_array_equal(done.rho.values, eager.rho.values)
    if func in SWEEPS:
        d = SWEEPS[func]
        assert float(done[f"best_{d}"]) == eager.attrs[f"best_{d}"]


def test_dask_other_dims_and_all_nan_series():
    X = np.stack([BASE, np.full(T, np.nan), BASE[::-1].copy()])
    da = xr.DataArray(X, dims=("neuron", "time"))
    lazy = xedm.embed_dimension(da.chunk({"neuron": 1, "time": 25}), E_max=4)
    assert lazy.best_E.chunks is not None
    with pytest.warns(UserWarning):
        eager = xedm.embed_dimension(da, E_max=4)
    np.testing.assert_array_equal(lazy.best_E.values, eager.best_E.values)
    np.testing.assert_array_equal(lazy.rho.values, eager.rho.values)


def test_dask_static_errors_at_the_call():
    with pytest.raises(ValueError, match="knn"):
        xedm.simplex(x.chunk(), 2, knn=10**9)
    with pytest.raises(ValueError, match="E_max"):
        xedm.embed_dimension(x.isel(time=slice(0, 8)).chunk(), E_max=6)
    with pytest.raises(ValueError, match="S-map needs at least 2"):
        xedm.smap(x.chunk(), 2, lib=slice(0, 2))


# ----------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int64, np.int8, np.uint16])
@pytest.mark.parametrize("func", ALL)
def test_numeric_dtypes_compute_in_float64(func, dtype):
    data = (x * 100).astype(dtype)
    before = data.copy(deep=True)
    out = CALLS[func](data)
    ref = CALLS[func](data.astype(np.float64))
    np.testing.assert_array_equal(out.rho.values, ref.rho.values)
    assert out.rho.dtype == np.float64
    xr.testing.assert_identical(data, before)


@pytest.mark.parametrize("values, kind", [
    (BASE > 0, "bool"), (BASE.astype(complex), "complex"), (BASE.astype(object), "object"),
    (BASE.astype(str), "<U"), (pd.date_range("2000", periods=T).values, "datetime64"),
])
def test_non_real_dtypes_refused(values, kind):
    da = xr.DataArray(values, dims="time", name="spikes")
    for func in ALL:
        with pytest.raises(TypeError, match=re.escape(f"variable 'spikes' has dtype {kind}")):
            CALLS[func](da)


# ----------------------------------------------------------------------------- time labels
@pytest.mark.parametrize("func", ["simplex", "smap"])
def test_string_time_labels(func):
    labels = [f"t{i:02d}" for i in range(T)]
    da = x.assign_coords(time=labels)
    out = CALLS[func](da, Tp=2)
    assert out.time.values[:-2].tolist() == labels[3:]
    assert pd.isna(out.time.values[-2:]).all()  # forecasts past the data: NaN labels
    assert np.isfinite(out.prediction.values[-2:]).all()
    ref = CALLS[func](x, Tp=2)
    np.testing.assert_array_equal(out.prediction.values, ref.prediction.values)
    back = CALLS[func](da, Tp=-3)
    assert pd.isna(back.time.values[:2]).all() and back.time.values[2] == "t00"
    part = CALLS[func](da, lib=slice("t00", "t30"), pred=slice("t31", "t59"))
    assert part.time.values[0] == "t32"


@pytest.mark.parametrize("func", ["simplex", "smap"])
def test_other_time_labels(func):
    ref = CALLS[func](x, Tp=2)
    dates = pd.date_range("2000-01-01", periods=T, freq="D")
    out = CALLS[func](x.assign_coords(time=dates), Tp=2)
    assert out.time.values[-1] == np.datetime64("2000-03-02")  # extended by the step
    deltas = pd.timedelta_range(0, periods=T, freq="s")
    assert CALLS[func](x.assign_coords(time=deltas), Tp=2).time.values[-1] == np.timedelta64(
        61, "s")
    nan_first = x.assign_coords(time=np.r_[np.nan, np.arange(1.0, T)])
    out = CALLS[func](nan_first, Tp=2)
    assert np.isnan(out.time.values[-2:]).all()  # NaN step: NaN labels for the forecasts
    for labels in (np.arange(T)[::-1], np.r_[0, np.arange(T - 1)], _rng.permutation(T)):
        # labels only label: states follow the array order
        out = CALLS[func](x.assign_coords(time=labels), Tp=2)
        np.testing.assert_array_equal(out.prediction.values, ref.prediction.values)


# ----------------------------------------------------------------------------- Datasets, dims
def test_target_with_extra_dim_broadcasts_the_columns():
    Y = np.stack([BASE[::-1], np.cos(0.5 * np.arange(T))])
    ds = xr.Dataset({"x": ("time", BASE), "y": (("neuron", "time"), Y)},
                    coords={"neuron": ["a", "b"]})
    for func in ALL:
        out = CALLS[func](ds, columns="x", target="y")
        assert "neuron" in out.rho.dims and out.neuron.values.tolist() == ["a", "b"]
        for i in range(2):
            one = CALLS[func](ds.isel(neuron=i), columns="x", target="y")
            np.testing.assert_array_equal(out.rho.isel(neuron=i).values, one.rho.values)


@pytest.mark.parametrize("func", ALL)
def test_columns_and_target_must_be_names(func):
    ds = x.to_dataset()
    with pytest.raises(TypeError, match="columns must be a variable name or a list of names, "
                                        "got 123"):
        CALLS[func](ds, columns=123)
    with pytest.raises(TypeError, match="target must be a variable name"):
        CALLS[func](ds, columns="x", target=123)


@pytest.mark.parametrize("func, dim", [("embed_dimension", "E"), ("predict_interval", "Tp"),
                                       ("predict_nonlinear", "theta"), ("smap", "coef"),
                                       ("simplex", "rho")])
def test_dims_clashing_with_result_names(func, dim):
    da = xr.DataArray(np.stack([BASE, BASE[::-1]]), dims=(dim, "time"))
    with pytest.raises(ValueError, match=f"named '{dim}'.*rename it first"):
        CALLS[func](da)
    assert CALLS[func](da.rename({dim: "trial"})).rho.sizes["trial"] == 2
    with pytest.raises(ValueError, match="named 'rho'"):
        CALLS[func](x.assign_coords(rho=1.0))  # a scalar coordinate would clash too


# ----------------------------------------------------------------------------- E and embedded
@pytest.mark.parametrize("func", ["simplex", "smap", "predict_interval", "predict_nonlinear"])
def test_E_optional_with_embedded(func):
    ds = xr.Dataset({"a": x, "b": x.shift(time=1), "c": x.shift(time=2)})
    cols = ["a", "b", "c"]
    out = CALLS[func](ds, E=None, columns=cols, embedded=True)
    ref = CALLS[func](ds, E=3, columns=cols, embedded=True)
    xr.testing.assert_identical(out, ref)
    with pytest.raises(ValueError, match="E must equal the number of columns"):
        CALLS[func](ds, E=2, columns=cols, embedded=True)
    with pytest.raises(TypeError, match="E .*is required.*embedded=True"):
        CALLS[func](ds, E=None, columns=cols)
    # tau has no effect with embedded=True (it must not size anything either)
    xr.testing.assert_allclose(CALLS[func](ds, E=None, columns=cols, embedded=True, tau=10**9),
                               out)


@pytest.mark.parametrize("func", ["simplex", "smap", "predict_interval", "predict_nonlinear"])
def test_embedded_must_be_a_bool(func):
    with pytest.raises(TypeError, match="embedded must be True or False, got 'yes'"):
        CALLS[func](x, embedded="yes")
    xr.testing.assert_identical(CALLS[func](x, E=1, embedded=np.True_),
                                CALLS[func](x, E=1, embedded=True))
    with pytest.raises(TypeError, match="embedded must be True or False, got 1"):
        CALLS[func](x, E=1, embedded=1)  # a truthy stand-in is not a bool (issue 21)


def test_other_parameters_of_the_wrong_type():
    with pytest.raises(TypeError, match="singular_values must be True or False"):
        xedm.smap(x, 2, singular_values="yes")
    for alpha in ("abc", None, True):
        with pytest.raises(TypeError, match="alpha must be a number"):
            xedm.smap(x, 2, solver="ridge", alpha=alpha)
    ds = xr.Dataset({"x": x, "y": x * 2})
    with pytest.raises(ValueError, match=r"columns=.*\['x'\] more than once"):
        xedm.simplex(ds, 2, columns=["x", "y", "x"])


def test_sweep_messages_name_the_parameter_passed():
    with pytest.raises(ValueError, match="E_max must be >= 1"):
        xedm.embed_dimension(x, E_max=0)
    with pytest.raises(TypeError, match="E_max must be an integer"):
        xedm.embed_dimension(x, E_max=2.5)
    with pytest.raises(ValueError, match=r"E_max=61 with tau=1 needs \(E_max-1\)\*tau"):
        xedm.embed_dimension(x, E_max=61)
    with pytest.raises(ValueError, match="a smaller E_max"):
        xedm.embed_dimension(x, E_max=40, lib=slice(0, 40))
    with pytest.raises(ValueError, match=r"E=61 with tau=1 needs \(E-1\)\*tau"):
        xedm.embed_dimension(x, E=[1, 61])
    with pytest.raises(ValueError, match="Tp_max=60 leaves no library point"):
        xedm.predict_interval(x, 2, Tp_max=60)
    with pytest.raises(ValueError, match="a smaller Tp_max"):
        xedm.predict_interval(x, 2, Tp_max=57)
    with pytest.raises(ValueError, match="Tp=-70 leaves no library point"):
        xedm.predict_interval(x, 2, Tp=[1, -70])
    with pytest.raises(ValueError, match="Tp_max must be >= 1"):
        xedm.predict_interval(x, 2, Tp_max=0)


# ----------------------------------------------------------------------------- sizes, odd values
@pytest.mark.parametrize("func", ALL)
@pytest.mark.parametrize("n", [0, 1, 2])
def test_too_short_series(func, n):
    with pytest.raises(ValueError, match=f"the data has {n} time point.*at least 3"):
        CALLS[func](x.isel(time=slice(0, n)))


@pytest.mark.parametrize("func", ALL)
@pytest.mark.parametrize("kw, words", [
    ({"knn": 10**9}, "knn=1000000000"),
    ({"tau": 10**9}, "tau=1000000000"),
    ({"Tp": 10**9}, "leaves no library point"),
    ({"Tp": -(10**9)}, "leaves no library point"),
    ({"Tp": 59}, "library points"),
    ({"pred": slice(1000, 2000)}, "pred="),
    ({"lib": slice(0, 1)}, "lib gives"),
])
def test_odd_values(func, kw, words):
    if func == "predict_interval" and "Tp" in kw:
        kw = {"Tp": [kw["Tp"]]}
    if func in ("smap", "predict_nonlinear") and "knn" not in kw and "lib" in kw:
        words = "S-map needs at least 2"
    with pytest.raises(ValueError, match=re.escape(words)):
        CALLS[func](x, **kw)


@pytest.mark.parametrize("func", ALL)
def test_huge_E(func):
    kw = {"E": [10**9]} if func == "embed_dimension" else {"E": 10**9}
    with pytest.raises(ValueError, match="E=1000000000"):
        CALLS[func](x, **kw)


@pytest.mark.parametrize("func", ALL)
def test_huge_tau_with_E_1(func):
    # no lags: tau has no effect and must not size any buffer (was a 2**62-long allocation)
    kw = {"E": [1]} if func == "embed_dimension" else {"E": 1}
    out = CALLS[func](x, tau=2**62, **kw)
    ref = CALLS[func](x, tau=1, **kw)
    assert out.attrs["tau"] == 2**62
    xr.testing.assert_identical(out.drop_attrs(), ref.drop_attrs())


@pytest.mark.parametrize("func", ["simplex", "smap", "predict_interval", "predict_nonlinear"])
def test_pred_before_the_first_complete_window(func):
    with pytest.raises(ValueError, match="pred selects no time point with a complete embedding"):
        CALLS[func](x, E=3, pred=slice(0, 1))


# ----------------------------------------------------------------------------- other containers
@pytest.mark.parametrize("func", ALL)
def test_numpy_lists_and_series(func):
    ref = CALLS[func](x.drop_vars("time"))
    for data in (BASE, BASE.tolist(), tuple(BASE), pd.Series(BASE)):
        out = CALLS[func](data)
        np.testing.assert_array_equal(out.rho.values, ref.rho.values)
    two = CALLS[func](np.stack([BASE, BASE[::-1]]))  # time on the last axis
    assert two.rho.dims[0] == "dim_0" and two.sizes["dim_0"] == 2
    np.testing.assert_array_equal(two.rho.values[0], ref.rho.values)
    same = CALLS[func](np.stack([BASE, BASE[::-1]]).T, time_dim="dim_0")  # xarray's axis names
    np.testing.assert_array_equal(same.rho.values, two.rho.values)
    frame = CALLS[func](pd.DataFrame({"x": BASE}), columns="x")  # a Dataset of its columns
    np.testing.assert_array_equal(frame.rho.values, ref.rho.values)
    with pytest.raises(TypeError, match="dtype"):
        CALLS[func](["a"] * T)


@pytest.mark.quick
def test_set_options_plain_call_and_context():
    """set_options(...) applies at once and stays; as a context manager it restores."""
    import xedm

    before = xedm.get_option("progress")
    try:
        xedm.set_options(progress=False)
        assert xedm.get_option("progress") is False
        with xedm.set_options(progress=True, backend="cpu"):
            assert xedm.get_option("progress") is True
            assert xedm.get_option("backend") == "cpu"
        assert xedm.get_option("progress") is False
        assert xedm.get_option("backend") == "auto"
        with pytest.raises(ValueError, match="unknown option 'colour'"):
            xedm.set_options(colour="red")
        assert xedm.get_option("progress") is False  # a refused call changes nothing
    finally:
        xedm.set_options(progress=before)
