"""Views of the forecasting results: skill sweeps, forecasts, S-map coefficients."""

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
    outside_legend,
    params,
    short,
    variable,
)

SWEEP_DIMS = ("E", "Tp", "theta", "tau", "exclusion_radius")
_SYMBOL = {"theta": "θ", "tau": "τ"}
_MADE_BY = {"E": "embed_dimension", "Tp": "predict_interval", "theta": "predict_nonlinear",
            "tau": "predict_tau", "exclusion_radius": "predict_exclusion_radius"}


def _sweep_dim(da: xr.DataArray, dim: str | None, var: str) -> str:
    if dim is None:
        found = [d for d in SWEEP_DIMS if d in da.dims]
        if len(found) != 1:
            raise ValueError(f"cannot tell the swept dim from {da.dims}; pass dim=")
        dim = found[0]
    if dim not in da.dims:
        raise ValueError(f"dim {dim!r} not in {var} dims {da.dims}")
    return dim


def _best(ds, da: xr.DataArray, dim: str, var: str, x: np.ndarray, flat: np.ndarray, series):
    """The marked value of each series: ``best_<dim>`` (variable or attr) for rho, else the
    extreme of ``var``."""
    best = None
    if isinstance(ds, xr.Dataset) and var == "rho":
        if f"best_{dim}" in ds.data_vars:
            b = ds[f"best_{dim}"]
            best = np.ravel(b.stack(_series=series).values if series else b.values)
        elif f"best_{dim}" in ds.attrs and flat.shape[1] == 1:
            best = np.array([ds.attrs[f"best_{dim}"]])
    if best is None:
        pick = np.nanargmax if var == "rho" else np.nanargmin
        best = np.array([x[pick(col)] if np.isfinite(col).any() else np.nan for col in flat.T])
    return best


def skill(
    ds: xr.Dataset | xr.DataArray,
    dim: str | None = None,
    *,
    var: str = "rho",
    ax=None,
    mark_best: bool = True,
    **kwargs: Any,
):
    """Plot skill against the swept parameter (``E``, ``Tp``, ``theta``, ``tau`` or
    ``exclusion_radius``), marking the best.

    Parameters
    ----------
    ds : Dataset or DataArray
        Result of :func:`xedm.embed_dimension`, :func:`xedm.predict_interval`,
        :func:`xedm.predict_nonlinear`, :func:`xedm.predict_tau` or
        :func:`xedm.predict_exclusion_radius` (or its ``rho`` DataArray).  Other dims (e.g.
        ``neuron``) give one line each.
    dim : str, optional
        Swept dim; found among ``E``, ``Tp``, ``theta``, ``tau``, ``exclusion_radius`` when
        not given.
    var : str, default "rho"
        Variable to draw (``rho``, ``mae``, ``rmse``).
    ax : matplotlib Axes, optional
    mark_best : bool, default True
        Mark the chosen value of each series with a star: ``best_<dim>`` (the variable, or
        the attr) for ``rho``, else the maximum of ``rho`` (minimum of ``mae``/``rmse``).
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
    da = variable(ds, var)
    dim = _sweep_dim(da, dim, var)
    ax = new_axes(ax)
    x = da[dim].values
    others = [d for d in da.dims if d != dim]
    if others:
        stacked = da.stack(_series=others).transpose(dim, "_series")
        flat = np.asarray(stacked.values, dtype=float)
        labels = [", ".join(label(v) for v in np.atleast_1d(i)) for i in stacked._series.values]
    else:
        flat = np.asarray(da.values, dtype=float).reshape(len(x), 1)
        labels = [None]
    lines = [ax.plot(x, flat[:, j], marker="o", label=labels[j], **kwargs)[0]
             for j in range(flat.shape[1])]
    if mark_best and np.isfinite(flat).any():
        best = _best(ds, da, dim, var, x, flat, others)
        for j, b in enumerate(best):
            hit = np.flatnonzero(x == b)
            if hit.size == 0:
                continue
            one = flat.shape[1] == 1
            ax.plot([b], flat[hit[:1], j], marker="*", markersize=16, linestyle="none",
                    color="C3" if one else lines[j].get_color(), markeredgecolor="black",
                    label=f"best {_SYMBOL.get(dim, dim)} = {num(b)}" if one else None,
                    zorder=5)
    ax.set_xlabel(axis_name(da, dim))
    ax.set_ylabel(axis_name(ds, var))
    if dim == "E" and len(x) <= 30:
        ax.set_xticks(x)
    attrs = ds.attrs if isinstance(ds, xr.Dataset) else da.attrs
    made = attrs.get("xedm_function", _MADE_BY.get(dim, ""))
    target = attrs.get("target")
    keys = tuple(k for k in ("E", "Tp", "tau", "theta") if k != dim)
    title = f"{made}" + (f" of {target}" if target else "")
    extra = params(attrs, keys)
    ax.set_title(f"{title}: {extra}" if extra else title)
    if flat.shape[1] > 1 and flat.shape[1] <= 12:
        outside_legend(ax, title=", ".join(others))
    elif flat.shape[1] == 1 and mark_best:
        outside_legend(ax)
    return finish(ax)


def _check_one_series(ds: xr.Dataset, dim: str, what: str):
    for name in ("observed", "prediction"):
        if name not in ds:
            raise ValueError(f"{what} needs a {name!r} variable; got {sorted(ds.data_vars)}")
    extra = [d for d in ds["prediction"].dims if d != dim]
    if extra:
        raise ValueError(
            f"select one series first (extra dims {extra}), e.g. ds.isel({extra[0]}=0)"
        )


def _skill_text(ds: xr.Dataset) -> str:
    names = {"rho": "ρ", "mae": "MAE", "rmse": "RMSE"}
    return ", ".join(f"{names[k]} = {float(ds[k]):.3f}" for k in names
                     if k in ds and ds[k].ndim == 0)


def prediction(ds: xr.Dataset, *, ax=None, dim: str | None = None, **kwargs: Any):
    """Plot observed and predicted values over time; the method and skill in the title.

    Parameters
    ----------
    ds : Dataset
        Result of :func:`xedm.simplex` or :func:`xedm.smap`: ``observed`` and ``prediction``
        over ``dim``, scalar ``rho``.  Select other dims first (``ds.isel(neuron=0)``).
    ax : matplotlib Axes, optional
    dim : str, optional
        Time dim (default: the only dim of ``prediction``).
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
    if dim is None:
        # time is the last dim of xedm's results (series dims come first)
        dim = ds["prediction"].dims[-1] if "prediction" in ds and ds["prediction"].ndim else "time"
    _check_one_series(ds, dim, "prediction()")
    ax = new_axes(ax, figsize=(8, 3))
    t = ds[dim].values
    ax.plot(t, ds["observed"].values, color="0.3", lw=1.2, label="observed")
    kwargs.setdefault("color", "C1")
    ax.plot(t, ds["prediction"].values, lw=1.0, label="predicted", **kwargs)
    ax.set_xlabel(axis_name(ds, dim))
    target = ds.attrs.get("target")
    units = ds["observed"].attrs.get("units")
    # the title names the series in full; the axis a name cut to fit beside panels
    ax.set_ylabel(short(target or "value", 24) + (f" [{units}]" if units else ""))
    method = ds.attrs.get("xedm_function", ds.attrs.get("method", "forecast"))
    head = f"{method}" + (f" of {target}" if target else "")
    pars = params(ds.attrs, ("E", "tau", "Tp", "theta"))
    ax.set_title("; ".join(p for p in (f"{head}: {pars}" if pars else head, _skill_text(ds))
                           if p))
    outside_legend(ax)
    return finish(ax)


def smap_coefficients(
    ds: xr.Dataset,
    *,
    fig=None,
    dim: str | None = None,
    intercept: bool = False,
    with_prediction: bool = True,
):
    """S-map coefficients (the local Jacobian) over time, under the forecast.

    Parameters
    ----------
    ds : Dataset
        Result of :func:`xedm.smap` for one series: ``coefficients`` over (time, ``coef``).
    fig : matplotlib Figure, optional
        Drawn on this figure (cleared first); a new one when None.
    dim : str, optional
        Time dim (default: the first dim of ``coefficients``).
    intercept : bool, default False
        Also draw the intercept.
    with_prediction : bool, default True
        A first panel with observed and predicted values (:func:`prediction`).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per coefficient (and the forecast's first), sharing the time axis.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> out = xedm.datasets.logistic_map(300).edm.smap(E=2, theta=2.0)
    >>> fig = xedm.plot.smap_coefficients(out)
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['x', '∂x(t+1)/∂x(t-0)', '∂x(t+1)/∂x(t-1)']
    """
    if "coefficients" not in ds:
        raise ValueError("smap_coefficients() needs the 'coefficients' of xedm.smap; got "
                         f"{sorted(ds.data_vars)}")
    coef = ds["coefficients"]
    if dim is None:
        dim = coef.dims[-2]
    extra = [d for d in coef.dims if d not in (dim, "coef")]
    if extra:
        raise ValueError(
            f"select one series first (extra dims {extra}), e.g. ds.isel({extra[0]}=0)"
        )
    names = [c for c in coef["coef"].values.tolist() if intercept or c != "intercept"]
    fig, axes = new_figure(len(names) + bool(with_prediction), fig)
    if with_prediction:
        prediction(ds, ax=axes[0], dim=dim)
        axes[0].set_xlabel("")
    t = ds[dim].values
    target = ds.attrs.get("target", "y")
    Tp = ds.attrs.get("Tp", 1)
    for ax, name in zip(axes[bool(with_prediction):], names, strict=True):
        ax.plot(t, coef.sel(coef=name).values, lw=0.8, color="C2")
        ax.axhline(0.0, color="0.6", lw=0.6, zorder=0)
        full = name if name == "intercept" else f"∂{target}(t{int(Tp):+d})/∂{name}"
        if len(full) > 24:  # a long series name: cut, keeping the lag at its end
            full = f"∂{short(target, 8)}(t{int(Tp):+d})/∂{short(name, 12)}"
        ax.set_ylabel(full)
    axes[-1].set_xlabel(axis_name(ds, dim))
    if not with_prediction:
        axes[0].set_title(f"S-map coefficients: {params(ds.attrs, ('E', 'tau', 'Tp', 'theta'))}")
    return fit_texts(fig)
