"""Shared by the neighbour tests (tests/test_neighbors.py, tests/test_neighbors_ivf.py): the
point-set cases, the helpers that prepare them, and the contract check every table must pass.
Needs no optional package (the GPU machine runs the ivf tests without faiss or pynndescent).
"""

from __future__ import annotations

import numpy as np

from xedm.core.embed import LibSpec, prepare
from xedm.neighbors import contract

RHO_TOL = 0.005  # |rho(approximate) - rho(exact)| at recall >= 0.95 on Lorenz-63


def _prep(x, E, lib=None, Tp=1, tau=1, embedded=False, pred=None):
    X = x if x.ndim == 3 else x[None, None]
    y = X[:, 0]
    T = X.shape[-1]
    lib = LibSpec.whole(T) if lib is None else lib
    pred = np.ones(T, bool) if pred is None else pred
    return prepare(X, y, np.atleast_1d(E), tau, Tp, lib, pred, embedded)


def _gappy(x):
    x = x.copy()
    x[700:712] = np.nan  # a NaN gap
    x[1500:1560] = np.round(x[1500:1560])  # runs of equal values: exact ties
    return x


CASES = [
    # (E, excl, lib, Tp, tau)
    (1, 0, None, 1, 1),
    (1, 7, LibSpec(segments=np.array([[0, 999], [1200, 2999]])), 1, 1),
    (2, 0, None, -2, 2),
    (4, 5, LibSpec(segments=np.array([[100, 1500], [1800, 2900]])), 1, 1),
    (6, 0, LibSpec(mask=(np.arange(3000) % 3 != 0)), 2, 1),
    (20, 12, None, 1, 1),
]



def _check_contract(prep, idx, dist, k, excl, ie=0):
    """Every rule a table must keep, whatever found the neighbours (vectorized over rows;
    distances recomputed with numpy from the padded series)."""
    E = int(prep.kernel_E[ie])
    lags = np.arange(E) * prep.tau
    for b in range(prep.Xpad.shape[0]):
        lib = prep.lib_ok[ie, b]
        avail = contract.available(lib, prep.pred_t, excl)
        rows, d = idx[ie, b, :, :k], dist[ie, b, :, :k]
        off = ~prep.pred_ok[ie, b]
        assert (rows[off] == -1).all()
        p = prep.pred_t[:, None]
        n = (rows >= 0).sum(axis=1)
        on = ~off
        assert (n[on] == np.minimum(k, avail[on])).all()  # no row left short
        valid = rows >= 0
        assert (valid == (np.arange(k)[None, :] < n[:, None])).all()  # -1 padding at the end
        assert np.isinf(d[~valid]).all()
        q = np.where(valid, rows, 0)
        assert lib[q][valid].all()  # library points only (segments, masks, NaN)
        assert (np.abs(q - p)[valid] > excl).all()  # self and the exclusion radius
        srt = np.sort(np.where(valid, rows, -1 - np.arange(k)[None, :]), axis=1)
        assert (np.diff(srt, axis=1) != 0).all()  # no repeats
        # states (rows, E*C): lag-major, column-minor, as the kernels sum them
        Xb = prep.Xpad[b]
        sp = Xb[:, prep.pad + prep.pred_t[:, None] - lags[None, :]]  # (C, P, E)
        sq = Xb[:, prep.pad + q[:, :, None] - lags[None, None, :]]  # (C, P, k, E)
        ref = np.sqrt(((sp[:, :, None, :] - sq) ** 2).sum(axis=(0, 3)))
        np.testing.assert_allclose(d[valid], ref[valid], rtol=1e-12, atol=1e-300)
        # the order (distance, |dt|, t): consecutive entries never out of order
        a, z = slice(0, k - 1), slice(1, k)
        both = valid[:, a] & valid[:, z]
        dt = np.abs(q - p)
        later = (d[:, a] < d[:, z]) | ((d[:, a] == d[:, z]) & (
            (dt[:, a] < dt[:, z]) | ((dt[:, a] == dt[:, z]) & (q[:, a] < q[:, z]))))
        assert later[both].all()
