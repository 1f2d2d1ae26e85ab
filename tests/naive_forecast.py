"""Slow, obviously correct references for Multiview, generative forecasts, simplex's
prediction variance and S-map with a scikit-learn-style solver (imported into naive.py).

Written from ../shared/CONVENTIONS.md and the docstrings, on top of naive.py's point sets
and neighbours; ``X`` (C, T), ``y`` (T,), lib a list of inclusive (start, end) positions.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np


def simplex_variance(X, y, E, tau=1, Tp=1, knn=None, excl=0, lib=None, pred=None):
    """(prediction, variance) per prediction point: variance ``sum w (y_i - pred)^2 / sum w``."""
    from naive import library_points, neighbors, prediction_points, state

    T = X.shape[1]
    lib = [(0, T - 1)] if lib is None else lib
    pred = np.ones(T, bool) if pred is None else pred
    knn = E + 1 if knn is None else knn
    libpts = library_points(X, y, E, tau, Tp, lib)
    preds, var = [], []
    for p in prediction_points(X, E, tau, pred):
        nb = neighbors(X, p, libpts, E, tau, knn, excl) if state(X, p, E, tau) is not None else []
        if not nb:
            preds.append(np.nan)
            var.append(np.nan)
            continue
        d = np.array([n[0] for n in nb])
        w = np.exp(-d / max(d[0], 1e-6))
        v = np.array([y[n[2] + Tp] for n in nb])
        m = np.sum(w * v) / np.sum(w)
        preds.append(m)
        var.append(np.sum(w * (v - m) ** 2) / np.sum(w))
    return np.array(preds), np.array(var)


def generate(x, steps, kind="simplex", lib=None, **kw):
    """Closed loop: from the last state of x, each forecast is appended to the series and the
    next one is made from it; library points and targets from x alone (kw: E, tau, knn, excl,
    theta for S-map)."""
    from naive import simplex, smap

    T = len(x)
    lib = [(0, T - 1)] if lib is None else lib
    s = np.concatenate([x, np.full(steps, np.nan)])
    target = s.copy()  # never written: generated values are not library targets
    out = []
    for k in range(steps):
        t = T - 1 + k
        pred = np.zeros(T + steps, bool)
        pred[t] = True
        fn = simplex if kind == "simplex" else smap
        r = fn(s[None], target, lib=lib, pred=pred, Tp=1, **kw)
        out.append(r["prediction"][0])
        s[t + 1] = r["prediction"][0]
    return np.array(out)


def smap_estimator(X, y, E, estimator, theta=0.0, tau=1, Tp=1, knn=None, excl=0, lib=None,
                   pred=None):
    """S-map whose local fit is ``estimator.fit(states, targets, sample_weight=w**2)``,
    ``w = exp(-theta d / mean d)``; prediction ``intercept_ + state @ coef_``."""
    from naive import library_points, neighbors, prediction_points, state

    T = X.shape[1]
    lib = [(0, T - 1)] if lib is None else lib
    pred = np.ones(T, bool) if pred is None else pred
    libpts = library_points(X, y, E, tau, Tp, lib)
    preds = []
    for p in prediction_points(X, E, tau, pred):
        sp = state(X, p, E, tau)
        nb = neighbors(X, p, libpts, E, tau, knn, excl) if sp is not None else []
        if not nb:
            preds.append(np.nan)
            continue
        d = np.array([n[0] for n in nb])
        w = np.exp(-theta * d / d.mean()) if theta and d.mean() > 0 else np.ones(len(d))
        A = np.array([state(X, n[2], E, tau) for n in nb])
        b = np.array([y[n[2] + Tp] for n in nb])
        est = estimator.fit(A, b, sample_weight=w**2)
        preds.append(float(est.intercept_) + float(sp @ est.coef_))
    return np.array(preds)


def multiview(X, y, E, D, k, tau=1, Tp=1, lib=None, pred=None, rank=None):
    """Every D-combination of the lagged columns (lag-major: x(t-0), y(t-0), x(t-tau), ...)
    as an embedded simplex; views ranked by rho on the ``rank`` rows (descending, ties in
    view order); the forecast on ``pred`` is the mean of the top k views' forecasts.
    Returns (forecast, views (k tuples of lagged-column indices), rank rhos)."""
    from naive import simplex

    C, T = X.shape
    lagged = np.full((E * C, T), np.nan)
    for e in range(E):
        for c in range(C):
            lagged[e * C + c, e * tau:] = X[c, : T - e * tau]
    views = list(combinations(range(E * C), D))
    rhos = [simplex(lagged[list(v)], y, D, Tp=Tp, lib=lib, pred=rank, embedded=True)["rho"]
            for v in views]
    order = sorted(range(len(views)),
                   key=lambda i: (-rhos[i] if np.isfinite(rhos[i]) else np.inf, i))[:k]
    preds = np.array([simplex(lagged[list(views[i])], y, D, Tp=Tp, lib=lib, pred=pred,
                              embedded=True)["prediction"] for i in order])
    fin = np.isfinite(preds)
    forecast = np.where(fin.any(axis=0),
                        np.where(fin, preds, 0).sum(axis=0) / np.maximum(fin.sum(axis=0), 1),
                        np.nan)
    return forecast, [views[i] for i in order], [rhos[i] for i in order]
