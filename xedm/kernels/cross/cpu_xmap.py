"""The all-pairs cross map's lookups (numba, CPU): every target through the neighbour tables
of a batch of library series, Pearson accumulated on the fly (predictions are never stored).

Signatures shared with the GPU twins (:mod:`xedm.kernels.cross.gpu_xmap`)::

    xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok) -> rho (nL, n_targets)
    xmap_skill_groups(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok) -> rho (nL, n_targets)
    to_device(a) -> a
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .._flags import FASTMATH_STRICT
from .._numba import njit  # numba's, with xedm's kernel cache
from ..predict.constants import D_MIN
from .cpu_ccm import _pearson


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
    # one layout for numba to compile (Fortran: xmap's columns come as a transpose); a lone
    # target's (T, 1) column is C- and F-contiguous at once, which numba would type as C and
    # compile again (about 14 s cold): it is looked up twice, as a (T, 2) Fortran array
    nT = Yt.shape[1]
    if nT == 1:
        Y2 = np.empty((Yt.shape[0], 2), order="F")
        Y2[:] = Yt
        return xmap_skill(idx, dist, Y2, k, Tp, pred_t, pred_ok)[:, :1]
    Yt = np.asfortranarray(Yt)
    nblk = (nT + TB - 1) // TB
    nlc = max(1, min(idx.shape[0], (2 * numba.get_num_threads() + nblk - 1) // nblk))
    return _xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok, nlc)


def key_order(T: int, k_list) -> bool:
    """The CPU's tables keep their rows in their own order (the GPU's twin,
    :func:`xedm.kernels.cross.gpu_xmap.key_order`, may reorder them)."""
    return False


def xmap_skill_groups(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok, out=None,
                      order=None):
    """Cross-map skill for targets of several groups: column j of ``Yt`` (T, nT) belongs to
    group ``col_group[j]`` (non-decreasing) and is looked up through ``tables[g]`` (idx, dist
    (nL, P, depth_g)) with ``k_list[g]`` neighbours and rows ``pred_ok[g]`` (nL, P).  Returns
    rho (nL, nT): :func:`xmap_skill` per group (the GPU twin serves them in one launch);
    with ``order`` its columns ``order`` (rho[:, order]); written into ``out`` (a
    C-contiguous (nL, nT) float64 array) when given."""
    if order is not None or out is not None:
        rho = xmap_skill_groups(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok)
        if order is None:
            out[...] = rho
            return out
        return np.take(rho, order, axis=1, out=out)
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
