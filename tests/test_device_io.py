"""CuPy-backed input gives CuPy-backed output (xedm/labeled/device.py), checked here with a
stand-in ``cupy`` module (a NumPy subclass) so that it runs without a GPU; the real CuPy is
tested in test_edm_gpu.py."""

from __future__ import annotations

import sys
import types

import numpy as np
import xarray as xr

import xedm


def fake_cupy(monkeypatch):
    cp = types.ModuleType("cupy")

    class ndarray(np.ndarray):
        def get(self):
            return np.asarray(self).view(np.ndarray).copy()

    ndarray.__module__ = "cupy"
    cp.ndarray = ndarray
    cp.asarray = lambda a: np.asarray(a).view(ndarray)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    return cp


def test_cupy_in_cupy_out_numpy_in_numpy_out(monkeypatch):
    cp = fake_cupy(monkeypatch)
    x = xedm.datasets.lorenz63(200).x
    g = x.copy(data=cp.asarray(x.values))
    X = xedm.datasets.many_series(3, 150, seed=0).x
    G = X.copy(data=cp.asarray(X.values))
    calls = [
        lambda d: xedm.simplex(d, E=3),
        lambda d: d.edm.smap(E=3, theta=2.0),
        lambda d: xedm.embed_dimension(d, E_max=4),
    ]
    for f in calls:
        a, b = f(g), f(x)
        for name in b.data_vars:
            assert isinstance(a[name].data, cp.ndarray), name
            assert type(b[name].data) is np.ndarray, name
            np.testing.assert_array_equal(np.asarray(a[name].data), b[name].values)
    a, b = xedm.xmap(G, series_dim="series", E=2), xedm.xmap(X, series_dim="series", E=2)
    assert isinstance(a.rho.data, cp.ndarray) and type(b.rho.data) is np.ndarray
    np.testing.assert_array_equal(np.asarray(a.rho.data), b.rho.values)
    assert isinstance(g.data, cp.ndarray)  # the input is unchanged


def test_dataset_input(monkeypatch):
    cp = fake_cupy(monkeypatch)
    x = xedm.datasets.lorenz63(150)
    ds = xr.Dataset({k: v.copy(data=cp.asarray(v.values)) for k, v in x.data_vars.items()})
    out = ds.edm.simplex(columns="x", target="y", E=2)
    assert isinstance(out.prediction.data, cp.ndarray)
    ref = x.edm.simplex(columns="x", target="y", E=2)
    np.testing.assert_array_equal(np.asarray(out.prediction.data), ref.prediction.values)
