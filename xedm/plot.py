"""Matplotlib views of xedm results. These functions draw; they never compute.

Each takes the Dataset/DataArray returned by an xedm function, draws on ``ax`` (a new
figure when ``ax`` is None) and returns the Axes. matplotlib is imported only when a function
is called, so ``import xedm`` stays light.

================================  ==========================================================
:func:`skill`                     ``rho`` against ``E``, ``Tp`` or ``theta``; best marked
:func:`prediction`                observed and predicted series over ``time``
:func:`ccm_convergence`           ``rho`` against ``lib_size``, one line per ``target → library``
:func:`causal_map`                heatmap of ``rho(library, target)`` from xmap/ccm
:func:`recurrence_plot`           a boolean recurrence matrix
================================  ==========================================================

Direction convention (CONVENTIONS.md): a high cross-map skill at
``(library=x, target=y)`` is evidence that **y causes x**, drawn as ``y → x``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

__all__ = ["causal_map", "ccm_convergence", "prediction", "recurrence_plot", "skill"]

_SWEEP_DIMS = ("E", "Tp", "theta")
_SWEEP_LABELS = {
    "E": "embedding dimension E",
    "Tp": "prediction horizon Tp",
    "theta": "S-map nonlinearity θ",
}


def _axes(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


def _variable(obj: xr.Dataset | xr.DataArray, var: str) -> xr.DataArray:
    if isinstance(obj, xr.DataArray):
        return obj
    if var not in obj:
        raise ValueError(f"variable {var!r} not in the result; it has {sorted(obj.data_vars)}")
    return obj[var]


def _label(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def arrow(library: Any, target: Any) -> str:
    """The causal arrow read from a cross-map skill at ``(library, target)``.

    Examples
    --------
    >>> arrow(library="x", target="y")
    'y → x'
    """
    return f"{_label(target)} → {_label(library)}"


def skill(
    ds: xr.Dataset | xr.DataArray,
    dim: str | None = None,
    *,
    var: str = "rho",
    ax=None,
    mark_best: bool = True,
    **kwargs: Any,
):
    """Plot skill against the swept parameter (``E``, ``Tp`` or ``theta``), marking the best.

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.embed_dimension`, :func:`xedm.predict_interval` or
        :func:`xedm.predict_nonlinear` (or its ``rho`` DataArray). Other dims (e.g. ``neuron``)
        give one line each.
    dim : str, optional
        Swept dim; found among ``E``, ``Tp``, ``theta`` when not given.
    var : str, default "rho"
        Variable to draw (``rho``, ``mae``, ``rmse``).
    ax : matplotlib Axes, optional
    mark_best : bool, default True
        Mark the best value: ``attrs["best_<dim>"]`` when present, else the maximum of ``rho``
        (minimum of ``mae``/``rmse``).
    **kwargs
        Passed to ``Axes.plot``.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xarray as xr
    >>> from xedm import plot
    >>> ds = xr.Dataset({"rho": ("E", [0.5, 0.9, 0.8])}, coords={"E": [1, 2, 3]},
    ...                 attrs={"best_E": 2})
    >>> ax = plot.skill(ds)
    >>> ax.get_xlabel()
    'embedding dimension E'
    """
    da = _variable(ds, var)
    if dim is None:
        found = [d for d in _SWEEP_DIMS if d in da.dims]
        if len(found) != 1:
            raise ValueError(f"cannot tell the swept dim from {da.dims}; pass dim=")
        dim = found[0]
    if dim not in da.dims:
        raise ValueError(f"dim {dim!r} not in {var} dims {da.dims}")
    ax = _axes(ax)
    x = da[dim].values
    others = [d for d in da.dims if d != dim]
    flat = da.transpose(dim, *others).values.reshape(len(x), -1)
    labels = [""]
    if others:
        stacked = da.stack(_series=others)
        labels = [", ".join(_label(v) for v in np.atleast_1d(i)) for i in stacked._series.values]
    for j in range(flat.shape[1]):
        ax.plot(x, flat[:, j], marker="o", label=labels[j] or None, **kwargs)
    if mark_best and flat.shape[1] == 1 and np.isfinite(flat).any():
        best = ds.attrs.get(f"best_{dim}") if isinstance(ds, xr.Dataset) else None
        if best is None:
            best = da.attrs.get(f"best_{dim}")
        if best is None:
            pick = np.nanargmax if var == "rho" else np.nanargmin
            best = x[pick(flat[:, 0])]
        best_y = flat[np.flatnonzero(x == best), 0]
        if best_y.size:
            ax.plot([best], best_y[:1], marker="*", markersize=16, color="C3", linestyle="none",
                    label=f"best {dim} = {_label(best)}")
            ax.legend()
    elif others and flat.shape[1] <= 12:
        ax.legend(title=", ".join(others))
    ax.set_xlabel(_SWEEP_LABELS.get(dim, dim))
    ax.set_ylabel(var)
    if dim == "E":
        ax.set_xticks(x)
    return ax


def prediction(ds: xr.Dataset, *, ax=None, dim: str = "time", **kwargs: Any):
    """Plot observed and predicted values over time, with the skill in the title.

    Parameters
    ----------
    ds : Dataset
        Result of :func:`xedm.simplex` or :func:`xedm.smap`: ``observed`` and ``prediction``
        over ``dim``, scalar ``rho``. Select other dims first (``ds.isel(neuron=0)``).
    ax : matplotlib Axes, optional
    dim : str, default "time"
    **kwargs
        Passed to ``Axes.plot`` for the prediction line.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, xarray as xr
    >>> from xedm import plot
    >>> t = np.arange(50)
    >>> ds = xr.Dataset({"observed": ("time", np.sin(t / 5)),
    ...                  "prediction": ("time", np.sin(t / 5) + 0.1), "rho": 0.99},
    ...                 coords={"time": t})
    >>> len(plot.prediction(ds).lines)
    2
    """
    for name in ("observed", "prediction"):
        if name not in ds:
            raise ValueError(f"prediction() needs a {name!r} variable; got {sorted(ds.data_vars)}")
    extra = [d for d in ds["prediction"].dims if d != dim]
    if extra:
        raise ValueError(
            f"select one series first (extra dims {extra}), e.g. ds.isel({extra[0]}=0)"
        )
    ax = _axes(ax)
    t = ds[dim].values
    ax.plot(t, ds["observed"].values, color="0.3", lw=1.2, label="observed")
    kwargs.setdefault("color", "C1")
    ax.plot(t, ds["prediction"].values, lw=1.0, label="predicted", **kwargs)
    ax.set_xlabel(dim)
    ax.set_ylabel(ds.attrs.get("target", ds["observed"].attrs.get("name", "value")))
    parts = [
        f"{k} = {float(ds[k]):.3f}" for k in ("rho", "mae", "rmse") if k in ds and ds[k].ndim == 0
    ]
    method = ds.attrs.get("method", "")
    pars = ", ".join(f"{k}={ds.attrs[k]}" for k in ("E", "Tp", "theta") if k in ds.attrs)
    ax.set_title(" ".join(p for p in (method, pars, " ".join(parts)) if p))
    ax.legend(loc="upper right")
    return ax


def ccm_convergence(
    ds: xr.Dataset | xr.DataArray,
    *,
    var: str = "rho",
    ax=None,
    include_self: bool = False,
    band: tuple[float, float] = (0.05, 0.95),
    **kwargs: Any,
):
    """Plot cross-map skill against library size, one line per ``target → library``.

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.ccm`: ``rho`` with dims ``(library, target, lib_size)`` and
        optionally ``sample``. With a ``sample`` dim the mean is drawn with a shaded band
        between the ``band`` quantiles.
    var : str, default "rho"
    ax : matplotlib Axes, optional
    include_self : bool, default False
        Also draw ``library == target`` pairs.
    band : (float, float), default (0.05, 0.95)
        Quantiles of the shaded band over samples.
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
    da = _variable(ds, var)
    for d in ("library", "target", "lib_size"):
        if d not in da.dims:
            raise ValueError(f"ccm_convergence() needs a {d!r} dim; {var} has {da.dims}")
    ax = _axes(ax)
    sizes = da["lib_size"].values
    for lib in da["library"].values:
        for tgt in da["target"].values:
            if lib == tgt and not include_self:
                continue
            pair = da.sel(library=lib, target=tgt)
            if "sample" in pair.dims:
                lo = pair.quantile(band[0], dim="sample").values
                hi = pair.quantile(band[1], dim="sample").values
                mean = pair.mean("sample").values
            else:
                lo = hi = None
                mean = pair.values
            (line,) = ax.plot(sizes, mean, marker="o", label=arrow(lib, tgt), **kwargs)
            if lo is not None:
                ax.fill_between(sizes, lo, hi, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("library size L")
    ax.set_ylabel(f"cross-map {var}")
    ax.legend(title="cause → effect")
    return ax


def causal_map(
    ds: xr.Dataset | xr.DataArray,
    *,
    var: str = "rho",
    ax=None,
    truth: xr.DataArray | None = None,
    mask_diagonal: bool = True,
    cmap: str = "viridis",
    **kwargs: Any,
):
    """Heatmap of cross-map skill: rows are the library (effect), columns the target (cause).

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.xmap` (or :func:`xedm.ccm` at one ``lib_size``): ``rho`` with
        dims ``(library, target)``.
    var : str, default "rho"
    ax : matplotlib Axes, optional
    truth : DataArray, optional
        Known links as a boolean ``(driver, driven)`` array, such as ``adjacency`` from
        :func:`xedm.datasets.many_series`; each link ``driver → driven`` is marked with a
        white dot at ``(library=driven, target=driver)``.
    mask_diagonal : bool, default True
        Leave ``library == target`` cells blank.
    cmap : str, default "viridis"
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
    da = _variable(ds, var)
    extra = [d for d in da.dims if d not in ("library", "target")]
    if extra or da.ndim != 2:
        raise ValueError(f"causal_map() needs {var}(library, target); got dims {da.dims}")
    da = da.transpose("library", "target")
    values = np.array(da.values, dtype=float)
    libs, tgts = da["library"].values, da["target"].values
    if mask_diagonal:
        for i, lib in enumerate(libs):
            values[i, tgts == lib] = np.nan
    ax = _axes(ax)
    kwargs.setdefault("interpolation", "nearest")
    im = ax.imshow(values, cmap=cmap, aspect="auto", **kwargs)
    ax.figure.colorbar(im, ax=ax, label=f"cross-map {var}")
    if len(libs) <= 30:
        ax.set_yticks(range(len(libs)), [_label(v) for v in libs])
    if len(tgts) <= 30:
        ax.set_xticks(range(len(tgts)), [_label(v) for v in tgts])
    ax.set_ylabel("library (effect)")
    ax.set_xlabel("target (cause)")
    if truth is not None:
        links = truth.transpose("driver", "driven")
        rows, cols = [], []
        for driver, driven in zip(*np.nonzero(links.values), strict=True):
            r = np.flatnonzero(libs == links["driven"].values[driven])
            c = np.flatnonzero(tgts == links["driver"].values[driver])
            if r.size and c.size:
                rows.append(r[0])
                cols.append(c[0])
        ax.plot(cols, rows, "o", color="white", markeredgecolor="black", markersize=5,
                linestyle="none", label="known link")
    return ax


def recurrence_plot(da: xr.DataArray, *, ax=None, cmap: str = "binary", **kwargs: Any):
    """Draw a recurrence matrix (recurrent points black).

    Parameters
    ----------
    da : DataArray
        Two-dimensional boolean (or 0/1) recurrence matrix, e.g. from
        :func:`xedm.recurrence_plot`; its two dims label the axes and their coordinates
        (when numeric) set the extent.
    ax : matplotlib Axes, optional
    cmap : str, default "binary"
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
    >>> x = np.sin(np.arange(100) / 5)
    >>> R = xr.DataArray(np.abs(x[:, None] - x[None, :]) < 0.1, dims=("time_i", "time_j"))
    >>> plot.recurrence_plot(R).get_xlabel()
    'time_j'
    """
    if da.ndim != 2:
        raise ValueError(f"recurrence_plot() needs a 2-D matrix; got dims {da.dims}")
    row_dim, col_dim = da.dims
    ax = _axes(ax)
    extent = None
    rows, cols = da[row_dim].values, da[col_dim].values
    if all(np.issubdtype(c.dtype, np.number) and c.size > 1 for c in (rows, cols)):
        extent = (cols[0], cols[-1], rows[0], rows[-1])
    kwargs.setdefault("interpolation", "nearest")
    ax.imshow(np.asarray(da.values, dtype=float), cmap=cmap, origin="lower", extent=extent,
              vmin=0, vmax=1, **kwargs)
    ax.set_xlabel(col_dim)
    ax.set_ylabel(row_dim)
    ax.set_aspect("equal")
    title = ", ".join(f"{k}={da.attrs[k]}" for k in ("E", "tau", "eps") if k in da.attrs)
    if title:
        ax.set_title(title)
    return ax
