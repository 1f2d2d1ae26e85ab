"""Issue 43, item 2: no silent NaN and no accepted nonsense.  Each case raises a clear
ValueError/TypeError naming the parameter (or the data's problem), or warns once with the
reason; ``benchmarks/probe_counts.py`` counts the same cases."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xedm
from xedm.compat import pyedm as P

T = 120
t = np.arange(T)
_rng = np.random.default_rng(3)
X = np.sin(0.3 * t) + 0.1 * _rng.standard_normal(T)
Y = np.cos(0.21 * t) + 0.1 * _rng.standard_normal(T)
CONST = np.full(T, 3.0)
NAN = np.full(T, np.nan)
DUP = pd.DataFrame({"time": t // 2, "x": X, "y": Y})
DF = pd.DataFrame({"Time": t + 1, "x": X, "y": Y})
KW = dict(columns="x", target="x", lib="1 60", pred="61 110", E=2)


def _ds(**cols):
    return xr.Dataset({k: ("time", v) for k, v in cols.items()}, coords={"time": t})


def _da(**rows):
    return xr.DataArray(np.stack(list(rows.values())), dims=("series", "time"),
                        coords={"series": list(rows), "time": t})


def _one_warning(call, words: str):
    """The call's UserWarnings: exactly one names ``words``; returns the result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = call()
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)
            and re.search(words, str(w.message))]
    assert len(said) == 1, [str(w.message) for w in caught]
    return res


# ------------------------------------------------------------ duplicate time labels
DUP_CALLS = {
    "simplex": lambda d: xedm.simplex(d, 2, columns="x", target="x"),
    "smap": lambda d: xedm.smap(d, 2, columns="x", target="x"),
    "embed_dimension": lambda d: xedm.embed_dimension(d, 3, columns="x", target="x"),
    "predict_interval": lambda d: xedm.predict_interval(d, 2, Tp_max=2, columns="x"),
    "predict_nonlinear": lambda d: xedm.predict_nonlinear(d, 2, theta=[0, 1], columns="x"),
    "predict_exclusion_radius": lambda d: xedm.predict_exclusion_radius(
        d, 2, exclusion_radius=[0, 2], columns="x"),
    "predict_tau": lambda d: xedm.predict_tau(d, 2, tau_max=2, columns="x"),
    "skill_grid": lambda d: xedm.skill_grid(d, E=[1, 2], theta=[0, 1], columns="x"),
    "ccm": lambda d: xedm.ccm(d, ["x", "y"], lib_sizes=[20, 50], E=2, samples=3, seed=1),
    "xmap": lambda d: xedm.xmap(d, columns=["x", "y"], E=2),
    "multiview": lambda d: xedm.multiview(d, ["x", "y"], "x", E=2),
    "causal_network": lambda d: xedm.causal_network(d, columns=["x", "y"], E=2,
                                                    surrogates=9, seed=1),
    "surrogates": lambda d: xedm.surrogates(d, "shuffle", 2, seed=1),
    "test_nonlinearity": lambda d: xedm.test_nonlinearity(d, 2, theta=[0, 1], surrogates=3,
                                                          seed=1, target="x"),
    "rqa": lambda d: xedm.rqa(d, "x", E=2, recurrence_rate=0.1),
    "recurrence_plot": lambda d: xedm.recurrence_plot(d, "x", E=2, recurrence_rate=0.1),
    "recurrence_network": lambda d: xedm.recurrence_network(d, "x", E=2,
                                                            recurrence_rate=0.1),
}


@pytest.mark.parametrize("name", list(DUP_CALLS))
def test_dataframe_with_repeated_time_labels_is_refused(name):
    with pytest.raises(ValueError, match=r"repeats time labels \(0, 1, 2, \.\.\.: 60 of 120"):
        DUP_CALLS[name](DUP)


def test_repeated_index_labels_and_series_refused_unique_ones_kept():
    with pytest.raises(ValueError, match="its index repeats time labels"):
        xedm.simplex(DUP.set_index("time"), 2, columns="x", target="x")
    with pytest.raises(ValueError, match="the Series' index repeats"):
        xedm.simplex(pd.Series(X, index=t // 2), 2)
    assert np.isfinite(float(xedm.simplex(DUP.drop_duplicates("time"), 2, columns="x",
                                          target="x").rho))


def test_compat_repeated_times_refused_and_noTime_reads_rows():
    df = pd.DataFrame({"Time": t // 2 + 1, "x": X})
    with pytest.raises(ValueError, match="noTime=True"):
        P.Simplex(df, **KW)
    out = P.Simplex(df, **KW, noTime=True)
    assert np.isfinite(out.Predictions.to_numpy()[1:]).all()


# ------------------------------------------------------------ constant or all-NaN data
def test_causal_network_names_the_constant_series():
    _one_warning(lambda: xedm.causal_network(_da(a=X, b=CONST, c=Y), E=2, surrogates=9,
                                             seed=1), r"constant series are \['b'\]")


def test_multiview_all_nan_raises_constant_warns():
    with pytest.raises(ValueError, match="multiview: no prediction is finite: the data has no "
                                         "finite values"):
        xedm.multiview(_ds(x=NAN, y=NAN), ["x", "y"], "x", E=2)
    res = _one_warning(lambda: xedm.multiview(_ds(x=X, y=CONST), ["x", "y"], "x", E=2),
                       r"columns \['y'\] are constant")
    assert np.isfinite(float(res.rho))
    _one_warning(lambda: xedm.multiview(_ds(x=CONST, y=Y), ["x", "y"], "x", E=2),
                 "zero variance")


@pytest.mark.parametrize("func", ["simplex", "smap"])
def test_generate_steps_all_nan_raises_constant_and_dead_series_warn(func):
    call = getattr(xedm, func)
    with pytest.raises(ValueError, match=r"generate_steps=3\): the data have no finite"):
        call(NAN, 2, generate_steps=3)
    with pytest.raises(ValueError, match=r"no series gives a finite forecast: the newest "
                                         r"state \(the last \(E-1\)\*tau \+ 1 = 2 values\)"):
        call(np.r_[X[:-1], np.nan], 2, generate_steps=3)
    da = _da(a=X, b=CONST, c=NAN, d=np.r_[X[:-1], np.nan])
    res = _one_warning(lambda: call(da, 2, generate_steps=3),
                       r"\['series=c'\] are all NaN.*\['series=d'\] give no finite forecast.*"
                       r"\['series=b'\] are constant")
    assert np.isfinite(res.prediction.sel(series=["a", "b"]).values).all()
    np.testing.assert_allclose(res.prediction.sel(series="b").values, 3.0, rtol=1e-12)


@pytest.mark.parametrize("method", ["iaaft", "ebisuzaki", "shuffle"])
def test_surrogates_all_nan_raises_constant_warns(method):
    with pytest.raises(ValueError, match="surrogates: the data have no finite value"):
        xedm.surrogates(xr.DataArray(NAN, dims="time"), method, 2, seed=1)
    res = _one_warning(lambda: xedm.surrogates(_da(a=X, b=CONST, c=NAN), method, 2, seed=1),
                       r"\[\"data at series='c'\"\] are all NaN.*"
                       r"\[\"data at series='b'\"\] are constant")
    assert np.isfinite(res.sel(series="a").values).all()
    _one_warning(lambda: xedm.surrogates(_ds(x=X, y=CONST), method, 2, seed=1),
                 r"\[\"'y'\"\] are constant")


def test_ccm_xmap_and_compat_ccm_name_a_constant_series():
    ds = _ds(x=X, y=CONST, z=Y)
    words = r"series \['y'\] along 'variable' are constant"
    _one_warning(lambda: xedm.ccm(ds, ["x", "y", "z"], lib_sizes=[20, 60], E=2, samples=3,
                                  seed=1), words)
    _one_warning(lambda: xedm.xmap(ds, columns=["x", "y", "z"], E=2), words)
    out = _one_warning(lambda: P.CCM(pd.DataFrame({"Time": t + 1, "x": X, "y": CONST}),
                                     columns="x", target="y", libSizes="20 60", sample=3, E=2,
                                     seed=1), words)
    assert out["x:y"].isna().all()
    with pytest.raises(ValueError, match="ccm: the data are all NaN"):
        P.CCM(pd.DataFrame({"Time": t + 1, "x": NAN, "y": NAN}), columns="x", target="y",
              libSizes="20 60", sample=3, E=2, seed=1)


# ------------------------------------------------------------ fractions and numbers
@pytest.mark.parametrize("call, name", [
    (lambda: xedm.causal_network(_da(a=X, b=Y), E=2, alpha="0.05"), "alpha"),
    (lambda: xedm.causal_network(_da(a=X, b=Y), E=2, min_partial="0.2"), "min_partial"),
    (lambda: xedm.smap(X, 2, solver="ridge", alpha="0.05"), "alpha"),
    (lambda: xedm.predict_nonlinear(X, 2, solver="ridge", alpha="0.05"), "alpha"),
    (lambda: xedm.surrogates(xr.DataArray(X, dims="time"), "twin", 2, seed=1,
                             recurrence_rate="0.1"), "recurrence_rate"),
    (lambda: xedm.surrogates(xr.DataArray(X, dims="time"), "twin", 2, seed=1, eps="0.5"),
     "eps"),
    (lambda: P.SurrogateData(DF, "x", "seasonal", 2, alpha="0.05"), "alpha"),
    (lambda: P.SurrogateData(DF, "x", "seasonal", 2, smooth="0.8"), "smooth"),
])
def test_numbers_given_as_strings_are_refused(call, name):
    with pytest.raises(TypeError, match=rf"^{name} must be a number, e\.g\. {name}=.*got str"):
        call()


def test_one_fraction_rule():
    from xedm.core.validate import check_fraction

    with pytest.raises(ValueError, match=r"recurrence_rate=1 must lie in \(0, 1\)"):
        xedm.surrogates(xr.DataArray(X, dims="time"), "twin", 2, seed=1, recurrence_rate=1)
    with pytest.raises(ValueError, match=r"alpha=0 must lie in \(0, 1\)"):
        xedm.causal_network(_da(a=X, b=Y), E=2, alpha=0)
    assert check_fraction("min_partial", 0, "0.2", low_open=False) == 0.0
    assert check_fraction("q", np.float32(1), "0.5", high_open=False) == 1.0


# ------------------------------------------------------------ repeats and sizes
def test_repeated_measures_refused():
    with pytest.raises(ValueError, match=r"names \['degree'\] more than once"):
        xedm.recurrence_network(X, E=2, recurrence_rate=0.1,
                                measures=["degree", "transitivity", "degree"])


def test_lib_sizes_beyond_the_data_refused():
    plots = xr.concat([xr.Dataset({"x": ("time", X[:50] * s), "y": ("time", Y[:50])})
                       for s in (1.0, 1.1, 0.9)], dim="plot")
    pooled = xedm.pool_replicates(plots, "plot", E=2)
    with pytest.raises(ValueError, match=r"lib_sizes=\[20, 1000\]: 1000 is larger than the "
                                         r"data \(152 time points\)"):
        xedm.ccm(pooled, ["x", "y"], lib_sizes=[20, 1000], E=2, samples=3, seed=1)
    full = xedm.ccm(pooled, ["x", "y"], lib_sizes=[20, 152], E=2, samples=3, seed=1)
    assert np.isfinite(full.rho.values).all()


# ------------------------------------------------------------ compat
@pytest.mark.parametrize("call, err, words", [
    (lambda: P.Simplex(DF, **{**KW, "lib": None}), TypeError, "lib=None: give pyEDM's"),
    (lambda: P.Simplex(DF, **{**KW, "pred": None}), TypeError, "pred=None"),
    (lambda: P.Simplex(DF, **{**KW, "target": "x y"}), ValueError,
     r"target='x y' names 2 columns \['x', 'y'\]; pyEDM's target is one column"),
    (lambda: P.CCM(DF, columns="x", target="y x", libSizes="20 60", sample=3, E=2),
     ValueError, "target='y x' names 2 columns"),
    (lambda: P.Multiview(DF, columns="x y", target="x y", E=2), ValueError,
     "target='x y' names 2"),
    (lambda: P.Simplex(DF, **KW, noTime="yes"), TypeError, "noTime must be True or False"),
    (lambda: P.Simplex(DF, columns="x", target="x", lib="1 60", pred="61 62", E=2,
                       generateSteps=2, noTime="no"), TypeError, "noTime must be True"),
    (lambda: P.CCM(DF, columns="x", target="y", libSizes="20 500", sample=3, E=2),
     ValueError, r"libSizes='20 500': the largest size, 500, exceeds the data's 120 rows"),
    (lambda: P.CCM(DF, columns="x", target="y", libSizes="a b", sample=3, E=2),
     ValueError, "libSizes='a b': give library sizes"),
    (lambda: P.Multiview(DF, columns="x y", target="x", lib="1 60", pred="61 110", E=2,
                         knn=3), ValueError, "knn=3 is refused: pyEDM 2.5.7's Multiview "
                                             "ignores knn"),
    (lambda: P.PredictExclusionRadius(DF, **KW, exclusionRadius=[], showPlot=False),
     ValueError, r"exclusionRadius=\[\] gives no radius"),
])
def test_compat_refusals(call, err, words):
    with pytest.raises(err, match=words):
        call()


def test_compat_as_pyedm_refuses_where_pyedm_refuses():
    pyEDM = pytest.importorskip("pyEDM")
    with pytest.raises(TypeError):  # pyEDM: "object of type 'NoneType' has no len()"
        pyEDM.Simplex(DF, **{**KW, "lib": None})
    with pytest.raises(ValueError, match="exceeds data size"):
        pyEDM.CCM(DF, columns="x", target="y", libSizes="20 500", sample=3, E=2, seed=1)


# ------------------------------------------------------------ scale and solver
def test_pred_variance_overflow_is_said_and_the_rest_unit_free():
    base = xedm.simplex(X, 2)
    big = _one_warning(lambda: xedm.simplex(X * 1e200, 2), "pred_variance is inf")
    np.testing.assert_allclose(big.prediction.values / 1e200, base.prediction.values,
                               rtol=1e-12)
    assert float(big.rho) == pytest.approx(float(base.rho), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fine = xedm.simplex(X * 1e150, 2)
    np.testing.assert_allclose(fine.pred_variance.values[1:] / 1e300,
                               base.pred_variance.values[1:], rtol=1e-10)


class _NotARegressor:
    def fit(self, X, y=None, sample_weight=None):
        return self


@pytest.mark.parametrize("solver, words", [
    (_NotARegressor, "got the class _NotARegressor: pass an instance"),
    (_NotARegressor(), "after fit\\(\\) it has no coef_"),
    (object(), "solver must be 'lstsq', 'ridge' or a scikit-learn-style regressor instance"),
])
def test_solver_checked_up_front(solver, words):
    with pytest.raises(TypeError, match=words):
        xedm.smap(X, 2, solver=solver)


def test_sklearn_non_regressors_refused():
    sk = pytest.importorskip("sklearn")
    from sklearn.cluster import KMeans
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    del sk
    with pytest.raises(TypeError, match="got KMeans\\(\\), a clusterer"):
        xedm.smap(X, 2, solver=KMeans())
    with pytest.raises(TypeError, match="a transformer or other non-regressor"):
        xedm.smap(X, 2, solver=StandardScaler())
    with pytest.raises(TypeError, match="got the class Ridge: pass an instance, e.g. "
                                        "solver=Ridge\\(\\)"):
        xedm.smap(X, 2, solver=Ridge)
    assert np.isfinite(float(xedm.smap(X, 2, solver=Ridge(alpha=0.1)).rho))


# ------------------------------------------------------------ messages that name the parameter
@pytest.mark.parametrize("call, err, words", [
    (lambda: xedm.causal_network(_da(a=X, b=Y), E=2, lags=[0, "a"]), TypeError,
     "lags='a' is invalid"),
    (lambda: xedm.causal_network(_da(a=X, b=Y), E=2, lags=[0, 10**20]), ValueError,
     "lags=.* too large"),
    (lambda: xedm.causal_network(_da(a=X, b=Y), E=2, exclusion_radius=10**6), ValueError,
     "exclusion_radius=1000000 excludes every library point"),
    (lambda: xedm.causal_network(_da(a=X, b=Y), E=2, exclusion_radius=10**20), ValueError,
     "exclusion_radius=.* too large"),
    (lambda: xedm.causal_network(_da(a=X, b=Y), E=2, surrogate_method="abc"), ValueError,
     "surrogate_method='abc' is invalid"),
    (lambda: xedm.ccm(_ds(x=X, y=Y), ["x", "y"], lib_sizes=[20], E=2, surrogate_method=None),
     ValueError, "surrogate_method=None is invalid"),
    (lambda: xedm.test_nonlinearity(X, 2, surrogates=3, surrogate_options=[1]), TypeError,
     "surrogate_options must be a dict"),
    (lambda: xedm.recurrence_network(X, recurrence_rate=0.1, measures=3), TypeError,
     "measures=3 is invalid; give a measure's name"),
    (lambda: xedm.multiview(_ds(x=X, y=Y), ["x", "y"], "x", E=10**20), ValueError,
     "E=100000000000000000000 with tau=1 needs"),
    (lambda: xedm.multiview(_ds(x=X, y=Y), ["x", "y"], "x", exclude_target=True), ValueError,
     "left by exclude_target=True"),
    (lambda: xedm.pool_replicates(xr.DataArray(np.ones((2, 50)), dims=("replicate", "time")),
                                  E=10**9), ValueError, "E=1000000000, tau=1, Tp=0 need"),
    (lambda: xedm.predict_tau(X, 3, tau_max=10**18), ValueError, "E with tau_max=3"),
])
def test_messages_name_the_parameter(call, err, words):
    with pytest.raises(err, match=words):
        call()
