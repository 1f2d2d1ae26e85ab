"""Interactive explorers (ipywidgets) for forecasting, causality, causal maps and recurrence.

Each explorer is two objects: a **state** (plain Python: the parameters, a cache of results
and the calls that compute them; usable and testable without ipywidgets) and a **view** (the
widgets, the figure and the wiring).  Moving a slider updates the state; the view redraws
after the controls have been still for ``debounce`` seconds (no redraw per intermediate
value), and results already computed for the same parameters come from the cache.

``backend=`` and ``neighbors=`` are passed to every xedm call that takes them.

================================  ==========================================================
:func:`explore`                   the explorer for some data (also ``obj.edm.explore()``)
:class:`ForecastExplorer`         E, tau, Tp, theta, knn; skill vs E and theta, forecast
:class:`CausalityExplorer`        library/target, lib_size range, samples; CCM convergence
:class:`CausalMapExplorer`        xmap heatmap; pick a pair to see its convergence
:class:`RecurrenceExplorer`       E, tau, eps or recurrence rate; recurrence plot, measures
================================  ==========================================================

ipywidgets is imported only when a view is built; without it the view raises an ImportError
naming the extra to install (``pip install "xedm[widgets]"``).
"""

from __future__ import annotations

from typing import Any

from .base import Debouncer, Explorer, State, _xmap_result
from .causal_map import CausalMapExplorer, CausalMapState
from .causality import CausalityExplorer, CausalityState
from .forecast import ForecastExplorer, ForecastState
from .recurrence import RecurrenceExplorer, RecurrenceState

__all__ = [
    "CausalMapExplorer",
    "CausalMapState",
    "CausalityExplorer",
    "CausalityState",
    "Debouncer",
    "Explorer",
    "ForecastExplorer",
    "ForecastState",
    "RecurrenceExplorer",
    "RecurrenceState",
    "State",
    "explore",
]



_KINDS = {
    "forecast": ForecastExplorer,
    "causality": CausalityExplorer,
    "causal_map": CausalMapExplorer,
    "recurrence": RecurrenceExplorer,
}


def explore(data, kind: str | None = None, **kwargs: Any) -> Explorer:
    """The explorer of ``kind`` for ``data`` (also ``data.edm.explore(kind)``).

    Parameters
    ----------
    data : DataArray or Dataset
    kind : {"forecast", "causality", "causal_map", "recurrence"}, optional
        Default: "forecast"; "causal_map" for the result of :func:`xedm.xmap` (its map as
        computed, with the library/target pick; the convergence panel needs the series).
    **kwargs
        Passed to the explorer: initial parameters, ``debounce``, ``backend``,
        ``neighbors`` (and ``dim``/``truth`` for the causal map).

    Returns
    -------
    Explorer
        Displayed by Jupyter; ``.state`` holds parameters and cached results.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> ex = xedm.datasets.logistic_map(300).edm.explore(E=2, debounce=0)
    >>> type(ex).__name__, ex.state.params["E"]
    ('ForecastExplorer', 2)
    """
    if _xmap_result(data):
        kind = kind or "causal_map"
        if kind != "causal_map":
            raise ValueError(f"kind={kind!r} explores series, and this is the result of "
                             "xedm.xmap: use kind='causal_map' (the default for it), or "
                             "explore the data the map was made from")
    kind = kind or "forecast"
    if kind not in _KINDS:
        raise ValueError(f"kind={kind!r}; choose one of {sorted(_KINDS)}")
    return _KINDS[kind](data, **kwargs)
