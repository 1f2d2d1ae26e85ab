"""The fast result constructor gives exactly what xarray's public constructor gives."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from xedm.labeled.inputs import build_dataset


def _cases():
    rng = np.random.default_rng(0)
    t = pd.date_range("2000-01-01", periods=5, freq="D")
    yield (
        {"prediction": (("time",), rng.random(5)), "rho": ((), np.float64(0.5)),
         "n": ((), np.int64(4))},
        {"time": t},
        {"E": 3, "lib": "all"},
    )
    yield (
        {"rho": (("neuron", "E"), rng.random((3, 4))),
         "mae": (("neuron", "E"), rng.random((3, 4)))},
        {"neuron": xr.Variable(("neuron",), np.array(["a", "b", "c"]), attrs={"units": "id"}),
         "region": xr.Variable(("neuron",), np.array([1, 1, 2])),
         "E": np.arange(1, 5)},
        {},
    )
    yield (
        {"coefficients": (("time", "coef"), rng.random((4, 3)))},
        {"time": pd.Index([1.5, 2.5, 3.5, 4.5]), "coef": np.array(["C0", "x(t-0)", "x(t-1)"])},
        {"theta": 2.0},
    )
    yield (  # a list of labels (S-map's coefficient names)
        {"coefficients": (("time", "coef"), rng.random((2, 3)))},
        {"time": np.arange(2), "coef": ["C0", "x(t-0)", "x(t-1)"]},
        {},
    )


@pytest.mark.parametrize("case", list(_cases()))
def test_build_dataset_matches_public_constructor(case):
    data_vars, coords, attrs = case
    fast = build_dataset(data_vars, coords, attrs)
    slow = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    xr.testing.assert_identical(fast, slow)
    assert list(fast.xindexes) == list(slow.xindexes)
    assert {k: v.dtype for k, v in fast.variables.items()} == {
        k: v.dtype for k, v in slow.variables.items()}
    assert fast.attrs is not attrs


def test_build_dataset_falls_back_for_dask_and_multiindex():
    da = pytest.importorskip("dask.array")
    lazy = {"rho": (("neuron",), da.zeros(3, chunks=2))}
    out = build_dataset(lazy, {"neuron": np.arange(3)}, {})
    assert out.rho.chunks is not None
    mi = pd.MultiIndex.from_product([[0, 1], ["a", "b"]], names=["i", "j"])
    coords = xr.Coordinates.from_pandas_multiindex(mi, "pair")
    data_vars = {"v": (("pair",), np.arange(4.0))}
    for given in (dict(coords), {k: c.variable for k, c in coords.items()}):
        out = build_dataset(data_vars, given, {})
        xr.testing.assert_identical(out, xr.Dataset(data_vars, coords=given))
