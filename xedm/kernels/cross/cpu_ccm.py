"""Cross-mapping kernels (numba, CPU): deep sorted neighbour tables and sampled-library CCM
skill, Pearson accumulated on the fly (predictions are never stored).  The all-pairs cross
map's lookups are in :mod:`xedm.kernels.cross.cpu_xmap`.

Signatures shared with the GPU twins::

    sorted_table(Xpad, pad, lib_ok, pred_t, pred_ok, E, tau, excl, depth) -> idx, dist (P, depth)
    ccm_skill(idx, dist, members, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t, complete)
        -> rho (n_sets, n_targets)
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from .._bits import debruijn_table, lowest_bit
from .._flags import FASTMATH_DIST, FASTMATH_STRICT
from .._numba import njit  # numba's, with xedm's kernel cache
from ..knn.cpu_common import _insert
from ..predict.constants import D_MIN
from ..predict.cpu_skill import pow2_exponent

W_NEAREST = np.exp(-1.0)  # weight of the nearest neighbour whenever its distance >= D_MIN


@njit(parallel=True, cache=True)
def floyd_members(pos, T, sizes, samples, u):
    """Membership masks (n_sizes * samples, T) of library subsets drawn by Floyd's algorithm
    from the uniform doubles ``u``, consumed in order (protocol: :mod:`xedm.core.ccm`).
    Each draw's offset into ``u`` is known up front, so the draws run in parallel."""
    n = pos.shape[0]
    nrow = sizes.shape[0] * samples
    members = np.zeros((nrow, T), np.bool_)
    start = np.zeros(nrow + 1, np.int64)  # offset of each draw's doubles in u
    for row in range(nrow):
        L = sizes[row // samples]
        start[row + 1] = start[row] + (min(L, n - L) if L < n else 0)
    for row in prange(nrow):
        L = sizes[row // samples]
        if L >= n:
            for c in range(n):
                members[row, pos[c]] = True
            continue
        m = min(L, n - L)
        at = start[row]
        picked = np.zeros(n, np.bool_)
        for i in range(m):
            j = n - m + i
            c = int(u[at + i] * (j + 1))
            if picked[c]:
                picked[j] = True
            else:
                picked[c] = True
        keep = m == L  # else the picked points are the ones left out
        for c in range(n):
            if picked[c] == keep:
                members[row, pos[c]] = True
    return members


ROWS = 64  # prediction rows per task of sorted_table (consecutive: each bounds the next)


@njit(cache=True)
def _order_ties(cq, cd, n, p):
    """Within runs of equal distance (already in time order), order by (|q - p|, q)."""
    a = 0
    while a < n:
        b = a + 1
        while b < n and cd[b] == cd[a]:
            b += 1
        for i in range(a + 1, b):  # insertion sort of a short run
            q = cq[i]
            j = i
            while j > a and (abs(cq[j - 1] - p) > abs(q - p)
                             or (abs(cq[j - 1] - p) == abs(q - p) and cq[j - 1] > q)):
                cq[j] = cq[j - 1]
                j -= 1
            cq[j] = q
        a = b


@njit(cache=True)
def _kth_smallest(a, n, kk):
    """The kk-th smallest (0-based) of a[:n], rearranging a (quickselect, Hoare partition)."""
    lo = 0
    hi = n - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        pv = a[mid]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pv:
                i += 1
            while pv < a[j]:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if kk <= j:
            hi = j
        elif kk >= i:
            lo = i
        else:
            break
    return a[kk]


@njit(cache=True)
def _sort_pairs(cd, cq, n, td, tq):
    """Stable sort of (cd, cq)[:n] by cd, bottom-up merges through the buffers td, tq."""
    width = 1
    src_d, src_q, dst_d, dst_q = cd, cq, td, tq
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for o in range(lo, hi):
                if i < mid and (j >= hi or src_d[i] <= src_d[j]):
                    dst_d[o] = src_d[i]
                    dst_q[o] = src_q[i]
                    i += 1
                else:
                    dst_d[o] = src_d[j]
                    dst_q[o] = src_q[j]
                    j += 1
        src_d, src_q, dst_d, dst_q = dst_d, dst_q, src_d, src_q
        width *= 2
    if src_d is not cd:
        for o in range(n):
            cd[o] = src_d[o]
            cq[o] = src_q[o]


@njit(parallel=True, cache=True, fastmath=FASTMATH_DIST)
def sorted_table(Xpad, pad, lib_ok, pred_t, pred_ok, E, tau, excl, depth):
    """The ``depth`` nearest library points of every prediction row, exactly ordered by
    (distance, |dt|, t).

    Per row: squared distances to every time point (contiguous, vectorized), the candidates
    at or below a bound (the row tau steps back, its table shifted by tau, gives ``depth``
    valid candidates, so the bound is their largest distance), the depth-th smallest of those
    by a partition, then a stable sort by distance with exact ties put in (|dt|, t) order.
    """
    C = Xpad.shape[0]
    T = lib_ok.shape[0]
    P = pred_t.shape[0]
    idx = np.full((P, depth), -1, np.int64)
    dist = np.full((P, depth), np.inf)
    nblk = (P + ROWS - 1) // ROWS
    for blk in prange(nblk):
        d2 = np.empty(T)
        cq = np.empty(T, np.int64)
        cd = np.empty(T)
        tq = np.empty(T, np.int64)  # scratch of the selection and the merges
        td = np.empty(T)
        r0 = blk * ROWS
        for pi in range(r0, min(P, r0 + ROWS)):
            if not pred_ok[pi]:
                continue
            p = pred_t[pi]
            for q in range(T):
                d2[q] = 0.0
            for e in range(E):
                for c in range(C):
                    xp = Xpad[c, pad + p - e * tau]
                    xs = Xpad[c, pad - e * tau : pad - e * tau + T]
                    for q in range(T):
                        diff = xp - xs[q]
                        d2[q] += diff * diff
            bound = np.inf
            pj = pi - tau
            if pj >= r0 and pred_t[pj] == p - tau and idx[pj, depth - 1] >= 0:
                worst = 0.0
                for j in range(depth):
                    q = idx[pj, j] + tau
                    if q >= T or not lib_ok[q] or abs(q - p) <= excl:
                        worst = np.inf
                        break
                    worst = max(worst, d2[q])
                bound = worst
            m = 0
            for q in range(T):  # branch-free compaction: which points pass is random
                cq[m] = q
                cd[m] = d2[q]
                m += (d2[q] <= bound) & lib_ok[q] & (abs(q - p) > excl)
            n = min(depth, m)
            if n == 0:
                continue
            if n < m:  # keep candidates up to the n-th smallest distance, ties included
                for j in range(m):
                    td[j] = cd[j]
                thr = _kth_smallest(td, m, n - 1)
                keep = 0
                for j in range(m):  # branch-free compaction
                    cq[keep] = cq[j]
                    cd[keep] = cd[j]
                    keep += cd[j] <= thr
                m = keep
            _sort_pairs(cd, cq, m, td, tq)
            _order_ties(cq, cd, m, p)
            for j in range(n):
                idx[pi, j] = cq[j]
                dist[pi, j] = np.sqrt(cd[j])
    return idx, dist


@njit(cache=True)
def _pearson(s):
    """rho from shifted sums (n, sx, sy, sxx, syy, sxy) of values scaled to about 1 (see
    :func:`_scaled_target` and :func:`xmap_skill`), so that neither the sums nor the product
    of the variances can overflow or underflow."""
    n = s[0]
    if n < 3:
        return np.nan
    cxx = s[3] - s[1] * s[1] / n
    cyy = s[4] - s[2] * s[2] / n
    cxy = s[5] - s[1] * s[2] / n
    if cxx <= 0.0 or cyy <= 0.0:
        return np.nan
    return cxy / (np.sqrt(cxx) * np.sqrt(cyy))


@njit(cache=True)
def _scaled_target(y, rows, ok, out):
    """``out = (y * 2^-a - m) * 2^-b``, the target on a footing independent of its unit: 2^-a
    brings its largest finite |value| into [0.5, 1), m is the mean of the values ``y[rows[i]]``
    where ``ok[i]`` (the rows observed), 2^-b brings the largest finite |value| left into
    [0.5, 1).  The powers of 2 are exact; NaN stays NaN.  Pearson's rho is invariant to this
    affine map, and simplex predictions (weighted means of the target) follow it, so the sums
    of rho can neither overflow nor underflow, whatever the data's unit."""
    T = y.shape[0]
    mx = 0.0
    for q in range(T):
        if np.isfinite(y[q]):
            mx = max(mx, abs(y[q]))
    f = math.ldexp(1.0, -pow2_exponent(mx))
    m = 0.0
    cnt = 0
    for i in range(rows.shape[0]):
        if ok[i]:
            m += y[rows[i]] * f
            cnt += 1
    if cnt > 0:
        m /= cnt
    mx = 0.0
    for q in range(T):
        v = y[q] * f - m
        out[q] = v
        if np.isfinite(v):
            mx = max(mx, abs(v))
    f = math.ldexp(1.0, -pow2_exponent(mx))
    for q in range(T):
        out[q] *= f
    return cnt


@njit(cache=True)
def _direct_search(mrow, p, k, excl, Xpad, pad, E, tau, nb, nd):
    """The k nearest members of one library subset to state p, by a scan of the series
    (the fallback when a sorted table is too shallow); fills nb/nd, returns the count."""
    C = Xpad.shape[0]
    for j in range(k):
        nb[j] = -1
        nd[j] = np.inf
    for q in range(mrow.shape[0]):
        if mrow[q] and abs(q - p) > excl:
            d2 = 0.0
            for e in range(E):
                for c in range(C):
                    diff = Xpad[c, pad + p - e * tau] - Xpad[c, pad + q - e * tau]
                    d2 += diff * diff
            _insert(nd, nb, k, d2, q, p)
    m = 0
    for j in range(k):
        if nb[j] >= 0:
            nd[j] = np.sqrt(nd[j])
            m += 1
    return m


MEMO_D = 10  # ccm_skill shares predictions among subsets with the same first-k entries
MEMO_VALUES = 4096  # ... among the first MEMO_D (fewer with many targets) table entries
CACHE_F = 8  # weight cache of ccm_skill: first-member entries x entries
CACHE_J = 256
CHUNK_ROWS = 64  # ccm_skill's prediction rows per partial sum, at least ...
CHUNKS_MAX = 256  # ... and its partial sums, at most (more rows per chunk beyond that)


@njit(parallel=True, cache=True)
def pack_members(members):
    """(T, ceil(n_sets / 64)) uint64: bit s of word s // 64 says point t is in set s.
    Parallel over blocks of 64 points; each word is assembled branch-free from a 64 x 64
    tile of ``members`` (which stays in L1)."""
    nS, T = members.shape
    W = (nS + 63) // 64
    bits = np.zeros((T, W), np.uint64)
    for blk in prange((T + 63) // 64):
        t0 = blk * 64
        t1 = min(T, t0 + 64)
        for w in range(W):
            s0 = w * 64
            s1 = min(nS, s0 + 64)
            for t in range(t0, t1):
                word = np.uint64(0)
                for s in range(s0, s1):
                    word |= np.uint64(members[s, t]) << np.uint64(s - s0)
                bits[t, w] = word
    return bits


def ccm_skill(idx, dist, members, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t, complete):
    """Cross-map skill for every library subset (row of ``members``) and target (row of Y).

    Each prediction row takes, for every subset, the first k entries of its sorted table that
    are members; when the table is too shallow for that (``complete`` False and fewer than k
    members found) that subset falls back to a direct search.  Rows outermost: one pass over
    a row's table serves all subsets at once, 64 per machine word of the bit-packed
    membership.  Pearson sums are accumulated per (subset, target) and chunk of rows, on the
    targets scaled and shifted by their mean once up front (:func:`_scaled_target`), so that
    rho does not depend on the data's unit.  The chunks' rows depend on the number of rows
    only, and their partial sums are added in chunk order, so the result does not depend on
    the number of threads (bit for bit); as many chunks as threads are in flight at a time.
    """
    P = idx.shape[0]
    rows = max(CHUNK_ROWS, -(-P // CHUNKS_MAX))
    nchunk = max(1, -(-P // rows))
    inflight = max(1, min(nchunk, numba.get_num_threads()))
    return _ccm_skill(idx, dist, members, pack_members(members), Y, obs_ok, k, Tp, Xpad, pad,
                      E, tau, excl, pred_t, complete, rows, nchunk, inflight)


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def _ccm_skill(idx, dist, members, bits, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t,
               complete, rows, nchunk, inflight):
    nS, T = members.shape
    nT = Y.shape[0]
    P = pred_t.shape[0]
    W = bits.shape[1]
    table = debruijn_table()
    D = 0  # prediction memo over the first D entries of a row: 2^D x nT values per chunk
    while D < MEMO_D and (2 << D) * nT <= MEMO_VALUES:
        D += 1
    full = np.zeros(W, np.uint64)
    for s in range(nS):
        full[s // 64] |= np.uint64(1) << np.uint64(s % 64)
    # the targets scaled and shifted by their mean over the rows observed: predictions and
    # observations from Ys are (value - mean) * scale, which leaves rho as it is
    Ys = np.empty(Y.shape)
    obs_t = pred_t + Tp
    for t in prange(nT):
        _scaled_target(Y[t], obs_t, obs_ok[t], Ys[t])
    # n, sum y, sum y^2 over the rows observed are the same for every subset: once per target
    # (``miss`` takes back the rare rows a subset cannot predict); per subset only
    # sum x, sum x^2, sum xy, per chunk of rows
    base = np.zeros((nT, 3))
    for pi in range(P):
        if idx[pi, 0] < 0:
            continue
        for t in range(nT):
            if obs_ok[t, pi]:
                yv = Ys[t, pred_t[pi] + Tp]
                base[t, 0] += 1.0
                base[t, 1] += yv
                base[t, 2] += yv * yv
    # partial sums of the chunks in flight, then their totals, added in chunk order
    sums = np.empty((inflight, nS, nT, 3))
    miss = np.empty((inflight, nS, nT, 3))
    sums_all = np.zeros((nS, nT, 3))
    miss_all = np.zeros((nS, nT, 3))
    for c0 in range(0, nchunk, inflight):
        c1 = min(nchunk, c0 + inflight)
        for slot in prange(c1 - c0):
            _ccm_rows(idx, dist, members, bits, Ys, obs_ok, k, Tp, Xpad, pad, E, tau, excl,
                      pred_t, complete, table, full, D, (c0 + slot) * rows,
                      min(P, (c0 + slot + 1) * rows), sums[slot], miss[slot])
        for slot in range(c1 - c0):
            for s in range(nS):
                for t in range(nT):
                    for c in range(3):
                        sums_all[s, t, c] += sums[slot, s, t, c]
                        miss_all[s, t, c] += miss[slot, s, t, c]
    rho = np.full((nS, nT), np.nan)
    tot = np.empty(6)
    for s in range(nS):
        for t in range(nT):
            tot[0] = base[t, 0] - miss_all[s, t, 0]
            tot[2] = base[t, 1] - miss_all[s, t, 1]
            tot[4] = base[t, 2] - miss_all[s, t, 2]
            tot[1] = sums_all[s, t, 0]
            tot[3] = sums_all[s, t, 1]
            tot[5] = sums_all[s, t, 2]
            rho[s, t] = _pearson(tot)
    return rho


@njit(cache=True, fastmath=FASTMATH_STRICT)
def _ccm_rows(idx, dist, members, bits, Ys, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t,
              complete, table, full, D, p0, p1, sums, miss):
    """The sums x, x^2, xy (``sums``, (nS, nT, 3)) and the observed rows no library point
    predicts (``miss``: n, y, y^2) over prediction rows p0:p1 of :func:`_ccm_skill`."""
    nS = members.shape[0]
    nT = Ys.shape[0]
    depth = idx.shape[1]
    W = bits.shape[1]
    sums[:] = 0.0
    miss[:] = 0.0
    need = np.empty(W, np.uint64)
    cnt = np.zeros(nS, np.int64)
    nbj = np.empty((nS, k), np.int64)  # table entries (columns of row pi) per subset
    nb = np.empty(k, np.int64)
    nd = np.empty(k)
    w = np.empty(k)
    # exp(-d_j / d_f) depends on the row's entries f (first member) and j only: shared
    # by every subset whose first member is entry f; cached per row for small f, j
    cache = np.empty((CACHE_F, CACHE_J))
    stamp = np.full((CACHE_F, CACHE_J), -1, np.int64)
    xmemo = np.empty((1 << D, nT))
    mstamp = np.full(1 << D, -1, np.int64)
    yrow = np.empty(nT)  # this row's observed targets, scaled, and which exist
    okrow = np.empty(nT, np.bool_)
    xrow = np.zeros(nT)  # one subset's predictions of this row, scaled
    for pi in range(p0, p1):
        if idx[pi, 0] < 0:
            continue
        for t in range(nT):
            okrow[t] = obs_ok[t, pi]
            yrow[t] = Ys[t, pred_t[pi] + Tp] if okrow[t] else 0.0
        for v in range(W):
            need[v] = full[v]
        for s in range(nS):
            cnt[s] = 0
        left = nS
        for j in range(depth):
            q = idx[pi, j]
            if q < 0:
                break
            for v in range(W):
                x = bits[q, v] & need[v]
                while x:
                    b = lowest_bit(x, table)
                    x &= x - np.uint64(1)
                    s = v * 64 + b
                    c = cnt[s]
                    nbj[s, c] = j
                    cnt[s] = c + 1
                    done = c + 1 == k  # branch-free: which subsets finish is random
                    need[v] &= ~(np.uint64(done) << np.uint64(b))
                    left -= done
            if left == 0:
                break
        for s in range(nS):
            m = cnt[s]
            direct = m < k and not complete
            if direct:
                m = _direct_search(members[s], pred_t[pi], k, excl, Xpad, pad, E, tau,
                                   nb, nd)
            if m == 0:  # no library point for this row in this subset
                for t in range(nT):
                    if okrow[t]:
                        yv = yrow[t]
                        miss[s, t, 0] += 1.0
                        miss[s, t, 1] += yv
                        miss[s, t, 2] += yv * yv
                continue
            # subsets whose k neighbours are all among the row's first D entries share
            # their predictions by that entry set (a bit mask): computed once per row
            key = -1
            if not direct and m == k and nbj[s, k - 1] < D:
                key = 0
                for jj in range(k):
                    key |= 1 << nbj[s, jj]
            if key >= 0 and mstamp[key] == pi:
                for t in range(nT):
                    xrow[t] = xmemo[key, t]
            else:
                if direct:
                    dmin = max(nd[0], D_MIN)
                    for jj in range(m):
                        w[jj] = np.exp(-nd[jj] / dmin)
                else:
                    f = nbj[s, 0]
                    d0 = dist[pi, f]
                    dmin = max(d0, D_MIN)
                    nb[0] = idx[pi, f]
                    w[0] = W_NEAREST if d0 >= D_MIN else np.exp(-d0 / dmin)
                    for jj in range(1, m):
                        j = nbj[s, jj]
                        nb[jj] = idx[pi, j]
                        if f < CACHE_F and j < CACHE_J:
                            if stamp[f, j] != pi:
                                cache[f, j] = np.exp(-dist[pi, j] / dmin)
                                stamp[f, j] = pi
                            w[jj] = cache[f, j]
                        else:
                            w[jj] = np.exp(-dist[pi, j] / dmin)
                wsum = 0.0
                for jj in range(m):
                    wsum += w[jj]
                for t in range(nT):
                    if okrow[t]:
                        acc = 0.0
                        for jj in range(m):
                            acc += w[jj] * Ys[t, nb[jj] + Tp]
                        xrow[t] = acc / wsum
                if key >= 0:
                    for t in range(nT):
                        xmemo[key, t] = xrow[t]
                    mstamp[key] = pi
            for t in range(nT):
                if okrow[t]:
                    xv = xrow[t]
                    sums[s, t, 0] += xv
                    sums[s, t, 1] += xv * xv
                    sums[s, t, 2] += xv * yrow[t]
