"""Generative (closed-loop) forecasts with simplex or S-map, on plain arrays.

Starting from the last state of the data, each one-step forecast is appended to the series
as its newest observation and the next state is built from it (pyEDM's ``generateSteps``).
The library stays the data's: library points and their targets come from the observed
series only, never from generated values.  The steps run one after another on the CPU (each
needs the previous forecast); each is one row of the ordinary kernels, so neighbours, ties,
weights and solvers are those of :func:`simplex` and :func:`smap` exactly.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..kernels import get_kernel
from ..neighbors.base import knn_tables
from .embed import LibSpec, prepare
from .simplex import default_knn, finite_or_zero
from .skill import unit_exponents
from .smap_estimator import smap_estimator


def _extended_lib(lib: LibSpec, steps: int) -> LibSpec:
    """``lib`` on the series extended by ``steps`` generated points (never library points)."""
    if lib.mask is None:
        return lib
    return LibSpec(mask=np.concatenate([lib.mask, np.zeros(steps, bool)]))


# above this many neighbours one row's table is sorted whole (``sorted_table``: O(L log L))
# rather than kept by insertion (``knn_tables``: O(L k)); both are exact, in the same order
SORT_ABOVE_K = 64


def _row_table(row, k: int, excl: int):
    """(idx, dist) (B, 1, k) of the one prediction row of ``row``."""
    if k <= SORT_ABOVE_K:
        idx, dist = knn_tables(row, [k], excl, backend="cpu", method="exact")
        return idx[0], dist[0]
    table = get_kernel("sorted_table", "cpu")
    E = int(row.kernel_E[0])
    parts = [table(row.Xpad[b], row.pad, row.lib_ok[0, b], row.pred_t, row.pred_ok[0, b], E,
                   row.tau, excl, k) for b in range(row.Xpad.shape[0])]
    return np.stack([p[0] for p in parts]), np.stack([p[1] for p in parts])


def generate(
    X, y, *, kind, steps, E, tau, knn, excl, lib, thetas=(0.0,), alpha=0.0, estimator=None,
    progress=None,
) -> dict[str, np.ndarray]:
    """``steps`` closed-loop forecasts of the one-column series ``X`` (B, 1, T) (``y`` (B, T)
    is that column): ``prediction`` (B, steps), and ``pred_variance`` (simplex) or
    ``coefficients`` (B, steps, 1 + E) (S-map: ``kind="smap"``, one theta)."""
    B, _, T = X.shape
    Tp = 1
    Xe = np.concatenate([X, np.full((B, 1, steps), np.nan)], axis=-1)
    ye = np.concatenate([y, np.full((B, steps), np.nan)], axis=-1)
    libe = _extended_lib(lib, steps)
    pred_mask = np.zeros(T + steps, bool)
    pred_mask[T - 1: T - 1 + steps] = True
    prep = prepare(Xe, ye, np.array([E]), tau, Tp, libe, pred_mask, False)
    lags = np.arange(E) * tau
    prediction = np.full((B, steps), np.nan)
    extra = (np.full((B, steps), np.nan) if kind == "simplex"
             else np.full((B, steps, 1 + E), np.nan))
    if kind == "simplex":
        k = default_knn(knn, E, T, lib, tau, Tp, False)
        predict = get_kernel("simplex_predict_var", "cpu")
        yfin = finite_or_zero(ye)
        k_b = np.full(B, k, np.int64)
    elif estimator is None:
        k = None if knn is None else default_knn(knn, E, T, lib, tau, Tp, False)
        kernel = get_kernel("smap_predict", "cpu")
        yexp = unit_exponents(y)
        ys = np.ascontiguousarray(np.ldexp(ye, -yexp[:, None]))
        none = np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0))
    for s in range(steps):
        t = T - 1 + s
        ok = np.isfinite(Xe[:, 0, t - lags]).all(axis=-1)  # the state at t is complete
        row = dataclasses.replace(prep, pred_t=np.array([t], np.int64),
                                  pred_ok=np.ascontiguousarray(ok[None, :, None]))
        if kind == "simplex":
            idx, dist = _row_table(row, k, excl)
            p, var = predict(idx, dist, prep.lib_ok[0], yfin, k_b, Tp)
            value, extra[:, s] = p[:, 0], var[:, 0]
        elif estimator is not None:
            one = np.zeros(T + steps, bool)
            one[t] = True
            res = smap_estimator(Xe, ye, E=E, tau=tau, Tp=Tp, theta=float(thetas[0]), knn=knn,
                                 excl=excl, lib=libe, pred_mask=one, embedded=False,
                                 estimator=estimator)
            value, extra[:, s] = res["prediction"][:, 0], res["coefficients"][:, 0]
        else:
            idx, dist = none if k is None else _row_table(row, k, excl)
            p, coef, _ = kernel(prep.Xpad, prep.pad, prep.lib_ok[0], row.pred_t, row.pred_ok[0],
                                ys, E, tau, Tp, np.asarray(thetas, np.float64), excl, prep.q_lo,
                                prep.q_hi, idx, dist, k is not None, float(alpha), False,
                                prep.xexp, yexp)
            value, extra[:, s] = p[0, :, 0], coef[0, :, 0]
        prediction[:, s] = value
        if progress is not None:  # one step done (a progress bar's update)
            progress(1)
        if s + 1 < steps:  # the forecast becomes the newest observation
            Xe[:, 0, t + 1] = value
            fin = np.isfinite(value)
            prep.Xpad[:, 0, prep.pad + t + 1] = np.where(fin, np.ldexp(np.where(fin, value, 0.0),
                                                                       -prep.xexp), 0.0)
    out = {"prediction": prediction}
    out["pred_variance" if kind == "simplex" else "coefficients"] = extra
    return out
