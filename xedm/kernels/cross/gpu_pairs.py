"""Cross maps of chosen (library, target) pairs on the GPU (CuPy): the surrogate null of
:func:`xedm.causal_network`'s screened candidates (:mod:`xedm.core.pair_null`).

    xmap_pair_skill(idx, dist, Y, k, Tp, pred_t, pred_ok) -> rho (nL, C) on the device

Library l looks up its own columns ``Y[l]`` (T, C) (NaN-free: the surrogates of its
candidates) through its table ``idx``/``dist`` (nL, P, depth): the first k entries whose
target index q + Tp lies inside the data, simplex weights, Pearson over the rows of
``pred_ok`` (nL, P) at times ``pred_t`` (P,) + Tp.  The rows' entries come from
:mod:`xedm.kernels.cross.gpu_xmap`'s ``xmap_rows``; the sums are its ``xmap_sums``' for a
NaN-free column, one thread per (library, column), so that rho equals the all-pairs map's
up to the order of the sums (about 1e-15).
"""

from __future__ import annotations

import numpy as np

from ..knn.gpu_compile import _module
from .gpu_xmap import _kernel as _xmap_kernel
from .gpu_ytile import _PEARSON

_SOURCE = _PEARSON + r"""
extern "C" __global__ void xmap_pair_sums(
    const double* __restrict__ Y, const long long T, const long long C, const long long P,
    const long long k, const long long Tp, const long long* __restrict__ pred_t,
    const unsigned char* __restrict__ pred_ok, const int* __restrict__ qk,
    const double* __restrict__ wk, const int* __restrict__ mk,
    const double* __restrict__ wsk, double* __restrict__ rho)
{
    const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long li = blockIdx.y;
    if (c >= C) return;
    const double* Yl = Y + li * T * C;
    const unsigned char* okl = pred_ok + li * P;
    double mean = 0.0, cnt = 0.0;
    for (long long pi = 0; pi < P; ++pi) {
        const long long q = pred_t[pi] + Tp;
        if (okl[pi] && q >= 0 && q < T) { mean = mean + Yl[q * C + c]; cnt = cnt + 1.0; }
    }
    if (cnt > 0) mean = mean / cnt;
    double n = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0;
    for (long long pi = 0; pi < P; ++pi) {
        const long long r = li * P + pi;
        const long long qo = pred_t[pi] + Tp;
        const int m = mk[r];
        if (!okl[pi] || qo < 0 || qo >= T || m == 0) continue;
        double acc = wk[r * k] * Yl[(long long)qk[r * k] * C + c];
        for (int j = 1; j < m; ++j)
            acc = acc + wk[r * k + j] * Yl[(long long)qk[r * k + j] * C + c];
        const double pred = acc * (1.0 / wsk[r]);
        const double x = pred - mean, yv = Yl[qo * C + c] - mean;
        n = n + 1.0; s1 = s1 + x; s2 = s2 + yv; s3 = s3 + x * x; s4 = s4 + yv * yv;
        s5 = s5 + x * yv;
    }
    rho[li * C + c] = cnt > 0 ? xmap_rho(n, s1, s2, s3, s4, s5) : CUDART_NAN;
}
"""

_TB = 128  # threads per block: columns of one library


def xmap_pair_skill(idx, dist, Y, k: int, Tp: int, pred_t, pred_ok):
    """rho (nL, C) on the device (module docstring)."""
    import cupy as cp

    Y = cp.ascontiguousarray(cp.asarray(Y, dtype=cp.float64))
    nL, T, C = Y.shape
    idx = cp.ascontiguousarray(cp.asarray(idx).astype(cp.int32, copy=False))
    dist = cp.ascontiguousarray(cp.asarray(dist, dtype=cp.float64))
    P, depth = idx.shape[1], idx.shape[2]
    rho = cp.full((nL, C), cp.nan, cp.float64)
    if nL == 0 or C == 0 or P == 0 or k < 1:
        return rho
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
    fn = _module(("xmap_pair_sums",), _SOURCE).get_function("xmap_pair_sums")
    fn(((C + _TB - 1) // _TB, nL), (_TB,),
       (Y, i64(T), i64(C), i64(P), i64(k), i64(Tp), pt, pok, qk, wk, mk, wsk, rho))
    return rho
