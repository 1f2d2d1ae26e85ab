"""Plumbing of the cross maps (:func:`xedm.ccm`, :func:`xedm.xmap`): the result's reserved
dims, the per-block result check, the apply_ufunc wrapper and the significance attrs.  Their
series come from :func:`xedm.labeled.inputs.cross_series`, their parameter rules from
:mod:`xedm.labeled.checks`."""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from .checks import degenerate_rows, shown
from .inputs import SERIES_DIM, one_time_chunk
from .inputs import user_stacklevel as _stacklevel

# dims (and the coordinate E) of the results: the data may not have dims of these names
XMAP_DIMS = ("library", "target", "E", "Tp", "quantile", "surrogate")
CCM_DIMS = ("library", "target", "lib_size", "sample", "E", "Tp", "ci", "quantile",
             "surrogate")


def check_block_result(xa: np.ndarray, rho: np.ndarray, labels, sdim: str, what: str, params: str,
                 lazy: bool = False):
    """After the cross maps of one block: raise when not one pair has a finite skill; warn,
    naming them, about series that are all NaN.  A block is the whole data unless it is
    dask-backed: then each chunk along the other dims is checked at compute time, and a chunk
    with nothing finite warns instead (the other chunks may be fine; raising would lose them).
    """
    has_value = any_finite_rows(xa).reshape(-1, xa.shape[-2])  # (slices, series)
    where = " (one dask chunk of the data)" if lazy else ""
    if not _any_finite(rho):
        if not has_value.any():
            msg = f"{what}{where}: the data are all NaN; there is nothing to cross-map"
        else:
            msg = (
                f"{what}{where}: no (library, target) pair has a finite skill (rho needs at "
                f"least 3 predictions with finite observations and nonzero variance) for "
                f"{params}; the series are too short, too gappy (NaN) or constant for these "
                "parameters: use a smaller E, knn, |Tp| or exclusion_radius, or more data"
            )
        if not lazy:
            raise ValueError(msg)
        warnings.warn(msg, UserWarning, stacklevel=_stacklevel())
        return
    dead = ~has_value.all(axis=0)
    if dead.any():
        names = [labels[i] for i in np.flatnonzero(dead)]
        names = [x.item() if isinstance(x, np.generic) else x for x in names]
        some = "" if (~has_value[:, dead]).all() else " (in some slices of the other dims)"
        warnings.warn(
            f"{what}{where}: series {names} along {sdim!r} are all NaN{some}; their rows "
            "(library) and columns (target) of rho are NaN",
            UserWarning, stacklevel=_stacklevel(),
        )
    const = degenerate_rows(xa)[1].reshape(-1, xa.shape[-2]).any(axis=0)
    if const.any():
        warnings.warn(
            f"{what}{where}: series {shown([labels[i] for i in np.flatnonzero(const)])} along "
            f"{sdim!r} are constant: as targets their rho is NaN (zero variance); as libraries "
            "all their states coincide, so neighbours are picked by time order alone and "
            "their rows of rho mean nothing: leave them out",
            UserWarning, stacklevel=_stacklevel(),
        )


def any_finite_rows(a: np.ndarray) -> np.ndarray:
    """``np.isfinite(a).any(axis=-1)``, scanning whole only the rows whose first value is not
    finite (a scan of 1,000 x 10,000 values took 10 ms, and xmap asked twice).

    >>> any_finite_rows(np.array([[1.0, np.nan], [np.nan, 2.0], [np.nan, np.inf]])).tolist()
    [True, True, False]
    """
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-1], bool)
    out = np.isfinite(a[..., 0])
    rest = ~out
    if rest.any():
        out[rest] = np.isfinite(a[rest]).any(axis=-1)
    return out


def _any_finite(a: np.ndarray, chunk: int = 1 << 16) -> bool:
    """``np.isfinite(a).any()``, stopping at the first chunk with a finite value (a map of
    10,000 x 10,000 pairs is not scanned whole when its first row has one)."""
    flat = a.reshape(-1)
    return any(np.isfinite(flat[i:i + chunk]).any() for i in range(0, flat.size, chunk))


def apply_cross(X, tdim, func, out_dims, sizes, dtypes, check):
    """``func`` on every 2-D (series, time) slice of X; ``check(block, first output)`` runs
    on every block (the whole data unless X is dask-backed: then at compute time)."""

    def wrapped(xa):
        lead = xa.shape[:-2]
        flat = xa.reshape((-1,) + xa.shape[-2:])
        if len(flat) == 0:  # a broadcast dim of size 0: empty results
            return tuple(np.empty(lead + tuple(sizes[d] for d in dims), dt)
                         for dims, dt in zip(out_dims, dtypes, strict=True))
        res = [func(s) for s in flat]
        out = tuple((res[0][i] if len(res) == 1 else np.stack([r[i] for r in res])).reshape(
            lead + res[0][i].shape) for i in range(len(out_dims)))
        check(xa, out[0])
        return out

    if X.chunks is not None:
        X = one_time_chunk(X, tdim, "ccm" if "lib_size" in sizes else "xmap")
        X = X.chunk({SERIES_DIM: -1})
    used = {d for dims in out_dims for d in dims}
    sizes = {d: size for d, size in sizes.items() if d in used}
    return xr.apply_ufunc(
        wrapped, X, input_core_dims=[[SERIES_DIM, tdim]], output_core_dims=out_dims,
        dask="parallelized", output_dtypes=dtypes,
        dask_gufunc_kwargs={"output_sizes": sizes},
    )


def significance_attrs(sig: dict) -> dict:
    how = ("(1 + #{surrogate rho >= rho}) / (1 + #finite surrogate rho), one-sided"
           if sig["p_method"] == "empirical" else
           "P(Z >= (atanh(rho) - mean) / sd), mean and sd of the surrogates' atanh(rho)")
    out = {"surrogates": sig["n"], "surrogate_method": sig["method"],
           "surrogate_seed": sig["seed"], "p_method": sig["p_method"], "p_value": how,
           "null": "each target replaced by its surrogates; the library's tables unchanged"}
    out.update({f"surrogate_{k}": val for k, val in sig["options"].items()})
    return out


def best_Tp(rho: xr.DataArray) -> xr.DataArray:
    """The Tp of the highest rho per pair (NaN where no Tp has a finite rho)."""
    best = rho.fillna(-np.inf).idxmax("Tp")  # first of equal maxima, dask-friendly
    return best.where(rho.notnull().any("Tp")).rename("best_Tp")
