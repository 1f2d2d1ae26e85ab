"""The surrogate null of a cross map, summarised on the GPU (CuPy): the twin of
:mod:`xedm.kernels.stats.null`.  Imported only for ``backend="gpu"``::

    xmap_null_summary(r, c0, nj, n_sur, quantiles, keep_null) -> {name: (nL, nj, ...)}

``r``: xmap's lookups left on the device (:func:`xedm.kernels.cross.gpu_xmap.
xmap_skill_groups_device`), one group of targets at columns ``c0 .. c0 + nj`` followed by
their surrogates (target-major).  One thread per (library, target) pair counts the finite
surrogate rho and those at or above the observed one and takes the mean and sd (ddof 1) of
their Fisher z = atanh(clip(rho, -R_CLIP, R_CLIP)) (sums in the surrogates' order, the host's
pairwise: they differ by rounding, about 1e-16 relative); the quantiles (only when asked)
come from a sort of each pair's finite surrogate rho and numpy's "linear" rule, its
interpolation written as numpy's ``_lerp`` (no fused multiply-add: the host's values exactly).
Only the summaries travel to the host, in one copy (and ``rho_null`` with ``keep_null``).
"""

from __future__ import annotations

import numpy as np

from ..knn.gpu import _module
from .null import R_CLIP

_SOURCE = r"""
#include <math_constants.h>
#define R_CLIP """ + repr(R_CLIP) + r"""

// one thread per (library li, target j) of the group: out (5, nL, nj) holds rho, the count of
// finite surrogate rho >= rho, the count of finite ones, the mean and sd of their atanh
extern "C" __global__ void xmap_null(
    const double* __restrict__ r, const long long ncol, const long long nL,
    const long long c0, const long long nj, const long long ns, double* __restrict__ out)
{
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long M = nL * nj;
    if (p >= M) return;
    const long long li = p / nj, j = p % nj;
    const double* row = r + li * ncol;
    const double obs = row[c0 + j];
    const double* nul = row + c0 + nj + j * ns;
    double ge = 0.0, nf = 0.0, sz = 0.0;
    for (long long s = 0; s < ns; ++s) {
        const double v = nul[s];
        if (!isfinite(v)) continue;
        nf = nf + 1.0;
        if (v >= obs) ge = ge + 1.0;
        sz = sz + atanh(fmin(fmax(v, -R_CLIP), R_CLIP));
    }
    double zm = CUDART_NAN, zs = CUDART_NAN;
    if (nf > 1.0) {
        zm = sz / nf;
        double ss = 0.0;
        for (long long s = 0; s < ns; ++s) {
            const double v = nul[s];
            if (!isfinite(v)) continue;
            const double d = atanh(fmin(fmax(v, -R_CLIP), R_CLIP)) - zm;
            ss = ss + d * d;
        }
        zs = sqrt(fmax(ss / (nf - 1.0), 0.0));
    }
    out[p] = obs;
    out[M + p] = ge;
    out[2 * M + p] = nf;
    out[3 * M + p] = zm;
    out[4 * M + p] = zs;
}

// numpy's "linear" quantiles of each row's n[p] finite values, sorted first in srt (M, ns)
extern "C" __global__ void null_quantiles(
    const double* __restrict__ srt, const long long* __restrict__ n, const double* __restrict__ qs,
    const long long M, const long long ns, const long long nq, double* __restrict__ out)
{
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= M * nq) return;
    const long long p = e / nq, iq = e % nq;
    const long long m = n[p];
    if (m == 0) { out[e] = CUDART_NAN; return; }
    const double v = (double)(m - 1) * qs[iq];   // the virtual index
    const double lo = floor(v);
    long long a = (long long)lo, b = a + 1;
    if (v >= (double)(m - 1)) { a = m - 1; b = m - 1; }
    const double t = v - lo;
    const double x = srt[p * ns + a], y = srt[p * ns + b];
    const double diff = y - x;
    out[e] = t >= 0.5 ? y - diff * (1.0 - t) : x + diff * t;
}
"""


def _kernel(name):
    return _module(("null_summary",), _SOURCE).get_function(name)


def xmap_null_summary(r, c0: int, nj: int, n_sur: int, quantiles, keep_null=False) -> dict:
    """One group of targets of xmap's lookups ``r`` (a CuPy array (nL, columns)), summarised
    on the device (module doc); host (NumPy) arrays, as the CPU's
    :func:`xedm.kernels.stats.null.xmap_null_summary`."""
    import cupy as cp

    r = cp.ascontiguousarray(cp.asarray(r, dtype=cp.float64))
    nL, ncol = r.shape
    c0, nj, ns = int(c0), int(nj), int(n_sur)
    if ns == 0:
        return {"rho": cp.asnumpy(r[:, c0:c0 + nj])}
    M = nL * nj
    i64 = np.int64
    res = cp.empty((5, nL, nj), cp.float64)
    if M:
        _kernel("xmap_null")(((M + 255) // 256,), (256,),
                             (r, i64(ncol), i64(nL), i64(c0), i64(nj), i64(ns), res))
    h = res.get()
    out = {"rho": h[0], "count_ge": h[1].astype(np.int64), "n_null": h[2].astype(np.int64),
           "z_mean": h[3], "z_sd": h[4]}
    nq = len(quantiles)
    null = None
    if nq or keep_null:
        null = cp.ascontiguousarray(r[:, c0 + nj:c0 + nj * (1 + ns)]).reshape(M, ns)
    q = np.full((M, nq), np.nan)
    if nq and M:
        fin = cp.isfinite(null)
        srt = cp.ascontiguousarray(cp.sort(cp.where(fin, null, cp.inf), axis=1))
        cnt = cp.ascontiguousarray(fin.sum(axis=1).astype(cp.int64))
        qd = cp.empty((M, nq), cp.float64)
        _kernel("null_quantiles")(((M * nq + 255) // 256,), (256,),
                                  (srt, cnt, cp.asarray(np.asarray(quantiles, np.float64)),
                                   i64(M), i64(ns), i64(nq), qd))
        q = qd.get()
    out["null_q"] = q.reshape(nL, nj, nq)
    if keep_null:
        out["rho_null"] = null.get().reshape(nL, nj, ns)
    return out
