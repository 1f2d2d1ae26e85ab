"""Bad input gives a clear ValueError/TypeError naming the parameter; inputs never change."""

import re

import numpy as np
import pytest
import xarray as xr

import xedm

x = xr.DataArray(np.sin(np.arange(50.0)), dims="time", name="x")
ds = xr.Dataset({"x": x, "y": x * 2, "label": ("time", np.array(["a"] * 50))})

FUNCS = ["simplex", "smap", "predict_interval", "predict_nonlinear"]


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize(
    "kw, err, words",
    [
        ({"E": 0}, ValueError, "E must be >= 1"),
        ({"E": 2.5}, TypeError, "E must be an integer"),
        ({"E": 2, "tau": 0}, ValueError, "tau must be >= 1"),
        ({"E": 30, "tau": 2}, ValueError, "(E-1)*tau"),
        ({"E": 2, "knn": 0}, ValueError, "knn must be >= 1"),
        ({"E": 2, "exclusion_radius": -1}, ValueError, "exclusion_radius"),
        ({"E": 2, "lib": "1 20"}, TypeError, "slice"),
        ({"E": 2, "lib": slice(100, 200)}, ValueError, "lib"),
        ({"E": 2, "pred": np.ones(3, bool)}, ValueError, "pred"),
        ({"E": 2, "backend": "tpu"}, ValueError, "backend"),
        ({"E": 2, "neighbors": "magic"}, ValueError, "neighbors"),
        ({"E": 2, "dim": "t"}, ValueError, "dim='t'"),
    ],
)
def test_bad_parameters(func, kw, err, words):
    with pytest.raises(err, match=re.escape(words)):
        getattr(xedm, func)(x, **kw)


def test_too_few_library_points():
    with pytest.raises(ValueError, match="knn\\+1"):
        xedm.simplex(x, 3, lib=slice(0, 4))
    with pytest.raises(ValueError, match="knn\\+1"):
        xedm.simplex(x, 2, knn=60)
    with pytest.raises(ValueError, match="E_max|\\(E-1\\)\\*tau"):
        xedm.embed_dimension(x, E_max=60)


def test_dataset_variables():
    with pytest.raises(ValueError, match="unknown variable 'z'"):
        ds.edm.simplex(E=2, columns=["x", "z"])
    with pytest.raises(ValueError, match="unknown variable 'w'"):
        ds.edm.simplex(E=2, columns="x", target="w")
    with pytest.raises(ValueError, match="columns= is required"):
        ds.edm.simplex(E=2)
    with pytest.raises(TypeError, match="dtype"):
        ds.edm.simplex(E=2, columns="label")
    with pytest.raises(TypeError, match="columns= and target="):
        x.edm.simplex(E=2, columns="x")
    with pytest.raises(ValueError, match="embedded=True"):
        ds.edm.simplex(E=3, columns=["x", "y"], embedded=True)


def test_missing_time_dim():
    da = xr.DataArray(np.zeros((3, 40)), dims=("neuron", "sample"))
    with pytest.raises(ValueError, match="dim='time' is not a dimension"):
        da.edm.simplex(E=2)
    assert da.edm.simplex(E=2, dim="sample").rho.dims == ("neuron",)


def test_solver_and_theta_errors():
    with pytest.raises(ValueError, match="theta"):
        xedm.smap(x, 2, theta=-1)
    with pytest.raises(ValueError, match="solver"):
        xedm.smap(x, 2, solver="qr")
    with pytest.raises(ValueError, match="alpha"):
        xedm.smap(x, 2, solver="ridge")
    with pytest.raises(ValueError, match="one theta"):
        xedm.smap(x, 2, theta=[1, 2])


def test_gpu_backend_is_clear_error_without_kernels():
    with pytest.raises(ValueError, match="backend='gpu'"):
        xedm.simplex(x, 2, backend="gpu")


def test_inputs_not_modified():
    data = np.sin(np.arange(60.0))
    data[[5, 30]] = np.nan
    da = xr.DataArray(data.copy(), dims="time")
    dset = xr.Dataset({"a": da, "b": da * 0.5})
    before = dset.copy(deep=True)
    xedm.simplex(dset, 2, columns=["a", "b"], target="b")
    xedm.smap(dset, 2, columns="a", theta=2)
    xedm.embed_dimension(dset, 4, columns="a")
    xr.testing.assert_identical(dset, before)
    np.testing.assert_array_equal(da.values, data)
