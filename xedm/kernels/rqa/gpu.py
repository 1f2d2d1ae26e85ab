"""CuPy kernels for recurrence quantification: exact line-length histograms on every GPU.

Imported only for ``backend="gpu"``.  One CUDA thread owns one whole column (vertical and
white vertical lines) or one whole diagonal (diagonal lines) of the recurrence matrix and
walks down it; a launch covers a tile of rows ``i0 <= i < i1`` and the run state of every
column and diagonal (in a run or not, where it started) is carried in device memory to
the next tile, so a line that crosses tile borders is counted once, with its full length.
Rows of the row series are staged in shared memory (every thread of a block reads the same
row); short lines are counted in shared-memory histograms, long ones straight into the
device's uint64 histogram.  Columns and diagonals are split over all visible GPUs, each GPU
filling its own histograms, which are summed on the host: the counts are exact integers,
identical to the CPU kernels whatever the tile size and the number of GPUs.

Distances are float64 and built exactly as on the CPU: coordinates in the same order, no
fused multiply-add (``--fmad=false``), Euclidean distances compared squared against the
threshold from :func:`xedm.recurrence.recurrence.squared_threshold`.
"""

from __future__ import annotations

import numpy as np

from .layout import diagonal_ranges, hist_layout, hist_source
from .layout import split_area as _split_area
from .layout import split_even as _split_even

_BLOCK = 128
_ROWS = 64
# shared-memory counters per block, split over histograms and thresholds; small enough not
# to limit the blocks resident per multiprocessor (longer lines go to device memory)
_SHARED_BINS = 2048

_CACHE: dict = {}
#: a one-variable delay embedding under a sum norm, all rows in one launch, goes to the
#: float32-filtered kernels of :mod:`xedm.kernels.rqa.gpu_f32` (False: always the kernels here)
USE_CHAIN = True
#: one long series (one matrix, one threshold) on one GPU, when its bits fit in memory, goes to
#: :mod:`xedm.kernels.rqa.gpu_bitmap` (each distance once)
USE_BITMAP = True


def _stage_rows(nc):
    """Rows staged in shared memory per step (at most 16 KB of coordinates)."""
    return int(max(1, min(_ROWS, 2048 // nc)))


def _distance_code(cvar, cchan, nch, norm, x_expr, y_expr):
    lines = [f"double a{ch} = 0.0;" for ch in range(nch)]
    for c in range(len(cvar)):
        ch = int(cchan[c])
        d = f"({x_expr(c)} - {y_expr(c)})"
        if norm == 0:
            lines.append(f"{{ double d = {d}; a{ch} = a{ch} + d * d; }}")
        elif norm == 1:
            lines.append(f"{{ double d = fabs({d}); a{ch} = (d > a{ch}) ? d : a{ch}; }}")
        else:
            lines.append(f"a{ch} = a{ch} + fabs({d});")
    return "\n        ".join(lines)


def _recurrence_code(nch, nk):
    out = []
    for kk in range(nk):
        cond = " && ".join(f"(a{ch} < t{kk}_{ch})" for ch in range(nch))
        out.append(f"bool r{kk} = {cond};")
    return "\n        ".join(out)


def _source(nc, nch, nk, norm, cvar, cchan):
    hs = max(_SHARED_BINS // (2 * nk), 16)
    rows = _stage_rows(nc)
    thr_load = "\n    ".join(
        f"const double t{kk}_{ch} = thr[{kk * nch + ch}];" for kk in range(nk) for ch in range(nch))
    xs = lambda c: f"xs[r * {nc} + {c}]"  # noqa: E731
    yreg = lambda c: f"y{c}"  # noqa: E731
    yglob = lambda c: f"B[yo{c} + i + k]"  # noqa: E731
    yload_v = "\n    ".join(f"const double y{c} = active ? B[yoff[{c}] + j] : 0.0;"
                           for c in range(nc))
    yoff_d = "\n    ".join(f"const long long yo{c} = yoff[{c}];" for c in range(nc))
    dist_v = _distance_code(cvar, cchan, nch, norm, xs, yreg)
    dist_d = _distance_code(cvar, cchan, nch, norm, xs, yglob)
    rec = _recurrence_code(nch, nk)

    def transitions(kind):
        body = []
        for kk in range(nk):
            if kind == "v":
                act = (f"long long len = i - st{kk}; "
                       f"if (cur{kk}) hadd(shv, hv, {kk}, len, lp1, 1u); "
                       f"else if (len > 0) hadd(shw, hw, {kk}, len, lp1, 1u);")
            else:
                act = (f"if (cur{kk}) hadd(shd, hd, {kk}, i - st{kk}, lp1, w);")
            body.append(f"if (r{kk} != cur{kk}) {{ {act} cur{kk} = r{kk}; st{kk} = i; }}")
        return "\n        ".join(body)

    def carry_in(n):
        return "\n    ".join(
            f"bool cur{kk} = false; long long st{kk} = 0;\n    if (active && i0 > 0) "
            f"{{ cur{kk} = cur_g[{kk} * (long long){n} + t]; st{kk} = st_g[{kk} * "
            f"(long long){n} + t]; }}" for kk in range(nk))

    def carry_out(n, kind):
        lines = []
        for kk in range(nk):
            if kind == "v":
                fin = (f"{{ long long len = end - st{kk}; if (cur{kk}) hadd(shv, hv, {kk}, "
                       f"len, lp1, 1u); else if (len > 0) hadd(shw, hw, {kk}, len, lp1, 1u); }}")
            else:
                fin = f"{{ if (cur{kk}) hadd(shd, hd, {kk}, end - st{kk}, lp1, w); }}"
            lines.append(f"if (last) {fin} else {{ cur_g[{kk} * (long long){n} + t] = cur{kk}; "
                         f"st_g[{kk} * (long long){n} + t] = st{kk}; }}")
        return "\n        ".join(lines)

    return hist_source(hs, nk) + f"""
__device__ __forceinline__ void stage(double* xs, const double* __restrict__ A,
                                      const long long* __restrict__ xoff, long long ib, int nr) {{
    for (int q = threadIdx.x; q < nr * {nc}; q += blockDim.x) {{
        int r = q / {nc}, c = q % {nc};
        xs[q] = A[xoff[c] + ib + r];
    }}
}}

extern "C" __global__ void rqa_vertical(
    const double* __restrict__ A, const long long* __restrict__ xoff,
    const double* __restrict__ B, const long long* __restrict__ yoff,
    long long j0, long long j1, long long i0, long long i1, long long na,
    const double* __restrict__ thr, unsigned char* cur_g, long long* st_g,
    unsigned long long* hv, unsigned long long* hw, long long lp1)
{{
    __shared__ double xs[{rows} * {nc}];
    __shared__ unsigned int shv[NK * HS];
    __shared__ unsigned int shw[NK * HS];
    for (int b = threadIdx.x; b < NK * HS; b += blockDim.x) {{ shv[b] = 0u; shw[b] = 0u; }}
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long j = j0 + t;
    const bool active = j < j1;
    {thr_load}
    {yload_v}
    {carry_in("(j1 - j0)")}
    for (long long ib = i0; ib < i1; ib += {rows}) {{
        const int nr = (int)min((long long){rows}, i1 - ib);
        __syncthreads();
        stage(xs, A, xoff, ib, nr);
        __syncthreads();
        if (!active) continue;
        for (int r = 0; r < nr; ++r) {{
        const long long i = ib + r;
        {dist_v}
        {rec}
        {transitions("v")}
        }}
    }}
    if (active) {{
        const bool last = i1 >= na;
        const long long end = na;
        {carry_out("(j1 - j0)", "v")}
    }}
    __syncthreads();
    hflush(shv, hv, lp1);
    hflush(shw, hw, lp1);
}}

extern "C" __global__ void rqa_diagonal(
    const double* __restrict__ A, const long long* __restrict__ xoff,
    const double* __restrict__ B, const long long* __restrict__ yoff,
    long long k0, long long k1, long long i0, long long i1, long long na, long long nb,
    const double* __restrict__ thr, unsigned char* cur_g, long long* st_g,
    unsigned long long* hd, long long lp1, unsigned int w)
{{
    __shared__ double xs[{rows} * {nc}];
    __shared__ unsigned int shd[NK * HS];
    for (int b = threadIdx.x; b < NK * HS; b += blockDim.x) shd[b] = 0u;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long k = k0 + t;
    const bool active = k < k1;
    const long long len_k = active ? min(na, nb - k) : 0;
    const long long kfirst = k0 + (long long)blockIdx.x * blockDim.x;
    const long long block_end = min(i1, min(na, nb - kfirst));
    const long long iend = min(i1, len_k);
    {thr_load}
    {yoff_d}
    {carry_in("(k1 - k0)")}
    for (long long ib = i0; ib < block_end; ib += {rows}) {{
        const int nr = (int)min((long long){rows}, block_end - ib);
        __syncthreads();
        stage(xs, A, xoff, ib, nr);
        __syncthreads();
        if (!active) continue;
        for (int r = 0; r < nr; ++r) {{
        const long long i = ib + r;
        if (i >= iend) break;
        {dist_d}
        {rec}
        {transitions("d")}
        }}
    }}
    if (active && i0 < len_k) {{
        const bool last = i1 >= len_k;
        const long long end = len_k;
        {carry_out("(k1 - k0)", "d")}
    }}
    __syncthreads();
    hflush(shd, hd, lp1);
}}
"""


def _module(cp, key, args):
    mod = _CACHE.get(key)
    if mod is None:
        mod = cp.RawModule(code=_source(*args), options=("--fmad=false",))
        _CACHE[key] = mod
    return mod


def jobs_for(prob, ndev):
    """Per-device job lists: ("v", m, j0, j1) and ("d", m, k0, k1, weight, swapped)."""
    per = [[] for _ in range(ndev)]
    for m, (_, _, na, _, _, nb) in enumerate(prob.matrices):
        na, nb = int(na), int(nb)
        for g, (a, b) in enumerate(_split_even(0, nb, ndev)):
            per[g % ndev].append(("v", m, a, b))
        g = 0
        for k0, k1, weight, swapped, ra, rb in diagonal_ranges(prob, na, nb):
            for a, b in _split_area(k0, k1, ra, rb, ndev):
                per[g % ndev].append(("d", m, a, b, weight, swapped))
                g += 1
    return per


def line_histograms(prob, thr, norm, tile=None, devices=None):
    """GPU twin of the CPU histograms: ``(diagonal, vertical, white)`` uint64 arrays of
    shape ``(nmat, K, L + 1)``, over all visible GPUs (or the ids in ``devices``)."""
    import cupy as cp

    if USE_CHAIN and (tile is None or int(tile) >= int(prob.matrices[:, 2].max())):
        from . import gpu_bitmap, gpu_f32

        ndev = cp.cuda.runtime.getDeviceCount() if devices is None else len(devices)
        if USE_BITMAP and ndev == 1 and gpu_bitmap.suits(prob, thr, norm):
            with cp.cuda.Device(0 if devices is None else devices[0]):
                return gpu_bitmap.line_histograms(prob, thr, norm)
        if gpu_f32.qualifies(prob, norm, thr.shape[1]):
            return gpu_f32.line_histograms(prob, thr, norm, devices)
    ndev = cp.cuda.runtime.getDeviceCount() if devices is None else len(devices)
    devices = list(range(ndev)) if devices is None else list(devices)
    nmat, K, nch = thr.shape
    lp1 = hist_layout(prob)
    nc = prob.cvar.size
    rows = int(tile) if tile else 1 << 62
    per = jobs_for(prob, len(devices))
    X = np.ascontiguousarray(prob.X, np.float64)
    Y = X if prob.Y is prob.X else np.ascontiguousarray(prob.Y, np.float64)
    state = []
    # first every upload and allocation (a copy from pageable memory would wait for the
    # kernels already queued), then every launch, so all GPUs run at once
    for g, dev in enumerate(devices):
        with cp.cuda.Device(dev):
            key = (dev, nc, nch, K, norm, tuple(prob.cvar), tuple(prob.cchan))
            mod = _module(cp, key, (nc, nch, K, norm, prob.cvar, prob.cchan))
            funcs = (mod.get_function("rqa_vertical"), mod.get_function("rqa_diagonal"))
            dX = cp.asarray(X)
            dY = dX if Y is X else cp.asarray(Y)
            hists = tuple(cp.zeros((nmat, K, lp1), cp.uint64) for _ in range(3))
            dthr = cp.asarray(np.ascontiguousarray(thr, np.float64))
            prepared = [_prepare(cp, job, prob, X.shape[1], Y.shape[1], K) for job in per[g]]
            cp.cuda.Device(dev).synchronize()
            state.append((dev, funcs, dX, dY, dthr, hists, prepared))
    streams = []
    for dev, funcs, dX, dY, dthr, hists, prepared in state:
        with cp.cuda.Device(dev):
            # columns and diagonals on two streams: each kernel's last partial wave of
            # blocks is filled by the other's
            pair = {"v": cp.cuda.Stream(non_blocking=True), "d": cp.cuda.Stream(non_blocking=True)}
            streams.append(pair)
            for args in prepared:
                with pair[args[0][0]]:
                    _launch(funcs, args, dX, dY, dthr, hists, lp1, rows)
    total = [np.zeros((nmat, K, lp1), np.uint64) for _ in range(3)]
    for dev, _funcs, _dX, _dY, _thr, hists, _prepared in state:
        with cp.cuda.Device(dev):
            cp.cuda.Device(dev).synchronize()
            for acc, h in zip(total, hists, strict=True):
                acc += cp.asnumpy(h)
    return tuple(total)


def _prepare(cp, job, prob, ldx, ldy, K):
    """Device buffers of one job: coordinate offsets and the carried run states."""
    arow, astart, na, brow, bstart, nb = (int(v) for v in prob.matrices[job[1]])
    xoff = (arow + prob.cvar) * ldx + astart + prob.coff
    yoff = (brow + prob.cvar) * ldy + bstart + prob.coff
    a, b = job[2], job[3]
    if job[0] == "v":
        swapped, nrows, ncols = False, na, nb
        yoff = yoff + a  # columns are local 0..n-1 inside the kernel
    else:
        swapped = job[5]
        nrows, ncols = (nb, na) if swapped else (na, nb)
    if swapped:
        xoff, yoff = yoff, xoff
    n = b - a
    return (job, cp.asarray(np.ascontiguousarray(xoff, np.int64)),
            cp.asarray(np.ascontiguousarray(yoff, np.int64)),
            cp.zeros(K * n, cp.uint8), cp.zeros(K * n, cp.int64), nrows, ncols)


def _launch(funcs, args, dX, dY, dthr, hists, lp1, rows):
    fv, fd = funcs
    hd, hv, hw = hists
    job, dxo, dyo, cur, st, nrows, ncols = args
    m, a, b = job[1], job[2], job[3]
    n = b - a
    grid = ((n + _BLOCK - 1) // _BLOCK,)
    if job[0] == "v":
        for i0 in range(0, nrows, rows):
            i1 = min(i0 + rows, nrows)
            fv(grid, (_BLOCK,), (dX, dxo, dY, dyo, np.int64(0), np.int64(n), np.int64(i0),
                                 np.int64(i1), np.int64(nrows), dthr[m], cur, st, hv[m],
                                 hw[m], np.int64(lp1)))
        return
    weight, swapped = job[4], job[5]
    A, B = (dY, dX) if swapped else (dX, dY)
    i_last = min(nrows, ncols - a)  # the longest diagonal of the job is its first
    for i0 in range(0, i_last, rows):
        i1 = min(i0 + rows, i_last)
        fd(grid, (_BLOCK,), (A, dxo, B, dyo, np.int64(a), np.int64(b), np.int64(i0),
                             np.int64(i1), np.int64(nrows), np.int64(ncols), dthr[m], cur, st,
                             hd[m], np.int64(lp1), np.uint32(weight)))
