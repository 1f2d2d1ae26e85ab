"""S-map's one-thread-per-problem QR on the GPU (CuPy), for :mod:`xedm.kernels.smap.gpu`.

Imported only for ``backend="gpu"``.  One thread per problem (series, prediction row, theta)
builds the weighted design matrix ``diag(w) [1, X]`` and target (with the ridge rows) in
device memory, laid out so that the threads of a warp read consecutive addresses, and
reduces it by the CPU's Householder QR, step for step (the same reflections, the same
power-of-2 rescaling of a Householder vector whose squares could under- or overflow).  It
serves the problems the tall-skinny kernel (:func:`xedm.kernels.smap.gpu.smap_qr_tsqr`)
flags, and those with more than 32 unknowns; the factors are finished as the tall-skinny
kernel's are.
"""

from __future__ import annotations

import numpy as np

from ..knn.gpu import _module
from .constants import LOG_BIG

# the ridge rows' weight, both S-map kernels' twin of xedm.kernels.smap.cpu_qr.ridge_weight
# (the same expressions in the same order; LOG_BIG written in from the constants module)
RIDGE_WEIGHT = r"""
__device__ __forceinline__ double ridge_weight(const double alpha, const double lf,
                                               const long long xexp) {
    const double la = 0.5 * log(alpha);
    const double lra = la + lf - xexp * log(2.0);
    if (lra > """ + repr(LOG_BIG) + r""") return exp(""" + repr(LOG_BIG) + r""");
    if (la < 300.0 && lf < 300.0) return ldexp(sqrt(alpha) * exp(lf), (int)-xexp);
    return exp(lra);
}
"""

# the parameters of a batch of S-map problems that both S-map kernels take (smap_qr here,
# smap_tsqr in smap/gpu.py) after the series' layout; :func:`problem_args` fills them
PROBLEM_PARAMS = r"""
    const long long pad, const unsigned char* __restrict__ lib_ok, const long long T,
    const long long* __restrict__ pred_t, const long long P, const double* __restrict__ y,
    const long long E, const long long tau, const long long Tp,
    const double* __restrict__ thetas, const long long excl,
    const long long* __restrict__ q_lo, const long long* __restrict__ q_hi,
    const long long* __restrict__ idx, const double* __restrict__ dist,
    const long long depth, const int use_table, const double alpha,
    const long long* __restrict__ xexp, const long long* __restrict__ prob_b,
    const long long* __restrict__ prob_pi, const long long* __restrict__ prob_it,"""

_SOURCE = (r"""
#include <math_constants.h>
""" + RIDGE_WEIGHT + r"""
__device__ __forceinline__ int pow2_exponent(double m) {
    if (m > 0.0 && m < CUDART_INF) { int e; frexp(m, &e); return e > -1021 ? e : -1021; }
    return 0;
}

// Entry j of a problem's neighbour list, for both passes of smap_qr: the table's entry j
// (use_table; -1 at the end of the row) or library time j with its distance summed in the
// kernels' order (0 when j is no library point for p).  Its library time in *q, its
// distance in *d; 1 for a neighbour.
__device__ __forceinline__ int neighbour(
    const long long j, const int use_table, const long long* __restrict__ idx,
    const double* __restrict__ dist, const long long row,
    const unsigned char* __restrict__ lib_b, const long long p, const long long excl,
    const double* __restrict__ xb, const long long C, const long long E, const long long W,
    const long long tau, long long* q, double* d)
{
    if (use_table) {
        *q = idx[row + j];
        if (*q < 0) return -1;
        *d = dist[row + j];
        return 1;
    }
    *q = j;
    if (!lib_b[j] || (j - p <= excl && p - j <= excl)) return 0;
    double s = 0.0;
    for (long long c = 0; c < C; ++c)
        for (long long e = 0; e < E; ++e) {
            const double diff = xb[c * W + p - e * tau] - xb[c * W + j - e * tau];
            s = s + diff * diff;
        }
    *d = sqrt(s);
    return 1;
}

#define A(col, row) S[((long long)(col) * RM + (row)) * NP + prob]

extern "C" __global__ void smap_qr(
    const double* __restrict__ X, const long long B, const long long C, const long long W,"""
           + PROBLEM_PARAMS + r"""
    const long long NP, const long long RM, double* __restrict__ S,
    double* __restrict__ R, double* __restrict__ info)
{
    const long long prob = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (prob >= NP) return;
    const long long b = prob_b[prob], pi = prob_pi[prob];
    const double theta = thetas[prob_it[prob]];
    const long long p = pred_t[pi];
    const long long D = C * E, nc = D + 1;
    const double* xb = X + b * C * W + pad;
    // pass 1: how many neighbours, their mean and smallest distance
    long long m = 0;
    double dmean = 0.0, dmin = CUDART_INF;
    const long long lo = use_table ? 0 : q_lo[b], hi = use_table ? depth : q_hi[b];
    const long long row = (b * P + pi) * depth;
    const unsigned char* lib_b = lib_ok + b * T;
    for (long long j = lo; j < hi; ++j) {
        long long q;
        double d;
        const int got = neighbour(j, use_table, idx, dist, row, lib_b, p, excl, xb, C, E, W,
                                  tau, &q, &d);
        if (got < 0) break;
        if (got == 0) continue;
        dmean = dmean + d;
        dmin = fmin(dmin, d);
        ++m;
    }
    double* inf = info + prob * 4;
    inf[0] = (double)m;
    if (m == 0) return;
    dmean = dmean / m;
    const bool local = theta != 0.0 && dmean != 0.0;
    // pass 2: the weighted rows (the same neighbours in the same order)
    long long r = 0;
    for (long long j = lo; j < hi; ++j) {
        long long q;
        double d;
        const int got = neighbour(j, use_table, idx, dist, row, lib_b, p, excl, xb, C, E, W,
                                  tau, &q, &d);
        if (got < 0) break;
        if (got == 0) continue;
        const double w = local ? exp(-theta * (d - dmin) / dmean) : 1.0;
        A(0, r) = w;
        for (long long c = 0; c < C; ++c)
            for (long long e = 0; e < E; ++e)
                A(1 + c * E + e, r) = w * xb[c * W + q - e * tau];
        A(nc, r) = w * y[b * T + q + Tp];
        ++r;
    }
    const double lf = local ? theta * dmin / dmean : 0.0;
    const long long nridge = alpha > 0.0 ? D : 0;
    if (nridge > 0) {
        const double ra = ridge_weight(alpha, lf, xexp[b]);
        for (long long rr = 0; rr < nridge; ++rr) {
            for (long long cc = 0; cc <= nc; ++cc) A(cc, m + rr) = 0.0;
            A(1 + rr, m + rr) = ra;
        }
    }
    const long long rows = m + nridge;
    inf[1] = dmin; inf[2] = dmean; inf[3] = lf;
    if (rows < nc) return;  // the host hands these to the CPU kernel
    // Householder QR of the design, the target (column nc) reflected along
    for (long long j = 0; j < nc; ++j) {
        const long long n = rows - j;
        double norm = 0.0;
        for (long long i = 0; i < n; ++i) { const double v = A(j, j + i); norm = norm + v * v; }
        int ev = 0;
        if (!(norm > 0x1p-900 && norm < 0x1p+900)) {
            double mx = 0.0;
            for (long long i = 0; i < n; ++i) mx = fmax(mx, fabs(A(j, j + i)));
            ev = pow2_exponent(mx);
            const double f = ldexp(1.0, -ev);
            for (long long i = 0; i < n; ++i) A(j, j + i) = A(j, j + i) * f;
            norm = 0.0;
            for (long long i = 0; i < n; ++i) { const double v = A(j, j + i); norm = norm + v * v; }
            if (norm == 0.0) continue;
        }
        norm = sqrt(norm);
        const double v0old = A(j, j);
        const double al = v0old >= 0 ? -norm : norm;
        const double v0 = v0old - al;
        const double vnorm2 = v0 * v0 + (norm * norm - v0old * v0old);
        A(j, j) = v0;
        if (vnorm2 > 0.0) {
            for (long long cc = j + 1; cc <= nc; ++cc) {
                double dot = 0.0;
                for (long long i = 0; i < n; ++i) dot = dot + A(j, j + i) * A(cc, j + i);
                const double f = 2.0 * dot / vnorm2;
                for (long long i = 0; i < n; ++i) A(cc, j + i) = A(cc, j + i) - f * A(j, j + i);
            }
        }
        A(j, j) = ldexp(al, ev);
    }
    // R (nc x nc, upper) and Q^T b (first nc entries): R[prob] is (nc, nc + 1)
    double* Rp = R + prob * nc * (nc + 1);
    for (long long i = 0; i < nc; ++i)
        for (long long cc = 0; cc <= nc; ++cc)
            Rp[i * (nc + 1) + cc] = (cc == nc || cc >= i) ? A(cc, i) : 0.0;
}
""")


_SCRATCH = 4 << 30  # bytes of design matrices in flight


def problem_args(dev, shape, pad, E, tau, Tp, excl, depth, use_table, alpha, pb, ppi, pit):
    """The arguments of :data:`PROBLEM_PARAMS` for the problems (pb, ppi, pit): (series,
    prediction row, theta) indices; ``dev`` the device arrays both kernels read."""
    import cupy as cp

    _, _, _, T, P = shape
    i64 = np.int64
    return (i64(pad), dev["lib"], i64(T), dev["pt"], i64(P), dev["y"], i64(E), i64(tau),
            i64(Tp), dev["th"], i64(excl), dev["qlo"], dev["qhi"], dev["idx"], dev["dist"],
            i64(depth), np.int32(bool(use_table)), np.float64(alpha), dev["xexp"],
            cp.asarray(pb), cp.asarray(ppi), cp.asarray(pit))


def smap_qr_thread(dev, shape, pad, E, tau, Tp, excl, q_lo, q_hi, depth, use_table, alpha,
                   pb, ppi, pit):
    """Factors of the problems (pb, ppi, pit) by ``smap_qr``'s one thread per problem (the
    CPU's QR step for step, with its rescaling): as :func:`smap_qr_tsqr` (info's last column
    0)."""
    import cupy as cp

    B, C, W, T, P = shape
    nc = C * int(E) + 1
    n = len(pb)
    nridge = nc - 1 if alpha > 0.0 else 0
    if use_table:
        RM = depth + nridge
    else:
        RM = int((np.asarray(q_hi) - np.asarray(q_lo)).max()) + nridge
    RM = max(RM, 1)
    i64 = np.int64
    R = cp.zeros((n, nc, nc + 1), cp.float64)
    info = cp.zeros((n, 5), cp.float64)
    kern = _module(("smap",), _SOURCE).get_function("smap_qr")
    chunk = int(max(1, min(max(n, 1), _SCRATCH // (8 * (nc + 1) * RM))))
    for s0 in range(0, n, chunk):
        sl = slice(s0, min(n, s0 + chunk))
        k = sl.stop - sl.start
        S = cp.empty((nc + 1) * RM * k, cp.float64)
        Rd = cp.zeros((k, nc, nc + 1), cp.float64)
        inf = cp.zeros((k, 4), cp.float64)
        kern(((k + 127) // 128,), (128,),
             (dev["X"], i64(B), i64(C), i64(W))
             + problem_args(dev, shape, pad, E, tau, Tp, excl, depth, use_table, alpha,
                            pb[sl], ppi[sl], pit[sl])
             + (i64(k), i64(RM), S, Rd, inf))
        del S
        R[sl] = Rd
        info[sl, :4] = inf
    return R, info
