"""Rows sorted in shared memory (CuPy): the sorted kNN kernel's argsorts.

    argsort_rows(a) -> (R, n) int32: each row of ``a`` (R, n) float64 in ascending order
    split_sorted(full, ok, pred_t, key, key2) -> candidates, rows, their keys: one sort,
        two orders

One block per row sorts its keys with their positions by a bitonic network in shared
memory (rows of up to ``MAX_N`` keys, as the device's shared memory holds them: 16,384 take
192 KiB, within an H100's or H200's 227 KiB), ordered by (key, position) with NaN after
every number: the order of a stable sort, the one ``cupy.argsort`` gives (cub's radix
sort).  At N = 1,000 series of L = 10,000 the three sorts of
:func:`xedm.kernels.knn.gpu._sorted` took 9.6 ms of a 0.135 s cross map with CuPy's
segmented radix sort; the two that remain (one serves two orders) take 2.3 ms.  Longer
rows take ``cupy.argsort``.
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
    const int m2 = (int)np2;  // (int arithmetic, j a power of two: no 64-bit division)
    for (int k = 2; k <= m2; k <<= 1) {
        int j = k >> 1;
        for (; j >= 32; j >>= 1) {  // partners in other warps: through shared memory
            for (int p = threadIdx.x; p < (m2 >> 1); p += blockDim.x) {
                const int i = ((p & ~(j - 1)) << 1) | (p & (j - 1)), l = i + j;
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
        // j < 32: element i's partner i ^ j is lane ^ j of the same warp (blockDim.x a
        // multiple of 32): the rest of this k's stages in registers, by shuffles
        for (int i0 = 0; i0 < m2; i0 += blockDim.x) {
            const int i = i0 + threadIdx.x;
            double kv = i < m2 ? key[i] : 0.0;
            int pv = i < m2 ? pos[i] : (2 << 29);
            const bool up = (i & k) == 0;
            for (int jj = j; jj > 0; jj >>= 1) {
                const double ko = __shfl_xor_sync(0xffffffffu, kv, jj);
                const int po = __shfl_xor_sync(0xffffffffu, pv, jj);
                const bool other_first = before(ko, po & mask, po >> 29, kv, pv & mask,
                                                pv >> 29);
                // the lower of the pair keeps the pair's first when ascending (up)
                if (((i & jj) == 0) == up ? other_first : !other_first) { kv = ko; pv = po; }
            }
            if (i < m2) { key[i] = kv; pos[i] = pv; }
        }
        __syncthreads();
    }
    int* outr = out + r * n;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) outr[i] = pos[i] & mask;
}
"""


def argsort_rows(a):
    """The ascending order of each row of the CuPy array ``a`` (R, n), NaN last, ties in
    position order: int32 (R, n)."""
    import cupy as cp

    from .gpu_compile import _module, device_limits

    a = cp.ascontiguousarray(a, dtype=cp.float64)
    R, n = a.shape
    np2 = 1 << max(1, int(n - 1).bit_length())
    smem = np2 * 12
    limit = device_limits()[0]
    if n > MAX_N or n == 0 or R == 0 or smem > limit:  # (an A100's 163 KiB: up to 8,192)
        return cp.argsort(a, axis=1).astype(cp.int32)
    kern = _module(("argsort_rows",), _SOURCE).get_function("argsort_rows")
    # the device's whole opt-in share, the same on every call: threads sorting rows of other
    # lengths on this device never lower it under each other's launches
    kern.max_dynamic_shared_size_bytes = limit
    out = cp.empty((R, n), cp.int32)
    kern((R,), (min(_BT, max(32, np2 // 2)),), (a, np.int64(n), np.int64(np2), out),
         shared_mem=smem)
    return out


_SPLIT_SOURCE = r"""
// inclusive sums over the block (blockDim.x a multiple of 32, at most 1024) of a and c
__device__ void block_scan2(int& a, int& c, int* sh)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int o = 1; o < 32; o <<= 1) {
        const int xa = __shfl_up_sync(0xffffffffu, a, o), xc = __shfl_up_sync(0xffffffffu, c, o);
        if (lane >= o) { a += xa; c += xc; }
    }
    if (lane == 31) { sh[w] = a; sh[32 + w] = c; }
    __syncthreads();
    if (w == 0) {
        int ta = lane < nw ? sh[lane] : 0, tc = lane < nw ? sh[32 + lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            const int xa = __shfl_up_sync(0xffffffffu, ta, o);
            const int xc = __shfl_up_sync(0xffffffffu, tc, o);
            if (lane >= o) { ta += xa; tc += xc; }
        }
        sh[64 + lane] = ta; sh[96 + lane] = tc;
    }
    __syncthreads();
    if (w > 0) { a += sh[64 + w - 1]; c += sh[96 + w - 1]; }
}

// one block per series: the times of ``full`` (every time in key order) split into the
// candidates (ok[t]) in key order followed by the others, and the prediction rows (inv[t]
// >= 0: the row's index in pred_t) in key order, as row indices
extern "C" __global__ void split_sorted(const int* __restrict__ full,
                                        const unsigned char* __restrict__ ok,
                                        const int* __restrict__ inv, const long long T,
                                        const long long P, const double* __restrict__ key,
                                        const double* __restrict__ key2,
                                        int* __restrict__ cand, int* __restrict__ ncand,
                                        int* __restrict__ rows, double* __restrict__ ckey,
                                        double* __restrict__ ckey2,
                                        double* __restrict__ rkey2)
{
    __shared__ int sh[128];
    __shared__ int base[3];
    const long long b = blockIdx.x;
    const int* f = full + b * T;
    const unsigned char* o = ok + b * T;
    int n = 0, z = 0;
    for (long long i = threadIdx.x; i < T; i += blockDim.x) n += o[i] ? 1 : 0;
    block_scan2(n, z, sh);
    if (threadIdx.x == blockDim.x - 1) { base[0] = n; base[1] = 0; base[2] = 0; }
    __syncthreads();
    const int total = base[0];
    for (long long i0 = 0; i0 < T; i0 += blockDim.x) {
        const long long i = i0 + threadIdx.x;
        const int t = i < T ? f[i] : 0;
        int c = (i < T && o[t]) ? 1 : 0, r = (i < T && inv[t] >= 0) ? 1 : 0;
        const int is_c = c, is_r = r;
        block_scan2(c, r, sh);
        const int bc = base[1], br = base[2];
        if (i < T) {
            const int C = bc + c;  // candidates among full[0..i]
            const long long at = b * T + (is_c ? C - 1 : total + (int)i - C);
            const double k1 = key[b * T + t], k2 = key2[b * T + t];
            cand[at] = t;
            ckey[at] = k1;
            ckey2[at] = k2;
            if (is_r) {
                rows[b * P + br + r - 1] = inv[t];
                rkey2[b * P + br + r - 1] = k2;
            }
        }
        __syncthreads();
        if (threadIdx.x == blockDim.x - 1) { base[1] = bc + c; base[2] = br + r; }
        __syncthreads();
    }
    if (threadIdx.x == 0) ncand[b] = total;
}
"""


def split_sorted(full, ok, pred_t, key, key2):
    """From ``full`` (B, T) int32, every time of each series in the order of its ``key``
    (:func:`argsort_rows`), and ``ok`` (B, T) bool, each series' library candidates:
    ``cand`` (B, T) int32, the candidates in key order and then the other times, ``ncand``
    (B,) int32, and ``rows`` (B, P) int32, the prediction rows ``pred_t`` (distinct times,
    ascending, as ``flatnonzero`` gives them) in key order as indices into ``pred_t``: what
    ``argsort(where(ok, key, inf))`` and ``argsort(key[:, pred_t])`` give (a stable sort's
    order), from one sort instead of two.
    Also gathered on the way: ``key`` and ``key2`` (B, T) in the order of ``cand``, and
    ``key2`` of the rows in the order of ``rows``.  Returns (cand, ncand, rows, ckey, ckey2,
    rkey2)."""
    import cupy as cp

    from .gpu_compile import _module

    B, T = full.shape
    pt = cp.asarray(pred_t, dtype=cp.int64)
    P = int(pt.shape[0])
    inv = cp.full(T, -1, cp.int32)
    inv[pt] = cp.arange(P, dtype=cp.int32)
    cand = cp.empty((B, T), cp.int32)
    ncand = cp.zeros(B, cp.int32)
    rows = cp.empty((B, P), cp.int32)
    ckey = cp.empty((B, T))
    ckey2 = cp.empty((B, T))
    rkey2 = cp.empty((B, P))
    if B and T:
        kern = _module(("split_sorted",), _SPLIT_SOURCE).get_function("split_sorted")
        kern((B,), (min(1024, 32 * -(-T // 32)),),
             (cp.ascontiguousarray(full, dtype=cp.int32),
              cp.ascontiguousarray(ok).view(cp.uint8), inv, np.int64(T), np.int64(P),
              cp.ascontiguousarray(key, dtype=cp.float64),
              cp.ascontiguousarray(key2, dtype=cp.float64), cand, ncand, rows, ckey, ckey2,
              rkey2))
    return cand, ncand, rows, ckey, ckey2, rkey2
