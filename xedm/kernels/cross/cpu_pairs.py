"""Cross maps of chosen (library, target) pairs on the CPU: the twin of
:mod:`xedm.kernels.cross.gpu_pairs` (same signature), one :func:`xedm.kernels.cross.cpu_xmap.
xmap_skill` per library over its own columns, the surrogates of its candidates (the
all-pairs map's sums exactly)."""

from __future__ import annotations

import numpy as np


def columns(xp, S, cand):
    """Each library's own columns (nL, T, m n): the surrogates ``S`` (N, n, T) of its
    candidates ``cand`` (nL, m), candidate-major."""
    nL, m = cand.shape
    T = S.shape[2]
    return xp.ascontiguousarray(S[xp.asarray(cand)].transpose(0, 3, 1, 2)).reshape(
        nL, T, m * S.shape[1])


def xmap_pair_skill(idx, dist, S, cand, k: int, Tp: int, pred_t, pred_ok) -> np.ndarray:
    """rho (nL, m n): library l's table ``idx``/``dist`` (nL, P, depth) looked up for the
    surrogates ``S`` (N, n, T) of its candidates ``cand[l]`` (:func:`columns`)."""
    from .cpu_xmap import xmap_skill

    Y = columns(np, S, np.asarray(cand, np.int64))
    nL, _, C = Y.shape
    out = np.full((nL, C), np.nan)
    for lib in range(nL):
        out[lib] = xmap_skill(idx[lib:lib + 1], dist[lib:lib + 1], Y[lib], int(k), int(Tp),
                              pred_t, pred_ok[lib:lib + 1])[0]
    return out
