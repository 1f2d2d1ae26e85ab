"""``neighbors="kdtree"``: exact neighbours from scipy's cKDTree, equal to ``exact`` bit for bit.

Per (E, series) a tree is built over the library points' states (so lib masks, segments and
NaN are honoured by construction) and asked for the k nearest plus every point an exclusion
can remove plus one.  Each candidate's distance is then summed exactly as the brute-force
kernels sum it and the rows are ordered by (distance, |dt|, t)
(:func:`xedm.kernels.knn.cpu_ann.knn_rerank`).  The tree's own distances are only trusted to
bound: a row is final when its last candidate lies beyond the k-th exact distance by more
than a relative 1e-9 (far above the rounding of either sum), so that every point the tree
did not return is farther than the k-th neighbour.  Rows that fail that test (exact ties at
the k-th distance, or too many excluded candidates) are searched by brute force.

Trees prune well when the states fill few dimensions (low E, or attractors of low
dimension embedded in many); :mod:`xedm.neighbors.auto` says when it is chosen.
"""

from __future__ import annotations

import numpy as np

from .contract import (
    ROW_CHUNK,
    available,
    empty_tables,
    exact_rows,
    over_query,
    rerank,
    states,
)

REL = 1e-9  # a kd distance this far above the k-th exact distance is certainly beyond it


def build(prep, ie: int, b: int, lib_pos: np.ndarray):
    from scipy.spatial import cKDTree

    # sliding-midpoint splits: several times faster to build than median splits, as fast
    # to search on this kind of data
    return cKDTree(states(prep, ie, b, lib_pos), balanced_tree=False)


def search_rows(prep, ie: int, b: int, rows: np.ndarray, lib_pos: np.ndarray, k: int,
                excl: int, tree=None):
    """Exact (idx, dist) (n, k) for prediction rows ``rows`` of series b; also returns how
    many rows went to brute force."""
    n_lib = len(lib_pos)
    tree = build(prep, ie, b, lib_pos) if tree is None else tree
    m = min(n_lib, over_query(k, excl, n_lib) + 1)
    times = prep.pred_t[rows]
    avail = available(prep.lib_ok[ie, b], times, excl)
    out_idx = np.empty((len(rows), k), np.int64)
    out_dist = np.empty((len(rows), k))
    bad = []
    for c0 in range(0, len(rows), ROW_CHUNK):
        part = slice(c0, c0 + ROW_CHUNK)
        kd, lab = tree.query(states(prep, ie, b, times[part]), k=np.arange(1, m + 1),
                             workers=-1)
        cand = np.where(lab < n_lib, lib_pos[np.minimum(lab, n_lib - 1)], -1)
        i, d, cnt = rerank(prep, ie, b, times[part], cand, excl, k)
        if m == n_lib:  # every library point was a candidate
            ok = np.ones(len(cnt), bool)
        else:
            ok = (cnt >= np.minimum(k, avail[part])) & (
                kd[:, -1] > d[:, k - 1] * (1.0 + REL) + 1e-300)
        out_idx[part], out_dist[part] = i, d
        bad.append(np.flatnonzero(~ok) + c0)
    bad = np.concatenate(bad) if bad else np.empty(0, np.int64)
    if len(bad):
        out_idx[bad], out_dist[bad] = exact_rows(prep, ie, b, rows[bad], k, excl)
    return out_idx, out_dist, len(bad)


def tables(prep, k_list, excl: int, *, backend: str, search=None):
    """(idx, dist) (nE, B, P, kmax) from cKDTree (see :mod:`xedm.neighbors.base`)."""
    idx, dist = empty_tables(prep, k_list)
    fallback = 0
    for ie in range(len(prep.kernel_E)):
        k = int(k_list[ie])
        for b in range(prep.Xpad.shape[0]):
            rows = np.flatnonzero(prep.pred_ok[ie, b])
            lib_pos = np.flatnonzero(prep.lib_ok[ie, b])
            if len(rows) == 0 or len(lib_pos) == 0:
                continue
            i, d, nb = search_rows(prep, ie, b, rows, lib_pos, k, excl)
            idx[ie, b, rows, :k], dist[ie, b, rows, :k] = i, d
            fallback += nb
    if search is not None:
        search.add(fallback=fallback)
    return idx, dist
