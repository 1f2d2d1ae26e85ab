"""Recurrence times and the border correction of line histograms (plain arrays).

Both need, besides the line histograms, only the lines that touch the matrix border and the
extent of each column's recurrences, which short scans from the borders give
(:func:`xedm.kernels.rqa.cpu.column_extents`, :func:`~xedm.kernels.rqa.cpu.diagonal_border_runs`):
a scan stops at the first change, so the cost is about N / RR distances per column, not N.

Recurrence times (Gao & Cai 2000), per column ``j`` of the matrix (the states recurring to
state ``j``), then pooled over the columns:

* ``T1``: mean gap between consecutive recurrent points of a column (sojourn points, gap 1,
  included): ``sum_j (last_j - first_j) / sum_j (n_j - 1)``;
* ``T2``: mean gap between the first points of consecutive vertical lines of a column (each
  line counted once): ``sum_j (s_last,j - first_j) / sum_j (lines_j - 1)``;
* ``RTE``: Shannon entropy (natural log) of the lengths of the white vertical lines that do
  not touch the border (the times between leaving a neighbourhood and coming back).

Border correction ``border="drop"`` (Kraemer & Marwan 2019, "dibo"): lines touching the
border of the matrix are censored (their true length is unknown), so the diagonal, vertical
and white vertical histograms leave them out.
"""

from __future__ import annotations

import numpy as np

from ..kernels.rqa.layout import hist_layout

TIMES = ("T1", "T2", "RTE")
BORDERS = ("keep", "drop")


def _kernel_args(prob):
    nmat = prob.matrices.shape[0]
    mats = np.zeros((nmat, 8), np.int64)
    mats[:, :6] = prob.matrices
    X = np.ascontiguousarray(prob.X, np.float64)
    Y = X if prob.Y is prob.X else np.ascontiguousarray(prob.Y, np.float64)
    return X, Y, mats


def column_extents(prob, thr, code) -> np.ndarray:
    """``(nmat, K, nb_max, 4)`` int64: first recurrent row, end of the first run, start of
    the last run, last recurrent row of each column (-1: no recurrence; columns past a
    matrix's ``nb`` are -1 too)."""
    from ..kernels import get_kernel

    X, Y, mats = _kernel_args(prob)
    out = np.full((mats.shape[0], thr.shape[1], int(prob.matrices[:, 5].max()), 4), -1,
                  np.int64)
    get_kernel("rqa_column_extents", "cpu")(X, Y, prob.cvar, prob.coff, prob.cchan, prob.nch,
                                            np.ascontiguousarray(thr), code, mats, out)
    return out


def _add(h, p, k, length, weight=1):
    np.add.at(h, (p, k, length), np.asarray(weight, np.int64))


def border_histograms(prob, thr, code, ext) -> dict:
    """Histograms ``(nmat, K, L + 1)`` of the lines touching the border: ``diagonal``,
    ``vertical``, ``white`` (each counted as the line histograms count it)."""
    from ..kernels import get_kernel

    nmat, K = thr.shape[0], thr.shape[1]
    Lp1 = hist_layout(prob)  # no run is longer than a column (na), nor a diagonal
    out = {k: np.zeros((nmat, K, Lp1), np.int64) for k in ("diagonal", "vertical", "white")}
    na = prob.matrices[:, 2][:, None, None]
    first, end1, start2, last = (ext[..., c] for c in range(4))
    valid = np.arange(ext.shape[2])[None, None, :] < prob.matrices[:, 5][:, None, None]
    P, Kk, _ = np.indices(first.shape)
    naf = np.broadcast_to(na, first.shape)
    top_black = valid & (first == 0)
    bottom_black = valid & (last == naf - 1) & (start2 > 0)
    top_white = valid & (first != 0)  # an empty column (-1) is one white run of na
    bottom_white = valid & (first >= 0) & (last < naf - 1)
    _add(out["vertical"], P[top_black], Kk[top_black], (end1 + 1)[top_black])
    _add(out["vertical"], P[bottom_black], Kk[bottom_black],
         (last - start2 + 1)[bottom_black])
    _add(out["white"], P[top_white], Kk[top_white],
         np.where(first < 0, naf, first)[top_white])
    _add(out["white"], P[bottom_white], Kk[bottom_white], (naf - 1 - last)[bottom_white])
    X, Y, mats = _kernel_args(prob)
    nb, nam = int(prob.matrices[:, 5].max()), int(prob.matrices[:, 2].max())
    ndiag = nam if prob.symmetric else nb + nam - 1
    runs = np.zeros((nmat, K, ndiag, 3), np.int64)
    get_kernel("rqa_diagonal_border_runs", "cpu")(
        X, Y, prob.cvar, prob.coff, prob.cchan, prob.nch, np.ascontiguousarray(thr), code,
        mats, prob.symmetric, int(prob.theiler) if prob.symmetric else 0, runs)
    P, Kk, _ = np.indices(runs.shape[:3])
    for c in (0, 1):
        sel = (runs[..., c] > 0) & (runs[..., 2] > 0)
        _add(out["diagonal"], P[sel], Kk[sel], runs[..., c][sel], runs[..., 2][sel])
    return out


def drop_border_lines(hists: dict, border: dict) -> dict:
    """The line histograms without the lines touching the border (``border="drop"``)."""
    out = dict(hists)
    for k in ("diagonal", "vertical", "white"):
        h = hists[k].astype(np.int64) - border[k]
        if np.any(h < 0):  # every border line is a line of the histogram
            raise RuntimeError(f"internal error: a {k} border line is not in its histogram")
        out[k] = h.astype(np.uint64)
    return out


def recurrence_times(hists: dict, ext, white_inner) -> dict:
    """``T1``, ``T2``, ``RTE`` ``(nmat, K)`` from the (uncorrected) line histograms, the
    column extents and the white histogram without its border lines."""
    hv = hists["vertical"].astype(np.int64)
    lengths = np.arange(hv.shape[-1])
    points = (hv * lengths).sum(-1)
    lines = hv.sum(-1)
    first, start2, last = ext[..., 0], ext[..., 2], ext[..., 3]
    full = first >= 0
    nonempty = full.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(points > nonempty, np.where(full, last - first, 0).sum(-1)
                      / (points - nonempty), np.nan)
        t2 = np.where(lines > nonempty, np.where(full, start2 - first, 0).sum(-1)
                      / (lines - nonempty), np.nan)
        w = white_inner[..., 1:].astype(np.float64)
        n = w.sum(-1, keepdims=True)
        p = w / n
        rte = np.where(n[..., 0] > 0, -np.where(w > 0, p * np.log(np.where(w > 0, p, 1.0)),
                                                 0.0).sum(-1), np.nan)
    return {"T1": t1, "T2": t2, "RTE": rte}


def corrected(prob, eps, norm: str, hists: dict, border: str = "keep",
              times: bool = False):
    """(histograms to measure, recurrence times or None) for the line histograms ``hists``
    of ``prob`` at ``eps`` (as :func:`~xedm.recurrence.recurrence.line_histograms` takes
    it): ``border="drop"`` leaves out the lines touching the border; ``times`` adds
    ``T1, T2, RTE`` ``(nmat, K)``.  ``recurrent`` always counts every recurrent point."""
    from .recurrence import NORMS, thresholds

    if border == "keep" and not times:
        return hists, None
    code = NORMS.index(norm)
    thr = thresholds(eps, norm, prob.nch, prob.matrices.shape[0])
    ext = column_extents(prob, thr, code)
    inner = drop_border_lines(hists, border_histograms(prob, thr, code, ext))
    inner["recurrent"] = hists["recurrent"]
    t = recurrence_times(hists, ext, inner["white"]) if times else None
    return (inner if border == "drop" else hists), t
