"""Cross-mapping kernels on the GPU (CuPy): the twin of
:func:`xedm.kernels.cpu_ccm.xmap_skill`.

Imported only for ``backend="gpu"``.  Same signature and semantics as the CPU kernel::

    xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok) -> rho (nL, nT)

with ``idx``/``dist`` (nL, P, depth) the tables of nL library series, ``Yt`` (T, nT) the
targets as columns and ``pred_ok`` (nL, P).  Per row and target the first k table entries
whose target value is finite are used; Pearson is accumulated on the fly (no prediction
matrix is stored).  A first kernel finds, per (library, row), the first k entries whose
target index is inside the data and their simplex weights (shared by every target); a second
gives one thread to each (library, target) pair: a pass over the rows for the target's mean,
then one for the shifted Pearson sums.  A thread reads the same row entries as the other
threads of its block (broadcast) and its own target column (coalesced across the block).  A
target with a non-finite value among a row's shared entries scans that row's table itself,
as the CPU does.  The sums are those of the CPU in the same order, without fused
multiply-adds; rho differs from the CPU's by the rounding of ``exp`` only (about 1e-15).
"""

from __future__ import annotations

import numpy as np

from .gpu_knn import _module

_SOURCE = r"""
#include <math_constants.h>

extern "C" __global__ void xmap_rows(
    const long long* __restrict__ idx, const double* __restrict__ dist, const long long R,
    const long long depth, const long long k, const long long T, const long long Tp,
    int* __restrict__ qk, double* __restrict__ wk, int* __restrict__ mk,
    double* __restrict__ wsk)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    long long m = 0;
    double dmin = 1e-6;
    for (long long j = 0; j < depth; ++j) {
        const long long q = idx[r * depth + j];
        if (q < 0) break;
        if (q + Tp < 0 || q + Tp >= T) continue;
        const double d = dist[r * depth + j];
        if (m == 0) dmin = fmax(d, 1e-6);
        qk[r * k + m] = (int)(q + Tp);
        wk[r * k + m] = exp(-d / dmin);
        m += 1;
        if (m == k) break;
    }
    double s = 0.0;
    for (long long j = 0; j < m; ++j) s = s + wk[r * k + j];
    mk[r] = (int)m;
    wsk[r] = m > 0 ? s : 1.0;
}

extern "C" __global__ void xmap_sums(
    const long long* __restrict__ idx, const double* __restrict__ dist,
    const double* __restrict__ Yt, const long long T, const long long nT, const long long P,
    const long long depth, const long long k, const long long Tp,
    const long long* __restrict__ pred_t, const unsigned char* __restrict__ pred_ok,
    const int* __restrict__ qk, const double* __restrict__ wk, const int* __restrict__ mk,
    const double* __restrict__ wsk, const unsigned char* __restrict__ clean,
    double* __restrict__ rho)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long li = blockIdx.y;
    if (t >= nT) return;
    const unsigned char* okl = pred_ok + li * P;
    double mean = 0.0, cnt = 0.0;
    for (long long pi = 0; pi < P; ++pi) {
        const long long q = pred_t[pi] + Tp;
        if (okl[pi] && q >= 0 && q < T) {
            const double yv = Yt[q * nT + t];
            if (isfinite(yv)) { mean = mean + yv; cnt = cnt + 1.0; }
        }
    }
    if (cnt > 0) mean = mean / cnt;
    const bool is_clean = clean[t] != 0;
    double n = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0;
    for (long long pi = 0; pi < P; ++pi) {
        const long long r = li * P + pi;
        const long long qo = pred_t[pi] + Tp;
        const int m = mk[r];
        if (!okl[pi] || qo < 0 || qo >= T || m == 0) continue;
        double acc = wk[r * k] * Yt[(long long)qk[r * k] * nT + t];
        for (int j = 1; j < m; ++j) acc = acc + wk[r * k + j] * Yt[(long long)qk[r * k + j] * nT + t];
        const double yo = Yt[qo * nT + t];
        double pred;
        if (is_clean) {
            pred = acc * (1.0 / wsk[r]);
        } else {
            if (!isfinite(yo)) continue;
            if (isfinite(acc)) {
                pred = acc * (1.0 / wsk[r]);
            } else {  // a missing value among the shared entries: scan the row's table
                long long mm = 0;
                double dmin = 1e-6, a = 0.0, ws = 0.0;
                for (long long j = 0; j < depth; ++j) {
                    const long long q = idx[r * depth + j];
                    if (q < 0) break;
                    if (q + Tp < 0 || q + Tp >= T) continue;
                    const double yq = Yt[(q + Tp) * nT + t];
                    if (!isfinite(yq)) continue;
                    const double d = dist[r * depth + j];
                    if (mm == 0) dmin = fmax(d, 1e-6);
                    const double w = exp(-d / dmin);
                    a = a + w * yq;
                    ws = ws + w;
                    mm += 1;
                    if (mm == k) break;
                }
                if (mm == 0) continue;
                pred = a / ws;
            }
        }
        const double x = pred - mean, yv = yo - mean;
        n = n + 1.0; s1 = s1 + x; s2 = s2 + yv; s3 = s3 + x * x; s4 = s4 + yv * yv;
        s5 = s5 + x * yv;
    }
    double out = CUDART_NAN;
    if (cnt > 0 && n >= 3) {
        const double cxx = s3 - s1 * s1 / n, cyy = s4 - s2 * s2 / n, cxy = s5 - s1 * s2 / n;
        if (cxx > 0.0 && cyy > 0.0) out = cxy / (sqrt(cxx) * sqrt(cyy));
    }
    rho[li * nT + t] = out;
}
"""

_TB = 128  # targets per block


def _kernel(name):
    return _module(("ccm",), _SOURCE).get_function(name)


def xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok):
    """Cross-map skill of a batch of library tables for every target (see
    :func:`xedm.kernels.cpu_ccm.xmap_skill`): rho (nL, nT), a NumPy array."""
    import cupy as cp

    idx = cp.ascontiguousarray(cp.asarray(idx, dtype=cp.int64))
    dist = cp.ascontiguousarray(cp.asarray(dist, dtype=cp.float64))
    Y = cp.ascontiguousarray(cp.asarray(Yt, dtype=cp.float64))
    pt = cp.ascontiguousarray(cp.asarray(pred_t, dtype=cp.int64))
    pok = cp.ascontiguousarray(cp.asarray(pred_ok).astype(cp.uint8, copy=False))
    nL, P, depth = idx.shape
    T, nT = Y.shape
    k = int(k)
    rho = cp.full((nL, nT), cp.nan, cp.float64)
    if nL == 0 or nT == 0 or P == 0 or k < 1:
        return rho.get()
    i64 = np.int64
    R = nL * P
    qk = cp.zeros((R, k), cp.int32)
    wk = cp.zeros((R, k), cp.float64)
    mk = cp.zeros(R, cp.int32)
    wsk = cp.ones(R, cp.float64)
    _kernel("xmap_rows")(((R + 255) // 256,), (256,),
                         (idx, dist, i64(R), i64(depth), i64(k), i64(T), i64(Tp), qk, wk, mk,
                          wsk))
    # a target whose every value is finite takes the branch-free path (as the CPU's blocks)
    clean = cp.ascontiguousarray(cp.isfinite(Y).all(axis=0).astype(cp.uint8))
    _kernel("xmap_sums")(((nT + _TB - 1) // _TB, nL), (_TB,),
                         (idx, dist, Y, i64(T), i64(nT), i64(P), i64(depth), i64(k), i64(Tp),
                          pt, pok, qk, wk, mk, wsk, clean, rho))
    return rho.get()
