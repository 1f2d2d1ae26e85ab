"""The layout of RQA's line-length histograms and of the GPU kernels' work, shared by the kernels
and :mod:`xedm.recurrence`.

Pure Python (no numba, no CuPy), so the recurrence layer and both kernels read one rule.
"""

from __future__ import annotations

import numpy as np


def hist_layout(prob) -> int:
    """The common histogram length ``L + 1`` (``L`` = the most rows of any matrix of
    ``prob``, a :class:`xedm.recurrence.recurrence.RecurrenceProblem`)."""
    L = int(prob.matrices[:, 2].max())
    return L + 1


def split_even(lo, hi, parts):
    edges = np.linspace(lo, hi, parts + 1).round().astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def split_area(lo, hi, ra, rb, parts):
    """Split diagonals [lo, hi) (length min(ra, rb - k)) into ``parts`` ranges of about
    equal total length."""
    if hi <= lo:
        return []
    ks = np.arange(lo, hi, dtype=np.int64)
    c = np.cumsum(np.minimum(ra, rb - ks).astype(np.float64))
    cuts = [lo] + [int(lo + np.searchsorted(c, c[-1] * p / parts)) for p in range(1, parts)]
    cuts.append(hi)
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]


def diagonal_ranges(prob, na: int, nb: int, identity: bool = True):
    """The diagonals one matrix's kernels walk: ``(k0, k1, weight, swapped, rows, cols)``.

    Symmetric: diagonals ``max(theiler, 1) .. na - 1`` of the upper triangle, weight 2 (the
    lower triangle's twins), and the line of identity (weight 1) when ``theiler`` is 0 and
    ``identity`` (a kernel that adds that line itself passes False).  Otherwise the upper
    diagonals of (rows, cols) and the lower ones as the upper of the swapped matrix."""
    if prob.symmetric:
        w = max(int(prob.theiler), 0)
        out = [(0, 1, 1, False, na, nb)] if w == 0 and identity else []
        return out + [(max(w, 1), na, 2, False, na, nb)]
    return [(0, nb, 1, False, na, nb), (1, na, 1, True, nb, na)]


def hist_source(hs: int, nk: int) -> str:
    """CUDA helpers of the GPU kernels' histograms: ``hadd`` counts a line of length ``len``
    (weight ``w``) for threshold ``kk`` in the block's shared-memory bins (``HS`` per
    threshold) or, when longer, straight in device memory; ``hflush`` adds the block's bins
    to the device histograms."""
    return f"""
#define HS {hs}
#define NK {nk}
__device__ __forceinline__ void hadd(unsigned int* sh, unsigned long long* g, int kk,
                                     long long len, long long lp1, unsigned int w) {{
    if (len < HS) atomicAdd(&sh[kk * HS + len], w);
    else atomicAdd(&g[kk * lp1 + len], (unsigned long long)w);
}}
__device__ __forceinline__ void hflush(unsigned int* sh, unsigned long long* g, long long lp1) {{
    for (int b = threadIdx.x; b < NK * HS; b += blockDim.x) {{
        unsigned int v = sh[b];
        int len = b % HS;
        if (v && len < lp1) atomicAdd(&g[(b / HS) * lp1 + len], (unsigned long long)v);
    }}
}}"""
