"""Embedding bookkeeping helpers against their one-E definitions."""

import numpy as np
import pytest

from xedm.core.embed import candidate_range, window_finite, windows_finite


@pytest.mark.parametrize("tau", [1, 2, 5])
def test_windows_finite_matches_window_finite_per_E(tau):
    rng = np.random.default_rng(tau)
    fin = rng.random((3, 40)) > 0.1
    E_list = [1, 2, 5, 6, 13]
    got = windows_finite(fin, E_list, tau)
    for i, E in enumerate(E_list):
        np.testing.assert_array_equal(got[i], window_finite(fin, E, tau, False))
    assert fin.sum() > 0 and got.dtype == bool


def test_candidate_range_is_the_hull_of_library_points():
    ok = np.zeros((2, 3, 10), bool)
    ok[0, 0, [2, 7]] = True
    ok[1, 0, 5] = True
    ok[1, 2, [0, 9]] = True
    lo, hi = candidate_range(ok)
    np.testing.assert_array_equal(lo, [2, 0, 0])
    np.testing.assert_array_equal(hi, [8, 0, 10])
