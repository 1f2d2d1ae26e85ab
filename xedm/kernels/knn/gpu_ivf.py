"""The scan of ``neighbors="ivf"`` (:mod:`xedm.neighbors.ivf`): a CUDA kernel and its NumPy twin.

Each prediction point probes the inverted lists of its ``nprobe`` nearest centroids: one CUDA
thread per query scans their points, skips those the exclusion removes (itself and every
point within the exclusion radius), sums each squared distance exactly as the brute-force
kernels do (float64, compiled without fused multiply-add, so the value is theirs bit for
bit), stops summing once the partial sum exceeds the current k-th neighbour, and keeps the k
nearest in the tie order of the exact GPU kernel (:data:`xedm.kernels.knn.gpu.BEFORE`,
spliced in).  :func:`scan_reference` computes the same with NumPy (the CPU tests).
"""

from __future__ import annotations

import numpy as np

from .gpu import BEFORE, _module

_BLOCK = 128
_CACHE: dict = {}


def scan_reference(lib, lib_t, offs, q, q_t, probe, excl: int, k: int, C: int):
    """NumPy twin of the CUDA scan: (idx (n, k) time positions, -1 none; dist (n, k), inf
    none; count (n,)).  Same sums (coordinate by coordinate from 0.0), same filter, same tie
    order; no early exit (it changes no result)."""
    n = len(q)
    out_t = np.full((n, k), -1, np.int64)
    out_d = np.full((n, k), np.inf)
    count = np.zeros(n, np.int64)
    offs = np.asarray(offs)
    for r in range(n):
        ids = np.concatenate([np.arange(offs[lst], offs[lst + 1]) for lst in probe[r]]
                             + [np.empty(0, np.int64)]).astype(np.int64)
        t = lib_t[ids]
        keep = np.abs(t - q_t[r]) > excl
        ids, t = ids[keep], t[keep]
        acc = np.zeros(len(ids))
        for j in range(lib.shape[1]):
            d = q[r, j] - lib[ids, j]
            acc = acc + d * d
        o = np.lexsort((t, np.abs(t - q_t[r]), acc))[:k]
        m = len(o)
        out_t[r, :m] = t[o]
        out_d[r, :m] = np.sqrt(acc[o])
        count[r] = m
    return out_t, out_d, count


def _scan_source(k: int, D: int, C: int) -> str:
    """The scan kernel for k neighbours and D = E*C coordinates (C per lag): one thread per
    query, coordinates unrolled, an early exit after every lag; neighbours ordered by the
    exact kernels' tie rule (:data:`xedm.kernels.knn.gpu.BEFORE`)."""
    L = ["#include <math_constants.h>\n", BEFORE, r"""
extern "C" __global__ void ivf_scan(
    const double* __restrict__ lib, const long long* __restrict__ lib_t,
    const long long* __restrict__ offs, const double* __restrict__ q,
    const long long* __restrict__ q_t, const int* __restrict__ probe, const long long nq,
    const int nprobe, const long long excl, long long* __restrict__ out_t,
    double* __restrict__ out_d, long long* __restrict__ count)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nq) return;
"""]
    a = L.append
    a(f"    double kd[{k}];\n    long long kt[{k}];\n")
    a(f"    for (int j = 0; j < {k}; ++j) {{ kd[j] = CUDART_INF; kt[j] = -1; }}\n")
    a(f"    double xq[{D}];\n")
    a(f"    for (int j = 0; j < {D}; ++j) xq[j] = q[r * {D} + j];\n")
    a("    const long long p = q_t[r];\n")
    a("    for (int jp = 0; jp < nprobe; ++jp) {\n")
    a("        const int l = probe[r * nprobe + jp];\n")
    a("        const long long i1 = offs[l + 1];\n")
    a("        for (long long i = offs[l]; i < i1; ++i) {\n")
    a("            const long long t = lib_t[i];\n")
    a("            const long long dt = t - p;\n")
    a("            if (dt <= excl && dt >= -excl) continue;\n")
    a(f"            const double* xc = lib + i * {D};\n")
    a("            double acc = 0.0;\n")
    a("            do {\n")
    for j in range(D):
        a(f"                {{ const double d = xq[{j}] - __ldg(xc + {j}); acc = acc + d * d; }}\n")
        if (j + 1) % C == 0 and j + 1 < D:
            a(f"                if (acc > kd[{k - 1}]) break;\n")
    # insert (acc, t) into the sorted list
    a(f"                if (!before(acc, t, kd[{k - 1}], kt[{k - 1}], p)) break;\n")
    a(f"                int j = {k - 1};\n")
    a("                while (j > 0 && before(acc, t, kd[j - 1], kt[j - 1], p)) {\n")
    a("                    kd[j] = kd[j - 1]; kt[j] = kt[j - 1]; --j;\n")
    a("                }\n")
    a("                kd[j] = acc; kt[j] = t;\n")
    a("            } while (0);\n")
    a("        }\n    }\n")
    a("    long long c = 0;\n")
    a(f"    for (int j = 0; j < {k}; ++j) {{\n")
    a(f"        out_t[r * {k} + j] = kt[j];\n")
    a(f"        out_d[r * {k} + j] = kt[j] >= 0 ? sqrt(kd[j]) : CUDART_INF;\n")
    a("        c += kt[j] >= 0;\n    }\n")
    a("    count[r] = c;\n}\n")
    return "".join(L)


def _kernel(k: int, D: int, C: int):
    key = (k, D, C)
    fn = _CACHE.get(key)
    if fn is None:
        fn = _CACHE[key] = _module(("ivf", k, D, C), _scan_source(k, D, C)).get_function(
            "ivf_scan")
    return fn


def scan_device(lib, lib_t, offs, q, q_t, probe, excl: int, k: int, C: int):
    """The CUDA scan (see :func:`scan_reference`): CuPy arrays in and out."""
    import cupy as cp

    n = int(q.shape[0])
    D = int(q.shape[1])
    out_t = cp.empty((n, k), cp.int64)
    out_d = cp.empty((n, k), cp.float64)
    count = cp.empty(n, cp.int64)
    if n == 0:
        return out_t, out_d, count
    probe = cp.ascontiguousarray(probe, dtype=cp.int32)
    _kernel(k, D, C)(((n + _BLOCK - 1) // _BLOCK,), (_BLOCK,),
                     (lib, lib_t, offs, cp.ascontiguousarray(q, dtype=cp.float64),
                      cp.ascontiguousarray(q_t, dtype=cp.int64), probe, np.int64(n),
                      np.int32(probe.shape[1]), np.int64(excl), out_t, out_d, count))
    return out_t, out_d, count
