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
:func:`network`                a causal network (graph or matrix) of :func:`xedm.causal_network`
:func:`recurrence_plot`        a recurrence matrix with RR and eps
:func:`rqa_measures`           windowed RQA over time, or measures against the threshold
:func:`rqa_histograms`         line-length histograms of one RQA result
:func:`rqa_windows`            windowed RQA over time with the eps of each window
:func:`recurrence_network`     degree and local clustering over time, clustering vs degree
:func:`paper`                  a context for print: column widths, fonts >= 7 pt, CB-safe colours
:func:`savefig`                save with text kept as text (PDF/SVG) or at 600 dpi
:func:`text_problems`          texts of a drawn figure that overlap, leave it or are too small
=============================  ===============================================================

Direction convention (docs/conventions.md): a high cross-map skill at
``(library=x, target=y)`` is evidence that **y causes x**, drawn as ``y → x``.
"""

from __future__ import annotations

from typing import Any

import xarray as xr

from .. import api
from . import style as style_module
from ._base import call_view
from .causal import arrow, ccm_convergence, lag_plot
from .check import text_problems
from .edm import SWEEP_DIMS, prediction, skill, smap_coefficients
from .heatmap import causal_map, cluster_order
from .network import network
from .recurrence import recurrence_plot, rqa_histograms, rqa_measures
from .rqa_views import recurrence_network, rqa_windows
from .style import paper, savefig

style = style_module  # xedm.plot.style: widths, palette, MIN_PT

__all__ = [
    "arrow",
    "causal_map",
    "ccm_convergence",
    "lag_plot",
    "network",
    "cluster_order",
    "paper",
    "plot",
    "prediction",
    "recurrence_network",
    "recurrence_plot",
    "rqa_histograms",
    "rqa_windows",
    "rqa_measures",
    "savefig",
    "skill",
    "smap_coefficients",
    "text_problems",
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
    if "link" in names and ({"library", "target"} <= dims or "edge" in dims):
        return "causal_network"
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


def plot(obj: xr.Dataset | xr.DataArray, *, style: str | None = None,
         width: str | float | None = None, **kwargs: Any):
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
    ``causal_network``                             :func:`network`
    ``ccm`` or ``xmap`` with a list of Tp          :func:`lag_plot`
    ``rqa``                                        :func:`rqa_measures` (Figure)
    ``recurrence_plot``                            :func:`recurrence_plot`
    ``recurrence_network``                         :func:`recurrence_network` (Figure)
    ============================================  ===========================================

    Parameters
    ----------
    obj : Dataset or DataArray
        A result of an xedm function (see :func:`made_by`).
    style : {None, "paper"}, optional
        ``"paper"``: a figure for print (:func:`paper`): ``width`` wide, text of at least
        7 pt, colour-blind-safe colours, text kept as text in PDF/SVG.
        ``result.edm.plot(style="paper", width="double").figure.savefig("fig.pdf")``.
    width : {"single", "double"} or float, optional
        With ``style="paper"``: a journal's single column (3.5 in, the default), double
        column (7.2 in), or inches.
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
    with style_module.styled(style, width):
        return call_view(view, obj, name, kwargs)
