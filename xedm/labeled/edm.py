"""The xarray layer of the EDM functions: names, dims, coords, attrs, dask.

Each public function resolves labels into positions, validates parameters, and runs the array
core (:mod:`xedm.core`) through :func:`xarray.apply_ufunc`, so extra dims broadcast (one result
per series, computed in batched kernels) and dask-backed inputs stay lazy.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..core import simplex as _simplex
from ..core import smap as _smap
from ..core import validate as v
from ..core.embed import library_selection, prediction_times, static_library_size
from ..core.simplex import default_knn
from ..kernels import resolve_backend
from ..neighbors.base import resolve_method
from .common import (
    build_dataset,
    check_numeric,
    describe,
    extended_labels,
    lib_spec,
    pred_mask,
    resolve_dim,
    time_index,
)

Data = xr.DataArray | xr.Dataset
THETAS = (0.0, 0.01, 0.1, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
_OUT = "__xedm_out__"
_VAR = "__xedm_variable__"


# ----------------------------------------------------------------------------- inputs
def _names(arg, name: str) -> list[str]:
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
    """(X with dims (..., _VAR, dim), y with dims (..., dim), column names, target name, dim).

    A single series already in (..., dim) layout comes back as X itself (no _VAR dim):
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
        X = data.expand_dims({_VAR: 1}).transpose(..., _VAR, dim)
        return X, data, [name], name, dim
    cols = _names(columns, "columns")
    if not cols:
        raise ValueError(
            f"columns= is required on a Dataset: choose from {sorted(map(str, data.data_vars))}"
        )
    tgt = _names(target, "target") or cols[:1]
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
    X = xr.concat([data[n].drop_vars(_VAR, errors="ignore") for n in cols], dim=_VAR,
                  coords="minimal", compat="override", join="outer")
    y = data[tgt[0]]
    if not set(y.dims) <= set(X.dims):
        X = X.broadcast_like(y)  # the target's extra dims: one result per target series
    X = X.transpose(..., _VAR, dim)
    y = y.broadcast_like(X.isel({_VAR: 0}, drop=True))
    return X, y, cols, tgt[0], dim


_PREDICTED = frozenset(("prediction", "observed", "rho", "mae", "rmse", "n"))


def _coord_names(obj):
    c = getattr(obj, "_coords", None)  # DataArray's own dict: .coords builds a view (~2 us)
    return obj.coords if c is None else c


def _check_names(func: str, X, y, reserved: frozenset) -> None:
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


def _check_horizon(Tp: int, T: int, name: str = "Tp") -> None:
    if abs(Tp) >= T:
        raise ValueError(
            f"{name}={Tp} leaves no library point: every target t+Tp lies outside the "
            f"{T} time points; use |{name}| < {T}"
        )


def _pred_times(spec: dict, kE: int, tau: int) -> np.ndarray:
    """Prediction positions (static); an error when pred leaves none."""
    t = prediction_times(spec["pred_mask"], kE, tau, False)
    if t.size == 0:
        raise ValueError(
            f"pred selects no time point with a complete embedding window (with E={kE}, "
            f"tau={tau} the first (E-1)*tau = {(kE - 1) * tau} time points have none); "
            "choose a later pred, or a smaller E or tau"
        )
    return t


def _check_exclusion(excl: int, T: int, lib, pred_t: np.ndarray, combos) -> None:
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


def _library_check(smap_like: bool, knn, combos, T: int, lib, embedded: bool, fix: str) -> None:
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


def _params(data: Data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim,
            embedded, func: str = "simplex", reserved=_PREDICTED, E_name: str = "E"):
    X, y, cols, tgt, dim = select(data, columns, target, dim)
    _check_names(func, X, y, reserved)
    index = time_index(X, dim)
    T = len(index)
    if T < 3:
        raise ValueError(
            f"the data has {T} time point{'s' * (T != 1)} along dim {dim!r}; EDM needs at least 3 "
            "(library points and a point to predict): pass a longer series"
        )
    if E is None:
        if not embedded:
            raise TypeError(
                "E (the embedding dimension) is required, e.g. E=3; it may be left out only "
                "with embedded=True, where it is the number of columns"
            )
        E = len(cols)
    E = v.check_E(E)
    tau = v.check_tau(tau)
    Tp = v.check_Tp(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    v.check_embedding_fits(E, tau, T, len(cols), bool(embedded), name=E_name)
    _check_horizon(Tp, T)
    spec = {
        "lib": lib_spec(lib, index, dim),
        "pred_mask": pred_mask(pred, index, dim),
    }
    attrs = {
        "E": E, "tau": tau, "Tp": Tp, "exclusion_radius": excl,
        "lib": describe(lib), "pred": describe(pred), "columns": ", ".join(cols),
        "target": tgt, "embedded": int(bool(embedded)),
    }
    if embedded:
        tau = 1  # no lags with embedded=True: tau has no effect (and must not size the padding)
    return X, y, index, dim, E, tau, Tp, knn, excl, spec, attrs


def _engines(backend, neighbors, kernels: Sequence[str]):
    return resolve_backend(backend, kernels), resolve_method(neighbors)


# ----------------------------------------------------------------------------- running
def _apply(X, y, dim, core, outputs: dict[str, tuple[list[str], dict[str, int], Any]],
           lazy: bool | None = None):
    """Run ``core(Xb (B, C, T), yb (B, T)) -> dict`` over every series of X/y.

    ``outputs`` maps result names to (core dims, their sizes, dtype); arrays the core returns
    have the series axis first; ``lazy`` is :func:`_lazy` when the caller has it.
    """
    names = list(outputs)

    def wrapped(xa, ya):
        # float64 up front: float16/float32/int data would otherwise reach the kernels as
        # other numba specialisations (float16 has none); a no-op for float64
        xa = xa.astype(np.float64, copy=False)
        ya = ya.astype(np.float64, copy=False)
        lead = xa.shape[:-2]
        res = core(xa.reshape((-1,) + xa.shape[-2:]), ya.reshape((-1, ya.shape[-1])))
        return tuple(np.asarray(res[n]).reshape(lead + np.shape(res[n])[1:]) for n in names)

    if not (_lazy(X, y) if lazy is None else lazy):
        # numpy in, numpy out, without apply_ufunc's bookkeeping (it dominates small calls)
        one = _VAR not in X.dims
        lead_dims = X.dims[:-1] if one else X.dims[:-2]
        if y.dims != (*lead_dims, dim):
            y = y.transpose(*lead_dims, dim)
        arrays = wrapped(X.data[..., None, :] if one else X.data, y.data)
        lead_coords = {k: v for k, v in X.coords.variables.items()
                       if k != dim and set(v.dims) <= set(lead_dims)}
        return {n: ((*lead_dims, *outputs[n][0]), a) for n, a in zip(names, arrays,
                                                                     strict=True)}, lead_coords
    if _VAR not in X.dims:
        X = X.expand_dims({_VAR: 1}, axis=-2)
    X = X.chunk({dim: -1, _VAR: -1})
    y = y.chunk({dim: -1})
    sizes = {d: s for spec in outputs.values() for d, s in spec[1].items()}
    results = xr.apply_ufunc(
        wrapped,
        X,
        y,
        input_core_dims=[[_VAR, dim], [dim]],
        output_core_dims=[outputs[n][0] for n in names],
        dask="parallelized",
        output_dtypes=[outputs[n][2] for n in names],
        dask_gufunc_kwargs={"output_sizes": sizes},
        keep_attrs=False,
    )
    coords = {k: c.variable for k, c in results[0].coords.items()}
    return {n: (r.dims, r.data) for n, r in zip(names, results, strict=True)}, coords


def _finish(applied, dim: str, index, out_t, attrs: dict, coords: dict | None = None):
    """One Dataset from ``_apply``'s (dims, data) pairs: the output axis becomes ``dim`` on the
    (extended) time labels of ``out_t``."""
    results, all_coords = applied
    all_coords = dict(all_coords)
    data_vars = {n: (tuple(dim if d == _OUT else d for d in dims), data)
                 for n, (dims, data) in results.items()}
    if out_t is not None:
        all_coords[dim] = extended_labels(index, out_t)
    all_coords.update(coords or {})
    return build_dataset(data_vars, all_coords, attrs)


_SKILL = {"rho": ([], {}, float), "mae": ([], {}, float), "rmse": ([], {}, float),
          "n": ([], {}, np.int64)}


def _skill_over(d: str, size: int):
    return {k: ([d], {d: size}, t) for k, (_, _, t) in _SKILL.items()}


def _lazy(X, y) -> bool:
    return not (isinstance(X.data, np.ndarray) and isinstance(y.data, np.ndarray))


# ----------------------------------------------------------------------------- no finite result
def _all_nan_series(X, y, dim: str) -> tuple[int, int]:
    """(series whose columns or target have no finite value, all series)."""
    col_ok = np.isfinite(X).any(dim)
    bad = ~(col_ok.all(_VAR) if _VAR in col_ok.dims else col_ok) | ~np.isfinite(y).any(dim)
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


def _check_predictions(func: str, prediction: np.ndarray, X, y, dim: str, excl: int) -> None:
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


def _check_sweep(func: str, ds: xr.Dataset, d: str, X, y, dim: str, excl: int) -> None:
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


def _best(ds: xr.Dataset, d: str, lazy: bool = False) -> xr.Dataset:
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


# ----------------------------------------------------------------------------- public
_INPUT_NOTES = """Notes
    -----
    *Input.*  ``data`` may also be a numpy array, a list or a pandas Series (time on the last
    axis).  Integer and float data of any width are computed in float64 (the input is never
    modified); bool, complex, string, object and datetime data are refused with a TypeError
    (convert with ``.astype(float)``: a 0/1 series is allowed that way, though its neighbours
    are mostly ties).  Time labels only label: states follow the array order, and forecasts
    past the data get labels extrapolated with the step ``time[1] - time[0]`` (numbers,
    datetimes) or NaN labels where the labels cannot be extrapolated (strings).

    *No finite result.*  With in-memory data, a call where no prediction is finite raises a
    ValueError saying why (all-NaN data, NaN gaps, exclusion_radius, ...); when only some
    series (e.g. some neurons of a ``(neuron, time)`` array) have no finite prediction, their
    results are NaN and a UserWarning says how many (and how many of those are all-NaN).
    Dask-backed data stays lazy, so these value checks are not made for it.
"""

_SWEEP_NOTES = """Notes
    -----
    *No finite skill.*  With in-memory data the sweep raises a ValueError (saying why) when no
    value gives a finite rho, and warns (UserWarning) naming the values that give none and
    counting the series without any finite rho; ``best_{d}`` is NaN for those series (the
    variable is then float) and otherwise the value with the highest rho (ties to the first).
    With dask-backed data the result stays lazy, ``best_{d}`` is a lazy float variable (no
    attr), and these checks are not made.  Input types are handled as in :func:`simplex`.
"""


def simplex(
    data: Data,
    E: int | None = None,
    *,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    embedded: bool = False,
    dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
) -> xr.Dataset:
    """Simplex projection (Sugihara & May 1990): forecast by the k nearest states.

    Parameters
    ----------
    data : DataArray or Dataset
        The series; time on ``dim`` (default "time"), any other dims broadcast (one result per
        series).  On a Dataset choose variables with ``columns`` and ``target``.
    E : int
        Embedding dimension; the state at t is ``(x_t, x_{t-tau}, ..., x_{t-(E-1)tau})``.
        Required, except with ``embedded=True`` (where it is the number of columns).
    tau : int, default 1
        Lag in time steps (>= 1; pyEDM's ``tau=-1``).  No effect with ``embedded=True``.
    Tp : int, default 1
        Prediction horizon; negative values predict the past.  Forecasts past the end of the
        data land on an extended time coordinate with ``observed = NaN``.
    knn : int, optional
        Neighbours used (default E + 1).
    exclusion_radius : int, default 0
        Library points within this many steps of the prediction point are excluded (the point
        itself always is: leave-one-out).
    lib, pred : None, slice, list of slices, or boolean mask along time
        Library and prediction sets by label (inclusive slices, like ``.sel``).
    columns, target : str or list of str
        Dataset variables forming the state (each contributes E lags) and the variable
        predicted (default: the first column).  ``columns="x", target="y"`` cross-maps.  A
        target with dims the columns lack broadcasts them (one result per target series).
    embedded : bool, default False
        Use the columns themselves as state coordinates; E may be left out (a given E must
        equal their number).
    dim : str, optional
        Time dimension.
    backend : {"auto", "cpu", "gpu"}, optional
    neighbors : {"auto", "exact"}, optional

    Returns
    -------
    Dataset
        ``prediction`` and ``observed`` on the (extended) time coordinate at the target times
        t + Tp; ``rho``, ``mae``, ``rmse``, ``n``; parameters, backend and neighbour method in
        ``attrs``.
    {notes}
    Examples
    --------
    >>> import numpy as np, xarray as xr, xedm
    >>> x = xr.DataArray(np.sin(0.3 * np.arange(300)), dims="time", name="x")
    >>> out = x.edm.simplex(E=2)
    >>> bool(out.rho > 0.99)
    True
    >>> ds = xr.Dataset({"a": x, "b": x.shift(time=1)})
    >>> ds.edm.simplex(columns=["a", "b"], embedded=True).attrs["E"]  # E = number of columns
    2
    """
    X, y, index, dim, E, tau, Tp, knn, excl, spec, attrs = _params(
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim, embedded)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict"])
    kE = 1 if embedded else E
    pred_t = _pred_times(spec, kE, tau)
    _check_exclusion(excl, len(index), spec["lib"], pred_t, [(kE, tau, Tp)])
    lazy = _lazy(X, y)
    if lazy:
        _library_check(False, knn, [(E, tau, Tp)], len(index), spec["lib"], bool(embedded),
                       "a smaller E")
    out_t = pred_t + Tp
    P = len(out_t)

    def core(Xb, yb):
        return _simplex.simplex(Xb, yb, E=E, tau=tau, Tp=Tp, knn=knn, excl=excl,
                                embedded=bool(embedded), backend=backend, method=method, **spec)

    results = _apply(X, y, dim, core, {
        "prediction": ([_OUT], {_OUT: P}, float),
        "observed": ([_OUT], {_OUT: P}, float),
        **_SKILL,
    }, lazy)
    if not lazy:
        _check_predictions("simplex", results[0]["prediction"][1], X, y, dim, excl)
    attrs.update(knn=int(knn if knn is not None else E + 1), backend=backend, neighbors=method)
    return _finish(results, dim, index, out_t, attrs)


def smap(
    data: Data,
    E: int | None = None,
    *,
    theta: float = 0.0,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    embedded: bool = False,
    solver: str = "lstsq",
    alpha: float = 0.0,
    singular_values: bool = False,
    dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
) -> xr.Dataset:
    """S-map (Sugihara 1994): locally weighted linear maps; theta sets the nonlinearity.

    Weights ``exp(-theta * d / mean(d))`` over the neighbours (every library point unless
    ``knn`` is given); each prediction solves a weighted least-squares problem whose
    coefficients (intercept, then one per state coordinate: the local Jacobian) are returned.

    Parameters
    ----------
    theta : float, default 0
        Localisation; 0 is a global linear autoregression.
    solver : {"lstsq", "ridge"}
        "lstsq": SVD least squares (minimum-norm, as numpy.linalg.lstsq).  "ridge":
        ``|| diag(w) (A c - b) ||^2 + alpha * sum_{j>=1} c_j^2`` (intercept not penalised).
    alpha : float
        Ridge strength (solver="ridge").
    singular_values : bool
        Also return the singular values of each weighted design matrix.
    Other parameters are as in :func:`simplex` (E may be left out with ``embedded=True``).

    Returns
    -------
    Dataset
        As :func:`simplex`, plus ``coefficients`` over (time, ``coef``).

    Notes
    -----
    Input types, forecast labels and results without any finite prediction are handled as in
    :func:`simplex`.

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(400)
    >>> out = x.edm.smap(E=2, theta=2.0)
    >>> out.coef.values.tolist()
    ['intercept', 'x(t-0)', 'x(t-1)']
    """
    reserved = _PREDICTED.union(("coefficients", "coef"), ("singular_values", "singular_value")
                                if singular_values else ())
    X, y, index, dim, E, tau, Tp, knn, excl, spec, attrs = _params(
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim, embedded,
        "smap", reserved)
    thetas = v.check_theta(theta)
    if thetas.size != 1:
        raise ValueError("smap takes one theta; use predict_nonlinear for a list of theta")
    solver, alpha = v.check_solver(solver, alpha)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "smap_predict"])
    kE = 1 if embedded else E
    pred_t = _pred_times(spec, kE, tau)
    _check_exclusion(excl, len(index), spec["lib"], pred_t, [(kE, tau, Tp)])
    lazy = _lazy(X, y)
    if lazy:
        _library_check(True, knn, [(kE, tau, Tp)], len(index), spec["lib"], bool(embedded),
                       "a smaller E")
    out_t = pred_t + Tp
    P = len(out_t)
    names = attrs["columns"].split(", ")
    coef = ["intercept"] + [f"{c}(t-{e * tau})" for c in names for e in range(kE)]
    nc = len(coef)

    def core(Xb, yb):
        res = _smap.smap(Xb, yb, E=kE, tau=tau, Tp=Tp, thetas=thetas, knn=knn, excl=excl,
                         embedded=bool(embedded), backend=backend, method=method,
                         alpha=alpha if solver == "ridge" else 0.0,
                         want_sv=singular_values, **spec)
        out = {k: res[k][0] for k in ("prediction", "coefficients", *(
            ["singular_values"] if singular_values else []), "rho", "mae", "rmse", "n")}
        out["observed"] = res["observed"]
        return out

    outputs = {
        "prediction": ([_OUT], {_OUT: P}, float),
        "observed": ([_OUT], {_OUT: P}, float),
        "coefficients": ([_OUT, "coef"], {_OUT: P, "coef": nc}, float),
        **_SKILL,
    }
    if singular_values:
        outputs["singular_values"] = ([_OUT, "singular_value"], {"singular_value": nc}, float)
    results = _apply(X, y, dim, core, outputs, lazy)
    if not lazy:
        _check_predictions("smap", results[0]["prediction"][1], X, y, dim, excl)
    attrs.update(theta=float(thetas[0]), knn=-1 if knn is None else knn, solver=solver,
                 alpha=alpha, backend=backend, neighbors=method)
    return _finish(results, dim, index, out_t, attrs, {"coef": coef})


def _sweep_reserved(d: str) -> frozenset:
    return frozenset(("rho", "mae", "rmse", "n", d, f"best_{d}"))


def embed_dimension(
    data: Data,
    E_max: int = 10,
    *,
    E: Sequence[int] | None = None,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
) -> xr.Dataset:
    """Simplex skill versus embedding dimension E = 1..E_max (or the list ``E``).

    All E come from one pass over the distances (they accumulate across E).  The best E (highest
    rho, ties to the smaller E) is the variable ``best_E`` and, for one series, ``attrs["best_E"]``.

    Parameters
    ----------
    E_max : int, default 10
        Largest E tried (E = 1..E_max).
    E : list of int, optional
        The E values to try instead (distinct, >= 1; overrides E_max).
    Other parameters are as in :func:`simplex`.

    Returns
    -------
    Dataset
        ``rho``, ``mae``, ``rmse``, ``n`` over ``E`` (one set per series) and ``best_E``;
        parameters in ``attrs`` (with ``attrs["best_E"]`` for one in-memory series).

    {notes}
    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(500)
    >>> skill = x.edm.embed_dimension(E_max=6)
    >>> skill.rho.dims
    ('E',)
    """
    if E is None:
        E_top = v.check_int("E_max", E_max, 1, " (the largest E tried: use E_max=1 or more)")
        what, fix = "E_max", "a smaller E_max"
    else:
        E_list = np.sort(v.check_int_list("E", E, 1))
        E_top, what, fix = int(E_list[-1]), "E", "smaller E values"
    X, y, index, dim, _, tau, Tp, knn, excl, spec, attrs = _params(
        data, E_top, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim,
        False, "embed_dimension", _sweep_reserved("E"), what)
    if E is None:
        E_list = np.arange(1, E_top + 1)  # after the check that E_max fits the series
    T = len(index)
    pred_t = _pred_times(spec, int(E_list[0]), tau)
    _check_exclusion(excl, T, spec["lib"], pred_t, [(int(E_list[0]), tau, Tp)])
    lazy = _lazy(X, y)
    if lazy:
        _library_check(False, knn, [(int(e), tau, Tp) for e in E_list], T, spec["lib"], False,
                       fix)
    backend, method = _engines(backend, neighbors,
                               ["simplex_sweep", "knn_sweep", "simplex_predict"])

    def core(Xb, yb):
        res = _simplex.embed_dimension(Xb, yb, E_list=E_list, tau=tau, Tp=Tp, knn=knn,
                                       excl=excl, backend=backend, method=method, fix=fix,
                                       **spec)
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, core, _skill_over("E", len(E_list)), lazy)
    attrs.pop("E")
    attrs.update(E_max=int(E_list[-1]), knn=-1 if knn is None else knn, backend=backend,
                 neighbors=method)
    ds = _finish(results, dim, index, None, attrs, {"E": E_list})
    if not lazy:
        _check_sweep("embed_dimension", ds, "E", X, y, dim, excl)
    return _best(ds, "E", lazy)


def predict_interval(
    data: Data,
    E: int | None = None,
    *,
    Tp_max: int = 10,
    Tp: Sequence[int] | None = None,
    tau: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    embedded: bool = False,
    dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
) -> xr.Dataset:
    """Simplex skill versus prediction horizon Tp = 1..Tp_max (or the list ``Tp``).

    One neighbour table serves every Tp.

    Parameters
    ----------
    Tp_max : int, default 10
        Largest horizon tried (Tp = 1..Tp_max).
    Tp : list of int, optional
        The horizons to try instead (distinct; negative allowed; overrides Tp_max).
    Other parameters are as in :func:`simplex` (E may be left out with ``embedded=True``).

    Returns
    -------
    Dataset
        ``rho``, ``mae``, ``rmse``, ``n`` over ``Tp`` (one set per series) and ``best_Tp``;
        parameters in ``attrs`` (with ``attrs["best_Tp"]`` for one in-memory series).

    {notes}
    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(500)
    >>> skill = x.edm.predict_interval(E=2, Tp_max=5)
    >>> [int(t) for t in skill.Tp]
    [1, 2, 3, 4, 5]
    """
    if Tp is None:
        Tp_top = v.check_int("Tp_max", Tp_max, 1, " (the largest horizon tried)")
        what, fix = "Tp_max", "a smaller Tp_max"
    else:
        Tp_list = v.check_int_list("Tp", Tp)
        what, fix = "Tp", "other Tp values"
    X, y, index, dim, E, tau, _, knn, excl, spec, attrs = _params(
        data, E, tau, 1 if Tp is None else int(Tp_list[0]), knn, exclusion_radius, lib, pred,
        columns, target, dim, embedded, "predict_interval", _sweep_reserved("Tp"))
    T = len(index)
    if Tp is None:
        _check_horizon(Tp_top, T, what)
        Tp_list = np.arange(1, Tp_top + 1)  # after the check that Tp_max fits the series
    else:
        for tp in Tp_list.tolist():
            _check_horizon(tp, T, what)
    kE = 1 if embedded else E
    pred_t = _pred_times(spec, kE, tau)
    _check_exclusion(excl, T, spec["lib"], pred_t, [(kE, tau, int(tp)) for tp in Tp_list])
    lazy = _lazy(X, y)
    if lazy:
        _library_check(False, knn, [(E, tau, int(tp)) for tp in Tp_list], T, spec["lib"],
                       bool(embedded), f"{fix}, a smaller E")
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict"])

    def core(Xb, yb):
        res = _simplex.predict_interval(Xb, yb, E=E, tau=tau, Tp_list=Tp_list, knn=knn,
                                        excl=excl, embedded=bool(embedded), backend=backend,
                                        method=method, fix=f"{fix}, a smaller E", **spec)
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, core, _skill_over("Tp", len(Tp_list)), lazy)
    attrs.pop("Tp")
    attrs.update(knn=int(knn if knn is not None else E + 1), backend=backend, neighbors=method)
    ds = _finish(results, dim, index, None, attrs, {"Tp": Tp_list})
    if not lazy:
        _check_sweep("predict_interval", ds, "Tp", X, y, dim, excl)
    return _best(ds, "Tp", lazy)


def predict_nonlinear(
    data: Data,
    E: int | None = None,
    *,
    theta: Sequence[float] = THETAS,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    embedded: bool = False,
    solver: str = "lstsq",
    alpha: float = 0.0,
    dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
) -> xr.Dataset:
    """S-map skill versus theta: rising rho with theta is evidence of state-dependent
    (nonlinear) dynamics.  Distances are computed once per prediction point for every theta.

    Parameters
    ----------
    theta : list of float, default (0, 0.01, 0.1, ..., 9)
        The localisations tried (distinct, finite, >= 0).
    Other parameters are as in :func:`smap` (E may be left out with ``embedded=True``).

    Returns
    -------
    Dataset
        ``rho``, ``mae``, ``rmse``, ``n`` over ``theta`` (one set per series) and ``best_theta``;
        parameters in ``attrs`` (with ``attrs["best_theta"]`` for one in-memory series).

    {notes}
    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(300)
    >>> skill = x.edm.predict_nonlinear(E=2, theta=[0, 1, 4])
    >>> bool(skill.rho.sel(theta=4) > skill.rho.sel(theta=0))
    True
    """
    thetas = v.check_theta(theta)
    X, y, index, dim, E, tau, Tp, knn, excl, spec, attrs = _params(
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim, embedded,
        "predict_nonlinear", _sweep_reserved("theta"))
    solver, alpha = v.check_solver(solver, alpha)
    kE = 1 if embedded else E
    T = len(index)
    pred_t = _pred_times(spec, kE, tau)
    _check_exclusion(excl, T, spec["lib"], pred_t, [(kE, tau, Tp)])
    lazy = _lazy(X, y)
    if lazy:
        _library_check(True, knn, [(kE, tau, Tp)], T, spec["lib"], bool(embedded),
                       "a smaller E")
    backend, method = _engines(backend, neighbors, ["knn_sweep", "smap_predict"])

    def core(Xb, yb):
        res = _smap.smap(Xb, yb, E=kE, tau=tau, Tp=Tp, thetas=thetas, knn=knn, excl=excl,
                         embedded=bool(embedded), backend=backend, method=method,
                         alpha=alpha if solver == "ridge" else 0.0, **spec)
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, core, _skill_over("theta", len(thetas)), lazy)
    attrs.update(knn=-1 if knn is None else knn, solver=solver, alpha=alpha, backend=backend,
                 neighbors=method)
    ds = _finish(results, dim, index, None, attrs, {"theta": thetas})
    if not lazy:
        _check_sweep("predict_nonlinear", ds, "theta", X, y, dim, excl)
    return _best(ds, "theta", lazy)


simplex.__doc__ = simplex.__doc__.replace("{notes}", _INPUT_NOTES)
for _f in (embed_dimension, predict_interval, predict_nonlinear):
    _d = {"embed_dimension": "E", "predict_interval": "Tp", "predict_nonlinear": "theta"}
    _f.__doc__ = _f.__doc__.replace("{notes}", _SWEEP_NOTES.replace(
        "{d}", _d[_f.__name__]))
del _f, _d
