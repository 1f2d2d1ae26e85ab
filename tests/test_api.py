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


@pytest.mark.quick
@pytest.mark.parametrize("m", api.METHODS, ids=lambda m: m.name)
def test_declared_function_is_the_public_one(m):
    func = getattr(importlib.import_module(m.module), m.name)
    assert callable(func) and func.__name__ == m.name
    assert getattr(xedm, m.name) is func
    assert m.name in xedm.__all__ and m.name in dir(xedm)
    assert inspect.getdoc(func), f"{m.name} has no docstring"
    assert ">>>" in func.__doc__, f"{m.name}'s docstring has no example"


@pytest.mark.quick
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


#: every public method -> quick tests (``pytest -m quick``: README's quick test command) that
#: check its values against a reference (tests/naive*.py or an obviously correct computation)
QUICK = {
    "simplex": ["test_simplex::test_simplex_multivariate_and_embedded",
                "test_simplex::test_simplex_disjoint_lib_segments"],
    "smap": ["test_smap::test_smap_multivariate_embedded_ridge_segments"],
    "embed_dimension": ["test_simplex::test_embed_dimension_matches_naive"],
    "predict_interval": ["test_simplex::test_predict_interval_matches_naive"],
    "predict_nonlinear": ["test_smap::test_predict_nonlinear_matches_naive"],
    "predict_exclusion_radius": [
        "test_sweeps_grid::test_exclusion_radius_matches_naive_and_simplex"],
    "predict_tau": ["test_sweeps_grid::test_predict_tau_matches_naive"],
    "skill_grid": ["test_sweeps_grid::test_skill_grid_matches_naive"],
    "ccm": ["test_ccm::test_ccm_matches_naive",
            "test_ccm::test_full_library_ccm_equals_simplex_crossmap"],
    "xmap": ["test_ccm::test_xmap_matches_naive_with_target_E_and_nan"],
    "multiview": ["test_multiview::test_matches_naive"],
    "pool_replicates": ["test_replicates::test_pooled_simplex_matches_naive_segments",
                        "test_replicates::test_ccm_pools_replicates"],
    "causal_network": ["test_network::test_causal_network_matches_naive"],
    "to_networkx": ["test_network::test_to_networkx_edges_are_the_links"],
    "to_dense": ["test_network_edges::test_edges_equal_the_dense_result_in_a_small_network"],
    "surrogates": ["test_significance::test_shuffle_and_block_keep_values_and_gaps",
                   "test_iaaft::test_labeled_attrs_nan_and_max_iter",
                   "test_nonlinearity::test_matches_naive"],
    "test_nonlinearity": ["test_nonlinearity::test_matches_naive"],
    "rqa": ["test_rqa::test_measures_match_dense"],
    "recurrence_plot": ["test_rqa::test_recurrence_plot"],
    "recurrence_network": ["test_rqa_network::test_network_matches_dense_reference",
                           "test_rqa_network::test_broadcast_rate_and_measure_subset"],
    "set_options": ["test_inputs::test_set_options_plain_call_and_context",
                    "test_errors::test_issue21_item10_hours_of_work_refused_up_front"],
    "get_option": ["test_inputs::test_set_options_plain_call_and_context"],
    "warmup": ["test_warmup::test_cpu_warmup_of_one_function", "test_warmup::test_cli_warmup_cpu"],
}


def _marked_quick(func) -> bool:
    """The test function, or one case of its parametrisation, carries the quick mark."""
    for mark in getattr(func, "pytestmark", []):
        if mark.name == "quick":
            return True
        if mark.name == "parametrize" and any(
                m.name == "quick" for case in mark.args[1] for m in getattr(case, "marks", ())):
            return True
    return False


@pytest.mark.quick
def test_every_public_method_has_a_quick_test():
    """A new public method needs a quick test against its reference (listed in QUICK)."""
    assert list(QUICK) == api.names()
    for name, tests in QUICK.items():
        for test in tests:
            module, func = test.split("::")
            assert _marked_quick(getattr(importlib.import_module(module), func)), (name, test)
