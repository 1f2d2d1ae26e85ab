"""RQA conventions of the field's tools, as one switch (``rqa(..., convention=...)``).

Each convention fixes every choice in which the tools differ (docs/rqa.md has the table):

* ``"xedm"`` (the default; pyrqa's numbers): Euclidean norm, Theiler window 1 for the
  diagonal lines only, RR over the whole matrix, white vertical lines of every run
  (``w_min = 2``), a measure over an empty histogram is NaN.
* ``"pyunicorn"`` (pyunicorn's ``RecurrencePlot``): supremum (maximum) norm, the line of
  identity left out of the diagonal lines, ``w_min = 1``, and pyunicorn's regularised
  ratios ``x / (n + 1e-8)``, so an empty histogram gives 0 (``L_max`` too).
* ``"crp"`` (the CRP toolbox's ``crqa.m``, Marwan): maximum norm, and the Theiler band
  ``|i - j| < theiler`` removed from the whole matrix: RR over the points outside it,
  vertical and white lines with it not recurrent; white vertical lines only between two
  recurrent points of a column (a column without recurrence: one line of its length),
  ``w_min = 1``; with no line of ``l_min`` or more, ``L``, ``L_max`` and ``ENTR`` are 0, and
  so are ``V_max`` and ``V_ENTR`` with none of ``v_min`` or more.

All three use ``R[i, j] = d < eps`` (strict), the natural log in the entropies, whose
probabilities run over the lines of at least the minimal length.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Convention:
    """The choices one convention makes (see the module docstring)."""

    name: str
    norm: str
    theiler: int
    w_min: int
    vertical_band: bool      # Theiler band removed from vertical / white lines and RR
    white_interior: bool     # white lines only between two recurrent points of a column
    empty: str               # "nan", "pyunicorn" (x / (n + 1e-8)) or "crp"


CONVENTIONS = {
    "xedm": Convention("xedm", "euclidean", 1, 2, False, False, "nan"),
    "pyunicorn": Convention("pyunicorn", "maximum", 1, 1, False, False, "pyunicorn"),
    "crp": Convention("crp", "maximum", 1, 1, True, True, "crp"),
}


def get_convention(convention) -> Convention:
    """The :class:`Convention` of a name; a clear ValueError naming the valid ones.

    >>> get_convention("crp").norm
    'maximum'
    """
    if not isinstance(convention, str) or convention not in CONVENTIONS:
        raise ValueError(f"convention={convention!r} is invalid; choose one of "
                         f"{tuple(CONVENTIONS)} (docs/rqa.md compares them)")
    return CONVENTIONS[convention]


def band_points(na: int, theiler: int) -> int:
    """Points of an ``na x na`` matrix with ``|i - j| < theiler`` (the CRP toolbox's
    reduction of RR's denominator).

    >>> band_points(4, 1), band_points(4, 2)
    (4, 10)
    """
    w = min(max(int(theiler), 0), int(na))
    if w == 0:
        return 0
    return na + 2 * ((w - 1) * na - (w - 1) * w // 2)
