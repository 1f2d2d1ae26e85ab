"""Kernels the index-based neighbour methods share (numba, CPU).

* :func:`gather_states`: the state vectors of chosen time points as rows of a matrix (what an
  index is built from and queried with).
* :func:`knn_rerank`: candidate lists from an index (kd-tree, HNSW, NN-descent) turned into
  exact neighbour rows: the exclusions applied, each candidate's distance summed exactly as
  the brute-force kernels sum it (plain float64, lag by lag, column by column within a lag,
  no FMA: :data:`FASTMATH_DIST`), rows ordered by (distance, |t_pred - t_lib|, t_lib).
* :func:`knn_sorted1d`: exact neighbours of one-coordinate states (E = 1, or one embedded
  column) by sorting the library values: O(L log L + P (log L + k + excl)).

Every table uses the contract of :mod:`xedm.kernels.knn.cpu`: time positions as indices,
-1 / inf where no neighbour exists, square roots of the exact squared sums.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._flags import FASTMATH_DIST
from .._numba import njit  # numba's, with xedm's kernel cache
from .cpu_common import _before


@njit(parallel=True, cache=True)
def gather_states(Xpad, pad, b, E, tau, times, out):
    """``out[i] = (Xpad[b, c, pad + times[i] - e*tau] for e in range(E) for c in range(C))``,
    the coordinates in the order the distance kernels sum them; ``out`` (n, E*C) may be
    float32 (an index that works in single precision) or float64."""
    C = Xpad.shape[1]
    for i in prange(times.shape[0]):
        t = pad + times[i]
        j = 0
        for e in range(E):
            for c in range(C):
                out[i, j] = Xpad[b, c, t - e * tau]
                j += 1


@njit(cache=True, inline="always")
def _insert_row(dist, idx, i, k, c, d, q, p):
    """Insert (d, q) into the first c (<= k) sorted entries of row i; returns the new count."""
    if c == k:
        if not _before(d, q, dist[i, k - 1], idx[i, k - 1], p):
            return c
        pos = k - 1
    else:
        pos = c
        c += 1
    while pos > 0 and _before(d, q, dist[i, pos - 1], idx[i, pos - 1], p):
        dist[i, pos] = dist[i, pos - 1]
        idx[i, pos] = idx[i, pos - 1]
        pos -= 1
    dist[i, pos] = d
    idx[i, pos] = q
    return c


@njit(parallel=True, cache=True, fastmath=FASTMATH_DIST)
def knn_rerank(Xpad, pad, b, E, tau, lib_ok_b, times, cand, excl, k):
    """Exact rows from candidate lists.

    ``times`` (n,) are the prediction points' time positions, ``cand`` (n, m) candidate time
    positions (-1: none; repeats are ignored).  Candidates that are no library point
    (``lib_ok_b`` (T,)) or lie within ``excl`` steps of the prediction point are dropped.
    Returns ``idx`` (n, k) int64, ``dist`` (n, k) float64 and ``count`` (n,): how many valid
    candidates the row holds (at most k).
    """
    C = Xpad.shape[1]
    n, m = cand.shape
    idx = np.full((n, k), -1, np.int64)
    dist = np.full((n, k), np.inf)
    count = np.zeros(n, np.int64)
    for i in prange(n):
        p = times[i]
        c = 0
        for j in range(m):
            q = cand[i, j]
            if q < 0 or abs(q - p) <= excl or not lib_ok_b[q]:
                continue
            d = 0.0
            for e in range(E):
                for cc in range(C):
                    diff = Xpad[b, cc, pad + p - e * tau] - Xpad[b, cc, pad + q - e * tau]
                    d += diff * diff
            if c == k and not _before(d, q, dist[i, k - 1], idx[i, k - 1], p):
                continue
            seen = False
            for u in range(c):
                if idx[i, u] == q:
                    seen = True
                    break
            if not seen:
                c = _insert_row(dist, idx, i, k, c, d, q, p)
        count[i] = c
        for u in range(c):
            dist[i, u] = np.sqrt(dist[i, u])
    return idx, dist, count


@njit(parallel=True, cache=True, fastmath=FASTMATH_DIST)
def knn_sorted1d(Xpad, pad, lib_ok, pred_t, pred_ok, k, excl):
    """Exact tables (B, P, k) for one-coordinate states (``Xpad`` (B, 1, pad + T)).

    Per series the library values are sorted once; each prediction point then walks outwards
    from its place in the sorted values, always to the nearer side, so candidates arrive in
    non-decreasing squared distance ``(x_p - x_q)**2`` (rounding is monotone).  It stops at the
    first candidate beyond the k-th entry; candidates at exactly the k-th squared distance are
    all seen, so exact ties are decided by (|dt|, t) as in the brute-force kernels.
    """
    B = Xpad.shape[0]
    P = pred_t.shape[0]
    idx = np.full((B, P, k), -1, np.int64)
    dist = np.full((B, P, k), np.inf)
    for b in range(B):
        pos = np.flatnonzero(lib_ok[b])
        n = pos.shape[0]
        if n == 0:
            continue
        vals = np.empty(n)
        for i in range(n):
            vals[i] = Xpad[b, 0, pad + pos[i]]
        order = np.argsort(vals, kind="mergesort")
        sv = vals[order]
        sp = pos[order]
        rows_idx = idx[b]
        rows_dist = dist[b]
        for pi in prange(P):
            if not pred_ok[b, pi]:
                continue
            p = pred_t[pi]
            v = Xpad[b, 0, pad + p]
            hi = np.searchsorted(sv, v)
            lo = hi - 1
            c = 0
            while lo >= 0 or hi < n:
                dl = np.inf
                dh = np.inf
                if lo >= 0:
                    diff = v - sv[lo]
                    dl = diff * diff
                if hi < n:
                    diff = v - sv[hi]
                    dh = diff * diff
                if dl <= dh:
                    d = dl
                    q = sp[lo]
                    lo -= 1
                else:
                    d = dh
                    q = sp[hi]
                    hi += 1
                if c == k and d > rows_dist[pi, k - 1]:
                    break
                if abs(q - p) <= excl:
                    continue
                c = _insert_row(rows_dist, rows_idx, pi, k, c, d, q, p)
            for u in range(c):
                rows_dist[pi, u] = np.sqrt(rows_dist[pi, u])
    return idx, dist
