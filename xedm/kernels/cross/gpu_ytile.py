"""The cross map's lookups with a tile of targets held in shared memory (CuPy).

    ytile_fits(T, k) -> columns per tile, or 0 when no tile fits this device
    ytile(qk, wk, mk, wsk, k, C, Yc, nC, a, b, P, nL, Tp, pt, pt_stride, pok, out)

The lookups of :mod:`xedm.kernels.cross.gpu_xmap` for NaN-free targets, where the whole series
of a tile of ``C`` target columns (``C * T`` float64) fits in one block's shared memory (on
an H100, ``C = 16`` up to T = 1,700 or so, ``C = 8`` up to 3,400).  A block loads its tile
of the mean-shifted targets ``Yc`` once, then runs through a run of libraries: each lookup
reads its target value from shared memory, not from L2 as ``xmap_tile`` does, and each
library's row entries (``qk``/``wk``, read by the 8 threads of a row at once) come from L2
in the same order for every block in flight.  A thread holds two adjacent columns (one
16-byte load per entry) and one row lane; the row lanes' Pearson sums are added up once per
library (warp shuffles, then shared memory).  Sums in the order of ``xmap_tile`` within a
row; across rows, each lane's rows in order and the lanes' sums added in a tree: rho differs
from the other kernels' by rounding only (about 1e-15).
"""

from __future__ import annotations

import numpy as np

from ..knn.gpu import _module
from ..knn.gpu_compile import device_limits

# rho from the shifted Pearson sums of n rows (NaN below 3 rows or without variance): one
# device function for every lookup kernel (gpu_xmap's general and tiled ones, this one)
_PEARSON = r"""
#include <math_constants.h>

__device__ double xmap_rho(double n, double s1, double s2, double s3, double s4, double s5)
{
    if (n < 3) return CUDART_NAN;
    const double cxx = s3 - s1 * s1 / n, cyy = s4 - s2 * s2 / n, cxy = s5 - s1 * s2 / n;
    return (cxx > 0.0 && cyy > 0.0) ? cxy / (sqrt(cxx) * sqrt(cyy)) : CUDART_NAN;
}
"""

_SOURCE = r"""
#define C 16              // target columns per tile (two per thread)
#define K 6               // entries per row (k of the group)
#define BT 512            // threads per block
#define RPI 2             // rows per lane and iteration, their entries loaded together
#define NP (C / 2)        // threads per row: column pairs
#define R (BT / NP)       // row lanes
#define NW (BT / 32)      // warps

extern "C" __global__ void __launch_bounds__(BT, 1) xmap_ytile(
    const int* __restrict__ qk, const double* __restrict__ wk, const int* __restrict__ mk,
    const double* __restrict__ wsk, const double* __restrict__ Yc, const long long T,
    const long long ldy, const long long nC, const long long a, const long long b,
    const long long P, const long long nL, const long long lib_per_block, const long long Tp,
    const long long* __restrict__ pred_t_all, const long long pt_stride,
    const unsigned char* __restrict__ pred_ok, double* __restrict__ rho)
{
    extern __shared__ __align__(16) double smem[];
    double* s_y = smem;                 // T * C: the tile's targets, row-major
    double* s_red = smem + T * C;       // 2 x NW * NP * 11: each warp's sums, two libraries
    const int tid = threadIdx.x, cp = tid % NP, lane = tid / NP, warp = tid / 32;
    const long long c0 = a + (long long)blockIdx.x * C;
    const long long width = (b - c0) < C ? (b - c0) : C;
    for (long long e = tid; e < T * C; e += BT) {
        const long long q = e / C, cc = e % C;
        s_y[e] = cc < width ? Yc[q * ldy + c0 + cc] : 0.0;
    }
    __syncthreads();
    const long long l0 = (long long)blockIdx.y * lib_per_block;
    const long long l1 = (l0 + lib_per_block) < nL ? (l0 + lib_per_block) : nL;
    const double2* y2 = (const double2*)s_y + cp;  // this thread's column pair, row 0
    for (long long li = l0; li < l1; ++li) {
        const int* ql = qk + li * P * K;
        const double* wl = wk + li * P * K;
        const int* ml = mk + li * P;
        const double* sl = wsk + li * P;
        const unsigned char* ol = pred_ok + li * P;
        const long long* pred_t = pred_t_all + li * pt_stride;  // the library's rows' times
        double n = 0.0, s1a = 0.0, s2a = 0.0, s3a = 0.0, s4a = 0.0, s5a = 0.0;
        double s1b = 0.0, s2b = 0.0, s3b = 0.0, s4b = 0.0, s5b = 0.0;
        for (long long p0 = lane; p0 < P; p0 += RPI * R) {
            int q[RPI][K], m[RPI], qo[RPI];
            double w[RPI][K], iw[RPI];
#pragma unroll
            for (int u = 0; u < RPI; ++u) {  // every row's entries loaded before any is used
                const long long p = p0 + (long long)u * R;
                const bool in = p < P;
                const long long pp = in ? p : p0;
                const long long o = pred_t[pp] + Tp;
                m[u] = (in && ol[pp] && o >= 0 && o < T) ? ml[pp] : 0;
                qo[u] = (int)o;
                iw[u] = 1.0 / sl[pp];
#pragma unroll
                for (int j = 0; j < K; ++j) { q[u][j] = ql[pp * K + j]; w[u][j] = wl[pp * K + j]; }
            }
#pragma unroll
            for (int u = 0; u < RPI; ++u) {
                if (m[u] == 0) continue;
                double2 v = y2[q[u][0] * NP];
                double x0 = w[u][0] * v.x, x1 = w[u][0] * v.y;
#pragma unroll
                for (int j = 1; j < K; ++j) {
                    if (j < m[u]) {
                        v = y2[q[u][j] * NP];
                        x0 = x0 + w[u][j] * v.x; x1 = x1 + w[u][j] * v.y;
                    }
                }
                const double2 ob = y2[qo[u] * NP];
                x0 = x0 * iw[u]; x1 = x1 * iw[u];
                n = n + 1.0;
                s1a = s1a + x0; s2a = s2a + ob.x; s3a = s3a + x0 * x0; s4a = s4a + ob.x * ob.x;
                s5a = s5a + x0 * ob.x;
                s1b = s1b + x1; s2b = s2b + ob.y; s3b = s3b + x1 * x1; s4b = s4b + ob.y * ob.y;
                s5b = s5b + x1 * ob.y;
            }
        }
        // the row lanes' sums: within the warp (lanes NP apart), then across the warps by NP
        // threads, while the others go on with the next library (two buffers, one barrier)
        double s[11] = {n, s1a, s2a, s3a, s4a, s5a, s1b, s2b, s3b, s4b, s5b};
#pragma unroll
        for (int u = 0; u < 11; ++u)
            for (int off = NP; off < 32; off <<= 1)
                s[u] = s[u] + __shfl_xor_sync(0xffffffffu, s[u], off);
        double* red = s_red + ((li - l0) & 1) * (NW * NP * 11);
        if ((tid % 32) < NP) {
#pragma unroll
            for (int u = 0; u < 11; ++u) red[(warp * NP + cp) * 11 + u] = s[u];
        }
        __syncthreads();
        if (tid < NP) {
            double t[11];
#pragma unroll
            for (int u = 0; u < 11; ++u) t[u] = 0.0;
            for (int wp = 0; wp < NW; ++wp) {
#pragma unroll
                for (int u = 0; u < 11; ++u) t[u] = t[u] + red[(wp * NP + tid) * 11 + u];
            }
            const long long c = c0 + 2 * tid;
            if (2 * tid < width)
                rho[li * nC + c] = xmap_rho(t[0], t[1], t[2], t[3], t[4], t[5]);
            if (2 * tid + 1 < width)
                rho[li * nC + c + 1] = xmap_rho(t[0], t[6], t[7], t[8], t[9], t[10]);
        }
    }
}
"""

BT = 512  # threads per block
RPI = None  # rows per lane and iteration (None: about 24 entries in flight, at most 4)
COLUMNS = (16, 8)  # columns per tile, the widest that fits first
MAX_K = 16  # entries per row held in registers at most


def _smem_limit() -> tuple[int, int]:
    """(opt-in shared memory per block in bytes, multiprocessors) of the current device."""
    return device_limits()


def _smem_bytes(T: int, C: int) -> int:
    return 8 * (T * C + 2 * (BT // 32) * (C // 2) * 11)


def ytile_fits(T: int, k: int) -> int:
    """Columns per tile for series of T points and k entries per row (0: use ``xmap_tile``)."""
    if not 1 <= k <= MAX_K:
        return 0
    limit = _smem_limit()[0]
    for C in COLUMNS:
        if _smem_bytes(T, C) <= limit:
            return C
    return 0


def _rows_per_iteration(k: int) -> int:
    """Rows whose entries a lane loads together: more loads in flight hide L2's latency
    until the registers run out (H100, N = 10,000, L = 1,450: k = 6, 4 rows 1.34e12
    lookups/s against 1.01e12 with 2; k = 11, 2 rows 1.6e12 against 1.03e12 with 4, which
    spill)."""
    return int(RPI) if RPI else min(4, max(1, 24 // int(k)))


def _kernel(C: int, k: int):
    rpi = _rows_per_iteration(k)
    src = (_PEARSON + _SOURCE).replace("#define C 16", f"#define C {C}").replace(
        "#define K 6", f"#define K {k}").replace("#define BT 512", f"#define BT {BT}").replace(
        "#define RPI 2", f"#define RPI {rpi}")
    return _module(("xmap_ytile", C, k, BT, rpi), src).get_function("xmap_ytile")


def ytile(qk, wk, mk, wsk, k, C, Yc, nC, a, b, P, nL, Tp, pt, pt_stride, pok, out) -> None:
    """rho of the columns a..b of ``Yc`` (T, ldy >= nC) (one group: entries ``qk``/``wk``
    (nL, P, k), counts ``mk`` and weight sums ``wsk`` (nL, P), rows ``pok`` (nL, P), their
    times ``pt[l * pt_stride + j]``) into ``out`` (nL, nC), tiles of ``C`` columns
    (:func:`ytile_fits`)."""
    T, ldy = Yc.shape
    tiles = -(-(b - a) // C)
    _, sms = _smem_limit()
    # libraries split so that the blocks fill whole waves of the device (one block per
    # multiprocessor), each block at least 32 libraries (its tile's load amortised)
    best, S = -1.0, 1
    for s in range(1, 9):
        per = -(-nL // s)
        if s > 1 and per < 32:
            break
        blocks = tiles * s
        eff = blocks / (-(-blocks // sms) * sms)
        if eff > best + 0.02:
            best, S = eff, s
    per = -(-nL // S)
    kern = _kernel(C, int(k))
    smem = _smem_bytes(T, C)
    kern.max_dynamic_shared_size_bytes = smem
    i64 = np.int64
    kern((tiles, -(-nL // per)), (BT,),
         (qk, wk, mk, wsk, Yc, i64(T), i64(ldy), i64(nC), i64(a), i64(b), i64(P), i64(nL),
          i64(per), i64(Tp), pt, i64(pt_stride), pok, out), shared_mem=smem)
