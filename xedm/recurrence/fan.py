"""The fixed-amount-of-neighbours (FAN) threshold: every state gets its own eps.

With ``neighbors_per_state=k``, row ``i`` of the matrix is ``R[i, j] = d(v_i, v_j) < eps_i``,
``eps_i`` the distance of rank ``k`` (0-based, state ``i`` itself at rank 0) among row ``i``'s
distances, so each row holds exactly ``k`` recurrent points (state ``i`` and its ``k - 1``
nearest neighbours) when no distances tie (pyunicorn's ``local_recurrence_rate``, the CRP
toolbox's "fan" method).  The matrix is not symmetric: its diagonal lines are counted in both
triangles, each once (the Theiler band left out), and its vertical lines run down the columns.
"""

from __future__ import annotations

import numpy as np

from ..kernels.rqa.layout import hist_layout
from .recurrence import NORMS, squared_threshold


def neighbor_eps(prob, k: int, norm: str) -> np.ndarray:
    """eps ``(nmat, na)`` of every row of every (self-recurrence) matrix of ``prob``."""
    from ..kernels import get_kernel

    mats = np.zeros((prob.matrices.shape[0], 8), np.int64)
    mats[:, :6] = prob.matrices
    out = np.full((mats.shape[0], int(prob.matrices[:, 2].max())), np.nan)
    get_kernel("rqa_row_kth_distances", "cpu")(np.ascontiguousarray(prob.X, np.float64),
                                               prob.cvar, prob.coff, prob.cchan,
                                               NORMS.index(norm), mats, int(k), out)
    eps = np.sqrt(out) if norm == "euclidean" else out
    # eps = 0 (k states on top of each other) keeps the exact repeats recurrent, as in rqa
    return np.where(eps > 0, eps, np.finfo(np.float64).tiny)


def neighbor_line_histograms(prob, k: int, norm: str, theiler: int) -> dict:
    """Line histograms ``(nmat, 1, L + 1)`` (as
    :func:`~xedm.recurrence.recurrence.line_histograms`) with the FAN threshold."""
    from ..kernels import get_kernel

    eps = neighbor_eps(prob, k, norm)
    thr = (np.vectorize(squared_threshold, otypes=[np.float64])(eps) if norm == "euclidean"
           else eps)
    nmat, Lp1 = prob.matrices.shape[0], hist_layout(prob)
    mats = np.zeros((nmat, 8), np.int64)
    mats[:, :6] = prob.matrices
    hd, hv, hw = (np.zeros((nmat, Lp1), np.int64) for _ in range(3))
    get_kernel("rqa_row_threshold_histograms", "cpu")(
        np.ascontiguousarray(prob.X, np.float64), prob.cvar, prob.coff, prob.cchan,
        NORMS.index(norm), mats, np.ascontiguousarray(thr), int(theiler), hd, hv, hw)
    out = {n: h.astype(np.uint64)[:, None, :] for n, h in
           (("diagonal", hd), ("vertical", hv), ("white", hw))}
    lengths = np.arange(Lp1, dtype=np.uint64)
    out["recurrent"] = (out["vertical"] * lengths).sum(axis=-1, dtype=np.uint64)
    out["eps"] = eps
    return out
