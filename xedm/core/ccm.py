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

``sampling="pyedm"`` draws pyEDM 2.5.7's libraries instead: for each lib size, a fresh
``numpy.random.default_rng(seed)`` (every size and both directions of a pair restart from the
seed, as pyEDM's do) draws, per sample, ``rng.choice(n, size=min(L, n), replace=False)``
positions among the n valid points, in time order.  The same seed then gives pyEDM's
libraries, and the same rho per sample.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import get_kernel
from ..kernels.device import memory_info

# batch sizes and memory shares: the memory policy of xedm.memory
from ..memory import (
    SWEEP_BYTES,
    TABLE_BYTES,
    XMAP_KEEP_FRACTION,
    XMAP_TABLE_BYTES,
    xmap_gpu_table_bytes,
)
from ..neighbors.base import exact_on_gpu, native_tables, series_table
from ..stats.significance import nanmean
from .ccm_draws import SAMPLINGS, draw_members  # noqa: F401 (public here too)
from .embed import (
    Prepared,
    candidate_range,
    lag_step,
    observed_at,
    padded_series,
    take_times,
    window_finite,
    windows_finite,
)
from .resident import Resident
from .simplex import finite_or_zero, sweep_predict
from .skill import skill, unit_exponents

# Table depth = DEPTH_FACTOR * k * n_valid / smallest sampled size (+16): deep enough that a
# row almost never runs out of sampled members; rows that do fall back to a direct search.
DEPTH_FACTOR = 3


def _target_ok(fin: np.ndarray, T: int, Tp: int) -> np.ndarray:
    """(N, T): target value at t + Tp exists and is finite, per target series."""
    ok = np.zeros_like(fin)
    a, b = max(0, -Tp), min(T, T - Tp)  # t with t + Tp inside the data: slices, not a gather
    if a < b:
        ok[:, a:b] = fin[:, a + Tp:b + Tp]
    return ok


CCM_SUMS = 2**20  # (subsets x targets) per ccm_skill call: its per-thread sums stay small
XMAP_CPU_PAIRS = 5e8  # (point pairs x coordinates) of kNN per CPU core in one batch of xmap
CCM_SET_WORK = 2**28  # (libraries x prediction points x targets x table depth) per call


def ccm(
    X, *, E, tau, Tp, knn, excl, lib_sizes, samples, seed, backend, progress: Callable = iter,
    S=None, method="exact", sampling="xedm",
) -> dict[str, np.ndarray]:
    """rho (N, N, nTp, n_sizes, samples) for every ordered pair, horizon of ``Tp`` (an int or
    a sequence), library size and sample.

    With several Tp, a pair's valid library points are those valid at every Tp, so that one
    table and one set of sampled libraries serve every lag (the lags differ by the lag
    alone).  ``S`` (N, n, T): surrogates of each target series (with its NaN positions),
    cross-mapped with the same tables and libraries; the result then also holds
    ``rho_null`` (N, N, nTp, n_sizes, n): each surrogate's rho, mean over the samples.
    ``sampling``: "xedm" or "pyedm", how the libraries are drawn (module doc).
    """
    N, T = X.shape
    lib_sizes = np.asarray(lib_sizes, np.int64)
    Tps = np.atleast_1d(np.asarray(Tp, np.int64))
    nTp = len(Tps)
    n_sur = 0 if S is None else S.shape[1]
    fin = np.isfinite(X)
    tgt_ok = _target_ok(fin, T, int(Tps[0]))
    for tp in Tps[1:]:
        tgt_ok &= _target_ok(fin, T, int(tp))
    table = get_kernel("sorted_table", backend)
    skill = get_kernel("ccm_skill", backend)
    rho = np.full((N, N, nTp, len(lib_sizes), samples), np.nan)
    rho_null = np.full((N, N, nTp, len(lib_sizes), n_sur), np.nan) if n_sur else None
    n_valid = np.zeros((N, N), np.int64)
    drawn: dict[bytes, np.ndarray] = {}
    for i in progress(range(N)):
        Ei = int(E[i])
        k = Ei + 1 if knn is None else int(knn)
        tau_i = lag_step(Ei, tau)
        pad = Ei * tau_i
        Xpad = padded_series(X[i][None, None], pad)[0]
        win = window_finite(fin[i][None], Ei, tau_i, False)[0]
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
                m = draw_members(valid, lib_sizes, samples, seed, sampling)
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
            idx, dist = series_table(table, Xpad, pad, valid, pred_t, Ei, tau_i, excl, depth,
                                     backend, method)
            # the targets, then (target-major) their surrogates, in calls of bounded size
            Y = np.where(fin[js], X[js], 0.0)
            if n_sur:
                Sj = S[js].reshape(len(js) * n_sur, T)
                Y = np.concatenate([Y, np.where(np.isfinite(Sj), Sj, 0.0)])
            step = max(1, CCM_SUMS // len(members))
            # libraries per call: a call of about a second at most, so that Ctrl-C (held back
            # to the end of each kernel call) stops many samples promptly
            mstep = max(1, CCM_SET_WORK // max(len(pred_t) * step * depth, 1))
            for ti, tp in enumerate(Tps):
                obs_ok = take_times(_target_ok(fin[js], T, int(tp)), pred_t)
                if n_sur:
                    obs_ok = np.concatenate([obs_ok, np.repeat(obs_ok, n_sur, axis=0)])
                r = np.concatenate([np.concatenate([
                    skill(idx, dist, members[m:m + mstep], np.ascontiguousarray(Y[a:a + step]),
                          np.ascontiguousarray(obs_ok[a:a + step]), k, int(tp), Xpad, pad, Ei,
                          tau_i, excl, pred_t, complete)
                    for a in range(0, len(Y), step)], axis=1)
                    for m in range(0, len(members), mstep)])[which]  # (n_sets, rows of Y)
                rho[i, js, ti] = r[:, :len(js)].T.reshape(len(js), len(lib_sizes), samples)
                if n_sur:
                    rs = r[:, len(js):].reshape(len(lib_sizes), samples, len(js), n_sur)
                    rho_null[i, js, ti] = nanmean(rs, axis=1).transpose(1, 0, 2)
    out = {"rho": rho, "n_valid": n_valid}
    if n_sur:
        out["rho_null"] = rho_null
    return out


EXACT_LOST_SETS = 64  # up to this many distinct target NaN patterns, depth counted per E


def _gpu_batch_bytes() -> int:
    """A batch of xmap's tables on the GPU (:func:`xedm.memory.xmap_gpu_table_bytes` of the
    device's free memory now)."""
    info = memory_info()
    return xmap_gpu_table_bytes(info[0] if info else 0)


def _series_batches(N: int, bytes_per_series: int, budget: int | None = None) -> list[slice]:
    step = max(1, int((SWEEP_BYTES if budget is None else budget) // max(bytes_per_series, 1)))
    return [slice(s, min(N, s + step)) for s in range(0, N, step)]


def _point_sets(X, fin, sl, E_list, tau, lib_mask, pred_t=None) -> Prepared:
    """Kernel inputs for the series ``X[sl]`` at every E of ``E_list`` (ascending): library
    points are complete finite windows where ``lib_mask`` ((nb, T) or (T,)) holds; prediction
    rows are the union of the series' complete windows (or ``pred_t``, a superset)."""
    tau = lag_step(int(E_list[-1]), tau)
    win = windows_finite(fin[sl], E_list, tau)
    lib_ok = win & lib_mask
    if pred_t is None:
        pred_t = np.flatnonzero(win[0].any(axis=0)).astype(np.int64)
    pad = int(E_list[-1]) * tau
    lo, hi = candidate_range(lib_ok)
    xexp = unit_exponents(X[sl])
    return Prepared(padded_series(X[sl][:, None, :], pad, xexp), pad, lib_ok, pred_t,
                    take_times(win, pred_t), np.asarray(E_list, np.int64), lo,
                    hi, tau, xexp)


def _choice_inputs(X, fin, res, sl, E_tab, tau, self_ok, lib_mask=None, pred_t=None):
    """One batch ``sl`` of the GPU's choice of E: its point sets (library points where the
    choice's targets are, ``self_ok``, or ``lib_mask`` (T,) holds), the rows each series may
    predict from itself (``own``), the series and their observations at ``pred_t + 1``.
    ``res``: the NaN-free series on the device (:class:`Resident`), every series' masks then
    the first's."""
    if res is None:
        lib = self_ok[sl] if lib_mask is None else lib_mask[None] | self_ok[sl]
        prep = _point_sets(X, fin, sl, E_tab, tau, lib, pred_t)
        own, y = self_ok[sl], finite_or_zero(X[sl])
        obs = observed_at(X[sl], prep.pred_t + 1)
    else:
        lib = self_ok[0] if lib_mask is None else lib_mask | self_ok[0]
        prep = res.point_sets(sl, E_tab, tau, lib, pred_t)
        own = np.broadcast_to(self_ok[0], (prep.Xpad.shape[0], X.shape[1]))
        y, obs = res.series(sl), res.observed(sl, prep.pred_t + 1)
    return prep, own, y, obs


def choose_E(X, *, E_tab, tau, knn, excl, backend, progress: Callable = iter,
             res: Resident | None = None) -> np.ndarray:
    """Best leave-one-out simplex E (Tp = 1, highest rho, ties to the smaller E) per series.

    Every E of ``E_tab`` for a batch of series comes from one fused sweep
    (:func:`xedm.core.simplex.sweep_predict`: the distances accumulate across E and no
    neighbour table is stored); on the GPU from the kNN passes of :func:`_choose_E_kept`
    (one sorted pass per run of E, a key of more lags for the larger E: 4.7 s against 1.9 s
    for 20,000 series of 1,450 steps on an H100), its tables dropped.  ``res``: ``X`` already
    on the device (:class:`Resident`, NaN-free), as :func:`xmap` holds it.
    """
    N, T = X.shape
    E_tab = np.unique(np.asarray(E_tab, np.int64))  # ascending, as the sweep needs
    if backend != "gpu":
        res = None  # (the CPU's sweep indexes the masks by series)
    # with X on the device (NaN-free), one row of masks stands for every series'
    fin = np.isfinite(X) if res is None else np.ones((1, T), bool)
    self_ok = _target_ok(fin, T, 1)
    k_all = E_tab + 1 if knn is None else np.full(len(E_tab), int(knn), np.int64)
    rho = np.full((len(E_tab), N), np.nan)
    if backend == "gpu":  # the kNN passes of xmap's kept tables, the tables not kept
        choose = get_kernel("xmap_choose_tables", "gpu")
        per_series = len(E_tab) * T * int(k_all.max()) * 28
        # NaN-free: the series copied once, their point sets made on the device (at N =
        # 20,000, L = 1,450 on an H200, 2.6 s with the host's point sets, 1.3 s without)
        if res is None and fin.all():
            res = Resident(X, backend)
        on_device = []
        for sl in progress(_series_batches(N, per_series, _gpu_batch_bytes())):
            prep, own, y, obs = _choice_inputs(X, fin, res, sl, E_tab, tau, self_ok)
            if len(prep.pred_t):
                on_device.append((sl, choose(
                    prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t, prep.pred_ok, E_tab, k_all,
                    k_all, prep.tau, excl, prep.q_lo, prep.q_hi, own, y, obs,
                    tables=False)[0]))
        for sl, r in on_device:  # read back once every batch is queued
            rho[:, sl] = r.get()
        return _best_E(E_tab, rho)
    for sl in progress(_series_batches(N, len(E_tab) * T * 10)):
        prep = _point_sets(X, fin, sl, E_tab, tau, self_ok[sl])
        if len(prep.pred_t) == 0:  # every series of the batch all NaN: no E has a skill
            continue
        pred = sweep_predict(prep, k_all, excl, finite_or_zero(X[sl]), 1, backend)
        rho[:, sl] = skill(observed_at(X[sl], prep.pred_t + 1)[None], pred)["rho"]
    return _best_E(E_tab, rho)


def _best_E(E_tab, rho):
    """Per series (column of rho (nE, N)), the E of the highest finite rho, ties to the
    smaller E; the smallest E where no rho is finite."""
    return E_tab[np.argmax(np.where(np.isfinite(rho), rho, -np.inf), axis=0)]


def _lost(lib_ok, tgt_sets, T):
    """Per E, the most library points (of ``lib_ok`` (nE, B, T)) that a target set misses:
    how much deeper than k a table must be for every target to take k valid entries."""
    if len(tgt_sets) > EXACT_LOST_SETS:  # many distinct NaN patterns: a bound
        return np.full(lib_ok.shape[0], int((~tgt_sets).sum(axis=1).max()), np.int64)
    lost = np.zeros(lib_ok.shape[0], np.int64)
    for s in tgt_sets:  # the library points at the set's few missing positions, counted
        miss = np.flatnonzero(~s)
        if len(miss):
            lost = np.maximum(lost, lib_ok[..., miss].sum(axis=-1).max(axis=-1, initial=0))
    return lost


def _cross_tables(X, fin, libs, E_set, tau, lib_mask, knn, excl, tgt_sets, backend,
                  method="exact", res=None, key_order=False):
    """Neighbour tables of the library series ``libs`` for every E of ``E_set`` (one pass).

    Library points: complete finite window where ``lib_mask`` holds (t + Tp inside the data
    for some Tp in use); tables are deep
    enough (k plus the most points any target set loses) that each target takes its first k
    valid entries exactly.  Returns idx, dist (nE, nb, P, depth), pred_t (P,),
    pred_ok (nE, nb, P) and rows: None, or (nb, P) when the tables' rows come in another
    order (table row j of library b is prediction row rows[b, j]: with ``key_order``, the
    GPU's kNN kernel's order, in which its L2-tiled lookups run faster); on the GPU with
    exact neighbours idx/dist stay on the device.  ``res``: the series on the device when
    they are NaN-free (:class:`Resident`).
    """
    T = X.shape[1]
    prep = (_point_sets(X, fin, libs, E_set, tau, lib_mask) if res is None
            else res.point_sets(libs, E_set, tau, lib_mask))
    lost = _lost(prep.lib_ok, tgt_sets, T)
    k_list = np.array([(int(e) + 1 if knn is None else int(knn)) for e in E_set]) + lost
    # (the GPU's lookups take int32 indices)
    idx, dist, *rows = native_tables(prep, k_list, excl, backend=backend, method=method,
                                     int32=True, key_order=key_order)
    rows = rows[0] if rows else None
    return idx, dist, prep.pred_t, prep.pred_ok, rows


def _choose_E_kept(X, fin, E_tab, tau, knn, excl, lib_mask, tgt_sets, progress, reserve=0,
                   res=None):
    """The GPU's choice of E (as :func:`choose_E`) from neighbour tables that it keeps for
    the cross map, or None when they would take more than ``XMAP_KEEP_FRACTION`` of the
    device's free memory less ``reserve`` bytes (the targets' columns, held there too).

    One table per series and E serves both: its library is the cross map's (``lib_mask``)
    joined with the choice's (t + 1 inside the data, target finite), and it is deep enough
    for either to take its first k valid entries (k plus the most positions any target set,
    or the choice, misses).  Returns (E per series, {E: (idx, dist) (N, P, depth_E)} on the
    device, pred_t, pred_ok (nE, N, P)).
    """
    Kept = get_kernel("xmap_kept_tables", "gpu")  # the device's memory (CuPy)
    N, T = X.shape
    E_tab = np.unique(np.asarray(E_tab, np.int64))
    tau_k = lag_step(int(E_tab[-1]), tau)
    self_ok = _target_ok(fin, T, 1)
    pred_t = np.flatnonzero(windows_finite(fin, E_tab[:1], tau_k)[0].any(axis=0))
    k_all = E_tab + 1 if knn is None else np.full(len(E_tab), int(knn), np.int64)
    # how much deeper than k: the most library points a target set, or the choice, misses
    extra = max(int((~self_ok).sum(axis=1).max(initial=0)),
                int((~tgt_sets).sum(axis=1).max(initial=0)))
    if not fin.all():  # gaps: count exactly (the bound above counts a gap's every position)
        extra = np.zeros(len(E_tab), np.int64)
        for sl in _series_batches(N, len(E_tab) * T * 8):
            lib = (windows_finite(fin[sl], E_tab, tau_k)
                   & (lib_mask[None, None] | self_ok[None, sl]))
            b, t = np.nonzero(~self_ok[sl])  # the choice's missing targets: T - 1, gaps
            lost_self = np.array([np.bincount(b, lib[ie, b, t], len(lib[ie])).max(initial=0)
                                  for ie in range(len(E_tab))], np.int64)
            extra = np.maximum(extra, np.maximum(_lost(lib, tgt_sets, T), lost_self))
    depth = k_all + extra
    P = len(pred_t)
    free = Kept.free_bytes()
    if N * P * (12 * int(depth.sum()) + len(E_tab)) > XMAP_KEEP_FRACTION * (free - reserve):
        return None
    kept = Kept(E_tab, depth, N, P)  # rho per batch on the device: read back once, at the end
    choose = get_kernel("xmap_choose_tables", "gpu")
    per_series = len(E_tab) * P * int(depth.max()) * 28  # padded tables, partial lists
    for sl in progress(_series_batches(N, per_series, _gpu_batch_bytes())):
        prep, own, y, obs = _choice_inputs(X, fin, res, sl, E_tab, tau, self_ok, lib_mask,
                                           pred_t)
        r, tabs = choose(prep.Xpad, prep.pad, prep.lib_ok, pred_t, prep.pred_ok, E_tab, depth,
                         k_all, prep.tau, excl, prep.q_lo, prep.q_hi, own, y, obs)
        kept.put(sl, E_tab, tabs, prep.pred_ok, r)
    E_used = _best_E(E_tab, kept.rho())
    kept.keep(E_used)  # only the E in use stay
    pos = {int(e): i for i, e in enumerate(E_tab)}
    return E_used, kept.tables, pred_t, kept.pred_ok, pos


def _target_columns(Y, S, E_used, E_set, backend, res=None):
    """The targets of :func:`xmap` as the lookups' columns: (groups, starts, number of
    columns, col_group, Yt, order, obs_at).

    Grouped by E: per group its targets, then their surrogates' (target-major), each scaled
    by a power of 2 (exact: a product by 2^-e is rounded as ldexp is; no Pearson sum of
    xmap_skill can overflow or underflow, whatever the unit) on its way into one (columns,
    T) array (one pass over the surrogates).  The kernels take its transpose ``Yt`` (the CPU
    one copies each block of columns once anyway; the GPU twin holds it on the device).
    The outputs are filled in the columns' group order (slices, no fancy indexing: at N =
    10,000 a scatter of rho took longer than the GPU's lookups) and put back in the targets'
    order (``order``) once at the end; ``obs_at``: each group's first target in that order.
    ``res``: the targets (NaN-free, no surrogates) already on the device
    (:class:`Resident`), whose columns are made there.
    """
    M, T = Y.shape
    n_sur = 0 if S is None else S.shape[1]
    if n_sur:
        eS = unit_exponents(S.reshape(M * n_sur, T)).reshape(M, n_sur)
    groups = [np.flatnonzero(E_used == e) for e in E_set]
    starts = np.concatenate([[0], np.cumsum([len(js) * (1 + n_sur) for js in groups])])
    col_group = np.repeat(np.arange(len(groups)), np.diff(starts)).astype(np.int32)
    order = np.concatenate(groups)
    obs_at = np.concatenate([[0], np.cumsum([len(js) for js in groups])])
    if res is not None and not n_sur:
        return (groups, starts, int(starts[-1]), col_group, res.columns(groups, starts), order,
                obs_at)
    fac = np.ldexp(1.0, -unit_exponents(Y))
    cols = np.empty((int(starts[-1]), T))
    for g, js in enumerate(groups):
        c0 = int(starts[g])
        np.take(Y, js, axis=0, out=cols[c0:c0 + len(js)])
        cols[c0:c0 + len(js)] *= fac[js, None]
        if n_sur:
            Sg = S if len(js) == M else S[js]  # one E for all: no copy
            np.multiply(Sg.reshape(-1, T), np.ldexp(1.0, -eS[js]).reshape(-1, 1),
                        out=cols[c0 + len(js):int(starts[g + 1])])
    Yt = get_kernel("to_device", backend)(cols.T)
    return groups, starts, len(cols), col_group, Yt, order, obs_at


def xmap(X, *, E, tau, Tp, knn, excl, backend, progress: Callable = iter, E_max=None,
         S=None, quantiles=(), keep_null=False, method="exact", Y=None, cache=None):
    """rho (N, N, nTp) and the E used per series: full-library cross-map skill of every pair,
    at every horizon of ``Tp`` (an int or a sequence).

    Pair (library i, target j) embeds i with the target's E[j] (as kEDM).  With ``E=None``
    each series' E is its best leave-one-out simplex E (Tp = 1) in 1..E_max
    (:func:`choose_E`: one fused sweep, no tables).  Then, per batch of library series, the
    tables for every E in use come from one pass over the distances (they accumulate across
    E), and all targets are looked up together (``xmap_skill_groups``, each group of targets
    sharing an E through that E's tables), at every Tp: the tables hold the library points
    of every Tp and are deep enough that each Tp and target takes its first k valid
    entries, so each Tp gives what a table of its own would.  On the GPU with exact
    neighbours the tables stay on the device, and with ``E=None`` the choice of E keeps the
    tables it computed for the cross map when they fit in the device's memory
    (:func:`_choose_E_kept`: one kNN pass in all instead of two).

    ``S`` (N, n, T): surrogates of each target series, looked up with the same tables as the
    targets (the surrogates change only the targets).  The result then also holds
    ``count_ge`` / ``n_null`` (N, N, nTp): how many finite surrogate rho reach the observed
    one, and of how many; ``null_q`` (N, N, nTp, nq): the null's ``quantiles``; ``z_mean``
    / ``z_sd``: mean and sd of the null's Fisher z; with
    ``keep_null``, ``rho_null`` (N, N, nTp, n).

    ``Y`` (M, T): other target series (a block of the map: libraries ``X``, targets ``Y``,
    as :mod:`xedm.distributed` computes it); ``E`` is then the targets' (M,), and the
    results are (N, M, ...), equal to the matching block of the whole map.  ``Y`` may be a
    :class:`Resident` of NaN-free targets (made on ``backend``; no surrogates).  ``cache``: a
    dict in which the targets' columns (on the device with ``backend="gpu"``) are kept for
    the next call with the same ``Y`` and ``S`` objects, Tp, and partition of the targets
    by E (the same E for all, whatever its value, is one partition): a worker's blocks share
    their targets (:mod:`xedm.distributed`), and so do :func:`xedm.core.network.
    library_E_xmap`'s calls, one per library E.
    """
    N, T = X.shape
    Tps = np.atleast_1d(np.asarray(Tp, np.int64))
    nTp = len(Tps)
    Y_given = Y  # the caller's object: the cache's key
    fin_y = None  # the targets' finite values (made below)
    if Y is None:
        Y = X
    elif isinstance(Y, Resident):  # NaN-free targets already where the kernels run
        fin_y = np.ones((1, Y.shape[1]), bool)
        if S is not None:
            raise ValueError("xmap: resident targets Y take no surrogates")
        if (Y.xp is np) != (backend != "gpu"):
            raise ValueError(f"xmap: resident targets Y were made for another backend than "
                             f"{backend!r}: make them with Resident(Y, {backend!r})")
    else:
        Y = np.asarray(Y, np.float64)
    if Y_given is not None and (E is None or Y.shape[1] != T):
        raise ValueError("xmap with targets Y needs their E and their length T")
    # NaN-free series on the GPU: copied there once (their finiteness tested there: the
    # host's isfinite took 8 ms at N = 1,000, L = 10,000), their point sets and columns made
    # there; ``fin`` is then one row of masks for every series (only host paths index it
    # by series)
    res = Resident(X, backend) if exact_on_gpu(backend, method) else None
    if res is not None and not res.all_finite():
        res = None
    fin = np.isfinite(X) if res is None else np.ones((1, T), bool)
    if Y_given is None:
        fin_y = fin
    M = Y.shape[0]
    n_sur = 0 if S is None else S.shape[1]
    key = hit = None
    if cache is not None and E is not None and Y_given is not None:
        # the columns depend on the targets' partition by E, not on the E values (k comes
        # from E_set at the lookups): one entry serves every E of library_E_xmap's calls
        part = np.unique(np.asarray(E, np.int64), return_inverse=True)[1]
        key = (part.astype(np.int64).tobytes(), Tps.tobytes(), backend)
        hit = cache.get("targets")
        if hit is not None and (hit[0] is not Y_given or hit[1] is not S or hit[2] != key):
            hit = None
            cache.clear()  # the other targets' columns freed before these are made
    if hit is not None:
        tgt_sets, lib_mask = hit[3]
    else:
        if fin_y is None:
            fin_y = np.isfinite(Y)
        # NaN-free: every target's sets are the first's (no pass over N rows of T)
        src = fin_y[:1] if len(fin_y) and fin_y.all() else fin_y
        tgt_ok = np.concatenate([_target_ok(src, T, int(tp)) for tp in Tps])
        # the distinct target sets (every Tp) decide the table depth
        tgt_sets = np.stack(list({row.tobytes(): row for row in tgt_ok}.values()))
        t = np.arange(T)
        lib_mask = np.zeros(T, bool)
        for tp in Tps:
            lib_mask |= (t + tp >= 0) & (t + tp < T)
    # the targets' columns made where the kernels run (a block's targets Y: 0.4 s of the
    # host's per worker at N = 20,000, L = 1,450)
    res_y = res if Y_given is None else Y if isinstance(Y, Resident) else (
        Resident(Y, backend) if hit is None and exact_on_gpu(backend, method) and not n_sur
        and fin_y.all() else None)
    lookup = get_kernel("xmap_skill_groups", backend)
    lookup_all = get_kernel("xmap_skill_groups_device", backend)
    summary = get_kernel("xmap_null_summary", backend)
    kept = None
    if E is None:
        E_tab = np.arange(1, int(E_max) + 1)
        if exact_on_gpu(backend, method):
            kept = _choose_E_kept(X, fin, E_tab, tau, knn, excl, lib_mask, tgt_sets, progress,
                                  reserve=8 * T * M * (1 + n_sur), res=res)
        if kept is None:
            E_used = choose_E(X, E_tab=E_tab, tau=tau, knn=knn, excl=excl, backend=backend,
                              progress=progress, res=res)
        else:
            E_used = kept[0]
    else:
        E_used = np.asarray(E, np.int64)
    E_set = np.unique(E_used)
    k_set = [int(e) + 1 if knn is None else int(knn) for e in E_set]
    if hit is not None:
        groups, starts, cols_n, col_group, Yt, order, obs_at = hit[4]
    else:
        groups, starts, cols_n, col_group, Yt, order, obs_at = _target_columns(
            Y, S, E_used, E_set, backend, res_y)
        del res_y
        if key is not None:
            cache["targets"] = (Y_given, S, key, (tgt_sets, lib_mask),
                                (groups, starts, cols_n, col_group, Yt, order, obs_at))
    # every entry is written below (each batch of libraries, group of targets and Tp)
    out = {"rho": np.empty((N, M, nTp))}
    if n_sur:
        out["count_ge"] = np.empty((N, M, nTp), np.int64)
        out["n_null"] = np.empty((N, M, nTp), np.int64)
        out["null_q"] = np.empty((N, M, nTp, len(quantiles)))
        out["z_mean"] = np.empty((N, M, nTp))
        out["z_sd"] = np.empty((N, M, nTp))
        if keep_null:
            out["rho_null"] = np.empty((N, M, nTp, n_sur))
    # the targets' order from the columns' (None: the same); without surrogates and with
    # one Tp the lookups write straight into rho, their columns put in the targets' order
    # on the way (on the GPU before the copy to the host): no copy of an (N, N) map here
    inverse = None
    if not np.array_equal(order, np.arange(M)):
        inverse = np.empty(M, np.int64)
        inverse[order] = np.arange(M)
    direct = n_sur == 0 and nTp == 1
    gpu = backend == "gpu"
    if kept is not None:
        _, tabs, pred_t, pred_ok, pos = kept
        per_lib = T * sum(k_set) * 12 + 16 * cols_n  # the lookups' row entries, rho
        batches = _series_batches(N, per_lib, _gpu_batch_bytes())
    else:
        depth = int(E_set[-1]) + 1 if knn is None else int(knn)
        depth += int((~tgt_sets).sum(axis=1).max())
        # (on the GPU also each library's rows' times and flags when in key order)
        per_lib = len(E_set) * T * depth * (28 if gpu else 16) + (9 + len(E_set)) * T * gpu
        budget = _gpu_batch_bytes() if gpu else XMAP_TABLE_BYTES
        if not gpu:  # and about a second of kNN per batch, so that Ctrl-C stops it promptly
            from ..memory import cpu_cores

            pairs = float(T) * T * int(E_set[-1])
            budget = min(budget, int(per_lib * max(1.0, XMAP_CPU_PAIRS * cpu_cores() / pairs)))
        batches = _series_batches(N, per_lib, budget)
    key_order = kept is None and get_kernel("xmap_key_order", backend)(T, k_set)
    for libs in progress(batches):
        rows = {}  # the tables' rows in their own order
        if kept is not None:
            tables = [(tabs[int(e)][0][libs], tabs[int(e)][1][libs]) for e in E_set]
            oks = [pred_ok[pos[int(e)], libs] for e in E_set]
        else:
            idx, dist, pred_t, pred_ok_b, order_b = _cross_tables(
                X, fin, libs, E_set, tau, lib_mask, knn, excl, tgt_sets, backend, method, res,
                key_order)
            tables = [(idx[g], dist[g]) for g in range(len(E_set))]
            oks = [pred_ok_b[g] for g in range(len(E_set))]
            if order_b is not None:
                rows = {"rows": order_b}
        for ti, tp in enumerate(Tps):
            if direct:
                lookup(tables, Yt, col_group, k_set, int(tp), pred_t, oks,
                       out=out["rho"][libs, :, 0], order=inverse, **rows)
                continue
            # the lookups stay where they ran (on the GPU: the device) and are summarised
            # there; only (libraries of the batch, targets of the group) arrays come back
            r_all = lookup_all(tables, Yt, col_group, k_set, int(tp), pred_t, oks, **rows)
            for g, js in enumerate(groups):
                at = (libs, slice(int(obs_at[g]), int(obs_at[g + 1])), ti)
                summ = summary(r_all, int(starts[g]), len(js), n_sur, quantiles, keep_null)
                for name, val in summ.items():
                    out[name][at] = val
            del r_all
    if inverse is not None and not direct:
        for name in list(out):
            out[name] = np.take(out[name], inverse, axis=1)
    out["E"] = E_used
    return out
