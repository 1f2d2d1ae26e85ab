"""Exact k-nearest-neighbour kernels (numba, CPU).

Distances are computed straight from the zero-padded series ``Xpad`` (B, C, pad + T), never
from a copied embedding matrix, and fused with top-k selection, so memory is O(P * k).
Neighbours are ordered by (distance, |t_pred - t_lib|, t_lib), all ascending.  Every kernel
orders by the same exact squared distance: the plain float64 sum of the squared differences
from 0.0, lag by lag and column by column within a lag, never fused into FMAs (``FASTMATH_DIST``)
nor updated row to row (a bound or a screen may be, never a compared value), so exact ties
(runs of equal values) are exact in every kernel and decided by (|dt|, t).

Signature shared with the GPU twin::

    knn_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi)
        -> idx (nE, B, P, kmax) int64 (-1 = none), dist (nE, B, P, kmax) float64 (inf = none)

``lib_ok`` (nE, B, T) and ``pred_ok`` (nE, B, P) say which states are library / prediction
points for each embedding dimension in ``E_list`` (ascending); ``k_list`` gives k per E.
Library points with ``|t_lib - t_pred| <= excl`` are skipped (excl >= 0: self is always
skipped).  Squared distances accumulate over lags, so one pass serves every E of a sweep.

Here: ``knn_sweep`` (every E of a sweep in one pass), ``knn_direct`` and ``knn_single`` (one
E); the diagonal recurrence is :mod:`.cpu_diagonal`, the pieces all of them share (the tie
order, insertion, bounds from the previous row) :mod:`.cpu_common`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._flags import FASTMATH_DIST
from .._numba import njit  # numba's, with xedm's kernel cache
from .cpu_common import (
    CHUNK,
    _bounds_from_previous_row,
    _chunk_distances,
    _insert_at,
    _row_wanted,
)
from .cpu_diagonal import diagonal_tables


@njit(parallel=True, cache=True, fastmath=FASTMATH_DIST)
def knn_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi):
    nE, B, T = lib_ok.shape
    P = pred_t.shape[0]
    kmax = 1
    for i in range(nE):
        kmax = max(kmax, k_list[i])
    idx = np.full((nE, B, P, kmax), -1, np.int64)
    dist = np.full((nE, B, P, kmax), np.inf)
    rows = 64
    nblk = (P + rows - 1) // rows
    for task in prange(B * nblk):
        b = task // nblk
        blk = task - b * nblk
        acc = np.empty(CHUNK)
        accE = np.empty((nE, CHUNK))  # the squared distances at every requested E
        flag = np.empty(CHUNK, np.uint64)  # nonzero: a candidate for some E
        bound = np.empty(nE)
        thr = np.empty(nE)
        for pi in range(blk * rows, min(P, (blk + 1) * rows)):
            if not _row_wanted(pred_ok, b, pi):
                continue
            p = pred_t[pi]
            _bounds_from_previous_row(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau,
                                      excl, q_hi, idx, dist, b, pi, blk * rows, bound)
            for q0 in range(q_lo[b], q_hi[b], CHUNK):
                n = min(CHUNK, q_hi[b] - q0)
                for ie in range(nE):
                    thr[ie] = min(dist[ie, b, pi, k_list[ie] - 1], bound[ie])
                    if not pred_ok[ie, b, pi]:
                        thr[ie] = -1.0
                _chunk_distances(Xpad, pad, b, p, q0, n, tau, E_list, thr, acc, accE, flag,
                                 False)
                # scalar: only flagged candidates, once per row and block
                for j in range(n):
                    if flag[j] == 0:
                        continue
                    q = q0 + j
                    if abs(q - p) <= excl:
                        continue
                    for ie in range(nE):
                        d = accE[ie, j]
                        if d <= thr[ie] and lib_ok[ie, b, q]:
                            k = k_list[ie]
                            _insert_at(dist, idx, ie, b, pi, k, k, d, q, p)
                            thr[ie] = min(dist[ie, b, pi, k - 1], bound[ie])
        for pi in range(blk * rows, min(P, (blk + 1) * rows)):
            for i in range(nE):
                for j in range(kmax):
                    dist[i, b, pi, j] = np.sqrt(dist[i, b, pi, j])
    return idx, dist


DCH = 1024  # candidates per block of the direct single-E kernel
DIAGONAL_MIN_COORDS = 7  # knn_single: the diagonal recurrence from this many coordinates


@njit(cache=True, inline="always")
def _add_terms(Xpad, pad, b, C, tau, p, q0, n, u, g, first, buf):
    """Add the terms u .. u + g - 1 (g = 1 to 4; term u is lag u // C, column u % C) of the
    squared distances from state p to the states q0 .. q0 + n - 1 into ``buf`` (set it when
    ``first``), in one vectorised pass, left to right: the same float64 sum, term by term
    from 0.0, as every other kernel (``x + 0.0`` is x, and no FMA: ``FASTMATH_DIST``)."""
    e0, c0 = u // C, u % C
    e1, c1 = (u + 1) // C, (u + 1) % C
    e2, c2 = (u + 2) // C, (u + 2) % C
    e3, c3 = (u + 3) // C, (u + 3) % C
    a0 = Xpad[b, c0, pad + p - e0 * tau]
    x0 = Xpad[b, c0, pad + q0 - e0 * tau: pad + q0 - e0 * tau + n]
    if g == 1:
        if first:
            for j in range(n):
                d0 = a0 - x0[j]
                buf[j] = d0 * d0
        else:
            for j in range(n):
                d0 = a0 - x0[j]
                buf[j] = buf[j] + d0 * d0
        return
    a1 = Xpad[b, c1, pad + p - e1 * tau]
    x1 = Xpad[b, c1, pad + q0 - e1 * tau: pad + q0 - e1 * tau + n]
    if g == 2:
        if first:
            for j in range(n):
                d0 = a0 - x0[j]
                d1 = a1 - x1[j]
                buf[j] = d0 * d0 + d1 * d1
        else:
            for j in range(n):
                d0 = a0 - x0[j]
                d1 = a1 - x1[j]
                buf[j] = buf[j] + d0 * d0 + d1 * d1
        return
    a2 = Xpad[b, c2, pad + p - e2 * tau]
    x2 = Xpad[b, c2, pad + q0 - e2 * tau: pad + q0 - e2 * tau + n]
    if g == 3:
        if first:
            for j in range(n):
                d0 = a0 - x0[j]
                d1 = a1 - x1[j]
                d2 = a2 - x2[j]
                buf[j] = d0 * d0 + d1 * d1 + d2 * d2
        else:
            for j in range(n):
                d0 = a0 - x0[j]
                d1 = a1 - x1[j]
                d2 = a2 - x2[j]
                buf[j] = buf[j] + d0 * d0 + d1 * d1 + d2 * d2
        return
    a3 = Xpad[b, c3, pad + p - e3 * tau]
    x3 = Xpad[b, c3, pad + q0 - e3 * tau: pad + q0 - e3 * tau + n]
    if first:
        for j in range(n):
            d0 = a0 - x0[j]
            d1 = a1 - x1[j]
            d2 = a2 - x2[j]
            d3 = a3 - x3[j]
            buf[j] = d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3
    else:
        for j in range(n):
            d0 = a0 - x0[j]
            d1 = a1 - x1[j]
            d2 = a2 - x2[j]
            d3 = a3 - x3[j]
            buf[j] = buf[j] + d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3


@njit(parallel=True, cache=True, fastmath=FASTMATH_DIST)
def knn_direct(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi):
    """One E by direct sums, for small states and short series: (B, P, k) tables, the
    contract of :func:`knn_sweep` with a single E (``lib_ok`` (B, T), ``pred_ok`` (B, P)).

    Per row and block of DCH candidates the squared distances are summed four terms per
    vectorised pass (:func:`_add_terms`, the exact sum of every kernel), the candidates at or
    below the row's threshold are counted in one more pass, and only a block with some is
    scanned for insertions.  The threshold starts from the row tau steps back, its
    neighbours shifted (:func:`_bounds_from_previous_row`), so few candidates pass it."""
    B, C, _ = Xpad.shape
    P = pred_t.shape[0]
    D = E * C
    idx = np.full((1, B, P, k), -1, np.int64)
    dist = np.full((1, B, P, k), np.inf)
    lib4 = lib_ok.reshape((1,) + lib_ok.shape)
    ok4 = pred_ok.reshape((1,) + pred_ok.shape)
    E_list = np.array([E], np.int64)
    k_list = np.array([k], np.int64)
    rows = 64
    nblk = (P + rows - 1) // rows
    for task in prange(B * nblk):
        b = task // nblk
        blk = task - b * nblk
        buf = np.empty(DCH)
        bound = np.empty(1)
        for pi in range(blk * rows, min(P, (blk + 1) * rows)):
            if not pred_ok[b, pi]:
                continue
            p = pred_t[pi]
            _bounds_from_previous_row(Xpad, pad, lib4, pred_t, ok4, E_list, k_list, tau,
                                      excl, q_hi, idx, dist, b, pi, blk * rows, bound)
            for q0 in range(q_lo[b], q_hi[b], DCH):
                n = min(DCH, q_hi[b] - q0)
                for u in range(0, D, 4):
                    _add_terms(Xpad, pad, b, C, tau, p, q0, n, u, min(4, D - u), u == 0, buf)
                thr = min(dist[0, b, pi, k - 1], bound[0])
                for j in range(n):  # few pass the threshold: a well-predicted branch
                    d = buf[j]
                    if d <= thr:
                        q = q0 + j
                        if lib_ok[b, q] and abs(q - p) > excl:
                            _insert_at(dist, idx, 0, b, pi, k, k, d, q, p)
                            thr = min(dist[0, b, pi, k - 1], bound[0])
        for pi in range(blk * rows, min(P, (blk + 1) * rows)):
            for j in range(k):
                dist[0, b, pi, j] = np.sqrt(dist[0, b, pi, j])
    return idx[0], dist[0]


def knn_single(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi):
    """One E: (B, P, k) tables, same contract as :func:`knn_sweep` with a single E.

    Rule: the diagonal recurrence (:func:`knn_diagonal`, O(1) per pair) when the prediction
    rows are nearly consecutive and the state has more than 6 coordinates, else direct sums
    four terms per pass (:func:`knn_direct`, O(E*C) per pair, about 1 cycle per pair for
    E*C = 4).  Measured (2-core VM, one thread, CPU time, direct / diagonal): E*C = 4, 5, 6,
    8: 0.78, 0.84, 0.85, 0.85 at L = 1,000 (40 series) and E*C = 3, 4, 5, 6, 8: 0.80, 0.82,
    0.90, 0.92, 0.99 at L = 8,000 (10 series); direct against the multi-E ``knn_sweep`` with
    one E: 0.66-0.75.
    """
    P = len(pred_t)
    C = Xpad.shape[1]
    dense = P > 0 and (pred_t[-1] - pred_t[0] + 1) <= 1.25 * P
    if dense and E * C >= DIAGONAL_MIN_COORDS and pad >= E * tau:
        return diagonal_tables(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi)
    return knn_direct(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi)


def concat_tables(parts):
    """Tables of consecutive ranges of prediction rows, ``[(idx, dist), ...]`` each (nE, B,
    P_i, k), joined along the rows: (idx, dist) (nE, B, sum P_i, k)."""
    return (np.concatenate([q[0] for q in parts], axis=2),
            np.concatenate([q[1] for q in parts], axis=2))
