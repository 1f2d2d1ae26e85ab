"""The predictive conditioning of :func:`xedm.causal_network` (numba, CPU), batched over
series and models: the kernels behind :class:`xedm.kernels.predict.conditional.State`.

    conditional_pools(Z, t0, n, excl, pser, pmask, poff, pools)        (fills pools)
    conditional_errors(Z, t0, n, gser, gbase, bcodes, gpool, gk, gcand, ccodes, gout,
                       weight, theta, out)                              (fills out)
    rank_stats(A, ra, B, rb, nn) -> (S, V, r1, ab0, ab1, dd, c) each (m,)

Series i's prediction points p = 0..n[i]-1 are the times t = t0[i] + p, the target
Z[i, t + 1].  A coordinate is a **code**: c >= 0 is driver j = c // T at lag l = c % T,
``weight * Z[j, t - l]`` (T = Z.shape[1]; l = 0: j's value at t, whose effect on the target
is one step later); c < 0 is i's own lag l = -c - 1, ``Z[i, t - l]`` (-1: i's value itself).
Every point's t is at least t0[i], which covers every lag asked for.

``conditional_pools``: pool job j (series ``pser[j]``, own lags the bits of ``pmask[j]``:
bit l - 1 for lag l) lists, for each point p, its M nearest points q in i's own state (its
value and those lags), ties in time order, in time order; points with ``|p - q| <=
excl[i]`` (p itself included) are never listed; rows ``poff[j] + p`` of ``pools`` (., M),
-1 past the listed ones.

``conditional_errors``: model group g: series ``gser[g]``, base coordinates
``bcodes[gbase[g, 0]:gbase[g, 1]]`` (the first -1), the pools of rows ``gpool[g] + p``,
k = ``gk[g]`` neighbours, and the candidate coordinates ``ccodes[gcand[g, 0]:gcand[g, 1]]``
added one at a time (none: the base model alone, one row).  For each candidate (row
``gout[g] + c`` of ``out``) and point p: the leave-one-out local linear prediction of the
target from the k nearest (base + candidate coordinates) of p's pool, ties in time order,
weights ``exp(-theta d / mean(d))``, the fit ``y ~ 1 + (coordinates - those of p)`` by
weighted least squares (S-map's solver: the normal matrix scaled to unit diagonal,
Cholesky), whose intercept is the prediction; the error: prediction - target (NaN where the
system is singular or p has no pool).

``rank_stats``: for each m, d = |B[rb[m]]| - |A[ra[m]]| over the first nn[m] times (0 where
either is not finite): Wilcoxon's signed-rank statistic S = sum sign(d) rank(|d|) (ranks
1..n, ties in time order), V = the sum of rank^2 over d != 0, r1 the lag-1 autocorrelation of
the signed ranks (centred; the mean of the n - 1 lagged products over the mean square; 0
when the ranks have no variance); ab0 and ab1: the sums of the absolute values of B[rb[m]]
and A[ra[m]], and dd the sum of d^2, over the c times where both are finite (the same
times: a model that fails on the hard points gains nothing from it).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._flags import FASTMATH_DIST
from .._numba import njit  # numba's, with xedm's kernel cache
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


@njit(cache=True, inline="always")
def _decode(Z, code, i, weight):
    """Coordinate ``code`` of series i as (row of Z, steps back, scale): its value at time t
    is ``scale * Z[row, t - back]`` (module docstring); decoded once per coordinate, out of
    the loops over points."""
    if code >= 0:
        T = Z.shape[1]
        return code // T, code % T, weight
    return i, -code - 1, 1.0


@njit(cache=True)
def _starts(n, ser):
    """Prefix sums of the jobs' point counts n[ser[j]]: job j's flat rows."""
    starts = np.zeros(len(ser) + 1, np.int64)
    for j in range(len(ser)):
        starts[j + 1] = starts[j] + n[ser[j]]
    return starts


@njit(cache=True, inline="always")
def _point(starts, ser, t0, flat):
    """Flat index ``flat`` as (job j, its series i, point p, the series' first time t0[i]):
    job j holds the flat indices [starts[j], starts[j + 1])."""
    j = np.searchsorted(starts, flat, side="right") - 1
    i = ser[j]
    return j, i, flat - starts[j], t0[i]


@njit(parallel=True, cache=True)
def conditional_pools(Z, t0, n, excl, pser, pmask, poff, pools):
    """Fill the pool rows of every pool job (module docstring): the parallel loop stays
    small (numba compiles a small parallel loop several times faster), the work of a point
    is :func:`_pool_point`."""
    starts = _starts(n, pser)
    for flat in prange(starts[-1]):
        _pool_point(Z, t0, n, excl, pser, pmask, poff, pools, starts, flat)


@njit(cache=True, fastmath=FASTMATH_DIST)
def _pool_point(Z, t0, n, excl, pser, pmask, poff, pools, starts, flat):
    """The pool of flat point ``flat`` (:func:`conditional_pools`)."""
    M = pools.shape[1]
    j, i, p, a = _point(starts, pser, t0, flat)
    ni = n[i]
    lags = np.empty(64, np.int64)
    nd = 1
    lags[0] = 0
    for b in range(63):
        if (pmask[j] >> b) & 1:
            lags[nd] = b + 1
            nd += 1
    row = poff[j] + p
    for c in range(M):
        pools[row, c] = -1
    lo, hi = max(0, p - excl[i]), min(ni, p + excl[i] + 1)
    nl = min(M, ni - (hi - lo))
    if nl < 1:
        return
    lib = np.empty(nl, np.int64)
    lbd = np.empty(nl)
    cnt = 0
    for q in range(ni):
        if lo <= q < hi:
            continue
        dq = 0.0
        for c in range(nd):
            t = Z[i, a + q - lags[c]] - Z[i, a + p - lags[c]]
            dq += t * t
        cnt = _insert(lbd, lib, cnt, nl, dq, q)
    for u in range(1, nl):  # time order (insertion: at most M entries)
        v = lib[u]
        w = u
        while w > 0 and lib[w - 1] > v:
            lib[w] = lib[w - 1]
            w -= 1
        lib[w] = v
    for c in range(nl):
        pools[row, c] = lib[c]


@njit(parallel=True, cache=True)
def conditional_errors(Z, t0, n, gser, gbase, bcodes, gpool, pools, gk, gcand, ccodes, gout,
                       weight, theta, out):
    """Fill the error rows of every model group (module docstring); the work of a point is
    :func:`_errors_point` (a small parallel loop)."""
    starts = _starts(n, gser)
    for flat in prange(starts[-1]):
        _errors_point(Z, t0, n, gser, gbase, bcodes, gpool, pools, gk, gcand, ccodes, gout,
                      weight, theta, out, starts, flat)


@njit(cache=True, fastmath=FASTMATH_DIST)
def _solve_fit(A, R, sc, bv, z, yp):
    """The intercept of the weighted least squares whose normal matrix is A (upper
    triangle) and right-hand side bv, minus the target ``yp``; NaN when the matrix, scaled
    to unit diagonal, has a pivot at or below PIVOT_MIN (S-map's solver)."""
    nc = len(sc)
    if not unit_cholesky(A, R, sc, nc):
        return np.nan
    for u in range(nc):
        bv[u] = bv[u] / sc[u]
    _solve(R, bv, z, nc)
    return z[0] / sc[0] - yp


#: candidates of a group computed together at a point: the loops over them are the inner
#: loops (they vectorize); each candidate's arithmetic is the same sequence as one alone
LANES = 32
#: fewer candidates than this at a point: an insertion each (the lanes' bubbles cost
#: k x pool comparisons however few lanes there are)
FEW = 4


@njit(cache=True, fastmath=FASTMATH_DIST)
def _errors_point(Z, t0, n, gser, gbase, bcodes, gpool, pools, gk, gcand, ccodes, gout,
                  weight, theta, out, starts, flat):
    """The errors of every candidate of a group at flat point ``flat``
    (:func:`conditional_errors`): the base coordinates of the point's pool relative to its
    own are gathered once for all the group's candidates, and the candidates go through
    the neighbour search, the weights and the least squares LANES at a time (a candidate's
    k nearest: each pool entry, in time order, bubbled into a sorted buffer by (distance,
    entry), which keeps the same neighbours in the same order as an insertion; fewer than
    FEW candidates, a model alone: an insertion each); the weights and the normal
    equations lane by lane too, each system solved by :func:`_solve_fit`."""
    W = pools.shape[1]
    g, i, p, a = _point(starts, gser, t0, flat)
    b0 = gbase[g, 0]
    d0 = gbase[g, 1] - b0
    c0 = gcand[g, 0]
    m = gcand[g, 1] - c0
    mm = max(m, 1)
    use_c = m > 0
    for ci in range(mm):
        out[gout[g] + ci, p] = np.nan
    prow = gpool[g] + p
    nl = 0
    while nl < W and pools[prow, nl] >= 0:
        nl += 1
    if nl < 1:
        return
    Brel = np.empty((nl, d0))
    base = np.empty(nl)
    yq = np.empty(nl)
    brow = np.empty(d0, np.int64)
    bback = np.empty(d0, np.int64)
    bscl = np.empty(d0)
    bp = np.empty(d0)
    for c in range(d0):
        r_, k_, w_ = _decode(Z, bcodes[b0 + c], i, weight)
        brow[c], bback[c], bscl[c] = r_, k_, w_
        bp[c] = w_ * Z[r_, a + p - k_]
    for s in range(nl):
        q = pools[prow, s]
        acc = 0.0
        for c in range(d0):
            t = bscl[c] * Z[brow[c], a + q - bback[c]] - bp[c]
            Brel[s, c] = t
            acc += t * t
        base[s] = acc
        yq[s] = Z[i, a + q + 1]
    kk = min(gk[g], nl)
    nc = d0 + 1 + (1 if use_c else 0)
    yp = Z[i, a + p + 1]
    A1 = np.empty((nc, nc))  # the fit's work arrays
    R1 = np.zeros((nc, nc))
    sc1 = np.empty(nc)
    bv1 = np.empty(nc)
    z1 = np.empty(nc)
    nb1 = np.empty(kk, np.int64)
    ds1 = np.empty(kk)
    ln = min(mm, LANES)
    Ct = np.zeros((nl, ln))  # candidate coordinate of each pool entry, lane by lane
    ds = np.empty((kk, ln))
    nb = np.empty((kk, ln), np.int64)
    x = np.empty(ln)
    xi = np.empty(ln, np.int64)
    md = np.empty(ln)
    ws = np.empty(ln)
    yv = np.empty(ln)
    ru = np.empty(ln)
    rowv = np.empty((nc, ln))
    A = np.empty((nc, nc, ln))
    bv = np.empty((nc, ln))
    for l0 in range(0, mm, ln):
        nla = min(ln, mm - l0)
        if use_c:
            for c in range(nla):
                r_, k_, w_ = _decode(Z, ccodes[c0 + l0 + c], i, weight)
                cp = w_ * Z[r_, a + p - k_]
                for s in range(nl):
                    Ct[s, c] = w_ * Z[r_, a + pools[prow, s] - k_] - cp
        if nla >= FEW:
            # the kk nearest of each lane: entry s (time order) bubbled through the sorted
            # buffer; it passes an entry only when nearer, or as near and earlier
            for u in range(kk):
                for c in range(nla):
                    ds[u, c] = np.inf
                    nb[u, c] = nl
            for s in range(nl):
                nearer = 0
                for c in range(nla):
                    t = Ct[s, c]
                    x[c] = base[s] + t * t if use_c else base[s]
                    xi[c] = s
                    nearer += x[c] < ds[kk - 1, c]
                if nearer == 0:  # no lane takes it (a tie at the end: the earlier stays)
                    continue
                # the buffer holds s entries: past them only +inf, which x replaces there
                for u in range(min(kk, s + 1)):
                    for c in range(nla):
                        av, ai, xv, xiv = ds[u, c], nb[u, c], x[c], xi[c]
                        sw = (xv < av) | ((xv == av) & (xiv < ai))
                        ds[u, c] = xv if sw else av
                        nb[u, c] = xiv if sw else ai
                        x[c] = av if sw else xv
                        xi[c] = ai if sw else xiv
        else:  # a few lanes: an insertion each (a bubble costs kk x nl however few)
            for c in range(nla):
                cnt = 0
                for s in range(nl):
                    t = Ct[s, c]
                    dq = base[s] + t * t if use_c else base[s]
                    cnt = _insert(ds1, nb1, cnt, kk, dq, s)
                for u in range(kk):
                    ds[u, c] = ds1[u]
                    nb[u, c] = nb1[u]
        # the weights exp(-theta d / mean(d)), then the weighted least squares of y on 1
        # and the coordinates relative to p's, each lane's sums in the order of one alone
        for c in range(nla):
            md[c] = 0.0
        for u in range(kk):
            for c in range(nla):
                v = np.sqrt(ds[u, c])
                ds[u, c] = v
                md[c] += v
        for c in range(nla):
            md[c] = md[c] / kk
        for u in range(kk):
            for c in range(nla):
                ds[u, c] = np.exp(-theta * ds[u, c] / md[c]) if md[c] > 0 else 1.0
        for u in range(nc):
            for c in range(nla):
                bv[u, c] = 0.0
            for v in range(u, nc):
                for c in range(nla):
                    A[u, v, c] = 0.0
        for s in range(kk):
            for c in range(nla):
                rowv[0, c] = 1.0
                ws[c] = ds[s, c]
                yv[c] = yq[nb[s, c]]
            for e in range(d0):
                for c in range(nla):
                    rowv[e + 1, c] = Brel[nb[s, c], e]
            if use_c:
                for c in range(nla):
                    rowv[nc - 1, c] = Ct[nb[s, c], c]
            for u in range(nc):
                for c in range(nla):
                    ru[c] = ws[c] * rowv[u, c]
                    bv[u, c] += ru[c] * yv[c]
                for v in range(u, nc):
                    for c in range(nla):
                        A[u, v, c] += ru[c] * rowv[v, c]
        for c in range(nla):  # each lane's system, solved on contiguous copies
            for u in range(nc):
                bv1[u] = bv[u, c]
                for v in range(u, nc):
                    A1[u, v] = A[u, v, c]
            out[gout[g] + l0 + c, p] = _solve_fit(A1, R1, sc1, bv1, z1, yp)


@njit(parallel=True, cache=True)
def rank_stats(A, ra, B, rb, nn):
    """Signed-rank statistics of d = |B[rb[m]]| - |A[ra[m]]|, the sums of |B|, |A| and d^2,
    for every m (module docstring); the work of a row is :func:`_rank_row` (a small parallel
    loop)."""
    m_all = len(ra)
    S = np.zeros(m_all)
    V = np.zeros(m_all)
    r1 = np.zeros(m_all)
    ab0 = np.zeros(m_all)
    ab1 = np.zeros(m_all)
    dd = np.zeros(m_all)
    c = np.zeros(m_all, np.int64)
    for m in prange(m_all):
        _rank_row(A, ra, B, rb, nn, m, S, V, r1, ab0, ab1, dd, c)
    return S, V, r1, ab0, ab1, dd, c


@njit(cache=True)
def _stable_order(key):
    """The indices that sort ``key`` ascending, ties in index order (a bottom-up merge sort:
    numba's own stable argsort takes seconds longer to compile)."""
    n = len(key)
    a = np.arange(n)
    b = np.empty(n, np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j = lo, mid
            for o in range(lo, hi):
                if i < mid and (j >= hi or key[a[i]] <= key[a[j]]):
                    b[o] = a[i]
                    i += 1
                else:
                    b[o] = a[j]
                    j += 1
        a, b = b, a
        width *= 2
    return a


@njit(cache=True)
def _rank_row(A, ra, B, rb, nn, m, S, V, r1, ab0, ab1, dd, c):
    """Row m of :func:`rank_stats`."""
    n = nn[m]
    d = np.empty(n)
    for t in range(n):
        e0, e1 = B[rb[m], t], A[ra[m], t]
        f0, f1 = np.isfinite(e0), np.isfinite(e1)
        if f0 and f1:
            ab0[m] += abs(e0)
            ab1[m] += abs(e1)
            c[m] += 1
            d[t] = abs(e0) - abs(e1)
            dd[m] += d[t] * d[t]
        else:
            d[t] = 0.0
    order = _stable_order(np.abs(d))
    sr = np.empty(n)
    for r in range(n):
        t = order[r]
        sr[t] = (r + 1.0) * (1.0 if d[t] > 0 else (-1.0 if d[t] < 0 else 0.0))
        if d[t] != 0:
            V[m] += (r + 1.0) ** 2
    tot = 0.0
    for t in range(n):
        tot += sr[t]
    S[m] = tot
    mean = tot / n if n > 0 else 0.0
    v2 = 0.0
    cov = 0.0
    for t in range(n):
        v2 += (sr[t] - mean) ** 2
    for t in range(1, n):
        cov += (sr[t] - mean) * (sr[t - 1] - mean)
    r1[m] = (cov / max(n - 1, 1)) / (v2 / n) if v2 > 0 else 0.0


def state(Z, t0, n, excl, M):
    """The lockstep selection's data in host memory (:class:`..conditional.State`)."""
    from .._numba import interruptible
    from .conditional import State

    # called here, not through get_kernel: Ctrl-C held back to the end of each call the same
    return State(np, Z, t0, n, excl, M, pools=interruptible(conditional_pools),
                 errors=interruptible(conditional_errors), stats=interruptible(rank_stats))
