"""The view of a :func:`xedm.causal_network` result: the network drawn as a graph (series on
a circle, linked series side by side, curved arrows ``driver → driven`` coloured by the
driver's lag, undetermined pairs dashed) or as the matrix of cross-map skill with the links
outlined and the undetermined pairs hatched."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import xarray as xr

from ._base import finish, label, legend_below, new_axes, num, renderer
from .style import OKABE_ITO, active_width, min_font

#: the most series an edge-list result is drawn with (as matrices of N^2 pairs)
MAX_DRAWN = 2000

_UNDETERMINED = "0.55"  # grey of the undetermined pairs (graph and matrix)
_GAP = 0.6  # slots left empty between two groups of the circle


def groups(linked: np.ndarray) -> list[list[int]]:
    """The series in groups for the circle: each group a set of series joined by links (in
    reverse Cuthill-McKee order, so linked series sit near each other), the largest first,
    the series without a link last in one group.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((5, 5), bool); a[0, 3] = a[3, 4] = True
    >>> [sorted(g) for g in groups(a)]
    [[0, 3, 4], [1, 2]]
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee

    sym = np.asarray(linked, bool) | np.asarray(linked, bool).T
    np.fill_diagonal(sym, False)
    _, comp = connected_components(csr_matrix(sym), directed=False)
    out, alone = [], []
    for c in np.unique(comp):
        members = np.flatnonzero(comp == c)
        if len(members) == 1:
            alone.append(int(members[0]))
            continue
        sub = csr_matrix(sym[np.ix_(members, members)].astype(np.int8))
        order = reverse_cuthill_mckee(sub, symmetric_mode=True)
        out.append([int(m) for m in members[order]])
    out.sort(key=lambda g: (-len(g), g[0]))
    return out + ([alone] if alone else [])


def _layout(n: int, layout, labels, linked) -> tuple[np.ndarray, int]:
    """(n, 2) node positions and the number of slots of the circle (0: not a circle)."""
    if isinstance(layout, dict):
        try:
            return np.array([layout[v] for v in labels], float), 0
        except KeyError as err:
            raise ValueError(f"layout has no position for series {err.args[0]!r}") from None
    if layout in ("grouped", "circular"):
        slot = np.arange(n, dtype=float)
        total = float(n)
        if layout == "grouped":
            order = groups(linked)
            slot = np.empty(n)
            at = 0.0
            for k, g in enumerate(order):
                if k and len(order) > 1:
                    at += _GAP
                for m in g:
                    slot[m] = at
                    at += 1
            total = at + (_GAP if len(order) > 1 else 0.0)
        a = np.pi / 2 - 2 * np.pi * slot / max(total, 1)
        return np.stack([np.cos(a), np.sin(a)], axis=1), int(np.ceil(total))
    if layout == "spring":
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(*np.nonzero(linked), strict=True))
        p = nx.spring_layout(g, seed=0)
        pos = np.array([p[i] for i in range(n)])
        return pos / max(np.abs(pos).max(), 1e-9), 0
    raise ValueError(f"layout={layout!r}: use 'grouped', 'circular', 'spring' or a dict "
                     "label -> (x, y)")


def _curve(src, dst, r_node: float, bend: float):
    """A quadratic Bézier path from ``src`` to ``dst`` bowed towards the centre (and to one
    side, so the two directions of a pair part), cut ``r_node`` short at both ends."""
    from matplotlib.path import Path

    src, dst = np.asarray(src, float), np.asarray(dst, float)
    d = dst - src
    length = float(np.hypot(*d)) or 1e-9
    side = np.array([d[1], -d[0]]) / length
    ctrl = (1 - bend) * (src + dst) / 2 + 0.12 * length * side
    t0 = min(0.45, r_node / length)
    t1 = 1 - t0

    def at(t):
        return (1 - t) ** 2 * src + 2 * (1 - t) * t * ctrl + t**2 * dst

    mid = ((1 - t0) * (1 - t1) * src + ((1 - t0) * t1 + t0 * (1 - t1)) * ctrl
           + t0 * t1 * dst)
    return Path([at(t0), mid, at(t1)], [Path.MOVETO, Path.CURVE3, Path.CURVE3])


def _short(name: str, width_pt: float, fs: float, r) -> str:
    """``name`` cut (``…`` in the middle, the end kept) to at most ``width_pt`` points."""
    from matplotlib.font_manager import FontProperties

    prop = FontProperties(size=fs)
    to_pt = 72.0 / r.dpi if hasattr(r, "dpi") else 1.0

    def wide(s: str) -> float:
        return r.get_text_width_height_descent(s, prop, ismath=False)[0] * to_pt

    if wide(name) <= width_pt:
        return name
    tail = 3 if len(name) > 12 else 0
    for k in range(len(name) - 1, 1, -1):
        s = name[:max(1, k - tail)] + "…" + (name[-tail:] if tail else "")
        if wide(s) <= width_pt or k <= 3:
            return s
    return name[:1] + "…"


def _lag_colours(lags: np.ndarray) -> dict:
    values = sorted(set(int(v) for v in lags))
    if len(values) <= len(OKABE_ITO):
        return {v: OKABE_ITO[k] for k, v in enumerate(values)}
    import matplotlib as mpl

    cmap = mpl.colormaps["cividis"]
    return {v: cmap(k / max(len(values) - 1, 1)) for k, v in enumerate(values)}


def network(
    ds: xr.Dataset,
    *,
    kind: str = "graph",
    ax=None,
    layout: Any = "grouped",
    lag_labels: bool = False,
    max_width: float | None = None,
    **kwargs: Any,
):
    """Draw a :func:`xedm.causal_network` result.

    Parameters
    ----------
    ds : Dataset
        A result of :func:`xedm.causal_network` (``link``, ``rho``, ``driver_Tp`` over
        ``(library, target)``; ``undetermined``, the pairs the data cannot decide, drawn
        apart when the result has it).
    kind : {"graph", "matrix"}
        ``"graph"``: every series a node on a circle, every link ``driver → driven`` a
        curved arrow whose width grows with ``rho`` and whose colour is the driver's lag
        ``Tp`` (one legend under the graph), undetermined pairs as dashed grey lines;
        ``"matrix"``: the cross-map skill as :func:`xedm.plot.causal_map` draws it (its
        significance marks included), the links outlined, the undetermined pairs hatched.
    ax : matplotlib Axes, optional
    layout : {"grouped", "circular", "spring"} or dict
        Node positions: ``"grouped"`` (default) a circle with the series joined by links
        side by side (``groups`` below), a gap between groups; ``"circular"`` the result's
        order; ``"spring"`` a force-directed layout (needs networkx); or label -> (x, y).
        On a circle the names stand outside it, turned along the radius beyond 8 series,
        sized to stay apart and cut (``…``) to fit.
        ``net.edm.plot(layout="circular")``.
    lag_labels : bool, default False
        Also write each link's lag at its middle (the colour shows it already; for a
        handful of links printed in grey).  ``net.edm.plot(lag_labels=True)``.
    max_width : float, optional
        Line width of the strongest link (rho = 1); default 2.5 up to 30 series, less
        beyond.
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
    >>> ax = net.edm.plot(kind="matrix")
    """
    if not isinstance(ds, xr.Dataset) or "link" not in ds:
        raise TypeError("network() draws the Dataset of xedm.causal_network (with link over "
                        f"(library, target)), got {type(ds).__name__}")
    if "edge" in ds.dims:  # an edge list (result="edges"): its matrices, when drawable
        if ds.sizes.get("series", 0) > MAX_DRAWN:
            raise ValueError(f"network() draws up to {MAX_DRAWN} series; this edge list has "
                             f"{ds.sizes.get('series')}: select the links to draw "
                             "(ds.where(ds.link, drop=True)) or export them with "
                             "ds.edm.to_networkx()")
        from ..labeled.network_result import to_dense

        ds = to_dense(ds)
    if kind == "matrix":
        from .heatmap import causal_map

        keep = [v for v in ("rho", "q_value", "p_value") if v in ds]
        return causal_map(ds[keep].assign_attrs(ds.attrs), ax=ax, links=ds.link,
                          undetermined=ds.get("undetermined"), **kwargs)
    if kind != "graph":
        raise ValueError(f"kind={kind!r}: use 'graph' or 'matrix'")
    if kwargs:
        raise TypeError(f"network(kind='graph') takes no {sorted(kwargs)}")
    link = ds.link.transpose("library", "target")
    libs, tgts = link.library.values, link.target.values
    nodes = list(dict.fromkeys([*libs.tolist(), *tgts.tolist()]))
    index = {v: k for k, v in enumerate(nodes)}
    n = len(nodes)
    und = (ds["undetermined"].transpose("library", "target").values.astype(bool)
           if "undetermined" in ds else np.zeros(link.shape, bool))
    lk = link.values.astype(bool)
    und &= ~lk
    edges = np.zeros((n, n), bool)  # (driver, driven) in node numbers
    for i, j in zip(*np.nonzero(lk), strict=True):
        edges[index[tgts[j]], index[libs[i]]] = True
    pos, slots = _layout(n, layout, nodes, edges)
    circle = slots > 0
    own = ax is None
    if own:
        w = active_width() or 6.4
        ax = new_axes(None, figsize=(w, w * (1.08 if w < 5 else 1.0)))
    rho = np.asarray(ds.rho.transpose("library", "target").values, float)
    # the delay of the predictive test (steps) where the result has one, else the cross
    # map's driver lag Tp
    lag_var = "lag" if "lag" in ds else "driver_Tp" if "driver_Tp" in ds else None
    lag = (np.asarray(ds[lag_var].transpose("library", "target").values)
           if lag_var else None)
    rows, cols = np.nonzero(lk)
    colours = _lag_colours(lag[rows, cols]) if lag is not None and len(rows) else {}
    if max_width is None:
        max_width = 2.5 if n <= 30 else 1.6
    r_node = float(np.clip(0.5 * np.pi / max(slots, n, 1), 0.012, 0.06))
    from matplotlib.patches import Circle, FancyArrowPatch

    for i, j in zip(*np.nonzero(und), strict=True):
        path = _curve(pos[index[tgts[j]]], pos[index[libs[i]]], r_node, 0.45)
        ax.add_patch(FancyArrowPatch(path=path, arrowstyle="-", lw=0.8, linestyle=(0, (3, 2)),
                                     color=_UNDETERMINED, zorder=1))
    order = np.argsort(rho[rows, cols])  # strongest on top
    for i, j in zip(rows[order], cols[order], strict=True):
        src, dst = pos[index[tgts[j]]], pos[index[libs[i]]]
        width = 0.5 + (max_width - 0.5) * float(np.clip(rho[i, j], 0, 1))
        colour = colours.get(int(lag[i, j]), OKABE_ITO[0]) if lag is not None else OKABE_ITO[0]
        ax.add_patch(FancyArrowPatch(
            path=_curve(src, dst, r_node * 1.15, 0.45), arrowstyle="-|>", lw=width,
            color=colour, mutation_scale=5 + 2.5 * width, alpha=0.9 if n <= 30 else 0.6,
            zorder=2))
        if lag_labels and lag is not None:
            mid = _curve(src, dst, 0, 0.45).vertices[1] * 0.5 + (src + dst) / 4
            ax.text(*mid, f"{int(lag[i, j])}", fontsize=max(min_font(), 6), ha="center",
                    va="center", color="0.3", zorder=4)
    degree = edges.sum(0) + edges.sum(1)
    for k, (x, y) in enumerate(pos):
        ax.add_patch(Circle((x, y), r_node, facecolor="white" if degree[k] else "0.85",
                            edgecolor="black", lw=0.6, zorder=3))
    ax.set_aspect("equal", adjustable="datalim" if not circle else "box")
    ax.axis("off")
    nl, nu = len(rows), int(und.sum())
    title = f"causal network: {nl} link{'s' if nl != 1 else ''}"
    if nu:
        title += f", {nu} undetermined"
    ax.set_title(title)
    _legend(ax, ds, colours, nu, max_width, lag_var)
    _names(ax, pos, nodes, circle, slots, r_node)
    return finish(ax)


def _legend(ax, ds, colours: dict, n_und: int, max_width: float, lag_var) -> None:
    """One legend under the graph: the lag colours, the widths of rho, undetermined."""
    from matplotlib.lines import Line2D

    has_lag = lag_var is not None
    label = "delay {}" if lag_var == "lag" else "Tp = {}"
    handles = [Line2D([], [], color=c, lw=2, label=label.format(v))
               for v, c in colours.items()]
    if not has_lag:
        handles = [Line2D([], [], color=OKABE_ITO[0], lw=2, label="link")]
    for value in (0.5, 1.0):
        handles.append(Line2D([], [], color="0.2", lw=0.5 + (max_width - 0.5) * value,
                              label=f"ρ = {num(value)}"))
    if n_und:
        handles.append(Line2D([], [], color=_UNDETERMINED, lw=0.8, linestyle=(0, (3, 2)),
                              label="undetermined"))
    alpha = ds.attrs.get("alpha")
    what = ("delay in steps (colour), skill (width)" if lag_var == "lag" else
            "lag Tp (colour), skill (width)" if has_lag else "skill (width)")
    legend_below(ax, handles, title=what + (f"; links: q < {num(alpha)}"
                                            if alpha is not None else ""))


def _names(ax, pos, nodes, circle: bool, slots: int, r_node: float) -> None:
    """The series' names beside their nodes: on a circle outside it (turned along the
    radius beyond 8 series), sized so that neighbours stay apart, cut to fit the axes;
    the limits set so that every name lies inside them."""
    fig = ax.figure
    fig.draw_without_rendering()  # the layout engine has placed the axes
    r = renderer(fig)
    box = ax.get_window_extent(r)
    to_pt = 72.0 / fig.dpi
    half = 0.5 * min(box.width, box.height) * to_pt - 2.0  # points from the centre
    fmin = min_font()
    base = max(fmin, ax.title.get_fontsize() * 0.85)
    n = len(nodes)
    if not circle:
        lim = 1.0 + 4 * r_node
        for (x, y), v in zip(pos, nodes, strict=True):
            ax.text(x, y + 1.6 * r_node, label(v), ha="center", va="bottom",
                    fontsize=max(fmin, base), zorder=4)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        return
    radial = n > 8
    # the names' fontsize: neighbours one line height apart at the circle's radius
    fs = base
    if radial:
        need = lambda f: slots * 1.25 * f / (2 * np.pi)  # noqa: E731  radius in points
        if need(fs) > 0.75 * half:
            fs = 0.75 * half * 2 * np.pi / (1.25 * slots)
        if fs < fmin - 1e-9:
            warnings.warn(f"a network of {n} series at this size has names under "
                          f"{fmin:g} pt: draw it wider (width='double') or on a larger axes",
                          UserWarning, stacklevel=3)
            fs = fmin
        from matplotlib.font_manager import FontProperties

        prop = FontProperties(size=fs)
        longest = max(r.get_text_width_height_descent(label(v), prop, ismath=False)[0]
                      for v in nodes) * to_pt
        # as large a circle as the longest name leaves (names are cut beyond a fifth)
        radius = max(need(fs), 0.38 * half, min(0.8 * half, half - longest - 8.0))
    else:
        radius = 0.5 * half
    room = half - radius * (1 + 2.2 * r_node) - 2.0  # points left for a name
    if not radial:
        room *= 2  # a name sideways has the width beside the circle
    lim = half / radius  # data units: the circle has radius 1
    gap = 1 + 2.2 * r_node
    texts = []
    for (x, y), v in zip(pos, nodes, strict=True):
        a = np.arctan2(y, x)
        right = np.cos(a) >= -1e-9
        name = _short(label(v), max(room, 12.0), fs, r)
        if radial:
            rot = np.degrees(a) if right else np.degrees(a) + 180
            t = ax.text(gap * x, gap * y, name, rotation=rot, rotation_mode="anchor",
                        ha="left" if right else "right", va="center", fontsize=fs, zorder=4)
        else:
            ha = "center" if abs(np.cos(a)) < 0.2 else ("left" if right else "right")
            va = "center" if abs(np.sin(a)) < 0.5 else ("bottom" if y > 0 else "top")
            t = ax.text(gap * x, gap * y, name, ha=ha, va=va, fontsize=fs, zorder=4)
        t.set_in_layout(False)  # placed inside the limits here, not by the layout engine
        texts.append(t)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    if not radial:  # sideways names may need a wider view: grow the limits to hold them
        fig.draw_without_rendering()
        inner = ax.get_window_extent(r)
        for _ in range(3):
            out = max(max(inner.x0 - t.get_window_extent(r).x0, t.get_window_extent(r).x1
                          - inner.x1, inner.y0 - t.get_window_extent(r).y0,
                          t.get_window_extent(r).y1 - inner.y1) for t in texts)
            if out <= 0.5:
                break
            lim *= 1 + (out + 2) / (0.5 * min(inner.width, inner.height))
            ax.set_xlim(-lim, lim)
            ax.set_ylim(-lim, lim)
