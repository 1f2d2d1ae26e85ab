"""The xarray layer of the sweeps beside :mod:`xedm.labeled.sweeps`: simplex skill versus
the exclusion radius (``predict_exclusion_radius``, pyEDM's PredictExclusionRadius) and
versus tau (``predict_tau``), and the joint S-map ``skill_grid`` over E x tau x Tp x theta.
The array work is in :mod:`xedm.core.sweeps`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..core import sweeps as _sweeps
from ..core import validate as v
from ..neighbors.base import neighbor_attrs
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
from .edm import THETAS, _apply, _engines, _finish, _ncols, _params, _skill_over
from .inputs import Data, is_lazy
from .sweeps import _check_theta_cost, _sweep_reserved

#: pyEDM's default exclusion radii (PredictExclusionRadius)
RADII = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30)
GRID_DIMS = ("E", "tau", "Tp", "theta")


def _skill_table(res: dict, lead: int) -> dict:
    """Core skill arrays with the swept axes first -> series axis first."""
    return {k: np.moveaxis(np.asarray(res[k]), lead, 0) for k in ("rho", "mae", "rmse", "n")}


@cupy_io
def predict_exclusion_radius(
    data: Data,
    E: int | None = None,
    *,
    exclusion_radius: Sequence[int] | None = None,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
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
    """Simplex skill versus the exclusion radius (pyEDM's ``PredictExclusionRadius``).

    A radius r leaves out of each prediction's library every point within r steps of it
    (``|t_pred - t_lib| <= r``): autocorrelated neighbours in time inflate rho, and the
    radius where rho stops falling is a fair one to use.  One neighbour table, searched with
    the smallest radius and knn + 2 (r_max - r_min) deep, serves every radius (cut to its
    first knn allowed entries): the same neighbours as :func:`simplex` with each radius.

    Parameters
    ----------
    exclusion_radius : list of int, optional
        The radii tried (distinct, >= 0), default pyEDM's
        ``[0, 1, ..., 10, 12, 14, 16, 18, 20, 25, 30]``.
    time_dim : str, optional
        The time dim (default ``"time"``; a 1-D DataArray uses its only dim).
    Other parameters are as in :func:`simplex`.

    Returns
    -------
    Dataset
        ``rho``, ``mae``, ``rmse``, ``n`` over ``exclusion_radius`` (one set per series) and
        ``best_exclusion_radius`` (highest rho, ties to the smaller radius); parameters in
        ``attrs``.

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(500)
    >>> skill = x.edm.predict_exclusion_radius(E=2, exclusion_radius=[0, 5, 20])
    >>> [int(r) for r in skill.exclusion_radius]
    [0, 5, 20]
    """
    radii = np.sort(v.check_int_list("exclusion_radius", RADII if exclusion_radius is None
                                     else exclusion_radius, 0))
    p = _params(data, E, tau, Tp, knn, int(radii[-1]), lib, pred, columns, target, time_dim,
                embedded, "predict_exclusion_radius", _sweep_reserved("exclusion_radius"))
    X, y, index, dim, E = p.X, p.y, p.index, p.dim, p.E
    tau, Tp, knn, spec, attrs = p.tau, p.Tp, p.knn, p.spec, p.attrs
    kE = 1 if embedded else E
    T = len(index)
    check_exclusion(int(radii[-1]), T, spec["lib"], pred_times(spec, kE, tau), [(kE, tau, Tp)])
    lazy = is_lazy(X, y)
    if lazy:
        library_check(False, knn, [(E, tau, Tp)], T, spec["lib"], bool(embedded),
                      "a smaller E")
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict"],
                               neighbors_recall, n_lib=T, dim=kE * _ncols(attrs),
                               knn=(knn or E + 1) + 2 * int(radii[-1] - radii[0]),
                               n_pred=T, work=int(X.size) * T)

    def core(Xb, yb):
        res = _sweeps.exclusion_sweep(Xb, yb, E=E, tau=tau, Tp=Tp, knn=knn, radii=radii,
                                      embedded=bool(embedded), backend=backend, method=method,
                                      **spec)
        return _skill_table(res, 1)

    fn = block_check("predict_exclusion_radius", core) if lazy else core
    results = _apply(X, y, dim, fn, _skill_over("exclusion_radius", len(radii)), lazy)
    attrs.pop("exclusion_radius")
    attrs.update(knn=int(knn if knn is not None else E + 1), backend=backend,
                 **neighbor_attrs(method, lazy))
    ds = _finish(results, dim, index, None, attrs, {"exclusion_radius": radii})
    if not lazy:
        check_sweep("predict_exclusion_radius", ds, "exclusion_radius", X, y, dim, 0)
    return add_best(ds, "exclusion_radius", lazy)


@cupy_io
def predict_tau(
    data: Data,
    E: int | None = None,
    *,
    tau_max: int = 10,
    tau: Sequence[int] | None = None,
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
    """Simplex skill versus the embedding lag tau = 1..tau_max (or the list ``tau``).

    Each tau embeds the series anew (its own neighbour table); the states of larger tau
    reach further back, so they lose more points at the start of each lib segment: the
    prediction sets differ slightly between tau (``n`` says how many pairs each used).

    Parameters
    ----------
    E : int
        Embedding dimension (>= 2: with E = 1 tau has no effect).
    tau_max : int, default 10
        Largest lag tried (tau = 1..tau_max).
    tau : list of int, optional
        The lags to try instead (distinct, >= 1; overrides tau_max).
    time_dim : str, optional
        The time dim (default ``"time"``; a 1-D DataArray uses its only dim).
    Other parameters are as in :func:`simplex`.

    Returns
    -------
    Dataset
        ``rho``, ``mae``, ``rmse``, ``n`` over ``tau`` (one set per series) and ``best_tau``
        (highest rho, ties to the smaller tau); parameters in ``attrs``.

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.lorenz63(1000).x
    >>> skill = x.edm.predict_tau(E=3, tau_max=4)
    >>> [int(t) for t in skill.tau]
    [1, 2, 3, 4]
    """
    if tau is None:  # the range is made once (E-1)*tau_max is known to fit the data
        taus, top = None, v.check_int("tau_max", tau_max, 1, " (the largest lag tried)")
        what = "tau_max"
    else:
        taus = np.sort(v.check_int_list("tau", tau, 1))
        top, what = int(taus[-1]), "tau"
    if E is None:
        raise TypeError("E (the embedding dimension) is required, e.g. E=3")
    if v.check_E(E) == 1:
        raise ValueError("E=1 has no lags, so tau has no effect; use E=2 or more")
    p = _params(data, E, top, Tp, knn, exclusion_radius, lib, pred, columns, target,
                time_dim, False, "predict_tau", _sweep_reserved("tau"), E_name=f"E with {what}")
    X, y, index, dim = p.X, p.y, p.index, p.dim
    Tp, knn, excl, spec, attrs = p.Tp, p.knn, p.excl, p.spec, p.attrs
    T = len(index)
    if taus is None:
        taus = np.arange(1, top + 1)
    check_exclusion(excl, T, spec["lib"], pred_times(spec, E, int(taus[0])),
                    [(E, int(t), Tp) for t in taus])
    lazy = is_lazy(X, y)
    if lazy:
        library_check(False, knn, [(E, int(t), Tp) for t in taus], T, spec["lib"], False,
                      f"a smaller {what} or E")
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict"],
                               neighbors_recall, n_lib=T, dim=E * _ncols(attrs),
                               knn=knn or E + 1, n_pred=T, work=int(X.size) * T)

    def core(Xb, yb):
        res = _sweeps.tau_sweep(Xb, yb, E=E, taus=taus, Tp=Tp, knn=knn, excl=excl,
                                backend=backend, method=method, **spec)
        return _skill_table(res, 1)

    fn = block_check("predict_tau", core) if lazy else core
    results = _apply(X, y, dim, fn, _skill_over("tau", len(taus)), lazy)
    attrs.pop("tau")
    attrs.pop("embedded")
    attrs.update(knn=int(knn if knn is not None else E + 1), backend=backend,
                 **neighbor_attrs(method, lazy))
    ds = _finish(results, dim, index, None, attrs, {"tau": taus})
    if not lazy:
        check_sweep("predict_tau", ds, "tau", X, y, dim, excl)
    return add_best(ds, "tau", lazy)


def _best_cell(rho: np.ndarray, labels: list[np.ndarray]):
    """Labels of the highest rho over the last len(labels) axes (first in C order on
    ties), and that rho; NaN where no rho is finite."""
    flat = rho.reshape(rho.shape[:-len(labels)] + (-1,))
    fin = np.isfinite(flat).any(axis=-1)
    pos = np.argmax(np.where(np.isfinite(flat), flat, -np.inf), axis=-1)
    cell = np.unravel_index(pos, rho.shape[-len(labels):])
    out = [np.where(fin, lab[c].astype(float), np.nan) for lab, c in zip(labels, cell,
                                                                          strict=True)]
    best = np.where(fin, np.take_along_axis(flat, pos[..., None], -1)[..., 0], np.nan)
    return (*out, best)


def _add_best_cell(ds: xr.Dataset, lazy: bool) -> xr.Dataset:
    labels = [ds[d].values for d in GRID_DIMS]
    outs = xr.apply_ufunc(_best_cell, ds["rho"], input_core_dims=[list(GRID_DIMS)],
                          output_core_dims=[[]] * 5, kwargs={"labels": labels},
                          dask="parallelized", output_dtypes=[float] * 5)
    for d, o in zip(GRID_DIMS, outs[:4], strict=True):
        if not lazy and d != "theta" and np.isfinite(o.values).all():
            o = o.astype(np.int64)  # integer labels where every series has a best cell
        ds[f"best_{d}"] = o
    ds["best_rho"] = outs[4]
    if not lazy and ds["rho"].ndim == 4 and np.isfinite(outs[4].item()):
        for d in GRID_DIMS:
            val = ds[f"best_{d}"].item()
            ds.attrs[f"best_{d}"] = float(val) if d == "theta" else int(val)
        ds.attrs["best_rho"] = float(outs[4].item())
    return ds


@cupy_io
def skill_grid(
    data: Data,
    E: Sequence[int] = (1, 2, 3, 4, 5),
    *,
    tau: Sequence[int] = (1,),
    Tp: Sequence[int] = (1,),
    theta: Sequence[float] = THETAS,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    solver: str = "lstsq",
    alpha: float = 0.0,
    time_dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
) -> xr.Dataset:
    """S-map skill on the whole grid E x tau x Tp x theta, with the best cell marked.

    Every cell is :func:`smap` with those parameters.  With ``knn`` given, one neighbour
    search per tau gives the tables of every E at once (distances accumulate across E), over
    the union of the library sets of every Tp and deep enough that each Tp's first knn
    valid entries are its knn nearest; every (Tp, theta) of an (E, tau) reuses that table
    (on the CPU one weighted design matrix per prediction point and theta serves every Tp
    whose neighbours are the same: see ``xedm.kernels.smap.cpu_grid``).
    With ``knn=None`` (every library point a neighbour, S-map's default) there is no table
    to share: each (E, tau, Tp) is one S-map pass over every theta, as
    :func:`predict_nonlinear`.

    Parameters
    ----------
    E, tau, Tp : list of int
        The embedding dimensions (>= 1), lags (>= 1) and horizons (negative allowed) tried.
    theta : list of float, default (0, 0.01, 0.1, ..., 9)
        The localisations tried (distinct, finite, >= 0).
    knn : int, optional
        Neighbours per prediction (default: every library point).  Give one (e.g. 50) for
        speed on long series: the tables are then shared across Tp and theta.
    time_dim : str, optional
        The time dim (default ``"time"``; a 1-D DataArray uses its only dim).
    Other parameters are as in :func:`smap`.

    Returns
    -------
    Dataset
        ``rho``, ``mae``, ``rmse``, ``n`` over ``(E, tau, Tp, theta)`` (one set per series);
        the best cell (highest rho, ties to the first in that order) as ``best_E``,
        ``best_tau``, ``best_Tp``, ``best_theta`` and ``best_rho`` (NaN for a series without
        a finite rho), and for one in-memory series also in ``attrs``.

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(400)
    >>> g = x.edm.skill_grid(E=[1, 2, 3], tau=[1, 2], Tp=[1, 2], theta=[0, 2], knn=20)
    >>> dict(g.rho.sizes)
    {'E': 3, 'tau': 2, 'Tp': 2, 'theta': 2}
    >>> g.attrs["best_theta"] > 0
    True
    """
    E_list = np.sort(v.check_int_list("E", E, 1))
    taus = np.sort(v.check_int_list("tau", tau, 1))
    Tp_list = v.check_int_list("Tp", Tp)
    thetas = v.check_theta(theta)
    reserved = frozenset(("rho", "mae", "rmse", "n", *GRID_DIMS,
                          *(f"best_{d}" for d in GRID_DIMS), "best_rho"))
    p = _params(data, int(E_list[-1]), int(taus[-1]) if E_list[-1] > 1 else 1,
                int(Tp_list[0]), knn, exclusion_radius, lib, pred, columns, target, time_dim,
                False, "skill_grid", reserved, E_name="E (its largest, with the largest tau)")
    X, y, index, dim = p.X, p.y, p.index, p.dim
    knn, excl, spec, attrs = p.knn, p.excl, p.spec, p.attrs
    solver, alpha = v.check_solver(solver, alpha)
    T = len(index)
    for tp in Tp_list.tolist():
        check_horizon(tp, T, "Tp")
    combos = [(int(e), 1 if e == 1 else int(t), int(tp)) for e in E_list for t in taus
              for tp in Tp_list]
    pred_t = pred_times(spec, int(E_list[0]), 1)
    check_exclusion(excl, T, spec["lib"], pred_t, combos)
    lazy = is_lazy(X, y)
    if lazy:
        library_check(True, knn, combos, T, spec["lib"], False, "smaller E, tau or Tp")
    backend, method = _engines(backend, neighbors, ["knn_sweep", "smap_predict"],
                               neighbors_recall, n_lib=T, dim=int(E_list[-1]) * _ncols(attrs),
                               knn=knn, n_pred=len(pred_t), sweep=True, work=int(X.size) * T)
    _check_theta_cost(thetas.size * len(combos), int(y.size // T), len(pred_t),
                      min(knn or T, T), 1 + int(E_list[-1]) * _ncols(attrs), backend)

    def core(Xb, yb):
        res = _sweeps.skill_grid(Xb, yb, E_list=E_list, taus=taus, Tp_list=Tp_list,
                                 thetas=thetas, knn=knn, excl=excl, backend=backend,
                                 method=method, alpha=alpha if solver == "ridge" else 0.0,
                                 **spec)
        return _skill_table(res, 4)

    sizes = {"E": len(E_list), "tau": len(taus), "Tp": len(Tp_list), "theta": len(thetas)}
    outputs = {k: (list(GRID_DIMS), sizes, t) for k, (_, _, t) in
               _skill_over("E", 1).items()}
    results = _apply(X, y, dim, block_check("skill_grid", core) if lazy else core, outputs,
                     lazy)
    for k in ("E", "tau", "Tp"):
        attrs.pop(k)
    attrs.pop("embedded")
    attrs.update(knn=-1 if knn is None else knn, solver=solver, alpha=alpha, backend=backend,
                 **neighbor_attrs(method, lazy))
    ds = _finish(results, dim, index, None, attrs,
                 {"E": E_list, "tau": taus, "Tp": Tp_list, "theta": thetas})
    if not lazy and not np.isfinite(ds["rho"].values).any():
        raise ValueError("skill_grid: no cell of the grid gave a finite rho; check the NaN "
                         "gaps, lib and pred, or use smaller E, tau or Tp")
    return _add_best_cell(ds, lazy)
