"""Predictive conditioning of :func:`xedm.causal_network`: which series improve the
out-of-sample prediction of a series, given its other drivers.

Arrays: ``X`` (N, T), N finite series on a common time axis; statistics ``[i, j]`` are about
j -> i (library i, target j: the orientation of xmap).

For each series i, the one-step prediction of z_i(t + 1) (z: each series centred and scaled
to unit variance) from a multivariate embedding: i's value z_i(t), i's own lags
z_i(t - l) (l < E_i, entered like candidates), and the values z_j(t) of the selected drivers
j, each scaled by ``weight`` in the distance (a driver adds a small correction to i's own
dynamics: neighbourhoods stay narrow along i's state and wide along a driver's, while the
local linear fit sees every coordinate at full weight).  Predictions are leave-one-out local
linear (S-map on the nearest neighbours: :mod:`xedm.kernels.predict.cpu_conditional`).
Selection (after the PC step of PCMCI, with a nonparametric regression): forward, each round
adds the candidate whose addition lowers the absolute errors most significantly (one-sided
Wilcoxon signed-rank test of |e_without| - |e_with| over the prediction times, its variance
inflated by the lag-1 autocorrelation of the signed ranks) and drops the candidates with p >
``alpha_drop``; it stops when none is left, after ``max_drivers`` drivers, or when no
candidate has p <= ``alpha_drop``.  Then each selected driver is retested given the others
(its ``p``: the same test).  A non-selected pair keeps the p of its last test.  Each
series' predictions leave out the points within its decorrelation time (a Theiler window:
:func:`decorrelation_time`), at least ``exclusion_radius``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import get_kernel

#: defaults of the conditioning, recorded in causal_network's attrs
DEFAULTS = {"weight": 0.1, "exclusion": "max(exclusion_radius, decorrelation time)",
            "neighbors": "(d + 1) + 10 of the 40 nearest in i's own state (value, own lags)",
            "theta": 1.0, "alpha_drop": 0.7, "max_drivers": 8, "candidates": "every series"}
M_NEAR = 40


def standardize(X) -> np.ndarray:
    """Each row centred and scaled to unit variance (a constant row becomes 0)."""
    X = np.asarray(X, np.float64)
    sd = X.std(axis=1, keepdims=True)
    return (X - X.mean(axis=1, keepdims=True)) / np.where(sd > 0, sd, 1.0)


def n_neighbors(d: int) -> int:
    """Neighbours of the local linear fit in d coordinates: the intercept and d slopes, and
    10 residual degrees of freedom."""
    return (d + 1) + 10


def decorrelation_time(x) -> int:
    """The first lag l >= 1 at which the autocorrelation of x falls below 1/e, minus one
    (0 for a map whose successive values are nearly uncorrelated; a few steps for a finely
    sampled flow), at most len(x) // 10."""
    x = np.asarray(x, np.float64) - np.mean(x)
    v = float(x @ x)
    if v <= 0:
        return 0
    for lag in range(1, max(len(x) // 10, 1) + 1):
        if float(x[:-lag] @ x[lag:]) / v < np.exp(-1.0):
            return lag - 1
    return max(len(x) // 10, 1)


def improvement_p(e0, e1) -> tuple[np.ndarray, np.ndarray]:
    """One-sided p-values that the errors ``e1`` (m, n) are smaller in absolute value than
    ``e0`` (n,) (Wilcoxon signed-rank over the n times, normal approximation, variance
    inflated by (1 + r1) / (1 - r1), r1 the lag-1 autocorrelation of the signed ranks clipped
    to [0, 0.99]; ties ranked by position), and the relative reduction of the mean squared
    error.  NaN errors count as no improvement (p = 1)."""
    from scipy.special import ndtr

    e0 = np.ascontiguousarray(e0, np.float64)
    e1 = np.ascontiguousarray(np.atleast_2d(np.asarray(e1, np.float64)))
    ok = np.isfinite(e0)[None, :] & np.isfinite(e1)
    s, var, r1 = get_kernel("signed_rank_stats", "cpu")(e0, e1)
    r1 = np.clip(r1, 0.0, 0.99)
    var = var * (1 + r1) / (1 - r1)
    z = s / np.sqrt(np.where(var > 0, var, 1.0))
    p = np.where(var > 0, ndtr(-z), 1.0)
    sq0 = np.where(np.isfinite(e0), e0, 0.0) ** 2
    mse0 = sq0.sum() / max(np.isfinite(e0).sum(), 1)
    sq1 = np.where(ok, e1, 0.0) ** 2
    mse1 = sq1.sum(axis=1) / np.maximum(ok.sum(axis=1), 1)
    gain = 1.0 - mse1 / mse0 if mse0 > 0 else np.zeros(len(e1))
    return p, gain


def predictive_tests(X, E, *, weight=0.1, theta=1.0, alpha_drop=0.7, max_drivers=8, excl=0,
                     pool=None, progress: Callable = iter):
    """The predictive conditioning of every series (module docstring).

    ``E`` (N,): each series' embedding dimension (its own lags 1..E-1 are candidates);
    ``excl``: the smallest exclusion radius of the leave-one-out predictions (each series
    uses at least its :func:`decorrelation_time`: on a finely sampled flow the points next in
    time would otherwise interpolate the trajectory, and every coordinate would help);
    ``pool`` (N, N) bool: the candidate drivers of each series (default every other series).
    Returns ``p`` (N, N) (1 on the diagonal), ``gain`` (N, N) (the relative reduction of the
    mean squared error at the pair's last test), ``selected`` (N, N) bool and ``n_drivers``
    (N,) the number of selected drivers of each series.
    """
    Z = standardize(X)
    N, T = Z.shape
    E = np.asarray(E, np.int64)
    p = np.ones((N, N))
    gain = np.full((N, N), np.nan)
    selected = np.zeros((N, N), bool)
    opts = dict(weight=float(weight), theta=float(theta), alpha_drop=float(alpha_drop),
                max_drivers=int(max_drivers))
    for i in progress(range(N)):
        drivers = [j for j in range(N) if j != i and (pool is None or pool[i, j])]
        ex = max(int(excl), decorrelation_time(Z[i]))  # Theiler window of the prediction
        tested, chosen = _select(Z, i, int(E[i]), drivers, ex, **opts)
        for j, (pv, gv) in tested.items():
            p[i, j], gain[i, j] = pv, gv
        selected[i, chosen] = True
    return p, gain, selected, selected.sum(axis=1)


def _select(Z, i, E, drivers, excl, *, weight, theta, alpha_drop, max_drivers):
    """Forward selection and retest for series i (module docstring): ({driver: (p, gain)} at
    each driver's last test, the selected drivers)."""
    kernel = get_kernel("conditional_errors", "cpu")
    pool_kernel = get_kernel("conditional_pool", "cpu")
    t = np.arange(max(E - 1, 0), Z.shape[1] - 1)
    y = np.ascontiguousarray(Z[i, t + 1])
    coords = {("own", lag): Z[i, t - lag] for lag in range(1, E)}
    coords.update({("drv", j): weight * Z[j, t] for j in drivers})
    pools: dict = {}

    def pool(base_keys):
        """Each point's M_NEAR nearest in i's own state (its value and chosen own lags)."""
        own = tuple(c for c in base_keys if c[0] == "own")
        if own not in pools:
            O = np.stack([Z[i, t]] + [coords[c] for c in own])
            pools[own] = pool_kernel(np.ascontiguousarray(O), M_NEAR, excl)
        return pools[own]

    def errors(base_keys, extra_keys):
        """Errors (max(len(extra_keys), 1), n) of the model base_keys + each extra key."""
        own = [c for c in extra_keys if c[0] == "own"]
        if own and len(extra_keys) > 1:  # an own lag changes the pool: one call each
            drv = [c for c in extra_keys if c[0] != "own"]
            rows = {c: errors(base_keys, [c])[0] for c in own}
            if drv:
                rows.update(zip(drv, errors(base_keys, drv), strict=True))
            return np.stack([rows[c] for c in extra_keys])
        B = np.stack([Z[i, t]] + [coords[c] for c in base_keys])
        C = (np.stack([coords[c] for c in extra_keys]) if extra_keys
             else np.zeros((0, len(t))))
        d = B.shape[0] + (1 if extra_keys else 0)
        return kernel(np.ascontiguousarray(B), np.ascontiguousarray(C), y,
                      pool([*base_keys, *own]), n_neighbors(d), theta)

    tested: dict = {}
    chosen: list = []
    live = list(coords)
    e0 = errors(chosen, [])[0]
    while live and sum(c[0] == "drv" for c in chosen) < max_drivers:
        e1 = errors(chosen, live)
        pc, gc = improvement_p(e0, e1)
        tested.update({c[1]: (pv, gv) for c, pv, gv in zip(live, pc, gc, strict=True)
                       if c[0] == "drv"})
        keep = pc <= alpha_drop
        if not keep.any():
            break
        b = int(np.argmin(np.where(keep, pc, np.inf)))
        chosen.append(live[b])
        e0 = e1[b]
        live = [c for c, kp in zip(live, keep, strict=True) if kp and c != chosen[-1]]
    for c in chosen:  # every selected driver given all the others
        if c[0] == "drv":
            rest = [o for o in chosen if o != c]
            pc, gc = improvement_p(errors(rest, [])[0], errors(rest, [c]))
            tested[c[1]] = (pc[0], gc[0])
    return tested, [c[1] for c in chosen if c[0] == "drv"]
