"""RQA of one long series on the GPU: each distance once, the upper triangle kept as bits.

Imported only for ``backend="gpu"``, and used by :func:`xedm.kernels.rqa.gpu.line_histograms`
for one symmetric matrix (self recurrence) with one threshold, a delay embedding that suits
:mod:`xedm.kernels.rqa.gpu_f32`, on one GPU, when the ``N^2 / 16`` bytes of bits fit in its
free memory less ``HEADROOM`` (1.5 GiB) (a million points: 68 GB, which an H200 and an 80 GB
H100 hold; with 80 % of the free memory, as before, an H100 ran the float32 kernels, 2.1 s
instead of 0.8 s).

The kernels of :mod:`~xedm.kernels.rqa.gpu_f32` walk every column (N^2 distances) and every
diagonal of the upper triangle (N^2 / 2), counting runs as they go.  Here three launches:

1. ``rqa_bits``: a thread per diagonal of the upper triangle (the line of identity too)
   decides each element once, exactly as gpu_f32 does (float32 distance, float64 in the
   CPU's order inside the guard band; ``TUNE["delta"]``: the window holds one float32
   ``g(x[t] - x[t + k])`` per position, so a distance is one subtraction, one square and
   E - 1 additions), and a warp of 32 consecutive diagonals (block kb)
   writes each row's 32 decisions as one word (a ballot): block kb's words, one per row
   ``i < N - 32 kb``, follow block kb - 1's, so a warp writes and reads consecutive words.
2. ``rqa_druns``: diagonal lines.  A warp reads 32 rows of its 32 diagonals and transposes
   the 32 x 32 bits (five shuffles), so each lane holds 32 rows of its diagonal.
3. ``rqa_vruns``: vertical and white vertical lines.  Column j above the line of identity is
   read as in 2 (32 rows of 32 columns, transposed); below it, column j is row j of the upper
   triangle (the matrix is symmetric), 32 rows a word.

A lane reads the runs off a 32-row word: runs of 1 to 3 positions whose start lies in the same
word are counted by popcounts of the word's transitions (``TUNE["pop"]``: chaotic data, whose
lines are mostly that short, spent most of the runs kernels' time stepping through them), the
others one step each.  Every count is identical to the CPU's.
"""

from __future__ import annotations

import numpy as np

from .layout import hist_layout

_B = 256
#: blocks per multiprocessor of the distance kernel (H200, N = 1,043,112, E = 5, tau = 3:
#: 4 blocks 0.47 s, 3 blocks 0.52 s, 2 blocks 0.70 s)
#: pop: the short runs of each 32-position word counted by popcounts (runs32); delta: the
#: distance kernel keeps one value per position of its diagonal (the coordinate difference,
#: squared for the Euclidean norm) instead of both series' values, 1 + E float32 operations a
#: distance instead of 2 E.  H100, N = 1,043,112, E = 5, tau = 3 (benchmarks/rqa_gpu_paths.py):
#: logistic map bits 0.464 -> 0.435 s, diagonal 0.246 -> 0.112 s, vertical 0.520 -> 0.392 s;
#: Lorenz-63 0.474 -> 0.447, 0.082 -> 0.088, 0.211 -> 0.235 s
TUNE = {"blocks": 4, "pop": 1, "delta": 1}
#: bytes of the device's free memory left to everything else while the bits are held
HEADROOM = 3 << 29

_RUNS = r"""
#define HS 2048
__device__ __forceinline__ void hadd(unsigned int* sh, unsigned long long* g, long long len,
                                     unsigned int w) {
    if (len < HS) atomicAdd(&sh[len], w);
    else atomicAdd(&g[len], (unsigned long long)w);
}
// POP: a lane counts the runs of 1 to 3 positions that a word's bits show whole (popcounts)
// in registers, and the warp adds them up once at the end
struct R3 { unsigned a1, a2, a3; };
// every lane of the warp calls it
__device__ __forceinline__ void rflush(const R3& r, unsigned int* sh) {
    const unsigned s1 = __reduce_add_sync(0xffffffffu, r.a1);
    const unsigned s2 = __reduce_add_sync(0xffffffffu, r.a2);
    const unsigned s3 = __reduce_add_sync(0xffffffffu, r.a3);
    if ((threadIdx.x & 31) == 0) {
        if (s1) atomicAdd(&sh[1], s1);
        if (s2) atomicAdd(&sh[2], s2);
        if (s3) atomicAdd(&sh[3], s3);
    }
}
__device__ __forceinline__ void hflush(unsigned int* sh, unsigned long long* g, long long lp1) {
    for (int b = threadIdx.x; b < HS; b += blockDim.x)
        if (sh[b] && b < lp1) atomicAdd(&g[b], (unsigned long long)sh[b]);
}
// the words of diagonals 32 kb .. 32 kb + 31 (one per row i < N - 32 kb) follow those of
// block kb - 1: block kb starts at sum_{b < kb} (N - 32 b) = kb N - 16 kb (kb - 1)
__device__ __forceinline__ long long blk_off(long long N, long long kb) {
    return kb * N - 16 * kb * (kb - 1);
}
// 32 bits of row r from diagonal k on (zeros past the row's end)
__device__ __forceinline__ unsigned seg32(const unsigned* __restrict__ bmp, long long N,
                                          long long r, long long k) {
    if (r >= N || k >= N - r) return 0u;
    const long long kb = k >> 5;
    const unsigned long long lo = bmp[blk_off(N, kb) + r];
    const unsigned long long hi = (r < N - 32 * (kb + 1)) ? bmp[blk_off(N, kb + 1) + r] : 0ull;
    return (unsigned)(((hi << 32) | lo) >> (k & 31));
}
__device__ __forceinline__ unsigned bit_at(const unsigned* __restrict__ bmp, long long N,
                                           long long i, long long j) {
    const long long r = i < j ? i : j, k = i < j ? j - i : i - j;
    return seg32(bmp, N, r, k) & 1u;
}
// lane l holds row l of a 32 x 32 bit block (bit c = column c); returns column l
__device__ __forceinline__ unsigned transpose32(unsigned v, int lane) {
    #pragma unroll
    for (int s = 16; s >= 1; s >>= 1) {
        const unsigned m = s == 16 ? 0x0000FFFFu : s == 8 ? 0x00FF00FFu :
                           s == 4 ? 0x0F0F0F0Fu : s == 2 ? 0x33333333u : 0x55555555u;
        const unsigned p = __shfl_xor_sync(0xffffffffu, v, s);
        v = (lane & s) ? ((v & ~m) | ((p >> s) & m)) : ((v & m) | ((p << s) & ~m));
    }
    return v;
}
// the runs of one line over positions ib .. ib + nb - 1 (bit r = position ib + r): a
// recurrent run ending goes to h1 (weight w1), a non-recurrent one to h0 (w0, if w0)
__device__ __forceinline__ void runs32(unsigned v, long long ib, int nb, bool& cur,
                                       long long& st, unsigned* s1, unsigned long long* h1,
                                       unsigned w1, unsigned* s0, unsigned long long* h0,
                                       unsigned w0, R3& r1, R3& r0) {
    const unsigned mk = nb >= 32 ? 0xffffffffu : ((1u << nb) - 1u);
    v &= mk;
#if POP
    // bit q of x: a transition at position ib + q, which ends the run that began at the
    // previous transition (or at st); the run was recurrent when bit q of v is 0
    const unsigned x = (v ^ ((v << 1) | (cur ? 1u : 0u))) & mk;
    if (!x) return;
    // runs whose start (the previous transition) lies in this word 1, 2 or 3 positions
    // back: counted by popcounts
    const unsigned p1 = x << 1, p2 = x << 2, p3 = x << 3;
    const unsigned c1 = x & p1, c2 = x & p2 & ~p1, c3 = x & p3 & ~p2 & ~p1;
    const unsigned nv = ~v;
    if (w1) {
        r1.a1 += w1 * __popc(c1 & nv); r1.a2 += w1 * __popc(c2 & nv);
        r1.a3 += w1 * __popc(c3 & nv);
    }
    if (w0) {
        r0.a1 += w0 * __popc(c1 & v); r0.a2 += w0 * __popc(c2 & v);
        r0.a3 += w0 * __popc(c3 & v);
    }
    // the others one by one (a run of weight 0 is not visited)
    unsigned rest = x & ~(c1 | c2 | c3) & (w1 ? 0xffffffffu : v) & (w0 ? 0xffffffffu : nv);
    while (rest) {
        const int q = __ffs(rest) - 1;
        rest &= rest - 1u;
        const unsigned below = x & ((1u << q) - 1u);
        const long long prev = below ? ib + (31 - __clz(below)) : st;
        const long long len = ib + q - prev;
        if (!((v >> q) & 1u)) hadd(s1, h1, len, w1);
        else if (len > 0) hadd(s0, h0, len, w0);
    }
    const int last = 31 - __clz(x);
    st = ib + last;
    cur = (v >> last) & 1u;
#else
    unsigned x = (v ^ ((v << 1) | (cur ? 1u : 0u))) & mk;
    while (x) {
        const int q = __ffs(x) - 1;
        x &= x - 1u;
        const long long i = ib + q, len = i - st;
        if (cur) { if (w1) hadd(s1, h1, len, w1); }
        else if (len > 0 && w0) hadd(s0, h0, len, w0);
        cur = !cur;
        st = i;
    }
#endif
}
extern "C" __global__ void rqa_druns(const unsigned* __restrict__ bmp, const long long N,
                                     const long long theiler, unsigned long long* hd,
                                     const long long lp1)
{
    __shared__ unsigned int shd[HS];
    for (int b = threadIdx.x; b < HS; b += blockDim.x) shd[b] = 0u;
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long kw0 = k - lane;
    R3 rd = {0u, 0u, 0u}, rz = {0u, 0u, 0u};
    if (kw0 < N) {
        const long long wlen = N - kw0, len_k = k < N ? N - k : 0;
        const unsigned w = k == 0 ? (theiler <= 0 ? 1u : 0u) : (k >= theiler ? 2u : 0u);
        bool cur = false;
        long long st = 0;
        for (long long ib = 0; ib < wlen; ib += 32) {
            const long long r = ib + lane;
            const unsigned row = (r < wlen) ? seg32(bmp, N, r, kw0) : 0u;
            const unsigned v = transpose32(row, lane);
            if (ib < len_k)
                runs32(v, ib, (int)min(32LL, len_k - ib), cur, st, shd, hd, w, shd, hd, 0u,
                       rd, rz);
        }
        if (cur && w && len_k > 0) hadd(shd, hd, len_k - st, w);
    }
    rflush(rd, shd);
    __syncthreads();
    hflush(shd, hd, lp1);
}
extern "C" __global__ void rqa_vruns(const unsigned* __restrict__ bmp, const long long N,
                                     unsigned long long* hv, unsigned long long* hw,
                                     const long long lp1)
{
    __shared__ unsigned int shv[HS];
    __shared__ unsigned int shw[HS];
    for (int b = threadIdx.x; b < HS; b += blockDim.x) { shv[b] = 0u; shw[b] = 0u; }
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long j0 = j - lane;
    R3 rv = {0u, 0u, 0u}, rw = {0u, 0u, 0u};
    if (j0 < N) {
        const bool valid = j < N;
        bool cur = false;
        long long st = 0;
        for (long long ib = 0; ib < N; ib += 32) {
            unsigned v;
            if (ib + 32 <= j0) {  // above the line: lane l reads row ib + l, then transpose
                v = transpose32(seg32(bmp, N, ib + lane, j0 - ib - lane), lane);
            } else if (ib >= j0 + 32) {  // below: row j's own bits
                v = valid ? seg32(bmp, N, j, ib - j) : 0u;
            } else {  // the block on the line of identity, bit by bit
                v = 0u;
                if (valid)
                    for (int r = 0; r < 32; ++r)
                        if (ib + r < N) v |= bit_at(bmp, N, ib + r, j) << r;
            }
            if (valid)
                runs32(v, ib, (int)min(32LL, N - ib), cur, st, shv, hv, 1u, shw, hw, 1u,
                       rv, rw);
        }
        if (valid) {
            const long long len = N - st;
            if (cur) hadd(shv, hv, len, 1u);
            else if (len > 0) hadd(shw, hw, len, 1u);
        }
    }
    rflush(rv, shv);
    rflush(rw, shw);
    __syncthreads();
    hflush(shv, hv, lp1);
    hflush(shw, hw, lp1);
}
"""


#: the float64 accumulation of one coordinate's difference ``d_`` into ``a`` (the exact
#: distance of the band's decisions), by norm: Euclidean (squared), max, Manhattan
_D_ACC = {0: "a = a + d_ * d_;", 1: "{ double e_ = fabs(d_); a = (e_ > a) ? e_ : a; }",
          2: "a = a + fabs(d_);"}


def _bits_source(E, tau, norm, order, blocks, delta=True):
    """``rqa_bits`` for one embedding (see the module docstring)."""
    W = (E - 1) * tau + 1
    if delta:
        return _bits_source_delta(E, tau, norm, order, blocks)
    f_acc = {0: "ACC = fmaf(d_, d_, ACC);", 1: "ACC = fmaxf(fabsf(d_), ACC);"}.get(
        norm, "ACC = ACC + fabsf(d_);")
    heads = []
    for u in range(W):
        dist = " ".join(f"{{ const float d_ = xw[{(u + o) % W}] - yw[{(u + o) % W}]; "
                        f"{f_acc.replace('ACC', 'af')} }}" for o in order)
        heads.append(f"""float af = 0.0f;
            {dist}
            xw[{u}] = xf[i + {W}]; yw[{u}] = yf[i + {W}];""")
    window = (f"float xw[{W}], yw[{W}];\n    #pragma unroll\n"
              f"    for (int q = 0; q < {W}; ++q) {{ xw[q] = xf[q]; yw[q] = yf[q]; }}")
    return _bits_kernel(norm, order, window, heads, W, blocks)


def _bits_kernel(norm, order, window, heads, W, blocks):
    """The ``rqa_bits`` kernel around a window's declaration and first fill (``window``)
    and the unrolled steps of one window of W positions, each its ``heads[u]`` (the float32
    distance ``af`` of position i, the window moved on) and the decision every form shares:
    below ``lo`` recurrent, in the band [lo, hi] the float64 distance (``exact``, the
    coordinates in ``order``) decides; one ballot per warp writes the word."""
    exact_body = " ".join(f"{{ double d_ = xp[{o}] - yp[{o}]; {_D_ACC[norm]} }}"
                          for o in order)
    steps = [f"""{{
            const int i = ib + {u};
            {head}
            bool bit = af < lo;
            if (!bit && af <= hi && i < len_k) bit = exact(xa + i, xa + i + k) < th;
            const unsigned wd = __ballot_sync(0xffffffffu, bit && i < len_k);
            if (lane == 0 && i < wlen) out[i] = wd;
        }}""" for u, head in enumerate(heads)]
    body = "\n        ".join(steps)
    return f"""
__device__ __noinline__ double exact(const double* xp, const double* yp) {{
    double a = 0.0;
    {exact_body}
    return a;
}}
extern "C" __global__ void __launch_bounds__({_B}, {blocks}) rqa_bits(
    const double* __restrict__ D, const float* __restrict__ F, const long long xo,
    const long long N, const double th, const float lo, const float hi,
    unsigned int* __restrict__ bmp)
{{
    const int lane = threadIdx.x & 31;
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long kw0 = k - lane, kb = kw0 >> 5;
    if (kw0 >= N) return;  // whole warps only
    const int wlen = (int)(N - kw0), len_k = k < N ? (int)(N - k) : 0;
    const double* xa = D + xo;
    const float* xf = F + xo;
    const float* yf = F + xo + k;
    unsigned int* out = bmp + (kb * N - 16 * kb * (kb - 1));  // this warp's block of words
    {window}
    for (int ib = 0; ib < wlen; ib += {W}) {{
        {body}
    }}
}}
"""


def _bits_source_delta(E, tau, norm, order, blocks):
    """``rqa_bits`` keeping ``g(x[t] - x[t + k])`` for the W positions t of the window (g the
    square for the Euclidean norm, else the absolute value) and combining E of them: the
    float32 values are those of the other form up to one rounding of each square (which
    :func:`~xedm.kernels.rqa.gpu_f32.guard_bands` counts); the decisions in the band are the
    same float64 sums in the CPU's order."""
    W = (E - 1) * tau + 1
    g, comb = {0: ("d_ * d_", "af = af + GW;"), 1: ("fabsf(d_)", "af = fmaxf(af, GW);")}.get(
        norm, ("fabsf(d_)", "af = af + GW;"))
    first, *others = order
    heads = []
    for u in range(W):
        dist = f"float af = gw[{(u + first) % W}]; " + " ".join(
            comb.replace("GW", f"gw[{(u + o) % W}]") for o in others)
        heads.append(f"""{dist}
            {{ const float d_ = xf[i + {W}] - yf[i + {W}]; gw[{u}] = {g}; }}""")
    window = (f"float gw[{W}];\n    #pragma unroll\n    for (int q = 0; q < {W}; ++q) "
              f"{{ const float d_ = xf[q] - yf[q]; gw[q] = {g}; }}")
    return _bits_kernel(norm, order, window, heads, W, blocks)


_CACHE: dict = {}


def words(n: int) -> int:
    """uint32 words of the upper triangle's bits of an n x n matrix: diagonal block kb (32
    diagonals) has one word per row i < n - 32 kb."""
    nb = (int(n) + 31) // 32
    return nb * int(n) - 16 * nb * (nb - 1)


def suits(prob, thr, norm: int) -> bool:
    """One symmetric matrix, one threshold, a gpu_f32 embedding, and the bits fit in the
    current device's free memory less ``HEADROOM``."""
    from .gpu_f32 import qualifies

    if not prob.symmetric or prob.matrices.shape[0] != 1 or thr.shape[1] != 1:
        return False
    if not qualifies(prob, norm, 1):
        return False
    import cupy as cp

    n = int(prob.matrices[0, 2])
    need = 4 * words(n) + 64 * n + HEADROOM
    free = cp.cuda.Device().mem_info[0]
    if need >= free:
        # blocks that CuPy's pool holds but no array uses go back to the device first
        pool = cp.get_default_memory_pool()
        if need < free + pool.free_bytes():
            pool.free_all_blocks()
            free = cp.cuda.Device().mem_info[0]
    return need < free


def line_histograms(prob, thr, norm, timings=None):
    """``(diagonal, vertical, white)`` uint64 arrays ``(1, 1, L + 1)`` on the current GPU
    (``timings``: a dict that receives each stage's seconds, for benchmarks)."""
    import cupy as cp

    from . import gpu_f32

    tau = gpu_f32.qualifies(prob, norm, 1)
    n = int(prob.matrices[0, 2])
    lp1 = hist_layout(prob)
    coff = np.asarray(prob.coff) - int(np.asarray(prob.coff).min())
    E = coff.size
    order = tuple(int(o) for o in coff)
    X = np.ascontiguousarray(prob.X, np.float64)
    D = X.ravel()
    center = 0.5 * (float(D.min()) + float(D.max()))
    F = (D - center).astype(np.float32)
    M = float(np.abs(F).max()) if F.size else 0.0
    # padded: a warp's windows read up to W + 32 values past the series
    F = np.concatenate([F, np.zeros(gpu_f32._W_MAX + 2 * _B, np.float32)])
    th = float(thr[0, 0, 0])
    lo, hi = (float(v) for v in gpu_f32.guard_bands(np.array([[th]]), M, E, norm)[0, 0])
    arow, astart = int(prob.matrices[0, 0]), int(prob.matrices[0, 1])
    xo = (arow + int(prob.cvar[0])) * X.shape[1] + astart + int(np.asarray(prob.coff).min())
    dev = cp.cuda.Device().id
    delta = bool(TUNE["delta"])
    key = (dev, E, tau, norm, order, TUNE["blocks"], delta)
    mod = _CACHE.get(key)
    if mod is None:
        mod = _CACHE[key] = cp.RawModule(
            code=_bits_source(E, tau, norm, order, TUNE["blocks"], delta),
            options=("--fmad=false",))
    pop = int(bool(TUNE["pop"]))
    runs = _CACHE.get((dev, "runs", pop))
    if runs is None:
        runs = _CACHE[(dev, "runs", pop)] = cp.RawModule(code=f"#define POP {pop}\n" + _RUNS)
    hd, hv, hw = (cp.zeros(lp1, cp.uint64) for _ in range(3))
    # the bits straight from the device, not through CuPy's pool: the tens of GB go back
    # when this call ends instead of staying reserved in the pool
    raw = cp.cuda.Memory(4 * words(n))
    bmp = cp.ndarray((words(n),), cp.uint32, memptr=cp.cuda.MemoryPointer(raw, 0))
    grid = ((n + _B - 1) // _B,)
    ev = [cp.cuda.Event() for _ in range(4)]
    ev[0].record()
    mod.get_function("rqa_bits")(grid, (_B,), (cp.asarray(D), cp.asarray(F), np.int64(xo),
                                               np.int64(n), np.float64(th), np.float32(lo),
                                               np.float32(hi), bmp))
    ev[1].record()
    runs.get_function("rqa_druns")(grid, (_B,), (bmp, np.int64(n),
                                                 np.int64(int(prob.theiler)), hd,
                                                 np.int64(lp1)))
    ev[2].record()
    runs.get_function("rqa_vruns")(grid, (_B,), (bmp, np.int64(n), hv, hw, np.int64(lp1)))
    ev[3].record()
    out = tuple(h.get().reshape(1, 1, lp1) for h in (hd, hv, hw))
    if timings is not None:
        for name, a, b in (("bits", 0, 1), ("diagonal", 1, 2), ("vertical", 2, 3)):
            timings[name] = cp.cuda.get_elapsed_time(ev[a], ev[b]) / 1e3
    del bmp, raw
    return out
