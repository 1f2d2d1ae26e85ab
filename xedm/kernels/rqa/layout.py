"""The layout of RQA's line-length histograms, shared by the kernels and :mod:`xedm.recurrence`.

Pure Python (no numba, no CuPy), so the recurrence layer and both kernels read one rule.
"""

from __future__ import annotations


def hist_layout(prob) -> int:
    """The common histogram length ``L + 1`` (``L`` = the most rows of any matrix of
    ``prob``, a :class:`xedm.recurrence.recurrence.RecurrenceProblem`)."""
    L = int(prob.matrices[:, 2].max())
    return L + 1
