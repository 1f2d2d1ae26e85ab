"""The predictive conditioning of :func:`xedm.causal_network` (numba, CPU).

    conditional_pool(O, M, excl) -> lib (n, M')
    conditional_errors(B, C, y, lib, k, theta) -> errors (max(m, 1), n)
    signed_rank_stats(e0, E1) -> (S, V, r1) each (m,)

``conditional_pool``: for each point p, its M' = min(M, available) nearest points in the
coordinates ``O`` (d, n) (the series' own state), ties in time order, listed in time order;
points with ``|p - q| <= excl`` (p itself included) are never listed.

``conditional_errors``: leave-one-out local linear prediction (S-map on the k nearest
neighbours) of a target from coordinates ``B`` (d0, n) with one candidate coordinate ``C[c]``
(n,) added at a time; with no candidate (m = 0) from B alone.  The neighbours of p: the k
nearest in (B + candidate) among its pool ``lib[p]``, ties in time order.  Weights
``exp(-theta d / mean(d))`` over the k neighbours; the fit ``y ~ 1 + (coordinates - those of
p)`` by weighted least squares (S-map's solver: the normal matrix scaled to unit diagonal,
Cholesky), whose intercept is the prediction.  The error is prediction - y[p] (NaN where the
system is singular or p has no pool).

``signed_rank_stats``: Wilcoxon's signed-rank statistic of d = |e0| - |E1[c]| (a NaN in either
error makes d = 0) for each row c: S = sum sign(d) rank(|d|) (ranks 1..n, ties in time
order), V = the sum of rank^2 over d != 0, and r1 the lag-1 autocorrelation of the signed
ranks (centred; the mean of the n - 1 lagged products over the mean square; 0 when the
ranks have no variance).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import _numba  # noqa: F401  (kernel cache location, threading layer)
from .._flags import FASTMATH_STRICT
from ..smap.cpu import _solve, unit_cholesky


@njit(cache=True, inline="always")
def _insert(ds, nb, cnt, kk, dq, q):
    """Insert (dq, q) into the ascending buffer ds/nb holding cnt of at most kk entries
    (an equal distance goes after the entries already there: time order when q ascends);
    returns the new count."""
    if cnt < kk:
        pos = cnt
        cnt += 1
    elif dq < ds[kk - 1]:
        pos = kk - 1
    else:
        return cnt
    while pos > 0 and ds[pos - 1] > dq:
        ds[pos] = ds[pos - 1]
        nb[pos] = nb[pos - 1]
        pos -= 1
    ds[pos] = dq
    nb[pos] = q
    return cnt


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def conditional_pool(O, M, excl):
    """The M nearest points of every point in the coordinates O (d, n) (module docstring):
    lib (n, M') int64, each row in time order; -1 pads rows with fewer points."""
    d, n = O.shape
    width = max(min(M, n - 1), 1)
    out = np.full((n, width), -1, np.int64)
    for p in prange(n):
        lo, hi = max(0, p - excl), min(n, p + excl + 1)
        nl = min(width, n - (hi - lo))
        if nl < 1:
            continue
        lib = np.empty(nl, np.int64)
        lbd = np.empty(nl)
        cnt = 0
        for q in range(n):
            if lo <= q < hi:
                continue
            dq = 0.0
            for c in range(d):
                t = O[c, q] - O[c, p]
                dq += t * t
            cnt = _insert(lbd, lib, cnt, nl, dq, q)
        lib.sort()
        out[p, :nl] = lib
    return out


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def conditional_errors(B, C, y, lib, k, theta):
    """Leave-one-out local linear errors (max(m, 1), n) of y from B plus each row of C, the
    neighbours taken from the pools ``lib`` (module docstring); B (d0, n), C (m, n), y (n,)
    finite, lib (n, M) from :func:`conditional_pool`.  Per point, the coordinates of its pool
    relative to its own (``Brel``, ``Crel``) are gathered once for every candidate; the
    errors are written point by point (rows of ``err``: no two threads share a line)."""
    d0, n = B.shape
    m = C.shape[0]
    mm = max(m, 1)
    use_c = m > 0
    err = np.full((n, mm), np.nan)
    nc = d0 + 1 + (1 if use_c else 0)
    for p in prange(n):
        nl = 0
        while nl < lib.shape[1] and lib[p, nl] >= 0:
            nl += 1
        if nl < 1:
            continue
        Brel = np.empty((nl, d0))
        base = np.empty(nl)
        yq = np.empty(nl)
        Crel = np.zeros((mm, nl))
        for a in range(nl):
            q = lib[p, a]
            s = 0.0
            for c in range(d0):
                t = B[c, q] - B[c, p]
                Brel[a, c] = t
                s += t * t
            base[a] = s
            yq[a] = y[q]
        for ci in range(m):
            cp = C[ci, p]
            for a in range(nl):
                Crel[ci, a] = C[ci, lib[p, a]] - cp
        kk = min(k, nl)
        nb = np.empty(kk, np.int64)
        ds = np.empty(kk)
        w = np.empty(kk)
        A = np.empty((nc, nc))
        R = np.zeros((nc, nc))
        sc = np.empty(nc)
        bv = np.empty(nc)
        row = np.empty(nc)
        z = np.empty(nc)
        for ci in range(mm):
            cnt = 0
            for a in range(nl):  # the kk nearest, by insertion (time order among ties)
                dq = base[a]
                if use_c:
                    t = Crel[ci, a]
                    dq += t * t
                cnt = _insert(ds, nb, cnt, kk, dq, a)
            md = 0.0
            for a in range(kk):
                ds[a] = np.sqrt(ds[a])
                md += ds[a]
            md = md / kk
            for a in range(kk):
                w[a] = np.exp(-theta * ds[a] / md) if md > 0 else 1.0
            # weighted least squares of y on 1 and the coordinates relative to p's: the
            # intercept (NaN when the normal matrix, scaled to unit diagonal, has a pivot at or
            # below PIVOT_MIN: S-map's solver)
            for u in range(nc):
                bv[u] = 0.0
                for v in range(nc):
                    A[u, v] = 0.0
            for a in range(kk):
                r = nb[a]
                row[0] = 1.0
                for c in range(d0):
                    row[c + 1] = Brel[r, c]
                if use_c:
                    row[d0 + 1] = Crel[ci, r]
                wa = w[a]
                yv = yq[r]
                for u in range(nc):
                    ru = wa * row[u]
                    bv[u] += ru * yv
                    for v in range(u, nc):
                        A[u, v] += ru * row[v]
            if not unit_cholesky(A, R, sc, nc):
                continue
            for u in range(nc):
                bv[u] = bv[u] / sc[u]
            _solve(R, bv, z, nc)
            err[p, ci] = z[0] / sc[0] - y[p]
    return np.ascontiguousarray(err.T)


@njit(parallel=True, cache=True)
def signed_rank_stats(e0, E1):
    """Signed-rank statistic, its variance and the lag-1 autocorrelation of the signed ranks
    of |e0| - |E1[c]| for every row c (module docstring)."""
    m, n = E1.shape
    S = np.zeros(m)
    V = np.zeros(m)
    r1 = np.zeros(m)
    for c in prange(m):
        d = np.empty(n)
        for t in range(n):
            a, b = e0[t], E1[c, t]
            d[t] = abs(a) - abs(b) if np.isfinite(a) and np.isfinite(b) else 0.0
        order = np.argsort(np.abs(d), kind="mergesort")
        sr = np.empty(n)
        for r in range(n):
            t = order[r]
            sr[t] = (r + 1.0) * (1.0 if d[t] > 0 else (-1.0 if d[t] < 0 else 0.0))
            if d[t] != 0:
                V[c] += (r + 1.0) ** 2
        tot = 0.0
        for t in range(n):
            tot += sr[t]
        S[c] = tot
        mean = tot / n
        v2 = 0.0
        cov = 0.0
        for t in range(n):
            v2 += (sr[t] - mean) ** 2
        for t in range(1, n):
            cov += (sr[t] - mean) * (sr[t - 1] - mean)
        r1[c] = (cov / max(n - 1, 1)) / (v2 / n) if v2 > 0 else 0.0
    return S, V, r1
