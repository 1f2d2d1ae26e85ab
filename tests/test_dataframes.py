"""pandas DataFrames as input to every function, the warning for lib/pred labels that look
like pyEDM's rows, and the small items of issue 25 (knn = n_lib, one lib size, theta)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xedm
from xedm.labeled.inputs import from_dataframe

_rng = np.random.default_rng(5)
N = 120
_x = np.sin(0.4 * np.arange(N)) + 0.05 * _rng.standard_normal(N)
_y = np.roll(_x, 2) * 0.8 + 0.1 * _rng.standard_normal(N)
TIMES = 1990 + np.arange(N)
DF = pd.DataFrame({"year": TIMES, "x": _x, "y": _y})
DS = xr.Dataset({"x": ("time", _x), "y": ("time", _y)}, coords={"time": TIMES})


@pytest.mark.parametrize("df, time", [
    (DF, TIMES),                                              # pyEDM: the first column
    (DF.rename(columns={"year": "Time"})[["x", "Time", "y"]], TIMES),  # a "Time" column
    (DF.set_index("year"), TIMES),                            # a named index
    (DF[["x", "y"]], np.arange(N)),                           # no time: positions
])
def test_time_column_found(df, time):
    ds = from_dataframe(df)
    assert sorted(ds.data_vars) == ["x", "y"]
    np.testing.assert_array_equal(ds.time.values, time)
    np.testing.assert_array_equal(ds.x.values, _x)


def test_time_column_given_and_errors():
    ds = from_dataframe(DF.rename(columns={"year": "t"})[["x", "t", "y"]], "t")
    np.testing.assert_array_equal(ds.t.values, TIMES)
    assert sorted(ds.data_vars) == ["x", "y"]
    with pytest.raises(ValueError, match="time_dim='when' is neither a column"):
        from_dataframe(DF, "when")
    with pytest.raises(ValueError, match=r"\['x'\] more than once"):
        from_dataframe(pd.DataFrame([[1, 2, 3]], columns=["t", "x", "x"]))


@pytest.mark.parametrize("name, call", [
    ("simplex", lambda d, **k: xedm.simplex(d, columns="x", E=2, **k)),
    ("smap", lambda d, **k: xedm.smap(d, columns="x", E=2, theta=1.0, **k)),
    ("embed_dimension", lambda d, **k: xedm.embed_dimension(d, columns="x", E_max=3, **k)),
    ("predict_interval", lambda d, **k: xedm.predict_interval(d, columns="x", E=2, Tp_max=2,
                                                              **k)),
    ("predict_nonlinear", lambda d, **k: xedm.predict_nonlinear(d, columns="x", E=2,
                                                                theta=[0, 2], **k)),
    ("ccm", lambda d, **k: xedm.ccm(d, ["x", "y"], lib_sizes=[20, 100], E=2, samples=3,
                                    seed=0, progress=False, **k)),
    ("xmap", lambda d, **k: xedm.xmap(d, columns=["x", "y"], E=2, progress=False, **k)),
    ("rqa", lambda d, **k: xedm.rqa(d, "x", E=2, eps=0.3, backend="cpu", **k)),
    ("recurrence_plot", lambda d, **k: xedm.recurrence_plot(d, "x", E=2, eps=0.3, **k)),
    ("surrogates", lambda d, **k: xedm.surrogates(d, "shuffle", n=2, seed=0, **k)),
])
def test_every_function_takes_a_dataframe(name, call):
    """A DataFrame gives what its Dataset gives; the DataFrame is not modified."""
    before = DF.copy()
    got = call(DF)
    xr.testing.assert_identical(got, call(DS))
    pd.testing.assert_frame_equal(DF, before)
    named = call(DF.rename(columns={"year": "yr"}), time_dim="yr")
    values = [(r.to_array() if isinstance(r, xr.Dataset) else r).values for r in (named, got)]
    np.testing.assert_array_equal(*values)


def test_rows_typed_as_labels_warn_naming_the_range():
    """Issue 25 repro 4: Lorenz5D's time runs 10..59.95; lib=slice(1, 500) meant rows."""
    t = 10 + 0.05 * np.arange(1000)
    df = pd.DataFrame({"Time": t, "V1": np.sin(0.07 * np.arange(1000))})
    with pytest.warns(UserWarning, match=r"lib=slice\(1, 500\) asks for the labels 1\.\.500, "
                      r"but the time coordinate runs 10\.0\.\.59\.95 \(1000 points\).*"
                      r"lib=slice\(10\.0, 34\.95\)"):
        xedm.simplex(df, columns="V1", E=3, lib=slice(1, 500), pred=slice(40.0, 59.95))
    with pytest.raises(ValueError, match=r"selects no time points: it asks for the labels "
                                         r"501\.\.1000.*pred=slice\(35\.0, 59\.95\)"):
        xedm.simplex(df, columns="V1", E=3, pred=slice(501, 1000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # labels inside the coordinate: no warning
        xedm.simplex(df, columns="V1", E=3, lib=slice(10.0, 34.95), pred=slice(35.0, 59.95))
        xedm.simplex(df, columns="V1", E=3, lib=slice(12, 30), pred=slice(35, 70))


def test_knn_equal_to_the_library_when_lib_and_pred_are_disjoint():
    """Issue 25 repro 10: no prediction point is a library point, so leave-one-out takes
    nothing away and knn may use the whole library (the naive reference agrees)."""
    from naive import simplex as naive_simplex

    lib, pred = slice(1990, 2039), slice(2050, 2109)  # 48 library points for E=2, Tp=1
    out = xedm.simplex(DS, columns="x", E=2, knn=48, lib=lib, pred=pred)
    ref = naive_simplex(_x[None], _x, E=2, knn=48, lib=[(0, 49)], pred=np.arange(N) >= 60)
    np.testing.assert_allclose(out.prediction.values, ref["prediction"], atol=1e-10)
    xedm.smap(DS, columns="x", E=2, theta=1.0, knn=48, lib=lib, pred=pred)
    with pytest.raises(ValueError, match="knn=48 needs at least knn\\+1 = 49"):
        xedm.simplex(DS, columns="x", E=2, knn=48, lib=lib, pred=slice(2030, 2109))
    with pytest.raises(ValueError, match="knn=49 needs at least knn = 49"):
        xedm.simplex(DS, columns="x", E=2, knn=49, lib=lib, pred=pred)


def test_one_lib_size_as_an_int_has_no_lib_size_dim():
    kw = dict(E=2, samples=3, seed=0, progress=False)
    one = xedm.ccm(DS, ["x", "y"], lib_sizes=60, **kw)
    listed = xedm.ccm(DS, ["x", "y"], lib_sizes=[60], **kw)
    assert "lib_size" not in one.rho.dims and int(one.lib_size) == 60
    assert listed.rho.dims == ("library", "target", "lib_size")
    value = float(one.rho.sel(library="x", target="y"))
    assert value == float(listed.rho.sel(library="x", target="y", lib_size=60))


def test_default_theta_is_pyedms():
    pyEDM = pytest.importorskip("pyEDM")
    import inspect

    default = inspect.signature(xedm.predict_nonlinear).parameters["theta"].default
    src = inspect.getsource(pyEDM.PredictNonlinear)
    start = src.index("theta = [")
    listed = eval(src[start + 8: src.index("]", start) + 1])  # pyEDM's own default list
    assert list(default) == [float(t) for t in listed] and len(default) == 15
