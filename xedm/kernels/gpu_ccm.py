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
        for (int j = 1; j < m; ++j)
            acc = acc + wk[r * k + j] * Yt[(long long)qk[r * k + j] * nT + t];
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
    :func:`xedm.kernels.cpu_ccm.sorted_table`; ``Xpad`` (C, pad + T)).

    Shallow tables come from the fused kNN kernel (:func:`xedm.kernels.gpu_knn.knn_device`);
    deep ones from whole rows of squared distances laid out in (|dt|, t) order and sorted
    stably by distance (CuPy's sort is a stable radix sort), in tiles of rows.
    """
    import cupy as cp

    from .gpu_knn import knn_device

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
    from .gpu_knn import _COMMON

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
        const double dmin = fmax(nd[0], 1e-6);
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
    :func:`xedm.kernels.cpu_ccm._scaled_target`: ``(y 2^-a - mean) 2^-b`` with the mean over
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
    :func:`xedm.kernels.cpu_ccm.ccm_skill`).

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
