"""The xarray layer of the EDM functions: names, dims, coords, attrs, dask.

Each public function resolves labels into positions, validates parameters, and runs the array
core (:mod:`xedm.core`) through :func:`xarray.apply_ufunc`, so extra dims broadcast (one result
per series, computed in batched kernels) and dask-backed inputs stay lazy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..core import simplex as _simplex
from ..core import smap as _smap
from ..core import validate as v
from ..core.embed import prediction_times
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
    names = [arg] if isinstance(arg, str) else list(arg)
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{name} must be a variable name or a list of names, got {arg!r}")
    return names


def select(data: Data, columns, target, dim: str | None):
    """(X with dims (..., _VAR, dim), y with dims (..., dim), column names, target name, dim).

    A single series already in (..., dim) layout comes back as X itself (no _VAR dim):
    :func:`_apply` treats it as one column.
    """
    if isinstance(data, np.ndarray):
        data = xr.DataArray(data, dims=["time"] if data.ndim == 1 else None)
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
    if not isinstance(data, xr.Dataset):
        raise TypeError(f"data must be an xarray DataArray or Dataset, got {type(data).__name__}")
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
    X = X.transpose(..., _VAR, dim)
    y = data[tgt[0]].broadcast_like(X.isel({_VAR: 0}, drop=True))
    return X, y, cols, tgt[0], dim


def _params(data: Data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim,
            embedded):
    X, y, cols, tgt, dim = select(data, columns, target, dim)
    index = time_index(X, dim)
    T = len(index)
    E = v.check_E(E)
    tau = v.check_tau(tau)
    Tp = v.check_Tp(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    v.check_embedding_fits(E, tau, T, len(cols), bool(embedded))
    spec = {
        "lib": lib_spec(lib, index, dim),
        "pred_mask": pred_mask(pred, index, dim),
    }
    attrs = {
        "E": E, "tau": tau, "Tp": Tp, "exclusion_radius": excl,
        "lib": describe(lib), "pred": describe(pred), "columns": ", ".join(cols),
        "target": tgt, "embedded": int(bool(embedded)),
    }
    return X, y, index, dim, E, tau, Tp, knn, excl, spec, attrs


def _engines(backend, neighbors, kernels: Sequence[str]):
    return resolve_backend(backend, kernels), resolve_method(neighbors)


# ----------------------------------------------------------------------------- running
def _apply(X, y, dim, core, outputs: dict[str, tuple[list[str], dict[str, int], Any]]):
    """Run ``core(Xb (B, C, T), yb (B, T)) -> dict`` over every series of X/y.

    ``outputs`` maps result names to (core dims, their sizes, dtype); arrays the core returns
    have the series axis first.
    """
    names = list(outputs)

    def wrapped(xa, ya):
        lead = xa.shape[:-2]
        res = core(xa.reshape((-1,) + xa.shape[-2:]), ya.reshape((-1, ya.shape[-1])))
        return tuple(np.asarray(res[n]).reshape(lead + np.shape(res[n])[1:]) for n in names)

    if isinstance(X.data, np.ndarray) and isinstance(y.data, np.ndarray):
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


# ----------------------------------------------------------------------------- public
def simplex(
    data: Data,
    E: int,
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
    tau : int, default 1
        Lag in time steps (>= 1; pyEDM's ``tau=-1``).
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
        predicted (default: the first column).  ``columns="x", target="y"`` cross-maps.
    embedded : bool, default False
        Use the columns themselves as state coordinates (E must equal their number).
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

    Examples
    --------
    >>> import numpy as np, xarray as xr, xedm
    >>> x = xr.DataArray(np.sin(0.3 * np.arange(300)), dims="time", name="x")
    >>> out = x.edm.simplex(E=2)
    >>> bool(out.rho > 0.99)
    True
    """
    X, y, index, dim, E, tau, Tp, knn, excl, spec, attrs = _params(
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim, embedded)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict"])
    out_t = prediction_times(spec["pred_mask"], 1 if embedded else E, tau, False) + Tp
    P = len(out_t)
    used = {}

    def core(Xb, yb):
        res = _simplex.simplex(Xb, yb, E=E, tau=tau, Tp=Tp, knn=knn, excl=excl,
                               embedded=bool(embedded), backend=backend, method=method, **spec)
        used["knn"] = res["knn"]
        return res

    results = _apply(X, y, dim, core, {
        "prediction": ([_OUT], {_OUT: P}, float),
        "observed": ([_OUT], {_OUT: P}, float),
        **_SKILL,
    })
    attrs.update(knn=int(knn if knn is not None else E + 1), backend=backend, neighbors=method)
    return _finish(results, dim, index, out_t, attrs)


def smap(
    data: Data,
    E: int,
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
    Other parameters are as in :func:`simplex`.

    Returns
    -------
    Dataset
        As :func:`simplex`, plus ``coefficients`` over (time, ``coef``).

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(400)
    >>> out = x.edm.smap(E=2, theta=2.0)
    >>> out.coef.values.tolist()
    ['intercept', 'x(t-0)', 'x(t-1)']
    """
    X, y, index, dim, E, tau, Tp, knn, excl, spec, attrs = _params(
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim, embedded)
    thetas = v.check_theta(theta)
    if thetas.size != 1:
        raise ValueError("smap takes one theta; use predict_nonlinear for a list of theta")
    solver, alpha = v.check_solver(solver, alpha)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "smap_predict"])
    kE = 1 if embedded else E
    out_t = prediction_times(spec["pred_mask"], kE, tau, False) + Tp
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
    results = _apply(X, y, dim, core, outputs)
    attrs.update(theta=float(thetas[0]), knn=-1 if knn is None else knn, solver=solver,
                 alpha=alpha, backend=backend, neighbors=method)
    return _finish(results, dim, index, out_t, attrs, {"coef": coef})


def _best(ds: xr.Dataset, d: str) -> xr.Dataset:
    """Add ``best_<d>`` (highest rho; ties to the first, i.e. smallest E) as variable and attr."""
    rho = ds["rho"].fillna(-np.inf)
    best = ds[d][rho.argmax(d)]
    ds[f"best_{d}"] = best.drop_vars(d)
    if best.ndim == 0:
        ds.attrs[f"best_{d}"] = best.item()
    return ds


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

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(500)
    >>> skill = x.edm.embed_dimension(E_max=6)
    >>> skill.rho.dims
    ('E',)
    """
    E_list = np.arange(1, v.check_E(E_max) + 1) if E is None else v.check_int_list("E", E, 1)
    E_list = np.sort(E_list)
    X, y, index, dim, _, tau, Tp, knn, excl, spec, attrs = _params(
        data, int(E_list[-1]), tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim,
        False)
    backend, method = _engines(backend, neighbors,
                               ["simplex_sweep", "knn_sweep", "simplex_predict"])

    def core(Xb, yb):
        res = _simplex.embed_dimension(Xb, yb, E_list=E_list, tau=tau, Tp=Tp, knn=knn,
                                       excl=excl, backend=backend, method=method, **spec)
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, core, _skill_over("E", len(E_list)))
    attrs.pop("E")
    attrs.update(E_max=int(E_list[-1]), knn=-1 if knn is None else knn, backend=backend,
                 neighbors=method)
    return _best(_finish(results, dim, index, None, attrs, {"E": E_list}), "E")


def predict_interval(
    data: Data,
    E: int,
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

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(500)
    >>> skill = x.edm.predict_interval(E=2, Tp_max=5)
    >>> [int(t) for t in skill.Tp]
    [1, 2, 3, 4, 5]
    """
    Tp_list = (np.arange(1, v.check_int("Tp_max", Tp_max, 1) + 1) if Tp is None
               else v.check_int_list("Tp", Tp))
    X, y, index, dim, E, tau, _, knn, excl, spec, attrs = _params(
        data, E, tau, int(Tp_list[0]), knn, exclusion_radius, lib, pred, columns, target, dim,
        embedded)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict"])

    def core(Xb, yb):
        res = _simplex.predict_interval(Xb, yb, E=E, tau=tau, Tp_list=Tp_list, knn=knn,
                                        excl=excl, embedded=bool(embedded), backend=backend,
                                        method=method, **spec)
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, core, _skill_over("Tp", len(Tp_list)))
    attrs.pop("Tp")
    attrs.update(knn=int(knn if knn is not None else E + 1), backend=backend, neighbors=method)
    return _best(_finish(results, dim, index, None, attrs, {"Tp": Tp_list}), "Tp")


def predict_nonlinear(
    data: Data,
    E: int,
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
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim, embedded)
    solver, alpha = v.check_solver(solver, alpha)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "smap_predict"])
    kE = 1 if embedded else E

    def core(Xb, yb):
        res = _smap.smap(Xb, yb, E=kE, tau=tau, Tp=Tp, thetas=thetas, knn=knn, excl=excl,
                         embedded=bool(embedded), backend=backend, method=method,
                         alpha=alpha if solver == "ridge" else 0.0, **spec)
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, core, _skill_over("theta", len(thetas)))
    attrs.update(knn=-1 if knn is None else knn, solver=solver, alpha=alpha, backend=backend,
                 neighbors=method)
    return _best(_finish(results, dim, index, None, attrs, {"theta": thetas}), "theta")
