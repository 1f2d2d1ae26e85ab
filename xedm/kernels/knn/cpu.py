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
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import _numba  # noqa: F401  (kernel cache location, threading layer)
from ._flags import FASTMATH_DIST

CHUNK = 256  # candidates per block: small, so a full row skips most blocks by a count


@njit(cache=True, inline="always")
def _before(d, q, dd, qq, p):
    """True when candidate (d, q) comes strictly before (dd, qq) for prediction point p."""
    if d < dd:
        return True
    if d > dd:
        return False
    a = abs(q - p)
    aa = abs(qq - p)
    if a != aa:
        return a < aa
    return q < qq


@njit(cache=True, inline="always")
def _insert(dist_row, idx_row, k, d, q, p):
    """Insert (d, q) into the sorted first k slots of a row, if it belongs there.

    Binary search for the slot (the rows are sorted by the comparator, empty slots (inf, -1)
    last), then one shift: a few comparisons instead of one per slot moved.
    """
    if not _before(d, q, dist_row[k - 1], idx_row[k - 1], p):
        return
    lo = 0
    hi = k - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _before(d, q, dist_row[mid], idx_row[mid], p):
            hi = mid
        else:
            lo = mid + 1
    for j in range(k - 1, lo, -1):
        dist_row[j] = dist_row[j - 1]
        idx_row[j] = idx_row[j - 1]
    dist_row[lo] = d
    idx_row[lo] = q


@njit(cache=True, inline="always")
def _insert_at(dist, idx, ie, b, pi, c, k, d, q, p):
    """:func:`_insert` on row (ie, b, pi) of 4-D tables, indexed in place (creating row views
    in the hot loop costs reference-count updates that dominate the insertion itself).  The
    row holds c entries (room for k; pass c = k for a row padded with (inf, -1)); returns
    the new count."""
    if c == k:
        if not _before(d, q, dist[ie, b, pi, k - 1], idx[ie, b, pi, k - 1], p):
            return c
        pos = k - 1
    else:
        pos = c
        c += 1
    while pos > 0 and _before(d, q, dist[ie, b, pi, pos - 1], idx[ie, b, pi, pos - 1], p):
        dist[ie, b, pi, pos] = dist[ie, b, pi, pos - 1]
        idx[ie, b, pi, pos] = idx[ie, b, pi, pos - 1]
        pos -= 1
    dist[ie, b, pi, pos] = d
    idx[ie, b, pi, pos] = q
    return c


@njit(cache=True, inline="always")
def _shifted_d2(Xpad, pad, b, E, tau, p, q, d2_prev):
    """Squared distance of states p and q from that of p - tau and q - tau (``d2_prev``): add
    the newest lag, drop the oldest.  Returns it with an absolute rounding slack added, so it
    bounds the direct sum of the same distance from above."""
    C = Xpad.shape[1]
    add = 0.0
    sub = 0.0
    for c in range(C):
        a = Xpad[b, c, pad + p] - Xpad[b, c, pad + q]
        s = Xpad[b, c, pad + p - E * tau] - Xpad[b, c, pad + q - E * tau]
        add += a * a
        sub += s * s
    return d2_prev + add - sub + 1e-12 * (d2_prev + add + sub)


@njit(cache=True, inline="always")
def _shifted_bound(Xpad, pad, lib_ok, q_hi, b, E, k, tau, excl, p, idx, dist, ie, tb, row):
    """The largest squared distance from state p to the k entries of table row
    (ie, tb, row), the neighbours of p - tau, each shifted by tau (:func:`_shifted_d2`, O(1)
    each, rounding slack included): an upper bound on p's k-th nearest distance.  inf when a
    shifted entry is not a library point for p."""
    worst = 0.0
    for j in range(k):
        q = idx[ie, tb, row, j] + tau
        if q >= q_hi[b] or not lib_ok[ie, b, q] or abs(q - p) <= excl:
            return np.inf
        worst = max(worst, _shifted_d2(Xpad, pad, b, E, tau, p, q, dist[ie, tb, row, j]))
    return worst


@njit(cache=True, inline="always")
def _row_wanted(pred_ok, b, pi):
    """True when prediction row pi of series b is wanted for some E."""
    for i in range(pred_ok.shape[0]):
        if pred_ok[i, b, pi]:
            return True
    return False


@njit(cache=True, inline="always")
def _chunk_distances(Xpad, pad, b, p, q0, n, tau, E_list, thr, acc, accE, flag, bit_per_E):
    """Squared distances from state p to the states q0 .. q0 + n - 1 at every E of E_list
    (into ``accE``, accumulated lag by lag, vectorized), and per candidate a mask ``flag`` of
    the E whose threshold ``thr`` it meets: bit ie with ``bit_per_E``, else bit 0 for any E."""
    C = Xpad.shape[1]
    for j in range(n):
        acc[j] = 0.0
        flag[j] = 0
    ie = 0
    for e in range(E_list[E_list.shape[0] - 1]):
        for c in range(C):
            xp = Xpad[b, c, pad + p - e * tau]
            base = pad + q0 - e * tau
            xs = Xpad[b, c, base : base + n]  # a view: plain j indexing vectorizes
            for j in range(n):
                diff = xp - xs[j]
                acc[j] += diff * diff
        if E_list[ie] == e + 1:
            t_ie = thr[ie]
            row = accE[ie]
            bit = np.uint64(1) << np.uint64(ie if bit_per_E else 0)
            for j in range(n):
                row[j] = acc[j]
                flag[j] |= bit if acc[j] <= t_ie else np.uint64(0)
            ie += 1


@njit(cache=True)
def _bounds_from_previous_row(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl,
                              q_hi, idx, dist, b, pi, first, bound):
    """Upper bounds on each E's k-th nearest squared distance for row p, from the row
    p - tau (finished just before, in the same block, its squared distances not yet rooted):
    its neighbours shifted by tau are k valid candidates for p, often close ones, so only
    candidates below the largest of their distances need an insertion.  Each shifted distance
    comes from the stored one in O(1) (:func:`_shifted_d2`, rounding slack included), so
    every true neighbour lies at or below the bound.  inf where no bound is known.
    """
    nE = E_list.shape[0]
    p = pred_t[pi]
    for ie in range(nE):
        bound[ie] = np.inf
    pj = pi - tau
    if pj < first or pred_t[pj] != p - tau:
        return
    for ie in range(nE):
        k = k_list[ie]
        if not (pred_ok[ie, b, pi] and pred_ok[ie, b, pj]) or idx[ie, b, pj, k - 1] < 0:
            continue
        bound[ie] = _shifted_bound(Xpad, pad, lib_ok, q_hi, b, E_list[ie], k, tau, excl, p,
                                   idx, dist, ie, b, pj)


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
