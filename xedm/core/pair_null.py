"""The surrogate null of chosen cross-map pairs: :func:`xedm.causal_network`'s significance
in a large network, where only each series' screened candidates (:mod:`xedm.core.screen`)
can become links.

The all-pairs map with surrogates looks up every target's n surrogates through every
library's table (N^2 n lookups per lag: at N = 1,000 about 15 times the plain map on a GPU);
here library i looks up only the surrogates of its own m candidates (N m n), through the
same tables (the library's E, as :func:`xedm.core.network.library_E_xmap`), so each pair's
null equals the all-pairs map's (the ``xmap_pair_skill`` kernels).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import get_kernel
from ..kernels.stats.null import null_rows
from . import ccm as _ccm
from .pairs import pool_pairs


def pair_null(X, S, E, pool, rho_obs, *, tau, Tp, knn, excl, backend, method="exact",
              at=None, table=False, progress: Callable = iter) -> dict:
    """The surrogate null of the pairs (library i, target j) with ``pool[i, j]`` at every
    horizon of ``Tp``, i embedded with its own E[i].

    ``X`` (N, T) finite series, ``S`` (N, n, T) the surrogates of each target, ``rho_obs``
    (N, N, nTp) the observed skills (the all-pairs map's, at the same Tp; (N, N) at the
    pairs' own horizons with ``at``).  Returns
    ``count_ge``, ``n_null`` (int64), ``z_mean``, ``z_sd`` (N, N, nTp) as
    :func:`xedm.core.ccm.xmap`'s (NaN, and 0 for the counts, outside the pool); with
    ``at`` (N, N) int, each pair's at its horizon ``Tp[at[i, j]]`` only, (N, N).  ``pool``
    may be a pair table (N, m) int instead of (N, N) bool.  With
    ``table=True``, ``rho_obs`` and ``at`` and the outputs are (N, m), aligned with the
    pair table of the pool (:func:`xedm.core.pairs.pool_pairs`): no (N, N) array."""
    X = np.asarray(X, np.float64)
    N, T = X.shape
    E = np.asarray(E, np.int64)
    pool = np.asarray(pool)
    Tps = np.atleast_1d(np.asarray(Tp, np.int64))
    n_sur = S.shape[1]
    # each library's candidates, padded with its first (the padding's results are dropped)
    pairs = pool_pairs(pool) if pool.dtype == bool else pool.astype(np.int64)
    m = pairs.shape[1]
    width = m if table else N
    shape = (N, width) if at is not None else (N, width, len(Tps))
    out = {"count_ge": np.zeros(shape, np.int64), "n_null": np.zeros(shape, np.int64),
           "z_mean": np.full(shape, np.nan), "z_sd": np.full(shape, np.nan)}
    if m == 0 or n_sur == 0:
        return out
    has = pairs >= 0
    cand = np.where(has, pairs, np.maximum(pairs[:, :1], 0))
    slot = np.broadcast_to(np.arange(m), (N, m))
    fin = np.ones((N, T), bool)
    t = np.arange(T)
    lib_mask = np.zeros(T, bool)
    for tp in Tps.tolist():
        lib_mask |= (t + tp >= 0) & (t + tp < T)
    tgt_sets = np.stack([_ccm._target_ok(fin[:1], T, int(tp))[0] for tp in Tps])
    tgt_sets = np.unique(tgt_sets, axis=0)
    # the surrogates of the targets in the pool only (a block of libraries needs few),
    # scaled by powers of 2, as xmap's columns (exact: the same rho); ``local`` maps a
    # target to its row
    used = np.unique(cand[has])
    local = np.zeros(N, np.int64)
    local[used] = np.arange(len(used))
    Sc = get_kernel("gather_scaled", "cpu")(np.asarray(S, np.float64), used)
    gpu = backend == "gpu"
    Sc = get_kernel("to_device", backend)(Sc)  # once: every batch gathers from it
    look = get_kernel("xmap_pair_skill", backend)
    depth = int(E.max()) + 1 if knn is None else int(knn)
    per_lib = T * (depth * 28 + 8 * m * n_sur * 2)
    budget = _ccm._gpu_batch_bytes() if gpu else _ccm.XMAP_TABLE_BYTES
    ii = np.arange(N)[:, None]
    for e in np.unique(E).tolist():
        libs = np.flatnonzero((E == e) & has.any(axis=1))  # libraries with candidates
        k = e + 1 if knn is None else int(knn)
        for sl in progress(_ccm._series_batches(len(libs), per_lib, budget)):
            lb = libs[sl]
            idx, dist, pred_t, pred_ok, _ = _ccm._cross_tables(
                X, fin, lb, [e], tau, lib_mask, knn, excl, tgt_sets, backend, method)
            cb0 = cand[lb]
            at0 = slot[lb] if table else cb0  # where each pair's values are
            for ti, tp in enumerate(Tps.tolist()):
                cb, cols_at, keep = cb0, at0, has[lb]
                if at is not None:  # only the pairs whose own horizon this is, packed
                    keep = keep & (at[lb[:, None], at0] == ti)
                    w = int(keep.sum(axis=1).max(initial=0))
                    if w == 0:
                        continue
                    order = np.argsort(~keep, axis=1, kind="stable")[:, :w]
                    keep = np.take_along_axis(keep, order, 1)
                    cb = np.take_along_axis(cb0, order, 1)
                    cb = np.where(keep, cb, cb[:, :1])  # padding: dropped below
                    cols_at = np.take_along_axis(at0, order, 1)
                elif not keep.any():
                    continue
                r = look(idx[0], dist[0], Sc, np.ascontiguousarray(local[cb]), k, int(tp),
                         pred_t, pred_ok[0])
                rows, cols = np.broadcast_to(ii[lb], cb.shape)[keep], cols_at[keep]
                obs = rho_obs[rows, cols] if at is not None else rho_obs[rows, cols, ti]
                null = r.reshape(cb.shape + (n_sur,))[keep]
                ge, nf, _, zm, zs = null_rows(obs, null, ())
                where = (rows, cols) if at is not None else (rows, cols, ti)
                for name, val in (("count_ge", ge), ("n_null", nf), ("z_mean", zm),
                                  ("z_sd", zs)):
                    out[name][where] = val
    return out
