"""One declaration per public method: the single place a public function is registered.

Every public function of xedm is one :class:`Method` in :data:`METHODS`.  From this table come

- ``xedm.__all__`` and the lazy ``xedm.<name>`` attributes (``xedm/__init__.py``),
- the ``.edm`` accessor's forwarded methods (``xedm/accessor.py``),
- the plot view that ``result.edm.plot()`` picks for a result (``xedm/plot/__init__.py``),
- the laziness tests over dask-backed inputs (``tests/test_lazy.py``),
- the function lists of the API reference (``docs/api.md``, filled by ``docs/conf.py``).

Adding a public method is then: its function (in ``labeled/``), one :class:`Method` here, its
naive reference and tests, and its docs page.  This module imports nothing of xedm (functions
and views are named by module and attribute), so every layer may read it.

Examples
--------
>>> from xedm import api
>>> api.method("simplex").module
'xedm.labeled.edm'
>>> "rqa" in api.names()
True
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

#: docs/api.md sections: key -> heading (the order of the page)
SECTIONS = {
    "edm": "EDM functions",
    "recurrence": "Recurrence quantification",
    "significance": "Significance: surrogates, p-values, convergence",
}


@dataclass(frozen=True)
class Method:
    """A public function of xedm.

    Attributes
    ----------
    name : str
        Its name: ``xedm.<name>`` and ``obj.edm.<name>``.
    module : str
        The module that defines it (imported on first use).
    view : str or None
        The :mod:`xedm.plot` view that draws its result (``result.edm.plot()``), if any.
    accessor : bool
        Forwarded by the ``.edm`` accessor (its first parameter is the data).
    section : str
        Its section of the API reference (a key of :data:`SECTIONS`).
    lazy_cases : tuple of (str, dict)
        Calls (case name, keyword arguments) that ``tests/test_lazy.py`` makes on a dask-backed
        ``(series, time)`` DataArray: each must stay lazy and equal the in-memory result.
    """

    name: str
    module: str
    view: str | None = None
    accessor: bool = True
    section: str = "edm"
    lazy_cases: tuple[tuple[str, dict[str, Any]], ...] = field(default=())

    def function(self):
        """The function itself (importing its module)."""
        return getattr(importlib.import_module(self.module), self.name)


_EDM = "xedm.labeled.edm"
_SWEEPS = "xedm.labeled.sweeps"
_GRID = "xedm.labeled.sweeps_grid"
_CROSS = "xedm.labeled.xmap"
_RQA = "xedm.labeled.rqa"

#: every public method, in the order of the API reference
METHODS: tuple[Method, ...] = (
    Method("simplex", _EDM, view="prediction",
           lazy_cases=(("simplex", {"E": 2}),)),
    Method("smap", _EDM, view="smap_coefficients",
           lazy_cases=(("smap", {"E": 2, "theta": 2.0}),)),
    Method("embed_dimension", _SWEEPS, view="skill",
           lazy_cases=(("embed_dimension", {"E_max": 4}),)),
    Method("predict_interval", _SWEEPS, view="skill",
           lazy_cases=(("predict_interval", {"E": 2, "Tp_max": 3}),)),
    Method("predict_nonlinear", _SWEEPS, view="skill",
           lazy_cases=(("predict_nonlinear", {"E": 2, "theta": [0.0, 1.0, 4.0]}),)),
    Method("predict_exclusion_radius", _GRID, view="skill",
           lazy_cases=(("predict_exclusion_radius", {"E": 2, "exclusion_radius": [0, 3]}),)),
    Method("predict_tau", _GRID, view="skill",
           lazy_cases=(("predict_tau", {"E": 2, "tau_max": 2}),)),
    Method("skill_grid", _GRID,
           lazy_cases=(("skill_grid", {"E": [1, 2], "tau": [1, 2], "Tp": [1, 2],
                                       "theta": [0.0, 2.0], "knn": 10}),)),
    Method("ccm", _CROSS, view="ccm_convergence",
           lazy_cases=(("ccm", {"series_dim": "series", "lib_sizes": [20, 60, 140], "E": 2,
                                "samples": 4, "seed": 0}),)),
    Method("xmap", _CROSS, view="causal_map",
           lazy_cases=(("xmap", {"series_dim": "series", "E_max": 4}),
                       ("xmap_Tp", {"series_dim": "series", "E": 2, "Tp": [-1, 0]}),
                       ("xmap_surrogates", {"series_dim": "series", "E": 2, "surrogates": 9,
                                            "seed": 1}))),
    Method("multiview", "xedm.labeled.multiview", view="prediction",
           lazy_cases=(("multiview", {"series_dim": "series", "E": 2, "D": 2}),)),
    Method("pool_replicates", "xedm.labeled.replicates",
           lazy_cases=(("pool_replicates", {"replicate_dim": "series", "E": 3}),)),
    Method("causal_network", "xedm.labeled.network", view="network"),
    Method("to_networkx", "xedm.labeled.network"),
    Method("to_dense", "xedm.labeled.network_result"),
    Method("surrogates", "xedm.labeled.surrogates", section="significance",
           lazy_cases=(("surrogates", {"method": "ebisuzaki", "n": 3, "seed": 0}),
                       ("surrogates_shuffle", {"method": "shuffle", "n": 2, "seed": 5}))),
    Method("test_nonlinearity", "xedm.labeled.nonlinearity", section="significance",
           lazy_cases=(("test_nonlinearity", {"E": 2, "theta": [0.0, 2.0], "surrogates": 3,
                                              "seed": 0}),)),
    Method("rqa", _RQA, view="rqa_measures", section="recurrence",
           lazy_cases=(("rqa", {"E": 2, "eps": [0.1, 0.2]}),
                       ("rqa_rate_window", {"E": 2, "recurrence_rate": 0.05, "window": 60,
                                            "step": 30}))),
    Method("recurrence_plot", _RQA, view="recurrence_plot", section="recurrence"),
    Method("recurrence_network", _RQA, view="recurrence_network", section="recurrence",
           lazy_cases=(("recurrence_network", {"E": 2, "eps": 0.2}),
                       ("recurrence_network_rate", {"E": 2, "recurrence_rate": 0.05,
                                                    "measures": ["degree", "transitivity"]}))),
    Method("set_options", "xedm.options", accessor=False),
    Method("get_option", "xedm.options", accessor=False),
    Method("warmup", "xedm.precompile", accessor=False),
)

_BY_NAME = {m.name: m for m in METHODS}


def method(name: str) -> Method:
    """The declaration of public method ``name``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise AttributeError(
            f"xedm has no public method {name!r}; the methods are {sorted(_BY_NAME)}"
        ) from None


def names() -> list[str]:
    """The names of every public method, in declaration order."""
    return [m.name for m in METHODS]


def forwarded() -> dict[str, str]:
    """Accessor method name -> module of the function it forwards to."""
    return {m.name: m.module for m in METHODS if m.accessor}


def views() -> dict[str, str]:
    """Public method name -> name of the :mod:`xedm.plot` view of its result."""
    return {m.name: m.view for m in METHODS if m.view}


def section(key: str) -> list[str]:
    """The names of the methods of one API-reference section, in declaration order."""
    if key not in SECTIONS:
        raise ValueError(f"section={key!r}; choose one of {sorted(SECTIONS)}")
    return [m.name for m in METHODS if m.section == key]
