"""The xarray layer of the skill sweeps: ``embed_dimension`` (E), ``predict_interval`` (Tp)
and ``predict_nonlinear`` (theta), each one pass of the array core over every value of its
swept parameter, with the best value marked.  The plumbing they share with ``simplex`` and
``smap`` (parameters, engines, ``apply_ufunc``, progress, result datasets) is in
:mod:`xedm.labeled.edm`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..core import simplex as _simplex
from ..core import smap as _smap
from ..core import validate as v
from ..memory import check_memory, check_work
from ..neighbors.base import (
    neighbor_attrs,
)
from .checks import (
    add_best,
    block_check,
    check_exclusion,
    check_horizon,
    check_sweep,
    library_check,
    pred_times,
)
from .device import cupy_io
from .edm import (
    _SKILL,
    THETAS,
    _apply,
    _engines,
    _finish,
    _ncols,
    _params,
    _row_progress,
    _skill_over,
)
from .inputs import Data, is_lazy

_SWEEP_NOTES = """Notes
    -----
    *No finite skill.*  With in-memory data the sweep raises a ValueError (saying why) when no
    value gives a finite rho, and warns (UserWarning) naming the values that give none and
    counting the series without any finite rho; ``best_{d}`` is NaN for those series (the
    variable is then float) and otherwise the value with the highest rho (ties to the first).
    With dask-backed data the result stays lazy, ``best_{d}`` is a lazy float variable (no
    attr), and each chunk is checked when it is computed: a chunk without any finite rho
    warns (UserWarning), saying why.  Input types are handled as in :func:`simplex`.
"""


def _sweep_reserved(d: str) -> frozenset:
    return frozenset(("rho", "mae", "rmse", "n", d, f"best_{d}"))


@cupy_io
@v.renamed("dim", "time_dim", "the time dimension")
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
    time_dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
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
    p = _params(
        data, E_top, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, time_dim,
        False, "embed_dimension", _sweep_reserved("E"), what)
    X, y, index, dim, tau = p.X, p.y, p.index, p.dim, p.tau
    Tp, knn, excl, spec, attrs = p.Tp, p.knn, p.excl, p.spec, p.attrs
    if E is None:
        E_list = np.arange(1, E_top + 1)  # after the check that E_max fits the series
    T = len(index)
    pred_t = pred_times(spec, int(E_list[0]), tau)
    check_exclusion(excl, T, spec["lib"], pred_t, [(int(E_list[0]), tau, Tp)])
    lazy = is_lazy(X, y)
    if lazy:
        library_check(False, knn, [(int(e), tau, Tp) for e in E_list], T, spec["lib"], False,
                       fix, spec["pred_mask"], excl)
    backend, method = _engines(backend, neighbors,
                               ["simplex_sweep", "knn_sweep", "simplex_predict"],
                               neighbors_recall, n_lib=T, dim=int(E_list[-1]) * _ncols(attrs),
                               knn=knn or int(E_list[-1]) + 1, n_pred=len(pred_t), sweep=True,
                               work=int(X.size) * T)

    def core(Xb, yb):
        chunks, tick, close = _row_progress(Xb, "embed_dimension", method,
                                            int(E_list[-1]))
        try:
            res = _simplex.embed_dimension(Xb, yb, E_list=E_list, tau=tau, Tp=Tp, knn=knn,
                                           excl=excl, backend=backend, method=method, fix=fix,
                                           row_chunks=chunks, progress=tick, **spec)
        finally:
            close()
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, block_check("embed_dimension", core) if lazy else core,
                     _skill_over("E", len(E_list)), lazy)
    attrs.pop("E")
    attrs.update(E_max=int(E_list[-1]), knn=-1 if knn is None else knn, backend=backend,
                 **neighbor_attrs(method, lazy))
    ds = _finish(results, dim, index, None, attrs, {"E": E_list})
    if not lazy:
        check_sweep("embed_dimension", ds, "E", X, y, dim, excl)
    return add_best(ds, "E", lazy)


@cupy_io
@v.renamed("dim", "time_dim", "the time dimension")
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
    time_dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
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
    p = _params(
        data, E, tau, 1 if Tp is None else int(Tp_list[0]), knn, exclusion_radius, lib, pred,
        columns, target, time_dim, embedded, "predict_interval", _sweep_reserved("Tp"))
    X, y, index, dim, E = p.X, p.y, p.index, p.dim, p.E
    tau, knn, excl, spec, attrs = p.tau, p.knn, p.excl, p.spec, p.attrs
    T = len(index)
    if Tp is None:
        check_horizon(Tp_top, T, what)
        Tp_list = np.arange(1, Tp_top + 1)  # after the check that Tp_max fits the series
    else:
        for tp in Tp_list.tolist():
            check_horizon(tp, T, what)
    kE = 1 if embedded else E
    pred_t = pred_times(spec, kE, tau)
    check_exclusion(excl, T, spec["lib"], pred_t, [(kE, tau, int(tp)) for tp in Tp_list])
    lazy = is_lazy(X, y)
    if lazy:
        library_check(False, knn, [(E, tau, int(tp)) for tp in Tp_list], T, spec["lib"],
                       bool(embedded), f"{fix}, a smaller E", spec["pred_mask"], excl)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict"],
                               neighbors_recall, n_lib=T, dim=kE * _ncols(attrs),
                               knn=knn or E + 1, n_pred=len(pred_t), work=int(X.size) * T)

    def core(Xb, yb):
        chunks, tick, close = _row_progress(Xb, "predict_interval", method)
        try:
            res = _simplex.predict_interval(Xb, yb, E=E, tau=tau, Tp_list=Tp_list, knn=knn,
                                            excl=excl, embedded=bool(embedded),
                                            backend=backend, method=method,
                                            fix=f"{fix}, a smaller E", row_chunks=chunks,
                                            progress=tick, **spec)
        finally:
            close()
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, block_check("predict_interval", core) if lazy else core,
                     _skill_over("Tp", len(Tp_list)), lazy)
    attrs.pop("Tp")
    attrs.update(knn=int(knn if knn is not None else E + 1), backend=backend,
                 **neighbor_attrs(method, lazy))
    ds = _finish(results, dim, index, None, attrs, {"Tp": Tp_list})
    if not lazy:
        check_sweep("predict_interval", ds, "Tp", X, y, dim, excl)
    return add_best(ds, "Tp", lazy)


@cupy_io
@v.renamed("dim", "time_dim", "the time dimension")
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
    time_dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
) -> xr.Dataset:
    """S-map skill versus theta: rising rho with theta is evidence of state-dependent
    (nonlinear) dynamics.  Distances are computed once per prediction point for every theta.

    Parameters
    ----------
    theta : list of float, default (0.01, 0.1, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, ..., 9)
        The localisations tried (distinct, finite, >= 0); the default is pyEDM's 15 values
        (add 0 for the global linear map).
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
    p = _params(
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, time_dim, embedded,
        "predict_nonlinear", _sweep_reserved("theta"))
    X, y, index, dim, E = p.X, p.y, p.index, p.dim, p.E
    tau, Tp, knn, excl, spec, attrs = p.tau, p.Tp, p.knn, p.excl, p.spec, p.attrs
    solver, alpha = v.check_solver(solver, alpha)
    kE = 1 if embedded else E
    T = len(index)
    pred_t = pred_times(spec, kE, tau)
    check_exclusion(excl, T, spec["lib"], pred_t, [(kE, tau, Tp)])
    lazy = is_lazy(X, y)
    if lazy:
        library_check(True, knn, [(kE, tau, Tp)], T, spec["lib"], bool(embedded),
                       "a smaller E", spec["pred_mask"], excl)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "smap_predict"],
                               neighbors_recall, n_lib=T, dim=kE * _ncols(attrs), knn=knn,
                               n_pred=len(pred_t), work=int(X.size) * T)
    _check_theta_cost(thetas.size, int(y.size // T), len(pred_t), min(knn or T, T),
                      1 + kE * _ncols(attrs), backend)

    def core(Xb, yb):
        chunks, tick, close = _row_progress(Xb, "predict_nonlinear",
                                            weight=len(thetas) * (kE + 1))
        try:
            res = _smap.smap(Xb, yb, E=kE, tau=tau, Tp=Tp, thetas=thetas, knn=knn, excl=excl,
                             embedded=bool(embedded), backend=backend, method=method,
                             alpha=alpha if solver == "ridge" else 0.0, row_chunks=chunks,
                             progress=tick, **spec)
        finally:
            close()
        return {k: res[k].T for k in _SKILL}

    results = _apply(X, y, dim, block_check("predict_nonlinear", core) if lazy else core,
                     _skill_over("theta", len(thetas)), lazy)
    attrs.update(knn=-1 if knn is None else knn, solver=solver, alpha=alpha, backend=backend,
                 **neighbor_attrs(method, lazy))
    ds = _finish(results, dim, index, None, attrs, {"theta": thetas})
    if not lazy:
        check_sweep("predict_nonlinear", ds, "theta", X, y, dim, excl)
    return add_best(ds, "theta", lazy)


def _check_theta_cost(n_theta: int, B: int, P: int, k: int, nc: int,
                      backend: str = "cpu") -> None:
    """predict_nonlinear holds every theta's predictions and coefficients ((theta, series,
    P, 1 + C*E) float64) and solves one weighted least-squares problem of k rows and nc
    columns per theta and prediction: refused up front when that cannot fit or takes hours."""
    what = f"predict_nonlinear with {n_theta:,} theta values on {B} series of {P} predictions"
    fix = "give fewer theta values (the default list has 15)"
    check_memory(8.0 * n_theta * B * P * (nc + 3), what, fix, share=0.5)  # + working copies
    check_work(float(n_theta) * B * P * k * nc * nc, what, fix, backend=backend)


for _f in (embed_dimension, predict_interval, predict_nonlinear):
    _d = {"embed_dimension": "E", "predict_interval": "Tp", "predict_nonlinear": "theta"}
    _f.__doc__ = _f.__doc__.replace("{notes}", _SWEEP_NOTES.replace(
        "{d}", _d[_f.__name__]))
del _f, _d
