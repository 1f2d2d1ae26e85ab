"""Sampled cross mapping on the GPU (CuPy): twins of
:func:`xedm.kernels.cross.cpu_ccm.sorted_table` and :func:`xedm.kernels.cross.cpu_ccm.ccm_skill`.

Imported only for ``backend="gpu"``.  Same signatures and semantics as the CPU kernels::

    sorted_table(Xpad, pad, lib_ok, pred_t, pred_ok, E, tau, excl, depth) -> idx, dist
    ccm_skill(idx, dist, members, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t,
              complete) -> rho (n_sets, n_targets)

The all-pairs cross map's lookups (``xmap_skill``) are in :mod:`xedm.kernels.cross.gpu_xmap`.
"""

from __future__ import annotations

import numpy as np

from ..knn.gpu import _module
from ..predict.constants import D_MIN

# ---- sorted_table: the depth nearest library points of every row, exactly ordered ---------

_SORT_SOURCE = r"""
#include <math_constants.h>

// squared distances of rows r0 .. r0 + R - 1 to the candidates in the order of rising
// (|q - p|, q): position j holds q = p - (j + 1) / 2 for odd j, p + j / 2 for even j; inf
// where q is outside the data, no library point or within the exclusion radius
extern "C" __global__ void zigzag_d2(
    const double* __restrict__ X, const long long W, const long long pad,
    const unsigned char* __restrict__ lib_ok, const long long* __restrict__ pred_t,
    const long long r0, const long long R, const long long T, const long long J,
    const long long C, const long long E, const long long tau, const long long excl,
    double* __restrict__ out)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long r = blockIdx.y;
    if (j >= J || r >= R) return;
    const long long p = pred_t[r0 + r];
    const long long a = (j + 1) / 2;
    const long long q = (j & 1) ? p - a : p + a;
    double acc = CUDART_INF;
    if (q >= 0 && q < T && a > excl && lib_ok[q]) {
        acc = 0.0;
        for (long long e = 0; e < E; ++e)
            for (long long c = 0; c < C; ++c) {
                const double d = X[c * W + pad + p - e * tau] - X[c * W + pad + q - e * tau];
                acc = acc + d * d;
            }
    }
    out[r * J + j] = acc;
}
"""

_SMALL_DEPTH = 64  # up to this depth the fused kNN kernel, else sorting whole rows


def sorted_table(Xpad, pad, lib_ok, pred_t, pred_ok, E, tau, excl, depth):
    """The ``depth`` nearest library points of every prediction row, ordered by (distance,
    |dt|, t): idx, dist (P, depth), NumPy arrays (see
    :func:`xedm.kernels.cross.cpu_ccm.sorted_table`; ``Xpad`` (C, pad + T)).

    Shallow tables come from the fused kNN kernel (:func:`xedm.kernels.knn.gpu.knn_device`);
    deep ones from whole rows of squared distances laid out in (|dt|, t) order and sorted
    stably by distance (CuPy's sort is a stable radix sort), in tiles of rows.
    """
    import cupy as cp

    from ..knn.gpu import knn_device

    Xpad = np.asarray(Xpad) if not hasattr(Xpad, "__cuda_array_interface__") else Xpad
    T = int(lib_ok.shape[0])
    P = int(len(pred_t))
    depth = int(depth)
    if depth <= _SMALL_DEPTH or P == 0:
        idx, dist = knn_device(Xpad[None], pad, lib_ok[None, None], pred_t,
                               pred_ok[None, None], [int(E)], [depth], tau, excl,
                               np.zeros(1, np.int64), np.full(1, T, np.int64))
        return idx[0, 0].get(), dist[0, 0].get()
    X = cp.ascontiguousarray(cp.asarray(Xpad, dtype=cp.float64))
    C, W = X.shape
    lib = cp.ascontiguousarray(cp.asarray(lib_ok).astype(cp.uint8, copy=False))
    pt = cp.ascontiguousarray(cp.asarray(pred_t, dtype=cp.int64))
    ok = np.asarray(pred_ok if not hasattr(pred_ok, "get") else pred_ok.get(), bool)
    J = 2 * T + 1
    rows = max(1, min(P, (256 << 20) // (8 * J)))  # distance tile under 256 MiB
    kern = _module(("zigzag",), _SORT_SOURCE).get_function("zigzag_d2")
    idx = np.full((P, depth), -1, np.int64)
    dist = np.full((P, depth), np.inf)
    i64 = np.int64
    nd = min(depth, J)
    for r0 in range(0, P, rows):
        R = min(rows, P - r0)
        d2 = cp.empty((R, J), cp.float64)
        kern(((J + 255) // 256, R), (256,),
             (X, i64(W), i64(pad), lib, pt, i64(r0), i64(R), i64(T), i64(J), i64(C), i64(E),
              i64(tau), i64(excl), d2))
        order = cp.argsort(d2, axis=1)[:, :nd]  # stable: equal distances stay in (|dt|, t)
        dd = cp.take_along_axis(d2, order, axis=1)
        a = (order + 1) // 2
        q = cp.where(order % 2 == 1, pt[r0:r0 + R, None] - a, pt[r0:r0 + R, None] + a)
        fin = cp.isfinite(dd)
        idx[r0:r0 + R, :nd] = cp.where(fin, q, -1).get()
        dist[r0:r0 + R, :nd] = cp.sqrt(dd).get()
    idx[~ok] = -1
    dist[~ok] = np.inf
    return idx, dist


# ---- ccm_skill: sampled-library cross-map skill, Pearson sums on the fly ------------------

def _ccm_source(k):
    from ..knn.gpu import _COMMON

    return f"#include <math_constants.h>\n#define K {int(k)}\n" + _COMMON + r"""
// partial Pearson sums (n, sx, sy, sxx, syy, sxy) of (subset s, target t) over the rows of
// chunk c: part (nch, nS, nT, 6)
extern "C" __global__ void ccm_sums(
    const long long* __restrict__ idx, const double* __restrict__ dist, const long long P,
    const long long depth, const unsigned char* __restrict__ members, const long long nS,
    const long long T, const double* __restrict__ Ys, const unsigned char* __restrict__ obs_ok,
    const long long nT, const long long Tp, const double* __restrict__ X, const long long W,
    const long long pad, const long long C, const long long E, const long long tau,
    const long long excl, const long long* __restrict__ pred_t, const int complete,
    const long long nch, double* __restrict__ part)
{
    const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long t = blockIdx.y;
    const long long ch = blockIdx.z;
    if (s >= nS) return;
    const unsigned char* mem = members + s * T;
    const double* ys = Ys + t * T;
    double n = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0;
    int nb[K];
    double nd[K];
    for (long long pi = (P * ch) / nch; pi < (P * (ch + 1)) / nch; ++pi) {
        if (idx[pi * depth] < 0 || !obs_ok[t * P + pi]) continue;
        const long long p = pred_t[pi];
        int m = 0;
        for (long long j = 0; j < depth && m < K; ++j) {
            const long long q = idx[pi * depth + j];
            if (q < 0) break;
            if (mem[q]) { nb[m] = (int)q; nd[m] = dist[pi * depth + j]; ++m; }
        }
        if (m < K && !complete) {  // the table is too shallow for this subset: a scan
            for (int j = 0; j < K; ++j) { nb[j] = -1; nd[j] = CUDART_INF; }
            for (long long q = 0; q < T; ++q) {
                const long long dq = q - p;
                if (!mem[q] || (dq <= excl && dq >= -excl)) continue;
                double acc = 0.0;
                for (long long e = 0; e < E; ++e)
                    for (long long c = 0; c < C; ++c) {
                        const double d = X[c * W + pad + p - e * tau]
                                         - X[c * W + pad + q - e * tau];
                        acc = acc + d * d;
                    }
                insert(nd, nb, K, acc, (int)q, p);
            }
            m = 0;
            for (int j = 0; j < K; ++j)
                if (nb[j] >= 0) { nd[j] = sqrt(nd[j]); ++m; }
        }
        if (m == 0) continue;  // no library point for this row in this subset
        const double dmin = fmax(nd[0], """ + repr(D_MIN) + r""");
        double w = exp(-nd[0] / dmin);
        double wsum = w, acc = w * ys[nb[0] + Tp];
        for (int j = 1; j < m; ++j) {
            w = exp(-nd[j] / dmin);
            wsum = wsum + w;
            acc = acc + w * ys[nb[j] + Tp];
        }
        const double x = acc / wsum, y = ys[p + Tp];
        n = n + 1.0; s1 = s1 + x; s2 = s2 + y; s3 = s3 + x * x; s4 = s4 + y * y;
        s5 = s5 + x * y;
    }
    double* o = part + ((ch * nS + s) * nT + t) * 6;
    o[0] = n; o[1] = s1; o[2] = s2; o[3] = s3; o[4] = s4; o[5] = s5;
}

extern "C" __global__ void ccm_rho(const double* __restrict__ part, const long long nch,
                                   const long long R, double* __restrict__ rho)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    double v[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (long long c = 0; c < nch; ++c)
        for (int i = 0; i < 6; ++i) v[i] = v[i] + part[(c * R + r) * 6 + i];
    double out = CUDART_NAN;
    const double n = v[0];
    if (n >= 3) {
        const double cxx = v[3] - v[1] * v[1] / n, cyy = v[4] - v[2] * v[2] / n;
        const double cxy = v[5] - v[1] * v[2] / n;
        if (cxx > 0.0 && cyy > 0.0) out = cxy / (sqrt(cxx) * sqrt(cyy));
    }
    rho[r] = out;
}
"""


def _pow2_exponent(m):
    m = np.asarray(m, float)
    ok = (m > 0) & np.isfinite(m)
    return np.where(ok, np.maximum(np.frexp(np.where(ok, m, 1.0))[1], -1021), 0)


def scaled_targets(Y, obs_t, obs_ok):
    """Each target on a footing independent of its unit, as
    :func:`xedm.kernels.cross.cpu_ccm._scaled_target`: ``(y 2^-a - mean) 2^-b`` with the mean over
    the observed rows; Pearson's rho is invariant to it."""
    Y = np.asarray(Y, float)
    out = np.empty_like(Y)
    for t in range(Y.shape[0]):
        y = Y[t]
        fin = np.isfinite(y)
        f = np.ldexp(1.0, -int(_pow2_exponent(np.abs(y[fin]).max(initial=0.0))))
        rows = obs_t[obs_ok[t]]
        m = float(np.sum(y[rows] * f)) / len(rows) if len(rows) else 0.0
        v = y * f - m
        fv = np.isfinite(v)
        out[t] = v * np.ldexp(1.0, -int(_pow2_exponent(np.abs(v[fv]).max(initial=0.0))))
    return out


_SUM_THREADS = 1 << 16  # (subsets x targets x row chunks) per launch, at least


def ccm_skill(idx, dist, members, Y, obs_ok, k, Tp, Xpad, pad, E, tau, excl, pred_t, complete):
    """Cross-map skill for every library subset (row of ``members``) and target (row of
    ``Y``): rho (n_sets, n_targets), a NumPy array (see
    :func:`xedm.kernels.cross.cpu_ccm.ccm_skill`).

    One thread per (subset, target, chunk of rows): per row it takes the first k entries of
    the sorted table that are members of the subset (a scan of the series when the table is
    too shallow and ``complete`` is False), predicts the target and adds to the Pearson sums
    of its chunk; a second kernel adds the chunks in order and computes rho.
    """
    import cupy as cp

    idx_h = np.asarray(idx)
    P, depth = idx_h.shape
    nS, T = np.shape(members)
    nT = np.shape(Y)[0]
    rho = np.full((nS, nT), np.nan)
    if nS == 0 or nT == 0 or P == 0:
        return rho
    pred_t = np.asarray(pred_t, np.int64)
    obs_ok = np.asarray(obs_ok, bool)
    Ys = scaled_targets(Y, pred_t + Tp, obs_ok)
    nch = int(max(1, min(P, -(-_SUM_THREADS // (nS * nT)))))
    part = cp.empty((nch, nS, nT, 6), cp.float64)
    X = cp.ascontiguousarray(cp.asarray(Xpad, dtype=cp.float64))
    if X.ndim == 1:
        X = X[None]
    C, W = X.shape
    i64 = np.int64
    mod = _module(("ccm_skill", int(k)), _ccm_source(k))
    mod.get_function("ccm_sums")(
        ((nS + 127) // 128, nT, nch), (128,),
        (cp.ascontiguousarray(cp.asarray(idx_h, dtype=cp.int64)),
         cp.ascontiguousarray(cp.asarray(dist, dtype=cp.float64)), i64(P), i64(depth),
         cp.ascontiguousarray(cp.asarray(members).astype(cp.uint8)), i64(nS), i64(T),
         cp.ascontiguousarray(cp.asarray(Ys)),
         cp.ascontiguousarray(cp.asarray(obs_ok).astype(cp.uint8)), i64(nT), i64(Tp), X,
         i64(W), i64(pad), i64(C), i64(E), i64(tau), i64(excl), cp.asarray(pred_t),
         np.int32(bool(complete)), i64(nch), part))
    out = cp.empty(nS * nT, cp.float64)
    R = nS * nT
    mod.get_function("ccm_rho")(((R + 255) // 256,), (256,), (part, i64(nch), i64(R), out))
    return out.get().reshape(nS, nT)
