"""The diagonal-recurrence kNN kernel (numba, CPU): one E, O(1) per (prediction, library)
pair for any E, for consecutive prediction rows; the contract of :mod:`.cpu`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._flags import FASTMATH_DIST
from .._numba import njit  # numba's, with xedm's kernel cache
from .cpu_common import _insert, _shifted_d2

STRIP = 256  # prediction rows per task of the diagonal kernel
TILE = 2048  # library columns per tile of the diagonal kernel


@njit(cache=True, inline="always")
def _sq(Xpad, b, C, i, j):
    s = 0.0
    for c in range(C):
        diff = Xpad[b, c, i] - Xpad[b, c, j]
        s += diff * diff
    return s


@njit(cache=True, inline="always")
def _tile_d2(Xpad, pad, b, E, tau, p, q0, n, out):
    """Exact squared distances from state p to the states q0 .. q0 + n - 1 into ``out``:
    ``sum_e sum_c (x_c[p - e*tau] - x_c[q - e*tau])**2`` added up from 0.0 lag by lag, column
    by column within a lag, as ``_chunk_distances`` (vectorized across q; each value is the
    same sum in the same order, so the kernels' distances agree bit for bit)."""
    C = Xpad.shape[1]
    for j in range(n):
        out[j] = 0.0
    for e in range(E):
        for c in range(C):
            xp = Xpad[b, c, pad + p - e * tau]
            base = pad + q0 - e * tau
            xs = Xpad[b, c, base : base + n]  # a view: plain j indexing vectorizes
            for j in range(n):
                diff = xp - xs[j]
                out[j] += diff * diff


@njit(cache=True, inline="always")
def _gather_d2(Xpad, pad, b, E, tau, p, q0, js, m, out):
    """:func:`_tile_d2` for the states q0 + js[i], i < m, only, into ``out[i]``: the same sums
    in the same order, interleaved across candidates (independent chains)."""
    C = Xpad.shape[1]
    for i in range(m):
        out[i] = 0.0
    for e in range(E):
        for c in range(C):
            xp = Xpad[b, c, pad + p - e * tau]
            base = pad + q0 - e * tau
            for i in range(m):
                diff = xp - Xpad[b, c, base + js[i]]
                out[i] += diff * diff


@njit(cache=True)
def _row_bound(Xpad, pad, b, E, tau, k, excl, lib_ok, idx, dist, pred_t, pi, q_hi):
    """Upper bound on row pi's k-th nearest squared distance from the row tau steps back (an
    earlier row of the same strip, exact squared distances not yet rooted): its k neighbours,
    shifted by tau, are k valid candidates, their distances updated in O(1) each
    (:func:`_shifted_d2`, rounding slack included).  inf when unusable."""
    pj = pi - tau
    p = pred_t[pi]
    if pred_t[pj] != p - tau or idx[b, pj, k - 1] < 0:
        return np.inf
    worst = 0.0
    for j in range(k):
        q = idx[b, pj, j] + tau
        if q >= q_hi or not lib_ok[b, q] or abs(q - p) <= excl:
            return np.inf
        worst = max(worst, _shifted_d2(Xpad, pad, b, E, tau, p, q, dist[b, pj, j]))
    return worst


EPS = np.finfo(np.float64).eps


@njit(parallel=True, cache=True, fastmath=FASTMATH_DIST)
def knn_diagonal(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi, spread2):
    """One E by diagonal recurrence: cost O(1) per (prediction, library) pair for any E.

    Along a diagonal of the distance matrix,
    ``d2(p, q) = d2(p - tau, q - tau) + s(p, q) - s(p - E*tau, q - E*tau)`` with
    ``s(i, j) = sum_c (x_c[i] - x_c[j])**2``.  Each task owns a strip of consecutive time rows
    (so no two threads touch the same neighbour row) and walks library tiles of TILE columns;
    the first tau rows and columns of a tile are summed directly.  Needs ``pad >= E * tau``
    and prediction rows that are (nearly) consecutive; the caller picks :func:`knn_sweep`
    otherwise.  Output as ``knn_sweep`` for one E: (B, P, k).

    The recurrence only screens: it drifts by rounding, so an exact tie can come out a few
    ulps above or below its twin, which would decide the tie by noise.  A pair passes the
    screen when its recurrence value is within a rounding ``slack`` of the current threshold
    (a bound on the drift over the strip, from ``spread2`` (B,), the squared range of the
    values of each series, padding included); its distance is then summed directly
    (:func:`_tile_d2`, :func:`_gather_d2`), and only that exact value is compared and stored,
    in the order (distance, |dt|, t).
    """
    B, C, _ = Xpad.shape
    P = pred_t.shape[0]
    idx = np.full((B, P, k), -1, np.int64)
    dist = np.full((B, P, k), np.inf)
    nstrip = (P + STRIP - 1) // STRIP
    back = E * tau
    D = E * C
    for task in prange(B * nstrip):
        b = task // nstrip
        s0 = task - b * nstrip
        i0 = s0 * STRIP
        i1 = min(P, i0 + STRIP)
        r0 = pred_t[i0]
        nrows = pred_t[i1 - 1] + 1 - r0
        # rounding of a recurrence value: at most nrows updates of C terms, each squared
        # difference below spread2 and the running sum below (D + 1) * spread2, so each update
        # rounds by at most (D + 4) ulps of spread2; the direct sums (the recurrence's start
        # and the exact value) by at most D * D each.  Bounded 16 times over:
        slack = 8.0 * EPS * spread2[b] * (C * (D + 4) * nrows + 2 * D * D)
        ring = np.empty((tau + 1, TILE))
        exact = np.empty(TILE)  # exact squared distances of a tile's screened candidates
        js = np.empty(TILE, np.int64)  # ... and their columns
        for c0 in range(q_lo[b], q_hi[b], TILE):
            nq = min(TILE, q_hi[b] - c0)
            pi = i0
            for i in range(nrows):
                p = r0 + i
                cur = ring[i % (tau + 1)]
                pp = pad + p
                qq = pad + c0
                if i < tau:
                    for j in range(nq):
                        acc = 0.0
                        for e in range(E):
                            acc += _sq(Xpad, b, C, pp - e * tau, qq + j - e * tau)
                        cur[j] = acc
                else:
                    prev = ring[(i - tau) % (tau + 1)]
                    for j in range(min(tau, nq)):
                        acc = 0.0
                        for e in range(E):
                            acc += _sq(Xpad, b, C, pp - e * tau, qq + j - e * tau)
                        cur[j] = acc
                    # views indexed by a plain loop counter: numba then drops its negative-
                    # index wraparound checks and the loop vectorizes (about 4x faster)
                    nn = nq - tau
                    if nn > 0 and C == 1:
                        cv = cur[tau:nq]
                        pv = prev[0:nn]
                        xa = Xpad[b, 0, pp]
                        xb = Xpad[b, 0, pp - back]
                        xq = Xpad[b, 0, qq + tau : qq + nq]
                        xo = Xpad[b, 0, qq + tau - back : qq + nq - back]
                        for j in range(nn):
                            d1 = xa - xq[j]
                            d2 = xb - xo[j]
                            cv[j] = pv[j] + (d1 * d1 - d2 * d2)
                    elif nn > 0:
                        cv = cur[tau:nq]
                        pv = prev[0:nn]
                        for j in range(nn):
                            cv[j] = pv[j]
                        for c in range(C):
                            xa = Xpad[b, c, pp]
                            xb = Xpad[b, c, pp - back]
                            xq = Xpad[b, c, qq + tau : qq + nq]
                            xo = Xpad[b, c, qq + tau - back : qq + nq - back]
                            for j in range(nn):
                                d1 = xa - xq[j]
                                d2 = xb - xo[j]
                                cv[j] += d1 * d1 - d2 * d2
                if pi < i1 and pred_t[pi] == p:
                    if pred_ok[b, pi]:
                        drow = dist[b, pi]
                        irow = idx[b, pi]
                        bnd = np.inf
                        if drow[k - 1] == np.inf and pi - tau >= i0:
                            bnd = _row_bound(Xpad, pad, b, E, tau, k, excl, lib_ok, idx, dist,
                                             pred_t, pi, q_hi[b])
                        thr = min(drow[k - 1], bnd)
                        screen = thr + slack  # what a recurrence value may show for thr
                        hits = 0  # vectorized count first: most tiles hold no candidate
                        for j in range(nq):
                            hits += cur[j] <= screen
                        if hits > 0:
                            # the screened candidates' exact distances, compacted into
                            # (js, exact) with those that are no library point for p left out;
                            # the first `below` of them lie before p in time
                            m = 0
                            below = 0
                            if hits * 8 > nq:
                                # many (exact ties: runs of equal values): the whole tile in
                                # one vectorized pass, then only those that come before the
                                # k-th entry in the full order (a later k-th comes earlier)
                                _tile_d2(Xpad, pad, b, E, tau, p, c0, nq, exact)
                                dk = drow[k - 1]
                                qk = irow[k - 1]
                                ak = abs(qk - p)
                                for j in range(nq):  # branch-free compaction, in place
                                    q = c0 + j
                                    d = exact[j]
                                    a = abs(q - p)
                                    js[m] = j
                                    exact[m] = d
                                    ok = ((d <= thr) & lib_ok[b, q] & (a > excl)
                                          & ((d < dk) | (a < ak) | ((a == ak) & (q < qk))))
                                    m += ok
                                    below += ok & (q < p)
                            else:  # few (a predictable branch): gathered
                                for j in range(nq):
                                    if cur[j] <= screen:
                                        q = c0 + j
                                        if lib_ok[b, q] and abs(q - p) > excl:
                                            js[m] = j
                                            m += 1
                                            below += q < p
                                _gather_d2(Xpad, pad, b, E, tau, p, c0, js, m, exact)
                            # outwards from p: of equally distant points the nearer in time
                            # come first, and then the others no longer enter (in time order
                            # each zero-distance point of a run before p would enter in turn)
                            for t in range(m):
                                u = below - 1 - t if t < below else t
                                d = exact[u]
                                if d <= thr:  # exact: a candidate AT thr may still enter
                                    _insert(drow, irow, k, d, c0 + js[u], p)
                                    thr = min(drow[k - 1], bnd)
                    pi += 1
        for pi in range(i0, i1):
            for j in range(k):
                dist[b, pi, j] = np.sqrt(dist[b, pi, j])
    return idx, dist


def diagonal_tables(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi):
    """:func:`knn_diagonal` with its rounding scale: per series the squared range of the
    values the recurrence reads (padding and zeroed NaN included), which no squared
    difference exceeds.  Needs consecutive prediction rows and ``pad >= E * tau``."""
    flat = Xpad.reshape(Xpad.shape[0], -1)
    spread2 = (flat.max(axis=1) - flat.min(axis=1)) ** 2 if Xpad.size else np.zeros(1)
    return knn_diagonal(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi,
                        np.ascontiguousarray(spread2, np.float64))
