"""Views of cross maps: CCM convergence and the (library, target) causal map.

Direction (docs/conventions.md): a high cross-map skill at ``(library=x, target=y)`` is
evidence that **y causes x**, drawn as ``y → x``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ._base import (
    axis_name,
    figure_grid,
    finish,
    fit_texts,
    label,
    new_axes,
    num,
    outside_legend,
    params,
    renderer,
    variable,
    wrap,
)


def arrow(library: Any, target: Any) -> str:
    """The causal arrow read from a cross-map skill at ``(library, target)``.

    Examples
    --------
    >>> arrow(library="x", target="y")
    'y → x'
    """
    return f"{label(target)} → {label(library)}"


def _pairs(da: xr.DataArray, pairs, include_self: bool):
    if pairs is not None:
        libs, tgts = list(da["library"].values), list(da["target"].values)
        try:
            out = [(lib, tgt) for lib, tgt in pairs]
        except (TypeError, ValueError):
            raise TypeError(f"pairs must be a list of (library, target) label pairs, got "
                            f"{pairs!r}") from None
        for lib, tgt in out:
            for value, name, valid in ((lib, "library", libs), (tgt, "target", tgts)):
                try:
                    known = value in valid
                except (TypeError, ValueError):
                    known = False
                if not known:
                    shown = [v.item() if isinstance(v, np.generic) else v for v in valid]
                    raise ValueError(f"pairs: {value!r} is not a {name} label of the result; "
                                     f"choose from {shown}")
        return out
    return [(lib, tgt) for lib in da["library"].values for tgt in da["target"].values
            if include_self or lib != tgt]


def _p_text(pvals, lib, tgt, digits: int = 2) -> str:
    """``"p = 0.01"`` of one pair (at the largest library size when ``p_value`` has one)."""
    one = pvals.sel(library=lib, target=tgt)
    if "lib_size" in one.dims:
        one = one.isel(lib_size=-1)
    if one.ndim:  # e.g. a Tp dim: no single p-value to show
        return ""
    return f"p = {num(one.item(), digits)}"


def _groups(todo: list) -> list[list]:
    """Directed pairs grouped by unordered pair (both directions of a pair in one group),
    in the order first met."""
    groups: dict = {}
    for lib, tgt in todo:
        key = frozenset((label(lib), label(tgt)))
        groups.setdefault(key, []).append((lib, tgt))
    return list(groups.values())


def _panel_legend(ax, group: list) -> None:
    """A panel's title (the pair of series) and the legend of its directions, inside."""
    a, b = group[0]
    ax.set_title(wrap(f"{label(a)} ↔ {label(b)}" if a != b else label(a), 34),
                 fontsize="medium")
    ax.legend(loc="best", fontsize="small", frameon=True, framealpha=0.8, handlelength=1.5,
              borderaxespad=0.3)


def _pairs_figure(todo, draw, *, ax, fig, panels: bool, xlabel: str, ylabel: str, title: str,
                  suptitle: str | None = None):
    """``draw(axes, library, target, single)`` of each pair: all on one Axes (a legend
    beside it), or one panel per pair of series (:func:`figure_grid`, a legend in each)."""
    if not panels:
        ax = new_axes(ax)
        for lib, tgt in todo:
            draw(ax, lib, tgt, True)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        outside_legend(ax, title="cause → effect")
        return finish(ax)
    groups = _groups(todo)
    fig, axes = figure_grid(len(groups), fig)
    for one_ax, group in zip(axes, groups, strict=True):
        for lib, tgt in group:
            draw(one_ax, lib, tgt, False)
        _panel_legend(one_ax, group)
    fig.suptitle(suptitle or title)
    fig.supxlabel(xlabel)
    fig.supylabel(ylabel)
    return fit_texts(fig)


def ccm_convergence(
    ds: xr.Dataset | xr.DataArray,
    *,
    var: str = "rho",
    ax=None,
    fig=None,
    pairs=None,
    include_self: bool = False,
    band: tuple[float, float] = (0.05, 0.95),
    null: bool = True,
    panels: bool | None = None,
    **kwargs: Any,
):
    """Plot cross-map skill against library size, one line per direction ``target → library``.

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.ccm`: ``rho`` over ``(library, target, lib_size)``.  The spread
        over random libraries is shaded between the ``band`` quantiles when the result has
        ``rho_sample`` (``keep_samples=True``) or ``rho`` itself has a ``sample`` dim.  When
        the Dataset has ``rho_null`` over a ``quantile`` dim (a surrogate null distribution)
        the band between its lowest and highest quantile is drawn dashed, and each line's
        label gains its ``p_value`` (at the largest library size when ``p_value`` has a
        ``lib_size`` dim, as :func:`xedm.ccm`'s has).
    var : str, default "rho"
    ax : matplotlib Axes, optional
        Draw every pair on this Axes (one panel).
    fig : matplotlib Figure, optional
        Draw the panels on this figure (cleared first).
    pairs : list of (library, target), optional
        The pairs drawn (default: every ordered pair of distinct series, i.e. both directions).
    include_self : bool, default False
        Also draw ``library == target`` pairs.
    band : (float, float), default (0.05, 0.95)
        Quantiles of the shaded band over samples.
    null : bool, default True
        Draw the surrogate band and p-values when the result has them.
    panels : bool, optional
        Small multiples: one panel per pair of series (both directions in it, each with its
        p-value), all panels sharing both axes.  Default: panels when there are more than
        two directions to draw and no ``ax`` is given.
    **kwargs
        Passed to ``Axes.plot``.

    Returns
    -------
    matplotlib.axes.Axes, or matplotlib.figure.Figure with ``panels``

    Notes
    -----
    A line labelled ``y → x`` shows ``rho(library=x, target=y)``: how well x's shadow
    manifold recovers y, which grows with library size when **y causes x**.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, xarray as xr
    >>> from xedm import plot
    >>> rho = xr.DataArray(np.random.default_rng(0).random((2, 2, 4)),
    ...                    dims=("library", "target", "lib_size"),
    ...                    coords={"library": ["x", "y"], "target": ["x", "y"],
    ...                            "lib_size": [10, 20, 40, 80]}, name="rho")
    >>> ax = plot.ccm_convergence(rho.to_dataset())
    >>> sorted(t.get_text() for t in ax.get_legend().get_texts())
    ['x → y', 'y → x']
    >>> rho3 = xr.DataArray(np.random.default_rng(0).random((3, 3, 2)),
    ...                     dims=("library", "target", "lib_size"),
    ...                     coords={"library": list("abc"), "target": list("abc"),
    ...                             "lib_size": [10, 80]}, name="rho")
    >>> fig = plot.ccm_convergence(rho3)  # three pairs of series: three panels
    >>> [a.get_title() for a in fig.axes]
    ['a ↔ b', 'a ↔ c', 'b ↔ c']
    """
    da = variable(ds, var)
    for d in ("library", "target", "lib_size"):
        if d not in da.dims:
            raise ValueError(f"ccm_convergence() needs a {d!r} dim; {var} has {da.dims}")
    if ax is not None and fig is not None:
        raise ValueError("give ax= (one panel) or fig= (the panels), not both")
    is_ds = isinstance(ds, xr.Dataset)
    samples = None
    if "sample" in da.dims:
        samples, da = da, da.mean("sample")
    elif is_ds and f"{var}_sample" in ds:
        samples = ds[f"{var}_sample"]
    nulls = ds.get(f"{var}_null") if is_ds and null else None
    if nulls is not None and "quantile" not in nulls.dims:
        nulls = None
    pvals = ds.get("p_value") if is_ds and null else None
    todo = _pairs(da, pairs, include_self)
    if panels is None:
        panels = ax is None and len(todo) > 2
    sizes = da["lib_size"].values
    q = nulls["quantile"].values if nulls is not None else None

    def draw(axes, lib, tgt, single: bool):
        name = arrow(lib, tgt)
        p = _p_text(pvals, lib, tgt) if pvals is not None else ""
        shown = wrap(f"{name} ({p})" if p else name, 32)
        (line,) = axes.plot(sizes, da.sel(library=lib, target=tgt).values, marker="o",
                            ms=4 if panels else 6, label=shown, **kwargs)
        if samples is not None:
            one = samples.sel(library=lib, target=tgt)
            lo = one.quantile(band[0], dim="sample").values
            hi = one.quantile(band[1], dim="sample").values
            axes.fill_between(sizes, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        if nulls is not None:
            one = nulls.sel(library=lib, target=tgt)
            if "lib_size" not in one.dims:
                one = one.expand_dims(lib_size=sizes)
            lo = one.sel(quantile=q.min()).values
            hi = one.sel(quantile=q.max()).values
            axes.fill_between(sizes, lo, hi, facecolor=line.get_color(), alpha=0.12,
                              edgecolor=line.get_color(), lw=0.8, linestyle="--",
                              label=wrap(f"surrogates {name} ({num(q.min(), 2)}–"
                                         f"{num(q.max(), 2)})", 32) if single else None)

    attrs = ds.attrs
    pars = params(attrs, ("E", "tau", "Tp", "samples"))
    title = "CCM convergence" + (f": {pars}" if pars else "")
    suptitle = title
    if nulls is not None:
        suptitle += (f"\nshaded dashed: surrogates' {num(q.min(), 2)}–{num(q.max(), 2)} "
                     "quantiles; p at the largest L")
    return _pairs_figure(todo, draw, ax=ax, fig=fig, panels=panels,
                         xlabel=axis_name(da, "lib_size"), ylabel=f"cross-map skill {var}",
                         title=title, suptitle=suptitle)


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


def _tick_names(da: xr.DataArray, dim: str) -> list[str]:
    """Tick labels of ``dim``: the labels, with the E of each series when ``E`` is a
    coordinate along ``dim`` (as xmap's is along ``target``, ccm's along ``library``)."""
    names = [label(v) for v in da[dim].values]
    E = da.coords.get("E")
    if E is not None and E.dims == (dim,):
        names = [f"{n} (E={num(e)})" for n, e in zip(names, E.values, strict=True)]
    return [wrap(n, 22) for n in names]


def _legend_below(ax, **kwargs: Any):
    """The legend of ``ax`` under its x tick labels and label, outside the axes (the offset
    is fixed in inches, so it holds when a layout engine resizes the axes)."""
    from matplotlib.transforms import ScaledTranslation

    fig = ax.figure
    r = renderer(fig)
    below = ax.get_window_extent(r).y0 - ax.xaxis.get_tightbbox(r).y0
    shift = ScaledTranslation(0, -(max(below, 0.0) / fig.dpi + 0.05), fig.dpi_scale_trans)
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     bbox_transform=ax.transAxes + shift, frameon=False, borderaxespad=0.0,
                     fontsize="small", **kwargs)


def _annotate_cells(ax, im, values: np.ndarray, marks: np.ndarray, low: bool) -> None:
    """Each cell's value (2 decimals) and its significance mark, black or white by the
    cell's colour (in the lower part of the cell when ``low``: a dot marks the centre)."""
    n = max(values.shape)
    size = float(np.clip(110 / max(n, 1), 5, 9))
    for (i, j), v in np.ndenumerate(values):
        if not np.isfinite(v):
            continue
        r, g, b, _ = im.cmap(im.norm(v))
        ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
        ax.text(j, i + (0.28 if low else 0.0), f"{v:.2f}{marks[i, j]}", ha="center",
                va="center", color=ink, fontsize=size)


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
    **kwargs: Any,
):
    """Heatmap of cross-map skill: rows are the library (effect), columns the target (cause).

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.xmap` (or of :func:`xedm.ccm`, drawn at its largest
        ``lib_size``): ``rho`` over ``(library, target)``.  When the Dataset has ``q_value``
        (else ``p_value``) over ``(library, target)``, cells below ``alpha`` are outlined
        (and marked ``*`` when annotated).  The E of each series (the coordinate ``E``) is
        shown beside its name.
    var : str, default "rho"
    ax : matplotlib Axes, optional
    truth : DataArray, optional
        Known links as a boolean ``(driver, driven)`` array, such as ``adjacency`` from
        :func:`xedm.datasets.many_series`; each link ``driver → driven`` is marked with a
        white dot at ``(library=driven, target=driver)``.
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
    ax = new_axes(ax)
    kwargs.setdefault("interpolation", "nearest")
    im = ax.imshow(values, cmap=cmap, aspect="auto", **kwargs)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=f"cross-map skill {var}")
    if len(libs) <= 30:
        ax.set_yticks(range(len(libs)), _tick_names(da, "library"))
    if len(tgts) <= 30:
        xt = _tick_names(da, "target")
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
        handles += ax.plot(cols[keep], rows[keep], "s", markerfacecolor="none",
                           markeredgecolor="C3", markeredgewidth=1.5,
                           markersize=max(3.0, 120 / max(len(libs), 1)), linestyle="none",
                           label=f"{name.replace('_', '-')} < {num(alpha)} (outlined, *)")
    if truth is not None:
        if not (isinstance(truth, xr.DataArray) and set(truth.dims) == {"driver", "driven"}):
            raise TypeError("truth must be a boolean DataArray over (driver, driven), such as "
                            "xedm.datasets.many_series(...).adjacency; got "
                            f"{type(truth).__name__}")
        links = truth.transpose("driver", "driven")
        rows, cols = [], []
        for driver, driven in zip(*np.nonzero(links.values), strict=True):
            r = np.flatnonzero(libs == links["driven"].values[driven])
            c = np.flatnonzero(tgts == links["driver"].values[driver])
            if r.size and c.size:
                rows.append(r[0])
                cols.append(c[0])
        handles += ax.plot(cols, rows, "o", color="white", markeredgecolor="black",
                           markersize=5, linestyle="none", label="known link (driver → driven)")
    if annotate or (annotate is None and max(values.shape) <= 10):
        _annotate_cells(ax, im, values, marks, low=truth is not None)
    made = ds.attrs.get("xedm_function", "")
    pars = params(ds.attrs, ("E", "tau", "Tp"))
    ax.set_title(("causal map" + (f" ({made})" if made else "")) + (f": {pars}" if pars else ""))
    if handles:  # the legend of the marks, under the axes, never on the cells or the title
        from matplotlib.lines import Line2D

        keys = [Line2D([], [], linestyle="none", marker=h.get_marker(), markersize=7,
                       markerfacecolor=h.get_markerfacecolor(),
                       markeredgecolor=h.get_markeredgecolor(), label=h.get_label())
                for h in handles]
        wide = sum(len(k.get_label()) for k in keys) > 40
        _legend_below(ax, handles=keys, ncol=1 if wide else len(keys))
    return finish(ax)


def lag_plot(
    ds: xr.Dataset | xr.DataArray,
    *,
    var: str = "rho",
    ax=None,
    fig=None,
    pairs=None,
    include_self: bool = False,
    lib_size=None,
    panels: bool | None = None,
    **kwargs: Any,
):
    """Cross-map skill against the lag ``Tp`` per pair: time-lagged (extended) CCM.

    A real driver's skill peaks at Tp <= 0 (the library's manifold recovers the cause's
    past best, Ye et al. 2015); a peak at Tp > 0 hints at a spurious link.  Each line's peak
    is marked, and the null band (``rho_null``'s lowest to highest quantile) is drawn when
    the result has one.

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.xmap` or :func:`xedm.ccm` with a list of Tp: ``rho`` over
        ``(library, target, Tp[, lib_size])``.
    var : str, default "rho"
    ax : matplotlib Axes, optional
    pairs : list of (library, target), optional
        The pairs drawn (default: every ordered pair of distinct series).
    include_self : bool, default False
    lib_size : int, optional
        For a ccm result: the library size drawn (default: the largest).
    fig : matplotlib Figure, optional
        Draw the panels on this figure (cleared first).
    panels : bool, optional
        One panel per pair of series (both directions in it), sharing both axes.  Default:
        panels when there are more than two directions to draw and no ``ax`` is given.
    **kwargs
        Passed to ``Axes.plot``.

    Returns
    -------
    matplotlib.axes.Axes, or matplotlib.figure.Figure with ``panels``

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> ds = xedm.datasets.coupled_logistic(300)
    >>> lagged = ds.edm.xmap(columns=["x", "y"], E=2, Tp=[-3, -2, -1, 0, 1])
    >>> ax = lag_plot(lagged)
    >>> ax.get_xlabel()
    'lag Tp (time steps)'
    """
    da = variable(ds, var)
    if "Tp" not in da.dims or not {"library", "target"} <= set(da.dims):
        raise ValueError(f"lag_plot() needs {var}(library, target, Tp): call xmap or ccm with "
                         f"a list of Tp (got dims {da.dims})")
    null = ds.get("rho_null") if isinstance(ds, xr.Dataset) else None
    if "lib_size" in da.dims:
        L = da["lib_size"].max().item() if lib_size is None else lib_size
        da = da.sel(lib_size=L)
        null = None if null is None else null.sel(lib_size=L)
    todo = _pairs(da, pairs, include_self)
    if panels is None:
        panels = ax is None and len(todo) > 2
    tp = da["Tp"].values

    def draw(axes, lib, tgt, single: bool):
        y = da.sel(library=lib, target=tgt).values
        (line,) = axes.plot(tp, y, marker="o", label=wrap(arrow(lib, tgt), 32), **kwargs)
        if np.isfinite(y).any():
            k = int(np.nanargmax(y))
            axes.plot([tp[k]], [y[k]], marker="*", ms=14, color=line.get_color(),
                      linestyle="none")
        if null is not None and "quantile" in null.dims:
            band = null.sel(library=lib, target=tgt)
            axes.fill_between(tp, band.isel(quantile=0).values, band.isel(quantile=-1).values,
                              color=line.get_color(), alpha=0.15, linewidth=0)
        axes.axvline(0, color="0.6", linewidth=0.8, linestyle=":")

    what = "extended CCM" if "lib_size" in variable(ds, var).dims else "extended cross map"
    title = f"{what}: skill vs lag (peak at Tp ≤ 0: a driver)"
    return _pairs_figure(todo, draw, ax=ax, fig=fig, panels=panels,
                         xlabel="lag Tp (time steps)", ylabel=axis_name(da, var), title=title)
