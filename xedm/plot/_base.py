"""Shared pieces of the plots: axes, names, numbers, legends placed off the data."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

# what a dim or variable is called on an axis
NAMES = {
    "E": "embedding dimension E",
    "Tp": "prediction horizon Tp",
    "theta": "S-map nonlinearity θ",
    "lib_size": "library size L",
    "rho": "skill ρ (Pearson)",
    "mae": "mean absolute error",
    "rmse": "root mean squared error",
    "eps": "threshold ε",
    "recurrence_rate": "recurrence rate",
}


def new_axes(ax=None, **subplots: Any):
    """``ax``, or the Axes of a new constrained-layout figure (legends outside fit in)."""
    if ax is not None:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes (e.g. from plt.subplots()) or None, "
                            f"got {type(ax).__name__} {ax!r}")
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(layout="constrained", **subplots)
    return ax


def new_figure(nrows: int, fig=None, **kwargs: Any):
    """(Figure, Axes array) with ``nrows`` rows sharing x; on ``fig`` (cleared) when given."""
    import matplotlib.pyplot as plt

    if fig is not None:
        from matplotlib.figure import Figure, SubFigure

        if not isinstance(fig, (Figure, SubFigure)):
            raise TypeError(f"fig must be a matplotlib Figure or None, got {type(fig).__name__} "
                            f"{fig!r}")
    if fig is None:
        fig = plt.figure(layout="constrained", figsize=kwargs.pop("figsize", (8, 2.2 * nrows)))
    else:
        fig.clear()
    axes = fig.subplots(nrows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, axes


def variable(obj: xr.Dataset | xr.DataArray, var: str) -> xr.DataArray:
    if not isinstance(var, str):
        raise TypeError(f"var must be the name of a variable (a str), got {var!r}")
    if isinstance(obj, xr.DataArray):
        return obj
    if var not in obj.data_vars:
        raise ValueError(f"variable {var!r} not in the result; it has {sorted(obj.data_vars)}")
    return obj[var]


def label(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def num(value: Any, digits: int = 3) -> str:
    """A number for a title: integers as they are, floats to ``digits`` significant digits."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int | str):
        return str(value)
    try:
        return f"{float(value):.{digits}g}"
    except (TypeError, ValueError):
        return str(value)


def axis_name(obj, name: str) -> str:
    """How ``name`` (a dim or variable) reads on an axis: its ``long_name`` or a known name,
    with ``units`` from its attrs; a trailing ``_`` (the second time axis of a recurrence
    matrix) is dropped."""
    attrs = {}
    if name in getattr(obj, "coords", {}) or (isinstance(obj, xr.Dataset) and name in obj):
        attrs = obj[name].attrs
    base = name[:-1] if name.endswith("_") and len(name) > 1 else name
    text = attrs.get("long_name") or NAMES.get(base, base)
    units = attrs.get("units")
    return f"{text} [{units}]" if units else text


def params(attrs: dict, keys: tuple[str, ...]) -> str:
    """``"E=3, Tp=1"`` from the keys present in attrs (τ, θ spelled as symbols)."""
    symbols = {"tau": "τ", "theta": "θ"}
    return ", ".join(f"{symbols.get(k, k)}={num(attrs[k])}" for k in keys if k in attrs)


def outside_legend(ax, **kwargs: Any):
    """A legend to the right of the axes, never over the data."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    kwargs.setdefault("loc", "upper left")
    kwargs.setdefault("bbox_to_anchor", (1.01, 1.0))
    kwargs.setdefault("borderaxespad", 0.0)
    kwargs.setdefault("frameon", False)
    return ax.legend(**kwargs)


def call_view(view, obj, made: str, kwargs: dict):
    """``view(obj, **kwargs)``, with a keyword that neither the view nor matplotlib takes
    refused as a TypeError naming it and the view's parameters (matplotlib's own message
    is an AttributeError about ``Line2D.set()``)."""
    import inspect
    import re

    sig = inspect.signature(view).parameters.values()
    own = [p.name for p in list(sig)[1:] if p.kind is not p.VAR_KEYWORD]
    try:
        return view(obj, **kwargs)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as err:
        m = re.search(r"unexpected keyword argument '(\w+)'", str(err))
        if m is None or m.group(1) not in kwargs:
            if not kwargs or (isinstance(err, (TypeError, ValueError))
                              and any(re.search(rf"\b{re.escape(k)}\b", str(err))
                                      for k in kwargs)):
                raise  # the default view failed, or the message names the keyword already
            # a keyword's value the view cannot use (a missing variable or dim, a wrong
            # type): say which keywords were given, not matplotlib's or pandas' internals
            given = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            cls = TypeError if isinstance(err, (TypeError, AttributeError)) else ValueError
            raise cls(f"plot: the {view.__name__} view (the plot of a {made} result) cannot use "
                      f"{given}: {type(err).__name__}: {err}; its parameters are {own}"
                      ) from None
        key = m.group(1)
        to_mpl = any(p.kind is p.VAR_KEYWORD for p in sig)
        raise TypeError(
            f"plot: {key}={kwargs[key]!r} is not a parameter of the {view.__name__} view (the "
            f"plot of a {made} result), whose parameters are {own}"
            + ("; other keywords go to matplotlib, which does not take it either" if to_mpl
               else "") + f": leave {key} out"
        ) from None
