"""The predictive conditioning of :func:`xedm.causal_network` on the GPU (CuPy): twins of
:mod:`xedm.kernels.predict.cpu_conditional`'s kernels, same signatures, CuPy arrays in and
out, behind :class:`xedm.kernels.predict.conditional.State` (``state``).

- ``conditional_pools``: one thread per (pool job, point): its scan of the series' points,
  the M nearest kept by insertion (time order among ties), then put in time order.
- ``conditional_errors``: one block per (tile of 64 candidates of a group, point), one
  thread per candidate: the block stages the point's pool with its base coordinates in
  shared memory, each thread reads its candidate's coordinate from the transposed series
  (coalesced), keeps its k nearest in registers and solves the weighted least squares of
  ``cpu_conditional`` (the same sums in the same order, no fused multiply-add, the unit-
  diagonal Cholesky of S-map's solver), compiled per number of columns (``NC_MAX`` at
  most; the system in registers up to 12).
- ``rank_stats``: one block per row: |d| with its time sorted in shared memory (bitonic, ties
  by time: the CPU's stable sort), then the signed-rank sums S and V (exact: sums of
  integers), the lag-1 autocorrelation of the signed ranks and the squares (block sums: they
  differ from the CPU's sequential sums by rounding only).  Rows of up to ``RANK_MAX`` times.
"""

from __future__ import annotations

import numpy as np

from ..smap.constants import PIVOT_MIN

NC_MAX = 24  # columns of the largest least-squares system (intercept + coordinates)
RANK_MAX = 16384  # longest row rank_stats sorts in shared memory
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
    return code >= 0 ? weight * Z[code * T + t] : Z[i * T + t + code + 1];
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
    const long long j = find_job(starts, J, flat);
    const long long i = pser[j], p = flat - starts[j], ni = n[i], a = t0[i];
    int lag[ND];
    unsigned long long msk = (unsigned long long)pmask[j];
    lag[0] = 0;
#pragma unroll
    for (int c = 1; c < ND; ++c) { lag[c] = __ffsll((long long)msk); msk &= msk - 1; }
    const double* zi = Z + i * T + a;
    double pv[ND];
#pragma unroll
    for (int c = 0; c < ND; ++c) pv[c] = zi[p - lag[c]];
    int* row = pools + poff[j] * M + p;  // entry c of point p at row[c * ni]
    for (int c = 0; c < M; ++c) row[c * ni] = -1;
    const long long lo = max(0LL, p - excl[i]), hi = min(ni, p + excl[i] + 1);
    const int nl = (int)min((long long)M, ni - (hi - lo));
    if (nl < 1) return;
    double lbd[M];
    int lib[M];
    int cnt = 0;
    double worst = CUDART_INF;
    for (long long q = 0; q < ni; ++q) {
        if (q >= lo && q < hi) continue;
        double dq = 0.0;
#pragma unroll
        for (int c = 0; c < ND; ++c) {
            const double t = zi[q - lag[c]] - pv[c];
            dq = dq + t * t;
        }
        if (cnt < nl || dq < worst) {
            cnt = insert(lbd, lib, cnt, nl, dq, (int)q);
            if (cnt == nl) worst = lbd[nl - 1];
        }
    }
    for (int u = 1; u < nl; ++u) {  // time order
        const int v = lib[u];
        int w = u;
        while (w > 0 && lib[w - 1] > v) { lib[w] = lib[w - 1]; --w; }
        lib[w] = v;
    }
    for (int c = 0; c < nl; ++c) row[c * ni] = lib[c];
}
#endif

#ifdef NC
// one block per (tile of up to CB candidates of one group, point p), one thread per
// candidate; NC columns (intercept and coordinates) and K = NC + 10 neighbours fixed at
// compile time.  The block stages p's pool (M entries) in shared memory with the base
// coordinates relative to p's, their squared distance and the targets; each thread adds its
// candidate's coordinate (read from Zt, the series transposed: consecutive candidates read
// consecutive words), keeps its K nearest in registers and solves its system in registers.
#define K (NC + 10)
#define CB 64
#if NC <= 12
#define UNROLL_C _Pragma("unroll")
#else  // beyond 12 columns the loops over columns stay loops (the system in local memory)
#define UNROLL_C _Pragma("unroll 1")
#endif
extern "C" __global__ void conditional_errors(
    const double* __restrict__ Z, const double* __restrict__ Zt, const long long T,
    const long long N, const long long* __restrict__ t0, const long long* __restrict__ n,
    const long long* __restrict__ gser, const long long* __restrict__ gbase,
    const long long* __restrict__ bcodes, const long long* __restrict__ gpool,
    const int* __restrict__ pools, const long long* __restrict__ gcand,
    const long long* __restrict__ ccodes, const long long* __restrict__ gout,
    const long long* __restrict__ tile_g, const long long* __restrict__ tile_c,
    const long long nmax, const double weight, const double theta, double* __restrict__ out)
{
    __shared__ int sq[M];
    __shared__ double sbd[M], sy[M], srel[M * (NC - 1)], scv[M * CB];
    const long long g = tile_g[blockIdx.x];
    const long long p = blockIdx.y;
    const long long i = gser[g];
    const long long ni = n[i];
    if (p >= ni) return;
    const long long a = t0[i];
    const long long b0 = gbase[2 * g], d0 = gbase[2 * g + 1] - b0;
    const long long m = gcand[2 * g + 1] - gcand[2 * g];
    const bool use_c = m > 0;
    const long long c = tile_c[blockIdx.x] + threadIdx.x;  // this thread's candidate
    const bool live = use_c ? c < m : threadIdx.x == 0;
    const int* prow = pools + gpool[g] * M + p;  // entry s of point p at prow[s * ni]
    const double* zi = Z + i * T;
    // stage the pool: entry s's time, base coordinates relative to p's, their squared
    // distance (summed in the base's order, as the CPU) and the target
    for (int s = threadIdx.x; s < M; s += blockDim.x) {
        const int q = prow[s * ni];
        sq[s] = q;
        if (q >= 0) {
            double acc = 0.0;
            for (long long k2 = 0; k2 < d0; ++k2) {
                const long long code = bcodes[b0 + k2];
                const double t = code >= 0
                    ? weight * Z[code * T + a + q] - weight * Z[code * T + a + p]
                    : zi[a + q + code + 1] - zi[a + p + code + 1];
                srel[s * (NC - 1) + k2] = t;
                acc = acc + t * t;
            }
            sbd[s] = acc;
            sy[s] = zi[a + q + 1];
        }
    }
    __syncthreads();
    int nl = 0;
    while (nl < M && sq[nl] >= 0) ++nl;
    if (!live) return;
    const long long r = gout[g] + (use_c ? c : 0);
    if (nl < 1) { out[r * nmax + p] = CUDART_NAN; return; }
    const int kk = nl < K ? nl : K;
    double ds[K];
    int nb[K];
#pragma unroll
    for (int s = 0; s < K; ++s) { ds[s] = CUDART_INF; nb[s] = -1; }
    long long coff = 0;
    double cscl = 1.0, cp = 0.0;
    if (use_c) {
        const long long code = ccodes[gcand[2 * g] + c];
        coff = code >= 0 ? code : i;  // column of Zt; own lags shift the time
        const long long sh = code >= 0 ? 0 : code + 1;
        cscl = code >= 0 ? weight : 1.0;
        coff += sh * N;
        cp = cscl * Zt[(a + p) * N + coff];
    }
    for (int s = 0; s < nl; ++s) {
        double acc = sbd[s];
        if (use_c) {
            const double t = cscl * Zt[(a + sq[s]) * N + coff] - cp;
            scv[s * CB + threadIdx.x] = t;
            acc = acc + t * t;
        }
        // insertion among the K nearest (an equal distance after those already there; the
        // slots start at +inf, so the first K always enter)
        if (acc < ds[K - 1]) {
            ds[K - 1] = acc;
            nb[K - 1] = s;
            bool mv = true;
#pragma unroll
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
#pragma unroll
    for (int s = 0; s < K; ++s) if (s < kk) { ds[s] = sqrt(ds[s]); md = md + ds[s]; }
    md = md / kk;
#pragma unroll
    for (int s = 0; s < K; ++s) if (s < kk) ds[s] = md > 0 ? exp(-theta * ds[s] / md) : 1.0;
    double A[NC][NC];
    double bv[NC];
UNROLL_C
    for (int u = 0; u < NC; ++u) {
        bv[u] = 0.0;
UNROLL_C
        for (int v = u; v < NC; ++v) A[u][v] = 0.0;
    }
#pragma unroll
    for (int s = 0; s < K; ++s) {
        if (s < kk) {
            const int e = nb[s];
            double row[NC];
            row[0] = 1.0;
UNROLL_C
            for (int k2 = 0; k2 < NC - 1; ++k2)
                row[k2 + 1] = k2 < d0 ? srel[e * (NC - 1) + k2] : scv[e * CB + threadIdx.x];
            const double ws = ds[s], yv = sy[e];
UNROLL_C
            for (int u = 0; u < NC; ++u) {
                const double ru = ws * row[u];
                bv[u] = bv[u] + ru * yv;
UNROLL_C
                for (int v = u; v < NC; ++v) A[u][v] = A[u][v] + ru * row[v];
            }
        }
    }
    out[r * nmax + p] = CUDART_NAN;
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
    out[r * nmax + p] = z[0] / sc[0] - zi[a + p + 1];
}
#endif

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
    double sq0 = 0.0, c0 = 0.0, sq1 = 0.0, c1 = 0.0;
    for (int t = threadIdx.x; t < NS; t += blockDim.x) {
        if (t < n) {
            const double e0 = b[t], e1 = a[t];
            const bool f0 = isfinite(e0), f1 = isfinite(e1);
            if (f0) { sq0 += e0 * e0; c0 += 1.0; }
            if (f0 && f1) { sq1 += e1 * e1; c1 += 1.0; }
            key[t] = (f0 && f1) ? fabs(fabs(e0) - fabs(e1)) : 0.0;
        } else {
            key[t] = CUDART_INF;
        }
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
    sq0 = block_sum(sq0, scratch);
    c0 = block_sum(c0, scratch);
    sq1 = block_sum(sq1, scratch);
    c1 = block_sum(c1, scratch);
    if (threadIdx.x == 0) {
        const long long M7 = gridDim.x;
        out[m] = S;
        out[M7 + m] = V;
        out[2 * M7 + m] = v2 > 0 ? (cov / (double)max(n - 1, 1LL)) / (v2 / n) : 0.0;
        out[3 * M7 + m] = sq0;
        out[4 * M7 + m] = c0;
        out[5 * M7 + m] = sq1;
        out[6 * M7 + m] = c1;
    }
}
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
        k = _kernels(M, ND=v).get_function("conditional_pools")
        k(((total + _BLOCK - 1) // _BLOCK,), (_BLOCK,),
          (Z, np.int64(Z.shape[1]), t0, n, excl, *dev, starts, np.int64(len(sel)),
           np.int64(total), pools))


_ZT: list = []  # (Z, its transpose): the series of the last state, candidate-major


def _transposed(Z):
    import cupy as cp

    if not _ZT or _ZT[0][0] is not Z:
        _ZT[:] = [(Z, cp.ascontiguousarray(Z.T))]
    return _ZT[0][1]


def conditional_errors(Z, t0, n, gser, gbase, bcodes, gpool, pools, gk, gcand, ccodes, gout,
                       weight, theta, out):
    """The error rows of every model group into ``out`` (``cpu_conditional``'s): one launch
    per number of columns (a compiled variant each, NC_MAX at most), each block a tile of up
    to 64 candidates of one group at one point."""
    import cupy as cp

    R, nmax = out.shape
    if R == 0:
        return
    gbase, gcand = np.asarray(gbase, np.int64), np.asarray(gcand, np.int64)
    cnt = gcand[:, 1] - gcand[:, 0]
    nc = gbase[:, 1] - gbase[:, 0] + 1 + (cnt > 0)
    if not np.array_equal(np.asarray(gk), nc + 10):
        raise ValueError("the GPU kernel takes k = (number of coordinates) + 11 neighbours")
    if nc.max() > NC_MAX:
        raise ValueError(f"the predictive conditioning's GPU kernel solves systems of at most "
                         f"{NC_MAX} columns; this model has {int(nc.max())}: use fewer "
                         "drivers (max_drivers), a smaller E_max, or backend='cpu'")
    if nmax > 65535:
        raise ValueError(f"the predictive conditioning's GPU kernel takes series of at most "
                         f"65,536 points ({nmax + 1} here): use backend='cpu'")
    Zt = _transposed(Z)
    dev = [cp.asarray(np.ascontiguousarray(a, np.int64)) for a in
           (gser, gbase, bcodes, gpool, gcand, ccodes, gout)]
    for v in np.unique(nc).tolist():
        sel = np.flatnonzero(nc == v)
        tiles = (np.maximum(cnt[sel], 1) + _TILE - 1) // _TILE
        tg = np.repeat(sel, tiles)
        tc = (np.arange(len(tg)) - np.repeat(np.cumsum(tiles) - tiles, tiles)) * _TILE
        k = _kernels(pools.shape[1], NC=v).get_function("conditional_errors")
        for c0 in range(0, len(tg), _GRID_X):  # grid.x of at most _GRID_X tiles
            sl = slice(c0, c0 + _GRID_X)
            k((len(tg[sl]), nmax), (_TILE,),
              (Z, Zt, np.int64(Z.shape[1]), np.int64(Z.shape[0]), t0, n, *dev[:4], pools,
               *dev[4:], cp.asarray(tg[sl].astype(np.int64)), cp.asarray(tc[sl].astype(np.int64)),
               np.int64(nmax), np.float64(weight), np.float64(theta), out))


_TILE = 64  # candidates per block (CB in the kernel)
_GRID_X = 2**31 - 1


def _max(a) -> int:
    import cupy as cp

    return int(cp.max(a).get()) if len(a) else 0


def rank_stats(A, ra, B, rb, nn):
    """Signed-rank statistics and squares of every row pair (``cpu_conditional``): a tuple
    of seven (m,) arrays on the device."""
    import cupy as cp

    m = len(ra)
    out = cp.zeros((7, m))
    if m == 0:
        return tuple(out)
    top = _max(nn)
    if top > RANK_MAX:
        raise ValueError(f"the predictive conditioning's GPU rank test takes series of at "
                         f"most {RANK_MAX} points ({top} here): use backend='cpu'")
    NS = 64
    while NS < top:
        NS *= 2
    smem = NS * 8 + NS * 4 + 4 + 32 * 8
    k = _kernels(40).get_function("rank_stats")
    if smem > 48 * 1024:
        k.max_dynamic_shared_size_bytes = smem
    threads = min(512, max(NS // 2, 64))
    k((m,), (threads,), (A, np.int64(A.shape[1]), ra, B, np.int64(B.shape[1]), rb, nn,
                         np.int32(NS), out), shared_mem=smem)
    S, V, r1, sq0, c0, sq1, c1 = out
    return S, V, r1, sq0, c0.astype(np.int64), sq1, c1.astype(np.int64)


def state(Z, t0, n, excl, M):
    """The lockstep selection's data on the GPU (:class:`..conditional.State`)."""
    import cupy as cp

    from .conditional import State

    return State(cp, Z, t0, n, excl, M, pools=conditional_pools, errors=conditional_errors,
                 stats=rank_stats)
