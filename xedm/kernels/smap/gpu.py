"""S-map on the GPU (CuPy): the QR solver, the twin of :func:`xedm.kernels.smap.cpu.smap_predict`.

Imported only for ``backend="gpu"``.  ``smap_qr`` (registered as the GPU's "smap_predict")
has the signature and semantics of the CPU's S-map kernels (:mod:`xedm.kernels.smap.cpu`,
:func:`xedm.kernels.smap.cpu_qr.smap_qr`)::

    smap_qr(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
            idx, dist, use_table, alpha, want_sv, xexp, yexp)
        -> pred (nth, B, P), coef (nth, B, P, D+1), sv (nth, B, P, D+1)

``smap_qr``: the CPU's Householder QR / minimum-norm SVD solver, in three steps on the device.

1. ``smap_tsqr`` (D + 1 <= 32 unknowns): one warp per problem (series, prediction row,
   theta) streams the problem's weighted rows ``diag(w) [1, X | y]`` (never stored) in chunks
   of 32 RD rows, RD rows a lane in registers, and merges each chunk into the (D+1) x (D+2)
   triangular factor (with Q^T b) held in shared memory by D + 1 Householder reflections of
   the stacked [R; chunk] (a tall-skinny QR: reflection j touches row j of R and the chunk
   only).  Each reflection's dot products are one transpose-reduce over the warp (lane l
   ends with the sum of column j + l).  The CPU reduces all rows at once; this is the same
   factorisation up to rounding (and the signs of R's rows, which no result depends on).
   A reflection whose sum of squares could under- or overflow (extreme weights, huge ridge
   rows) flags its problem for step 1b.
1b. ``smap_qr_thread`` (:mod:`xedm.kernels.smap.gpu_thread`): one thread per problem runs the
   CPU's Householder QR step for step, with its power-of-2 rescaling of such vectors
   (flagged problems, and D + 1 > 32).
2. The finishing from the triangular factor, batched on the device (CuPy): column norms,
   back substitution when clearly full rank, else the minimum-norm solve from the SVD of the
   column-scaled factor (cuSOLVER's batched Jacobi SVD for D + 1 <= 32) with the CPU's cut
   ``eps * max(rows, D+1) * s_max``; singular values from the factor.
Problems with fewer rows than unknowns (rare: fewer neighbours than coordinates) go to the CPU
kernel.

Agreement with the CPU: the same factor and solve up to rounding (another summation order,
CUDA's ``exp``, another SVD algorithm on the small factor), amplified by the conditioning of
each local fit; the tests ask for 1e-9 of the largest |value| on predictions, coefficients
and singular values.  On numerically rank-deficient fits (smooth Lorenz-63 at E = 20) the
coefficients along the smallest kept singular directions are fixed by rounding alone, on the
CPU as here (tests/test_smap_tsqr.py): they agree to 1e-9 in the well-determined directions.

On an H100 at L = 10,000, E = 20, theta = 2 (smooth Lorenz-63, every fit rank deficient)
``smap_tsqr`` takes 36 ms and the finishing 27 ms (mostly the batched SVD); the whole S-map
call 73-82 ms, against 7.4 s with one thread per problem for everything.
"""

from __future__ import annotations

import numpy as np

from .gpu_thread import PROBLEM_PARAMS, RIDGE_WEIGHT, problem_args, smap_qr_thread

_TSQR = r"""
// compile-time: NC (unknowns, D + 1 <= 32), RD (rows per lane per chunk), WPB (warps a block)
#include <math_constants.h>
#define NCOL (NC + 1)
#define FULL 0xffffffffu
""" + RIDGE_WEIGHT + r"""

// One step of the transpose-reduce: slots [0, H) keep the sums of the lane's half
template <int N, int H>
__device__ __forceinline__ void butterfly(double (&buf)[32], const int lane)
{
    const bool up = (lane & H) != 0;
#pragma unroll
    for (int i = 0; i < H; ++i) {
        if (i < N) {
            const double lo = buf[i], hi = buf[i + H];
            buf[i] = (up ? hi : lo) + __shfl_xor_sync(FULL, up ? lo : hi, H);
        }
    }
    if constexpr (H > 1) butterfly<N, H / 2>(buf, lane);
}

// One Householder reflection of the stacked [R; chunk] on column J: R row J (shared memory)
// and the chunk's rows (registers, RD a lane); the other rows of R are zero in column J.
template <int J>
__device__ __forceinline__ void reflect(double (&a)[RD][NCOL], double* Rs, double* Fs,
                                        const int lane, int& flag)
{
    constexpr int N = NCOL - J;  // columns J..NC (the target column last)
    double buf[32];
#pragma unroll
    for (int s = 0; s < 32; ++s) {
        double acc = 0.0;
        if (s < N) {
#pragma unroll
            for (int r = 0; r < RD; ++r) acc = fma(a[r][J], a[r][J + s], acc);
        }
        buf[s] = acc;
    }
    // transpose-reduce: lane l ends with the warp's sum of slot l (column J + l)
    butterfly<N, 16>(buf, lane);
    const double Rjj = Rs[J * NCOL + J];
    const double Rjc = lane < N ? Rs[J * NCOL + J + lane] : 0.0;
    const double Dl = buf[0] + Rjj * Rjc;          // x . column (J + lane), x = column J
    const double nrm2 = __shfl_sync(FULL, Dl, 0);  // |x|^2
    if (!(nrm2 > 0x1p-900 && nrm2 < 0x1p+900)) {
        bool nz = Rjj != 0.0;
#pragma unroll
        for (int r = 0; r < RD; ++r) nz = nz || a[r][J] != 0.0;
        // zero column: no reflection (as the CPU); squares that under/overflow: the
        // per-thread kernel, which scales the vector as the CPU does
        if (nrm2 != 0.0 || __any_sync(FULL, nz)) flag = 1;
        return;
    }
    const double norm = sqrt(nrm2);
    const double al = Rjj >= 0 ? -norm : norm;
    const double v0 = Rjj - al;
    const double vnorm2 = v0 * v0 + (nrm2 - Rjj * Rjj);
    if (!(vnorm2 > 0.0)) {
        if (lane == 0) Rs[J * NCOL + J] = al;
        __syncwarp();
        return;
    }
    // v = x - al e_J: v . column c = x . column c - al R_Jc
    const double f = 2.0 * (Dl - al * Rjc) / vnorm2;
    if (lane >= 1 && lane < N) Rs[J * NCOL + J + lane] = Rjc - f * v0;
    if (lane == 0) Rs[J * NCOL + J] = al;
    if (lane < N) Fs[lane] = f;
    __syncwarp();
#pragma unroll
    for (int s = 1; s < N; ++s) {
        const double fc = Fs[s];
#pragma unroll
        for (int r = 0; r < RD; ++r) a[r][J + s] = fma(-fc, a[r][J], a[r][J + s]);
    }
    __syncwarp();
}

template <int J> struct Steps {
    static __device__ __forceinline__ void run(double (&a)[RD][NCOL], double* Rs, double* Fs,
                                               const int lane, int& flag)
    {
        reflect<J>(a, Rs, Fs, lane, flag);
        Steps<J + 1>::run(a, Rs, Fs, lane, flag);
    }
};
template <> struct Steps<NC> {
    static __device__ __forceinline__ void run(double (&)[RD][NCOL], double*, double*,
                                               const int, int&) {}
};

// Entry j of a problem's neighbour list: the table's entry j (use_table; -1: none) or library
// time j with its distance (the plain float64 sum, column by column and lag by lag, unfused);
// its library time in *q, its distance in *d; true for a neighbour.
__device__ __forceinline__ bool neighbour(
    const long long j, const int use_table, const long long* __restrict__ idx,
    const double* __restrict__ dist, const long long row,
    const unsigned char* __restrict__ lib_b, const long long p, const long long excl,
    const double* __restrict__ xb, const long long* __restrict__ off, const double* xs,
    long long* q, double* d)
{
    if (use_table) {
        *q = idx[row + j];
        if (*q < 0) return false;
        *d = dist[row + j];
        return true;
    }
    *q = j;
    if (!lib_b[j] || (j - p <= excl && p - j <= excl)) return false;
    double s = 0.0;
#pragma unroll
    for (int k = 1; k < NC; ++k) {
        const double diff = xs[k] - xb[j + off[k]];
        s = __dadd_rn(s, __dmul_rn(diff, diff));
    }
    *d = sqrt(s);
    return true;
}

extern "C" __global__ void __launch_bounds__(WPB * 32) smap_tsqr(
    const double* __restrict__ X, const long long C, const long long W,""" + PROBLEM_PARAMS + r"""
    const long long NP, double* __restrict__ R, double* __restrict__ info)
{
    __shared__ double Rsh[WPB][NC * NCOL];
    __shared__ double Fsh[WPB][32];
    __shared__ double Xsh[WPB][NC];
    __shared__ long long off[NC];
    const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    for (int k = threadIdx.x; k < NC; k += blockDim.x)  // column k >= 1: x_c(t - e tau)
        off[k] = k == 0 ? 0 : ((k - 1) / E) * W - ((k - 1) % E) * tau;
    __syncthreads();
    const long long prob = (long long)blockIdx.x * WPB + wib;
    if (prob >= NP) return;
    double* Rs = Rsh[wib];
    double* Fs = Fsh[wib];
    double* xs = Xsh[wib];
    const long long b = prob_b[prob], pi = prob_pi[prob];
    const double theta = thetas[prob_it[prob]];
    const long long p = pred_t[pi];
    const double* xb = X + b * C * W + pad;
    for (int i = lane; i < NC * NCOL; i += 32) Rs[i] = 0.0;
    for (int k = lane; k < NC; k += 32) xs[k] = k == 0 ? 1.0 : xb[p + off[k]];
    __syncwarp();
    const long long lo = use_table ? 0 : q_lo[b], hi = use_table ? depth : q_hi[b];
    const long long row = (b * P + pi) * depth;
    const unsigned char* lib_b = lib_ok + b * T;
    // pass 1: how many neighbours, their mean and smallest distance
    long long m = 0;
    double dsum = 0.0, dmin = CUDART_INF;
    for (long long j = lo + lane; j < hi; j += 32) {
        long long q;
        double d;
        if (neighbour(j, use_table, idx, dist, row, lib_b, p, excl, xb, off, xs, &q, &d)) {
            dsum += d;
            dmin = fmin(dmin, d);
            ++m;
        }
    }
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) {
        dsum += __shfl_xor_sync(FULL, dsum, o);
        dmin = fmin(dmin, __shfl_xor_sync(FULL, dmin, o));
        m += __shfl_xor_sync(FULL, m, o);
    }
    double* inf = info + prob * 5;
    if (lane == 0) { inf[0] = (double)m; inf[4] = 0.0; }
    if (m == 0) return;
    const double dmean = dsum / m;
    const bool local = theta != 0.0 && dmean != 0.0;
    const double lf = local ? theta * dmin / dmean : 0.0;
    const long long nridge = alpha > 0.0 ? NC - 1 : 0;
    if (lane == 0) { inf[1] = dmin; inf[2] = dmean; inf[3] = lf; }
    if (m + nridge < NC) return;  // the host hands these to the CPU kernel
    int flag = 0;
    double a[RD][NCOL];
    // pass 2: chunks of 32 RD rows, each merged into R by NC reflections
    for (long long j0 = lo; j0 < hi && !flag; j0 += 32 * RD) {
        bool any = false;
#pragma unroll
        for (int r = 0; r < RD; ++r) {
            const long long j = j0 + lane + 32 * r;
            long long q;
            double d;
            if (j < hi && neighbour(j, use_table, idx, dist, row, lib_b, p, excl, xb, off, xs,
                                   &q, &d)) {
                const double w = local ? exp(-theta * (d - dmin) / dmean) : 1.0;
                a[r][0] = w;
#pragma unroll
                for (int k = 1; k < NC; ++k) a[r][k] = w * xb[q + off[k]];
                a[r][NC] = w * y[b * T + q + Tp];
                any = true;
            } else {
#pragma unroll
                for (int k = 0; k < NCOL; ++k) a[r][k] = 0.0;
            }
        }
        if (!__any_sync(FULL, any)) continue;
        Steps<0>::run(a, Rs, Fs, lane, flag);
    }
    if (nridge > 0 && !flag) {  // the ridge rows, one chunk
        const double ra = ridge_weight(alpha, lf, xexp[b]);
#pragma unroll
        for (int r = 0; r < RD; ++r) {
            const int rr = lane + 32 * r;
#pragma unroll
            for (int k = 0; k < NCOL; ++k) a[r][k] = (rr < nridge && k == 1 + rr) ? ra : 0.0;
        }
        Steps<0>::run(a, Rs, Fs, lane, flag);
    }
    __syncwarp();
    if (lane == 0) inf[4] = flag;
    // R (NC x NC, upper) and Q^T b (first NC entries): R[prob] is (NC, NC + 1)
    double* Rp = R + prob * NC * NCOL;
    for (int i = lane; i < NC * NCOL; i += 32) Rp[i] = Rs[i];
}
"""

TSQR_MAX_NC = 32  # unknowns (D + 1) at most for smap_tsqr (a warp's lanes)
WARPS = 4  # warps (problems) a block
_TSQR_CACHE: dict = {}


def tsqr_rows(nc):
    """Rows a lane holds per chunk for nc unknowns (registers: RD (nc + 1) doubles)."""
    return 3 if nc <= 12 else 2 if nc <= 24 else 1


def _tsqr_kernel(nc, rd, warps):
    import cupy as cp

    key = (nc, rd, warps)
    if key not in _TSQR_CACHE:
        mod = cp.RawModule(code=_TSQR, options=("--std=c++17", f"-DNC={nc}", f"-DRD={rd}",
                                                f"-DWPB={warps}"))
        _TSQR_CACHE[key] = mod.get_function("smap_tsqr")
    return _TSQR_CACHE[key]


_BATCH_BYTES = 1 << 28  # bytes of triangular factors a batch of problems (smap_qr)


def _norms(xp, R):
    """Column norms of the triangular factors R (n, nc, nc), without overflow."""
    mx = xp.abs(R).max(axis=1)
    pos = mx > 0
    e = xp.where(pos, xp.frexp(xp.where(pos, mx, 1.0))[1], 0).astype(np.int32)
    scaled = xp.ldexp(R, -e[:, None, :])
    out = xp.ldexp(xp.sqrt((scaled * scaled).sum(axis=1)), e)
    return xp.where(pos, out, 1.0)


def _finish(xp, R, rhs, rows, nc):
    """The CPU's _lstsq after its QR, batched on ``xp`` (NumPy or CuPy): solutions (n, nc)
    from the factors R (n, nc, nc), Q^T b (n, nc) and the row counts (n,)."""
    eps = np.finfo(np.float64).eps
    cn = _norms(xp, R)
    diag = xp.abs(xp.diagonal(R, axis1=1, axis2=2)) / cn
    full = diag.min(axis=1) > 1e-8 * diag.max(axis=1)
    sol = xp.zeros(rhs.shape)
    fi = xp.flatnonzero(full)
    si = xp.flatnonzero(~full)
    if fi.size:
        Rf, bf = R[fi], rhs[fi]
        s = xp.zeros(bf.shape)
        for i in range(nc - 1, -1, -1):
            acc = bf[:, i] - (Rf[:, i, i + 1:] * s[:, i + 1:]).sum(axis=1)
            s[:, i] = acc / Rf[:, i, i]
        sol[fi] = s
    if si.size:
        cs = cn[si]
        U, s, Vt = xp.linalg.svd(R[si] / cs[:, None, :])
        cut = (eps * xp.maximum(rows[si], nc))[:, None] * s.max(axis=1, keepdims=True)
        keep = s > cut
        ub = xp.einsum("nri,nr->ni", U, rhs[si])
        tmp = xp.where(keep, ub / xp.where(keep, s, 1.0), 0.0)
        sol[si] = xp.einsum("nic,ni->nc", Vt, tmp) / cs
    return sol


def _device_args(Xpad, lib_ok, pred_t, y, thetas, q_lo, q_hi, idx, dist, use_table, xexp):
    import cupy as cp

    return dict(
        X=cp.asarray(Xpad), lib=cp.asarray(np.ascontiguousarray(lib_ok, np.uint8)),
        pt=cp.asarray(pred_t),
        y=cp.asarray(np.ascontiguousarray(np.where(np.isfinite(y), y, 0.0), np.float64)),
        th=cp.asarray(thetas), qlo=cp.asarray(np.asarray(q_lo, np.int64)),
        qhi=cp.asarray(np.asarray(q_hi, np.int64)),
        idx=(cp.asarray(np.ascontiguousarray(idx, np.int64)) if use_table
             else cp.zeros(1, cp.int64)),
        dist=cp.asarray(np.ascontiguousarray(dist, np.float64)) if use_table else cp.zeros(1),
        xexp=cp.asarray(xexp))


def smap_qr_tsqr(dev, shape, pad, E, tau, Tp, excl, depth, use_table, alpha, pb, ppi, pit,
                 rd=None, warps=None):
    """Factors of the problems (pb, ppi, pit) by ``smap_tsqr`` (one warp a problem): CuPy
    R (n, nc, nc + 1) (the factor, then Q^T b) and info (n, 5): neighbours, smallest and
    mean distance, the log of the weights' common factor, and 1 where the problem must go
    to :func:`smap_qr_thread`."""
    import cupy as cp

    B, C, W, T, P = shape
    nc = C * int(E) + 1
    n = len(pb)
    i64 = np.int64
    R = cp.zeros((n, nc, nc + 1), cp.float64)
    info = cp.zeros((n, 5), cp.float64)
    if n == 0:
        return R, info
    warps = int(warps or WARPS)
    kern = _tsqr_kernel(nc, int(rd or tsqr_rows(nc)), warps)
    kern(((n + warps - 1) // warps,), (32 * warps,),
         (dev["X"], i64(C), i64(W))
         + problem_args(dev, shape, pad, E, tau, Tp, excl, depth, use_table, alpha, pb, ppi,
                        pit)
         + (i64(n), R, info))
    return R, info


def smap_qr(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
            idx, dist, use_table, alpha, want_sv, xexp, yexp):
    """S-map by the QR solver on the device (see
    :func:`xedm.kernels.smap.cpu_qr.smap_qr`): every problem, neighbour tables and singular
    values included; NumPy arrays out.  (The CPU solves by normal equations first; here that
    stage measured slower than this solver alone, see :mod:`xedm.kernels.smap.cpu`.)"""
    import cupy as cp

    Xpad = np.ascontiguousarray(Xpad, np.float64)
    B, C, W = Xpad.shape
    T = lib_ok.shape[-1]
    pred_t = np.asarray(pred_t, np.int64)
    P = len(pred_t)
    thetas = np.asarray(thetas, np.float64)
    nth = len(thetas)
    D = C * int(E)
    nc = D + 1
    xexp = np.asarray(xexp, np.int64)
    yexp = np.asarray(yexp, np.int64)
    pred = np.full((nth, B, P), np.nan)
    coef = np.full((nth, B, P, nc), np.nan)
    sv = np.full((nth, B, P, nc if want_sv else 0), np.nan)
    ok = np.asarray(pred_ok, bool)
    bb, pp = np.nonzero(ok)
    if len(bb) == 0 or nth == 0:
        return pred, coef, sv
    pb_all = np.repeat(bb, nth).astype(np.int64)
    ppi_all = np.repeat(pp, nth).astype(np.int64)
    pit_all = np.tile(np.arange(nth, dtype=np.int64), len(bb))
    nridge = D if alpha > 0.0 else 0
    depth = int(idx.shape[2]) if use_table else 0
    dev = _device_args(Xpad, lib_ok, pred_t, y, thetas, q_lo, q_hi, idx, dist, use_table, xexp)
    shape = (B, C, W, T, P)
    cpu_rows = set()
    batch = max(1, _BATCH_BYTES // (8 * nc * (nc + 1)))
    for s0 in range(0, len(pb_all), batch):  # bounded device memory for the factors
        pb, ppi, pit = (a[s0:s0 + batch] for a in (pb_all, ppi_all, pit_all))
        if nc <= TSQR_MAX_NC:
            Rd, info = smap_qr_tsqr(dev, shape, pad, E, tau, Tp, excl, depth, use_table, alpha,
                                    pb, ppi, pit)
            flagged = np.flatnonzero(info[:, 4].get() != 0)
        else:
            Rd = info = None
            flagged = np.arange(len(pb))
        if len(flagged):  # the CPU's rescaled reflections, one thread a problem
            R2, i2 = smap_qr_thread(dev, shape, pad, E, tau, Tp, excl, q_lo, q_hi, depth,
                                    use_table, alpha, pb[flagged], ppi[flagged], pit[flagged])
            if Rd is None:
                Rd, info = R2, i2
            else:
                fl = cp.asarray(flagged)
                Rd[fl] = R2
                info[fl] = i2
        inf = info.get()
        m = inf[:, 0].astype(np.int64)
        rows = m + nridge
        good = (m > 0) & (rows >= nc)
        low = np.flatnonzero((m > 0) & (rows < nc))
        cpu_rows |= set(zip(pb[low].tolist(), ppi[low].tolist(), strict=True))
        if good.any():
            gi = np.flatnonzero(good)
            gb, gpi, git = pb[gi], ppi[gi], pit[gi]
            Rg = Rd[cp.asarray(gi)]
            R = Rg[:, :, :nc]
            sol = _finish(cp, R, Rg[:, :, nc], cp.asarray(rows[gi]), nc).get()
            # the state of each prediction point: [1, x_c(p - e tau) for c for e]
            xp = np.ones((len(gb), nc))
            for c in range(C):
                for e in range(int(E)):
                    xp[:, 1 + c * int(E) + e] = Xpad[gb, c, pad + pred_t[gpi] - e * tau]
            yhat = np.zeros(len(gb))
            for cc in range(nc):
                yhat += sol[:, cc] * xp[:, cc]
            pred[git, gb, gpi] = np.ldexp(yhat, yexp[gb])
            shift = np.where(np.arange(nc) > 0, xexp[gb][:, None], 0)
            coef[git, gb, gpi] = np.ldexp(sol, yexp[gb][:, None] - shift)
            if want_sv:
                gmax = np.maximum(0, xexp[gb])
                svcol = np.empty((len(gb), nc))
                svcol[:, 0] = np.ldexp(1.0, -gmax)
                svcol[:, 1:] = np.ldexp(1.0, xexp[gb] - gmax)[:, None]
                s = cp.linalg.svd(R * cp.asarray(svcol)[:, None, :], compute_uv=False).get()
                s = -np.sort(-s, axis=1)
                lf = inf[gi, 3]
                sv[git, gb, gpi] = np.ldexp(s * np.exp(-lf)[:, None], gmax[:, None])
    if cpu_rows:  # fewer rows than unknowns: the CPU kernel's lstsq for those rows
        from .cpu_qr import smap_qr as cpu_smap

        mask = np.zeros_like(ok)
        for b_, pi_ in cpu_rows:
            mask[b_, pi_] = True
        cp_pred, cp_coef, cp_sv = cpu_smap(Xpad, pad, lib_ok, pred_t, mask, y, E, tau, Tp,
                                           thetas, excl, q_lo, q_hi, idx, dist, use_table,
                                           alpha, want_sv, xexp, yexp)
        pred[:, mask] = cp_pred[:, mask]
        coef[:, mask] = cp_coef[:, mask]
        if want_sv:
            sv[:, mask] = cp_sv[:, mask]
    return pred, coef, sv
