"""Views of recurrence analysis: the recurrence plot and the RQA measures."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ._base import (
    axis_name,
    finish,
    fit_texts,
    label,
    new_axes,
    new_figure,
    num,
    params,
)

_THRESHOLDS = ("eps", "recurrence_rate")


def recurrence_plot(da: xr.DataArray, *, ax=None, cmap: str = "binary", **kwargs: Any):
    """Draw a recurrence matrix (recurrent points black) with its recurrence rate and eps.

    Parameters
    ----------
    da : DataArray
        Two-dimensional boolean (or 0/1) recurrence matrix, e.g. from
        :func:`xedm.recurrence_plot`; its two dims label the axes (``time_``, the second
        time axis, reads as ``time``) and their coordinates (when numeric) set the extent.
    ax : matplotlib Axes, optional
    cmap : str, default "binary"
    **kwargs
        Passed to ``Axes.imshow``.

    Returns
    -------
    matplotlib.axes.Axes
        Titled with the parameters, eps to 3 significant digits and the recurrence rate
        RR of the matrix.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, xarray as xr
    >>> from xedm import plot
    >>> x = np.sin(np.arange(100) / 5)
    >>> R = xr.DataArray(np.abs(x[:, None] - x[None, :]) < 0.1, dims=("time_i", "time_j"))
    >>> plot.recurrence_plot(R).get_xlabel()
    'time_j'
    """
    if da.ndim != 2:
        raise ValueError(f"recurrence_plot() needs a 2-D matrix; got dims {da.dims}; select "
                         "one series first, e.g. R.isel(series=0)")
    row_dim, col_dim = da.dims
    ax = new_axes(ax)
    extent = None
    rows, cols = da[row_dim].values, da[col_dim].values
    if all(np.issubdtype(c.dtype, np.number) and c.size > 1 for c in (rows, cols)):
        extent = (cols[0], cols[-1], rows[0], rows[-1])
    kwargs.setdefault("interpolation", "nearest")
    values = np.asarray(da.values, dtype=float)
    ax.imshow(values, cmap=cmap, origin="lower", extent=extent, vmin=0, vmax=1, **kwargs)
    kind = da.attrs.get("kind", "self")
    xname, yname = axis_name(da, col_dim), axis_name(da, row_dim)
    if kind == "cross":
        xname, yname = f"{xname} (other)", f"{yname} (data)"
    ax.set_xlabel(xname)
    ax.set_ylabel(yname)
    ax.set_aspect("equal")
    parts = [params(da.attrs, ("E", "tau"))]
    for k, sym in (("eps", "ε"), ("joint_eps", "ε (joint)")):
        val = da.attrs.get(k)
        if val is not None:
            val = "[" + ", ".join(num(v) for v in val) + "]" if isinstance(val, list) else num(val)
            parts.append(f"{sym}={val}")
    parts.append(f"RR={100 * np.nanmean(values):.3g} %")
    title = {"self": "recurrence plot", "cross": "cross recurrence plot",
             "joint": "joint recurrence plot"}.get(kind, "recurrence plot")
    ax.set_title(f"{title}\n" + ", ".join(p for p in parts if p))
    return finish(ax)


_MAIN = ("RR", "DET", "L", "LAM", "TT", "ENTR")


def rqa_measures(ds: xr.Dataset, measures=_MAIN, *, fig=None, dim: str | None = None):
    """RQA measures against time (windowed :func:`xedm.rqa`) or against the threshold
    (``eps`` or ``recurrence_rate`` given as a list), one panel each.

    Parameters
    ----------
    ds : Dataset
        Result of :func:`xedm.rqa` with one varying dim (``time`` of the windows, ``eps``
        or ``recurrence_rate``); other dims give one line each.  A result with no varying
        dim gives its line-length histograms instead (:func:`rqa_histograms`).
    measures : sequence of str
        The measures drawn.
    fig : matplotlib Figure, optional
        Drawn on this figure (cleared first).
    dim : str, optional
        The x-axis dim (found when not given).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> q = xedm.datasets.logistic_map(400).edm.rqa(E=2, eps=[0.02, 0.05, 0.1])
    >>> fig = xedm.plot.rqa_measures(q, ["RR", "DET"])
    >>> [ax.get_ylabel() for ax in fig.axes], fig.axes[-1].get_xlabel()
    (['RR', 'DET'], 'threshold ε')
    """
    measures = [m for m in measures if m in ds]
    if not measures:
        raise ValueError(f"no RQA measure in the result; it has {sorted(ds.data_vars)}")
    if dim is None:
        dims = ds[measures[0]].dims
        thr = [d for d in dims if d in _THRESHOLDS]
        times = [d for d in dims if d not in _THRESHOLDS]
        if ds.attrs.get("window") is not None and times:
            dim = times[-1]  # windows' time comes after the series dims
        elif thr:
            dim = thr[0]
        else:
            return rqa_histograms(ds, fig=fig)
    fig, axes = new_figure(len(measures), fig)
    x = ds[dim].values
    for ax, m in zip(axes, measures, strict=True):
        da = ds[m]
        others = [d for d in da.dims if d != dim]
        if others:
            st = da.stack(_series=others).transpose(dim, "_series")
            for j, s in enumerate(st._series.values):
                ax.plot(x, st.values[:, j], lw=1.0,
                        label=", ".join(label(v) for v in np.atleast_1d(s)))
        else:
            ax.plot(x, da.values, lw=1.0, marker="o" if len(x) <= 30 else None)
        ax.set_ylabel(m)
    axes[-1].set_xlabel(axis_name(ds, dim))
    if dim in _THRESHOLDS and np.all(x > 0) and x.max() / x.min() > 20:
        axes[-1].set_xscale("log")
    what = "windowed RQA" if dim not in _THRESHOLDS else "RQA"
    extra = params(ds.attrs, ("E", "tau", "window", "step"))
    thr = _threshold_text(ds)
    axes[0].set_title(", ".join(p for p in (what, extra, thr) if p))
    return fit_texts(fig)


def _threshold_text(ds) -> str:
    for k, sym in (("recurrence_rate", "RR target"), ("eps", "ε")):
        if k in ds.attrs and not isinstance(ds.attrs[k], list):
            return f"{sym}={num(ds.attrs[k])}"
    return ""


def rqa_histograms(ds: xr.Dataset, *, fig=None):
    """The line-length histograms of one :func:`xedm.rqa` result (log counts), one panel
    each (diagonal, vertical, white vertical), with the main measures in the titles.

    Parameters
    ----------
    ds : Dataset
        Result of :func:`xedm.rqa` without ``window`` and with one threshold (the default
        ``histograms=True``); select other dims first.
    fig : matplotlib Figure, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    names = [n for n in ("diagonal_lines", "vertical_lines", "white_vertical_lines") if n in ds]
    if not names:
        raise ValueError("the result has no histograms: call rqa(..., histograms=True)")
    extra = [d for d in ds[names[0]].dims if d != "line_length"]
    if extra:
        raise ValueError(f"select one result first (extra dims {extra}), e.g. "
                         f"ds.isel({extra[0]}=0)")
    fig, axes = new_figure(len(names), fig)
    meas = {"diagonal_lines": ("DET", "L", "L_max"), "vertical_lines": ("LAM", "TT", "V_max"),
            "white_vertical_lines": ("W", "W_max")}
    L = ds["line_length"].values
    for ax, n in zip(axes, names, strict=True):
        counts = np.asarray(ds[n].values, dtype=float)
        ax.bar(L, np.where(counts > 0, counts, np.nan), width=1.0, color="C0")
        ax.set_yscale("log")
        ax.set_ylabel("count")
        ax.set_title(n.replace("_", " ") + ": " + ", ".join(
            f"{m}={num(float(ds[m]))}" for m in meas[n] if m in ds))
    axes[-1].set_xlabel("line length")
    fig.suptitle(", ".join(p for p in ("RQA", params(ds.attrs, ("E", "tau")),
                                       _threshold_text(ds),
                                       f"RR={num(float(ds['RR']))}" if "RR" in ds else "")
                           if p))
    return fit_texts(fig)

