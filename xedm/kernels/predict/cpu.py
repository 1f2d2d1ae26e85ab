"""Simplex prediction kernels (CPU): simplex from neighbour tables, and fused with the kNN pass.

Signatures shared with the GPU twins (:mod:`xedm.kernels.predict.gpu`)::

    simplex_predict(idx, dist, ok, y, k_list, Tp) -> (B, P) predictions
    simplex_predict_var(idx, dist, ok, y, k_list, Tp) -> (B, P) predictions, (B, P) variances
    simplex_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi,
                  y, Tp) -> (nE, B, P) predictions

S-map's kernels are in :mod:`xedm.kernels.smap`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._bits import debruijn_table, lowest_bit
from .._flags import FASTMATH_DIST, FASTMATH_STRICT
from .._numba import njit  # numba's, with xedm's kernel cache
from ..knn.cpu_common import CHUNK, _chunk_distances, _insert_at, _row_wanted, _shifted_bound
from .constants import D_MIN, SWEEP_MAX_E


@njit(inline="always", cache=True, fastmath=FASTMATH_STRICT)
def _simplex_row(idx, dist, ok, y, k, Tp, b, pi, want_var, wbuf):
    """(prediction, variance) of row (b, pi): the first k entries valid in ``ok``; the
    variance (only when ``want_var``) is ``sum w_i (y_i - pred)^2 / sum w_i`` (pyEDM's
    Pred_Variance), a second pass over the same entries, with the weights of the first
    kept in ``wbuf`` (the row's depth; unused without the variance)."""
    depth = idx.shape[2]
    m = 0
    dmin = 1.0
    wsum = 0.0
    acc = 0.0
    last = -1
    for j in range(depth):
        q = idx[b, pi, j]
        if q < 0:
            break
        if not ok[b, q]:
            continue
        if m == 0:
            dmin = max(dist[b, pi, j], D_MIN)
        w = np.exp(-dist[b, pi, j] / dmin)
        if want_var:
            wbuf[j] = w
        wsum += w
        acc += w * y[b, q + Tp]
        m += 1
        last = j
        if m == k:
            break
    if m == 0:
        return np.nan, np.nan
    pred = acc / wsum
    var = np.nan
    if want_var:
        sq = 0.0
        for j in range(last + 1):
            q = idx[b, pi, j]
            if not ok[b, q]:
                continue
            sq += wbuf[j] * (y[b, q + Tp] - pred) ** 2
        var = sq / wsum
    return pred, var


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def simplex_predict(idx, dist, ok, y, k_list, Tp):
    """Simplex projection from neighbour tables: each row uses its first k_list[b] entries
    whose library point is valid for this use (``ok`` (B, T)): every entry of a plain table,
    or those of one Tp (one target) of a deeper table shared by several.
    ``w_i = exp(-d_i / max(d_1, 1e-6))`` over the entries used.

    idx/dist (B, P, depth); y (B, T); returns predictions (B, P), NaN without neighbours.
    """
    B, P, depth = idx.shape
    pred = np.full((B, P), np.nan)
    none = np.empty(0)
    for task in prange(B * P):
        b = task // P
        pi = task - b * P
        pred[b, pi] = _simplex_row(idx, dist, ok, y, k_list[b], Tp, b, pi, False, none)[0]
    return pred


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def simplex_predict_var(idx, dist, ok, y, k_list, Tp):
    """:func:`simplex_predict` and the weighted variance of the neighbours' targets about
    each prediction, ``sum w_i (y_i - pred)^2 / sum w_i`` (pyEDM's Pred_Variance): two
    (B, P) arrays, NaN without neighbours."""
    B, P, depth = idx.shape
    pred = np.full((B, P), np.nan)
    var = np.full((B, P), np.nan)
    rows = 64  # per task: one buffer of weights (the variance reuses them: half the exp)
    for blk in prange((B * P + rows - 1) // rows):
        # int64, not the loop's unsigned index: one signature, one compile
        _var_rows(idx, dist, ok, y, k_list, Tp, np.int64(blk) * rows, rows, pred, var)
    return pred, var


@njit(cache=True, fastmath=FASTMATH_STRICT)
def _var_rows(idx, dist, ok, y, k_list, Tp, first, rows, pred, var):
    """Rows first .. first + rows - 1 (flat over series and rows) of
    :func:`simplex_predict_var`, with one buffer of weights (a serial function: the parallel
    loop only calls it, which keeps its compilation short)."""
    B, P, depth = idx.shape
    wbuf = np.empty(depth)
    for task in range(first, min(B * P, first + rows)):
        b = task // P
        pi = task - b * P
        pred[b, pi], var[b, pi] = _simplex_row(idx, dist, ok, y, k_list[b], Tp, b, pi, True,
                                               wbuf)


@njit(parallel=True, cache=True, fastmath=FASTMATH_DIST)
def simplex_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi,
                  y, Tp):
    """Simplex predictions for every E of an ascending list (at most SWEEP_MAX_E) without
    neighbour tables: :func:`xedm.kernels.knn.cpu.knn_sweep` fused with
    :func:`simplex_predict`, for when only the predictions are wanted (choosing E).

    Arguments as ``knn_sweep`` plus the target ``y`` (B, T) (finite, read at q + Tp for the
    library points q, which ``lib_ok`` must guarantee are inside the data).  Returns
    ``pred`` (nE, B, P): ``simplex_predict`` on ``knn_sweep``'s tables to rounding (same
    neighbours in the same order; the weights' code generation may differ by an ulp), NaN
    where ``pred_ok`` is False or no neighbour exists.

    Each task walks a block of consecutive rows of one series, keeping the k nearest per E
    of the last tau + 1 rows in a small ring: the previous row's neighbours shifted by tau
    bound this row's k-th distance (``_shifted_d2``), so only candidates under that bound are
    inserted.  Distances accumulate lag by lag (one pass serves every E); a uint64 mask per
    candidate says for which E it may enter, and only set bits are visited.
    """
    nE, B, T = lib_ok.shape
    P = pred_t.shape[0]
    kmax = 1
    for i in range(nE):
        kmax = max(kmax, k_list[i])
    if nE > SWEEP_MAX_E:
        raise ValueError("simplex_sweep takes at most 64 values of E per call")
    pred = np.full((nE, B, P), np.nan)
    rows = 64
    nblk = (P + rows - 1) // rows
    # the row tau back bounds this one only inside a block: a ring of tau + 1 rows, or none
    use_prev = tau < rows
    R = tau + 1 if use_prev else 1
    for task in prange(B * nblk):
        # int64, not the loop's unsigned index or a literal: one signature, one compile
        _sweep_block(np.int64(task), Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau,
                     excl, q_lo, q_hi, y, Tp, np.int64(kmax), nblk, np.int64(rows), use_prev, R,
                     pred)
    return pred


@njit(cache=True, fastmath=FASTMATH_DIST)
def _sweep_block(task, Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi,
                 y, Tp, kmax, nblk, rows, use_prev, R, pred):
    """Block ``task`` (series ``task // nblk``, rows ``rows`` of block ``task % nblk``) of
    :func:`simplex_sweep`, written into ``pred``: a serial function, so that the parallel
    loop stays small (numba's parallel compilation, once per process on a cold cache, is
    then faster)."""
    nE = lib_ok.shape[0]
    P = pred_t.shape[0]
    b = task // nblk
    blk = task - b * nblk
    table = debruijn_table()
    acc = np.empty(CHUNK)
    accE = np.empty((nE, CHUNK))
    flag = np.empty(CHUNK, np.uint64)
    bound = np.empty(nE)
    thr = np.empty(nE)
    # per E the sorted k nearest (squared distances) of the rows in the ring, laid out as
    # the kNN tables (E, series, row, k) so that their helpers serve both kernels
    Ld = np.empty((nE, 1, R, kmax))
    Lq = np.empty((nE, 1, R, kmax), np.int64)
    Lc = np.zeros((R, nE), np.int64)
    Lp = np.full(R, -1, np.int64)  # the time row each ring slot holds
    for pi in range(blk * rows, min(P, (blk + 1) * rows)):
        if not _row_wanted(pred_ok, b, pi):
            continue
        p = pred_t[pi]
        s = p % R
        sp = (p - tau) % R
        have_prev = use_prev and p >= tau and Lp[sp] == p - tau
        Lp[s] = p
        for ie in range(nE):
            Lc[s, ie] = 0
            bound[ie] = np.inf
            k = k_list[ie]
            if have_prev and Lc[sp, ie] == k and pred_ok[ie, b, pi]:
                bound[ie] = _shifted_bound(Xpad, pad, lib_ok, q_hi, b, E_list[ie], k, tau,
                                           excl, p, Lq, Ld, ie, 0, sp)
            thr[ie] = bound[ie] if pred_ok[ie, b, pi] else -1.0
        for q0 in range(q_lo[b], q_hi[b], CHUNK):
            n = min(CHUNK, q_hi[b] - q0)
            _chunk_distances(Xpad, pad, b, p, q0, n, tau, E_list, thr, acc, accE, flag,
                             True)
            for j in range(n):  # scalar: the set bits only
                m = flag[j]
                if m == 0:
                    continue
                q = q0 + j
                if abs(q - p) <= excl:
                    continue
                while m != 0:
                    ie = lowest_bit(m, table)
                    m &= m - np.uint64(1)
                    d = accE[ie, j]
                    if d <= thr[ie] and lib_ok[ie, b, q]:
                        k = k_list[ie]
                        c = _insert_at(Ld, Lq, ie, 0, s, Lc[s, ie], k, d, q, p)
                        Lc[s, ie] = c
                        if c == k:
                            thr[ie] = min(Ld[ie, 0, s, k - 1], bound[ie])
        for ie in range(nE):  # simplex weights as simplex_predict, on rooted distances
            m = Lc[s, ie]
            if m == 0 or not pred_ok[ie, b, pi]:
                continue
            dmin = max(np.sqrt(Ld[ie, 0, s, 0]), D_MIN)
            wsum = 0.0
            a = 0.0
            for j in range(m):
                w = np.exp(-np.sqrt(Ld[ie, 0, s, j]) / dmin)
                wsum += w
                a += w * y[b, Lq[ie, 0, s, j] + Tp]
            pred[ie, b, pi] = a / wsum

