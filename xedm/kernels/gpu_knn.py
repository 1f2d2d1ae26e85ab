"""Exact k-nearest-neighbour kernels on the GPU (CuPy): twins of :mod:`xedm.kernels.cpu_knn`.

Imported only for ``backend="gpu"``.  Same signatures and the same results as the CPU
kernels: neighbour sets, their order and their distances are identical (not merely close)::

    knn_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi)
        -> idx (nE, B, P, kmax) int64 (-1 = none), dist (nE, B, P, kmax) float64 (inf = none)
    knn_single(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi)
        -> idx (B, P, k), dist (B, P, k)

How it matches the CPU bit for bit: every squared distance is the plain float64 sum
``sum_e sum_c (x_c[p - e*tau] - x_c[q - e*tau])**2`` added up from 0.0 lag by lag, column by
column within a lag, compiled with ``--fmad=false`` (no fused multiply-add, as the CPU's
``FASTMATH_DIST``), so each value is the CPU's to the last bit and exact ties (runs of equal
values) stay exact ties; they are then decided by (|t_pred - t_lib|, t_lib) in a total order,
so the k smallest are the same whatever order the candidates are visited in.  Distances are
rooted with the correctly rounded ``sqrt``.  No float32 anywhere, so no near-tie tolerance.

Work and memory: one CUDA thread owns one prediction row (per E of a sweep, the k nearest
in a small sorted list in registers and local memory) and scans a slice of the library
candidates read straight from the padded series (a warp reads the same candidate: one
broadcast load); distances accumulate over lags, one pass serving every E of a sweep, and
a candidate is dropped as soon as its partial sum exceeds every threshold still open (the
partial sums of non-negative terms never decrease, so this never drops a neighbour).  When
there are few rows, the candidates of each row are split into S slices (S threads per
row) whose sorted partial lists are merged by a second kernel.  Memory is O(S * P * k);
no distance matrix is ever stored.
"""

from __future__ import annotations

import numpy as np

_BLOCK = 128  # prediction rows per block
_TARGET_THREADS = 1 << 18  # enough rows x slices to fill an H100 (132 SMs x 2048 threads)
_MIN_SLICE = 512  # candidates per slice at least
_MAX_SLICES = 64
_PART_BYTES = 2 << 30  # partial lists of all slices together at most

_CACHE: dict = {}

_COMMON = r"""
__device__ __forceinline__ bool before(double d, long long q, double dd, long long qq,
                                       long long p) {
    if (d < dd) return true;
    if (d > dd) return false;
    long long a = q > p ? q - p : p - q;
    long long aa = qq > p ? qq - p : p - qq;
    if (a != aa) return a < aa;
    return q < qq;
}

// insert (d, q) into the sorted list kd/kq of k entries (empty slots (inf, -1) last)
__device__ __forceinline__ void insert(double* kd, int* kq, int k, double d, int q,
                                       long long p) {
    // empty slots hold (inf, -1): every finite d comes before them
    if (!before(d, q, kd[k - 1], kq[k - 1], p)) return;
    int j = k - 1;
    while (j > 0 && before(d, q, kd[j - 1], kq[j - 1], p)) {
        kd[j] = kd[j - 1];
        kq[j] = kq[j - 1];
        --j;
    }
    kd[j] = d;
    kq[j] = q;
}
"""


def _scan_source(E_list, k_list, C):
    """The scan kernel for one (E_list, k_list, C): loops over lags unrolled, every E's
    bookkeeping at its lag, the thresholds in registers."""
    nE = len(E_list)
    Emax = int(E_list[-1])
    offs = np.concatenate([[0], np.cumsum(k_list)]).astype(int)
    ktot = int(offs[-1])
    L = []
    a = L.append
    a(_COMMON)
    a(r"""
extern "C" __global__ void knn_scan(
    const double* __restrict__ X, const long long W, const long long pad,
    const unsigned char* __restrict__ lib_ok, const long long* __restrict__ pred_t,
    const unsigned char* __restrict__ pred_ok, const long long T, const long long P,
    const long long B, const long long tau, const long long excl,
    const long long* __restrict__ q_lo, const long long* __restrict__ q_hi, const int S,
    double* __restrict__ part_d, int* __restrict__ part_q)
{
    const long long pi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int s = blockIdx.y;
    const long long b = blockIdx.z;
    if (pi >= P) return;
""")
    a(f"    double kd[{ktot}];\n    int kq[{ktot}];\n")
    a(f"    for (int j = 0; j < {ktot}; ++j) {{ kd[j] = CUDART_INF; kq[j] = -1; }}\n")
    a("    const long long p = pred_t[pi];\n")
    a("    bool any = false;\n")
    for ie in range(nE):
        a(f"    const bool ok{ie} = pred_ok[({ie} * B + b) * P + pi] != 0; any = any || ok{ie};\n")
        a(f"    double thr{ie} = ok{ie} ? CUDART_INF : -1.0;\n")
    a("    if (any) {\n")
    a("    const double* xb = X + b * " + str(C) + " * W + pad;\n")
    a(f"    double xq[{Emax * C}];\n")
    a(f"    #pragma unroll\n    for (int e = 0; e < {Emax}; ++e) {{\n")
    a(f"        #pragma unroll\n        for (int c = 0; c < {C}; ++c)\n")
    a(f"            xq[e * {C} + c] = xb[c * W + p - e * tau];\n    }}\n")
    a("    const long long lo = q_lo[b], hi = q_hi[b];\n")
    a("    const long long n = hi - lo;\n")
    a("    const long long q0 = lo + (n * s) / S, q1 = lo + (n * (s + 1)) / S;\n")
    # remaining-threshold maxima: rm{ie} = max(thr{ie}, ..., thr{nE-1})
    for ie in range(nE - 1, -1, -1):
        nxt = f", rm{ie + 1}" if ie + 1 < nE else ""
        a(f"    double rm{ie} = " + (f"fmax(thr{ie}{nxt})" if nxt else f"thr{ie}") + ";\n")
    a("    for (long long q = q0; q < q1; ++q) {\n")
    a("        const long long dq = q - p;\n")
    a("        if (dq <= excl && dq >= -excl) continue;\n")
    a("        const double* xc = xb + q;\n")
    a("        double acc = 0.0;\n")
    ie = 0
    for e in range(Emax):
        for c in range(C):
            a(f"        {{ const double d = xq[{e * C + c}] - __ldg(xc + {c} * W - {e} * tau); "
              "acc = acc + d * d; }\n")
        while ie < nE and int(E_list[ie]) == e + 1:
            k = int(k_list[ie])
            o = int(offs[ie])
            a(f"        if (acc <= thr{ie} && lib_ok[({ie} * B + b) * T + q]) {{\n")
            a(f"            insert(kd + {o}, kq + {o}, {k}, acc, (int)q, p);\n")
            a(f"            thr{ie} = kd[{o + k - 1}];\n")
            for j in range(ie, -1, -1):
                nxt = f", rm{j + 1}" if j + 1 < nE else ""
                a(f"            rm{j} = " + (f"fmax(thr{j}{nxt})" if nxt else f"thr{j}") + ";\n")
            a("        }\n")
            ie += 1
        if ie < nE:
            a(f"        if (acc > rm{ie}) continue;\n")
    a("    }\n    }\n")  # candidate loop, any
    # write the partial lists: part (S, nE, B, P, kmax)
    kmax = int(max(k_list))
    for ie in range(nE):
        k = int(k_list[ie])
        o = int(offs[ie])
        a(f"    {{ const long long base = "
          f"((((long long)s * {nE} + {ie}) * B + b) * P + pi) * {kmax};\n")
        a(f"      for (int j = 0; j < {kmax}; ++j) {{\n")
        a(f"        part_d[base + j] = j < {k} ? kd[{o} + j] : CUDART_INF;\n")
        a(f"        part_q[base + j] = j < {k} ? kq[{o} + j] : -1; }} }}\n")
    a("}\n")
    return "#include <math_constants.h>\n" + "".join(L)


_MERGE = _COMMON + r"""
// merge the S sorted partial lists of each (E, series, row): part (S, R, kmax) with
// R = nE * B * P rows; k (nE,) per E; out idx/dist (R, kmax), distances rooted
extern "C" __global__ void knn_merge(
    const double* __restrict__ part_d, const int* __restrict__ part_q, const long long R,
    const long long BP, const long long P, const int kmax,
    const long long* __restrict__ k_list, const long long* __restrict__ pred_t, const int S,
    long long* __restrict__ idx,
    double* __restrict__ dist)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const int k = (int)k_list[r / BP];
    const long long p = pred_t[r % P];
    int ptr[64];
    for (int s = 0; s < S; ++s) ptr[s] = 0;
    for (int j = 0; j < kmax; ++j) {
        int best = -1;
        double bd = CUDART_INF;
        int bq = -1;
        if (j < k) {
            for (int s = 0; s < S; ++s) {
                if (ptr[s] >= k) continue;
                const long long at = ((long long)s * R + r) * kmax + ptr[s];
                const int q = part_q[at];
                if (q < 0) continue;
                const double d = part_d[at];
                if (best < 0 || before(d, q, bd, bq, p)) { best = s; bd = d; bq = q; }
            }
        }
        if (best >= 0) {
            ptr[best] += 1;
            idx[r * kmax + j] = bq;
            dist[r * kmax + j] = sqrt(bd);
        } else {
            idx[r * kmax + j] = -1;
            dist[r * kmax + j] = CUDART_INF;
        }
    }
}
"""


def _module(key, source):
    mod = _CACHE.get(key)
    if mod is None:
        import cupy as cp

        mod = cp.RawModule(code=source, options=("--fmad=false", "--std=c++17"))
        _CACHE[key] = mod
    return mod


def _merge_kernel():
    return _module(("merge",), "#include <math_constants.h>\n" + _MERGE).get_function(
        "knn_merge")


def _slices(rows, ncand, per_entry):
    """Slices per row: enough threads to fill the device, each slice at least _MIN_SLICE
    candidates, the partial lists under _PART_BYTES."""
    if rows == 0:
        return 1
    S = -(-_TARGET_THREADS // rows)
    S = min(S, max(1, ncand // _MIN_SLICE), _MAX_SLICES)
    S = min(S, max(1, _PART_BYTES // max(1, rows * per_entry)))
    return int(max(1, S))


def knn_device(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi):
    """:func:`knn_sweep` on the device: CuPy arrays idx (nE, B, P, kmax) int64 and dist
    (nE, B, P, kmax) float64.  Inputs may be NumPy or CuPy arrays."""
    import cupy as cp

    E_list = [int(e) for e in np.asarray(E_list).tolist()]
    k_list = [int(k) for k in np.asarray(k_list).tolist()]
    if any(b <= a for a, b in zip(E_list, E_list[1:], strict=False)):
        raise ValueError("E_list must be strictly ascending")
    nE = len(E_list)
    X = cp.ascontiguousarray(cp.asarray(Xpad, dtype=cp.float64))
    B, C, W = X.shape
    lib = cp.ascontiguousarray(cp.asarray(lib_ok).astype(cp.uint8, copy=False))
    T = lib.shape[-1]
    pt = cp.ascontiguousarray(cp.asarray(pred_t, dtype=cp.int64))
    P = int(pt.shape[0])
    pok = cp.ascontiguousarray(cp.asarray(pred_ok).astype(cp.uint8, copy=False))
    qlo_h = np.asarray(q_lo if isinstance(q_lo, np.ndarray) else cp.asnumpy(q_lo), np.int64)
    qhi_h = np.asarray(q_hi if isinstance(q_hi, np.ndarray) else cp.asnumpy(q_hi), np.int64)
    qlo = cp.asarray(qlo_h)
    qhi = cp.asarray(qhi_h)
    kmax = max(k_list) if k_list else 1
    idx = cp.full((nE, B, P, kmax), -1, cp.int64)
    dist = cp.full((nE, B, P, kmax), cp.inf, cp.float64)
    if nE == 0 or B == 0 or P == 0:
        return idx, dist
    if T >= 2**31 - 1:
        raise ValueError("series longer than 2^31 - 2 steps are not supported on the GPU")
    ncand = int((qhi_h - qlo_h).max()) if B else 0
    S = _slices(B * P, ncand, nE * kmax * 12)
    part_d = cp.empty((S, nE, B, P, kmax), cp.float64)
    part_q = cp.empty((S, nE, B, P, kmax), cp.int32)
    key = ("scan", tuple(E_list), tuple(k_list), C)
    scan = _module(key, _scan_source(E_list, k_list, C)).get_function("knn_scan")
    i64 = np.int64
    scan(((P + _BLOCK - 1) // _BLOCK, S, B), (_BLOCK,),
         (X, i64(W), i64(pad), lib, pt, pok, i64(T), i64(P), i64(B), i64(tau), i64(excl),
          qlo, qhi, np.int32(S), part_d, part_q))
    R = nE * B * P
    _merge_kernel()(((R + 255) // 256,), (256,),
                    (part_d, part_q, i64(R), i64(B * P), i64(P), np.int32(kmax),
                     cp.asarray(np.asarray(k_list, np.int64)), pt, np.int32(S), idx, dist))
    return idx, dist


def knn_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi):
    idx, dist = knn_device(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl,
                           q_lo, q_hi)
    return idx.get(), dist.get()


def knn_single(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi):
    """One E: (B, P, k) tables, as :func:`knn_sweep` with a single E."""
    idx, dist = knn_device(Xpad, pad, lib_ok[None], pred_t, pred_ok[None], [int(E)], [int(k)],
                           tau, excl, q_lo, q_hi)
    return idx[0].get(), dist[0].get()
