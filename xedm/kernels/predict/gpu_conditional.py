"""The predictive conditioning of :func:`xedm.causal_network` on the GPU (CuPy): twins of
:mod:`xedm.kernels.predict.cpu_conditional`'s kernels, same signatures, CuPy arrays in and
out, behind :class:`xedm.kernels.predict.conditional.State` (``state``).

- ``conditional_pools``: one thread per (pool job, point): its scan of the series' points,
  the M nearest kept by insertion (time order among ties), then put in time order.
- ``conditional_errors``: one thread per (candidate, point): the k nearest of its pool in the
  base and candidate coordinates, the weights and the weighted least squares of
  ``cpu_conditional`` (the same sums in the same order, no fused multiply-add, the unit-
  diagonal Cholesky of S-map's solver); the largest system is ``NC_MAX`` coordinates.
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
    int lags[64];
    int nd = 1;
    lags[0] = 0;
    for (int b = 0; b < 63; ++b) if ((pmask[j] >> b) & 1) lags[nd++] = b + 1;
    int* row = pools + (poff[j] + p) * M;
    for (int c = 0; c < M; ++c) row[c] = -1;
    const long long lo = max(0LL, p - excl[i]), hi = min(ni, p + excl[i] + 1);
    const int nl = (int)min((long long)M, ni - (hi - lo));
    if (nl < 1) return;
    double lbd[M];
    int lib[M];
    int cnt = 0;
    const double* zi = Z + i * T + a;
    for (long long q = 0; q < ni; ++q) {
        if (q >= lo && q < hi) continue;
        double dq = 0.0;
        for (int c = 0; c < nd; ++c) {
            const double t = zi[q - lags[c]] - zi[p - lags[c]];
            dq = dq + t * t;
        }
        cnt = insert(lbd, lib, cnt, nl, dq, (int)q);
    }
    for (int u = 1; u < nl; ++u) {  // time order
        const int v = lib[u];
        int w = u;
        while (w > 0 && lib[w - 1] > v) { lib[w] = lib[w - 1]; --w; }
        lib[w] = v;
    }
    for (int c = 0; c < nl; ++c) row[c] = lib[c];
}

extern "C" __global__ void conditional_errors(
    const double* __restrict__ Z, const long long T, const long long* __restrict__ t0,
    const long long* __restrict__ n, const long long* __restrict__ gser,
    const long long* __restrict__ gbase, const long long* __restrict__ bcodes,
    const long long* __restrict__ gpool, const int* __restrict__ pools,
    const long long* __restrict__ gk, const long long* __restrict__ gcand,
    const long long* __restrict__ ccodes, const long long* __restrict__ gout,
    const long long G, const long long R, const long long nmax, const long long pb,
    const double weight, const double theta, double* __restrict__ out)
{
    const long long blk = blockIdx.x;
    const long long r = blk / pb;
    const long long p = (blk % pb) * blockDim.x + threadIdx.x;
    if (r >= R || p >= nmax) return;
    const long long g = find_job(gout, G, r);
    const long long i = gser[g];
    if (p >= n[i]) return;
    out[r * nmax + p] = CUDART_NAN;
    const long long a = t0[i];
    const long long b0 = gbase[2 * g], d0 = gbase[2 * g + 1] - b0;
    const long long m = gcand[2 * g + 1] - gcand[2 * g];
    const bool use_c = m > 0;
    const long long cc = use_c ? ccodes[gcand[2 * g] + (r - gout[g])] : 0;
    const int* prow = pools + (gpool[g] + p) * M;
    int nl = 0;
    while (nl < M && prow[nl] >= 0) ++nl;
    if (nl < 1) return;
    const int kk = (int)min(gk[g], (long long)nl);
    double ds[M];
    int nb[M];
    int cnt = 0;
    const double cp = use_c ? value(Z, T, cc, i, a + p, weight) : 0.0;
    for (int s = 0; s < nl; ++s) {
        const long long q = prow[s];
        double acc = 0.0;
        for (long long c = 0; c < d0; ++c) {
            const long long code = bcodes[b0 + c];
            const double t = value(Z, T, code, i, a + q, weight)
                             - value(Z, T, code, i, a + p, weight);
            acc = acc + t * t;
        }
        if (use_c) {
            const double t = value(Z, T, cc, i, a + q, weight) - cp;
            acc = acc + t * t;
        }
        cnt = insert(ds, nb, cnt, kk, acc, s);
    }
    double md = 0.0;
    for (int s = 0; s < kk; ++s) { ds[s] = sqrt(ds[s]); md = md + ds[s]; }
    md = md / kk;
    for (int s = 0; s < kk; ++s) ds[s] = md > 0 ? exp(-theta * ds[s] / md) : 1.0;
    const int nc = (int)d0 + 1 + (use_c ? 1 : 0);
    double A[NC_MAX * NC_MAX];
    double bv[NC_MAX], row[NC_MAX];
    for (int u = 0; u < nc; ++u) { bv[u] = 0.0; for (int v = u; v < nc; ++v) A[u * nc + v] = 0.0; }
    for (int s = 0; s < kk; ++s) {
        const long long q = prow[nb[s]];
        row[0] = 1.0;
        for (long long c = 0; c < d0; ++c) {
            const long long code = bcodes[b0 + c];
            row[c + 1] = value(Z, T, code, i, a + q, weight) - value(Z, T, code, i, a + p, weight);
        }
        if (use_c) row[d0 + 1] = value(Z, T, cc, i, a + q, weight) - cp;
        const double ws = ds[s], yv = Z[i * T + a + q + 1];
        for (int u = 0; u < nc; ++u) {
            const double ru = ws * row[u];
            bv[u] = bv[u] + ru * yv;
            for (int v = u; v < nc; ++v) A[u * nc + v] = A[u * nc + v] + ru * row[v];
        }
    }
    // unit-diagonal Cholesky (S-map's solver), R in place of A's upper triangle
    double sc[NC_MAX];
    for (int u = 0; u < nc; ++u) {
        sc[u] = sqrt(A[u * nc + u]);
        if (!(sc[u] > 0.0 && sc[u] < CUDART_INF)) return;
    }
    for (int u = 0; u < nc; ++u)
        for (int v = u; v < nc; ++v) A[u * nc + v] = A[u * nc + v] / (sc[u] * sc[v]);
    for (int u = 0; u < nc; ++u) {
        double v0 = A[u * nc + u];
        for (int k = 0; k < u; ++k) v0 = v0 - A[k * nc + u] * A[k * nc + u];
        if (!(v0 > PIVOT_MIN)) return;
        const double rr = sqrt(v0);
        A[u * nc + u] = rr;
        for (int v = u + 1; v < nc; ++v) {
            double s2 = A[u * nc + v];
            for (int k = 0; k < u; ++k) s2 = s2 - A[k * nc + u] * A[k * nc + v];
            A[u * nc + v] = s2 / rr;
        }
    }
    double z[NC_MAX];
    for (int u = 0; u < nc; ++u) bv[u] = bv[u] / sc[u];
    for (int u = 0; u < nc; ++u) {
        double s2 = bv[u];
        for (int k = 0; k < u; ++k) s2 = s2 - A[k * nc + u] * z[k];
        z[u] = s2 / A[u * nc + u];
    }
    for (int u = nc - 1; u >= 0; --u) {
        double s2 = z[u];
        for (int k = u + 1; k < nc; ++k) s2 = s2 - A[u * nc + k] * z[k];
        z[u] = s2 / A[u * nc + u];
    }
    out[r * nmax + p] = z[0] / sc[0] - Z[i * T + a + p + 1];
}

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


def _kernels(M: int):
    mod = _CACHE.get(M)
    if mod is None:
        import cupy as cp

        mod = _CACHE[M] = cp.RawModule(
            code="#include <math_constants.h>\n" + f"#define M {int(M)}\n" + _SOURCE,
            options=("--fmad=false", "--std=c++17"))
    return mod


def _starts(n, ser):
    import cupy as cp

    s = np.zeros(len(ser) + 1, np.int64)
    np.cumsum(n[np.asarray(ser)], out=s[1:])
    return cp.asarray(s), int(s[-1])


def conditional_pools(Z, t0, n, excl, pser, pmask, poff, pools):
    """The pools of every pool job into ``pools`` (``cpu_conditional``)."""
    import cupy as cp

    M = pools.shape[1]
    n_host = cp.asnumpy(n)
    starts, total = _starts(n_host, cp.asnumpy(pser))
    if total == 0:
        return
    k = _kernels(M).get_function("conditional_pools")
    k(((total + _BLOCK - 1) // _BLOCK,), (_BLOCK,),
      (Z, np.int64(Z.shape[1]), t0, n, excl, pser, pmask, poff, starts, np.int64(len(pser)),
       np.int64(total), pools))


def conditional_errors(Z, t0, n, gser, gbase, bcodes, gpool, pools, gk, gcand, ccodes, gout,
                       weight, theta, out):
    """The error rows of every model group into ``out`` (``cpu_conditional``)."""
    R, nmax = out.shape
    if R == 0:
        return
    nc = int(cp_max(gbase[:, 1] - gbase[:, 0])) + 2
    if nc > NC_MAX:
        raise ValueError(f"the predictive conditioning's GPU kernel solves systems of at most "
                         f"{NC_MAX} columns; this model has {nc}: use fewer drivers "
                         "(max_drivers) or a smaller E_max, or backend='cpu'")
    pb = (nmax + _BLOCK - 1) // _BLOCK
    k = _kernels(pools.shape[1]).get_function("conditional_errors")
    k((R * pb,), (_BLOCK,),
      (Z, np.int64(Z.shape[1]), t0, n, gser, gbase, bcodes, gpool, pools, gk, gcand, ccodes,
       gout, np.int64(len(gser)), np.int64(R), np.int64(nmax), np.int64(pb),
       np.float64(weight), np.float64(theta), out))


def cp_max(a) -> int:
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
    top = cp_max(nn)
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
