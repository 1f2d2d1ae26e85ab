"""The signed-rank statistics of the predictive conditioning on the GPU (CuPy): the twin of
``rank_stats`` in :mod:`xedm.kernels.predict.cpu_conditional`, same signature, CuPy arrays in
and out.

One block per row: |d| with its time sorted in shared memory (bitonic, ties by time: the
CPU's stable sort), then the signed-rank sums S and V (exact: sums of integers), the lag-1
autocorrelation of the signed ranks and the sums of |e| and d^2 (block sums: they differ
from the CPU's sequential sums by rounding only).  Rows of up to ``RANK_MAX`` times.
"""

from __future__ import annotations

import numpy as np

RANK_MAX = 16384  # longest row rank_stats sorts in shared memory
_CACHE: dict = {}

_SOURCE = r"""
__device__ __forceinline__ double block_sum(double v, double* scratch)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) scratch[w] = v;
    __syncthreads();
    double tot = 0.0;
    for (int u = 0; u < (int)(blockDim.x >> 5); ++u) tot += scratch[u];
    return tot;
}

__device__ __forceinline__ double diff_at(const double* __restrict__ a,
                                          const double* __restrict__ b, const long long t)
{   // |b| - |a| where both are finite, else 0
    const double e0 = b[t], e1 = a[t];
    return (isfinite(e0) && isfinite(e1)) ? fabs(e0) - fabs(e1) : 0.0;
}

extern "C" __global__ void rank_stats(
    const double* __restrict__ A, const long long lda, const long long* __restrict__ ra,
    const double* __restrict__ B, const long long ldb, const long long* __restrict__ rb,
    const long long* __restrict__ nn, const int NS, double* __restrict__ out)
{
    extern __shared__ double smem[];
    double* key = smem;                       // NS
    int* idx = (int*)(smem + NS);             // NS
    double* scratch = smem + NS + (NS + 1) / 2;  // 32
    const long long m = blockIdx.x;
    const long long n = nn[m];
    const double* a = A + ra[m] * lda;
    const double* b = B + rb[m] * ldb;
    double ab0 = 0.0, ab1 = 0.0, dd = 0.0, c = 0.0;
    for (int t = threadIdx.x; t < NS; t += blockDim.x) {
        if (t < n) {
            const double e0 = b[t], e1 = a[t];
            const bool f0 = isfinite(e0), f1 = isfinite(e1);
            if (f0 && f1) {
                const double df = fabs(e0) - fabs(e1);
                ab0 += fabs(e0); ab1 += fabs(e1); dd += df * df; c += 1.0;
            }
            key[t] = (f0 && f1) ? fabs(fabs(e0) - fabs(e1)) : 0.0;
        } else key[t] = CUDART_INF;
        idx[t] = t;
    }
    __syncthreads();
    for (int k = 2; k <= NS; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int t = threadIdx.x; t < NS; t += blockDim.x) {
                const int u = t ^ j;
                if (u > t) {
                    const bool up = (t & k) == 0;
                    const double kt = key[t], ku = key[u];
                    const int it = idx[t], iu = idx[u];
                    const bool gt = kt > ku || (kt == ku && it > iu);
                    if (gt == up) { key[t] = ku; key[u] = kt; idx[t] = iu; idx[u] = it; }
                }
            }
            __syncthreads();
        }
    }
    // signed ranks by time (in key's place), S and V
    double S = 0.0, V = 0.0;
    for (int r = threadIdx.x; r < n; r += blockDim.x) {
        const int t = idx[r];
        const double d = diff_at(a, b, t);
        const double sg = d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0);
        const double rk = r + 1.0;
        key[t] = rk * sg;
        S += rk * sg;
        if (d != 0) V += rk * rk;
    }
    __syncthreads();
    S = block_sum(S, scratch);
    V = block_sum(V, scratch);
    const double mean = n > 0 ? S / n : 0.0;
    double v2 = 0.0, cov = 0.0;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        const double x = key[t] - mean;
        v2 += x * x;
        if (t > 0) cov += x * (key[t - 1] - mean);
    }
    v2 = block_sum(v2, scratch);
    cov = block_sum(cov, scratch);
    ab0 = block_sum(ab0, scratch);
    ab1 = block_sum(ab1, scratch);
    dd = block_sum(dd, scratch);
    c = block_sum(c, scratch);
    if (threadIdx.x == 0) {
        const long long G = gridDim.x;
        out[m] = S;
        out[G + m] = V;
        out[2 * G + m] = v2 > 0 ? (cov / (double)max(n - 1, 1LL)) / (v2 / n) : 0.0;
        out[3 * G + m] = ab0;
        out[4 * G + m] = ab1;
        out[5 * G + m] = dd;
        out[6 * G + m] = c;
    }
}
"""


def rank_module():
    """The compiled module (once per process; CuPy's disk cache across processes)."""
    mod = _CACHE.get("rank")
    if mod is None:
        import cupy as cp

        mod = _CACHE["rank"] = cp.RawModule(code="#include <math_constants.h>\n" + _SOURCE,
                                            options=("--fmad=false", "--std=c++17"))
    return mod


def rank_stats(A, ra, B, rb, nn):
    """Signed-rank statistics and sums of every row pair (``cpu_conditional``): a tuple of
    seven (m,) arrays on the device."""
    import cupy as cp

    m = len(ra)
    out = cp.zeros((7, m))
    if m == 0:
        return tuple(out)
    top = int(cp.max(nn).get())
    if top > RANK_MAX:
        raise ValueError(f"the predictive conditioning's GPU rank test takes series of at "
                         f"most {RANK_MAX} points ({top} here): use backend='cpu'")
    NS = 64
    while NS < top:
        NS *= 2
    smem = NS * 8 + NS * 4 + 4 + 32 * 8
    k = rank_module().get_function("rank_stats")
    if smem > 48 * 1024:
        k.max_dynamic_shared_size_bytes = smem
    threads = min(512, max(NS // 2, 64))
    k((m,), (threads,), (A, np.int64(A.shape[1]), ra, B, np.int64(B.shape[1]), rb, nn,
                         np.int32(NS), out), shared_mem=smem)
    S, V, r1, ab0, ab1, dd, c = out
    return S, V, r1, ab0, ab1, dd, c.astype(np.int64)
