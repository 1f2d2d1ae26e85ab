"""The naive references' shortcuts against their definitions (tests/naive.py)."""

from __future__ import annotations

import naive
import numpy as np
import pytest


@pytest.mark.parametrize("C, E, tau, embedded", [(1, 1, 1, False), (1, 3, 2, False),
                                                 (2, 5, 1, False), (3, 7, 3, False),
                                                 (1, 20, 1, False), (4, 1, 1, True),
                                                 (11, 1, 1, True)])
def test_naive_neighbors_equal_the_loop(C, E, tau, embedded):
    """naive.neighbors (the library's states at once) is bitwise naive.neighbors_loop: the same
    distances (the same sums, also beyond numpy's 8-element pairwise block), the same order
    through exact ties, exclusions and knn (None too)."""
    rng = np.random.default_rng(C * 100 + E)
    X = rng.normal(size=(C, 160))
    X[:, 60:90] = np.round(X[:, 60:90])  # runs of equal values: exact ties of the distances
    X[0, 30] = np.nan  # a state that is not finite: left out of the library, a gap in pred
    y = X[0]
    libpts = naive.library_points(X, y, E, tau, 1, [(0, 99), (110, 158)], embedded)
    span = 0 if embedded else (E - 1) * tau
    for p in range(span, 160, 3):
        for excl, knn in ((0, E + 1), (4, 2 * E + 3), (2, None)):
            want = naive.neighbors_loop(X, p, libpts, E, tau, knn, excl, embedded) \
                if naive.state(X, p, E, tau, embedded) is not None else None
            if want is None:
                continue
            got = naive.neighbors(X, p, libpts, E, tau, knn, excl, embedded)
            assert [n[1:] for n in got] == [n[1:] for n in want], (p, excl, knn)
            assert np.array_equal([n[0] for n in got], [n[0] for n in want]), (p, excl, knn)
