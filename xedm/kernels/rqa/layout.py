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
