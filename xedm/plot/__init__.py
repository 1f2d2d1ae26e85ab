"""Matplotlib views of xedm results. These functions draw; they never compute.

Each takes the Dataset/DataArray returned by an xedm function and draws on ``ax`` (``fig``
for multi-panel views; a new figure when None).  :func:`plot` (also ``result.edm.plot()``)
picks the view from ``attrs["xedm_function"]``, the function that made the result.
matplotlib is imported only when a function is called, so ``import xedm`` stays light.

=============================  ===============================================================
:func:`plot`                   the view that suits the result (dispatch on its attrs)
:func:`skill`                  ``rho`` against ``E``, ``Tp`` or ``theta``; chosen value marked
:func:`prediction`             observed and predicted series over time (simplex, smap)
:func:`smap_coefficients`      S-map coefficients (local Jacobians) over time (Figure)
:func:`ccm_convergence`        ``rho`` against ``lib_size``, both directions, sample spread
:func:`causal_map`             heatmap of ``rho(library, target)``; clustered order, marks
:func:`lag_plot`               ``rho`` against the lag ``Tp`` per pair (time-lagged cross maps)
:func:`recurrence_plot`        a recurrence matrix with RR and eps
:func:`rqa_measures`           windowed RQA over time, or measures against the threshold
:func:`rqa_histograms`         line-length histograms of one RQA result
:func:`rqa_windows`            windowed RQA over time with the eps of each window
:func:`recurrence_network`     degree and local clustering over time, clustering vs degree
=============================  ===============================================================

Direction convention (docs/conventions.md): a high cross-map skill at
``(library=x, target=y)`` is evidence that **y causes x**, drawn as ``y → x``.
"""

from __future__ import annotations

from typing import Any

import xarray as xr

from .. import api
from ._base import call_view
from .causal import arrow, causal_map, ccm_convergence, cluster_order, lag_plot
from .edm import SWEEP_DIMS, prediction, skill, smap_coefficients
from .recurrence import recurrence_plot, rqa_histograms, rqa_measures
from .rqa_views import recurrence_network, rqa_windows

__all__ = [
    "arrow",
    "causal_map",
    "ccm_convergence",
    "lag_plot",
    "cluster_order",
    "plot",
    "prediction",
    "recurrence_network",
    "recurrence_plot",
    "rqa_histograms",
    "rqa_windows",
    "rqa_measures",
    "skill",
    "smap_coefficients",
]

#: xedm function -> the view of its result (declared in xedm/api.py)
VIEWS = {name: globals()[view] for name, view in api.views().items()}


def made_by(obj: xr.Dataset | xr.DataArray) -> str:
    """The xedm function that made ``obj``: ``attrs["xedm_function"]``, else read from its
    variables and dims (a result whose attrs were dropped, or one variable of a result).

    Examples
    --------
    >>> import xarray as xr
    >>> made_by(xr.Dataset({"rho": ("theta", [0.1, 0.2])}, coords={"theta": [0, 1]}))
    'predict_nonlinear'
    """
    name = obj.attrs.get("xedm_function")
    if name in VIEWS:
        return name
    names = set(obj.data_vars) if isinstance(obj, xr.Dataset) else {obj.name}
    dims = set(obj.dims)
    if isinstance(obj, xr.DataArray) and obj.ndim == 2 and obj.dtype == bool:
        return "recurrence_plot"
    if "coefficients" in names:
        return "smap"
    if {"observed", "prediction"} <= names:
        return "simplex"
    if "lib_size" in dims:
        return "ccm"
    if {"library", "target"} <= dims:
        return "xmap"
    for d in SWEEP_DIMS:
        if d in dims:
            return {"E": "embed_dimension", "Tp": "predict_interval",
                    "theta": "predict_nonlinear", "tau": "predict_tau",
                    "exclusion_radius": "predict_exclusion_radius"}[d]
    if names & {"RR", "DET"}:
        return "rqa"
    raise ValueError(
        "cannot tell which xedm function made this object (no attrs['xedm_function'] and no "
        f"known variables among {sorted(names)}); call a view of xedm.plot directly"
    )


def plot(obj: xr.Dataset | xr.DataArray, **kwargs: Any):
    """Draw an xedm result with the view that suits the function that made it.

    ============================================  ===========================================
    made by                                        view
    ============================================  ===========================================
    ``embed_dimension``, ``predict_interval``,     :func:`skill` (chosen value marked)
    ``predict_nonlinear``
    ``simplex``                                    :func:`prediction`
    ``smap``                                       :func:`smap_coefficients` (Figure)
    ``ccm``                                        :func:`ccm_convergence`
    ``xmap``                                       :func:`causal_map`
    ``ccm`` or ``xmap`` with a list of Tp          :func:`lag_plot`
    ``rqa``                                        :func:`rqa_measures` (Figure)
    ``recurrence_plot``                            :func:`recurrence_plot`
    ``recurrence_network``                         :func:`recurrence_network` (Figure)
    ============================================  ===========================================

    Parameters
    ----------
    obj : Dataset or DataArray
        A result of an xedm function (see :func:`made_by`).
    **kwargs
        Passed to the view (``ax=`` or ``fig=``, ``var=``, ...).

    Returns
    -------
    matplotlib.axes.Axes or matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> ds = xedm.datasets.coupled_logistic(300)
    >>> ax = xedm.plot.plot(ds.edm.simplex(columns="x", E=2))
    >>> ax.get_title().split(":")[0]
    'simplex of x'
    """
    name = made_by(obj)
    rho = obj.get("rho") if isinstance(obj, xr.Dataset) else obj
    view = VIEWS[name]
    if name in ("ccm", "xmap") and rho is not None and "Tp" in rho.dims:
        view = lag_plot  # time-lagged cross maps: skill against the lag
    return call_view(view, obj, name, kwargs)
