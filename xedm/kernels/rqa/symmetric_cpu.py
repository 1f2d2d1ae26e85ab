"""Numba kernels for symmetric (self and joint) recurrence: one pass over the upper triangle.

A symmetric matrix is fully known from its upper triangle, so the distances of
``i < j`` are computed once and every line is read from them:

* **diagonal lines** as in :mod:`xedm.kernels.rqa.cpu`: a block of adjacent diagonals
  ``k0 <= j - i < k1`` is swept down the rows, every diagonal keeping its run state
  (added twice, once per triangle, or not at all inside the Theiler band);
* **vertical lines** of column ``j`` of the whole matrix are, from top to bottom, the
  upper part of column ``j`` (rows ``0..j-1``), the point ``(j, j)`` and, by symmetry,
  the right part of row ``j`` (columns ``j+1..``).  At row ``i`` a diagonal block sees
  one contiguous piece of row ``i`` and one point of each of its columns, so each block
  counts the runs that lie inside its piece of a row or of a column and hands the two
  runs at the ends of every piece (the *lead* and the *trail*) to a stitching pass,
  which joins the pieces of each column in order and counts the joined runs.

Runs at piece ends are stored as signed int32 lengths (``> 0`` recurrent, ``< 0`` not,
``0`` empty piece); a piece that is one run has its lead set and its trail 0.  Counts are
the same integers as :func:`xedm.kernels.rqa.cpu.line_histograms` gives, whatever the
block width and the schedule (tests/test_rqa.py checks them against it and against
tests/naive.py).

Arrays
------
X : float64 (rows, time)
    Raw series; coordinate ``c`` of state ``i`` of matrix ``m`` is
    ``X[arow + cvar[c], astart + i + coff[c]]``.
prob : int64 (nmat, 4)
    ``arow, astart, na, soff`` per matrix: ``soff`` is the offset of its pieces in the
    flat stitch arrays, laid out ``[kk, q, i]`` (``K`` thresholds, ``Q`` blocks, ``na``).
nblocks : int64 (nmat,)
    Number of diagonal blocks ``Q`` of each matrix.
items : int64 (nitems, 5)
    ``matrix, k0, k1, weight, q``: block ``q`` of the matrix holds the diagonals
    ``k0 <= k < k1``; its diagonal lines are added ``weight`` times (0 or 2).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._numba import njit  # numba's, with xedm's kernel cache

_FLAGS = {"cache": True, "nogil": True, "boundscheck": False}


_U1 = np.uint64(1)
_U6 = np.uint64(63)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DB_SHIFT = np.uint64(58)
# _DB_INDEX[(low * _DEBRUIJN) >> 58] = position of the single set bit of ``low``
_DB_INDEX = np.zeros(64, np.int64)
for _p in range(64):
    _DB_INDEX[((1 << _p) * 0x03F79D71B4CB0A89 % 2**64) >> 58] = _p


@njit(**_FLAGS)
def _low_bit(e):
    """Position of the lowest set bit of the uint64 ``e`` (nonzero)."""
    return _DB_INDEX[((e & (~e + _U1)) * _DEBRUIJN) >> _DB_SHIFT]


@njit(**_FLAGS)
def _bit(words, b):
    return (words[b >> 6] >> np.uint64(b & 63)) & _U1


@njit(**_FLAGS)
def _pack(acc, thr, kk, bn, words):
    """words = bit b set where point b recurs for threshold kk (every channel), b < bn."""
    for w in range(words.size):
        lo = 64 * w
        hi = min(lo + 64, bn)
        word = np.uint64(0)
        a = acc[0]
        t = thr[kk, 0]
        for b in range(lo, hi):
            word |= np.uint64(a[b] < t) << np.uint64(b - lo)
        for ch in range(1, acc.shape[0]):
            a = acc[ch]
            t = thr[kk, ch]
            wc = np.uint64(0)
            for b in range(lo, hi):
                wc |= np.uint64(a[b] < t) << np.uint64(b - lo)
            word &= wc
        words[w] = word


@njit(**_FLAGS)
def _shifted(words, w):
    """Bits b + 1 of ``words`` at position b (word w)."""
    out = words[w] >> _U1
    if w + 1 < words.size:
        out |= words[w + 1] << _U6
    return out


@njit(**_FLAGS)
def _signed(v, n):
    return n if v else -n


@njit(**_FLAGS)
def _row_piece(cur, bn, hv, hw, hoff, lead, trail, at):
    """Runs of one row piece (bits ``b < bn`` of ``cur``): inner runs counted, the end
    runs stored at ``at``."""
    s = 0
    first = True
    for w in range(cur.size):
        lo = 64 * w
        if lo >= bn - 1:
            break
        e = cur[w] ^ _shifted(cur, w)  # bit b: point b differs from point b + 1
        if bn - 1 - lo < 64:
            e &= (_U1 << np.uint64(bn - 1 - lo)) - _U1
        while e:
            b = lo + _low_bit(e)
            e &= e - _U1
            v = _bit(cur, b)
            if first:
                lead[at] = _signed(v, b + 1 - s)
                first = False
            elif v:
                hv[hoff + b + 1 - s] += 1
            else:
                hw[hoff + b + 1 - s] += 1
            s = b + 1
    v = _bit(cur, s)
    if first:
        lead[at] = _signed(v, bn)
        trail[at] = 0
    else:
        trail[at] = _signed(v, bn - s)


@njit(**_FLAGS)
def _dist_rows(X, ra, sa, i, j0, bn, cvar, coff, cchan, norm, acc):
    """Like :func:`xedm.kernels.rqa.cpu._distances` (state ``i`` against states ``j0 ..
    j0 + bn - 1``, same arithmetic in the same order, so the same bits), but in passes of
    up to four coordinates of one channel over contiguous slices, which vectorise."""
    acc[:, :bn] = 0.0
    nc = cvar.size
    c = 0
    while c < nc:
        ch = cchan[c]
        out = acc[ch, :bn]
        g = 1
        if norm == 0:
            while g < 4 and c + g < nc and cchan[c + g] == ch:
                g += 1
        o0 = coff[c]
        x0 = X[ra + cvar[c], sa + i + o0]
        r0 = X[ra + cvar[c], sa + j0 + o0:sa + j0 + o0 + bn]
        if g == 1:
            if norm == 0:
                for b in range(bn):
                    d = x0 - r0[b]
                    out[b] += d * d
            elif norm == 1:
                for b in range(bn):
                    d = abs(x0 - r0[b])
                    out[b] = d if d > out[b] else out[b]
            else:
                for b in range(bn):
                    out[b] += abs(x0 - r0[b])
            c += 1
            continue
        o1 = coff[c + 1]
        x1 = X[ra + cvar[c + 1], sa + i + o1]
        r1 = X[ra + cvar[c + 1], sa + j0 + o1:sa + j0 + o1 + bn]
        if g == 2:
            for b in range(bn):
                d = x0 - r0[b]
                v = out[b] + d * d
                d = x1 - r1[b]
                out[b] = v + d * d
            c += 2
            continue
        o2 = coff[c + 2]
        x2 = X[ra + cvar[c + 2], sa + i + o2]
        r2 = X[ra + cvar[c + 2], sa + j0 + o2:sa + j0 + o2 + bn]
        if g == 3:
            for b in range(bn):
                d = x0 - r0[b]
                v = out[b] + d * d
                d = x1 - r1[b]
                v = v + d * d
                d = x2 - r2[b]
                out[b] = v + d * d
            c += 3
            continue
        o3 = coff[c + 3]
        x3 = X[ra + cvar[c + 3], sa + i + o3]
        r3 = X[ra + cvar[c + 3], sa + j0 + o3:sa + j0 + o3 + bn]
        for b in range(bn):
            d = x0 - r0[b]
            v = out[b] + d * d
            d = x1 - r1[b]
            v = v + d * d
            d = x2 - r2[b]
            v = v + d * d
            d = x3 - r3[b]
            out[b] = v + d * d
        c += 4


@njit(**_FLAGS)
def _sym_block(X, ra, sa, na, k0, k1, wt, q, Q, soff, cvar, coff, cchan, nch, thr, norm,
               hd, hv, hw, hoff, rlead, rtrail, clead, ctrail, vert):
    """Block ``q`` (diagonals ``k0 <= k < k1``) of one symmetric matrix, bit-packed: at row
    ``i`` bit ``b`` is point ``(i, i + k0 + b)``; only changes of state cost work."""
    nblk = k1 - k0
    nk = thr.shape[0]
    W = (nblk + 63) // 64
    acc = np.empty((nch, nblk))
    cur = np.zeros(W, dtype=np.uint64)
    prev = np.zeros((nk, W), dtype=np.uint64)
    dstart = np.zeros((nk, nblk), dtype=np.int64)   # diagonal b: row its open run began
    cstart = np.zeros((nk, na), dtype=np.int64)     # column j: row its open run began
    cled = np.zeros((nk, na), dtype=np.uint8)       # 1 once column j's lead is stored
    imax = na - k0
    for i in range(imax):
        bn = min(nblk, na - k0 - i)
        j0 = i + k0
        _dist_rows(X, ra, sa, i, j0, bn, cvar, coff, cchan, norm, acc)
        for kk in range(nk):
            base = soff + (kk * Q + q) * na
            pv = prev[kk]
            _pack(acc, thr, kk, bn, cur)
            # diagonal lines: a run starts or ends where bit b changed since row i - 1
            ds = dstart[kk]
            for w in range(W):
                e = cur[w] ^ pv[w]
                while e:
                    bb = _low_bit(e)
                    e &= e - _U1
                    b = 64 * w + bb
                    if (pv[w] >> np.uint64(bb)) & _U1:
                        hd[kk, hoff + i - ds[b]] += wt
                    else:
                        ds[b] = i
            if not vert:
                for w in range(W):
                    pv[w] = cur[w]
                continue
            # columns: point b of row i - 1 was in column j0 + b + 1, now at bit b
            cs = cstart[kk]
            cl = cled[kk]
            if i == 0:
                for b in range(bn):
                    cs[j0 + b] = 0
                    cl[j0 + b] = 0
            else:
                enter = bn == nblk  # column j0 + nblk - 1 enters at bit nblk - 1
                for w in range(W):
                    lo = 64 * w
                    if lo >= bn:
                        break
                    e = cur[w] ^ _shifted(pv, w)
                    top = bn - 1 if enter else bn
                    if top - lo < 64:
                        e &= (_U1 << np.uint64(max(top - lo, 0))) - _U1
                    while e:
                        b = lo + _low_bit(e)
                        e &= e - _U1
                        j = j0 + b
                        length = i - cs[j]
                        if cl[j] == 0:
                            clead[base + j] = _signed(1 - _bit(cur, b), length)
                            cl[j] = 1
                        elif _bit(cur, b):
                            hw[kk, hoff + length] += 1
                        else:
                            hv[kk, hoff + length] += 1
                        cs[j] = i
                if enter:
                    cs[j0 + nblk - 1] = i
                    cl[j0 + nblk - 1] = 0
            # column j0 leaves the block after this row
            run = _signed(cur[0] & _U1, i + 1 - cs[j0])
            if cl[j0] == 0:
                clead[base + j0] = run
                ctrail[base + j0] = 0
            else:
                ctrail[base + j0] = run
            # the row piece i x [j0, j0 + bn)
            _row_piece(cur, bn, hv[kk], hw[kk], hoff, rlead, rtrail, base + i)
            for w in range(W):
                pv[w] = cur[w]
    # diagonal b ends after na - k0 - b rows: close the runs still open
    for kk in range(nk):
        for w in range(W):
            e = prev[kk, w]
            while e:
                b = 64 * w + _low_bit(e)
                e &= e - _U1
                hd[kk, hoff + na - k0 - b - dstart[kk, b]] += wt


@njit(parallel=True, **_FLAGS)
def block_pass(X, cvar, coff, cchan, nch, thr, norm, prob, items, chunk_ptr, hd, hv, hw,
               nblocks, rlead, rtrail, clead, ctrail, vband):
    """Run the diagonal blocks; per-chunk histograms ``hd, hv, hw[t, kk, hoff + l]``
    (``hoff`` = matrix x (L + 1)) and the pieces' end runs.  ``thr``: (nmat, K, nch).
    Blocks of diagonals ``k < vband`` are left out of the vertical lines (the stitching
    pass counts them as not recurrent)."""
    L1 = hd.shape[2] // prob.shape[0]
    for t in prange(chunk_ptr.size - 1):
        for it in range(chunk_ptr[t], chunk_ptr[t + 1]):
            m, k0, k1, w, q = items[it]
            ra, sa, na, soff = prob[m]
            _sym_block(X, ra, sa, na, k0, k1, w, q, nblocks[m], soff, cvar, coff, cchan,
                       nch, thr[m], norm, hd[t], hv[t], hw[t], m * L1, rlead, rtrail,
                       clead, ctrail, k0 >= vband)


@njit(**_FLAGS)
def _emit(ov, on, h, hoff, skip):
    """Count the run (ov, on) (value, length) as vertical (h[0]) or white (h[1]); a white
    run is skipped when ``skip``."""
    if on > 0:
        if ov:
            h[0, hoff + on] += 1
        elif not skip:
            h[1, hoff + on] += 1


@njit(**_FLAGS)
def _join(lead, trail, ov, on, nem, h, hoff, interior):
    """Append a piece (signed end runs) to the open run (ov, on); ``nem`` runs of the column
    counted so far (with ``interior``, a white first run is not counted).  Returns the new
    open run and count."""
    if lead == 0:
        return ov, on, nem
    v = 1 if lead > 0 else 0
    n = lead if lead > 0 else -lead
    if on > 0 and v == ov:
        on += n
    else:
        if on > 0:
            _emit(ov, on, h, hoff, interior and nem == 0)
            nem += 1
        ov, on = v, n
    if trail != 0:
        _emit(ov, on, h, hoff, interior and nem == 0)
        nem += 1
        ov, on = (1 if trail > 0 else 0), (trail if trail > 0 else -trail)
    return ov, on, nem


@njit(parallel=True, **_FLAGS)
def stitch(prob, nblocks, bounds, selfrec, rlead, rtrail, clead, ctrail, hvw, vband,
           interior):
    """Join the pieces of every whole column into ``hvw[t, 0 (vertical) or 1 (white), kk,
    hoff + l]`` per chunk ``t`` (``hoff`` = matrix x (L + 1)).

    Column ``j`` of matrix ``m`` runs through its upper pieces (blocks ``Q-1 .. 0``),
    the point ``(j, j)`` (recurrent when ``selfrec[m, kk]``) and row ``j``'s pieces
    (blocks ``0 .. Q-1``).  ``bounds[m, q]`` is the first diagonal of block ``q``.
    ``vband > 0``: the points with ``|i - j| < vband`` count as not recurrent (their blocks
    start below ``vband``).  ``interior``: the white runs at either end of a column are not
    counted, except a column without any recurrence, one white run of its whole length
    (the CRP toolbox's white vertical lines)."""
    nmat = prob.shape[0]
    nchunks = hvw.shape[0]
    K = selfrec.shape[1]
    L1 = hvw.shape[3] // nmat
    nmax = 0
    for m in range(nmat):
        nmax = max(nmax, prob[m, 2])
    total = nmat * nmax
    step = (total + nchunks - 1) // nchunks
    for t in prange(nchunks):
        for c in range(t * step, min((t + 1) * step, total)):
            m = c // nmax
            j = c - m * nmax
            na, soff, Q = prob[m, 2], prob[m, 3], nblocks[m]
            if j >= na:
                continue
            hoff = m * L1
            for kk in range(K):
                h = hvw[t, :, kk]
                ov, on, nem = 0, 0, 0
                for q in range(Q - 1, -1, -1):
                    k0 = bounds[m, q]
                    if k0 > j:
                        continue  # column j has no rows above the diagonal in this block
                    if k0 < vband:
                        k1 = bounds[m, q + 1] if q + 1 < Q else na
                        lead, trail = -(j - k0 - max(0, j - k1 + 1) + 1), 0
                    else:
                        at = soff + (kk * Q + q) * na + j
                        lead, trail = clead[at], ctrail[at]
                    ov, on, nem = _join(lead, trail, ov, on, nem, h, hoff, interior)
                diag = 1 if selfrec[m, kk] and vband == 0 else -1
                ov, on, nem = _join(diag, 0, ov, on, nem, h, hoff, interior)
                for q in range(Q):
                    k0 = bounds[m, q]
                    if j + k0 >= na:
                        break  # row j ends before this block
                    if k0 < vband:
                        k1 = bounds[m, q + 1] if q + 1 < Q else na
                        lead, trail = -(min(k1 - 1, na - 1 - j) - k0 + 1), 0
                    else:
                        at = soff + (kk * Q + q) * na + j
                        lead, trail = rlead[at], rtrail[at]
                    ov, on, nem = _join(lead, trail, ov, on, nem, h, hoff, interior)
                _emit(ov, on, h, hoff, interior and nem > 0)
