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
