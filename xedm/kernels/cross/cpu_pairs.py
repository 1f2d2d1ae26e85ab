"""Cross maps of chosen (library, target) pairs on the CPU: the twin of
:mod:`xedm.kernels.cross.gpu_pairs` (same signature), one :func:`xedm.kernels.cross.cpu_xmap.
xmap_skill` per library over its own columns (the all-pairs map's sums exactly)."""

from __future__ import annotations

import numpy as np


def xmap_pair_skill(idx, dist, Y, k: int, Tp: int, pred_t, pred_ok) -> np.ndarray:
    """rho (nL, C): library l's table ``idx``/``dist`` (nL, P, depth) looked up for its own
    columns ``Y[l]`` (T, C)."""
    from .cpu_xmap import xmap_skill

    nL, _, C = Y.shape
    out = np.full((nL, C), np.nan)
    for lib in range(nL):
        out[lib] = xmap_skill(idx[lib:lib + 1], dist[lib:lib + 1], Y[lib], int(k), int(Tp),
                              pred_t, pred_ok[lib:lib + 1])[0]
    return out
