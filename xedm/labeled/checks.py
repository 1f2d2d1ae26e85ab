"""What the EDM functions check about their input and their results.

Before a computation: the data container (numpy arrays, lists and pandas Series become
DataArrays), the variables and their dtypes, names that would clash with the result's, and
the parameter problems that do not depend on the values (horizon, prediction times,
exclusion radius, library size: the last for lazy data, whose core runs only at compute time).
After it, for in-memory data: results with nothing finite raise, partly finite ones warn
(predictions, or rho where the predictions are finite: too few pairs, zero variance), and a
sweep's best value is NaN only for series without any finite rho; for dask-backed data each
block's results are checked when it is computed, and a block with nothing finite warns.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ..core.embed import library_selection, prediction_times, static_library_size
from ..core.simplex import default_knn
from .common import check_numeric, resolve_dim, user_stacklevel

Data = xr.DataArray | xr.Dataset
VAR = "__xedm_variable__"  # the columns' axis while X is built


# ----------------------------------------------------------------------------- before
def variable_names(arg, name: str) -> list[str]:
    """The variable name(s) a user passed as ``name`` (e.g. columns=): one str or a list of
    distinct str; None gives [].  Anything else (an int, an empty list, non-str items) is a
    TypeError, repeated names a ValueError, each naming the parameter."""
    if arg is None:
        return []
    if isinstance(arg, str):
        names = [arg]
    else:
        try:
            names = list(arg)
        except TypeError:
            names = None
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{name} must be a variable name or a list of names, got {arg!r}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{name}={arg!r} names {repeated} more than once; give each variable "
                         "once")
    return names


def as_xarray(data, dim: str | None):
    """DataArrays and Datasets as they are; numpy arrays, lists and pandas Series as a DataArray.

    An array's time axis is its last one, named ``dim`` (default "time"); other axes are
    ``dim_0, dim_1, ...`` as xarray names them (so ``dim="dim_0"`` still picks the first).
    """
    if isinstance(data, (xr.DataArray, xr.Dataset)):
        return data
    if isinstance(data, pd.Series):
        return xr.DataArray(data)
    if isinstance(data, pd.DataFrame):
        raise TypeError(
            "data is a pandas DataFrame: pass one column (df['x']), or make it a Dataset "
            "(xr.Dataset.from_dataframe(df)) and choose variables with columns="
        )
    if isinstance(data, (np.ndarray, list, tuple)):
        try:
            arr = np.asarray(data)
        except ValueError as err:
            raise TypeError(f"data could not be read as a rectangular array: {err}") from None
        if arr.ndim == 0:
            raise ValueError("data is a single number; pass a series (time on the last axis)")
        dims = [f"dim_{i}" for i in range(arr.ndim)]
        if dim is None or dim not in dims:
            dims[-1] = dim or "time"
        return xr.DataArray(arr, dims=dims)
    raise TypeError(
        "data must be an xarray DataArray or Dataset (or a numpy array, list or pandas Series), "
        f"got {type(data).__name__}"
    )


def select(data: Data, columns, target, dim: str | None):
    """(X with dims (..., VAR, dim), y with dims (..., dim), column names, target name, dim).

    A single series already in (..., dim) layout comes back as X itself (no VAR dim):
    :func:`_apply` treats it as one column.  A target with dims the columns lack broadcasts
    the columns (one result per target series).
    """
    data = as_xarray(data, dim)
    if isinstance(data, xr.DataArray):
        if columns is not None or target is not None:
            raise TypeError(
                "columns= and target= choose variables of a Dataset; for a DataArray leave them "
                "out, or make a Dataset first (e.g. da.to_dataset(dim=...))"
            )
        name = str(data.name) if data.name is not None else "x"
        dim = resolve_dim(data, dim)
        check_numeric(data, name)
        if data.dims[-1] == dim:
            # the common layout: X is the series itself, _apply adds the (single) column
            # axis; xarray's expand_dims/transpose cost more than a whole small call
            return data, data, [name], name, dim
        X = data.expand_dims({VAR: 1}).transpose(..., VAR, dim)
        return X, data, [name], name, dim
    cols = variable_names(columns, "columns")
    if not cols:
        raise ValueError(
            f"columns= is required on a Dataset: choose from {sorted(map(str, data.data_vars))}"
        )
    tgt = variable_names(target, "target") or cols[:1]
    if len(tgt) != 1:
        raise TypeError(f"target must be one variable name, got {target!r}")
    for n in cols + tgt:
        if n not in data.data_vars:
            raise ValueError(
                f"unknown variable {n!r}; the Dataset has {sorted(map(str, data.data_vars))}"
            )
        check_numeric(data[n], n)
    dim = resolve_dim(data, dim)
    for n in cols + tgt:
        if dim not in data[n].dims:
            raise ValueError(f"variable {n!r} has no dim {dim!r} (dims: {data[n].dims})")
    X = xr.concat([data[n].drop_vars(VAR, errors="ignore") for n in cols], dim=VAR,
                  coords="minimal", compat="override", join="outer")
    y = data[tgt[0]]
    if not set(y.dims) <= set(X.dims):
        X = X.broadcast_like(y)  # the target's extra dims: one result per target series
    X = X.transpose(..., VAR, dim)
    y = y.broadcast_like(X.isel({VAR: 0}, drop=True))
    return X, y, cols, tgt[0], dim


PREDICTED = frozenset(("prediction", "observed", "rho", "mae", "rmse", "n"))


def _coord_names(obj):
    c = getattr(obj, "_coords", None)  # DataArray's own dict: .coords builds a view (~2 us)
    return obj.coords if c is None else c


def check_names(func: str, X, y, reserved: frozenset) -> None:
    """Dims and coords of the data must not take names the result gives its own variables."""
    if (reserved.isdisjoint(X.dims) and reserved.isdisjoint(_coord_names(X))
            and (y is X or reserved.isdisjoint(_coord_names(y)))):
        return
    names = set(X.dims).union(X.coords, y.coords)
    name = sorted(map(str, names.intersection(reserved)))[0]
    raise ValueError(
        f"{func}: the data has a dim or coordinate named {name!r}, a name the result uses "
        f"itself; rename it first, e.g. data.rename({{{name!r}: {name + '_'!r}}})"
    )


def check_horizon(Tp: int, T: int, name: str = "Tp") -> None:
    if abs(Tp) >= T:
        raise ValueError(
            f"{name}={Tp} leaves no library point: every target t+Tp lies outside the "
            f"{T} time points; use |{name}| < {T}"
        )


def pred_times(spec: dict, kE: int, tau: int) -> np.ndarray:
    """Prediction positions (static); an error when pred leaves none."""
    t = prediction_times(spec["pred_mask"], kE, tau, False)
    if t.size == 0:
        raise ValueError(
            f"pred selects no time point with a complete embedding window (with E={kE}, "
            f"tau={tau} the first (E-1)*tau = {(kE - 1) * tau} time points have none); "
            "choose a later pred, or a smaller E or tau"
        )
    return t


def check_exclusion(excl: int, T: int, lib, pred_t: np.ndarray, combos) -> None:
    """exclusion_radius must leave some prediction point a library point: ``combos`` are the
    (kernel E, tau, Tp) of the call (the union of their library sets counts)."""
    if excl == 0:
        return
    sel = np.zeros(T, dtype=bool)
    for kE, tau, Tp in combos:
        sel |= library_selection(T, lib, kE, tau, Tp, False)
    pos = np.flatnonzero(sel)
    if pos.size == 0:
        return  # the knn checks say why
    reach = int(max(pred_t[-1] - pos[0], pos[-1] - pred_t[0]))
    if excl >= reach:
        raise ValueError(
            f"exclusion_radius={excl} excludes every library point from every prediction point "
            f"(library states at positions {pos[0]}..{pos[-1]}, predictions at "
            f"{pred_t[0]}..{pred_t[-1]}); use exclusion_radius < {reach}"
        )


def library_check(smap_like: bool, knn, combos, T: int, lib, embedded: bool, fix: str) -> None:
    """The core's static library-size checks, run up front for lazy (dask) data so that the
    error comes at the call, not at compute time.  ``combos``: (E, kernel tau, Tp)."""
    for E, tau, Tp in combos:
        if smap_like and knn is None:
            n_lib = static_library_size(T, lib, E, tau, Tp, embedded)
            if n_lib < 2:
                raise ValueError(
                    f"lib gives {n_lib} library points for E={E}, tau={tau}, Tp={Tp}; S-map "
                    "needs at least 2: use a longer lib or a smaller E"
                )
        else:
            default_knn(knn, E, T, lib, tau, Tp, embedded, fix)




def is_lazy(X, y) -> bool:
    return not (isinstance(X.data, np.ndarray) and isinstance(y.data, np.ndarray))


# ----------------------------------------------------------------------------- after
def _all_nan_series(X, y, dim: str) -> tuple[int, int]:
    """(series whose columns or target have no finite value, all series)."""
    col_ok = np.isfinite(X).any(dim)
    bad = ~(col_ok.all(VAR) if VAR in col_ok.dims else col_ok) | ~np.isfinite(y).any(dim)
    return int(bad.sum()), int(bad.size)


def _why(X, y, dim: str, excl: int, n_max: int | None = None) -> str:
    """Why nothing finite came out (only on that path, so cost does not matter)."""
    bad, total = _all_nan_series(X, y, dim)
    if bad == total:
        return "the data has no finite values (all NaN or inf)"
    if n_max is not None and n_max < 3:
        return (f"at most {n_max} (observed, predicted) pairs, and rho needs 3: widen pred "
                "(forecasts past the data have no observed value), or check lib, the NaN "
                "gaps and exclusion_radius")
    if n_max is not None:
        return "observed or predicted values have zero variance (a constant series?)"
    return ("no prediction point has a complete, finite embedding window and a library point "
            "with a finite target" + (f" outside exclusion_radius={excl}" if excl else "")
            + "; check the NaN gaps, lib and pred, or use a smaller E or tau")


def _rho_why(n_max: int) -> str:
    if n_max < 3:
        return (f"at most {n_max} (observed, predicted) pairs, and rho needs 3: widen pred "
                "(a pred shorter than the embedding window (E-1)*tau + 3 has too few points), "
                "or check lib, the NaN gaps and exclusion_radius (a radius close to the "
                "series length leaves almost no neighbours)")
    return ("the observed or predicted values have zero variance (a constant series: every "
            "neighbour is at distance 0 and predicts the same value)")


def check_skill(func: str, rho: np.ndarray, n: np.ndarray, prediction: np.ndarray,
                inside: np.ndarray, excl: int) -> None:
    """Warn when rho is NaN although predictions are finite (series without any finite
    prediction are :func:`check_predictions`' business), saying why: no finite prediction
    at a time inside the data (only forecasts past it), fewer than 3 pairs, or zero
    variance.  ``inside`` (P,): which prediction times lie inside the data; a call that
    asks for forecasts past the data only (no observed values by design) is not warned."""
    bad = ~np.isfinite(np.asarray(rho))
    if not bad.any() or not inside.any():
        return
    fin = np.isfinite(prediction)
    bad &= fin.any(axis=-1)
    if not bad.any():
        return
    k, total = int(bad.sum()), bad.size
    some = "" if k == total else f" for {k} of {total} series"
    if not fin[..., inside][bad].any():
        why = ("no prediction inside the data is finite (only forecasts past its end): no "
               "prediction point has a library point" + (
                   f" outside exclusion_radius={excl}" if excl else "") + " with a complete, "
               "finite window and target; use a smaller exclusion_radius, E or tau, or "
               "check lib and the NaN gaps")
    else:
        why = _rho_why(int(np.max(np.asarray(n)[bad])))
    warnings.warn(f"{func}: rho (and the skill) is NaN{some}: {why}", UserWarning,
                  stacklevel=user_stacklevel())


def block_check(func: str, core):
    """``core`` of dask-backed data, checking each block's results at compute time (the
    in-memory checks cannot run at the call without computing): a block with no finite
    prediction or no finite rho warns, naming the dask chunk and why (raising would lose
    the other chunks' results)."""
    import functools

    @functools.wraps(core)
    def checked(Xb, yb):
        res = core(Xb, yb)
        if Xb.shape[0] == 0:
            return res
        where = f"{func} (one dask chunk of the data)"
        none_finite = not (np.isfinite(Xb).any() and np.isfinite(yb).any())
        pred = res.get("prediction")
        rho = np.asarray(res["rho"])
        if none_finite:
            msg = f"{where}: the data are all NaN (or inf); its results are NaN"
        elif pred is not None and not np.isfinite(pred).any():
            msg = (f"{where}: no prediction is finite: no prediction point has a complete, "
                   "finite embedding window and a library point with a finite target; check "
                   "the NaN gaps, lib and pred, or use a smaller E or tau")
        elif not np.isfinite(rho).any():
            msg = f"{where}: no rho is finite: {_rho_why(int(np.max(res['n'], initial=0)))}"
        else:
            return res
        warnings.warn(msg, UserWarning, stacklevel=user_stacklevel())
        return res

    return checked


def check_predictions(func: str, prediction: np.ndarray, X, y, dim: str, excl: int) -> None:
    """Raise when no prediction is finite; warn (with counts) when some series have none."""
    fin = np.isfinite(prediction)
    if fin.all():
        return
    ok = fin.any(axis=-1)
    if ok.all():
        return
    if not ok.any():
        raise ValueError(f"{func}: no prediction is finite: {_why(X, y, dim, excl)}")
    bad, _ = _all_nan_series(X, y, dim)
    warnings.warn(
        f"{func}: {ok.size - int(ok.sum())} of {ok.size} series gave no finite prediction "
        f"({bad} of them all-NaN); their prediction and skill are NaN",
        UserWarning, stacklevel=3,
    )


def check_sweep(func: str, ds: xr.Dataset, d: str, X, y, dim: str, excl: int) -> None:
    """A sweep raises when no value of ``d`` gives a finite rho anywhere, and warns naming the
    values (and counting the series) that give none."""
    fin = np.isfinite(ds.variables["rho"].data)
    if fin.all():
        return
    labels = ds[d].values.tolist()
    flat = fin.reshape(-1, fin.shape[-1])
    B = flat.shape[0]
    if not flat.any():
        n_max = int(np.max(ds["n"].data)) if ds["n"].size else 0
        raise ValueError(f"{func}: no {d} in {labels} gave a finite rho: "
                         f"{_why(X, y, dim, excl, n_max)}")
    parts = []
    some = flat.any(axis=1)
    live = flat[some]
    n_live = live.shape[0]
    if n_live < B:
        nan_series, _ = _all_nan_series(X, y, dim)
        parts.append(f"{B - n_live} of {B} series have no finite rho for any {d} "
                     f"({nan_series} of them all-NaN): their best_{d} is NaN")
    n_bad = (~live).sum(axis=0).tolist()
    if B == 1:
        vals = [str(lab) for lab, k in zip(labels, n_bad, strict=True) if k]
    else:
        vals = [f"{lab} ({'all' if k == n_live else k} of {n_live} series)"
                for lab, k in zip(labels, n_bad, strict=True) if k]
    if vals:
        where = f"in the other {n_live} series, " if n_live < B else ""
        parts.append(f"{where}{d} = {', '.join(vals)} gave no finite rho")
    warnings.warn(f"{func}: " + "; ".join(parts), UserWarning, stacklevel=3)


def _pick(rho: np.ndarray, labels: np.ndarray, as_float: bool = False) -> np.ndarray:
    """Label of the highest finite rho along the last axis (ties to the first); NaN where
    none is finite (the result is then float)."""
    fin = np.isfinite(rho)
    best = labels[np.argmax(np.where(fin, rho, -np.inf), axis=-1)]
    none = ~fin.any(axis=-1)
    if as_float or none.any():
        best = np.where(none, np.nan, best.astype(np.float64))
    return best


def add_best(ds: xr.Dataset, d: str, lazy: bool = False) -> xr.Dataset:
    """Add ``best_<d>`` (highest rho; ties to the first, i.e. smallest E) as variable and, for
    one in-memory series, attr; NaN for series without a finite rho (dask: always float)."""
    rho = ds["rho"]
    labels = ds[d].values
    if lazy:
        best = xr.apply_ufunc(_pick, rho, input_core_dims=[[d]], kwargs={"labels": labels,
                              "as_float": True}, dask="parallelized", output_dtypes=[float])
        ds[f"best_{d}"] = best
        return ds
    best = _pick(rho.data, labels)
    ds[f"best_{d}"] = (rho.dims[:-1], best)
    if best.ndim == 0:
        ds.attrs[f"best_{d}"] = best.item()
    return ds
