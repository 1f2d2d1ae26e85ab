"""Cross-mapping kernels (numba, CPU): deep sorted neighbour tables, sampled-library CCM skill
and all-targets xmap skill, Pearson accumulated on the fly (predictions are never stored).

Signatures shared with the GPU twins::

    sorted_table(Xpad, pad, lib_ok, pred_t, pred_ok, E, tau, excl, depth) -> idx, dist (P, depth)
    ccm_skill(idx, dist, members, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t, complete)
        -> rho (n_sets, n_targets)
    xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok) -> rho (n_targets,)
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from . import _numba  # noqa: F401  (kernel cache location, threading layer)
from ._bits import debruijn_table, lowest_bit
from ._flags import FASTMATH_DIST, FASTMATH_STRICT
from .cpu_knn import _insert
from .cpu_predict import D_MIN
from .cpu_skill import pow2_exponent

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
    membership.  Pearson sums are accumulated per (subset, target) and thread, on the targets
    scaled and shifted by their mean once up front (:func:`_scaled_target`), so that rho does
    not depend on the data's unit.
    """
    nchunk = max(1, min(numba.get_num_threads(), idx.shape[0]))  # one partial sum per thread
    return _ccm_skill(idx, dist, members, pack_members(members), Y, obs_ok, k, Tp, Xpad, pad,
                      E, tau, excl, pred_t, complete, nchunk)


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def _ccm_skill(idx, dist, members, bits, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t,
               complete, nchunk):
    nS, T = members.shape
    nT = Y.shape[0]
    P = pred_t.shape[0]
    depth = idx.shape[1]
    W = bits.shape[1]
    table = debruijn_table()
    D = 0  # prediction memo over the first D entries of a row: 2^D x nT values per thread
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
    # sum x, sum x^2, sum xy, per thread
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
    sums = np.zeros((nchunk, nS, nT, 3))
    miss = np.zeros((nchunk, nS, nT, 3))
    for ch in prange(nchunk):
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
        for pi in range(ch * P // nchunk, (ch + 1) * P // nchunk):
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
                            miss[ch, s, t, 0] += 1.0
                            miss[ch, s, t, 1] += yv
                            miss[ch, s, t, 2] += yv * yv
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
                        sums[ch, s, t, 0] += xv
                        sums[ch, s, t, 1] += xv * xv
                        sums[ch, s, t, 2] += xv * yrow[t]
    rho = np.full((nS, nT), np.nan)
    tot = np.empty(6)
    for s in range(nS):
        for t in range(nT):
            tot[0] = base[t, 0]
            tot[2] = base[t, 1]
            tot[4] = base[t, 2]
            tot[1] = 0.0
            tot[3] = 0.0
            tot[5] = 0.0
            for ch in range(nchunk):
                tot[0] -= miss[ch, s, t, 0]
                tot[2] -= miss[ch, s, t, 1]
                tot[4] -= miss[ch, s, t, 2]
                tot[1] += sums[ch, s, t, 0]
                tot[3] += sums[ch, s, t, 1]
                tot[5] += sums[ch, s, t, 2]
            rho[s, t] = _pearson(tot)
    return rho


@njit(cache=True, inline="always")
def _row_entries(idx, dist, Yt, k, Tp, pi, t, qs, ws):
    """The first k entries of table row pi whose target index q + Tp lies inside the data
    (and, for a target t >= 0, whose value Yt[q + Tp, t] is finite): target indices into
    ``qs``, simplex weights into ``ws``; returns how many."""
    T = Yt.shape[0]
    m = 0
    dmin = D_MIN
    for j in range(idx.shape[1]):
        q = idx[pi, j]
        if q < 0:
            break
        if q + Tp < 0 or q + Tp >= T:  # a library point of another use
            continue
        if t >= 0 and not np.isfinite(Yt[q + Tp, t]):
            continue
        if m == 0:
            dmin = max(dist[pi, j], D_MIN)
        qs[m] = q + Tp
        ws[m] = np.exp(-dist[pi, j] / dmin)
        m += 1
        if m == k:
            break
    return m


@njit(cache=True, fastmath=FASTMATH_STRICT, inline="always")
def _last_rows(Yc, acc, first, r0, r1, r2, r3, w0, w1, w2, w3, rem, inv, qo, S):
    """The last ``rem`` (1 to 4) entries of one table row, plus ``acc`` (the earlier ones)
    unless ``first``: each target's prediction x (shifted, as ``Yc``) and its sums
    S[0] += x, S[1] += x^2, S[2] += x * y_observed.  One loop per case so that each stays a
    single vectorised pass over the block's targets."""
    nb = Yc.shape[1]
    if first:
        if rem == 1:
            for t in range(nb):
                x = (w0 * Yc[r0, t]) * inv
                S[0, t] += x
                S[1, t] += x * x
                S[2, t] += x * Yc[qo, t]
        elif rem == 2:
            for t in range(nb):
                x = (w0 * Yc[r0, t] + w1 * Yc[r1, t]) * inv
                S[0, t] += x
                S[1, t] += x * x
                S[2, t] += x * Yc[qo, t]
        elif rem == 3:
            for t in range(nb):
                x = (w0 * Yc[r0, t] + w1 * Yc[r1, t] + w2 * Yc[r2, t]) * inv
                S[0, t] += x
                S[1, t] += x * x
                S[2, t] += x * Yc[qo, t]
        else:
            for t in range(nb):
                x = (w0 * Yc[r0, t] + w1 * Yc[r1, t] + w2 * Yc[r2, t] + w3 * Yc[r3, t]) * inv
                S[0, t] += x
                S[1, t] += x * x
                S[2, t] += x * Yc[qo, t]
    else:
        if rem == 1:
            for t in range(nb):
                x = (acc[t] + w0 * Yc[r0, t]) * inv
                S[0, t] += x
                S[1, t] += x * x
                S[2, t] += x * Yc[qo, t]
        elif rem == 2:
            for t in range(nb):
                x = (acc[t] + w0 * Yc[r0, t] + w1 * Yc[r1, t]) * inv
                S[0, t] += x
                S[1, t] += x * x
                S[2, t] += x * Yc[qo, t]
        elif rem == 3:
            for t in range(nb):
                x = (acc[t] + w0 * Yc[r0, t] + w1 * Yc[r1, t] + w2 * Yc[r2, t]) * inv
                S[0, t] += x
                S[1, t] += x * x
                S[2, t] += x * Yc[qo, t]
        else:
            for t in range(nb):
                x = (acc[t] + w0 * Yc[r0, t] + w1 * Yc[r1, t] + w2 * Yc[r2, t]
                     + w3 * Yc[r3, t]) * inv
                S[0, t] += x
                S[1, t] += x * x
                S[2, t] += x * Yc[qo, t]


@njit(cache=True, fastmath=FASTMATH_STRICT)
def _clean_block(Yc, Tp, pred_t, valid, qk, wk, mk, wsk, S, acc):
    """Prediction sums S (3, nb) (sum x, sum x^2, sum x*y) of one library's ``valid`` rows
    for a block of NaN-free targets ``Yc`` (T, nb), contiguous and shifted by each target's
    mean.  A row's entries are read four at a time, so that each block row is loaded once
    per entry and the running prediction ``acc`` is written once per four entries; the sums
    stay the block's only other memory traffic (the block's rows come from L2: this is
    bandwidth, not arithmetic)."""
    S[:, :] = 0.0
    for pi in range(qk.shape[0]):
        if not valid[pi]:
            continue
        qo = pred_t[pi] + Tp
        m = mk[pi]
        j = 0
        first = True
        while m - j > 4:
            r0 = qk[pi, j]
            r1 = qk[pi, j + 1]
            r2 = qk[pi, j + 2]
            r3 = qk[pi, j + 3]
            w0 = wk[pi, j]
            w1 = wk[pi, j + 1]
            w2 = wk[pi, j + 2]
            w3 = wk[pi, j + 3]
            if first:
                for t in range(Yc.shape[1]):
                    acc[t] = w0 * Yc[r0, t] + w1 * Yc[r1, t] + w2 * Yc[r2, t] + w3 * Yc[r3, t]
            else:
                for t in range(Yc.shape[1]):
                    acc[t] += w0 * Yc[r0, t] + w1 * Yc[r1, t] + w2 * Yc[r2, t] + w3 * Yc[r3, t]
            first = False
            j += 4
        rem = m - j
        r0 = qk[pi, j]
        w0 = wk[pi, j]
        r1, w1, r2, w2, r3, w3 = r0, 0.0, r0, 0.0, r0, 0.0
        if rem > 1:
            r1, w1 = qk[pi, j + 1], wk[pi, j + 1]
        if rem > 2:
            r2, w2 = qk[pi, j + 2], wk[pi, j + 2]
        if rem > 3:
            r3, w3 = qk[pi, j + 3], wk[pi, j + 3]
        _last_rows(Yc, acc, first, r0, r1, r2, r3, w0, w1, w2, w3, rem, 1.0 / wsk[pi], qo, S)


@njit(cache=True, fastmath=FASTMATH_STRICT)
def _gappy_block(idx, dist, Yt, k, Tp, pred_t, pred_ok, qk, wk, mk, wsk, mean, t0, t1, out):
    """As :func:`_clean_block` for targets with NaN: a target whose value is missing among a
    row's shared entries scans the row itself (:func:`_row_entries`)."""
    T = Yt.shape[0]
    acc = np.empty(t1 - t0)
    qs = np.empty(k, np.int64)
    ws = np.empty(k)
    out[:, :] = 0.0
    for pi in range(qk.shape[0]):
        qo = pred_t[pi] + Tp
        m = mk[pi]
        if not pred_ok[pi] or qo < 0 or qo >= T or m == 0:
            continue
        for t in range(t0, t1):
            acc[t - t0] = 0.0
        for j in range(m):
            w = wk[pi, j]
            row = qk[pi, j]
            for t in range(t0, t1):
                acc[t - t0] += w * Yt[row, t]
        inv = 1.0 / wsk[pi]
        for t in range(t0, t1):
            yo = Yt[qo, t]
            if not np.isfinite(yo):
                continue
            a = acc[t - t0]
            if np.isfinite(a):
                pred = a * inv
            else:
                mm = _row_entries(idx, dist, Yt, k, Tp, pi, t, qs, ws)
                if mm == 0:
                    continue
                a = 0.0
                wsum = 0.0
                for j in range(mm):
                    a += ws[j] * Yt[qs[j], t]
                    wsum += ws[j]
                pred = a / wsum
            x = pred - mean[t - t0]
            yv = yo - mean[t - t0]
            out[t - t0, 0] += 1.0
            out[t - t0, 1] += x
            out[t - t0, 2] += yv
            out[t - t0, 3] += x * x
            out[t - t0, 4] += yv * yv
            out[t - t0, 5] += x * yv


TB = 128  # targets per block of xmap_skill: their columns of Yt stay in cache


def xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok):
    """Cross-map skill of a batch of library tables for every target.

    ``idx``/``dist`` (nL, P, depth): the tables of nL library series; ``pred_ok`` (nL, P);
    ``Yt`` (T, nT): the targets as columns.  Returns rho (nL, nT).

    Per row and target, the first k table entries whose target value is finite are used (the
    table is deep enough for the target with the most NaN); Pearson is accumulated on the fly.
    The weights of a row's first k in-range entries are computed once for all targets; a
    target with a non-finite value among them takes the row's own scan instead.  Work runs
    over blocks of ``TB`` targets (rows of ``Yt`` read contiguously), each block serving a
    chunk of libraries while its columns stay in cache, so the targets stream from memory
    once per chunk rather than once per library.  The sums are shifted by each target's
    mean; the caller scales each target series by a power of 2 (largest |value| in [0.5, 1):
    :func:`xedm.core.skill.unit_exponents`), once per series, so that they cannot overflow
    or underflow whatever the data's unit.
    """
    nblk = (Yt.shape[1] + TB - 1) // TB
    nlc = max(1, min(idx.shape[0], (2 * numba.get_num_threads() + nblk - 1) // nblk))
    return _xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok, nlc)


def xmap_skill_groups(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok):
    """Cross-map skill for targets of several groups: column j of ``Yt`` (T, nT) belongs to
    group ``col_group[j]`` (non-decreasing) and is looked up through ``tables[g]`` (idx, dist
    (nL, P, depth_g)) with ``k_list[g]`` neighbours and rows ``pred_ok[g]`` (nL, P).  Returns
    rho (nL, nT): :func:`xmap_skill` per group (the GPU twin serves them in one launch)."""
    col_group = np.asarray(col_group)
    nL = tables[0][0].shape[0] if len(tables) else 0
    rho = np.full((nL, Yt.shape[1]), np.nan)
    bounds = np.searchsorted(col_group, np.arange(len(tables) + 1))
    for g, (idx, dist) in enumerate(tables):
        c0, c1 = int(bounds[g]), int(bounds[g + 1])
        if c1 > c0:
            rho[:, c0:c1] = xmap_skill(idx, dist, Yt[:, c0:c1], int(k_list[g]), Tp, pred_t,
                                       pred_ok[g])
    return rho


def to_device(a):
    """The CPU's arrays stay where they are (the GPU twin copies to the device)."""
    return a


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def _xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok, nlc):
    T, nT = Yt.shape
    nL, P = idx.shape[0], idx.shape[1]
    nblk = (nT + TB - 1) // TB
    rho = np.full((nL, nT), np.nan)
    # per library and row, shared by every target: first k in-range entries, their weights
    qk = np.full((nL, P, k), -1, np.int64)
    wk = np.zeros((nL, P, k))
    mk = np.zeros((nL, P), np.int64)
    wsk = np.ones((nL, P))
    for r in prange(nL * P):
        li = r // P
        pi = r % P
        m = _row_entries(idx[li], dist[li], Yt, k, Tp, pi, -1, qk[li, pi], wk[li, pi])
        mk[li, pi] = m
        if m > 0:
            wsk[li, pi] = wk[li, pi, :m].sum()
    for task in prange(nblk * nlc):
        b = task % nblk
        lc = task // nblk
        t0 = b * TB
        t1 = min(nT, t0 + TB)
        nb = t1 - t0
        clean = True  # no NaN in the block's columns: the branch-free path
        for q in range(T):
            for t in range(t0, t1):
                if not np.isfinite(Yt[q, t]):
                    clean = False
        mean = np.zeros(nb)
        cnt = np.empty(nb)
        sums = np.empty((nb, 6))
        if clean:
            # the block, contiguous and shifted by each target's mean over the whole series
            # (any shift near the mean keeps the sums accurate; this one serves every library)
            for q in range(T):
                for t in range(nb):
                    mean[t] += Yt[q, t0 + t]
            for t in range(nb):
                mean[t] /= T
            Yc = np.empty((T, nb))
            for q in range(T):
                for t in range(nb):
                    Yc[q, t] = Yt[q, t0 + t] - mean[t]
            S = np.empty((3, nb))
            acc = np.empty(nb)
            valid = np.zeros(P, np.bool_)
            prev = np.zeros(P, np.bool_)
            obs = np.zeros((2, nb))  # sum y, sum y^2 over the valid rows
            n = -1.0
            for li in range(lc * nL // nlc, (lc + 1) * nL // nlc):
                same = n >= 0.0
                nv = 0.0
                for pi in range(P):
                    q = pred_t[pi] + Tp
                    valid[pi] = pred_ok[li, pi] and 0 <= q < T and mk[li, pi] > 0
                    if valid[pi] != prev[pi]:
                        same = False
                    if valid[pi]:
                        nv += 1.0
                if not same:  # the observed sums depend only on the valid rows
                    obs[:, :] = 0.0
                    for pi in range(P):
                        if valid[pi]:
                            q = pred_t[pi] + Tp
                            for t in range(nb):
                                obs[0, t] += Yc[q, t]
                                obs[1, t] += Yc[q, t] * Yc[q, t]
                    prev[:] = valid
                    n = nv
                _clean_block(Yc, Tp, pred_t, valid, qk[li], wk[li], mk[li], wsk[li], S, acc)
                for t in range(nb):
                    sums[t, 0] = n
                    sums[t, 1] = S[0, t]
                    sums[t, 2] = obs[0, t]
                    sums[t, 3] = S[1, t]
                    sums[t, 4] = obs[1, t]
                    sums[t, 5] = S[2, t]
                    rho[li, t0 + t] = _pearson(sums[t])
        else:
            for li in range(lc * nL // nlc, (lc + 1) * nL // nlc):
                okl = pred_ok[li]
                mean[:] = 0.0
                cnt[:] = 0.0
                for pi in range(P):
                    q = pred_t[pi] + Tp
                    if okl[pi] and 0 <= q < T:
                        for t in range(nb):
                            yv = Yt[q, t0 + t]
                            if np.isfinite(yv):
                                mean[t] += yv
                                cnt[t] += 1.0
                for t in range(nb):
                    if cnt[t] > 0:
                        mean[t] /= cnt[t]
                _gappy_block(idx[li], dist[li], Yt, k, Tp, pred_t, okl, qk[li], wk[li],
                             mk[li], wsk[li], mean, t0, t1, sums)
                for t in range(nb):
                    if cnt[t] > 0:
                        rho[li, t0 + t] = _pearson(sums[t])
    return rho
