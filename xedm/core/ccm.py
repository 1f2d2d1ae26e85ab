"""Convergent cross mapping (sampled library sizes) and the all-pairs cross map (xmap).

Arrays: ``X`` (N, T), N series on a common time axis.  ``rho[i, j]`` is the skill of the
library series i's manifold at recovering target series j: high skill is evidence that
**j causes i** (CONVENTIONS.md).

Sampling (``ccm``): for each (library i, target j) the valid library points are the states of
i with a complete finite window whose target value j[t+Tp] is finite.  A fresh
``numpy.random.Generator(PCG64(seed))`` then draws, for each lib size in the given order and
each sample, ``rng.choice(n_valid, size=L, replace=False)`` (no draw is made for a size
>= n_valid: the full library is used).  Pairs with the same valid set therefore share their
library subsets.  Every valid point is predicted (itself and its exclusion radius excluded).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import get_kernel
from .embed import candidate_range, padded_series, window_finite

TABLE_BYTES = 512 * 2**20
# Table depth = DEPTH_FACTOR * k * n_valid / smallest sampled size (+16): deep enough that a
# row almost never runs out of sampled members; rows that do fall back to a direct search.
DEPTH_FACTOR = 4


def _target_ok(fin: np.ndarray, T: int, Tp: int) -> np.ndarray:
    """(N, T): target value at t + Tp exists and is finite, per target series."""
    ok = np.zeros_like(fin)
    t = np.arange(T)
    inside = (t + Tp >= 0) & (t + Tp < T)
    ok[:, inside] = fin[:, t[inside] + Tp]
    return ok


def draw_members(valid: np.ndarray, lib_sizes, samples: int, seed) -> np.ndarray:
    """(n_sizes * samples, T) membership masks of the sampled libraries (see module doc)."""
    pos = np.flatnonzero(valid)
    n = len(pos)
    rng = np.random.Generator(np.random.PCG64(seed))
    members = np.zeros((len(lib_sizes) * samples, len(valid)), dtype=bool)
    row = 0
    for L in lib_sizes:
        for _ in range(samples):
            if L >= n:
                members[row, pos] = True
            else:
                members[row, pos[rng.choice(n, size=L, replace=False)]] = True
            row += 1
    return members


def ccm(
    X, *, E, tau, Tp, knn, excl, lib_sizes, samples, seed, backend, progress: Callable = iter,
) -> dict[str, np.ndarray]:
    """rho (N, N, n_sizes, samples) for every ordered pair, library size and sample."""
    N, T = X.shape
    lib_sizes = np.asarray(lib_sizes, np.int64)
    fin = np.isfinite(X)
    tgt_ok = _target_ok(fin, T, Tp)
    table = get_kernel("sorted_table", backend)
    skill = get_kernel("ccm_skill", backend)
    rho = np.full((N, N, len(lib_sizes), samples), np.nan)
    n_valid = np.zeros((N, N), np.int64)
    drawn: dict[bytes, np.ndarray] = {}
    for i in progress(range(N)):
        Ei = int(E[i])
        k = Ei + 1 if knn is None else int(knn)
        pad = Ei * tau
        Xpad = padded_series(X[i][None, None], pad)[0]
        win = window_finite(fin[i][None], Ei, tau, False)[0]
        pred_t = np.flatnonzero(win).astype(np.int64)
        valid_all = win[None, :] & tgt_ok  # (N targets, T)
        groups: dict[bytes, list[int]] = {}
        for j in range(N):
            groups.setdefault(valid_all[j].tobytes(), []).append(j)
        for js in groups.values():
            valid = valid_all[js[0]]
            nv = int(valid.sum())
            n_valid[i, js] = nv
            if nv == 0:
                continue
            key = valid.tobytes()  # same valid set, same draws: draw once
            if key not in drawn:
                drawn[key] = draw_members(valid, lib_sizes, samples, seed)
            members = drawn[key]
            sampled = lib_sizes[lib_sizes < nv]
            if len(sampled):
                depth = int(np.ceil(DEPTH_FACTOR * k * nv / sampled.min())) + 16
            else:
                depth = k
            depth = int(min(nv, depth, max(k, TABLE_BYTES // (16 * max(len(pred_t), 1)))))
            complete = depth >= nv
            idx, dist = table(Xpad, pad, valid, pred_t, np.ones(len(pred_t), bool), Ei, tau,
                              excl, depth)
            Y = np.ascontiguousarray(np.where(fin[js], X[js], 0.0))
            obs_ok = tgt_ok[js][:, pred_t]
            r = skill(idx, dist, members, Y, obs_ok, k, Tp, Xpad, pad, Ei, tau, excl, pred_t,
                      complete)
            rho[i, js] = r.T.reshape(len(js), len(lib_sizes), samples)
    return {"rho": rho, "n_valid": n_valid}


def xmap(X, *, E, tau, Tp, knn, excl, backend, progress: Callable = iter) -> np.ndarray:
    """rho (N, N): full-library cross-map skill for every ordered pair.

    Pair (library i, target j) embeds i with the target's E[j] (as kEDM): per library series,
    the tables for every distinct E come from one pass over the distances (they accumulate
    across E), and all targets sharing an E are looked up together.  Tables are deep enough
    (k plus the most NaN targets any series has) that each target takes its first k entries
    with a finite target value.
    """
    N, T = X.shape
    E = np.asarray(E, np.int64)
    fin = np.isfinite(X)
    tgt_ok = _target_ok(fin, T, Tp)
    Yt = np.ascontiguousarray(X.T)
    E_set = np.unique(E)
    groups = [np.flatnonzero(E == e) for e in E_set]
    sweep = get_kernel("knn_sweep", backend)
    single = get_kernel("knn_single", backend)
    lookup = get_kernel("xmap_skill", backend)
    rho = np.full((N, N), np.nan)
    t = np.arange(T)
    in_data = (t + Tp >= 0) & (t + Tp < T)
    for i in progress(range(N)):
        Xpad = padded_series(X[i][None, None], int(E_set[-1]) * tau)
        pad = int(E_set[-1]) * tau
        lib_ok = np.stack([window_finite(fin[i][None], int(e), tau, False)[0] & in_data
                           for e in E_set])  # (nE, T), target-agnostic
        pred_t = np.flatnonzero(window_finite(fin[i][None], int(E_set[0]), tau, False)[0])
        pred_ok = np.stack([window_finite(fin[i][None], int(e), tau, False)[0][pred_t]
                            for e in E_set])
        # library points any target loses to a NaN target value: extra table depth
        lost = (lib_ok[:, None, :] & ~tgt_ok[None, :, :]).sum(axis=-1).max(axis=1)
        k_list = np.array([(int(e) + 1 if knn is None else int(knn)) for e in E_set]) + lost
        lo, hi = candidate_range(lib_ok[:, None, :])
        pred_t = pred_t.astype(np.int64)
        if len(E_set) == 1:
            idx, dist = single(Xpad, pad, lib_ok, pred_t, pred_ok, int(E_set[0]),
                               int(k_list[0]), tau, excl, lo, hi)
            idx, dist = idx[None], dist[None]
        else:
            idx, dist = sweep(Xpad, pad, lib_ok[:, None, :], pred_t, pred_ok[:, None, :],
                              E_set, k_list, tau, excl, lo, hi)
        for g, js in enumerate(groups):
            if len(js) == 0:
                continue
            k = int(E_set[g]) + 1 if knn is None else int(knn)
            ok = pred_ok[g]
            rho[i, js] = lookup(idx[g, 0], dist[g, 0], np.ascontiguousarray(Yt[:, js]), k, Tp,
                                pred_t, ok)
    return rho
