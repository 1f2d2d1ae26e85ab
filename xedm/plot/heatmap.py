"""The (library, target) causal map: cross-map skill as a heatmap, significance, known links,
the links and undetermined pairs of a causal network.

Direction (docs/conventions.md): a high cross-map skill at ``(library=x, target=y)`` is
evidence that **y causes x**.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ._base import (
    finish,
    label,
    legend_below,
    new_axes,
    num,
    p_floor,
    params,
    variable,
    wrap,
)
from .style import active_width, min_font


def cluster_order(values: np.ndarray) -> np.ndarray:
    """Leaf order of average-linkage clustering of the series by their cross-map skill
    (distance ``1 - (rho + rho.T) / 2``, NaN as no skill), the same order for rows and columns.

    Examples
    --------
    >>> import numpy as np
    >>> rho = np.array([[1, .1, .9], [.1, 1, .1], [.9, .1, 1.]])
    >>> sorted(cluster_order(rho).tolist()) == [0, 1, 2]
    True
    """
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    r = np.nan_to_num(np.asarray(values, dtype=float), nan=0.0)
    d = 1.0 - (r + r.T) / 2.0
    np.fill_diagonal(d, 0.0)
    d = np.clip(d, 0.0, None)
    if len(d) < 3:
        return np.arange(len(d))
    return leaves_list(linkage(squareform(d, checks=False), method="average"))


def _tick_names(da: xr.DataArray, dim: str, chars: int = 24) -> list[str]:
    """Tick labels of ``dim``: the labels, with the E of each series when ``E`` is a
    coordinate along ``dim`` (as xmap's is along ``target``, ccm's along ``library``)."""
    names = [label(v) for v in da[dim].values]
    E = da.coords.get("E")
    if E is not None and E.dims == (dim,):
        names = [f"{n} (E={num(e)})" for n, e in zip(names, E.values, strict=True)]
    chars = max(8, min(chars, 24))
    out = []
    for n in names:  # two lines at most (one beyond 10 series), cut in the middle with …
        if len(names) > 10 or len(wrap(n, chars).split("\n")) > 2:
            room = chars * (1 if len(names) > 10 else 2) - 1
            tail = 5 if n.endswith(")") else 3
            n = n if len(n) <= room else n[:room - tail] + "…" + n[-tail:]
        out.append(wrap(n, chars))
    return out


def _annotate_cells(ax, im, values: np.ndarray, marks: np.ndarray, low: bool) -> None:
    """Each cell's value (2 decimals) and its significance mark, black or white by the
    cell's colour (in the lower part of the cell when ``low``: a dot marks the centre)."""
    n = max(values.shape)
    size = max(min_font(), min(110 / max(n, 1), ax.title.get_fontsize()))
    for (i, j), v in np.ndenumerate(values):
        if not np.isfinite(v):
            continue
        r, g, b, _ = im.cmap(im.norm(v))
        ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
        ax.text(j, i + (0.28 if low else 0.0), f"{v:.2f}{marks[i, j]}", ha="center",
                va="center", color=ink, fontsize=size)


SIG_COLOUR = "#D55E00"  # vermilion (Okabe-Ito): seen on every colour of viridis


def _floor_note(attrs: dict, alpha: float) -> str:
    """A note when the surrogates cannot give a p-value under ``alpha``."""
    floor = p_floor(attrs)
    if floor is None or floor < alpha:
        return ""
    return f"; none can be: p ≥ 1/{round(1 / floor)} with {attrs['surrogates']} surrogates"


def _annotated(annotate, values) -> bool:
    return bool(annotate or (annotate is None and max(values.shape) <= 10))


def _cells(ax, rows, cols, gid: str, inset: float, label: str, **style):
    """Outlines (or hatching) of the cells ``(rows, cols)``: one PatchCollection whose gid
    says what it marks (sized with the cells, at any number of series)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    side = 1.0 - 2 * inset
    boxes = [Rectangle((c - 0.5 + inset, r - 0.5 + inset), side, side)
             for r, c in zip(rows, cols, strict=True)]
    coll = PatchCollection(boxes, facecolor="none", zorder=3, label=label, **style)
    coll.set_gid(gid)
    ax.add_collection(coll, autolim=False)
    return coll


def _key(handle):
    """A legend key that looks like the mark ``handle`` draws."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if isinstance(handle, Line2D):
        return Line2D([], [], linestyle="none", marker=handle.get_marker(), markersize=6,
                      markerfacecolor=handle.get_markerfacecolor(),
                      markeredgecolor=handle.get_markeredgecolor(), label=handle.get_label())
    return Patch(facecolor=handle.get_facecolor()[0] if len(handle.get_facecolor()) else "none",
                 edgecolor=handle.get_edgecolor()[0], hatch=handle.get_hatch(),
                 lw=max(float(handle.get_linewidth()[0]), 0.8), label=handle.get_label())


def causal_map(
    ds: xr.Dataset | xr.DataArray,
    *,
    var: str = "rho",
    ax=None,
    truth: xr.DataArray | None = None,
    order: str | None = None,
    mask_diagonal: bool = True,
    alpha: float = 0.05,
    cmap: str = "viridis",
    colorbar: bool = True,
    annotate: bool | None = None,
    links: xr.DataArray | None = None,
    undetermined: xr.DataArray | None = None,
    **kwargs: Any,
):
    """Heatmap of cross-map skill: rows are the library (effect), columns the target (cause).

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.xmap` (or of :func:`xedm.ccm`, drawn at its largest
        ``lib_size``): ``rho`` over ``(library, target)``.  When the Dataset has ``q_value``
        (else ``p_value``) over ``(library, target)``, cells below ``alpha`` are outlined in
        vermilion (and marked ``*`` when annotated); the legend says so when the number of
        surrogates (``attrs["surrogates"]``) cannot give a p-value under ``alpha``.  The E of
        each series (the coordinate ``E``) is shown beside its name.
    var : str, default "rho"
    ax : matplotlib Axes, optional
    truth : DataArray, optional
        Known links as a boolean ``(driver, driven)`` array, such as ``adjacency`` from
        :func:`xedm.datasets.many_series`; each link ``driver → driven`` is marked with a
        white dot at ``(library=driven, target=driver)`` (in the cell's upper left corner,
        beside the significance outline).
    order : {None, "cluster"}, optional
        "cluster": rows and columns in the leaf order of :func:`cluster_order` (needs the same
        series as library and target).
    mask_diagonal : bool, default True
        Leave ``library == target`` cells blank.
    alpha : float, default 0.05
        Significance level of the outlined cells.
    cmap : str, default "viridis"
    colorbar : bool, default True
    annotate : bool, optional
        Write each cell's value (and ``*`` when significant) in it.  Default: for maps of at
        most 10 series a side.
    links : DataArray, optional
        Boolean ``(library, target)`` cells outlined in black, such as a causal network's
        ``link`` (``network(net, kind="matrix")`` passes it):
        ``plot.causal_map(net, links=net.link)``.
    undetermined : DataArray, optional
        Boolean ``(library, target)`` cells hatched grey: pairs the data cannot decide
        (a causal network's ``undetermined``):
        ``plot.causal_map(net, undetermined=net.undetermined)``.
    **kwargs
        Passed to ``Axes.imshow``.

    Returns
    -------
    matplotlib.axes.Axes
        The legend of the marks (significance, known links) lies under the axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, xarray as xr
    >>> from xedm import plot
    >>> rho = xr.DataArray(np.eye(3) * 0.5 + 0.2, dims=("library", "target"),
    ...                    coords={"library": [0, 1, 2], "target": [0, 1, 2]}, name="rho")
    >>> ax = plot.causal_map(rho)
    >>> ax.get_ylabel(), [t.get_text() for t in ax.texts][:2]
    ('library (effect)', ['0.20', '0.20'])
    """
    da = variable(ds, var)
    if "lib_size" in da.dims:
        da = da.isel(lib_size=-1)
    extra = [d for d in da.dims if d not in ("library", "target")]
    if extra or da.ndim != 2:
        raise ValueError(f"causal_map() needs {var}(library, target); got dims {da.dims}")
    if order not in (None, "cluster"):
        raise ValueError(f"order={order!r}: use None or 'cluster'")
    if annotate not in (None, True, False):
        raise TypeError(f"annotate must be True, False or None (automatic), got {annotate!r}")
    da = da.transpose("library", "target")
    sig = None
    if isinstance(ds, xr.Dataset):
        for name in ("q_value", "p_value"):
            if name in ds:
                p = ds[name].isel(lib_size=-1) if "lib_size" in ds[name].dims else ds[name]
                if set(p.dims) == {"library", "target"}:
                    sig = (name, p.transpose("library", "target"))
                    break
    if order == "cluster":
        if not np.array_equal(da["library"].values, da["target"].values):
            raise ValueError("order='cluster' needs the same series as library and target")
        idx = cluster_order(da.values)
        da = da.isel(library=idx, target=idx)
        if sig is not None:
            sig = (sig[0], sig[1].isel(library=idx, target=idx))
    values = np.array(da.values, dtype=float)
    libs, tgts = da["library"].values, da["target"].values
    if mask_diagonal:
        for i, lib in enumerate(libs):
            values[i, tgts == lib] = np.nan
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties

    # names at most about a quarter of the figure's width, so that the cells keep the rest;
    # a figure of the view's own tall enough for every row's name at its size
    w, h = mpl.rcParams["figure.figsize"]
    w = active_width() or (w if ax is None else ax.figure.get_figwidth())
    tick_pt = FontProperties(size=mpl.rcParams["ytick.labelsize"]).get_size_in_points()
    chars = int(0.27 * w * 72 / (0.58 * tick_pt))
    yt = _tick_names(da, "library", chars) if len(libs) <= 30 else None
    xt = _tick_names(da, "target", chars) if len(tgts) <= 30 else None
    if ax is None:
        lines = max((t.count("\n") + 1 for t in yt or ["x"]), default=1)
        longest = max((len(s) for t in xt or ["x"] for s in t.split("\n")), default=1)
        need = (len(libs) * lines * 1.3 * tick_pt + longest * 0.6 * tick_pt + 130) / 72
        ax = new_axes(None, figsize=(w, max(h, 0.9 * w, need)))
    ax = new_axes(ax)
    kwargs.setdefault("interpolation", "nearest")
    im = ax.imshow(values, cmap=cmap, aspect="auto", **kwargs)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=f"cross-map skill {var}")
    if yt is not None:
        ax.set_yticks(range(len(libs)), yt)
    if xt is not None:
        long = sum(len(max(t.split("\n"), key=len)) for t in xt) > 60
        ax.set_xticks(range(len(tgts)), xt, rotation=90 if long else 0)
    ax.set_ylabel("library (effect)")
    ax.set_xlabel("target (cause)")
    marks = np.full(values.shape, "", dtype=object)
    handles = []
    if sig is not None:
        name, p = sig
        rows, cols = np.nonzero(np.asarray(p.values) < alpha)
        keep = libs[rows] != tgts[cols]
        marks[rows[keep], cols[keep]] = "*"
        what = name.replace("_", "-")
        handles.append(_cells(ax, rows[keep], cols[keep], "significant", inset=0.1,
                              edgecolor=SIG_COLOUR, lw=1.4,
                              label=f"{what} < {num(alpha)} (outlined"
                                    + (", *)" if _annotated(annotate, values) else ")")
                                    + _floor_note(ds.attrs, alpha)))
    for key, cells, style in (("links", links, {"edgecolor": "black", "lw": 2.0}),
                              ("undetermined", undetermined,
                               {"edgecolor": "0.45", "hatch": "////", "lw": 0.0})):
        if cells is None:
            continue
        on = cells.transpose("library", "target").sel(library=libs, target=tgts).values
        rows, cols = np.nonzero(np.asarray(on, bool))
        keep = libs[rows] != tgts[cols]
        handles.append(_cells(ax, rows[keep], cols[keep], key, inset=0.0 if key == "links"
                              else 0.02, label={"links": "link (direct)",
                                                "undetermined": "undetermined"}[key],
                              **style))
    if truth is not None:
        if not (isinstance(truth, xr.DataArray) and set(truth.dims) == {"driver", "driven"}):
            raise TypeError("truth must be a boolean DataArray over (driver, driven), such as "
                            "xedm.datasets.many_series(...).adjacency; got "
                            f"{type(truth).__name__}")
        known = truth.transpose("driver", "driven")
        rows, cols = [], []
        for driver, driven in zip(*np.nonzero(known.values), strict=True):
            r = np.flatnonzero(libs == known["driven"].values[driven])
            c = np.flatnonzero(tgts == known["driver"].values[driver])
            if r.size and c.size:
                rows.append(r[0])
                cols.append(c[0])
        # a dot in the cell's upper left corner: the outline of a significant cell and the
        # cell's value stay visible beside it
        shift = 0.22 if len(libs) <= 30 else 0.0
        (dots,) = ax.plot(np.array(cols, float) - shift, np.array(rows, float) - shift, "o",
                          color="white", markeredgecolor="black", markeredgewidth=0.8,
                          markersize=float(np.clip(60 / max(len(libs), 1), 2.5, 5)),
                          linestyle="none", label="known link (driver → driven)")
        handles.append(dots)
    if _annotated(annotate, values):
        _annotate_cells(ax, im, values, marks, low=truth is not None)
    made = ds.attrs.get("xedm_function", "")
    pars = params(ds.attrs, ("E", "tau", "Tp"))
    ax.set_title(("causal map" + (f" ({made})" if made else "")) + (f": {pars}" if pars else ""))
    if handles:  # the legend of the marks, under the axes, never on the cells or the title
        legend_below(ax, [_key(h) for h in handles])
    return finish(ax)
