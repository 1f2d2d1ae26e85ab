"""The predictive conditioning of :func:`xedm.causal_network` on the GPU (CuPy): twins of
:mod:`xedm.kernels.predict.cpu_conditional`'s kernels, same signatures, CuPy arrays in and
out, behind :class:`xedm.kernels.predict.conditional.State` (``state``).

- ``conditional_pools``: one warp per (pool job, point) for series up to ``WARP_MAX``
  points (distances in shared memory, the M-th smallest by a radix search on their bits,
  the pool written in time order through ballots), else one thread per point (insertion);
  ties in time order, compiled per number of own coordinates.
- ``conditional_errors``: one thread per (candidate, point): the k nearest of its pool, the
  weights and the weighted least squares of ``cpu_conditional`` (the same sums in the same
  order, no fused multiply-add, the unit-diagonal Cholesky of S-map's solver), compiled per
  number of columns (``NC_MAX`` at most; the system in registers up to 12).
- ``rank_stats``: :mod:`xedm.kernels.predict.gpu_rank`.
"""

from __future__ import annotations

import numpy as np

from ..smap.constants import PIVOT_MIN
from .gpu_rank import rank_module

NC_MAX = 24  # columns of the largest least-squares system (intercept + coordinates)
WARP_MAX = 6144  # longest series whose pools take one warp per point (distances in smem)
_BLOCK = 128
_CACHE: dict = {}

_SOURCE = r"""
#define NC_MAX """ + str(NC_MAX) + r"""
#define PIVOT_MIN """ + repr(PIVOT_MIN) + r"""

__device__ __forceinline__ long long find_job(const long long* __restrict__ starts,
                                              const long long J, const long long x)
{   // the j with starts[j] <= x < starts[j + 1] (starts ascending, starts[0] = 0)
    long long lo = 0, hi = J;
    while (hi - lo > 1) {
        const long long mid = (lo + hi) >> 1;
        if (starts[mid] <= x) lo = mid; else hi = mid;
    }
    return lo;
}

__device__ __forceinline__ double value(const double* __restrict__ Z, const long long T,
                                        const long long code, const long long i,
                                        const long long t, const double weight)
{
    // driver code c = j T + l: Z[j, t - l], at the offset j T - l = c - 2 (c % T)
    return code >= 0 ? weight * Z[code - 2 * (code % T) + t] : Z[i * T + t + code + 1];
}

__device__ __forceinline__ int insert(double* ds, int* nb, int cnt, const int kk,
                                      const double dq, const int q)
{
    int pos;
    if (cnt < kk) { pos = cnt; cnt += 1; }
    else if (dq < ds[kk - 1]) pos = kk - 1;
    else return cnt;
    while (pos > 0 && ds[pos - 1] > dq) { ds[pos] = ds[pos - 1]; nb[pos] = nb[pos - 1]; --pos; }
    ds[pos] = dq; nb[pos] = q;
    return cnt;
}

#ifdef ND
// the own coordinates of a pool: the value (lag 0), then the lags of the mask's bits in
// ascending order (bit l - 1: lag l), and point p's values of them
__device__ __forceinline__ void own_state(unsigned long long msk, const double* zi,
                                          const long long p, int* lag, double* pv)
{
    lag[0] = 0;
#pragma unroll
    for (int c = 1; c < ND; ++c) { lag[c] = __ffsll((long long)msk); msk &= msk - 1; }
#pragma unroll
    for (int c = 0; c < ND; ++c) pv[c] = zi[p - lag[c]];
}

// point ``flat`` of the pool jobs: its series, point, the series' points from t0, its
// pool row (entry c at row[c * ni]), the exclusion window [lo, hi) and the pool's size
struct PoolPoint { long long i, p, ni, lo, hi; const double* zi; int* row; int nl; };
__device__ __forceinline__ PoolPoint pool_point(
    const double* __restrict__ Z, const long long T, const long long* __restrict__ t0,
    const long long* __restrict__ n, const long long* __restrict__ excl,
    const long long* __restrict__ pser, const long long* __restrict__ pmask,
    const long long* __restrict__ poff, const long long* __restrict__ starts,
    const long long J, const long long flat, int* __restrict__ pools, int* lag, double* pv)
{
    PoolPoint q;
    const long long j = find_job(starts, J, flat);
    q.i = pser[j]; q.p = flat - starts[j]; q.ni = n[q.i];
    q.zi = Z + q.i * T + t0[q.i];
    own_state((unsigned long long)pmask[j], q.zi, q.p, lag, pv);
    q.row = pools + poff[j] * M + q.p;
    q.lo = max(0LL, q.p - excl[q.i]);
    q.hi = min(q.ni, q.p + excl[q.i] + 1);
    q.nl = (int)min((long long)M, q.ni - (q.hi - q.lo));
    return q;
}
#endif

#ifdef ND
// one point of one pool job per thread, its ND own coordinates (the value, then the lags of
// the mask in ascending order) fixed at compile time; the threads of a warp scan the same q
// (one broadcast load per coordinate) and test it against their M-th nearest in a register
extern "C" __global__ void conditional_pools(
    const double* __restrict__ Z, const long long T, const long long* __restrict__ t0,
    const long long* __restrict__ n, const long long* __restrict__ excl,
    const long long* __restrict__ pser, const long long* __restrict__ pmask,
    const long long* __restrict__ poff, const long long* __restrict__ starts,
    const long long J, const long long total, int* __restrict__ pools)
{
    const long long flat = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (flat >= total) return;
    int lag[ND];
    double pv[ND];
    const PoolPoint pt = pool_point(Z, T, t0, n, excl, pser, pmask, poff, starts, J, flat,
                                    pools, lag, pv);
    for (int c = 0; c < M; ++c) pt.row[c * pt.ni] = -1;
    if (pt.nl < 1) return;
    double lbd[M];
    int lib[M];
    int cnt = 0;
    double worst = CUDART_INF;
    for (long long q = 0; q < pt.ni; ++q) {
        if (q >= pt.lo && q < pt.hi) continue;
        double dq = 0.0;
#pragma unroll
        for (int c = 0; c < ND; ++c) {
            const double t = pt.zi[q - lag[c]] - pv[c];
            dq = dq + t * t;
        }
        if (cnt < pt.nl || dq < worst) {
            cnt = insert(lbd, lib, cnt, pt.nl, dq, (int)q);
            if (cnt == pt.nl) worst = lbd[pt.nl - 1];
        }
    }
    for (int u = 1; u < pt.nl; ++u) {  // time order
        const int v = lib[u];
        int w = u;
        while (w > 0 && lib[w - 1] > v) { lib[w] = lib[w - 1]; --w; }
        lib[w] = v;
    }
    for (int c = 0; c < pt.nl; ++c) pt.row[c * pt.ni] = lib[c];
}
#endif

#ifdef ND
// the same pools, one warp per point (series up to WARP_MAX points): its lanes compute the
// distances to every q into shared memory (+inf inside the exclusion window), find the
// pt.nl-th smallest by a radix search on the bits of the (non-negative) doubles, then write,
// in time order, the q below it and the first of those equal to it (ties in time order:
// the pt.nl smallest by (distance, q), as the CPU's insertion keeps them)
extern "C" __global__ void conditional_pools_warp(
    const double* __restrict__ Z, const long long T, const long long* __restrict__ t0,
    const long long* __restrict__ n, const long long* __restrict__ excl,
    const long long* __restrict__ pser, const long long* __restrict__ pmask,
    const long long* __restrict__ poff, const long long* __restrict__ starts,
    const long long J, const long long total, const int width, int* __restrict__ pools)
{
    extern __shared__ unsigned long long sd[];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long flat = (long long)blockIdx.x * (blockDim.x >> 5) + w;
    if (flat >= total) return;
    unsigned long long* dd = sd + (long long)w * width;
    int lag[ND];
    double pv[ND];
    const PoolPoint pt = pool_point(Z, T, t0, n, excl, pser, pmask, poff, starts, J, flat,
                                    pools, lag, pv);
    for (int c = lane; c < M; c += 32) pt.row[c * pt.ni] = -1;
    if (pt.nl < 1) return;
    for (long long q = lane; q < pt.ni; q += 32) {
        double dq = CUDART_INF;
        if (q < pt.lo || q >= pt.hi) {
            dq = 0.0;
#pragma unroll
            for (int c = 0; c < ND; ++c) {
                const double t = pt.zi[q - lag[c]] - pv[c];
                dq = dq + t * t;
            }
        }
        dd[q] = __double_as_longlong(dq);
    }
    __syncwarp();
    unsigned long long thr = 0;  // the pt.nl-th smallest: the largest v with #{x < v} < pt.nl
    for (int b = 63; b >= 0; --b) {
        const unsigned long long t = thr | (1ULL << b);
        unsigned int c = 0;
        for (long long q = lane; q < pt.ni; q += 32) c += dd[q] < t;
        c = __reduce_add_sync(0xffffffffu, c);
        if (c < (unsigned int)pt.nl) thr = t;
    }
    unsigned int less = 0;
    for (long long q = lane; q < pt.ni; q += 32) less += dd[q] < thr;
    less = __reduce_add_sync(0xffffffffu, less);
    int quota = pt.nl - (int)less;  // entries equal to thr to take, earliest first
    int put = 0;
    const unsigned int below = (1u << lane) - 1u;
    for (long long q0 = 0; q0 < pt.ni; q0 += 32) {
        const long long q = q0 + lane;
        const unsigned long long x = q < pt.ni ? dd[q] : ~0ULL;
        const unsigned int eq = __ballot_sync(0xffffffffu, x == thr);
        const bool take = x < thr || (x == thr && __popc(eq & below) < quota);
        quota -= __popc(eq);
        const unsigned int sel = __ballot_sync(0xffffffffu, take);
        if (take) pt.row[(put + __popc(sel & below)) * pt.ni] = (int)q;
        put += __popc(sel);
    }
}
#endif

#ifdef NC
// one candidate (or a base model) and one point per thread; NC columns (intercept and
// coordinates) and K = NC + EXTRA neighbours fixed at compile time: the neighbour list, the
// normal matrix and the solution in registers
#define D (NC - 1)
#define K (NC + EXTRA)
#if NC <= 8
#define UNROLL_S _Pragma("unroll")
#else  // larger systems: the loops over neighbours stay loops (compile time, code size)
#define UNROLL_S _Pragma("unroll 1")
#endif
#if NC <= 12
#define UNROLL_C _Pragma("unroll")
#else  // and beyond 12 columns the loops over columns too (the system in local memory)
#define UNROLL_C _Pragma("unroll 1")
#endif
extern "C" __global__ void conditional_errors(
    const double* __restrict__ Z, const long long T, const long long* __restrict__ t0,
    const long long* __restrict__ n, const long long* __restrict__ gser,
    const long long* __restrict__ gbase, const long long* __restrict__ bcodes,
    const long long* __restrict__ gpool, const int* __restrict__ pools,
    const long long* __restrict__ gcand, const long long* __restrict__ ccodes,
    const long long* __restrict__ gout, const long long* __restrict__ lrow,
    const long long G, const long long R, const long long nmax, const long long pb,
    const double weight, const double theta, double* __restrict__ out)
{
    const long long blk = blockIdx.x;
    const long long rl = blk / pb;
    const long long p = (blk % pb) * blockDim.x + threadIdx.x;
    if (rl >= R || p >= nmax) return;
    const long long g = find_job(lrow, G, rl);
    const long long i = gser[g];
    const long long ni = n[i];
    if (p >= ni) return;
    const long long r = gout[g] + (rl - lrow[g]);
    out[r * nmax + p] = CUDART_NAN;
    const long long a = t0[i];
    const long long b0 = gbase[2 * g];
    const bool use_c = gcand[2 * g + 1] > gcand[2 * g];
    // the D coordinates: base codes, then the candidate's (when there is one)
    long long off[D];
    double scl[D], pv[D];
UNROLL_C
    for (int c = 0; c < D; ++c) {
        const long long code = (c < D - 1 || !use_c) ? bcodes[b0 + c]
                                                     : ccodes[gcand[2 * g] + (rl - lrow[g])];
        off[c] = code >= 0 ? code - 2 * (code % T) : i * T + code + 1;
        scl[c] = code >= 0 ? weight : 1.0;
        pv[c] = scl[c] * Z[off[c] + a + p];
    }
    const int* prow = pools + gpool[g] * M + p;  // entry s of point p at prow[s * ni]
    int nl = 0;
    while (nl < M && prow[nl * ni] >= 0) ++nl;
    if (nl < 1) return;
    const int kk = nl < K ? nl : K;
    double ds[K];
    int nb[K];
    UNROLL_S
    for (int s = 0; s < K; ++s) { ds[s] = CUDART_INF; nb[s] = -1; }
    for (int s = 0; s < nl; ++s) {
        const long long q = prow[s * ni];
        double acc = 0.0;
UNROLL_C
        for (int c = 0; c < D; ++c) {
            const double t = scl[c] * Z[off[c] + a + q] - pv[c];
            acc = acc + t * t;
        }
        // insertion among the K nearest (an equal distance after those already there; the
        // slots start at +inf, so the first K always enter)
        if (acc < ds[K - 1]) {
            ds[K - 1] = acc;
            nb[K - 1] = s;
            bool mv = true;
UNROLL_C
            for (int u = K - 1; u > 0; --u) {
                if (mv && ds[u - 1] > ds[u]) {
                    const double td = ds[u]; ds[u] = ds[u - 1]; ds[u - 1] = td;
                    const int tn = nb[u]; nb[u] = nb[u - 1]; nb[u - 1] = tn;
                } else {
                    mv = false;
                }
            }
        }
    }
    double md = 0.0;
    UNROLL_S
    for (int s = 0; s < K; ++s) if (s < kk) { ds[s] = sqrt(ds[s]); md = md + ds[s]; }
    md = md / kk;
    UNROLL_S
    for (int s = 0; s < K; ++s) if (s < kk) ds[s] = md > 0 ? exp(-theta * ds[s] / md) : 1.0;
    double A[NC][NC];
    double bv[NC];
UNROLL_C
    for (int u = 0; u < NC; ++u) {
        bv[u] = 0.0;
UNROLL_C
        for (int v = u; v < NC; ++v) A[u][v] = 0.0;
    }
    UNROLL_S
    for (int s = 0; s < K; ++s) {
        if (s < kk) {
            const long long q = prow[nb[s] * ni];
            double row[NC];
            row[0] = 1.0;
UNROLL_C
            for (int c = 0; c < D; ++c) row[c + 1] = scl[c] * Z[off[c] + a + q] - pv[c];
            const double ws = ds[s], yv = Z[i * T + a + q + 1];
UNROLL_C
            for (int u = 0; u < NC; ++u) {
                const double ru = ws * row[u];
                bv[u] = bv[u] + ru * yv;
UNROLL_C
                for (int v = u; v < NC; ++v) A[u][v] = A[u][v] + ru * row[v];
            }
        }
    }
    // unit-diagonal Cholesky (S-map's solver), R in place of A's upper triangle
    double sc[NC];
UNROLL_C
    for (int u = 0; u < NC; ++u) {
        sc[u] = sqrt(A[u][u]);
        if (!(sc[u] > 0.0 && sc[u] < CUDART_INF)) return;
    }
UNROLL_C
    for (int u = 0; u < NC; ++u)
UNROLL_C
        for (int v = u; v < NC; ++v) A[u][v] = A[u][v] / (sc[u] * sc[v]);
UNROLL_C
    for (int u = 0; u < NC; ++u) {
        double v0 = A[u][u];
UNROLL_C
        for (int k = 0; k < u; ++k) v0 = v0 - A[k][u] * A[k][u];
        if (!(v0 > PIVOT_MIN)) return;
        const double rr = sqrt(v0);
        A[u][u] = rr;
UNROLL_C
        for (int v = u + 1; v < NC; ++v) {
            double s2 = A[u][v];
UNROLL_C
            for (int k = 0; k < u; ++k) s2 = s2 - A[k][u] * A[k][v];
            A[u][v] = s2 / rr;
        }
    }
    double z[NC];
UNROLL_C
    for (int u = 0; u < NC; ++u) bv[u] = bv[u] / sc[u];
UNROLL_C
    for (int u = 0; u < NC; ++u) {
        double s2 = bv[u];
UNROLL_C
        for (int k = 0; k < u; ++k) s2 = s2 - A[k][u] * z[k];
        z[u] = s2 / A[u][u];
    }
UNROLL_C
    for (int u = NC - 1; u >= 0; --u) {
        double s2 = z[u];
UNROLL_C
        for (int k = u + 1; k < NC; ++k) s2 = s2 - A[u][k] * z[k];
        z[u] = s2 / A[u][u];
    }
    out[r * nmax + p] = z[0] / sc[0] - Z[i * T + a + p + 1];
}
#endif

"""


def _kernels(M: int, **defs):
    """The module of pool width M and the compile-time sizes ``defs`` (``ND``: the pools'
    own coordinates, ``NC``: the errors' columns; none: the rank statistics)."""
    key = (M, *sorted(defs.items()))
    mod = _CACHE.get(key)
    if mod is None:
        import cupy as cp

        head = f"#define M {int(M)}\n" + "".join(f"#define {k} {int(v)}\n"
                                                   for k, v in sorted(defs.items()))
        mod = _CACHE[key] = cp.RawModule(code="#include <math_constants.h>\n" + head + _SOURCE,
                                         options=("--fmad=false", "--std=c++17"))
    return mod


def compile_variants(E_max: int, max_drivers: int, M: int = 40, extra: int = 10) -> int:
    """Compile (or load from CuPy's disk cache) every module the predictive conditioning may
    use with E up to ``E_max`` and ``max_drivers`` drivers, pools of width ``M`` and fits of
    (columns + ``extra``) neighbours; returns how many."""
    nd = range(1, int(E_max) + 1)
    nc = range(2, min(int(E_max) + int(max_drivers) + 1, NC_MAX) + 1)
    for v in nd:
        _kernels(M, ND=v).get_function("conditional_pools")
    for v in nc:
        _kernels(M, NC=v, EXTRA=int(extra)).get_function("conditional_errors")
    rank_module()
    return len(nd) + len(nc) + 1


def _starts(n, ser):
    import cupy as cp

    s = np.zeros(len(ser) + 1, np.int64)
    np.cumsum(n[np.asarray(ser)], out=s[1:])
    return cp.asarray(s), int(s[-1])


def conditional_pools(Z, t0, n, excl, pser, pmask, poff, pools):
    """The pools of every pool job into ``pools`` (``cpu_conditional``'s; on the device each
    pool's entries are stored entry-major: entry s of point p at row s * n + p of its
    block, so that the threads of consecutive points read consecutive words)."""
    import cupy as cp

    M = pools.shape[1]
    pser, pmask, poff = (np.asarray(a, np.int64) for a in (pser, pmask, poff))
    nd = 1 + np.array([bin(int(m)).count("1") for m in pmask], np.int64)
    n_host = cp.asnumpy(n)
    for v in np.unique(nd).tolist():  # one launch per number of own coordinates
        sel = np.flatnonzero(nd == v)
        starts, total = _starts(n_host, pser[sel])
        if total == 0:
            continue
        dev = [cp.asarray(np.ascontiguousarray(a[sel])) for a in (pser, pmask, poff)]
        width = int(n_host[pser[sel]].max())
        if width <= WARP_MAX:  # one warp per point, its distances in shared memory
            warps = max(1, min(8, 32768 // (8 * width)))
            k = _kernels(M, ND=v).get_function("conditional_pools_warp")
            k(((total + warps - 1) // warps,), (32 * warps,),
              (Z, np.int64(Z.shape[1]), t0, n, excl, *dev, starts, np.int64(len(sel)),
               np.int64(total), np.int32(width), pools), shared_mem=8 * width * warps)
            continue
        k = _kernels(M, ND=v).get_function("conditional_pools")
        k(((total + _BLOCK - 1) // _BLOCK,), (_BLOCK,),
          (Z, np.int64(Z.shape[1]), t0, n, excl, *dev, starts, np.int64(len(sel)),
           np.int64(total), pools))


def conditional_errors(Z, t0, n, gser, gbase, bcodes, gpool, pools, gk, gcand, ccodes, gout,
                       weight, theta, out):
    """The error rows of every model group into ``out`` (``cpu_conditional``'s): one launch
    per number of columns (a compiled variant each, NC_MAX at most)."""
    import cupy as cp

    R, nmax = out.shape
    if R == 0:
        return
    gbase, gcand = np.asarray(gbase, np.int64), np.asarray(gcand, np.int64)
    cnt = gcand[:, 1] - gcand[:, 0]
    nc = gbase[:, 1] - gbase[:, 0] + 1 + (cnt > 0)
    extra = np.unique(np.asarray(gk) - nc)
    if len(extra) != 1 or extra[0] < 0:
        raise ValueError("the GPU kernel takes k = (number of coordinates) + 1 + extra "
                         "neighbours, one extra >= 0 per launch")
    extra = int(extra[0])
    if nc.max() > NC_MAX:
        raise ValueError(f"the predictive conditioning's GPU kernel solves systems of at most "
                         f"{NC_MAX} columns; this model has {int(nc.max())}: use fewer "
                         "drivers (max_drivers), a smaller E_max, or backend='cpu'")
    pb = (nmax + _BLOCK - 1) // _BLOCK
    bc = cp.asarray(np.ascontiguousarray(bcodes, np.int64))
    cc = cp.asarray(np.ascontiguousarray(ccodes, np.int64))
    for v in np.unique(nc).tolist():
        sel = np.flatnonzero(nc == v)
        rows = np.maximum(cnt[sel], 1)
        lrow = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        dev = [cp.asarray(np.ascontiguousarray(a, np.int64)) for a in
               (np.asarray(gser)[sel], gbase[sel], np.asarray(gpool)[sel], gcand[sel],
                np.asarray(gout)[sel], lrow)]
        k = _kernels(pools.shape[1], NC=v, EXTRA=extra).get_function("conditional_errors")
        nr = int(lrow[-1])
        k((nr * pb,), (_BLOCK,),
          (Z, np.int64(Z.shape[1]), t0, n, dev[0], dev[1], bc, dev[2], pools, dev[3], cc,
           dev[4], dev[5], np.int64(len(sel)), np.int64(nr), np.int64(nmax), np.int64(pb),
           np.float64(weight), np.float64(theta), out))


def state(Z, t0, n, excl, M):
    """The lockstep selection's data on the GPU (:class:`..conditional.State`)."""
    import cupy as cp

    from .conditional import State
    from .gpu_rank import rank_stats

    return State(cp, Z, t0, n, excl, M, pools=conditional_pools, errors=conditional_errors,
                 stats=rank_stats)
