"""xedm.core.resident: NaN-free series' point sets, observations and target columns, made
from one copy of X where the kernels run, equal the general path's (xedm.core.ccm) exactly.
Run here on NumPy arrays (backend="cpu"); tests/test_edm_gpu.py runs xmap through it on the
GPU against the CPU."""

from __future__ import annotations

import numpy as np
import pytest

from xedm.core import ccm
from xedm.core.embed import observed_at
from xedm.core.resident import Resident


def _X(seed, N=5, T=60):
    r = np.random.default_rng(seed)
    X = np.cumsum(r.standard_normal((N, T)), axis=1)
    X[0] *= 1e5  # exponents of every size, an all-zero series
    X[1] *= 1e-300
    X[2] = 0.0
    return X


@pytest.mark.parametrize("E_list,tau", [([1], 1), ([3], 2), ([1, 2, 5], 1), ([2, 4], 3)])
@pytest.mark.parametrize("given", [False, True])
def test_point_sets_equal_the_general_path(E_list, tau, given):
    X = _X(len(E_list) + tau)
    T = X.shape[1]
    res = Resident(X, "cpu")
    fin = np.isfinite(X)
    lib_mask = np.ones(T, bool)
    lib_mask[-3:] = False  # t + Tp outside the data
    for sl in (slice(0, 5), slice(1, 4)):
        pred_t = np.arange(2, T - 1) if given else None
        a = res.point_sets(sl, E_list, tau, lib_mask, pred_t)
        b = ccm._point_sets(X, fin, sl, E_list, tau, lib_mask, pred_t)
        for name in ("Xpad", "lib_ok", "pred_t", "pred_ok", "kernel_E", "q_lo", "q_hi",
                     "xexp"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
            assert getattr(a, name).shape == getattr(b, name).shape
        assert (a.pad, a.tau) == (b.pad, b.tau)


def test_observed_and_series():
    X = _X(3)
    res = Resident(X, "cpu")
    for out_t in (np.arange(1, 60), np.arange(-2, 5), np.arange(0, 61)):
        np.testing.assert_array_equal(res.observed(slice(1, 4), out_t),
                                      observed_at(X[1:4], out_t))
    np.testing.assert_array_equal(res.series(slice(0, 2)), X[:2])


def test_columns_equal_the_general_path():
    X = _X(4, N=6)
    res = Resident(X, "cpu")
    E_used = np.array([2, 3, 2, 5, 3, 2])
    E_set = np.unique(E_used)
    a = ccm._target_columns(X, None, E_used, E_set, "cpu", res)
    b = ccm._target_columns(X, None, E_used, E_set, "cpu")
    for u, v in zip(a, b, strict=True):
        if isinstance(u, list):
            for p, q in zip(u, v, strict=True):
                np.testing.assert_array_equal(p, q)
        else:
            np.testing.assert_array_equal(u, v)
    assert a[4].flags.c_contiguous



def test_resident_targets_from_parts_equal_the_host_targets():
    """xmap of a block with its targets as a Resident joined from row blocks (the GPU
    workers' path: no joined copy on the host) equals the same targets as an array, and the
    cache keeps the Resident's columns for the next block."""
    X = _X(7, N=7, T=80)
    parts = [X[:3], X[3:4], X[4:]]
    res = Resident(parts, "cpu")
    assert len(res) == 7 and res.shape == X.shape and res.all_finite()
    gap = [X[:3], X[3:].copy()]
    gap[1][1, 5] = np.nan
    assert not Resident(gap, "cpu").all_finite()
    np.testing.assert_array_equal(res.X, X)
    E = np.array([1, 2, 3, 2, 1, 4, 2])
    kw = dict(E=E, tau=1, knn=None, excl=0, backend="cpu")
    cache = {}
    for Tp, libs in [(0, X[:4]), (0, X[2:]), (1, X[2:])]:
        want = ccm.xmap(libs, Tp=Tp, Y=X, **kw)["rho"]
        got = ccm.xmap(libs, Tp=Tp, Y=res, cache=cache, **kw)["rho"]
        np.testing.assert_array_equal(got, want)
        assert cache["targets"][0] is res
    with pytest.raises(ValueError, match="length T"):
        ccm.xmap(X[:, :50], Tp=0, Y=res, **kw)
    with pytest.raises(ValueError, match="surrogates"):
        ccm.xmap(X, Tp=0, Y=res, S=X[:, None, :], **kw)
