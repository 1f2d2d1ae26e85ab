"""The .edm accessor: real signatures and docstrings generated from the public functions."""

from __future__ import annotations

import importlib
import inspect
import pydoc

import numpy as np
import pytest
import xarray as xr

import xedm
from xedm import accessor


def public(name):
    return getattr(importlib.import_module(accessor.FORWARDED[name]), name)


@pytest.mark.parametrize("name", sorted(accessor.FORWARDED))
@pytest.mark.parametrize("cls", [xr.DataArray, xr.Dataset])
def test_signature_is_the_function_minus_data(name, cls):
    obj = cls() if cls is xr.Dataset else xr.DataArray(np.zeros(3), dims="time")
    func = public(name)
    want = list(inspect.signature(func).parameters.values())[1:]
    got = inspect.signature(getattr(obj.edm, name))
    assert list(got.parameters.values()) == want
    assert got.return_annotation == inspect.signature(func).return_annotation
    # the same function users import from xedm
    assert getattr(xedm, name) is func


@pytest.mark.parametrize("name", sorted(accessor.FORWARDED))
def test_docstring_is_the_function_s_without_data(name):
    func = public(name)
    doc = getattr(xedm.accessor.EDMDatasetAccessor, name).__doc__
    assert f"xedm.{name}" in doc.splitlines()[0]
    # every documented parameter but data is there, the data entry is not
    for line in inspect.cleandoc(func.__doc__).splitlines():
        if line.startswith("data :"):
            assert line not in doc
    params = [p for p in inspect.signature(func).parameters if p != "data"]
    documented = [p for p in params if f"\n{p}" in inspect.cleandoc(func.__doc__)]
    for p in documented:
        assert f"\n{p}" in doc


def test_help_shows_parameters():
    ds = xedm.datasets.coupled_logistic(100)
    text = pydoc.render_doc(ds.edm.embed_dimension, renderer=pydoc.plaintext)
    assert "E_max" in text and "exclusion_radius" in text and "*args" not in text
    text = pydoc.render_doc(xedm.accessor.EDMDataArrayAccessor, renderer=pydoc.plaintext)
    assert "predict_nonlinear(self, E" in text


@pytest.mark.quick
def test_forwarding_calls_the_function_with_the_object():
    x = xedm.datasets.logistic_map(200)
    a = x.edm.simplex(E=2, Tp=1)
    b = xedm.simplex(x, E=2, Tp=1)
    xr.testing.assert_identical(a, b)
    with pytest.raises(TypeError, match="unexpected keyword"):
        x.edm.simplex(E=2, bogus=1)


def test_new_parameters_are_picked_up():
    """A forwarded function's signature is read from the function, so a parameter added to it
    (e.g. neighbors=) appears in the accessor with no edit."""

    def f(data, E: int = 1, *, tau: int = 1, neighbors: str | None = None):
        """Doc.

        Parameters
        ----------
        data : DataArray
            The series.
        E : int
            Dimension.
        neighbors : str
            How neighbours are found.
        """
        return data, E, tau, neighbors

    m = accessor.forward(f)
    assert list(inspect.signature(m).parameters) == ["self", "E", "tau", "neighbors"]
    assert "neighbors : str" in m.__doc__ and "data : DataArray" not in m.__doc__
    assert "The series" not in m.__doc__

    class Holder:
        _obj = "OBJ"

    assert m(Holder(), 3, neighbors="exact") == ("OBJ", 3, 1, "exact")


def test_forwarded_functions_need_a_data_parameter():
    def g(*, E=1):
        pass

    with pytest.raises(TypeError, match="first parameter"):
        accessor.forward(g)


def test_dir_lists_the_methods():
    names = dir(xedm.datasets.logistic_map(50).edm)
    for name in [*accessor.FORWARDED, "plot", "explore"]:
        assert name in names
