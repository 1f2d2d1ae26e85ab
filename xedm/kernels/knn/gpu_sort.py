"""Rows sorted in shared memory (CuPy): the sorted kNN kernel's three argsorts.

    argsort_rows(a) -> (R, n) int32: each row of ``a`` (R, n) float64 in ascending order

One block per row sorts its keys with their positions by a bitonic network in shared
memory (rows of up to ``MAX_N`` keys: 16,384 keys and positions take 192 KiB, within an
H100's or H200's 227 KiB), ordered by (key, position) with NaN after every number: the
order of a stable sort, the one ``cupy.argsort`` gives (cub's radix sort).  At N = 1,000
series of L = 10,000 the three sorts of :func:`xedm.kernels.knn.gpu._sorted` took 9.6 ms
of a 0.135 s cross map with CuPy's segmented radix sort (one launch per pass of 8 bits
over 64-bit keys).  Longer rows take ``cupy.argsort``.
"""

from __future__ import annotations

import numpy as np

MAX_N = 16384  # keys per row sorted in shared memory at most
_BT = 1024  # threads per block

_SOURCE = r"""
// a before b: (rank, key, position), rank 0 a number, 1 NaN, 2 padding
__device__ __forceinline__ bool before(double ka, int ia, int ra, double kb, int ib, int rb)
{
    if (ra != rb) return ra < rb;
    if (ra == 0 && ka != kb) return ka < kb;
    return ia < ib;
}

extern "C" __global__ void argsort_rows(const double* __restrict__ a, const long long n,
                                        const long long np2, int* __restrict__ out)
{
    extern __shared__ __align__(8) unsigned char smem[];
    double* key = (double*)smem;                 // np2 keys
    int* pos = (int*)(key + np2);                // np2 positions (rank in the top bits)
    const long long r = blockIdx.x;
    const double* ar = a + r * n;
    for (long long i = threadIdx.x; i < np2; i += blockDim.x) {
        const double v = i < n ? ar[i] : 0.0;
        key[i] = v;
        // rank folded into the position: 0 number, 1 NaN, 2 padding (positions < 2^29)
        pos[i] = (int)i | ((i >= n ? 2 : (isnan(v) ? 1 : 0)) << 29);
    }
    __syncthreads();
    const int mask = (1 << 29) - 1;
    for (long long k = 2; k <= np2; k <<= 1) {
        for (long long j = k >> 1; j > 0; j >>= 1) {
            for (long long p = threadIdx.x; p < (np2 >> 1); p += blockDim.x) {
                const long long i = 2 * j * (p / j) + (p % j), l = i + j;
                const bool up = (i & k) == 0;
                const double ki = key[i], kl = key[l];
                const int pi = pos[i], pl = pos[l];
                const bool l_first = before(kl, pl & mask, pl >> 29, ki, pi & mask, pi >> 29);
                if (l_first == up) {
                    key[i] = kl; key[l] = ki; pos[i] = pl; pos[l] = pi;
                }
            }
            __syncthreads();
        }
    }
    int* outr = out + r * n;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) outr[i] = pos[i] & mask;
}
"""


def argsort_rows(a):
    """The ascending order of each row of the CuPy array ``a`` (R, n), NaN last, ties in
    position order: int32 (R, n)."""
    import cupy as cp

    from .gpu import _module

    a = cp.ascontiguousarray(a, dtype=cp.float64)
    R, n = a.shape
    if n > MAX_N or n == 0 or R == 0:
        return cp.argsort(a, axis=1).astype(cp.int32)
    np2 = 1 << max(1, int(n - 1).bit_length())
    smem = np2 * 12
    kern = _module(("argsort_rows",), _SOURCE).get_function("argsort_rows")
    kern.max_dynamic_shared_size_bytes = smem
    out = cp.empty((R, n), cp.int32)
    kern((R,), (min(_BT, np2 // 2),), (a, np.int64(n), np.int64(np2), out), shared_mem=smem)
    return out
