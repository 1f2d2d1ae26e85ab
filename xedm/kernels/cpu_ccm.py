"""Cross-mapping kernels (numba, CPU): deep sorted neighbour tables, sampled-library CCM skill
and all-targets xmap skill, Pearson accumulated on the fly (predictions are never stored).

Signatures shared with the GPU twins::

    sorted_table(Xpad, pad, lib_ok, pred_t, pred_ok, E, tau, excl, depth) -> idx, dist (P, depth)
    ccm_skill(idx, dist, members, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t, complete)
        -> rho (n_sets, n_targets)
    xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok) -> rho (n_targets,)
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._flags import FASTMATH_STRICT
from .cpu_knn import _insert
from .cpu_predict import D_MIN

W_NEAREST = np.exp(-1.0)  # weight of the nearest neighbour whenever its distance >= D_MIN


@njit(cache=True)
def _candidates_by_offset(p, T, lib_ok, excl):
    """Library points of row p ordered by (|q - p|, q): the tie order before sorting by d."""
    out = np.empty(T, np.int64)
    m = 0
    for a in range(max(excl + 1, 1), T):
        lo = p - a
        hi = p + a
        if lo < 0 and hi >= T:
            break
        if lo >= 0 and lib_ok[lo]:
            out[m] = lo
            m += 1
        if hi < T and lib_ok[hi]:
            out[m] = hi
            m += 1
    return out[:m]


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def sorted_table(Xpad, pad, lib_ok, pred_t, pred_ok, E, tau, excl, depth):
    """The ``depth`` nearest library points of every prediction row, exactly ordered by
    (distance, |dt|, t): candidates listed in (|dt|, t) order, cut at the depth-th smallest
    distance by a partition, then stably sorted by distance."""
    C = Xpad.shape[0]
    T = lib_ok.shape[0]
    P = pred_t.shape[0]
    idx = np.full((P, depth), -1, np.int64)
    dist = np.full((P, depth), np.inf)
    for pi in prange(P):
        if not pred_ok[pi]:
            continue
        p = pred_t[pi]
        cand = _candidates_by_offset(p, T, lib_ok, excl)
        d2 = np.empty(cand.shape[0])
        for j in range(cand.shape[0]):
            q = cand[j]
            s = 0.0
            for e in range(E):
                for c in range(C):
                    diff = Xpad[c, pad + p - e * tau] - Xpad[c, pad + q - e * tau]
                    s += diff * diff
            d2[j] = s
        n = min(depth, cand.shape[0])
        if n == 0:
            continue
        if n < cand.shape[0]:
            # keep only candidates up to the n-th smallest distance (ties included), in
            # their (|dt|, t) order, so the stable sort below sees a short list
            thr = np.partition(d2, n - 1)[n - 1]
            keep = 0
            for j in range(cand.shape[0]):
                if d2[j] <= thr:
                    cand[keep] = cand[j]
                    d2[keep] = d2[j]
                    keep += 1
            cand = cand[:keep]
            d2 = d2[:keep]
        order = np.argsort(d2, kind="mergesort")
        for j in range(n):
            idx[pi, j] = cand[order[j]]
            dist[pi, j] = np.sqrt(d2[order[j]])
    return idx, dist


@njit(cache=True)
def _pearson(s):
    """rho from shifted sums (n, sx, sy, sxx, syy, sxy)."""
    n = s[0]
    if n < 3:
        return np.nan
    cxx = s[3] - s[1] * s[1] / n
    cyy = s[4] - s[2] * s[2] / n
    cxy = s[5] - s[1] * s[2] / n
    if cxx <= 0.0 or cyy <= 0.0:
        return np.nan
    return cxy / np.sqrt(cxx * cyy)


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


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def ccm_skill(idx, dist, members, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t, complete):
    """Cross-map skill for every library subset (row of ``members``) and target (row of Y).

    Each prediction row takes the first k entries of its sorted table that are members of
    the subset; when the table is too shallow for that (``complete`` False and fewer than k
    members found) the row falls back to a direct search over the subset.  Pearson sums are
    accumulated per target, shifted by the target's mean for accuracy.
    """
    nS, T = members.shape
    nT = Y.shape[0]
    P = pred_t.shape[0]
    depth = idx.shape[1]
    rho = np.full((nS, nT), np.nan)
    shift = np.zeros(nT)
    for t in range(nT):
        cnt = 0
        for pi in range(P):
            q = pred_t[pi] + Tp
            if obs_ok[t, pi]:
                shift[t] += Y[t, q]
                cnt += 1
        if cnt > 0:
            shift[t] /= cnt
    for s in prange(nS):
        sums = np.zeros((nT, 6))
        nb = np.empty(k, np.int64)
        nd = np.empty(k)
        w = np.empty(k)
        mrow = members[s]
        for pi in range(P):
            # plain 2-D indexing: a row view per (set, row) costs reference counting
            if idx[pi, 0] < 0:
                continue
            m = 0
            for j in range(depth):
                q = idx[pi, j]
                if q < 0:
                    break
                if mrow[q]:
                    nb[m] = q
                    nd[m] = dist[pi, j]
                    m += 1
                    if m == k:
                        break
            if m < k and not complete:
                m = _direct_search(mrow, pred_t[pi], k, excl, Xpad, pad, E, tau, nb, nd)
            if m == 0:
                continue
            dmin = max(nd[0], D_MIN)
            w[0] = W_NEAREST if nd[0] >= D_MIN else np.exp(-nd[0] / dmin)
            wsum = w[0]
            for j in range(1, m):
                w[j] = np.exp(-nd[j] / dmin)
                wsum += w[j]
            for t in range(nT):
                if not obs_ok[t, pi]:
                    continue
                acc = 0.0
                for j in range(m):
                    acc += w[j] * Y[t, nb[j] + Tp]
                x = acc / wsum - shift[t]
                yv = Y[t, pred_t[pi] + Tp] - shift[t]
                sums[t, 0] += 1.0
                sums[t, 1] += x
                sums[t, 2] += yv
                sums[t, 3] += x * x
                sums[t, 4] += yv * yv
                sums[t, 5] += x * yv
        for t in range(nT):
            rho[s, t] = _pearson(sums[t])
    return rho


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok):
    """Cross-map skill of one library's table for every target (columns of ``Yt`` (T, nT)).

    Per row and target, the first k table entries whose target value is finite are used (the
    table is deep enough for the target with the most NaN); Pearson is accumulated on the fly.
    """
    T, nT = Yt.shape
    P, depth = idx.shape
    rho = np.full(nT, np.nan)
    for t in prange(nT):
        mean = 0.0
        cnt = 0
        for pi in range(P):
            q = pred_t[pi] + Tp
            if pred_ok[pi] and 0 <= q < T and np.isfinite(Yt[q, t]):
                mean += Yt[q, t]
                cnt += 1
        if cnt == 0:
            continue
        mean /= cnt
        s = np.zeros(6)
        for pi in range(P):
            qo = pred_t[pi] + Tp
            if not pred_ok[pi] or qo < 0 or qo >= T or not np.isfinite(Yt[qo, t]):
                continue
            if idx[pi, 0] < 0:
                continue
            dmin = D_MIN
            first = True
            m = 0
            wsum = 0.0
            acc = 0.0
            for j in range(depth):
                q = idx[pi, j]
                if q < 0:
                    break
                if q + Tp < 0 or q + Tp >= T:  # a library point of another use
                    continue
                v = Yt[q + Tp, t]
                if not np.isfinite(v):
                    continue
                if first:
                    dmin = max(dist[pi, j], D_MIN)
                    first = False
                w = np.exp(-dist[pi, j] / dmin)
                wsum += w
                acc += w * v
                m += 1
                if m == k:
                    break
            if m == 0:
                continue
            x = acc / wsum - mean
            yv = Yt[qo, t] - mean
            s[0] += 1.0
            s[1] += x
            s[2] += yv
            s[3] += x * x
            s[4] += yv * yv
            s[5] += x * yv
        rho[t] = _pearson(s)
    return rho
