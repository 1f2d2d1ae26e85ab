"""The search every approximate index method shares (``nndescent``, ``hnsw``, ``ivf``).

Per (E, series) an index is built over the library points' states (so lib masks, segments
and NaN are honoured by construction) and asked for the k nearest plus every point an
exclusion can remove; candidates are re-ranked with their exact distances and the tie order,
and rows left short are searched by brute force.  The recall against exact brute force is
measured on a sample of prediction points and the index's effort raised until it clears the
target (:func:`approximate_rows`).  One-coordinate states are searched exactly by sorting
(:func:`xedm.neighbors.sorted1d.one_E`): no index beats it there.
"""

from __future__ import annotations

import logging

import numpy as np

from .contract import (
    ROW_CHUNK,
    Search,
    available,
    empty_tables,
    exact_rows,
    lower_bound,
    over_query,
    recall_of,
    rerank,
    states,
)
from .sorted1d import one_E

log = logging.getLogger("xedm")

SAMPLE_MIN = 100
SAMPLE_MAX = 1000
SAMPLE_WORK = 2e9  # (sample rows) x (library points) x (coordinates) spent on brute force


def approximate_rows(prep, ie: int, b: int, rows: np.ndarray, lib_pos: np.ndarray, k: int,
                     excl: int, search: Search, index) -> tuple[np.ndarray, np.ndarray]:
    """The search of one (E, series) with an approximate ``index`` (see module docstring).

    ``index.query(states, kq)`` returns (n, kq) positions into ``lib_pos`` (-1: none);
    ``index.harder()`` raises its search effort (False when it cannot), ``index.params()``
    describes it.  A sample of rows is searched by brute force first: the effort is raised
    until the index's recall on it clears ``search.recall`` (:func:`lower_bound`), else the
    whole (E, series) is searched exactly.  Sampled rows keep their exact neighbours.
    """
    times = prep.pred_t[rows]
    n_lib = len(lib_pos)
    D = int(prep.kernel_E[ie]) * prep.Xpad.shape[1]
    kq = over_query(k, excl, n_lib)
    n_s = int(np.clip(SAMPLE_WORK / max(n_lib * D, 1), SAMPLE_MIN, SAMPLE_MAX))
    rng = np.random.default_rng(0)
    pick = np.sort(rng.choice(len(rows), min(n_s, len(rows)), replace=False))
    ex_idx, ex_dist = exact_rows(prep, ie, b, rows[pick], k, excl)
    sample_states = states(prep, ie, b, times[pick], index.dtype)
    while True:
        cand = index.query(sample_states, kq)
        got, _, _ = rerank(prep, ie, b, times[pick], _positions(cand, lib_pos), excl, k)
        hits, total = recall_of(got, ex_idx)
        if lower_bound(hits, total) >= search.recall or not index.harder():
            break
    out_idx = np.full((len(rows), k), -1, np.int64)
    out_dist = np.full((len(rows), k), np.inf)
    out_idx[pick], out_dist[pick] = ex_idx, ex_dist
    if lower_bound(hits, total) < search.recall:
        log.warning("neighbors=%r: recall %.4f on %d sampled rows stays below the target %.3f "
                    "at the largest effort (%s); searching exactly", search.method,
                    hits / max(total, 1), len(pick), search.recall, index.params())
        rest = np.setdiff1d(np.arange(len(rows)), pick)
        out_idx[rest], out_dist[rest] = exact_rows(prep, ie, b, rows[rest], k, excl)
        search.add(hits=total, total=total, fallback=len(rest), exact_only=False)
        return out_idx, out_dist
    search.add(hits=hits, total=total, exact_only=False, **index.params())
    rest = np.setdiff1d(np.arange(len(rows)), pick)
    short_all = []
    avail = available(prep.lib_ok[ie, b], times, excl)
    for c0 in range(0, len(rest), ROW_CHUNK):
        part = rest[c0 : c0 + ROW_CHUNK]
        cand = index.query(states(prep, ie, b, times[part], index.dtype), kq)
        i, d, cnt = rerank(prep, ie, b, times[part], _positions(cand, lib_pos), excl, k)
        out_idx[part], out_dist[part] = i, d
        short_all.append(part[cnt < np.minimum(k, avail[part])])
    short = np.concatenate(short_all) if short_all else np.empty(0, np.int64)
    if len(short):
        out_idx[short], out_dist[short] = exact_rows(prep, ie, b, rows[short], k, excl)
        search.add(fallback=len(short))
    return out_idx, out_dist


def _positions(cand: np.ndarray, lib_pos: np.ndarray) -> np.ndarray:
    """Index labels (n, m) (negative or >= n_lib: none) as time positions (-1: none)."""
    cand = np.asarray(cand).astype(np.int64, copy=False)
    ok = (cand >= 0) & (cand < len(lib_pos))
    return np.where(ok, lib_pos[np.where(ok, cand, 0)], -1)


def series_problems(prep, k_list, excl: int, search: Search, idx, dist):
    """The (E, series) problems of an index method: yields ``(ie, k, b, rows, lib_pos)`` for
    each with prediction rows and library points.  One-coordinate states are filled into
    ``idx``/``dist`` exactly by sorting (:mod:`.sorted1d`) instead: no index beats it there."""
    C = prep.Xpad.shape[1]
    for ie, E in enumerate(prep.kernel_E.tolist()):
        k = int(k_list[ie])
        if E * C == 1:
            search.used.add("sorted1d")
            i, d = one_E(prep, ie, k, excl)
            idx[ie, :, :, :k], dist[ie, :, :, :k] = i, d
            continue
        for b in range(prep.Xpad.shape[0]):
            rows = np.flatnonzero(prep.pred_ok[ie, b])
            lib_pos = np.flatnonzero(prep.lib_ok[ie, b])
            if len(rows) and len(lib_pos):
                yield ie, k, b, rows, lib_pos


def index_tables(prep, k_list, excl: int, search: Search, build, name: str) -> tuple:
    """Tables from an approximate index per (E, series): ``build(data (n_lib, D), k, search)``
    returns the index (see :func:`approximate_rows`).  One-coordinate states are searched
    exactly by sorting (:mod:`.sorted1d`): no index beats it there."""
    idx, dist = empty_tables(prep, k_list)
    for ie, k, b, rows, lib_pos in series_problems(prep, k_list, excl, search, idx, dist):
        search.used.add(name)
        if over_query(k, excl, len(lib_pos)) >= len(lib_pos):
            # an index would return every library point: brute force is the same, faster
            i, d = exact_rows(prep, ie, b, rows, k, excl)
            idx[ie, b, rows, :k], dist[ie, b, rows, :k] = i, d
            continue
        index = build(states(prep, ie, b, lib_pos, np.float32), k, search)
        i, d = approximate_rows(prep, ie, b, rows, lib_pos, k, excl, search, index)
        idx[ie, b, rows, :k], dist[ie, b, rows, :k] = i, d
    return idx, dist
