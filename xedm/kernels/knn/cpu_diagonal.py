"""The diagonal-recurrence kNN kernel (numba, CPU): one E, O(1) per (prediction, library)
pair for any E, for consecutive prediction rows; the contract of :mod:`.cpu`.

Where the time goes (perf, L = 4,000, E = 20, one thread; shares of each version's time,
before -> after issue 43): the recurrence 19 -> 26 %, the search for candidates 27 -> 14 %
(a branchy loop over every column -> bit masks from one vectorised pass), the direct first
rows of each strip 20 % -> under 2 % (vectorised), the candidates' exact sums and their
insertion the rest; 39 -> 20 ms (CPU time).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._bits import debruijn_table, lowest_bit
from .._flags import FASTMATH_DIST
from .._numba import njit  # numba's, with xedm's kernel cache
from .cpu_common import _insert, _shifted_d2

STRIP = 256  # prediction rows per task of the diagonal kernel
TILE = 8192  # library columns per tile of the diagonal kernel
BLK = 64  # columns per bit mask of the screen (passed at run time: see _screen_masks)
EPS = np.finfo(np.float64).eps


@njit(cache=True, inline="always")
def _sq(Xpad, b, C, i, j):
    s = 0.0
    for c in range(C):
        diff = Xpad[b, c, i] - Xpad[b, c, j]
        s += diff * diff
    return s


@njit(cache=True, inline="always")
def _exact_d2(Xpad, pad, b, E, C, tau, p, q):
    """Exact squared distance of states p and q: the plain float64 sum from 0.0, lag by lag,
    column by column within a lag (every kernel's sum)."""
    s = 0.0
    for e in range(E):
        for c in range(C):
            diff = Xpad[b, c, pad + p - e * tau] - Xpad[b, c, pad + q - e * tau]
            s += diff * diff
    return s


@njit(cache=True, fastmath=FASTMATH_DIST)
def _tile_d2(Xpad, pad, b, E, tau, p, q0, n, out):
    """Exact squared distances from state p to the states q0 .. q0 + n - 1 into ``out``:
    ``sum_e sum_c (x_c[p - e*tau] - x_c[q - e*tau])**2`` added up from 0.0 lag by lag, column
    by column within a lag (vectorized across q; each value is the same sum in the same
    order as :func:`_exact_d2`, so the kernels' distances agree bit for bit)."""
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


@njit(cache=True, inline="always")
def _advance(Xpad, b, C, tau, pp, back, xq0, nq, w):
    """One step of the recurrence along the diagonals, in place: ``w[j]`` (for j >= tau)
    holds d2(p - tau, q - tau) and becomes d2(p, q) for q = column j of the tile, by adding
    the newest lag's terms and taking the oldest's away.  ``xq0``: the padded index of the
    tile's first column."""
    nn = nq - tau
    if nn <= 0:
        return
    wv = w[tau:nq]  # views indexed by a plain loop counter: no wraparound checks, vectorized
    if C == 1:
        xa = Xpad[b, 0, pp]
        xb = Xpad[b, 0, pp - back]
        xq = Xpad[b, 0, xq0 + tau: xq0 + nq]
        xo = Xpad[b, 0, xq0 + tau - back: xq0 + nq - back]
        for j in range(nn):
            d1 = xa - xq[j]
            d2 = xb - xo[j]
            wv[j] = wv[j] + (d1 * d1 - d2 * d2)
    else:
        for c in range(C):
            xa = Xpad[b, c, pp]
            xb = Xpad[b, c, pp - back]
            xq = Xpad[b, c, xq0 + tau: xq0 + nq]
            xo = Xpad[b, c, xq0 + tau - back: xq0 + nq - back]
            for j in range(nn):
                d1 = xa - xq[j]
                d2 = xb - xo[j]
                wv[j] += d1 * d1 - d2 * d2


@njit(cache=True, inline="always")
def _screen_masks(w, nb, blk, screen, masks):
    """Per block of ``blk`` (<= 64) columns, a bit mask of the values of ``w`` at or below
    ``screen`` (the tail past the tile holds NaN, never below); returns the number of set
    bits.  ``blk`` comes at run time: with a constant trip count the loop is unrolled into
    scalar compares instead of vectorized (3-5x slower)."""
    total = np.uint64(0)
    ub = np.uint64(blk)
    one = np.uint64(1)
    zero = np.uint64(0)
    for bi in range(np.uint64(nb)):  # unsigned indices: no wraparound checks
        base = bi * ub
        mk = zero
        for t in range(ub):
            mk |= (one << t) if w[base + t] <= screen else zero
        masks[bi] = mk
        total += _popcount(mk)
    return np.int64(total)


@njit(cache=True, inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True, inline="always")
def _gather_d2(Xpad, pad, b, E, C, tau, p, q0, js, m, out):
    """:func:`_exact_d2` of the states q0 + js[i], i < m, into ``out[i]``: the same sums in
    the same order, four candidates at a time in registers (four independent chains)."""
    i = 0
    while i + 4 <= m:
        qa = pad + q0 + js[i]
        qb = pad + q0 + js[i + 1]
        qc = pad + q0 + js[i + 2]
        qd = pad + q0 + js[i + 3]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for e in range(E):
            off = e * tau
            for c in range(C):
                xp = Xpad[b, c, pad + p - off]
                d0 = xp - Xpad[b, c, qa - off]
                d1 = xp - Xpad[b, c, qb - off]
                d2 = xp - Xpad[b, c, qc - off]
                d3 = xp - Xpad[b, c, qd - off]
                s0 += d0 * d0
                s1 += d1 * d1
                s2 += d2 * d2
                s3 += d3 * d3
        out[i] = s0
        out[i + 1] = s1
        out[i + 2] = s2
        out[i + 3] = s3
        i += 4
    while i < m:
        out[i] = _exact_d2(Xpad, pad, b, E, C, tau, p, q0 + js[i])
        i += 1


@njit(cache=True, fastmath=FASTMATH_DIST)
def _diagonal_strip(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi, spread2,
                    blk, b, i0, i1, idx, dist):
    """The work of one task of :func:`knn_diagonal`: rows i0 .. i1 - 1 of series b, into
    ``idx``/``dist`` (a serial function: the parallel loop only calls it, which keeps the
    parallel kernel's compilation short)."""
    C = Xpad.shape[1]
    back = E * tau
    D = E * C
    r0 = pred_t[i0]
    nrows = pred_t[i1 - 1] + 1 - r0
    # rounding of a recurrence value: at most nrows updates of C terms, each squared
    # difference below spread2 and the running sum below (D + 1) * spread2, so each update
    # rounds by at most (D + 4) ulps of spread2; the direct sums (the recurrence's start
    # and the exact value) by at most D * D each.  Bounded 16 times over:
    slack = 8.0 * EPS * spread2[b] * (C * (D + 4) * nrows + 2 * D * D)
    # by diagonal: row i's value for column j of a tile at [i % tau, nrows - 1 - i + j]
    width = nrows + TILE + blk
    diag = np.empty((tau, width))
    exact = np.empty(TILE)  # exact squared distances of a tile's screened candidates
    js = np.empty(TILE, np.int64)  # ... and their columns
    masks = np.empty(TILE // blk + 1, np.uint64)
    table = debruijn_table()
    for c0 in range(q_lo[b], q_hi[b], TILE):
        nq = min(TILE, q_hi[b] - c0)
        nb = (nq + blk - 1) // blk
        xq0 = pad + c0
        pi = i0
        for i in range(nrows):
            p = r0 + i
            pp = pad + p
            o = nrows - 1 - i
            w = diag[i % tau, o: o + nb * blk]
            if i < tau:
                _tile_d2(Xpad, pad, b, E, tau, p, c0, nq, w)
            else:
                for j in range(min(tau, nq)):
                    acc = 0.0
                    for e in range(E):
                        acc += _sq(Xpad, b, C, pp - e * tau, xq0 + j - e * tau)
                    w[j] = acc
                _advance(Xpad, b, C, tau, pp, back, xq0, nq, w)
            # the slots past the tile: no later row of this class reads them (NaN: never at
            # or below a screen)
            for j in range(nq, nb * blk):
                w[j] = np.nan
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
                    hits = _screen_masks(w, nb, blk, screen, masks)
                    if hits > 0:
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
                        else:  # few (a predictable branch): only the blocks with some
                            for bi in range(nb):
                                mk = masks[bi]
                                while mk != 0:
                                    j = bi * blk + lowest_bit(mk, table)
                                    mk &= mk - np.uint64(1)
                                    q = c0 + j
                                    if lib_ok[b, q] and abs(q - p) > excl:
                                        js[m] = j
                                        m += 1
                                        below += q < p
                            _gather_d2(Xpad, pad, b, E, C, tau, p, c0, js, m, exact)
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


@njit(parallel=True, cache=True, fastmath=FASTMATH_DIST)
def knn_diagonal(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi, spread2,
                 blk):
    """One E by diagonal recurrence: cost O(1) per (prediction, library) pair for any E.

    Along a diagonal of the distance matrix,
    ``d2(p, q) = d2(p - tau, q - tau) + s(p, q) - s(p - E*tau, q - E*tau)`` with
    ``s(i, j) = sum_c (x_c[i] - x_c[j])**2``.  Each task owns a strip of consecutive time rows
    (so no two threads touch the same neighbour row) and walks library tiles of TILE columns.
    The values are kept by diagonal (q - p), one buffer per row class modulo tau, so each
    step updates them in place (:func:`_advance`); the first tau rows of a tile, and the
    first tau columns of each row, are summed directly.  Needs ``pad >= E * tau``
    and prediction rows that are (nearly) consecutive; the caller picks :func:`knn_sweep`
    otherwise.  Output as ``knn_sweep`` for one E: (B, P, k).

    The recurrence only screens: it drifts by rounding, so an exact tie can come out a few
    ulps above or below its twin, which would decide the tie by noise.  A pair passes the
    screen when its recurrence value is within a rounding ``slack`` of the current threshold
    (a bound on the drift over the strip, from ``spread2`` (B,), the squared range of the
    values of each series, padding included); its distance is then summed directly
    (:func:`_exact_d2`, :func:`_tile_d2`), and only that exact value is compared and stored,
    in the order (distance, |dt|, t).  The screen is one vectorised pass that leaves a bit
    mask per ``blk`` (BLK) columns (:func:`_screen_masks`); the candidates are read off the
    set bits, and their exact sums computed four at a time (:func:`_gather_d2`).  The work
    of each task is the serial :func:`_diagonal_strip`.
    """
    B, C, _ = Xpad.shape
    P = pred_t.shape[0]
    idx = np.full((B, P, k), -1, np.int64)
    dist = np.full((B, P, k), np.inf)
    nstrip = (P + STRIP - 1) // STRIP
    for task in prange(B * nstrip):
        # int64, not the loop's unsigned index: one signature, one compile
        b = np.int64(task) // nstrip
        i0 = (np.int64(task) - b * nstrip) * STRIP
        _diagonal_strip(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi,
                        spread2, blk, b, i0, min(P, i0 + STRIP), idx, dist)
    return idx, dist


def diagonal_tables(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi):
    """:func:`knn_diagonal` with its rounding scale: per series the squared range of the
    values the recurrence reads (padding and zeroed NaN included), which no squared
    difference exceeds.  Needs consecutive prediction rows and ``pad >= E * tau``."""
    flat = Xpad.reshape(Xpad.shape[0], -1)
    spread2 = (flat.max(axis=1) - flat.min(axis=1)) ** 2 if Xpad.size else np.zeros(1)
    return knn_diagonal(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi,
                        np.ascontiguousarray(spread2, np.float64), BLK)
