"""Cross maps of chosen (library, target) pairs on the GPU (CuPy): the surrogate null of
:func:`xedm.causal_network`'s screened candidates (:mod:`xedm.core.pair_null`).

    xmap_pair_skill(idx, dist, S, cand, k, Tp, pred_t, pred_ok) -> rho (nL, m n) (host)

Library l looks up its own columns, the surrogates ``S`` (N, n, T) (on the device) of its
candidates ``cand[l]`` (m,), gathered beside it (NaN-free, (T, m n) per library), through
its table ``idx``/``dist`` (nL, P, depth): the first k entries whose target index q + Tp
lies inside the data, simplex weights, Pearson over the rows of
``pred_ok`` (nL, P) at times ``pred_t`` (P,) + Tp: :mod:`xedm.kernels.cross.gpu_xmap`'s
``xmap_rows`` (the rows' entries) and ``xmap_sums`` (one thread per (library, column),
here each library's block of columns its own), so that rho equals the all-pairs map's up
to the order of the sums (about 1e-15).
"""

from __future__ import annotations

import numpy as np

from .cpu_pairs import columns
from .gpu_xmap import _TB
from .gpu_xmap import _kernel as _xmap_kernel


def xmap_pair_skill(idx, dist, S, cand, k: int, Tp: int, pred_t, pred_ok) -> np.ndarray:
    """rho (nL, m n) (module docstring)."""
    import cupy as cp

    Y = columns(cp, cp.asarray(S, dtype=cp.float64), np.asarray(cand, np.int64))
    nL, T, C = Y.shape
    idx = cp.ascontiguousarray(cp.asarray(idx).astype(cp.int32, copy=False))
    dist = cp.ascontiguousarray(cp.asarray(dist, dtype=cp.float64))
    P, depth = idx.shape[1], idx.shape[2]
    rho = cp.full((nL, C), cp.nan, cp.float64)
    if nL == 0 or C == 0 or P == 0 or k < 1:
        return rho.get()
    i64 = np.int64
    R = nL * P
    qk = cp.zeros(R * k, cp.int32)
    wk = cp.zeros(R * k, cp.float64)
    mk = cp.zeros(R, cp.int32)
    wsk = cp.ones(R, cp.float64)
    _xmap_kernel("xmap_rows")(((R + 255) // 256,), (256,),
                              (idx, dist, i64(R), i64(depth), i64(k), i64(T), i64(Tp), qk, wk,
                               mk, wsk))
    pt = cp.ascontiguousarray(cp.asarray(pred_t, dtype=cp.int64))
    pok = cp.ascontiguousarray(cp.asarray(np.asarray(pred_ok), dtype=cp.uint8))
    ptr = cp.asarray(np.array([idx.data.ptr], np.uint64))
    dptr = cp.asarray(np.array([dist.data.ptr], np.uint64))
    one = cp.zeros(C, cp.int32)  # one group: every column looked up through this table
    _xmap_kernel("xmap_sums")(((C + _TB - 1) // _TB, nL), (_TB,),
                              (ptr, dptr, cp.asarray(np.array([depth], np.int64)),
                               cp.asarray(np.array([k], np.int64)), cp.zeros(1, cp.int64), one,
                               Y, i64(T * C), i64(T), i64(C), i64(P), i64(nL), i64(Tp), pt,
                               i64(0), pok, qk, wk, mk, wsk, cp.ones(C, cp.uint8), rho))
    return rho.get()
