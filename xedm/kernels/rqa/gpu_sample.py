"""The sampled pair distances of :func:`xedm.recurrence.threshold.eps_for_recurrence_rate` on
the GPU (imported only for ``backend="gpu"``).

One thread per pair and channel sums the channel's coordinates in the order of ``cvar``
(the CPU's :func:`xedm.kernels.rqa.cpu.pair_distances`, ``_distances``), in float64 without
fused multiply-adds (``--fmad=false``), and takes the correctly rounded square root for the
Euclidean norm: every distance, and so the eps chosen from them, equals the CPU's bit for
bit.  The pairs are drawn on the host (the same generator, the same draws).
"""

from __future__ import annotations

import numpy as np

_SRC = r"""
extern "C" __global__ void rqa_pair_dist(const double* __restrict__ X,
    const double* __restrict__ Y, const long long ldx, const long long ldy,
    const long long* __restrict__ cvar, const long long* __restrict__ coff,
    const long long* __restrict__ cchan, const int nc, const int nch, const int norm,
    const long long arow, const long long astart, const long long brow,
    const long long bstart, const long long* __restrict__ pi,
    const long long* __restrict__ pj, const long long n, double* __restrict__ out)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n * nch) return;
    const long long p = t / nch;
    const int ch = (int)(t - p * nch);
    const long long i = pi[p], j = pj[p];
    double a = 0.0;
    for (int c = 0; c < nc; ++c) {
        if (cchan[c] != ch) continue;
        const double xa = X[(arow + cvar[c]) * ldx + astart + i + coff[c]];
        const double yb = Y[(brow + cvar[c]) * ldy + bstart + j + coff[c]];
        if (norm == 0) { const double d = xa - yb; a = a + d * d; }
        else if (norm == 1) { const double d = fabs(xa - yb); if (d > a) a = d; }
        else { a = a + fabs(xa - yb); }
    }
    out[t] = norm == 0 ? sqrt(a) : a;
}
"""

_CACHE: dict = {}


def pair_distances(X, Y, cvar, coff, cchan, nch, norm, row, pi, pj):
    """``(pi.size, nch)`` float64 distances of the state pairs ``(pi[n], pj[n])`` of the
    matrix ``row`` (as the CPU kernel takes them), on the current GPU."""
    import cupy as cp

    dev = cp.cuda.Device().id
    fn = _CACHE.get(dev)
    if fn is None:
        fn = _CACHE[dev] = cp.RawModule(code=_SRC, options=("--fmad=false",)).get_function(
            "rqa_pair_dist")
    arow, astart, _na, brow, bstart, _nb = (int(v) for v in np.asarray(row).ravel()[:6])
    dX = cp.asarray(np.ascontiguousarray(X, np.float64))
    dY = dX if Y is X else cp.asarray(np.ascontiguousarray(Y, np.float64))
    n = int(pi.size)
    out = cp.empty((n, int(nch)), cp.float64)
    total = n * int(nch)
    if total:
        i64 = [cp.asarray(np.ascontiguousarray(a, np.int64)) for a in (cvar, coff, cchan, pi, pj)]
        threads = 256
        fn(((total + threads - 1) // threads,), (threads,),
           (dX, dY, np.int64(X.shape[1]), np.int64(Y.shape[1]), i64[0], i64[1], i64[2],
            np.int32(len(cvar)), np.int32(nch), np.int32(norm), np.int64(arow),
            np.int64(astart), np.int64(brow), np.int64(bstart), i64[3], i64[4], np.int64(n),
            out))
    return out.get()
