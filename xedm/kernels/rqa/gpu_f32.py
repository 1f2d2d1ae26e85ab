"""CuPy kernels for RQA line histograms of delay embeddings: float32 distances, exact decisions.

Imported only for ``backend="gpu"``, and used by :func:`xedm.kernels.rqa.gpu.line_histograms`
when every matrix is a delay embedding of one variable (one channel, offsets ``0, tau, ...,
(E-1) tau``) of finite data and all rows run in one launch.

Every distance is first computed in float32 from a centred float32 copy of the data (the
card's float32 rate is twice its float64 rate, and the loads are half as wide).  A guard band
around each threshold bounds the float32 error (from the data's range, below); a distance
outside every band decides by itself, one inside a band is summed again in float64 in the
CPU's order, which then decides.  So the recurrence matrix, and every count, is exactly the
CPU's.  Each thread walks one column (``rqa_vf32``: vertical and white vertical lines) or
one diagonal (``rqa_df32``) and keeps the ``W = (E-1) tau + 1`` consecutive values that its
next distances need in registers (the loop is unrolled ``W`` times, so every register index
is static): one new value per row instead of E.

Both kernels take a table of blocks (matrix, job, first column or diagonal), so any number
of matrices (RQA windows) and thresholds (eps sweeps) run in one launch of each.
"""

from __future__ import annotations

import numpy as np

from .layout import diagonal_ranges, hist_layout, hist_source
from .layout import split_area as _split_area
from .layout import split_even as _split_even

_B = 256  # threads per block
_SHARED_BINS = 2048
_W_MAX = 64  # the longest register window (the loop body is unrolled this many times)
#: steps whose distances are computed together, before their branching tests (G), and the
#: blocks per multiprocessor that each kernel's registers must allow (None: from W)
#: (measured on an H200 at N = 1,043,112, E = 5, tau = 3: G = 4 with 4 blocks each 1.41 s,
#: G = 1 1.52 s; recording each row's decision as a bit and reading runs off 32 rows at a
#: time was 2.7 times slower than this branch per row)
TUNE = {"G": 4, "vblocks": None, "dblocks": None}
_K_MAX = 4  # at most this many thresholds (more: the kernels of xedm.kernels.rqa.gpu)

_CACHE: dict = {}


def qualifies(prob, norm: int, nk: int = 1) -> int:
    """The delay ``tau`` when ``prob`` suits these kernels with ``nk`` thresholds, else 0."""
    if int(prob.nch) != 1 or nk > _K_MAX:
        return 0
    cvar, coff = np.asarray(prob.cvar), np.asarray(prob.coff)
    E = coff.size
    if np.unique(cvar).size != 1:
        return 0
    o = np.sort(coff - coff.min())
    tau = int(o[1]) if E > 1 else 1
    if tau < 1 or not np.array_equal(o, tau * np.arange(E)) or (E - 1) * tau + 1 > _W_MAX:
        return 0
    if not (np.isfinite(prob.X).all() and np.isfinite(prob.Y).all()):
        return 0
    return tau


def _source(E, tau, norm, nk, order, B, G=4, vblocks=None, dblocks=None):
    """Kernel source; ``order``: the coordinates' offsets in the CPU's summation order."""
    W = (E - 1) * tau + 1
    vblocks = vblocks or (4 if W <= 24 else 2)
    dblocks = dblocks or (4 if W <= 14 else 2)
    hs = max(_SHARED_BINS // (2 * nk), 16)
    if norm == 0:
        f_acc = "ACC = fmaf(d_, d_, ACC);"
        d_acc = "a = a + d_ * d_;"
    elif norm == 1:
        f_acc = "ACC = fmaxf(fabsf(d_), ACC);"
        d_acc = "{ double e_ = fabs(d_); a = (e_ > a) ? e_ : a; }"
    else:
        f_acc = "ACC = ACC + fabsf(d_);"
        d_acc = "a = a + fabs(d_);"
    exact_body = " ".join(f"{{ double d_ = xp[{o}] - yp[{o}]; {d_acc} }}" for o in order)
    thr_load = " ".join(f"const double th{kk} = thr[m * {nk} + {kk}]; "
                        f"const float lo{kk} = thf[2 * (m * {nk} + {kk})]; "
                        f"const float hi{kk} = thf[2 * (m * {nk} + {kk}) + 1];"
                        for kk in range(nk))
    # per threshold: the run state, and the fast test "sg * af < eg" that holds while the
    # distance is surely on the run's side (cur: af < lo; not cur: af > hi)
    state = " ".join(f"bool cur{kk} = false; int st{kk} = 0; float sg{kk} = -1.0f, "
                     f"eg{kk} = -hi{kk};" for kk in range(nk))

    def slow_path(kind):
        """The rare branch: a distance inside a guard band (summed again in float64) or a
        run that starts or ends (the histograms)."""
        out = ["double a = -1.0;"]
        for kk in range(nk):
            if kind == "v":
                act = (f"const int len = i - st{kk}; "
                       f"if (cur{kk}) hadd(shv, hv, {kk}, len, lp1, 1u); "
                       f"else if (len > 0) hadd(shw, hw, {kk}, len, lp1, 1u);")
            else:
                act = f"if (cur{kk}) hadd(shd, hd, {kk}, i - st{kk}, lp1, w);"
            out.append(f"bool rc{kk} = af < lo{kk}; if (!rc{kk} && af <= hi{kk}) {{ "
                       f"if (a < 0.0) a = exact(xa + i, yb + JCOL); rc{kk} = a < th{kk}; }} "
                       f"if (rc{kk} != cur{kk}) {{ {act} cur{kk} = rc{kk}; st{kk} = i; "
                       f"sg{kk} = rc{kk} ? 1.0f : -1.0f; eg{kk} = rc{kk} ? lo{kk} : -hi{kk}; }}")
        return " ".join(out)

    def finish(kind, end):
        out = []
        for kk in range(nk):
            if kind == "v":
                out.append(f"{{ const int len = {end} - st{kk}; "
                           f"if (cur{kk}) hadd(shv, hv, {kk}, len, lp1, 1u); "
                           f"else if (len > 0) hadd(shw, hw, {kk}, len, lp1, 1u); }}")
            else:
                out.append(f"if (cur{kk}) hadd(shd, hd, {kk}, {end} - st{kk}, lp1, w);")
        return " ".join(out)

    def steps(kind, guarded):
        """The W unrolled steps of one pass: row ib + u reads the ring slots (u + o) % W
        (slot u is refilled right after step u's distance, for step u + 1); distances of
        ``G`` steps are computed before their tests, which branch, so that they overlap;
        ``guarded``: the last pass, rows checked against the end."""
        body = []
        lim = "nrows" if kind == "v" else "len_k"
        for g0 in range(0, W, G):
            grp = range(g0, min(W, g0 + G))
            lines = []
            for u in grp:
                if kind == "v":
                    dist = " ".join(f"{{ const float d_ = xw[{(u + o) % W}] - yf[{o // tau}]; "
                                    f"{f_acc.replace('ACC', f'af{u}')} }}" for o in order)
                    nxt = f"xw[{u}] = xf[ib + {u + W}];"
                else:
                    dist = " ".join(f"{{ const float d_ = xw[{(u + o) % W}] - yw[{(u + o) % W}]; "
                                    f"{f_acc.replace('ACC', f'af{u}')} }}" for o in order)
                    nxt = f"xw[{u}] = xf[ib + {u + W}]; yw[{u}] = yf[ib + {u + W}];"
                lines.append(f"float af{u} = 0.0f; {dist} {nxt}")
            for u in grp:
                test = " || ".join(f"!(sg{kk} * af{u} < eg{kk})" for kk in range(nk))
                core = (f"{{ const int i = ib + {u}; const float af = af{u}; "
                        f"if ({test}) {{ {slow_path(kind)} }} }}")
                if guarded:
                    core = f"if (ib + {u} < {lim}) {core}"
                lines.append(core)
            body.append("\n        ".join(lines))
        return "\n        ".join(body)

    return hist_source(hs, nk) + f"""
// the distance in float64, coordinates in the CPU's order (no fused multiply-add)
__device__ __noinline__ double exact(const double* xp, const double* yp) {{
    double a = 0.0;
    {exact_body}
    return a;
}}

// jobs: (matrix, first, end, row offset, column offset, rows, columns, weight) int64 x 8
// blocks: (job, first column or diagonal of the block) int64 x 2
// thf: (lower, upper) float32 edges of each threshold's guard band
extern "C" __global__ void __launch_bounds__({B}, {vblocks}) rqa_vf32(
    const double* __restrict__ D, const float* __restrict__ F,
    const long long* __restrict__ jobs, const long long* __restrict__ blocks,
    const double* __restrict__ thr, const float* __restrict__ thf,
    unsigned long long* hv_all, unsigned long long* hw_all, long long lp1)
{{
    __shared__ unsigned int shv[NK * HS];
    __shared__ unsigned int shw[NK * HS];
    for (int b = threadIdx.x; b < NK * HS; b += blockDim.x) {{ shv[b] = 0u; shw[b] = 0u; }}
    __syncthreads();
    const long long* job = jobs + 8 * blocks[2 * blockIdx.x];
    const long long m = job[0], cend = job[2], xo = job[3], nrows = job[5];
    const long long j = blocks[2 * blockIdx.x + 1] + threadIdx.x;
    if (j < cend) {{
        const double* xa = D + xo;
        const double* yb = D + job[4];
        #define JCOL j
        float yf[{E}];
        #pragma unroll
        for (int c = 0; c < {E}; ++c) yf[c] = F[job[4] + j + c * {tau}];
        float xw[{W}];
        #pragma unroll
        for (int q = 0; q < {W}; ++q) xw[q] = F[xo + q];
        {thr_load}
        unsigned long long* hv = hv_all + m * NK * lp1;
        unsigned long long* hw = hw_all + m * NK * lp1;
        {state}
        const float* xf = F + xo;
        int ib = 0;
        for (; ib + {W} <= nrows; ib += {W}) {{
        {steps("v", False)}
        }}
        if (ib < nrows) {{
        {steps("v", True)}
        }}
        {finish("v", "nrows")}
        #undef JCOL
    }}
    __syncthreads();
    hflush(shv, hv_all + job[0] * NK * lp1, lp1);
    hflush(shw, hw_all + job[0] * NK * lp1, lp1);
}}

extern "C" __global__ void __launch_bounds__({B}, {dblocks}) rqa_df32(
    const double* __restrict__ D, const float* __restrict__ F,
    const long long* __restrict__ jobs, const long long* __restrict__ blocks,
    const double* __restrict__ thr, const float* __restrict__ thf,
    unsigned long long* hd_all, long long lp1)
{{
    __shared__ unsigned int shd[NK * HS];
    for (int b = threadIdx.x; b < NK * HS; b += blockDim.x) shd[b] = 0u;
    __syncthreads();
    const long long* job = jobs + 8 * blocks[2 * blockIdx.x];
    const long long m = job[0], kend = job[2], xo = job[3], nrows = job[5], ncols = job[6];
    const unsigned int w = (unsigned int)job[7];
    const long long k = blocks[2 * blockIdx.x + 1] + threadIdx.x;
    if (k < kend) {{
        const int len_k = (int)min(nrows, ncols - k);
        const long long yo = job[4] + k;  // column i + k of row i
        const double* xa = D + xo;
        const double* yb = D + yo;
        #define JCOL i
        float xw[{W}], yw[{W}];
        #pragma unroll
        for (int q = 0; q < {W}; ++q) {{ xw[q] = F[xo + q]; yw[q] = F[yo + q]; }}
        {thr_load}
        unsigned long long* hd = hd_all + m * NK * lp1;
        {state}
        const float* xf = F + xo;
        const float* yf = F + yo;
        int ib = 0;
        for (; ib + {W} <= len_k; ib += {W}) {{
        {steps("d", False)}
        }}
        if (ib < len_k) {{
        {steps("d", True)}
        }}
        {finish("d", "len_k")}
        #undef JCOL
    }}
    __syncthreads();
    hflush(shd, hd_all + job[0] * NK * lp1, lp1);
}}
"""


def _module(cp, key, args):
    mod = _CACHE.get(key)
    if mod is None:
        mod = cp.RawModule(code=_source(*args), options=("--fmad=false",))
        _CACHE[key] = mod
    return mod


def guard_bands(thr, M: float, E: int, norm: int):
    """float32 (lower, upper) edges around each threshold, ``thr`` (nmat, K) float64, for
    data centred into ``[-M, M]``.

    A float32 coordinate difference is off by at most ``3 u (2M)`` (``u`` = 2**-24: the two
    roundings of the centred values and the subtraction); a squared term by about
    ``2 (2M) 3u (2M)`` plus ``u (2M)^2`` where it is rounded before it is added (the
    bitmap kernel), and each of the E accumulations adds ``u`` of the sum (at most
    ``E (2M)^2``).  The band is eight times that bound, plus the rounding of the threshold
    to float32 and of the band's edges, so every distance outside it is on the same side of
    the threshold in float64 as in float32."""
    u = 2.0 ** -24
    span = 2.0 * M
    if norm == 0:
        err = E * (7 * u * span * span) + E * u * E * span * span
    elif norm == 1:
        err = 3 * u * span
    else:
        err = E * 3 * u * span + E * u * E * span
    g = 8.0 * err + 4 * u * np.abs(thr)
    lo = (thr - g).astype(np.float32)
    hi = (thr + g).astype(np.float32)
    # float32 rounding of the edges moves them at most one ulp; widen by one more
    lo = np.nextafter(lo, np.float32(-np.inf))
    hi = np.nextafter(hi, np.float32(np.inf))
    return np.stack([lo, hi], axis=-1)


def jobs_for(prob, ndev):
    """Per device: (vertical jobs, diagonal jobs), each an int64 (n, 8) array of (matrix,
    first, end, row offset, column offset, rows, columns, weight), offsets into the
    concatenated data ``D = [X.ravel(), Y.ravel()]`` (Y omitted when it is X)."""
    X = prob.X
    ldx, ldy = X.shape[1], prob.Y.shape[1]
    ybase = 0 if prob.Y is X else X.size
    v = int(prob.cvar[0])
    c0 = int(np.asarray(prob.coff).min())
    vjobs = [[] for _ in range(ndev)]
    djobs = [[] for _ in range(ndev)]
    for m, row in enumerate(prob.matrices):
        arow, astart, na, brow, bstart, nb = (int(q) for q in row)
        xo = (arow + v) * ldx + astart + c0
        yo = ybase + (brow + v) * ldy + bstart + c0
        for g, (a, b) in enumerate(_split_even(0, nb, ndev)):
            vjobs[(m + g) % ndev].append((m, a, b, xo, yo, na, nb, 1))
        # the line of identity (theiler 0) is added by line_histograms, not walked: one
        # thread down a million rows was the critical path of the whole launch
        g = m
        for k0, k1, weight, swapped, ra, rb in diagonal_ranges(prob, na, nb, identity=False):
            for a, b in _split_area(k0, k1, ra, rb, ndev):
                rows_off, cols_off = (yo, xo) if swapped else (xo, yo)
                djobs[g % ndev].append((m, a, b, rows_off, cols_off, ra, rb, weight))
                g += 1
    return [(np.array(vjobs[g], np.int64).reshape(-1, 8),
             np.array(djobs[g], np.int64).reshape(-1, 8)) for g in range(ndev)]


def _blocks(jobs, per_block):
    """The block table (job, first column or diagonal) of a job array."""
    rows = [(q, first) for q, job in enumerate(jobs)
            for first in range(int(job[1]), int(job[2]), per_block)]
    return np.array(rows, np.int64).reshape(-1, 2)


def line_histograms(prob, thr, norm, devices=None):
    """The float32-filtered twin of :func:`xedm.kernels.rqa.gpu.line_histograms`
    (``qualifies`` must hold): ``(diagonal, vertical, white)`` uint64 arrays
    ``(nmat, K, L + 1)``, identical to the CPU's."""
    import cupy as cp

    tau = qualifies(prob, norm, thr.shape[1])
    if not tau:
        raise ValueError("the float32-filtered RQA kernels need a one-variable delay "
                         "embedding of finite data")
    ndev = cp.cuda.runtime.getDeviceCount() if devices is None else len(devices)
    devices = list(range(ndev)) if devices is None else list(devices)
    nmat, K, _ = thr.shape
    lp1 = hist_layout(prob)
    coff = np.asarray(prob.coff) - int(np.asarray(prob.coff).min())
    E = coff.size
    order = tuple(int(o) for o in coff)  # the CPU's order of the coordinates
    X = np.ascontiguousarray(prob.X, np.float64)
    D = X.ravel() if prob.Y is prob.X else np.concatenate(
        [X.ravel(), np.ascontiguousarray(prob.Y, np.float64).ravel()])
    lo, hi = float(D.min()), float(D.max())
    center = 0.5 * (lo + hi)
    F = (D - center).astype(np.float32)
    M = float(np.abs(F).max()) if F.size else 0.0
    # padded: the register windows read up to W values past a matrix's last row
    F = np.concatenate([F, np.zeros(_W_MAX + 1, np.float32)])
    thr1 = np.ascontiguousarray(thr[:, :, 0], np.float64)
    thf = np.ascontiguousarray(guard_bands(thr1, M, E, norm), np.float32)
    per = jobs_for(prob, len(devices))
    state = []
    for g, dev in enumerate(devices):
        with cp.cuda.Device(dev):
            tune = (TUNE["G"], TUNE["vblocks"], TUNE["dblocks"])
            mod = _module(cp, (dev, E, tau, norm, K, order, _B) + tune,
                          (E, tau, norm, K, order, _B) + tune)
            vj, dj = per[g]
            vb, db = _blocks(vj, _B), _blocks(dj, _B)
            bufs = [cp.asarray(a) for a in (D, F, vj, dj, vb, db, thr1, thf)]
            hists = tuple(cp.zeros((nmat, K, lp1), cp.uint64) for _ in range(3))
            cp.cuda.Device(dev).synchronize()
            state.append((dev, mod, bufs, hists, len(vb), len(db)))
    for dev, mod, (dD, dF, dvj, ddj, dvb, ddb, dthr, dthf), (hd, hv, hw), nvb, ndb in state:
        with cp.cuda.Device(dev):
            # columns and diagonals on two streams: each fills the other's last wave
            s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
            if nvb:
                with s1:
                    mod.get_function("rqa_vf32")((nvb,), (_B,), (dD, dF, dvj, dvb, dthr, dthf,
                                                                hv, hw, np.int64(lp1)))
            if ndb:
                with s2:
                    mod.get_function("rqa_df32")((ndb,), (_B,), (dD, dF, ddj, ddb, dthr, dthf,
                                                                hd, np.int64(lp1)))
    total = [np.zeros((nmat, K, lp1), np.uint64) for _ in range(3)]
    if prob.symmetric and int(prob.theiler) <= 0:
        # the line of identity: distance exactly 0 (x - x), recurrent for every eps > 0,
        # one diagonal line as long as the matrix (as the CPU walks it)
        for m in range(nmat):
            na = int(prob.matrices[m, 2])
            total[0][m, :, na] += (thr1[m] > 0).astype(np.uint64)
    for dev, _mod, _bufs, hists, _nvb, _ndb in state:
        with cp.cuda.Device(dev):
            cp.cuda.Device(dev).synchronize()
            for acc, h in zip(total, hists, strict=True):
                acc += cp.asnumpy(h)
    return tuple(total)
