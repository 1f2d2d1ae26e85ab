"""Kernels of the significance tests (numba, CPU).

    twin_walk(cls, order, offsets, u, r) -> states (n, m)
    phase_spectrum(amp, phase) -> spectra (n, K) complex
    phase_spectra(amp, phase) -> spectra (B, n, K) complex (B series at once)
    cross_estimates(w, idx, Y, libs, lags, cols) -> estimates (nl, nj, nlag, ncols)
    partial_cross_rows(ys, est, vals, cond, js, s0) -> r (nj,), rank (nj,)
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._flags import FASTMATH_STRICT
from .._numba import njit  # numba's, with xedm's kernel cache


def phase_spectrum(amp, phase):
    """``amp * exp(i * phase)`` (n, K) for amplitudes ``amp`` (K,) and phases (n, K): the
    spectra of Ebisuzaki surrogates, the same values as numpy's ``amp * np.exp(1j * phase)``
    (cos and sin of each phase), computed on every core without the complex temporaries
    (:func:`phase_spectra` of one series)."""
    return phase_spectra(np.ascontiguousarray(amp)[None], np.ascontiguousarray(phase)[None])[0]


@njit(parallel=True, cache=True)
def phase_spectra(amp, phase):
    """:func:`phase_spectrum` of B series at once: amplitudes (B, K), phases (B, n, K)."""
    B, n, K = phase.shape
    out = np.empty((B, n, K), np.complex128)
    for r in prange(B * n):
        b = r // n
        i = r % n
        for j in range(K):
            out[b, i, j] = complex(amp[b, j] * np.cos(phase[b, i, j]),
                                   amp[b, j] * np.sin(phase[b, i, j]))
    return out


@njit(parallel=True, cache=True)
def twin_walk(cls, order, offsets, u, r):
    """States visited by n twin-surrogate walks of m steps (u, r: uniform doubles (n, m)).

    ``cls[i]``: twin class of state i; ``order[offsets[c]:offsets[c + 1]]``: the states of
    class c.  Walk w starts at state ``floor(u[w, 0] * P)``; each step jumps to the twin
    ``floor(u * size)`` of the current state's class and moves to its successor, or restarts
    at ``floor(u * P)`` when the twin is the last state (protocol:
    :mod:`xedm.stats.surrogates`).
    """
    P = cls.shape[0]
    n, m = u.shape
    out = np.empty((n, m), np.int64)
    for w in prange(n):
        s = min(int(r[w, 0] * P), P - 1)
        out[w, 0] = s
        for i in range(1, m):
            c = cls[s]
            a = offsets[c]
            size = offsets[c + 1] - a
            twin = order[a + min(int(u[w, i] * size), size - 1)]
            if twin + 1 < P:
                s = twin + 1
            else:
                s = min(int(r[w, i] * P), P - 1)
            out[w, i] = s
    return out


@njit(parallel=True, cache=True)
def cross_estimates(w, idx, Y, libs, lags, cols):
    """Simplex cross-map estimates ``out[a, j, b, c] = sum_k w[libs[a], cols[c], k] *
    Y[j, idx[libs[a], cols[c], k] + lags[b]]`` (len(libs), len(Y), len(lags), len(cols)):
    every target of ``Y`` at every lag from each library's neighbour table (``w``, ``idx``
    (N, P, k): normalised weights, library times), at the prediction rows ``cols``; the
    caller keeps every ``idx + lag`` inside Y.  Parallel over (library, target)."""
    nl = libs.shape[0]
    nj = Y.shape[0]
    nb = lags.shape[0]
    nc = cols.shape[0]
    K = w.shape[2]
    out = np.empty((nl, nj, nb, nc))
    for task in prange(nl * nj):
        a = task // nj
        j = task % nj
        lib = libs[a]
        for b in range(nb):
            lag = lags[b]
            for c in range(nc):
                p = cols[c]
                s = 0.0
                for k in range(K):
                    s += w[lib, p, k] * Y[j, idx[lib, p, k] + lag]
                out[a, j, b, c] = s
    return out


@njit(cache=True, fastmath=FASTMATH_STRICT)
def _partial_from_rows(MT, R):
    """Partial correlation of columns 0 and 1 of ``MT[:, :R]`` (centred unit columns) given
    columns 2..R-1, and the rank of those: the Gram matrix (accumulated one time step at a
    time, a contiguous inner loop), then Gaussian elimination of the conditioning columns in
    order (one whose remaining variance is under 1e-10 of its own depends on the earlier ones
    and is skipped); what remains of columns 0 and 1 is their residual covariance."""
    n = MT.shape[0]
    G = np.zeros((R, R))
    for t in range(n):
        for a in range(R):
            v = MT[t, a]
            for b in range(a, R):
                G[a, b] += v * MT[t, b]
    for a in range(R):
        for b in range(a):
            G[a, b] = G[b, a]
    rank = 0
    for c in range(2, R):
        d = G[c, c]
        if not d > 1e-10:  # unit rows: a row's own variance is 1 (0 if constant)
            continue
        rank += 1
        for a in range(R):
            if a == c or (a > 1 and a < c):
                continue
            f = G[a, c] / d
            if f == 0.0:
                continue
            for b in range(R):
                if b > 1 and b < c:
                    continue
                G[a, b] -= f * G[c, b]
    if not (G[0, 0] > 1e-12 and G[1, 1] > 1e-12):
        return np.nan, rank
    return G[0, 1] / np.sqrt(G[0, 0] * G[1, 1]), rank


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def partial_cross_rows(ys, est, vals, cond, js, s0):
    """Partial correlations of one library row of :func:`xedm.core.network.conditional_tests`
    at one lag, every candidate driver in parallel.

    ``ys`` (nj, n): each candidate j's target values; ``est`` (1 + nc, nj, S, n): the
    estimates of each j at each shift from the library's manifold (first) and from each
    conditioning series' (``cond`` (nc,) their ids); ``vals`` (nc, S, n): the conditioning
    series' own values; every row centred and of unit norm.  For candidate c: rows 0 and 1
    are ``ys[c]`` and ``est[0, c, s0]``, the conditioning rows ``est[1 + q, c, :]`` and
    ``vals[q, :]`` for every q with ``cond[q] != js[c]``.  Returns r (nj,) and the rank of
    the conditioning rows (nj,)."""
    nj, n = ys.shape
    nc = cond.shape[0]
    S = vals.shape[1]
    r = np.empty(nj)
    rank = np.empty(nj, np.int64)
    for c in prange(nj):
        MT = np.empty((n, 2 + 2 * S * nc))
        MT[:, 0] = ys[c]
        MT[:, 1] = est[0, c, s0]
        R = 2
        for q in range(nc):
            if cond[q] == js[c]:
                continue
            for s in range(S):
                MT[:, R] = est[1 + q, c, s]
                MT[:, R + 1] = vals[q, s]
                R += 2
        r[c], rank[c] = _partial_from_rows(MT, R)
    return r, rank
