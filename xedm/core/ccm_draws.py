"""The random libraries of CCM (see :mod:`xedm.core.ccm`): xedm's Floyd draws on one PCG64
stream, or pyEDM 2.5.7's (``sampling="pyedm"``)."""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel

#: how the random libraries are drawn (module doc)
SAMPLINGS = ("xedm", "pyedm")


def _draw_pyedm(pos: np.ndarray, T: int, sizes: np.ndarray, samples: int, seed) -> np.ndarray:
    """pyEDM 2.5.7's libraries (module doc) as membership masks."""
    n = len(pos)
    out = np.zeros((len(sizes) * samples, T), bool)
    for i, L in enumerate(sizes.tolist()):
        rng = np.random.default_rng(seed)
        for s in range(samples):
            out[i * samples + s, pos[rng.choice(n, size=min(L, n), replace=False)]] = True
    return out


def draw_members(valid: np.ndarray, lib_sizes, samples: int, seed,
                 sampling: str = "xedm") -> np.ndarray:
    """(n_sizes * samples, T) membership masks of the sampled libraries (see module doc)."""
    pos = np.flatnonzero(valid).astype(np.int64)
    n = len(pos)
    sizes = np.asarray(lib_sizes, np.int64)
    if sampling == "pyedm":
        return _draw_pyedm(pos, len(valid), sizes, samples, seed)
    m = np.where(sizes < n, np.minimum(sizes, n - sizes), 0)
    rng = np.random.Generator(np.random.PCG64(seed))
    u = rng.random(int(m.sum()) * samples)  # the same stream as one rng.random(m) per draw
    # the draws are defined on the CPU (PCG64 doubles), whatever the backend
    return get_kernel("floyd_members", "cpu")(pos, len(valid), sizes, samples, u)
