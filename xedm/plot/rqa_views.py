"""Views of recurrence networks and of windowed RQA with the threshold of each window."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._base import axis_name, fit_texts, new_figure, num, params

_NET = (("transitivity", "𝒯"), ("global_clustering", "C"), ("average_path_length", "ℒ"),
        ("assortativity", "r"))


def recurrence_network(ds: xr.Dataset, *, fig=None):
    """A recurrence network (:func:`xedm.recurrence_network`): degree and local clustering of
    each state over time, and clustering against degree, with the global measures in the
    title.

    Parameters
    ----------
    ds : Dataset
        One network (select one series first); needs ``degree`` and ``local_clustering``
        (the default ``measures``).
    fig : matplotlib Figure, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> net = xedm.datasets.logistic_map(300).edm.recurrence_network(E=2, eps=0.05)
    >>> fig = xedm.plot.recurrence_network(net)
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['degree', 'local clustering', 'local clustering']
    """
    need = [v for v in ("degree", "local_clustering") if v not in ds]
    if need:
        raise ValueError(f"the network result lacks {need}: call recurrence_network with "
                         "measures including 'degree' and 'local_clustering'")
    k, c = ds["degree"], ds["local_clustering"]
    if k.ndim != 1:
        extra = [d for d in k.dims if d != k.dims[-1]]
        raise ValueError(f"select one network first (extra dims {extra}), e.g. "
                         f"net.isel({extra[0]}=0)")
    dim = k.dims[0]
    fig, _ = new_figure(1, fig, figsize=(8, 6.6))  # checks and clears fig
    fig.clear()
    grid = fig.add_gridspec(3, 1)
    top = fig.add_subplot(grid[0])
    axes = [top, fig.add_subplot(grid[1], sharex=top), fig.add_subplot(grid[2])]
    t = ds[dim].values
    axes[0].plot(t, k.values, lw=0.8)
    axes[0].set_ylabel("degree")
    axes[1].plot(t, c.values, lw=0.8, color="C1")
    axes[1].set_ylabel("local clustering")
    axes[1].set_xlabel(axis_name(ds, dim))
    axes[2].scatter(k.values, c.values, s=4, alpha=0.5, color="C2")
    axes[2].set_xlabel("degree")
    axes[2].set_ylabel("local clustering")
    parts = [f"{sym}={num(float(ds[v]))}" for v, sym in _NET if v in ds]
    thr = (f"ε={num(ds.attrs['eps'])}" if "eps" in ds.attrs else "")
    fig.suptitle(", ".join(p for p in ("recurrence network", params(ds.attrs, ("E", "tau")),
                                       thr, *parts) if p))
    return fit_texts(fig)


def rqa_windows(ds: xr.Dataset, measures=("RR", "DET", "LAM", "TT"), *, fig=None):
    """Windowed RQA (:func:`xedm.rqa` with ``window=``): each measure over time, and the eps
    of each window in the last panel (the variable ``eps`` when a recurrence rate set it,
    else the one eps given).

    Parameters
    ----------
    ds : Dataset
        Windowed result of one series and one threshold.
    measures : sequence of str
    fig : matplotlib Figure, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(600)
    >>> w = x.edm.rqa(E=2, recurrence_rate=0.05, window=200, step=50)
    >>> fig = xedm.plot.rqa_windows(w, ["DET"])
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['DET', 'ε']
    """
    if ds.attrs.get("window") is None:
        raise ValueError("rqa_windows() draws a windowed result: call rqa(..., window=...)")
    measures = [m for m in measures if m in ds]
    if not measures:
        raise ValueError(f"no RQA measure in the result; it has {sorted(ds.data_vars)}")
    dim = ds[measures[0]].dims[-1] if ds[measures[0]].ndim else None
    if dim is None or ds[measures[0]].ndim != 1:
        raise ValueError(f"select one series and one threshold first (dims "
                         f"{ds[measures[0]].dims})")
    fig, axes = new_figure(len(measures) + 1, fig)
    t = ds[dim].values
    for ax, m in zip(axes, measures, strict=False):
        ax.plot(t, ds[m].values, lw=1.0, marker="o" if t.size <= 30 else None)
        ax.set_ylabel(m)
    ax = axes[-1]
    if "eps" in ds.data_vars:
        ax.plot(t, ds["eps"].values, lw=1.0, color="C3")
    else:
        ax.plot(t, np.full(t.size, float(ds.attrs.get("eps", np.nan))), lw=1.0, color="C3")
    ax.set_ylabel("ε")
    ax.set_xlabel(axis_name(ds, dim))
    thr = (f"RR target={num(ds.attrs['recurrence_rate'])}" if "recurrence_rate" in ds.attrs
           else "")
    axes[0].set_title(", ".join(p for p in ("windowed RQA", params(
        ds.attrs, ("E", "tau", "window", "step")), thr) if p))
    return fit_texts(fig)
