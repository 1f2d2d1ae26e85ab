"""pyEDM's S-map fit at each prediction row: its ``Pred_Variance`` and its ``solver=``.

pyEDM 2.5.7 solves, per prediction row, ``A c = b`` with ``A = w * [1, states]`` and
``b = w * targets`` (``w = exp(-theta d / mean(d))`` over the knn neighbours).  With no
solver (or numpy's/scipy's ``lstsq``) that is xedm's S-map; with a scikit-learn regressor it
calls ``solver.fit(A[:, 1:], b)``: the regressor's own, unweighted intercept on the weighted
rows (``coef = [intercept_, *coef_]``; singular values only from ``LinearRegression``).
:func:`xedm.smap` with a regressor fits ``sample_weight = w**2`` instead (docs/from-pyedm.md).
The prediction is ``c0 + state @ c[1:]`` and ``Pred_Variance`` is
``sum(w (target - prediction)^2) / sum(w)``.
"""

from __future__ import annotations

import copy

import numpy as np

#: pyEDM's accepted solver classes (and numpy's/scipy's lstsq function)
SOLVERS = ("lstsq", "LinearRegression", "SGDRegressor", "Ridge", "RidgeCV", "Lasso", "LassoCV",
           "Lars", "LarsCV", "LassoLars", "LassoLarsCV", "LassoLarsIC", "ElasticNet",
           "ElasticNetCV", "OrthogonalMatchingPursuit", "OrthogonalMatchingPursuitCV")


def check_solver(solver):
    """None for xedm's own least squares (pyEDM's default and its ``lstsq``), else the
    regressor."""
    if solver is None:
        return None
    name = getattr(solver, "__name__", None) if callable(solver) and not hasattr(
        solver, "fit") else type(solver).__name__
    if name not in SOLVERS:
        raise ValueError(f"solver={solver!r}: pyEDM accepts numpy's or scipy's lstsq or a "
                         f"scikit-learn regressor of {list(SOLVERS[1:])}")
    return None if name == "lstsq" else solver


def states(X: np.ndarray, E: int, tau: int, embedded: bool) -> np.ndarray:
    """(T, dim) state of every row (NaN where the window leaves the data)."""
    T = X.shape[1]
    if embedded:
        return np.ascontiguousarray(X.T)
    Z = np.full((T, X.shape[0] * E), np.nan)
    for c in range(X.shape[0]):
        for e in range(E):
            Z[e * tau:, c * E + e] = X[c, : T - e * tau]
    return Z


def local_fits(Z, y, lib_rows, pred_rows, Tp, theta, knn, excl, solver):
    """prediction, variance (P,), coefficients (P, 1 + dim), singular values (P, 1 + dim)
    of pyEDM's fit at each prediction row (see the module doc)."""
    P, nc = len(pred_rows), 1 + Z.shape[1]
    pred, var = np.full(P, np.nan), np.full(P, np.nan)
    coef, sv = np.full((P, nc), np.nan), np.full((P, nc), np.nan)
    for i, p in enumerate(pred_rows):
        q = lib_rows[(lib_rows != p) & (np.abs(lib_rows - p) > excl)]
        if len(q) == 0 or not np.isfinite(Z[p]).all():
            continue
        d = np.sqrt(((Z[q] - Z[p]) ** 2).sum(axis=1))
        order = np.lexsort((q, np.abs(q - p), d))[:knn]
        q, d = q[order], d[order]
        w = np.ones(len(d)) if theta == 0 else np.exp(-(theta / d.mean()) * d)
        A = w[:, None] * np.column_stack([np.ones(len(q)), Z[q]])
        target = y[q + Tp]
        b = w * target
        if solver is None:
            c, _, _, s = np.linalg.lstsq(A, b, rcond=None)
        else:
            fit = copy.deepcopy(solver).fit(A[:, 1:], b)
            c = np.concatenate([[getattr(fit, "intercept_", np.nan)], np.ravel(fit.coef_)])
            s = (np.concatenate([[np.nan], fit.singular_]) if type(fit).__name__ ==
                 "LinearRegression" else np.array([]))
        coef[i, :len(c)], sv[i, :len(s)] = c, s
        pred[i] = (0.0 if np.isnan(c[0]) else c[0]) + Z[p] @ c[1:]
        var[i] = np.sum(w * (target - pred[i]) ** 2) / np.sum(w)
    return pred, var, coef, sv
