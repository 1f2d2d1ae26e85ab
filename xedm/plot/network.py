"""The view of a :func:`xedm.causal_network` result: the network drawn as a graph (arrows
``driver → driven``, width by skill, lag labels) or as the matrix of cross-map skill with the
links marked."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ._base import label, new_axes, num


def _layout(n: int, layout, labels) -> np.ndarray:
    """(n, 2) node positions: ``"circular"``, ``"spring"`` (networkx), or a dict label ->
    (x, y)."""
    if isinstance(layout, dict):
        try:
            return np.array([layout[v] for v in labels], float)
        except KeyError as err:
            raise ValueError(f"layout has no position for series {err.args[0]!r}") from None
    if layout == "circular":
        a = np.pi / 2 - 2 * np.pi * np.arange(n) / max(n, 1)
        return np.stack([np.cos(a), np.sin(a)], axis=1)
    if layout == "spring":
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(range(n))
        return np.array([nx.spring_layout(g, seed=0)[i] for i in range(n)])
    raise ValueError(f"layout={layout!r}: use 'circular', 'spring' or a dict label -> (x, y)")


def network(
    ds: xr.Dataset,
    *,
    kind: str = "graph",
    ax=None,
    layout: Any = "circular",
    lag_labels: bool = True,
    max_width: float = 4.0,
    **kwargs: Any,
):
    """Draw a :func:`xedm.causal_network` result.

    Parameters
    ----------
    ds : Dataset
        A result of :func:`xedm.causal_network` (``link``, ``rho``, ``driver_Tp`` over
        ``(library, target)``).
    kind : {"graph", "matrix"}
        ``"graph"``: every series a node, every link ``driver → driven`` an arrow whose
        width grows with ``rho`` and whose label is the driver lag; ``"matrix"``: the
        cross-map skill as :func:`xedm.plot.causal_map` draws it, links marked.
    ax : matplotlib Axes, optional
    layout : {"circular", "spring"} or dict
        Node positions (``"spring"`` needs networkx), or label -> (x, y).
    lag_labels : bool
        Write each link's lag (``Tp``) at its middle.
    max_width : float
        Line width of the strongest link (rho = 1).
    **kwargs
        ``kind="matrix"``: passed to :func:`xedm.plot.causal_map`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> ds = xedm.datasets.coupled_logistic(500, beta_xy=0.0, beta_yx=0.3)
    >>> net = ds.edm.causal_network(columns=["x", "y"], E=2, seed=0)
    >>> ax = net.edm.plot()
    >>> ax.get_title()
    'causal network: 1 link'
    """
    if not isinstance(ds, xr.Dataset) or "link" not in ds:
        raise TypeError("network() draws the Dataset of xedm.causal_network (with link over "
                        f"(library, target)), got {type(ds).__name__}")
    link = ds.link.transpose("library", "target")
    libs, tgts = link.library.values, link.target.values
    rows, cols = np.nonzero(link.values)
    if kind == "matrix":
        from .causal import causal_map

        ax = causal_map(ds[["rho"]].assign_attrs(ds.attrs), ax=ax, **kwargs)
        ax.plot(cols, rows, "s", markerfacecolor="none", markeredgecolor="C3",
                markersize=max(3.0, 120 / max(len(libs), 1)), linestyle="none",
                label="link (direct)")
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), frameon=False,
                  fontsize="small")
        return ax
    if kind != "graph":
        raise ValueError(f"kind={kind!r}: use 'graph' or 'matrix'")
    if kwargs:
        raise TypeError(f"network(kind='graph') takes no {sorted(kwargs)}")
    nodes = list(dict.fromkeys([*libs.tolist(), *tgts.tolist()]))
    pos = _layout(len(nodes), layout, nodes)
    at = {v: pos[k] for k, v in enumerate(nodes)}
    ax = new_axes(ax)
    rho = np.asarray(ds.rho.transpose("library", "target").values, float)
    lag = (np.asarray(ds.driver_Tp.transpose("library", "target").values)
           if "driver_Tp" in ds else None)
    for i, j in zip(rows, cols, strict=True):
        src, dst = at[tgts[j]], at[libs[i]]
        width = 0.5 + (max_width - 0.5) * float(np.clip(rho[i, j], 0, 1))
        ax.annotate("", xy=dst, xytext=src, arrowprops=dict(
            arrowstyle="-|>", lw=width, color="C0", shrinkA=14, shrinkB=14,
            connectionstyle="arc3,rad=0.12", mutation_scale=10 + 2 * width))
        if lag_labels and lag is not None:
            mid = (src + dst) / 2 + 0.06 * np.array([-(dst - src)[1], (dst - src)[0]])
            ax.text(*mid, f"{int(lag[i, j])}", fontsize="x-small", ha="center", va="center",
                    color="C3")
    ax.scatter(pos[:, 0], pos[:, 1], s=500, color="white", edgecolors="black", zorder=3)
    for v, (x, y) in at.items():
        ax.text(x, y, label(v), ha="center", va="center", fontsize="small", zorder=4)
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    pad = np.maximum(0.2 * (hi - lo).max(initial=0.0), 0.3)
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.set_aspect("equal", adjustable="box")
    ax.axis("off")
    n = len(rows)
    ax.set_title(f"causal network: {n} link{'s' if n != 1 else ''}")
    if lag_labels and lag is not None and n:
        alpha = num(ds.attrs.get("alpha", np.nan))
        ax.text(0.0, 0.0, f"labels: driver lag Tp; width: rho (alpha={alpha})",
                transform=ax.transAxes, fontsize="x-small", color="0.4")
    return ax
