"""The candidate drivers of a block of series in a large network, picked on the host (numba):
one parallel pass per row instead of a dozen (rows x N) NumPy passes and a sort of every row
(:func:`xedm.core.screen.candidates`).

    screen_pick(sc, rb, use_rho, allow, use_allow, own, m, n_rho) -> table (B, m) int64

Row b is series ``own[b]``; its allowed drivers are the valid entries (>= 0) of
``allow[b]`` when ``use_allow`` (else every series), itself left out.  A row with at most
``m`` allowed keeps them all.  Otherwise it keeps ``m``: the ``n_rho`` allowed of highest
cross-map skill ``rb[b]`` (when ``use_rho``; non-finite skill never counts) and, for the
rest, those of highest score ``sc[b]`` (NaN ranks as -inf).  Each "highest" is the k
largest by value, ties to the lower index.  The table lists the kept drivers in ascending
order, padded with -1.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._numba import njit  # numba's, with xedm's kernel cache


@njit(cache=True)
def _sift(h, s, k):
    """Restore the min-heap ``h[:k]`` below position s."""
    while True:
        c = 2 * s + 1
        if c >= k:
            return
        if c + 1 < k and h[c + 1] < h[c]:
            c += 1
        if h[s] <= h[c]:
            return
        h[s], h[c] = h[c], h[s]
        s = c


@njit(cache=True)
def _kth_largest(vals, k):
    """The k-th largest of ``vals`` (with multiplicity; 1 <= k <= len(vals), no NaN): a
    min-heap of the k largest seen (k is 32 or less here, len(vals) the series)."""
    h = np.empty(k)
    for j in range(k):
        h[j] = vals[j]
    for s in range(k // 2 - 1, -1, -1):
        _sift(h, s, k)
    for j in range(k, len(vals)):
        if vals[j] > h[0]:
            h[0] = vals[j]
            _sift(h, 0, k)
    return h[0]


@njit(cache=True)
def _mark_top(vals, k, take):
    """``take[j]`` set where ``vals[j]`` is among the k largest (ties to the lower index)."""
    thr = _kth_largest(vals, k)
    need = k
    for j in range(len(vals)):
        need -= vals[j] > thr
    for j in range(len(vals)):
        v = vals[j]
        if v > thr:
            take[j] = True
        elif v == thr and need > 0:
            take[j] = True
            need -= 1


@njit(cache=True, parallel=True)
def screen_pick(sc, rb, use_rho, allow, use_allow, own, m, n_rho):
    B = len(own)
    N = sc.shape[1]
    out = np.full((B, m), -1, np.int64)
    for b in prange(B):
        ok = np.zeros(N, np.bool_)
        if use_allow:
            for c in range(allow.shape[1]):
                j = allow[b, c]
                if j >= 0:
                    ok[j] = True
        else:
            ok[:] = True
        ok[own[b]] = False
        cnt = 0
        for j in range(N):
            cnt += ok[j]
        take = np.zeros(N, np.bool_)
        if cnt <= m:
            take[:] = ok
        else:
            key = np.empty(N)
            for j in range(N):
                v = sc[b, j]
                key[j] = v if ok[j] and not np.isnan(v) else -np.inf
            if use_rho and n_rho > 0:
                r = np.empty(N)
                for j in range(N):
                    v = rb[b, j]
                    r[j] = v if ok[j] and np.isfinite(v) else -np.inf
                by_rho = np.zeros(N, np.bool_)
                _mark_top(r, n_rho, by_rho)
                for j in range(N):
                    if by_rho[j] and r[j] > -np.inf:
                        key[j] = np.inf
            _mark_top(key, m, take)
        c = 0
        for j in range(N):
            if take[j] and ok[j] and c < m:
                out[b, c] = j
                c += 1
    return out
