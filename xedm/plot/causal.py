"""Views of cross maps: CCM convergence and the (library, target) causal map.

Direction (docs/conventions.md): a high cross-map skill at ``(library=x, target=y)`` is
evidence that **y causes x**, drawn as ``y → x``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ._base import axis_name, label, new_axes, num, outside_legend, params, variable


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


def ccm_convergence(
    ds: xr.Dataset | xr.DataArray,
    *,
    var: str = "rho",
    ax=None,
    pairs=None,
    include_self: bool = False,
    band: tuple[float, float] = (0.05, 0.95),
    null: bool = True,
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
        the band between its lowest and highest quantile is drawn dashed in grey, and a
        ``p_value`` (library, target) is appended to each line's label.
    var : str, default "rho"
    ax : matplotlib Axes, optional
    pairs : list of (library, target), optional
        The pairs drawn (default: every ordered pair of distinct series, i.e. both directions).
    include_self : bool, default False
        Also draw ``library == target`` pairs.
    band : (float, float), default (0.05, 0.95)
        Quantiles of the shaded band over samples.
    null : bool, default True
        Draw the surrogate band and p-values when the result has them.
    **kwargs
        Passed to ``Axes.plot``.

    Returns
    -------
    matplotlib.axes.Axes

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
    """
    da = variable(ds, var)
    for d in ("library", "target", "lib_size"):
        if d not in da.dims:
            raise ValueError(f"ccm_convergence() needs a {d!r} dim; {var} has {da.dims}")
    is_ds = isinstance(ds, xr.Dataset)
    samples = None
    if "sample" in da.dims:
        samples, da = da, da.mean("sample")
    elif is_ds and f"{var}_sample" in ds:
        samples = ds[f"{var}_sample"]
    nulls = ds.get(f"{var}_null") if is_ds and null else None
    pvals = ds.get("p_value") if is_ds and null else None
    ax = new_axes(ax)
    sizes = da["lib_size"].values
    for lib, tgt in _pairs(da, pairs, include_self):
        mean = da.sel(library=lib, target=tgt).values
        name = arrow(lib, tgt)
        if pvals is not None and {"library", "target"} >= set(pvals.dims):
            name += f" (p = {num(pvals.sel(library=lib, target=tgt).item(), 2)})"
        (line,) = ax.plot(sizes, mean, marker="o", label=name, **kwargs)
        if samples is not None:
            one = samples.sel(library=lib, target=tgt)
            lo = one.quantile(band[0], dim="sample").values
            hi = one.quantile(band[1], dim="sample").values
            ax.fill_between(sizes, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        if nulls is not None and "quantile" in nulls.dims:
            one = nulls.sel(library=lib, target=tgt)
            if "lib_size" not in one.dims:
                one = one.expand_dims(lib_size=sizes)
            q = one["quantile"].values
            lo = one.sel(quantile=q.min()).values
            hi = one.sel(quantile=q.max()).values
            ax.fill_between(sizes, lo, hi, facecolor="none", edgecolor=line.get_color(),
                            hatch="//", alpha=0.5, lw=0.8, linestyle="--",
                            label=f"surrogates {name.split(' (')[0]} "
                                  f"({num(q.min(), 2)}–{num(q.max(), 2)})")
    ax.set_xlabel(axis_name(da, "lib_size"))
    ax.set_ylabel(f"cross-map skill {var}")
    attrs = ds.attrs
    ax.set_title("CCM convergence" + (f": {params(attrs, ('tau', 'Tp', 'samples'))}"
                                      if params(attrs, ("tau", "Tp", "samples")) else ""))
    outside_legend(ax, title="cause → effect")
    return ax


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
    **kwargs: Any,
):
    """Heatmap of cross-map skill: rows are the library (effect), columns the target (cause).

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.xmap` (or of :func:`xedm.ccm`, drawn at its largest
        ``lib_size``): ``rho`` over ``(library, target)``.  When the Dataset has ``q_value``
        (else ``p_value``) over ``(library, target)``, cells below ``alpha`` are outlined.
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
    **kwargs
        Passed to ``Axes.imshow``.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, xarray as xr
    >>> from xedm import plot
    >>> rho = xr.DataArray(np.eye(3) * 0.5 + 0.2, dims=("library", "target"),
    ...                    coords={"library": [0, 1, 2], "target": [0, 1, 2]}, name="rho")
    >>> ax = plot.causal_map(rho)
    >>> ax.get_ylabel()
    'library (effect)'
    """
    da = variable(ds, var)
    if "lib_size" in da.dims:
        da = da.isel(lib_size=-1)
    extra = [d for d in da.dims if d not in ("library", "target")]
    if extra or da.ndim != 2:
        raise ValueError(f"causal_map() needs {var}(library, target); got dims {da.dims}")
    if order not in (None, "cluster"):
        raise ValueError(f"order={order!r}: use None or 'cluster'")
    da = da.transpose("library", "target")
    sig = None
    if isinstance(ds, xr.Dataset):
        for name in ("q_value", "p_value"):
            if name in ds and set(ds[name].dims) == {"library", "target"}:
                sig = (name, ds[name].transpose("library", "target"))
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
        ax.set_yticks(range(len(libs)), [label(v) for v in libs])
    if len(tgts) <= 30:
        ax.set_xticks(range(len(tgts)), [label(v) for v in tgts])
    ax.set_ylabel("library (effect)")
    ax.set_xlabel("target (cause)")
    if sig is not None:
        name, p = sig
        rows, cols = np.nonzero(np.asarray(p.values) < alpha)
        keep = libs[rows] != tgts[cols]
        ax.plot(cols[keep], rows[keep], "s", markerfacecolor="none", markeredgecolor="C3",
                markersize=max(3.0, 120 / max(len(libs), 1)), linestyle="none",
                label=f"{name.replace('_', '-')} < {num(alpha)}")
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
        ax.plot(cols, rows, "o", color="white", markeredgecolor="black", markersize=5,
                linestyle="none", label="known link (driver → driven)")
    made = ds.attrs.get("xedm_function", "")
    marked = truth is not None or sig is not None
    # the legend of the marks sits between the title and the map, never on the cells
    ax.set_title(f"causal map ({made})" if made else "causal map", pad=22 if marked else 6)
    if marked:
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False,
                  borderaxespad=0.2, fontsize="small")
    return ax


def lag_plot(
    ds: xr.Dataset | xr.DataArray,
    *,
    var: str = "rho",
    ax=None,
    pairs=None,
    include_self: bool = False,
    lib_size=None,
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
    **kwargs
        Passed to ``Axes.plot``.

    Returns
    -------
    matplotlib.axes.Axes

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
    ax = new_axes(ax)
    tp = da["Tp"].values
    for lib, tgt in _pairs(da, pairs, include_self):
        y = da.sel(library=lib, target=tgt).values
        (line,) = ax.plot(tp, y, marker="o", label=arrow(lib, tgt), **kwargs)
        if np.isfinite(y).any():
            k = int(np.nanargmax(y))
            ax.plot([tp[k]], [y[k]], marker="*", ms=14, color=line.get_color(),
                    linestyle="none")
        if null is not None and "quantile" in null.dims:
            band = null.sel(library=lib, target=tgt)
            ax.fill_between(tp, band.isel(quantile=0).values, band.isel(quantile=-1).values,
                            color=line.get_color(), alpha=0.15, linewidth=0)
    ax.axvline(0, color="0.6", linewidth=0.8, linestyle=":")
    ax.set_xlabel("lag Tp (time steps)")
    ax.set_ylabel(axis_name(da, var))
    what = "extended CCM" if "lib_size" in variable(ds, var).dims else "extended cross map"
    ax.set_title(f"{what}: skill vs lag (peak at Tp ≤ 0: a driver)")
    outside_legend(ax, title="cause → effect")
    return ax
