"""Kernels of the significance tests (numba, CPU).

    twin_walk(cls, order, offsets, u, r) -> states (n, m)
    phase_spectrum(amp, phase) -> spectra (n, K) complex
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import _numba  # noqa: F401  (kernel cache location, threading layer)


@njit(parallel=True, cache=True)
def phase_spectrum(amp, phase):
    """``amp * exp(i * phase)`` (n, K) for amplitudes ``amp`` (K,) and phases (n, K): the
    spectra of Ebisuzaki surrogates, the same values as numpy's ``amp * np.exp(1j * phase)``
    (cos and sin of each phase), computed on every core without the complex temporaries."""
    n, K = phase.shape
    out = np.empty((n, K), np.complex128)
    for i in prange(n):
        for j in range(K):
            out[i, j] = complex(amp[j] * np.cos(phase[i, j]), amp[j] * np.sin(phase[i, j]))
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


@njit(cache=True)
def partial_corr(y, a, Z):
    """Pearson correlation of ``y`` and ``a`` (n,) after removing their least-squares fits
    on a constant and the rows of ``Z`` (m, n): both are projected off an orthonormal basis
    of those columns, built by Gram-Schmidt with one re-orthogonalisation (a column left
    with under 1e-10 of its norm adds nothing).  One thread: cheap for the small systems of
    :func:`xedm.core.network.conditional_tests`, which call it once per candidate link."""
    n = y.shape[0]
    m = Z.shape[0]
    Q = np.empty((m + 1, n))
    Q[0, :] = 1.0 / np.sqrt(n)
    r = 1
    v = np.empty(n)
    for c in range(m):
        v[:] = Z[c]
        norm0 = np.sqrt(np.sum(v * v))
        for _ in range(2):
            for b in range(r):
                v -= np.sum(Q[b] * v) * Q[b]
        norm = np.sqrt(np.sum(v * v))
        if norm > 1e-10 * norm0 and norm > 0:
            Q[r, :] = v / norm
            r += 1
    ry = y.copy()
    ra = a.copy()
    for _ in range(2):
        for b in range(r):
            ry -= np.sum(Q[b] * ry) * Q[b]
            ra -= np.sum(Q[b] * ra) * Q[b]
    sy = np.sqrt(np.sum(ry * ry))
    sa = np.sqrt(np.sum(ra * ra))
    if not (sy > 0 and sa > 0):
        return np.nan
    return np.sum(ry * ra) / (sy * sa)
