"""RQA measures from exact line-length histograms (index = line length, entry 0 unused).

Formulas follow pyrqa and pyunicorn (CONVENTIONS.md):

* ``RR`` = recurrent points / (rows x columns), band and line of identity included;
* ``DET`` = sum_{l>=l_min} l P(l) / sum_{l>=1} l P(l); ``L`` = mean length of the lines with
  ``l >= l_min``; ``L_max`` = longest line (any length); ``DIV`` = 1 / L_max;
  ``ENTR`` = -sum p(l) ln p(l), p(l) = P(l) / (number of lines with l >= l_min);
* ``LAM``, ``TT``, ``V_max``, ``V_ENTR``: the same on vertical lines with ``v_min``;
* ``W``, ``W_max``, ``W_ENTR``: the same on white vertical lines with ``w_min``.

A measure over an empty histogram is NaN (``L_max`` too, so all measures are float64).
"""

from __future__ import annotations

import numpy as np

MEASURES = ("RR", "DET", "L", "L_max", "DIV", "ENTR", "LAM", "TT", "V_max", "V_ENTR",
            "W", "W_max", "W_ENTR")


PYUNICORN_EPS = 1e-8  # pyunicorn's RecurrencePlot._epsilon, added to every denominator


def _plogp(sel, denom):
    """``p ln p`` with ``p = sel / denom[..., None]`` where ``sel > 0``, else 0: the same
    values as computing it over the whole array (only the nonzero bins, a few thousand of a
    million-point histogram, take the division and the logarithm)."""
    terms = np.zeros(sel.shape)
    pos = sel > 0
    if pos.any():
        d = np.broadcast_to(np.asarray(denom, np.float64)[..., None], sel.shape)[pos]
        pv = sel[pos].astype(np.float64) / d
        terms[pos] = pv * np.log(pv)
    return terms


def _line_stats(hist, lmin, empty="nan"):
    """(fraction of points in lines >= lmin, mean length, longest, entropy) over the last axis.

    ``empty`` (see :mod:`xedm.recurrence.conventions`): ``"nan"``: NaN over an empty
    histogram; ``"pyunicorn"``: every ratio ``x / (n + 1e-8)`` and the longest line over all
    lengths, 0 when there is none; ``"crp"``: with points but no line of ``lmin`` or more, the
    mean, longest and entropy are 0, the longest is that of the lines of ``lmin`` or more."""
    h = np.asarray(hist, np.uint64)
    lengths = np.arange(h.shape[-1], dtype=np.uint64)
    points_all = (h * lengths).sum(axis=-1, dtype=np.uint64)
    sel = h[..., lmin:]
    points = (sel * lengths[lmin:]).sum(axis=-1, dtype=np.uint64)
    lines = sel.sum(axis=-1, dtype=np.uint64)
    nz = h[..., 1:] > 0
    longest = np.where(nz.any(axis=-1),
                       h.shape[-1] - 1 - np.argmax(nz[..., ::-1], axis=-1), 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(points_all > 0, points.astype(np.float64) / points_all, np.nan)
        mean = np.where(lines > 0, points.astype(np.float64) / lines, np.nan)
        terms = _plogp(sel, lines.astype(np.float64))
        entr = np.where(lines > 0, -terms.sum(axis=-1), np.nan)
    lmax = np.where(longest > 0, longest.astype(np.float64), np.nan)
    if empty == "pyunicorn":
        e = PYUNICORN_EPS
        ratio = points.astype(np.float64) / (points_all.astype(np.float64) + e)
        mean = points.astype(np.float64) / (lines.astype(np.float64) + e)
        entr = -_plogp(sel, lines.astype(np.float64) + e).sum(axis=-1)
        lmax = longest.astype(np.float64)
    elif empty == "crp":
        some = points_all > 0
        none = some & (lines == 0)
        mean = np.where(none, 0.0, mean)
        entr = np.where(none, 0.0, entr)
        lmax = np.where(none, 0.0, np.where(some, lmax, np.nan))
    return ratio, mean, lmax, entr


def rqa_measures(diagonal, vertical, white, n_points, l_min=2, v_min=2, w_min=2,
                 recurrent=None, empty="nan") -> dict:
    """Every RQA measure from the three histograms.

    Parameters
    ----------
    diagonal, vertical, white : array_like of uint64, shape (..., L + 1)
        Line-length histograms (see :func:`xedm.recurrence.recurrence.line_histograms`).
    n_points : int or array_like
        Number of points of the matrix (rows x columns), broadcast against ``(...)``.
    l_min, v_min, w_min : int
        Shortest diagonal, vertical and white vertical line counted as a line.
    recurrent : array_like, optional
        Recurrent points for RR (default: ``sum(l * vertical[l])``; give it when the
        histograms leave some lines out, as the border correction does).
    empty : {"nan", "pyunicorn", "crp"}
        How ratios treat empty histograms, per :mod:`xedm.recurrence.conventions`
        (``Convention.empty``).

    Returns
    -------
    dict of name -> float64 array of shape (...)

    Examples
    --------
    >>> import numpy as np
    >>> h = np.array([0, 2, 1, 0], np.uint64)  # two points alone, one line of 2
    >>> m = rqa_measures(h, h, h, n_points=16)
    >>> float(m["DET"]), float(m["L"]), float(m["L_max"])
    (0.5, 2.0, 2.0)
    """
    for name, v in (("l_min", l_min), ("v_min", v_min), ("w_min", w_min)):
        if int(v) < 1:
            raise ValueError(f"{name}={v} is invalid; it must be >= 1")
    vertical = np.asarray(vertical, np.uint64)
    lengths = np.arange(vertical.shape[-1], dtype=np.uint64)
    if recurrent is None:
        recurrent = (vertical * lengths).sum(axis=-1, dtype=np.uint64)
    recurrent = np.asarray(recurrent, np.uint64)
    if empty not in ("nan", "pyunicorn", "crp"):
        raise ValueError(f"empty={empty!r} is invalid; choose 'nan', 'pyunicorn' or 'crp'")
    det, L, lmax, entr = _line_stats(diagonal, int(l_min), empty)
    lam, tt, vmax, ventr = _line_stats(vertical, int(v_min), empty)
    _, W, wmax, wentr = _line_stats(white, int(w_min), "nan" if empty == "crp" else empty)
    if empty == "crp":  # TT stays NaN without vertical lines (crqa.m's mean of nothing)
        tt = _line_stats(vertical, int(v_min))[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        rr = recurrent.astype(np.float64) / np.asarray(n_points, np.float64)
        div = np.where(lmax > 0, 1.0 / np.where(lmax > 0, lmax, 1.0), np.nan)
    return {"RR": rr, "DET": det, "L": L, "L_max": lmax, "DIV": div, "ENTR": entr,
            "LAM": lam, "TT": tt, "V_max": vmax, "V_ENTR": ventr,
            "W": W, "W_max": wmax, "W_ENTR": wentr}
