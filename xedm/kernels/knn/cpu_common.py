"""The pieces every exact CPU kNN kernel shares (numba): the neighbour order, insertion into a
sorted row, distances of a block of candidates, and the bound on a row's k-th distance from
the row tau steps back.  Used by :mod:`.cpu` and :mod:`.cpu_diagonal`, and by the kernels
that search neighbours of their own (:mod:`xedm.kernels.knn.cpu_ann`,
:mod:`xedm.kernels.predict.cpu`, :mod:`xedm.kernels.cross.cpu_ccm`).  The contract they all
keep is stated in :mod:`.cpu`.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit  # numba's, with xedm's kernel cache

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
