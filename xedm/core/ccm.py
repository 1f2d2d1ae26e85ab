"""Convergent cross mapping (sampled library sizes) and the all-pairs cross map (xmap).

Arrays: ``X`` (N, T), N series on a common time axis.  ``rho[i, j]`` is the skill of the
library series i's manifold at recovering target series j: high skill is evidence that
**j causes i** (CONVENTIONS.md).

Sampling (``ccm``): for each (library i, target j) the valid library points are the states of
i with a complete finite window whose target value j[t+Tp] is finite.  A fresh
``numpy.random.Generator(PCG64(seed))`` then draws, for each lib size L in the given order and
each sample, a subset of L of the n valid points by Floyd's algorithm on
``u = rng.random(m)`` with ``m = min(L, n - L)``: for i, j in enumerate(range(n - m, n)),
``c = floor(u[i] * (j + 1))`` is picked unless already picked, else j is; for L > n / 2 the m
picked points are the ones left out.  No draw is made for a size >= n (the full library is
used).  Pairs with the same valid set therefore share their library subsets.  Every valid
point is predicted (itself and its exclusion radius excluded).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import get_kernel
from ..neighbors.base import knn_tables
from .embed import (
    Prepared,
    candidate_range,
    observed_at,
    padded_series,
    window_finite,
    windows_finite,
)
from .simplex import finite_or_zero
from .skill import skill

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
    from ..kernels.cpu_ccm import floyd_members

    pos = np.flatnonzero(valid).astype(np.int64)
    n = len(pos)
    sizes = np.asarray(lib_sizes, np.int64)
    m = np.where(sizes < n, np.minimum(sizes, n - sizes), 0)
    rng = np.random.Generator(np.random.PCG64(seed))
    u = rng.random(int(m.sum()) * samples)  # the same stream as one rng.random(m) per draw
    return floyd_members(pos, len(valid), sizes, samples, u)


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
                # sizes >= nv give the full library in every sample: one row for all of them
                full = np.repeat(lib_sizes >= nv, samples)
                m = draw_members(valid, lib_sizes, samples, seed)
                first = np.flatnonzero(full)[:1]
                rows = np.concatenate([np.flatnonzero(~full), first])
                which = np.where(full, len(rows) - 1, np.cumsum(~full) - 1)
                drawn[key] = (np.ascontiguousarray(m[rows]), which)
            members, which = drawn[key]
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
            rho[i, js] = r[which].T.reshape(len(js), len(lib_sizes), samples)
    return {"rho": rho, "n_valid": n_valid}


KEEP_BYTES = 1 << 30  # xmap keeps every library's tables between passes up to this size


def _library_tables(X, fin, i, E_tab, tau, Tp, knn, excl, tgt_ok, self_ok, backend):
    """Neighbour tables of library series i for every E in ``E_tab`` from one pass.

    The tables cover the union of the library sets of every use (each target at Tp, and the
    series' own Tp = 1 forecast when ``self_ok`` is given) and are deep enough (k plus the most
    points any use loses) that each use takes its first k valid entries exactly.
    Returns idx, dist (nE, P, depth), pred_t (P,), pred_ok (nE, P), win (nE, T).
    """
    T = X.shape[1]
    t = np.arange(T)
    in_data = (t + Tp >= 0) & (t + Tp < T)
    win = windows_finite(fin[i][None], E_tab, tau)[:, 0]
    cross = win & in_data
    lib_ok = cross if self_ok is None else cross | (win & self_ok[i][None])
    lost = (lib_ok[:, None, :] & ~tgt_ok[None, :, :]).sum(axis=-1).max(axis=1)
    if self_ok is not None:
        lost = np.maximum(lost, (lib_ok & ~(win & self_ok[i][None])).sum(axis=-1))
    k_list = np.array([(int(e) + 1 if knn is None else int(knn)) for e in E_tab]) + lost
    pred_t = np.flatnonzero(win[0]).astype(np.int64)
    pred_ok = win[:, pred_t]
    pad = int(E_tab[-1]) * tau
    lo, hi = candidate_range(lib_ok[:, None, :])
    prep = Prepared(padded_series(X[i][None, None], pad), pad, lib_ok[:, None, :], pred_t,
                    pred_ok[:, None, :], np.asarray(E_tab, np.int64), lo, hi, tau)
    idx, dist = knn_tables(prep, k_list, excl, backend=backend, method="exact")
    return idx[:, 0], dist[:, 0], pred_t, pred_ok, win


def _best_E(x, idx, dist, pred_t, pred_ok, win, self_ok_i, E_tab, knn, backend) -> int:
    """Leave-one-out simplex (Tp = 1) skill of each E from the tables, all E at once; the
    best E (highest rho, ties to the smaller E)."""
    nE = len(E_tab)
    k_list = np.asarray(E_tab) + 1 if knn is None else np.full(nE, int(knn))
    ok = np.ascontiguousarray(win & self_ok_i[None])
    xs = np.ascontiguousarray(np.broadcast_to(finite_or_zero(x), (nE, len(x))))
    pred = get_kernel("simplex_predict", backend)(idx, dist, ok, xs, k_list, 1)
    pred = np.where(pred_ok, pred, np.nan)
    rho = skill(observed_at(x[None], pred_t + 1), pred)["rho"]
    rho = np.where(np.isfinite(rho), rho, -np.inf)
    return int(E_tab[int(np.argmax(rho))])


def xmap(X, *, E, tau, Tp, knn, excl, backend, progress: Callable = iter, E_max=None):
    """rho (N, N) and the E used per series: full-library cross-map skill of every pair.

    Pair (library i, target j) embeds i with the target's E[j] (as kEDM): per library series,
    the tables for every E come from one pass over the distances (they accumulate across E),
    and all targets sharing an E are looked up together.  With ``E=None`` each series' E is
    its best leave-one-out simplex E (Tp = 1) in 1..E_max, read from the same tables, which
    are kept for the cross-map pass when they fit in KEEP_BYTES (else recomputed for the
    chosen E only).
    """
    N, T = X.shape
    fin = np.isfinite(X)
    tgt_ok = _target_ok(fin, T, Tp)
    # the distinct target sets decide the table depth
    tgt_sets = np.stack(list({row.tobytes(): row for row in tgt_ok}.values()))
    Yt = np.ascontiguousarray(X.T)
    lookup = get_kernel("xmap_skill", backend)
    kept: dict[int, tuple] = {}
    if E is None:
        E_tab = np.arange(1, int(E_max) + 1)
        self_ok = _target_ok(fin, T, 1)
        kmax = int(E_tab[-1]) + 2 if knn is None else int(knn) + 1
        keep = N * len(E_tab) * T * kmax * 16 <= KEEP_BYTES
        E_used = np.zeros(N, np.int64)
        for i in progress(range(N)):
            tabs = _library_tables(X, fin, i, E_tab, tau, Tp, knn, excl, tgt_sets, self_ok,
                                   backend)
            E_used[i] = _best_E(X[i], *tabs, self_ok[i], E_tab, knn, backend)
            if keep:
                kept[i] = tabs
    else:
        E_used = np.asarray(E, np.int64)
    E_set = np.unique(E_used)
    groups = [np.flatnonzero(E_used == e) for e in E_set]
    rho = np.full((N, N), np.nan)
    for i in progress(range(N)):
        if i in kept:
            idx, dist, pred_t, pred_ok, _ = kept.pop(i)
            rows = E_set - 1
        else:
            idx, dist, pred_t, pred_ok, _ = _library_tables(X, fin, i, E_set, tau, Tp, knn,
                                                            excl, tgt_sets, None, backend)
            rows = np.arange(len(E_set))
        for g, js in zip(rows, groups, strict=True):
            k = int(E_used[js[0]]) + 1 if knn is None else int(knn)
            rho[i, js] = lookup(idx[g], dist[g], np.ascontiguousarray(Yt[:, js]), k, Tp,
                                pred_t, pred_ok[g])
    return rho, E_used
