"""The candidate drivers of each series in a large network (:func:`xedm.causal_network`'s
predictive conditioning with more than ``max_candidates`` other series).

The predictive selection (:mod:`xedm.core.predictive`) tests every candidate j of a series i
at every delay, round after round, so its cost grows with the number of candidates; in a
network of N series it keeps ``m`` per series.  Which m matters: a true driver left out can
never be found (its indirect proxies are then selected in its place).  Two rankings fill them:

* **the residual screen** (most of the m): what i's own past leaves unexplained, the
  leave-one-out errors of i's own one-step model (the selection's first step computes them),
  against a second-order expansion of each other series' values at each delay 1..max_lag:
  the squared multiple correlation of the residual with j(t + 1 - k) and j(t + 1 - k)^2 (the
  square made orthogonal to the value), the largest over the delays.  A driver acts on i's
  next value through some function of its own state; the first two terms of that function's
  expansion are what this sees, in one matrix product per delay (N^2 T max_lag operations);
* **the cross map's skill** (``rho``, a quarter of the m, when given): i's manifold recovering
  j (CCM's evidence), for couplings that a driver's value at a few delays does not show.

Measured on networks of 400 series with about two drivers per series (benchmarks/
_network_cases.py's generators and :func:`xedm.datasets.sparse_network`), the share of true
drivers among each series' 32 candidates was 0.93-0.95 on coupled maps (lags 1 or 1..5, or
10 % observation noise), 0.81 at 30 % noise, 0.73 on the stochastic network and 1.0 on
Lorenz-96; ranked by the cross-map skill alone it was 0.50-0.74 (1.0 on Lorenz-96), and at
N = 1,000 the 128 of highest skill held 0.71 of them, the residual screen's 4 already 0.78.
"""

from __future__ import annotations

import numpy as np

from .skill import unit_rows

#: the share of each series' candidates taken by the cross map's skill (the rest: the
#: residual screen)
RHO_SHARE = 0.25
#: bytes of one block of scores (rows of series x every other series)
SCORE_BYTES = 2**27


def residual_scores(xp, Z, e0, t0, max_lag: int, rows) -> np.ndarray:
    """(len(rows), N) scores on the array module ``xp``: for each series i of ``rows`` and
    each series j, the largest over the delays k = 1..max_lag of the squared multiple
    correlation of i's one-step residual r_i(t) = -e0[i, t - t0[i]] (what i's own model
    leaves of z_i(t + 1); a NaN error counts as 0) with z_j(t + 1 - k) and z_j(t + 1 - k)^2,
    over the times t that every series predicts (from max(t0) to T - 2).

    ``Z`` (N, T) standardised series, ``e0`` (N, >= T - 1 - min(t0)) their errors, ``t0`` (N,)
    each series' first prediction time (at least max_lag - 1), on ``xp``."""
    N, T = Z.shape
    t0 = np.asarray(t0, np.int64)
    tt = np.arange(int(t0.max(initial=0)), T - 1)
    rows = np.asarray(rows, np.int64)
    if len(tt) < 3:
        return xp.zeros((len(rows), N))
    at = xp.asarray(tt[None, :] - t0[rows, None])
    R = xp.take_along_axis(e0[xp.asarray(rows)], at, axis=1)
    R = unit_rows(xp.where(xp.isfinite(R), -R, 0.0), xp)
    out = xp.zeros((len(rows), N))
    for lag in range(int(max_lag)):
        F = Z[:, tt - lag]
        F = F - F.mean(axis=1, keepdims=True)
        Q = F * F
        F = unit_rows(F, xp)
        Q = Q - Q.mean(axis=1, keepdims=True)
        Q = unit_rows(Q - (Q * F).sum(axis=1, keepdims=True) * F, xp)  # orthogonal to F
        a = R @ F.T
        b = R @ Q.T
        xp.maximum(out, a * a + b * b, out=out)
    return out


def candidates(xp, Z, e0, t0, max_lag: int, allowed, m: int, rho=None,
               rows=None) -> np.ndarray:
    """(N, m) pair table (:mod:`xedm.core.pairs`): the ``m`` candidate drivers of each
    series among those of the table ``allowed`` (N, m0; None: every other series), the
    series itself left out (module docstring): the ``RHO_SHARE`` of m of highest cross-map
    skill ``rho`` (N, N), when given (NaN lowest; or a
    :class:`xedm.core.cross_maps.CrossRows`, which computes each block's and keeps its
    values at the block's candidates), and the others of highest :func:`residual_scores`
    (ties to the lower index).  Rows with at most m allowed keep them all.  Built block by
    block of rows (the ``screen_pick`` kernel picks each block's): no (N, N) array.
    ``rows`` (N,) bool: only those rows (the others' table rows are empty)."""
    from ..kernels import get_kernel

    N = len(Z)
    n_rho = int(round(RHO_SHARE * m)) if rho is not None else 0
    per = max(SCORE_BYTES // (8 * max(N, 1)), 1)
    out = np.full((N, m), -1, np.int64)
    todo = np.arange(N) if rows is None else np.flatnonzero(rows)
    pick = get_kernel("screen_pick", "cpu")
    none = np.zeros((0, 0))
    for s in range(0, len(todo), per):
        rows = todo[s:s + per]
        streamed = n_rho and not isinstance(rho, np.ndarray)  # a CrossRows: this block's
        rr = rho.rows_rho(rows) if streamed else None
        if allowed is None:
            allow = np.zeros((len(rows), 0), np.int64)
            big = np.full(len(rows), N - 1 > m)
        else:
            allow = np.ascontiguousarray(allowed[rows], np.int64)
            big = ((allow >= 0) & (allow != rows[:, None])).sum(axis=1) > m
        b = np.flatnonzero(big)
        if len(b):  # scores only where there is a choice to make
            sc = residual_scores(xp, Z, e0, t0, max_lag, rows[b])
            sc = np.ascontiguousarray(sc.get() if hasattr(sc, "get") else sc, np.float64)
            rb = (rr[b] if streamed else rho[rows[b]]) if n_rho else none
            out[rows[b]] = pick(sc, np.ascontiguousarray(rb, np.float64), bool(n_rho),
                                allow[b], allowed is not None, rows[b], int(m), n_rho)
        small = np.flatnonzero(~big)
        if len(small):  # every allowed driver (at most m), ascending
            out[rows[small]] = pick(np.zeros((len(small), N)), none, False,
                                    allow[small], allowed is not None, rows[small],
                                    int(m), 0)
        if streamed:
            rho.keep(rows, out[rows])
    return out
