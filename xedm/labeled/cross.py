"""Shared checks and plumbing of the cross maps (:func:`xedm.ccm`, :func:`xedm.xmap`): the
series of the data, parameter checks, memory guards, significance settings, and the
apply_ufunc wrapper."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ..core import validate as v
from ..memory import check_memory, check_work
from ..stats.surrogates import check_method, check_options
from .checks import variable_names
from .common import check_numeric, one_time_chunk, resolve_dim
from .common import user_stacklevel as _stacklevel

_SER = "__xedm_series__"
# dims (and the coordinate E) of the results: the data may not have dims of these names
_XMAP_DIMS = ("library", "target", "E", "Tp", "quantile", "surrogate")
_CCM_DIMS = ("library", "target", "lib_size", "sample", "E", "Tp", "ci", "quantile",
             "surrogate")


def _time_dim(data, time_dim: str | None) -> str:
    """resolve_dim, with a message that names ``time_dim`` (the parameter of ccm and xmap)."""
    try:
        return resolve_dim(data, time_dim)
    except ValueError:
        raise ValueError(
            f"time_dim={time_dim or 'time'!r} is not a dimension of the data (dims: "
            f"{list(data.dims)}); pass time_dim='<your time dimension>'"
        ) from None


def _series(data, dim: str | None, columns, time_dim: str | None, reserved: tuple[str, ...]):
    """(X with dims (..., _SER, time) in float64, series labels, series dim name, time dim).

    Refuses what the cross maps cannot label or compute: an empty or duplicated set of series,
    dims named like the result's dims (``reserved``), non-numeric data.  Integer, float16 and
    float32 data are cast to float64 (a copy: the input is never modified).
    """
    if isinstance(data, xr.Dataset):
        if columns is None:
            raise ValueError(
                f"columns= is required on a Dataset: choose from {sorted(map(str, data.data_vars))}"
            )
        names = variable_names(columns, "columns")  # one name or a list of distinct names
        for n in names:
            if n not in data.data_vars:
                raise ValueError(
                    f"unknown variable {n!r}; the Dataset has {sorted(map(str, data.data_vars))}"
                )
            check_numeric(data[n], n)
        if len(names) < 2:
            raise ValueError("cross mapping needs at least two variables in columns=")
        tdim = _time_dim(data, time_dim)
        for n in names:
            if tdim not in data[n].dims:
                raise ValueError(
                    f"variable {n!r} has no dim {tdim!r} (dims: {data[n].dims}); pass "
                    "time_dim='<your time dimension>'"
                )
        X = xr.concat([data[n] for n in names], dim=_SER, coords="minimal", compat="override",
                      join="outer")
        X, labels, sdim = X.transpose(..., _SER, tdim), names, "variable"
    else:
        if not isinstance(data, xr.DataArray):
            raise TypeError(
                f"data must be an xarray DataArray or Dataset, got {type(data).__name__}"
            )
        if columns is not None:
            raise TypeError("columns= chooses Dataset variables; on a DataArray pass dim=")
        check_numeric(data, "data" if data.name is None else str(data.name))
        tdim = _time_dim(data, time_dim)
        if dim is None or dim not in data.dims or dim == tdim:
            raise ValueError(
                f"dim={dim!r} must name the series dimension of the DataArray (dims: "
                f"{list(data.dims)}), e.g. dim='neuron'"
            )
        if data.sizes[dim] == 0:
            raise ValueError(f"dim={dim!r} has no series (size 0); cross mapping needs series")
        if dim in data.coords:
            labels = list(np.asarray(data[dim]))
            repeated = pd.Index(labels)
            repeated = sorted(map(str, repeated[repeated.duplicated()].unique()))
            if repeated:
                raise ValueError(
                    f"the labels along dim={dim!r} repeat {repeated}: rho would be ambiguous; "
                    f"give each series its own label, e.g. data.assign_coords({dim}=range(n))"
                )
        else:
            labels = list(range(data.sizes[dim]))
        X, sdim = data.rename({dim: _SER}).transpose(..., _SER, tdim), dim
    if X.sizes[tdim] == 0:
        raise ValueError(f"the time dim {tdim!r} is empty: there is nothing to cross-map")
    for d in (tdim, *X.dims[:-2]):
        if d in reserved:
            raise ValueError(
                f"the data have a dim named {d!r}, which is a dim of the result "
                f"({', '.join(reserved)}); rename it first, e.g. data.rename({d}='{d}_')"
            )
    if X.dtype != np.float64:
        X = X.astype(np.float64)  # float16/float32/int: the kernels compute in float64
    return X, labels, sdim, tdim


def _E_per_series(E, n: int, name="E") -> np.ndarray:
    if np.ndim(E) == 0:
        return np.full(n, v.check_E(E), np.int64)
    arr = np.array([v.check_E(e) for e in np.asarray(E).tolist()], np.int64)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be one int or one per series ({n}), got {len(arr)}")
    return arr


def _library_bounds(T: int, E: int, tau: int, Tp: int) -> tuple[int, int]:
    """First and last time index of the library points of a NaN-free series."""
    return max((E - 1) * tau, -Tp), T - 1 - max(Tp, 0)


def _check_library(T: int, E: int, tau: int, Tp: int, knn: int | None, name: str = "E"):
    """What a NaN-free series of length T allows at most: at least one library point (Tp),
    and knn+1 of them (as simplex: leave-one-out takes one away).  ``name`` is the parameter
    the user passed ("E" or "E_max")."""
    v.check_embedding_fits(E, tau, T, name=name)
    span = (E - 1) * tau
    lo, hi = _library_bounds(T, E, tau, Tp)
    n_lib = max(0, hi - lo + 1)
    if n_lib == 0 and Tp != 0:
        raise ValueError(
            f"Tp={Tp} leaves no target inside the data: with {name}={E}, tau={tau} and {T} time "
            f"points, Tp must lie in [{-(T - 1)}, {T - 1 - span}]; use a smaller |Tp|"
        )
    k = E + 1 if knn is None else knn
    if n_lib < k + 1:
        raise ValueError(
            f"the series give {n_lib} library points for {name}={E}, tau={tau}, Tp={Tp} "
            f"({T} time points), but knn={k} needs at least knn+1 = {k + 1}; use a longer "
            f"series, a smaller {name} or a smaller knn"
        )


def _check_exclusion(T: int, E: int, tau: int, Tp: int, excl: int, name: str = "E"):
    """An exclusion radius as long as the series leaves no prediction a neighbour."""
    lo, hi = _library_bounds(T, E, tau, Tp)
    reach = max(hi - (E - 1) * tau, T - 1 - lo)  # farthest (prediction, library) pair
    if excl >= reach:
        raise ValueError(
            f"exclusion_radius={excl} excludes every library point from every prediction: with "
            f"{name}={E}, tau={tau}, Tp={Tp} and {T} time points they are at most {reach} steps "
            f"apart; use exclusion_radius < {reach}"
        )


def _check_sample_cost(n: int, T: int, sizes, samples: int, k: int, n_tp: int,
                       n_boot: int) -> None:
    """Refuse (or warn about) a number of samples whose sampled libraries ((sizes x samples,
    T) masks and their random numbers), per-sample skills ((n, n, sizes, samples)) or
    bootstrap of the convergence statistics cannot fit in this machine's memory, or whose
    cross maps take hours, before any work is done.  Work: every sample of every library
    series predicts its T points for every target, each walking its sorted neighbour row
    until knn members of the sampled library (about knn * T / L entries)."""
    n_sizes = len(sizes)
    need = n_sizes * samples * (5 * T + 24 * n * n * n_tp)
    what = f"ccm with samples={samples}, {n_sizes} lib_sizes, {n} series of {T} points"
    check_memory(need, what + " (the sampled libraries and every sample's rho)",
                 "use fewer samples")
    if n_sizes >= 3:  # the bootstrap of the convergence statistics: (n_boot, samples) weights
        check_memory(24.0 * n_boot * samples, f"ccm with n_boot={n_boot} and samples="
                     f"{samples} (the bootstrap of rho_ci)", "use a smaller n_boot (e.g. 1000)")
    per_sample = sum(T * (k + 1) * max(T / max(int(L), 1), 1.0) for L in sizes)
    check_work(float(n) * n * n_tp * samples * per_sample, what, "use fewer samples")


def _check_block(xa: np.ndarray, rho: np.ndarray, labels, sdim: str, what: str, params: str,
                 lazy: bool = False):
    """After the cross maps of one block: raise when not one pair has a finite skill; warn,
    naming them, about series that are all NaN.  A block is the whole data unless it is
    dask-backed: then each chunk along the other dims is checked at compute time, and a chunk
    with nothing finite warns instead (the other chunks may be fine; raising would lose them).
    """
    has_value = np.isfinite(xa).any(axis=-1).reshape(-1, xa.shape[-2])  # (slices, series)
    where = " (one dask chunk of the data)" if lazy else ""
    if not np.isfinite(rho).any():
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


def _apply(X, tdim, func, out_dims, sizes, dtypes, check):
    """``func`` on every 2-D (series, time) slice of X; ``check(block, first output)`` runs
    on every block (the whole data unless X is dask-backed: then at compute time)."""

    def wrapped(xa):
        lead = xa.shape[:-2]
        flat = xa.reshape((-1,) + xa.shape[-2:])
        if len(flat) == 0:  # a broadcast dim of size 0: empty results
            return tuple(np.empty(lead + tuple(sizes[d] for d in dims), dt)
                         for dims, dt in zip(out_dims, dtypes, strict=True))
        res = [func(s) for s in flat]
        out = tuple(np.stack([r[i] for r in res]).reshape(lead + res[0][i].shape)
                    for i in range(len(out_dims)))
        check(xa, out[0])
        return out

    if X.chunks is not None:
        X = one_time_chunk(X, tdim, "ccm" if "lib_size" in sizes else "xmap")
        X = X.chunk({_SER: -1})
    used = {d for dims in out_dims for d in dims}
    sizes = {d: size for d, size in sizes.items() if d in used}
    return xr.apply_ufunc(
        wrapped, X, input_core_dims=[[_SER, tdim]], output_core_dims=out_dims,
        dask="parallelized", output_dtypes=dtypes,
        dask_gufunc_kwargs={"output_sizes": sizes},
    )


def _check_Tp_list(Tp) -> tuple[np.ndarray, bool]:
    """(Tp values, whether a list was given): distinct integers."""
    if np.ndim(Tp) == 0:
        return np.array([v.check_Tp(Tp)], np.int64), False
    vals = [v.check_Tp(t) for t in list(Tp)]
    if not vals:
        raise ValueError("Tp=[] is empty; give one Tp or a list of distinct Tp")
    if len(set(vals)) != len(vals):
        raise ValueError(f"Tp={vals} repeats a value; give each lag once")
    return np.array(vals, np.int64), True


def _check_significance(n, method, seed, quantiles, options, p_method="empirical") -> dict:
    """The surrogate settings of ccm/xmap, validated (``n`` = 0: no significance test)."""
    n = v.check_int("surrogates", n, 0, " (the number of surrogates per target; 0 for none)")
    q = v.check_quantiles(quantiles)
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"surrogate_options must be a dict, got {type(options).__name__}")
    if options and not n:
        raise ValueError(f"surrogate_options={options!r} is given but surrogates=0 draws none; "
                         "set surrogates= (e.g. 99) or leave surrogate_options out")
    if p_method not in ("empirical", "normal"):
        raise ValueError(f"p_method={p_method!r} is invalid; choose 'empirical' (rank among "
                         "the surrogates) or 'normal' (Fisher-z tail of the surrogates)")
    if n and options:
        check_options(method, options, "surrogate_options")
    opts = check_method(method, **(options or {})) if n else {}
    if n and seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    if n:
        seed = v.check_int("seed", seed, 0)
    return {"n": n, "method": method, "seed": seed, "options": opts, "p_method": p_method,
            "quantiles": q}


def _check_surrogate_memory(n: int, T: int, n_sur: int, n_tp: int, keep_null: bool) -> None:
    """Refuse surrogates whose series (three copies: drawn, scaled, grouped by E) or kept
    per-pair rho cannot fit in half of this machine's memory, before any work is done."""
    if not n_sur:
        return
    need = 24 * n * n_sur * T + (8 * n * n * n_tp * n_sur if keep_null else 0)
    fix = ("use fewer surrogates" + (" or keep_null=False" if keep_null else "")
           + ", or map subsets of the targets")
    check_memory(need, f"surrogates={n_sur} for {n} series of {T} time points (the surrogate "
                 f"series{', and every surrogate rho' if keep_null else ''})", fix, share=0.5)
    # each surrogate is drawn (FFTs, permutations: ~100 operations a value) and cross-mapped
    # from every library series (a few neighbours per point)
    check_work(float(n_sur) * n * T * (100 + 8 * n * n_tp),
               f"surrogates={n_sur} for {n} series of {T} time points", fix)


def _significance_attrs(sig: dict) -> dict:
    how = ("(1 + #{surrogate rho >= rho}) / (1 + #finite surrogate rho), one-sided"
           if sig["p_method"] == "empirical" else
           "P(Z >= (atanh(rho) - mean) / sd), mean and sd of the surrogates' atanh(rho)")
    out = {"surrogates": sig["n"], "surrogate_method": sig["method"],
           "surrogate_seed": sig["seed"], "p_method": sig["p_method"], "p_value": how,
           "null": "each target replaced by its surrogates; the library's tables unchanged"}
    out.update({f"surrogate_{k}": val for k, val in sig["options"].items()})
    return out


def _best_Tp(rho: xr.DataArray) -> xr.DataArray:
    """The Tp of the highest rho per pair (NaN where no Tp has a finite rho)."""
    best = rho.fillna(-np.inf).idxmax("Tp")  # first of equal maxima, dask-friendly
    return best.where(rho.notnull().any("Tp")).rename("best_Tp")
