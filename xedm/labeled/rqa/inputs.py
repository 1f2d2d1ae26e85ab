"""RQA's inputs: the series stacked as (..., variable, time), the partner series of other= and
joint=, the integer and finiteness checks, and the recurrence problem of a batch of matrices."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ...core import validate as v
from ...recurrence.recurrence import NORMS, RecurrenceProblem, embedding_coords
from ..inputs import as_xarray, check_numeric, resolve_dim, variable_names

VAR = "_rqa_variable"


def _resolve_dim(data, dim, what):
    """resolve_dim, with a message naming the partner (other=, joint=) when it lacks ``dim``."""
    try:
        return resolve_dim(data, dim)
    except ValueError:
        if what == "data":
            raise
        raise ValueError(f"{what}=: the series has no dim {dim!r}, the data's time dim (its "
                         f"dims: {list(data.dims)}); rename its time dim to {dim!r} first, "
                         f"e.g. {what}=y.rename({{'<its time dim>': {dim!r}}})") from None


def stack(data, names, dim, what):
    """DataArray (..., VAR, dim) of the chosen variables."""
    if isinstance(data, (np.ndarray, pd.DataFrame)):
        data = as_xarray(data, dim)  # time on the last axis / a DataFrame's time column
    if isinstance(data, xr.DataArray):
        if names is not None:
            raise TypeError(f"{what}: variable names choose variables of a Dataset; "
                            "with a DataArray pass DataArrays")
        dim = _resolve_dim(data, dim, what)
        check_numeric(data, str(data.name or what))
        return data.expand_dims({VAR: 1}, axis=-1).transpose(..., VAR, dim), dim
    if not isinstance(data, xr.Dataset):
        raise TypeError(f"{what} must be an xarray DataArray or Dataset, got {type(data).__name__}")
    if names is None:
        raise ValueError(f"{what}: name the variable(s), e.g. ds.edm.rqa('x'); the Dataset has "
                         f"{sorted(map(str, data.data_vars))}")
    names = variable_names(names, "columns" if what == "data" else what)
    for n in names:
        if n not in data.data_vars:
            raise ValueError(f"{what}: unknown variable {n!r}; the Dataset has "
                             f"{sorted(map(str, data.data_vars))}")
        check_numeric(data[n], n)
    dim = resolve_dim(data, dim)
    for n in names:  # the Dataset has dim, but each chosen variable needs it
        if dim not in data[n].dims:
            raise ValueError(f"time_dim={dim!r}: variable {n!r} has no dim {dim!r} (its dims: "
                             f"{list(data[n].dims)}); pass time_dim='<the time dimension of "
                             f"{n}>'")
    X = xr.concat([data[n] for n in names], dim=VAR, coords="minimal", compat="override",
                  join="outer")
    return X.transpose(..., VAR, dim), dim


def partner(data, arg, ncols, dim, what):
    """The other= / joint= series as (..., VAR, dim): as many variables as the data (columns=),
    since cross distances and the joint matrix pair the state coordinates one to one."""
    if arg is None:
        return None
    series = isinstance(arg, (xr.DataArray, xr.Dataset)) or (
        isinstance(arg, np.ndarray) and arg.dtype.kind not in "OUS")  # values, not names
    if isinstance(data, xr.Dataset) and not series:
        names = variable_names(arg, what)
        if len(names) != ncols:
            raise ValueError(f"{what}= names {len(names)} variable(s); columns has {ncols}: "
                             f"give {what}= as many variables as columns=")
        return stack(data, names, dim, what)[0]
    Y, _ = stack(arg, None, dim, what)
    if ncols != 1:
        raise ValueError(f"{what}= is one series, but columns= names {ncols} variables (one "
                         f"multivariate state), and {what}= needs as many: pass {what}= as a "
                         f"list of {ncols} variable names of the Dataset")
    return Y




def finite(values: np.ndarray, what: str):
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} contains NaN or infinite values; RQA needs finite data: "
                         "drop or fill them first (e.g. .dropna(dim) or .interpolate_na(dim))")


def prepare(data, columns, other, joint, E, tau, dim, norm):
    E = v.check_int("E", E, 1)
    tau = v.check_int("tau", tau, 1)
    if norm not in NORMS:
        raise ValueError(f"norm={norm!r} is invalid; choose one of {NORMS}")
    if other is not None and joint is not None:
        raise ValueError("other= (cross recurrence) and joint= (joint recurrence) exclude "
                         "each other; give one of them")
    if isinstance(data, pd.DataFrame):
        data = as_xarray(data, dim)  # a Dataset: other= and joint= may name its columns
    X, dim = stack(data, columns, dim, "data")
    ncols = X.sizes[VAR]
    Y = partner(data, other if other is not None else joint, ncols, dim, "other" if
                 other is not None else "joint")
    kind = "self" if Y is None else ("cross" if other is not None else "joint")
    if Y is not None:
        ydim = f"{dim}_" if kind == "cross" else dim
        Y = Y.rename({dim: ydim}) if kind == "cross" else Y
        if kind == "joint" and Y.sizes[dim] != X.sizes[dim]:
            raise ValueError(f"joint= needs a series of the same length along {dim!r}: "
                             f"{X.sizes[dim]} and {Y.sizes[dim]}")
        if (kind == "joint" and dim in X.indexes and dim in Y.indexes
                and not X.indexes[dim].equals(Y.indexes[dim])):
            raise ValueError(f"joint=: the two series have different {dim!r} labels, and joint "
                             "recurrence pairs them time by time; align them first (e.g. "
                             "xr.align(x, y, join='inner')) or drop one coordinate")
        # broadcast the other dims only (time and the variable axis stay each one's own)
        tx = X.isel({dim: 0, VAR: 0}, drop=True)
        ty = Y.isel({ydim: 0, VAR: 0}, drop=True)
        tx, ty = xr.broadcast(tx, ty)
        X = X.broadcast_like(tx).transpose(*tx.dims, VAR, dim)
        Y = Y.broadcast_like(tx).transpose(*tx.dims, VAR, ydim)
    return X, Y, dim, kind, E, tau


def arrays(X, Y, kind, dim):
    batch_dims = [d for d in X.dims if d not in (VAR, dim)]
    xa = np.asarray(X.values, np.float64)
    ya = None if Y is None else np.asarray(Y.values, np.float64)
    return (batch_dims, *checked(xa, ya, kind))


def checked(xa, ya, kind):
    """(B, nvar, T) arrays of finite float64 values; joint: one array of both channels."""
    xa = np.asarray(xa, np.float64)
    finite(xa, "data")
    nvar, T = xa.shape[-2], xa.shape[-1]
    xa = xa.reshape(-1, nvar, T)
    if ya is not None:
        ya = np.asarray(ya, np.float64)
        finite(ya, "other" if kind == "cross" else "joint")
        ya = ya.reshape(-1, nvar, ya.shape[-1])
        if kind == "joint":
            xa = np.concatenate([xa, ya], axis=1)
            ya = None
    return xa, ya


def problem(xa, ya, kind, E, tau, theiler, pairs, width_x, width_y):
    """One matrix per (series b, window start s) in ``pairs``."""
    nbatch, rows_per, _ = xa.shape
    nch = 2 if kind == "joint" else 1
    cvar, coff, cchan = embedding_coords(rows_per // nch, E, tau, nch)
    X = np.ascontiguousarray(xa.reshape(nbatch * rows_per, -1))
    Y = X if ya is None else np.ascontiguousarray(ya.reshape(nbatch * ya.shape[1], -1))
    na, nb = width_x - (E - 1) * tau, width_y - (E - 1) * tau
    yrows = rows_per if ya is None else ya.shape[1]
    mats = [(b * rows_per, s, na, b * yrows, s, nb) for b, s in pairs]
    return RecurrenceProblem(X, Y, cvar, coff, cchan, np.array(mats, np.int64).reshape(-1, 6),
                             kind != "cross", int(theiler) if kind != "cross" else 0)


def too_short(n_states, E, tau, where):
    if n_states < 2:
        raise ValueError(f"series too short: {where} leaves {n_states} state(s) with E={E}, "
                         f"tau={tau} (N - (E-1)*tau must be >= 2)")
