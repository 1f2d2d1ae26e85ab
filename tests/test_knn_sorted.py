"""The GPU's sorted kNN kernel (xedm/kernels/knn/gpu.py, ``knn_sorted``) written out in NumPy
and checked against the CPU kernels on any machine.

The twin follows the kernel step by step: the two keys (``knn.gpu_keys.sorted_keys``, on NumPy
arrays), the library sorted by the first, the rows in the kernel's order (``row_order``: by
the first key, by the second within runs), 32 rows to a warp, the warp's span, the walk
outwards one candidate at a time on alternating sides, each side stopping when no row's reach
(``sqrt(m_lags * k-th) + 2 delta``, with the same margins) covers the next key, each
candidate passed over by the rows whose reach in the second key misses it, and the
exact float64 distances inserted in the order (distance, |dt|, t).  Its tables must equal
``knn.cpu.knn_sweep``'s bit for bit; with half the reach they must not, so the test can
fail.  The GPU tests (tests/test_edm_gpu.py) run the CUDA kernel itself on the same kinds of cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_ties import MODES, kernel_args, lib_pred, min_run, problem, runs_series

from xedm.kernels import get_kernel
from xedm.kernels.knn.gpu_keys import row_order, sorted_keys


def _before(d, q, dd, qq, p):
    if d != dd:
        return d < dd
    a, aa = abs(q - p), abs(qq - p)
    return a < aa if a != aa else q < qq


def _insert(lst, k, d, q, p):
    """Keep the k first of [(d, q)] in the kernels' order."""
    if len(lst) == k and not _before(d, q, *lst[-1], p):
        return
    i = len(lst)
    while i > 0 and _before(d, q, *lst[i - 1], p):
        i -= 1
    lst.insert(i, (d, q))
    del lst[k:]


def _reach(m_lags, rm0, delta, scale=1.0):
    if rm0 < 0.0:
        return -1.0
    f = 1.0 + 1e-12
    return scale * (math.sqrt(m_lags * rm0 * f) * f + 2.0 * delta)


def sorted_twin(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, split=False,
                reach_scale=1.0, group=None):
    """idx (nE, B, P, kmax), dist (nE, B, P, kmax) as the sorted kernel computes them, and
    the number of (row, candidate) pairs visited."""
    B, C, W = Xpad.shape
    P = len(pred_t)
    nE = len(E_list)
    kmax = int(max(k_list))
    idx = np.full((nE, B, P, kmax), -1, np.int64)
    dist = np.full((nE, B, P, kmax), np.inf)
    m = min(int(E_list[0]), 64)
    # the kernel's keys and row order, from NumPy
    keyt, keyt2, m_lags, m2, delta, delta2 = sorted_keys(Xpad, pad, m, tau)
    anyok = lib_ok.any(axis=0)
    visited = 0
    for b in range(B):
        cand = np.argsort(np.where(anyok[b], keyt[b], np.inf), kind="stable")
        ckey = keyt[b, cand]
        ckey2 = keyt2[b, cand]
        nc = int(anyok[b].sum())
        perm = row_order(keyt[b:b + 1, pred_t], keyt2[b:b + 1, pred_t], group)[0]
        for w0 in range(0, P, 32):
            rows = perm[w0:w0 + 32]
            ok = np.asarray(pred_ok)[:, b, rows]  # (nE, lanes)
            lists = [[[] for _ in rows] for _ in range(nE)]
            thr = np.where(ok, np.inf, -1.0)
            live = ok.any(axis=0)
            if not live.any():
                continue
            kp = keyt[b, pred_t[rows]]
            kp2 = keyt2[b, pred_t[rows]]
            xlo, xhi = kp[live].min(), kp[live].max()
            c0 = int(np.searchsorted(ckey[:nc], xlo, side="left"))
            c1 = int(np.searchsorted(ckey[:nc], xhi, side="right"))
            for part in ([0, 1] if split else [None]):
                right = c1 if part == 1 else c0
                left = c0 - 1
                go_r, go_l, turn_r = part != 1, part != 0, True
                lists_p = [[[] for _ in rows] for _ in range(nE)] if split else lists
                thr_p = thr.copy()
                while True:
                    at = -1
                    if right < c1:
                        at, right = right, right + 1
                    else:
                        for _ in range(2):
                            if at >= 0:
                                break
                            rm0 = thr_p.max(axis=0)
                            reach = np.array([_reach(m_lags, v, delta, reach_scale) for v in rm0])
                            if turn_r and go_r:
                                go_r = right < nc and bool(
                                    (np.abs(kp - ckey[min(right, nc - 1)]) <= reach).any())
                                if go_r:
                                    at, right = right, right + 1
                            elif not turn_r and go_l:
                                go_l = left >= 0 and bool(
                                    (np.abs(kp - ckey[max(left, 0)]) <= reach).any())
                                if go_l:
                                    at, left = left, left - 1
                            turn_r = not turn_r
                        if at < 0:
                            break
                    # the second key: the candidate passed over by every row out of reach
                    reach2 = np.array([_reach(m2, v, delta2, reach_scale)
                                       for v in thr_p.max(axis=0)])
                    near2 = np.abs(kp2 - ckey2[at]) <= reach2
                    if not near2.any():
                        continue
                    q = int(cand[at])
                    for lane, pi in enumerate(rows):
                        p = int(pred_t[pi])
                        if not live[lane] or not near2[lane] or abs(q - p) <= excl:
                            continue
                        visited += 1
                        acc = 0.0
                        ie = 0
                        for e in range(int(E_list[-1])):
                            for c in range(C):
                                d = Xpad[b, c, pad + p - e * tau] - Xpad[b, c, pad + q - e * tau]
                                acc = acc + d * d
                            while ie < nE and int(E_list[ie]) == e + 1:
                                if acc <= thr_p[ie, lane] and lib_ok[ie, b, q]:
                                    lst = lists_p[ie][lane]
                                    _insert(lst, int(k_list[ie]), acc, q, p)
                                    if len(lst) == int(k_list[ie]):
                                        thr_p[ie, lane] = lst[-1][0]
                                ie += 1
                if split:  # the merge kernel: the k first of both slices' lists
                    for ie in range(nE):
                        for lane, pi in enumerate(rows):
                            for d, q in lists_p[ie][lane]:
                                _insert(lists[ie][lane], int(k_list[ie]), d, q,
                                        int(pred_t[pi]))
            for ie in range(nE):
                for lane, pi in enumerate(rows):
                    for j, (d, q) in enumerate(lists[ie][lane]):
                        idx[ie, b, pi, j] = q
                        dist[ie, b, pi, j] = math.sqrt(d)
    return idx, dist, visited


def _cases(n, seed0, smooth):
    out = []
    for seed in range(seed0, seed0 + n):
        r = np.random.default_rng(seed)
        E_list = sorted(r.choice(np.arange(1, 7), size=int(r.integers(1, 3)),
                                 replace=False).tolist())
        tau = int(r.choice([1, 2]))
        C = int(r.integers(1, 3))
        excl = int(r.choice([0, 0, 3]))
        k_list = np.array([E + 1 + int(r.integers(0, 3)) for E in E_list], np.int64)
        T = int(r.integers(120, 220))
        if smooth:
            t = np.arange(T)
            X = np.stack([np.sin(0.07 * t + c) + 0.3 * np.sin(0.011 * t * (c + 2))
                          for c in range(C)])
            X = np.round(X, 3)  # exact ties among near-equal states
        else:
            X = runs_series(seed, T, min_run(max(E_list), tau, int(k_list.max())), C,
                            int(r.choice([0, 3])))
        lib, pm, _ = lib_pred(MODES[seed % len(MODES)], T, seed)
        out.append((X, E_list, k_list, tau, excl, lib, pm))
    return out


def _args(X, E_list, tau, lib, pm):
    lib_ok = problem(X, X[0], E_list, tau, 1, lib)
    Xpad, pad, pred_t, pred_ok, q_lo, q_hi = kernel_args(X, lib_ok, pm, E_list, tau)
    return Xpad, pad, lib_ok, pred_t, pred_ok, q_lo, q_hi


@pytest.mark.parametrize("smooth", [False, True])
@pytest.mark.parametrize("split", [False, True])
def test_sorted_twin_equals_cpu(smooth, split):
    visited = total = 0
    for X, E_list, k_list, tau, excl, lib, pm in _cases(6, 300 + 10 * smooth, smooth):
        Xpad, pad, lib_ok, pred_t, pred_ok, q_lo, q_hi = _args(X, E_list, tau, lib, pm)
        ci, cd = get_kernel("knn_sweep", "cpu")(Xpad, pad, lib_ok, pred_t, pred_ok,
                                                np.array(E_list, np.int64), k_list, tau,
                                                excl, q_lo, q_hi)
        ti, td, v = sorted_twin(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau,
                                excl, split=split, group=32 if split else None)
        np.testing.assert_array_equal(ti, ci)
        np.testing.assert_array_equal(td, cd)  # the same sums: bit for bit
        visited += v
        total += int(pred_ok.any(axis=0).sum()) * int(lib_ok.any(axis=0).sum())
    if smooth:  # the walk stops early on smooth states: far fewer pairs than brute force
        assert visited < 0.5 * total


def test_a_short_reach_misses_neighbours():
    # the bound at half its length: rows stop before their true neighbours on smooth states,
    # so the twin's tables must differ from the CPU's
    t = np.arange(300)
    X = np.round(np.sin(0.05 * t) + 0.2 * np.sin(0.013 * t), 4)[None]
    E_list, k_list, tau = [6], np.array([7]), 1
    lib = [(0, 299)]
    pm = np.ones(300, bool)
    Xpad, pad, lib_ok, pred_t, pred_ok, q_lo, q_hi = _args(X, E_list, tau, lib, pm)
    ci, _ = get_kernel("knn_sweep", "cpu")(Xpad, pad, lib_ok, pred_t, pred_ok,
                                           np.array(E_list, np.int64), k_list, tau, 0, q_lo,
                                           q_hi)
    good, _, _ = sorted_twin(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, 0)
    short, _, _ = sorted_twin(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, 0,
                              reach_scale=0.5)
    np.testing.assert_array_equal(good, ci)
    assert (short != ci).any()
