"""Exact k-nearest-neighbour kernels on the GPU (CuPy): twins of :mod:`xedm.kernels.knn.cpu`.

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

Two kernels, one contract:

- the **sorted** kernel (``B * P >= SORTED_MIN_ROWS``): per series, every state gets a key,
  a weighted sum of the first ``m = min(E_list[0], SORTED_KEY_LAGS)`` lags of its first
  column, the weights the direction in which the states spread most, and a second key along
  the second direction (:mod:`xedm.kernels.knn.gpu_keys`); the library points are sorted by
  the first key, the prediction rows by the first key in runs and by the second within a
  run (``row_order``), 32 rows to a warp; a candidate out of every row's reach in the second
  key is passed over.  A warp visits the candidates whose keys lie in its rows' span, then walks
  outwards, one candidate at a time on each side, every lane testing the same candidate
  (broadcast loads) against its own row with the per-lag early exit below.  A side stops
  when no row of the warp can take its next candidate: by Cauchy-Schwarz a key difference
  bounds the distance, ``|key_p - key_q| <= sqrt(m_lags * d2(p, q))``, and the keys only move
  apart outwards, so every candidate past that point is farther than each row's current
  k-th (the keys' rounding, ``delta``, and the distances' are added to the reach, so the
  bound is rigorous in floating point and exact ties are never cut).  The work is the
  candidates near each row in key space, not all L of them: L = 2^20, E = 20 on
  Lorenz-63 in 0.32 s on an H100 against 4.1 s for the scan (benchmarks/results/).  Small
  problems split each warp's walk in two slices (span and right side, left side;
  ``SORTED_SPLIT_ROWS``).
- the **scan** kernel (few rows: sparse prediction sets against long libraries): one CUDA
  thread owns one prediction row and scans a slice of the library in time order (a warp
  reads the same candidate: one broadcast load); the candidates of each row are split into
  S slices (S threads per row) whose sorted partial lists are merged by a second kernel.

In both, one thread keeps, per E of a sweep, the k nearest of its row in a small sorted
list in registers and local memory; distances accumulate over lags, one pass serving every
E of a sweep, and a candidate is dropped as soon as its partial sum exceeds every threshold
still open (the partial sums of non-negative terms never decrease, so this never drops a
neighbour).  Memory is O(S * P * k); no distance matrix is ever stored.
"""

from __future__ import annotations

import numpy as np

from ..device import upload
from .gpu_compile import _module
from .gpu_keys import runs_order, sorted_keys
from .gpu_sort import argsort_rows, split_sorted

_BLOCK = 128  # prediction rows per block
_TARGET_THREADS = 1 << 18  # enough rows x slices to fill an H100 (132 SMs x 2048 threads)
_MIN_SLICE = 512  # candidates per slice at least
_MAX_SLICES = 64
_PART_BYTES = 2 << 30  # partial lists of all slices together at most

SORTED_MIN_ROWS = 4096  # (series x prediction rows) from which the sorted kernel runs
SORTED_SPLIT_ROWS = 2**15  # below it, each warp's walk in two slices (left, right)
SORTED_KEY_LAGS = 64  # lags summed into the sorted kernel's key at most
E_SPLIT = (3, 6, 9)  # several E: one sorted pass per run of E between these (keys of more lags;
# E = 1..10 at N = 1,000, L = 10,000 on an H200: 0.91 s against 1.00 s with (3, 6))

# the tie rule, (distance, |t_pred - t_lib|, t_lib) ascending: spliced into every CUDA source
# that orders neighbours (here, the ccm kernels, ivf's scan in gpu_ivf.py)
BEFORE = r"""
__device__ __forceinline__ bool before(double d, long long q, double dd, long long qq,
                                       long long p) {
    if (d < dd) return true;
    if (d > dd) return false;
    long long a = q > p ? q - p : p - q;
    long long aa = qq > p ? qq - p : p - qq;
    if (a != aa) return a < aa;
    return q < qq;
}
"""

_COMMON = BEFORE + r"""
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


# the parameters both kNN kernels start with
_PARAMS = r"""
    const double* __restrict__ X, const long long W, const long long pad,
    const unsigned char* __restrict__ lib_ok, const long long* __restrict__ pred_t,
    const unsigned char* __restrict__ pred_ok, const long long T, const long long P,
    const long long B, const long long tau, const long long excl"""


def _layout(E_list, k_list):
    """nE, the largest E, each E's offset in the per-thread lists, and their total length."""
    offs = np.concatenate([[0], np.cumsum(k_list)]).astype(int)
    return len(E_list), int(E_list[-1]), offs, int(offs[-1])


def _thresholds(nE, row):
    """Per E: ok (a prediction row of that E) and its threshold thr (-1: none)."""
    out = []
    for ie in range(nE):
        out.append(f"    const bool ok{ie} = {row} >= 0"
                   f" && pred_ok[({ie} * B + b) * P + {row}] != 0; any = any || ok{ie};\n")
        out.append(f"    double thr{ie} = ok{ie} ? CUDART_INF : -1.0;\n")
    return "".join(out)


def _remaining(nE, upto=None, indent="    "):
    """rm{ie} = max(thr{ie}, ..., thr{nE-1}): the largest threshold still open at lag E_ie,
    for ie = upto .. 0 (all by default)."""
    out = []
    for j in range(nE - 1 if upto is None else upto, -1, -1):
        nxt = f", rm{j + 1}" if j + 1 < nE else ""
        out.append(f"{indent}rm{j} = " + (f"fmax(thr{j}{nxt})" if nxt else f"thr{j}") + ";\n")
    return "".join(out)


def _query(Emax, C):
    """The prediction state's values in registers, xq[e * C + c]."""
    return (f"    double xq[{Emax * C}];\n"
            f"    #pragma unroll\n    for (int e = 0; e < {Emax}; ++e) {{\n"
            f"        #pragma unroll\n        for (int c = 0; c < {C}; ++c)\n"
            f"            xq[e * {C} + c] = p >= 0 ? xb[c * W + p - e * tau] : 0.0;\n    }}\n")


def _candidate(E_list, k_list, C, offs):
    """One library candidate q (``xc = xb + q``) against the prediction row: distances over
    lags, every E's bookkeeping at its lag, early exit (``continue``) once the partial sum
    exceeds every threshold still open.  To be placed inside a loop."""
    nE = len(E_list)
    Emax = int(E_list[-1])
    out = []
    a = out.append
    a("        const long long dq = q - p;\n")
    a("        if (dq <= excl && dq >= -excl) continue;\n")
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
            a(_remaining(nE, ie, "            "))
            a("        }\n")
            ie += 1
        if ie < nE:
            a(f"        if (acc > rm{ie}) continue;\n")
    return "".join(out)


def _write_parts(E_list, k_list, offs, row, slice_):
    """The partial lists of every E: part (S, nE, B, P, kmax) at (slice_, ie, b, row)."""
    nE = len(E_list)
    kmax = int(max(k_list))
    out = []
    for ie in range(nE):
        k = int(k_list[ie])
        o = int(offs[ie])
        out.append(f"    {{ const long long base = "
                   f"((((long long){slice_} * {nE} + {ie}) * B + b) * P + {row}) * {kmax};\n"
                   f"      for (int j = 0; j < {kmax}; ++j) {{\n"
                   f"        part_d[base + j] = j < {k} ? kd[{o} + j] : CUDART_INF;\n"
                   f"        part_q[base + j] = j < {k} ? kq[{o} + j] : -1; }} }}\n")
    return "".join(out)


def _scan_source(E_list, k_list, C):
    """The scan kernel for one (E_list, k_list, C): loops over lags unrolled, every E's
    bookkeeping at its lag, the thresholds in registers."""
    nE, Emax, offs, ktot = _layout(E_list, k_list)
    L = []
    a = L.append
    a(_COMMON)
    a(r"""
extern "C" __global__ void knn_scan(""" + _PARAMS + r""",
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
    a(_thresholds(nE, "pi"))
    a("    if (any) {\n")
    a("    const double* xb = X + b * " + str(C) + " * W + pad;\n")
    a(_query(Emax, C))
    a("    const long long lo = q_lo[b], hi = q_hi[b];\n")
    a("    const long long n = hi - lo;\n")
    a("    const long long q0 = lo + (n * s) / S, q1 = lo + (n * (s + 1)) / S;\n")
    a("".join(f"    double rm{j};\n" for j in range(nE)))
    a(_remaining(nE))
    a("    for (long long q = q0; q < q1; ++q) {\n")
    a("        const double* xc = xb + q;\n")
    a(_candidate(E_list, k_list, C, offs))
    a("    }\n    }\n")  # candidate loop, any
    a(_write_parts(E_list, k_list, offs, "pi", "s"))
    a("}\n")
    return "#include <math_constants.h>\n" + "".join(L)


def _sorted_source(E_list, k_list, C, in_order=False):
    """The sorted kernel for one (E_list, k_list, C): the candidate step of the scan kernel
    (:func:`_candidate`), visiting library points in the order of their keys outwards from
    the warp's rows (see the module docstring); with ``in_order`` each row's list written at
    its place in the key order (``j``), not at the row's (``pi``)."""
    nE, Emax, offs, ktot = _layout(E_list, k_list)
    L = []
    a = L.append
    a(_COMMON)
    a(r"""
// how far (in key) a row with largest open threshold rm0 can take a candidate:
// |key_p - key_q| <= sqrt(m_lags d2) (Cauchy-Schwarz, sorted_keys) with the distances'
// rounding (1e-12 relative) and the keys' (delta each); -1 for a row that takes none
__device__ __forceinline__ double reach_of(double rm0, double m_lags, double delta) {
    return rm0 < 0.0 ? -1.0
        : sqrt(m_lags * rm0 * (1.0 + 1e-12)) * (1.0 + 1e-12) + 2.0 * delta;
}

extern "C" __global__ void knn_sorted(""" + _PARAMS + r""",
    const int* __restrict__ perm, const int* __restrict__ cand,
    const double* __restrict__ ckey, const int* __restrict__ ncand,
    const double* __restrict__ keyt, const double m_lags, const double delta,
    const double* __restrict__ ckey2, const double* __restrict__ keyt2, const double m2,
    const double delta2, double* __restrict__ part_d, int* __restrict__ part_q)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long b = blockIdx.z;
    // every lane of a warp stays to the end (warp votes); lanes past P take no row
    const int pi = j < P ? perm[b * P + j] : -1;
    const long long p = pi >= 0 ? pred_t[pi] : -1;
""")
    a(f"    double kd[{ktot}];\n    int kq[{ktot}];\n")
    a(f"    for (int i = 0; i < {ktot}; ++i) {{ kd[i] = CUDART_INF; kq[i] = -1; }}\n")
    a("    bool any = false;\n")
    a(_thresholds(nE, "pi"))
    a("    const double* xb = X + b * " + str(C) + " * W + pad;\n")
    a(_query(Emax, C))
    a("".join(f"    double rm{i};\n" for i in range(nE)))
    a(_remaining(nE))
    a(r"""
    // the row's key (sorted_keys), within delta of the exact weighted sum of its first m
    // lags; no candidate whose key is farther than reach(rm0) can enter (see _sorted); the
    // same for the second key, along the states' second direction
    const double kp = any ? keyt[b * T + p] : 0.0;
    double rm_seen = rm0, reach = reach_of(rm0, m_lags, delta);
    const double kp2 = any ? keyt2[b * T + p] : 0.0;
    double rm_seen2 = rm0, reach2 = reach_of(rm0, m2, delta2);
    const double* key2 = ckey2 + b * T;
    // the warp's rows span [xlo, xhi] in the key (rows that take neighbours)
    double xlo = any ? kp : CUDART_INF, xhi = any ? kp : -CUDART_INF;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        xlo = fmin(xlo, __shfl_xor_sync(0xffffffffu, xlo, o));
        xhi = fmax(xhi, __shfl_xor_sync(0xffffffffu, xhi, o));
    }
    const int nc = ncand[b];
    const double* key = ckey + b * T;
    const int* cb = cand + b * T;
    if (xlo <= xhi) {
        // first candidate with key >= xlo, first with key > xhi
        int lo = 0, hi = nc;
        while (lo < hi) {
            const int m = (lo + hi) >> 1;
            if (key[m] < xlo) lo = m + 1; else hi = m;
        }
        const int c0 = lo;
        hi = nc;
        while (lo < hi) {
            const int m = (lo + hi) >> 1;
            if (key[m] <= xhi) lo = m + 1; else hi = m;
        }
        const int c1 = lo;
        // the candidates inside the warp's span, then outwards one on each side at a time,
        // each side until no row of the warp can take its next candidate: key differences
        // only grow outwards, and one beyond a row's reach rules the candidate out.
        // Two slices (gridDim.y = 2, small problems): the span and the right side, and the
        // left side, merged afterwards
        const int split = gridDim.y == 2;
        int right = split && blockIdx.y == 1 ? c1 : c0, left = c0 - 1;
        bool go_r = !(split && blockIdx.y == 1), go_l = !(split && blockIdx.y == 0);
        bool turn_r = true;
        for (;;) {
            int at = -1;
            if (right < c1) {
                at = right++;
            } else {
                if (rm0 != rm_seen) {  // the row's thresholds fell since the last vote
                    rm_seen = rm0;
                    reach = reach_of(rm0, m_lags, delta);
                }
                // alternately right and left while both sides are open
                for (int t = 0; t < 2 && at < 0; ++t, turn_r = !turn_r) {
                    if (turn_r && go_r) {
                        const double d0 = right < nc ? fabs(kp - key[right]) : 0.0;
                        go_r = right < nc && __any_sync(0xffffffffu, d0 <= reach);
                        if (go_r) at = right++;
                    } else if (!turn_r && go_l) {
                        const double d0 = left >= 0 ? fabs(kp - key[left]) : 0.0;
                        go_l = left >= 0 && __any_sync(0xffffffffu, d0 <= reach);
                        if (go_l) at = left--;
                    }
                }
                if (at < 0) break;
            }
            // the second key: a candidate beyond every row's reach is passed over whole (the
            // warp's rows are near in both keys: _row_order), others by the rows it misses
            if (rm0 != rm_seen2) {
                rm_seen2 = rm0;
                reach2 = reach_of(rm0, m2, delta2);
            }
            const bool near2 = fabs(kp2 - key2[at]) <= reach2;
            if (!__any_sync(0xffffffffu, near2)) continue;
            const long long q = cb[at];
            const double* xc = xb + q;
            do {
            if (!near2) continue;
""")
    a(_candidate(E_list, k_list, C, offs).replace("\n        ", "\n            "))
    a(r"""
            } while (0);
        }
    }
""")
    a("    if (pi < 0) return;\n")
    a(_write_parts(E_list, k_list, offs, "j" if in_order else "pi", "blockIdx.y"))
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


def _merge_kernel():
    return _module(("merge",), "#include <math_constants.h>\n" + _MERGE).get_function(
        "knn_merge")


def _merge(part_d, part_q, k_list, pt, idx, dist):
    """The S partial lists part (S, nE, B, P, kmax) of every row merged into idx/dist (nE, B,
    P, kmax), distances rooted."""
    import cupy as cp

    S, nE, B, P, kmax = part_d.shape
    if S == 1:  # one slice: its lists are the tables ((inf, -1) past k), rooted on the way
        idx[...] = part_q[0]
        cp.sqrt(part_d[0], out=dist)
        return
    R = nE * B * P
    i64 = np.int64
    _merge_kernel()(((R + 255) // 256,), (256,),
                    (part_d, part_q, i64(R), i64(B * P), i64(P), np.int32(kmax),
                     cp.asarray(np.asarray(k_list, np.int64)), pt, np.int32(S), idx, dist))


def _slices(rows, ncand, per_entry):
    """Slices per row: enough threads to fill the device, each slice at least _MIN_SLICE
    candidates, the partial lists under _PART_BYTES."""
    if rows == 0:
        return 1
    S = -(-_TARGET_THREADS // rows)
    S = min(S, max(1, ncand // _MIN_SLICE), _MAX_SLICES)
    S = min(S, max(1, _PART_BYTES // max(1, rows * per_entry)))
    return int(max(1, S))


def knn_device(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi,
               int32: bool = False, key_order: bool = False):
    """:func:`knn_sweep` on the device: CuPy arrays idx (nE, B, P, kmax) int64 (int32 with
    ``int32``, as the cross map's lookups take them) and dist (nE, B, P, kmax) float64.
    Inputs may be NumPy or CuPy arrays.

    ``key_order``: (idx, dist, rows), ``rows`` (B, P) int32 the order of the tables' rows (row
    j of series b is prediction row ``rows[b, j]``): the sorted kernel's key order (near
    states together, whose lookups share target values in L1) where one pass of one slice
    makes the tables (``B * P`` from ``SORTED_SPLIT_ROWS`` and ``SORTED_MIN_ROWS``, no cut of
    ``E_SPLIT`` among the E); elsewhere None, the rows in their own order."""
    import cupy as cp

    E_list = [int(e) for e in np.asarray(E_list).tolist()]
    k_list = [int(k) for k in np.asarray(k_list).tolist()]
    if any(b <= a for a, b in zip(E_list, E_list[1:], strict=False)):
        raise ValueError("E_list must be strictly ascending")
    nE = len(E_list)
    X = cp.ascontiguousarray(cp.asarray(Xpad, dtype=cp.float64))
    B, C, W = X.shape
    lib = upload(lib_ok, cp.uint8)  # a broadcast view (NaN-free series) repeated there
    T = lib.shape[-1]
    pt = cp.ascontiguousarray(cp.asarray(pred_t, dtype=cp.int64))
    P = int(pt.shape[0])
    pok = upload(pred_ok, cp.uint8)
    qlo_h = np.asarray(q_lo if isinstance(q_lo, np.ndarray) else cp.asnumpy(q_lo), np.int64)
    qhi_h = np.asarray(q_hi if isinstance(q_hi, np.ndarray) else cp.asnumpy(q_hi), np.int64)
    qlo = cp.asarray(qlo_h)
    qhi = cp.asarray(qhi_h)
    kmax = max(k_list) if k_list else 1
    # int32 straight from the sorted kernel's lists when one pass of one slice makes them
    # (else the merge kernel's int64, converted at the end)
    one_pass = nE > 0 and B * P >= max(SORTED_MIN_ROWS, SORTED_SPLIT_ROWS) \
        and not any(E_list[0] < e <= E_list[-1] for e in E_SPLIT)
    direct32 = int32 and one_pass
    in_order = key_order and one_pass  # (one slice: no merge, whose ties need the row)
    rows = None
    # every entry written below (the merge writes (inf, -1) past k; passes of E fill first)
    idx = cp.empty((nE, B, P, kmax), cp.int32 if direct32 else cp.int64)
    dist = cp.empty((nE, B, P, kmax), cp.float64)
    if nE == 0 or B == 0 or P == 0:
        idx = idx.astype(cp.int32 if int32 else cp.int64, copy=False)
        return (idx, dist, None) if key_order else (idx, dist)
    if T >= 2**31 - 1:
        raise ValueError("series longer than 2^31 - 2 steps are not supported on the GPU")
    if B * P >= SORTED_MIN_ROWS:
        # one pass per run of E between the E_SPLIT cuts: a pass's key weighs the lags of its
        # smallest E, so the larger E prune with keys of more lags
        cuts = sorted({0, nE} | {int(np.searchsorted(E_list, e)) for e in E_SPLIT
                                 if E_list[0] < e <= E_list[-1]})
        if len(cuts) > 2:  # a pass's narrower tables fill part of idx/dist
            idx.fill(-1)
            dist.fill(cp.inf)
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if a == 0 and b == nE:
                rows = _sorted(X, pad, lib, pt, pok, E_list, k_list, tau, excl, idx, dist,
                               in_order)
                break
            kp = max(k_list[a:b])
            i_p = cp.full((b - a, B, P, kp), -1, cp.int64)
            d_p = cp.full((b - a, B, P, kp), cp.inf, cp.float64)
            _sorted(X, pad, lib[a:b], pt, pok[a:b], E_list[a:b], k_list[a:b], tau, excl, i_p,
                    d_p)
            idx[a:b, :, :, :kp] = i_p
            dist[a:b, :, :, :kp] = d_p
    else:
        _scan(X, pad, lib, pt, pok, E_list, k_list, tau, excl, qlo, qhi, qlo_h, qhi_h, idx,
              dist)
    idx = idx.astype(cp.int32) if int32 and not direct32 else idx
    return (idx, dist, rows) if key_order else (idx, dist)


def _scan(X, pad, lib, pt, pok, E_list, k_list, tau, excl, qlo, qhi, qlo_h, qhi_h, idx, dist):
    """Every E of ``E_list`` in one pass of the scan kernel, into idx/dist (nE, B, P, kmax)."""
    import cupy as cp

    nE = len(E_list)
    B, C, W = X.shape
    T = lib.shape[-1]
    P = int(pt.shape[0])
    kmax = max(k_list)
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
    _merge(part_d, part_q, k_list, pt, idx, dist)


def _sorted(X, pad, lib, pt, pok, E_list, k_list, tau, excl, idx, dist, in_order=False):
    """Every E of ``E_list`` in one pass of the sorted kernel, into idx/dist (nE, B, P, kmax).

    Per series, the library points (of any E) sorted by key, and the prediction rows in the
    same order, 32 neighbouring rows to a warp; the warp visits the candidates from its
    rows' span outwards and stops on each side when the key difference rules out every row
    (see ``_sorted_source``).  With ``in_order`` (one slice only) the tables' rows are left
    in that order, which is returned ((B, P) int32, as ``knn_device``'s ``rows``); else
    None."""
    import cupy as cp

    nE = len(E_list)
    B, C, W = X.shape
    T = lib.shape[-1]
    P = int(pt.shape[0])
    kmax = max(k_list)
    m = min(int(E_list[0]), SORTED_KEY_LAGS)
    keyt, keyt2, m_lags, m2, delta, delta2 = sorted_keys(X, pad, m, tau)
    anyok = lib.any(axis=0)
    # one sort of every time by the first key (in shared memory) gives the candidates in
    # key order and the prediction rows in key order (row_order's first sort)
    cand, ncand, p1, ckey, ckey2, k2s = split_sorted(argsort_rows(keyt), anyok, pt, keyt,
                                                     keyt2)
    perm = runs_order(p1, k2s)
    S = 2 if B * P < SORTED_SPLIT_ROWS else 1
    if in_order and S != 1:
        raise ValueError("rows in key order need one slice (B * P >= SORTED_SPLIT_ROWS)")
    part_d = cp.empty((S, nE, B, P, kmax), cp.float64)
    part_q = cp.empty((S, nE, B, P, kmax), cp.int32)
    kern = sorted_kernel(E_list, k_list, C, in_order)
    i64 = np.int64
    kern(((P + _BLOCK - 1) // _BLOCK, S, B), (_BLOCK,),
         (X, i64(W), i64(pad), lib, pt, pok, i64(T), i64(P), i64(B), i64(tau), i64(excl),
          cp.ascontiguousarray(perm), cp.ascontiguousarray(cand), ckey, ncand,
          cp.ascontiguousarray(keyt), np.float64(m_lags), np.float64(delta), ckey2, keyt2,
          np.float64(m2), np.float64(delta2), part_d, part_q))
    _merge(part_d, part_q, k_list, pt, idx, dist)
    return perm if in_order else None


def sorted_kernel(E_list, k_list, C: int, in_order: bool = False):
    """The sorted kernel of one (E_list, k_list, C, in_order), compiled once (CuPy's disk
    cache keeps it across processes: :func:`xedm.warmup` fills it)."""
    E_list, k_list = [int(e) for e in E_list], [int(k) for k in k_list]
    key = ("sorted", tuple(E_list), tuple(k_list), int(C), bool(in_order))
    return _module(key, _sorted_source(E_list, k_list, int(C), in_order)).get_function(
        "knn_sorted")


def knn_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi):
    idx, dist = knn_device(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl,
                           q_lo, q_hi)
    return idx.get(), dist.get()


def knn_single(Xpad, pad, lib_ok, pred_t, pred_ok, E, k, tau, excl, q_lo, q_hi):
    """One E: (B, P, k) tables, as :func:`knn_sweep` with a single E."""
    idx, dist = knn_device(Xpad, pad, lib_ok[None], pred_t, pred_ok[None], [int(E)], [int(k)],
                           tau, excl, q_lo, q_hi)
    return idx[0].get(), dist[0].get()


def concat_tables(parts):
    """:func:`xedm.kernels.knn.cpu.concat_tables` for tables on the device (CuPy arrays from
    :func:`knn_device`): joined there, CuPy arrays out."""
    import cupy as cp

    return (cp.concatenate([q[0] for q in parts], axis=2),
            cp.concatenate([q[1] for q in parts], axis=2))
