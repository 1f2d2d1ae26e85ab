"""Numba kernels for recurrence quantification: exact line-length histograms, matrix-free.

The recurrence matrix is never stored.  Work comes as *items*, each a block of adjacent
diagonals or adjacent columns of one problem (one recurrence matrix):

* a **diagonal block** sweeps the row index ``i`` down the diagonals ``k0 <= j - i < k1``;
  at each step the distances of the block's points are computed together (contiguous in
  memory, so the loop vectorises) and every diagonal keeps its own run state, so a line
  never needs stitching;
* a **column block** sweeps ``i`` down whole columns ``j0 <= j < j1`` and records black
  (recurrent) and white (non-recurrent) runs, runs touching the border included.

Items are grouped into chunks; each chunk runs on one thread and owns one copy of the
histograms, summed afterwards, so counts are exact and independent of the block size and
of the schedule.

Distances are float64, accumulated coordinate by coordinate in a fixed order with no fused
multiply-add (numba without ``fastmath``), so the GPU kernels can reproduce them bit for
bit.  A point is recurrent when, for every channel ``ch``, its accumulated distance is
``< thr[kk, ch]``; for the Euclidean norm ``thr`` is the smallest squared distance whose
square root is ``>= eps`` (see :func:`xedm.recurrence.recurrence.squared_threshold`), which makes
``s < thr`` the same test as ``sqrt(s) < eps``.

Arrays
------
X, Y : float64 (rows, time)
    Raw series.  Coordinate ``c`` of state ``i`` of a problem is
    ``X[arow + cvar[c], astart + i + coff[c]]``.
prob : int64 (nprob, 8)
    ``arow, astart, na, brow, bstart, nb, hoff_d, hoff_v`` per problem: the states of the
    row series (A) and column series (B) and the offsets of the problem's histograms.
items : int64 (nitems, 5)
    ``problem, kind, a0, a1, weight``; kind 0: diagonals ``a0 <= k < a1`` of (A, B);
    kind 1: the same on (B, A) (the lower triangle of a cross recurrence);
    kind 2: columns ``a0 <= j < a1``.  Diagonal lines are added ``weight`` times.
chunk_ptr : int64 (nchunks + 1,)
    Items ``chunk_ptr[t]:chunk_ptr[t+1]`` run on thread ``t`` into ``hd[t], hv[t], hw[t]``.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._numba import njit  # numba's, with xedm's kernel cache

# No fastmath: the distance sums must not be reassociated or contracted into FMAs.
_FLAGS = {"cache": True, "nogil": True, "boundscheck": False}


@njit(**_FLAGS)
def _distances(A, ra, sa, ia, B, rb, sb, jb, bn, cvar, coff, cchan, norm, acc):
    """acc[ch, b] = distance (squared for Euclidean) of state ia of A and state jb+b of B."""
    acc[:, :bn] = 0.0
    for c in range(cvar.size):
        ch = cchan[c]
        xa = A[ra + cvar[c], sa + ia + coff[c]]
        row = B[rb + cvar[c]]
        base = sb + jb + coff[c]
        out = acc[ch]
        if norm == 0:
            for b in range(bn):
                d = xa - row[base + b]
                out[b] += d * d
        elif norm == 1:
            for b in range(bn):
                d = abs(xa - row[base + b])
                if d > out[b]:
                    out[b] = d
        else:
            for b in range(bn):
                out[b] += abs(xa - row[base + b])


@njit(**_FLAGS)
def _distances_cached(A, ra, sa, ia, yb, bn, cvar, coff, cchan, norm, acc):
    """Like :func:`_distances` with the column states' coordinates cached in yb[c, b]."""
    acc[:, :bn] = 0.0
    for c in range(cvar.size):
        xa = A[ra + cvar[c], sa + ia + coff[c]]
        out = acc[cchan[c]]
        yc = yb[c]
        if norm == 0:
            for b in range(bn):
                d = xa - yc[b]
                out[b] += d * d
        elif norm == 1:
            for b in range(bn):
                d = abs(xa - yc[b])
                if d > out[b]:
                    out[b] = d
        else:
            for b in range(bn):
                out[b] += abs(xa - yc[b])


@njit(**_FLAGS)
def _recurrence_bits(acc, thr, kk, cur, rb, bn):
    """rb[b] = point b recurrent for threshold kk; returns how many differ from cur[kk]."""
    nch = acc.shape[0]
    t0 = thr[kk, 0]
    a0 = acc[0]
    for b in range(bn):
        rb[b] = a0[b] < t0
    for ch in range(1, nch):
        t = thr[kk, ch]
        a = acc[ch]
        for b in range(bn):
            rb[b] &= a[b] < t
    changed = 0
    c = cur[kk]
    for b in range(bn):
        changed += rb[b] ^ c[b]
    return changed


@njit(**_FLAGS)
def _diag_block(A, ra, sa, na, B, rb_, sb, nb, k0, k1, w, cvar, coff, cchan, nch, thr, norm,
                hd, hoff):
    """Diagonal lines on the diagonals k0 <= j - i < k1 of the (A rows) x (B columns) matrix."""
    nblk = k1 - k0
    nk = thr.shape[0]
    acc = np.empty((nch, nblk))
    bits = np.empty(nblk, dtype=np.uint8)
    cur = np.zeros((nk, nblk), dtype=np.uint8)
    start = np.zeros((nk, nblk), dtype=np.int64)
    imax = min(na, nb - k0)
    for i in range(imax):
        bn = min(nblk, nb - k0 - i)
        _distances(A, ra, sa, i, B, rb_, sb, i + k0, bn, cvar, coff, cchan, norm, acc)
        for kk in range(nk):
            if _recurrence_bits(acc, thr, kk, cur, bits, bn) == 0:
                continue
            for b in range(bn):
                if bits[b] != cur[kk, b]:
                    if cur[kk, b]:
                        hd[kk, hoff + i - start[kk, b]] += w
                    cur[kk, b] = bits[b]
                    start[kk, b] = i
    # each diagonal ends where it leaves the matrix: close its open run there
    for b in range(nblk):
        length = min(na, nb - k0 - b)
        for kk in range(nk):
            if cur[kk, b]:
                hd[kk, hoff + length - start[kk, b]] += w


@njit(**_FLAGS)
def _col_block(A, ra, sa, na, B, rb_, sb, j0, j1, cvar, coff, cchan, nch, thr, norm,
               hv, hw, hoff):
    """Black and white vertical lines in the whole columns j0 <= j < j1."""
    nblk = j1 - j0
    nk = thr.shape[0]
    nc = cvar.size
    yb = np.empty((nc, nblk))
    for c in range(nc):
        for b in range(nblk):
            yb[c, b] = B[rb_ + cvar[c], sb + j0 + b + coff[c]]
    acc = np.empty((nch, nblk))
    bits = np.empty(nblk, dtype=np.uint8)
    cur = np.zeros((nk, nblk), dtype=np.uint8)
    start = np.zeros((nk, nblk), dtype=np.int64)
    for i in range(na):
        _distances_cached(A, ra, sa, i, yb, nblk, cvar, coff, cchan, norm, acc)
        for kk in range(nk):
            if _recurrence_bits(acc, thr, kk, cur, bits, nblk) == 0:
                continue
            for b in range(nblk):
                if bits[b] != cur[kk, b]:
                    length = i - start[kk, b]
                    if cur[kk, b]:
                        hv[kk, hoff + length] += 1
                    elif length > 0:
                        hw[kk, hoff + length] += 1
                    cur[kk, b] = bits[b]
                    start[kk, b] = i
    for kk in range(nk):
        for b in range(nblk):
            length = na - start[kk, b]
            if cur[kk, b]:
                hv[kk, hoff + length] += 1
            elif length > 0:
                hw[kk, hoff + length] += 1


@njit(parallel=True, **_FLAGS)
def line_histograms(X, Y, cvar, coff, cchan, nch, thr, norm, prob, items, chunk_ptr,
                    hd, hv, hw):
    """Fill the per-chunk histograms ``hd`` (diagonal), ``hv`` (vertical), ``hw`` (white).

    ``hd[t, kk, hoff_d + l]`` counts diagonal lines of length ``l`` for threshold ``kk``
    found by chunk ``t``; likewise ``hv``/``hw`` at ``hoff_v``.  ``thr`` has shape
    ``(nprob, K, nch)``.  See the module docstring.
    """
    nchunks = chunk_ptr.size - 1
    for t in prange(nchunks):
        for it in range(chunk_ptr[t], chunk_ptr[t + 1]):
            p = items[it, 0]
            kind = items[it, 1]
            a0 = items[it, 2]
            a1 = items[it, 3]
            w = items[it, 4]
            arow, astart, na, brow, bstart, nb, hoff_d, hoff_v = prob[p]
            if kind == 0:
                _diag_block(X, arow, astart, na, Y, brow, bstart, nb, a0, a1, w,
                            cvar, coff, cchan, nch, thr[p], norm, hd[t], hoff_d)
            elif kind == 1:
                _diag_block(Y, brow, bstart, nb, X, arow, astart, na, a0, a1, w,
                            cvar, coff, cchan, nch, thr[p], norm, hd[t], hoff_d)
            else:
                _col_block(X, arow, astart, na, Y, brow, bstart, a0, a1,
                           cvar, coff, cchan, nch, thr[p], norm, hv[t], hw[t], hoff_v)


@njit(parallel=True, **_FLAGS)
def pair_distances(X, Y, cvar, coff, cchan, nch, norm, prob, pi, pj, out):
    """Distances of the state pairs ``(pi[n], pj[n])`` of problem 0, one channel ``ch``
    per column of ``out`` (the Euclidean norm gives the square root of the sum)."""
    arow, astart, na, brow, bstart, nb, hoff_d, hoff_v = prob[0]
    for n in prange(pi.size):
        acc = np.empty((nch, 1))
        _distances(X, arow, astart, pi[n], Y, brow, bstart, pj[n], 1, cvar, coff, cchan,
                   norm, acc)
        for ch in range(nch):
            out[n, ch] = np.sqrt(acc[ch, 0]) if norm == 0 else acc[ch, 0]


@njit(parallel=True, **_FLAGS)
def upper_distances(X, cvar, coff, cchan, nch, norm, prob, out):
    """All distances ``d(i, j)``, ``i < j``, of problem 0 (self recurrence), row-major
    upper triangle, channel ``ch`` in ``out[ch]`` (Euclidean: the square root)."""
    arow, astart, na, brow, bstart, nb, hoff_d, hoff_v = prob[0]
    for i in prange(na - 1):
        acc = np.empty((nch, na))
        bn = na - 1 - i
        _distances(X, arow, astart, i, X, arow, astart, i + 1, bn, cvar, coff, cchan,
                   norm, acc)
        base = i * (2 * na - i - 1) // 2
        for ch in range(nch):
            for b in range(bn):
                v = acc[ch, b]
                out[ch, base + b] = np.sqrt(v) if norm == 0 else v


@njit(**_FLAGS)
def _recurs(A, ra, sa, i, B, rb, sb, j, cvar, coff, cchan, nch, thr, kk, norm, acc):
    """Whether state i of A and state j of B recur for threshold kk (every channel)."""
    _distances(A, ra, sa, i, B, rb, sb, j, 1, cvar, coff, cchan, norm, acc)
    for ch in range(nch):
        if not acc[ch, 0] < thr[kk, ch]:
            return False
    return True


@njit(parallel=True, **_FLAGS)
def column_extents(X, Y, cvar, coff, cchan, nch, thr, norm, prob, out):
    """Per matrix p, threshold kk and column j: ``out[p, kk, j]`` = (first recurrent row,
    last row of the first run, first row of the last run, last recurrent row), all -1 in a
    column without recurrence.  Each scan stops at the first change, so a column costs
    about its border runs' lengths, not its height."""
    nprob, K = out.shape[0], out.shape[1]
    nbmax = out.shape[2]
    for q in prange(nprob * nbmax):
        p = q // nbmax
        j = q - p * nbmax
        arow, astart, na, brow, bstart, nb, hoff_d, hoff_v = prob[p]
        if j >= nb:
            continue
        acc = np.empty((nch, 1))
        th = thr[p]
        for kk in range(K):
            first = -1
            for i in range(na):
                if _recurs(X, arow, astart, i, Y, brow, bstart, j, cvar, coff, cchan, nch,
                           th, kk, norm, acc):
                    first = i
                    break
            if first < 0:
                for c in range(4):
                    out[p, kk, j, c] = -1
                continue
            end1 = first
            while end1 + 1 < na and _recurs(X, arow, astart, end1 + 1, Y, brow, bstart, j,
                                            cvar, coff, cchan, nch, th, kk, norm, acc):
                end1 += 1
            last = na - 1
            while not _recurs(X, arow, astart, last, Y, brow, bstart, j, cvar, coff, cchan,
                              nch, th, kk, norm, acc):
                last -= 1
            start2 = last
            while start2 - 1 >= 0 and _recurs(X, arow, astart, start2 - 1, Y, brow, bstart, j,
                                              cvar, coff, cchan, nch, th, kk, norm, acc):
                start2 -= 1
            out[p, kk, j, 0] = first
            out[p, kk, j, 1] = end1
            out[p, kk, j, 2] = start2
            out[p, kk, j, 3] = last


@njit(parallel=True, **_FLAGS)
def diagonal_border_runs(X, Y, cvar, coff, cchan, nch, thr, norm, prob, symmetric, theiler,
                         out):
    """The runs of every diagonal that touch the matrix border: ``out[p, kk, d]`` = (length of
    the run starting at the diagonal's first point, length of the run ending at its last
    point, weight), 0 where that point does not recur; a diagonal recurrent from end to end
    gives one run (the second length 0).  Diagonals ``d`` are those the histograms count:
    symmetric: ``k = d`` for ``max(theiler, 1) <= k < na`` (weight 2, both triangles) and
    ``k = 0`` when ``theiler == 0`` (weight 1); otherwise ``j - i = d`` for ``0 <= d < nb``
    then ``i - j = d - nb + 1`` for ``1 <= i - j < na`` (weight 1)."""
    nprob, K, ndiag = out.shape[0], out.shape[1], out.shape[2]
    for q in prange(nprob * ndiag):
        p = q // ndiag
        d = q - p * ndiag
        arow, astart, na, brow, bstart, nb, hoff_d, hoff_v = prob[p]
        k, lower, w = d, False, 0
        if symmetric:
            if d == 0:
                w = 1 if theiler == 0 else 0
            elif theiler <= d < na:
                w = 2
        elif d < nb:
            w = 1
        else:
            k, lower = d - nb + 1, True
            w = 1 if k < na else 0
        for kk in range(K):
            out[p, kk, d, 0] = 0
            out[p, kk, d, 1] = 0
            out[p, kk, d, 2] = w
        if w == 0:
            continue
        length = min(na, nb - k) if not lower else min(nb, na - k)
        acc = np.empty((nch, 1))
        th = thr[p]
        for kk in range(K):
            lead = 0
            while lead < length:
                i, j = (lead, lead + k) if not lower else (lead + k, lead)
                if not _recurs(X, arow, astart, i, Y, brow, bstart, j, cvar, coff, cchan, nch,
                               th, kk, norm, acc):
                    break
                lead += 1
            trail = 0
            if lead < length:
                while trail < length:
                    s = length - 1 - trail
                    i, j = (s, s + k) if not lower else (s + k, s)
                    if not _recurs(X, arow, astart, i, Y, brow, bstart, j, cvar, coff, cchan,
                                   nch, th, kk, norm, acc):
                        break
                    trail += 1
            out[p, kk, d, 0] = lead
            out[p, kk, d, 1] = trail


@njit(parallel=True, **_FLAGS)
def row_kth_distances(X, cvar, coff, cchan, norm, prob, k, out):
    """out[p, i] = the k-th smallest (0-based; state i itself, at 0, included) distance of
    row i of self-recurrence problem p (squared for the Euclidean norm)."""
    nprob, nmax = out.shape
    for q in prange(nprob * nmax):
        p = q // nmax
        i = q - p * nmax
        arow, astart, na, brow, bstart, nb, hoff_d, hoff_v = prob[p]
        if i >= na:
            continue
        acc = np.empty((1, na))
        _distances(X, arow, astart, i, X, arow, astart, 0, na, cvar, coff, cchan, norm, acc)
        out[p, i] = np.partition(acc[0], k)[k]


@njit(parallel=True, **_FLAGS)
def row_threshold_histograms(X, cvar, coff, cchan, norm, prob, rowthr, theiler, hd, hv, hw):
    """Line histograms of self-recurrence matrices with one threshold per row,
    ``R[i, j] = d(v_i, v_j) < rowthr[p, i]`` (not symmetric): one sweep down the rows per
    matrix, every diagonal of both triangles (``|j - i| < theiler`` left out; the line of
    identity once when ``theiler == 0``) and every column tracked at once."""
    for p in prange(prob.shape[0]):
        arow, astart, na, brow, bstart, nb, hoff_d, hoff_v = prob[p]
        acc = np.empty((1, na))
        dcur = np.zeros(2 * na, np.uint8)
        dstart = np.zeros(2 * na, np.int64)
        vcur = np.zeros(na, np.uint8)
        vstart = np.zeros(na, np.int64)
        for i in range(na):
            _distances(X, arow, astart, i, X, arow, astart, 0, na, cvar, coff, cchan, norm,
                       acc)
            t = rowthr[p, i]
            for j in range(na):
                b = 1 if acc[0, j] < t else 0
                if b != vcur[j]:
                    length = i - vstart[j]
                    if vcur[j]:
                        hv[p, length] += 1
                    elif length > 0:
                        hw[p, length] += 1
                    vcur[j] = b
                    vstart[j] = i
                d = j - i
                if (d < theiler and -d < theiler) and not (theiler == 0 and d == 0):
                    continue
                di = d + na - 1
                if b != dcur[di]:
                    if dcur[di]:
                        hd[p, i - dstart[di]] += 1
                    dcur[di] = b
                    dstart[di] = i
        for j in range(na):
            length = na - vstart[j]
            if vcur[j]:
                hv[p, length] += 1
            elif length > 0:
                hw[p, length] += 1
        for di in range(2 * na - 1):
            if dcur[di]:
                d = di - (na - 1)
                end = na - d if d > 0 else na  # one past the diagonal's last row
                hd[p, end - dstart[di]] += 1
