"""Views of cross maps against a parameter: CCM convergence (against the library size) and
the lag plot (against Tp); the (library, target) causal map is in heatmap.py.

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
    p_floor,
    p_text,
    params,
    short,
    under_ticks,
    variable,
    wrap,
)
from .style import min_font


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


def _p_text(pvals, lib, tgt, floor: float | None = None, digits: int = 2) -> str:
    """``"p = 0.01"`` of one pair (at the largest library size when ``p_value`` has one);
    ``"p ≤ 1/20"`` at the floor of the surrogates (:func:`p_text`)."""
    one = pvals.sel(library=lib, target=tgt)
    if "lib_size" in one.dims:
        one = one.isel(lib_size=-1)
    if one.ndim:  # e.g. a Tp dim: no single p-value to show
        return ""
    return p_text(one.item(), floor, digits)


def _groups(todo: list) -> list[list]:
    """Directed pairs grouped by unordered pair (both directions of a pair in one group),
    in the order first met."""
    groups: dict = {}
    for lib, tgt in todo:
        key = frozenset((label(lib), label(tgt)))
        groups.setdefault(key, []).append((lib, tgt))
    return list(groups.values())


def _side(ax, lib, tgt) -> str:
    """The direction ``tgt → lib`` read against the panel's title ``A ↔ B``: ``"A → B"`` is
    ``"→"``, ``"B → A"`` is ``"←"`` (the title is set before the lines are drawn)."""
    a, b = ax._xedm_pair
    if label(lib) == label(tgt):
        return "self"
    return "→" if (label(tgt), label(lib)) == (label(a), label(b)) else "←"


_SIDES = "→: the panel title's left series drives the right one; ←: the right drives the left"


def _panel_legend(ax, group: list) -> None:
    """The legend of a panel's directions (``→``/``←`` against its title) in one row under
    it, off the data."""
    size = max(min_font(), ax.title.get_fontsize() * 0.85)
    texts = ax.get_legend_handles_labels()[1]
    cell = ax.get_subplotspec().get_position(ax.figure).width * ax.figure.get_figwidth() * 72
    one_row = sum(len(t) * 0.6 * size + 3 * size for t in texts) < 0.85 * cell
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=under_ticks(ax),
              frameon=False, ncol=2 if one_row else 1, fontsize=size, handlelength=1.2,
              borderaxespad=0.0, columnspacing=0.8, handletextpad=0.4)


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
    ncols = axes[0].get_subplotspec().get_gridspec().ncols
    chars = int(max(12, min(34, fig.get_figwidth() / ncols * 72 * 0.85
                            / (0.55 * axes[0].title.get_fontsize()))))
    for one_ax, group in zip(axes, groups, strict=True):
        a, b = group[0]  # the title "a ↔ b"; "→" in the legend: a drives b
        one_ax._xedm_pair = (a, b)
        title = f"{label(a)} ↔ {label(b)}" if a != b else label(a)
        if a != b and len(wrap(title, chars).split("\n")) > 3:  # names cut, one line each
            title = f"{short(a, chars - 2)} ↔\n{short(b, chars)}"
        one_ax.set_title(wrap(title, chars),
                         fontsize="medium")
        for lib, tgt in group:
            draw(one_ax, lib, tgt, False)
        _panel_legend(one_ax, group)
    fig.suptitle((suptitle or title) + "\n" + _SIDES)
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
        ``lib_size`` dim, as :func:`xedm.ccm`'s has), written ``p ≤ 1/(n+1)`` (e.g.
        ``p ≤ 1/20``) at the smallest value ``n`` surrogates can give.
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
    floor = p_floor(ds.attrs) if is_ds else None
    todo = _pairs(da, pairs, include_self)
    if panels is None:
        panels = ax is None and len(todo) > 2
    sizes = da["lib_size"].values
    q = nulls["quantile"].values if nulls is not None else None

    def draw(axes, lib, tgt, single: bool):
        name = arrow(lib, tgt)
        p = _p_text(pvals, lib, tgt, floor) if pvals is not None else ""
        if panels:  # the panel's title names the pair: an arrow between its names
            name = _side(axes, lib, tgt)
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
        name = _side(axes, lib, tgt) if panels else arrow(lib, tgt)
        (line,) = axes.plot(tp, y, marker="o", label=wrap(name, 32), **kwargs)
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
