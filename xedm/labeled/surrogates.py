"""The xarray layer of the surrogate series: ``xedm.surrogates`` / ``.edm.surrogates``."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ..core import validate as v
from ..memory import check_memory, check_work
from ..stats.surrogates import check_method, check_options, make_surrogates
from .checks import degenerate_rows, shown
from .inputs import as_xarray, check_numeric, one_time_chunk, resolve_dim, user_stacklevel
from .progress import counter_bar


def _lazy(da: xr.DataArray, dim: str, method: str, n: int, seed: int, params: dict):
    """Dask-backed ``da``: one task per chunk of the other dims, each series drawing from the
    stream of its position (so the surrogates equal the in-memory ones)."""
    other = [d for d in da.dims if d != dim]
    x = one_time_chunk(da.transpose(*other, dim), dim, "surrogates")
    shape = tuple(x.sizes[d] for d in other)
    pos = xr.DataArray(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape),
                       dims=other)
    if other:
        pos = pos.chunk(dict(zip(other, x.chunks[:-1], strict=True)))
    name = "data" if da.name is None else repr(da.name)

    def block(vals, streams):
        flat = np.asarray(vals, np.float64).reshape(-1, vals.shape[-1])
        streams = np.asarray(streams).ravel()
        labels = None
        if other:
            idx = np.stack(np.unravel_index(streams, shape), axis=1)
            labels = [dict(zip(other, map(int, row), strict=True)) for row in idx]
        try:
            S, _ = make_surrogates(flat, method, n, seed, labels=labels, streams=streams,
                                   **params)
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
        return S.reshape(vals.shape[:-1] + (n, vals.shape[-1]))

    out = xr.apply_ufunc(block, x, pos, input_core_dims=[[dim], []],
                         output_core_dims=[["surrogate", dim]], dask="parallelized",
                         output_dtypes=[np.float64],
                         dask_gufunc_kwargs={"output_sizes": {"surrogate": n}})
    out = out.assign_coords({k: c for k, c in x.coords.items() if k not in out.coords})
    out.name, out.attrs = da.name, dict(da.attrs)
    return out.transpose("surrogate", *da.dims), {"eps": []}


def _one(da: xr.DataArray, dim: str, method: str, n: int, seed: int, params: dict):
    """Surrogates of every series of ``da`` along ``dim`` (other dims broadcast)."""
    if da.chunks is not None:
        return _lazy(da, dim, method, n, seed, params)
    other = [d for d in da.dims if d != dim]
    x = da.transpose(*other, dim)
    vals = np.asarray(x.values, np.float64)  # a copy for non-float64 input; never written
    flat = vals.reshape(-1, vals.shape[-1])
    labels = None
    if other:
        idx = np.stack(np.unravel_index(np.arange(len(flat)), vals.shape[:-1]), axis=1)
        labels = [dict(zip(other, map(int, row), strict=True)) for row in idx]
    name = "data" if da.name is None else repr(da.name)
    # IAAFT's rounds (up to max_iter per series; a round serves every surrogate) on a bar
    bar = counter_bar(None, "iaaft", len(flat) * params.get("max_iter", 1000), unit="round") \
        if method == "iaaft" else None
    try:
        S, info = make_surrogates(flat, method, n, seed, labels=labels,
                                  progress=bar and bar.update, **params)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    finally:
        if bar is not None:
            bar.close()
    none, same = degenerate_rows(flat)

    def where(i):
        if labels is None:
            return name
        return f"{name} at " + ", ".join(
            f"{d}={x[d].values[k].item() if d in x.coords else k!r}" for d, k in labels[i].items())

    info = dict(info, degenerate=[[where(i) for i in np.flatnonzero(m)] for m in (none, same)]
                + [len(flat)])
    S = np.moveaxis(S.reshape(vals.shape[:-1] + (n, vals.shape[-1])), -2, 0)
    out = xr.DataArray(S, dims=("surrogate", *other, dim), coords=x.coords, name=da.name,
                       attrs=dict(da.attrs))
    return out.transpose("surrogate", *da.dims), info


_DEFAULTS = {"period": None, "block_length": None, "E": 2, "tau": 1, "recurrence_rate": 0.1,
             "eps": None, "harmonics": 3, "norm": "euclidean", "max_iter": 1000}


def _is_default(key: str, value) -> bool:
    default = _DEFAULTS[key]
    if default is None or value is None:
        return value is default
    try:
        return bool(value == default) and type(value) is not bool
    except (TypeError, ValueError):  # arrays and other odd values: the method's checks say
        return False


def _check_size(data, tdim: str, n: int, method: str = "shuffle", max_iter: int = 1000) -> None:
    """A time dim with no points, or more surrogates than memory holds or the work limit
    allows, refused up front."""
    T = data.sizes[tdim]
    if T == 0:
        raise ValueError(f"the time dim {tdim!r} has no points: there is nothing to draw "
                         "surrogates of; pass a non-empty series")
    series = [da for da in ([data] if isinstance(data, xr.DataArray) else data.data_vars.values())
              if tdim in da.dims]
    cells = sum(int(np.prod([da.sizes[d] for d in da.dims], dtype=np.float64)) for da in series)
    # the result and the method's working copy (float64), n per value of the data
    what = f"surrogates(n={n}) of {cells:,} values"
    fix = "use a smaller n, or fewer series at a time"
    check_memory(16.0 * n * cells, what, fix)
    check_work(n * cells * _ops_per_value(method, T, max_iter), f"{method} {what}",
               fix + (" (or a smaller max_iter)" if method == "iaaft" else ""), serial=True)


def _ops_per_value(method: str, T: int, max_iter: int) -> float:
    """Elementary operations per surrogate value (measured on one core: an IAAFT round costs
    70-140 ns a value at T = 500-8,000, and runs 35-160 rounds; 100 are counted)."""
    logT = np.log2(max(T, 2))
    if method == "iaaft":
        return min(max_iter, 100) * (1.5 * logT + 5)
    if method == "ebisuzaki":
        return 10 * logT + 20
    if method == "twin":  # the walk per value, and the series' recurrence classes (T x T)
        return 20 + T / 100
    return 20.0


def _check_degenerate(infos: list[dict]) -> None:
    """Raise when every series is all NaN; else one warning naming the all-NaN series (their
    surrogates are NaN) and the constant ones (their surrogates are the constant itself, so a
    test against them cannot tell anything)."""
    found = [i["degenerate"] for i in infos if "degenerate" in i]
    if not found:
        return  # dask-backed data: not read here
    none = [s for f in found for s in f[0]]
    same = [s for f in found for s in f[1]]
    if len(none) == sum(f[2] for f in found):
        raise ValueError("surrogates: the data have no finite value (all NaN or inf); there is "
                         "nothing to draw surrogates of")
    parts = []
    if none:
        parts.append(f"{shown(none)} are all NaN: their surrogates are NaN")
    if same:
        parts.append(f"{shown(same)} are constant: their surrogates repeat the constant, so a "
                     "test against them cannot tell anything")
    if parts:
        warnings.warn("surrogates: " + "; ".join(parts), UserWarning,
                      stacklevel=user_stacklevel())


def _diagnostics(attrs: dict, info: dict) -> None:
    """The method's diagnostics (twin: eps and twin share; iaaft: rounds, spectrum error)."""
    if info.get("eps"):
        attrs.update(twin_eps=info["eps"], twin_share=info["twin_share"])
    if info.get("iaaft_iterations"):
        its = np.concatenate(info["iaaft_iterations"])
        err = np.concatenate(info["iaaft_spectrum_error"])
        attrs.update(iaaft_iterations_max=int(its.max()),
                     iaaft_iterations_mean=float(its.mean()),
                     iaaft_spectrum_error_max=float(err.max()))


@v.renamed("dim", "time_dim", "the time dimension")
def surrogates(
    data: xr.DataArray | xr.Dataset,
    method: str = "ebisuzaki",
    n: int = 99,
    *,
    seed: int | None = None,
    time_dim: str | None = None,
    period: int | None = None,
    harmonics: int = 3,
    block_length: int | None = None,
    E: int = 2,
    tau: int = 1,
    recurrence_rate: float = 0.1,
    eps: float | None = None,
    norm: str = "euclidean",
    max_iter: int = 1000,
) -> xr.DataArray | xr.Dataset:
    """Surrogate series: n draws of a null model per series, on a new ``surrogate`` dim.

    Each series draws from its own random stream, numbered by its position (the series of a
    DataArray in the order of its other dims, flattened; those of each Dataset variable
    from 0), so its surrogates do not depend on the values of the other series.  The
    surrogates of :func:`xedm.ccm` and :func:`xedm.xmap` (``surrogates=n``) are these, the
    k-th series of the call (in the order of ``columns`` or along ``series_dim``) drawing from
    stream k: ``xedm.surrogates(ds[columns].to_array("v"), n=n, seed=seed)``.

    Parameters
    ----------
    data : DataArray, Dataset or pandas DataFrame
        Series along ``time_dim``; other dims broadcast.  Dataset variables without it are
        kept as they are.
    method : {"ebisuzaki", "shuffle", "seasonal", "block", "twin", "iaaft"}
        ``ebisuzaki``: random Fourier phases, amplitude spectrum kept exactly (Ebisuzaki
        1997); ``shuffle``: random permutation of the values; ``seasonal``: the seasonal
        cycle (``period``, smoothed to ``harmonics`` harmonics) plus shuffled residuals;
        ``block``: circular block bootstrap with blocks of ``block_length``; ``twin``: twin
        surrogates (Thiel et al. 2006) on the delay embedding (``E``, ``tau``) with the
        recurrence threshold of :func:`xedm.rqa` (``recurrence_rate`` or ``eps``, ``norm``);
        ``iaaft``: iterative amplitude-adjusted Fourier transform (Schreiber & Schmitz 1996),
        values exact, amplitude spectrum approximate, at most ``max_iter`` rounds.
        Details in :mod:`xedm.stats.surrogates`.
    n : int
        Surrogates per series (>= 1).
    seed : int, optional
        Seed (>= 0); None draws one (recorded in attrs).
    time_dim : str, optional
        The time dim (default ``"time"``; a 1-D DataArray uses its only dim).  Its old name
        ``dim`` still works, with a FutureWarning, until the next release.
    max_iter : int, default 1000
        ``iaaft`` only: the most rounds per surrogate (it stops earlier once the ranks no
        longer change).

    Returns
    -------
    DataArray or Dataset
        The same kind of object as ``data``: every series (each variable of a Dataset) with a
        leading ``surrogate`` dim, ``(surrogate, *dims)``, and the coordinate
        ``surrogate`` = 0..n-1.  ``attrs`` record the method, its parameters and the seed
        (twin: the eps used and the share of states that have a twin);
        iaaft: ``iaaft_iterations_max`` and ``iaaft_iterations_mean``, the rounds run, and
        ``iaaft_spectrum_error_max``, the largest relative amplitude-spectrum error
        ``||A_s - A|| / ||A||``, for in-memory data).

    Raises
    ------
    ValueError
        For an unknown method or a missing or invalid parameter of it; NaN inside a series
        for ``ebisuzaki``, ``seasonal`` and ``twin`` (leading and trailing NaN are kept;
        ``shuffle`` and ``block`` keep every NaN where it is).

    Examples
    --------
    >>> import numpy as np, xedm
    >>> ds = xedm.datasets.coupled_logistic(300)
    >>> s = xedm.surrogates(ds.x, "ebisuzaki", n=10, seed=0)
    >>> s.dims, s.sizes["surrogate"]
    (('surrogate', 'time'), 10)
    >>> amp = lambda a: np.abs(np.fft.rfft(a))
    >>> bool(np.allclose(amp(s[3].values), amp(ds.x.values)))
    True
    >>> s = xedm.surrogates(ds.x, "iaaft", n=5, seed=0)
    >>> bool((np.sort(s[0].values) == np.sort(ds.x.values)).all())
    True
    >>> s.attrs["iaaft_spectrum_error_max"] < 0.1
    True
    """
    if isinstance(data, (pd.DataFrame, pd.Series)):
        data = as_xarray(data, time_dim)  # a DataFrame gives a Dataset (its time column)
    if not isinstance(data, (xr.DataArray, xr.Dataset)):
        raise TypeError(f"data must be an xarray DataArray or Dataset (or a pandas DataFrame), "
                        f"got {type(data).__name__}; wrap numpy arrays with "
                        "xr.DataArray(values, dims=['time'])")
    n = v.check_int("n", n, 1, " (the number of surrogates per series)")
    given = {"period": period, "block_length": block_length, "E": E, "tau": tau,
             "recurrence_rate": recurrence_rate, "eps": eps, "harmonics": harmonics,
             "norm": norm, "max_iter": max_iter}
    check_options(method, [k for k, val in given.items() if not _is_default(k, val)])
    params = check_method(method, period=period, block_length=block_length, E=E, tau=tau,
                          recurrence_rate=recurrence_rate, eps=eps, harmonics=harmonics,
                          norm=norm, max_iter=max_iter)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    seed = v.check_int("seed", seed, 0)
    tdim = resolve_dim(data, time_dim)
    _check_size(data, tdim, n, method, params.get("max_iter", 1000))
    attrs = {"surrogate_method": method, "surrogate_seed": seed, "surrogates": n,
             **{f"surrogate_{k}": val for k, val in params.items()}}
    if isinstance(data, xr.DataArray):
        check_numeric(data, "data" if data.name is None else str(data.name))
        out, info = _one(data, tdim, method, n, seed, params)
        _check_degenerate([info])
        out.attrs.update(attrs)
        _diagnostics(out.attrs, info)
        return out.assign_coords(surrogate=np.arange(n))
    new, infos = {}, []
    for name, da in data.data_vars.items():
        if tdim not in da.dims:
            continue
        check_numeric(da, str(name))
        new[name], info = _one(da, tdim, method, n, seed, params)
        _diagnostics(new[name].attrs, info)
        infos.append(info)
    _check_degenerate(infos)
    if not new:
        raise ValueError(f"no variable of the Dataset has the dim {tdim!r}; pass time_dim=")
    out = data.assign(new).assign_coords(surrogate=np.arange(n))
    out.attrs.update(attrs)
    return out
