"""xedm/api.py declares each public method once: everything generated from it agrees."""

import importlib
import inspect
import re
from pathlib import Path

import pytest
import xarray as xr

import xedm
from xedm import accessor, api

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("m", api.METHODS, ids=lambda m: m.name)
def test_declared_function_is_the_public_one(m):
    func = getattr(importlib.import_module(m.module), m.name)
    assert callable(func) and func.__name__ == m.name
    assert getattr(xedm, m.name) is func
    assert m.name in xedm.__all__ and m.name in dir(xedm)
    assert inspect.getdoc(func), f"{m.name} has no docstring"
    assert ">>>" in func.__doc__, f"{m.name}'s docstring has no example"


@pytest.mark.parametrize("m", [m for m in api.METHODS if m.accessor], ids=lambda m: m.name)
def test_accessor_forwards_every_declared_method(m):
    da = xr.DataArray([1.0, 2.0], dims="time")
    assert m.name in dir(da.edm)
    assert accessor.FORWARDED[m.name] == m.module
    first = next(iter(inspect.signature(m.function()).parameters))
    assert first == "data", f"{m.name}'s first parameter must be the data"


def test_accessor_forwards_nothing_undeclared():
    assert set(accessor.FORWARDED) == {m.name for m in api.METHODS if m.accessor}


def test_views_are_plot_functions():
    plot = importlib.import_module("xedm.plot")
    for name, view in api.views().items():
        assert plot.VIEWS[name] is getattr(plot, view)
    assert set(plot.VIEWS) == set(api.views())


def test_all_is_generated_and_unknown_names_fail():
    assert xedm.__all__ == [*api.names(), "datasets"]
    with pytest.raises(AttributeError, match="no attribute 'bogus'"):
        xedm.bogus  # noqa: B018
    with pytest.raises(AttributeError, match="the methods are"):
        api.method("bogus")
    with pytest.raises(ValueError, match="section='bogus'"):
        api.section("bogus")


def test_every_section_is_included_in_the_api_page():
    text = (DOCS / "api.md").read_text()
    included = re.findall(r"\.\. include:: _api_(\w+)\.rst", text)
    # each section's function list, and the accessor's table (docs/conf.py writes both)
    assert sorted(included) == sorted([*api.SECTIONS, "accessor"])
    assert {m.section for m in api.METHODS} <= set(api.SECTIONS)



def test_every_plot_function_is_in_the_api_page():
    # the strict docs build fails on a reference to a view the API page does not list
    import xedm.plot

    text = (DOCS / "api.md").read_text()
    block = text[text.index(".. currentmodule:: xedm.plot"):]
    block = block[:block.index("```")]
    listed = set(re.findall(r"^   (\w+)$", block, re.M))
    assert set(xedm.plot.__all__) <= listed, set(xedm.plot.__all__) - listed
