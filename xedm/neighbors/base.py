"""The one neighbour-search contract every kNN method implements.

``knn_tables(prep, k_list, excl, backend=..., method=...)`` returns ``idx``/``dist`` of shape
(nE, B, P, kmax): for every embedding dimension of ``prep``, every series and prediction
point, the k nearest library points (k = ``k_list[ie]``; entries past it are padding),
ordered by (distance, |t_pred - t_lib|, t_lib), with -1 / inf where fewer exist.  Distances
are Euclidean, square roots of the plain float64 sums of squared differences (lag by lag,
column by column within a lag), whatever found the neighbours.

Methods (one module each): ``exact`` (brute force, :mod:`.exact`), ``kdtree`` (scipy's cKDTree,
:mod:`.kdtree`), ``sorted1d`` (one-coordinate states by sorting, :mod:`.sorted1d`), the
approximate ``nndescent`` (:mod:`.nndescent`) and ``hnsw`` (:mod:`.hnsw`), and ``ivf`` (the
GPU method, :mod:`.ivf`: an inverted file on the device, ``backend="gpu"``).  ``auto``
(:mod:`.auto`) picks one by a written rule.
The exact methods give identical tables, order included; the approximate ones build an index
over each series' library points (so lib masks, segments and NaN are honoured by
construction), over-query by the points an exclusion can remove (self and the exclusion
radius), re-rank every candidate with its exact distance, and fall back to the exact kernel
for rows left short.  Their recall against exact brute force is measured on a sample of
prediction points and tuned (ef, n_neighbors) to the target ``recall``
(:class:`Search`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

import numpy as np

from ..kernels import get_kernel
from ..options import get_option

log = logging.getLogger("xedm")

#: every name ``neighbors=`` accepts
METHODS = ("auto", "exact", "kdtree", "sorted1d", "nndescent", "hnsw", "ivf")
EXACT_METHODS = ("exact", "kdtree", "sorted1d")
APPROXIMATE_METHODS = ("nndescent", "hnsw", "ivf")
DEFAULT_RECALL = 0.99


@dataclass
class Search:
    """A concrete neighbour method, its recall target, and what the search measured.

    ``knn_tables`` accepts one in place of a method name and fills in ``hits`` / ``total``
    (exact neighbours found / sought on the sampled prediction points of every index, pooled)
    and ``fallback`` (rows computed exactly because the index left them short).
    """

    method: str
    recall: float = DEFAULT_RECALL
    reason: str = ""
    hits: int = 0
    total: int = 0
    fallback: int = 0
    params: dict = field(default_factory=dict)
    used: set = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, hits: int = 0, total: int = 0, fallback: int = 0, **params) -> None:
        with self._lock:  # dask may run chunks in threads
            self.hits += int(hits)
            self.total += int(total)
            self.fallback += int(fallback)
            self.params.update(params)

    def __getstate__(self) -> dict:
        # shipped to Dask workers (dask.distributed pickles the tasks): a lock cannot travel,
        # and the worker's copy gets its own
        state = self.__dict__.copy()
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def used_name(self) -> str:
        """The method(s) that actually searched, e.g. "kdtree" ("auto" decides per series;
        several are joined by "+"); the requested method before any search ran."""
        return "+".join(sorted(self.used)) if self.used else self.method

    @property
    def measured_recall(self) -> float:
        """1.0 for exact methods; the sampled recall of an approximate one (NaN if none ran)."""
        if self.method in EXACT_METHODS or (self.used and self.used <= set(EXACT_METHODS)):
            return 1.0
        if self.total == 0:
            # every index was small enough to be searched exactly, or one-coordinate states
            # were sorted: nothing approximate ran
            return 1.0 if self.params.get("exact_only", True) else float("nan")
        return self.hits / self.total


def check_recall(recall) -> float:
    """``neighbors_recall``: a target recall in (0, 1]."""
    if isinstance(recall, bool) or not isinstance(recall, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"neighbors_recall must be a number in (0, 1] (the fraction of the exact "
            f"neighbours an approximate method must find), got {type(recall).__name__}"
        )
    r = float(recall)
    if not (0.0 < r <= 1.0):
        raise ValueError(
            f"neighbors_recall={recall!r} is invalid; give a target recall in (0, 1], "
            "e.g. 0.99 (1.0 asks for exact neighbours)"
        )
    return r


def check_method(neighbors) -> str:
    """The name given (or xedm's option), validated."""
    method = get_option("neighbors") if neighbors is None else neighbors
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(
            f"neighbors={method!r} is invalid; choose one of {', '.join(map(repr, METHODS))}"
        )
    return method


def resolve_method(neighbors: str | None = None, *, n_lib: int = 0, dim: int = 1, knn: int = 2,
                   n_pred: int | None = None, backend: str = "cpu", recall=None,
                   sweep: bool = False) -> Search:
    """A concrete :class:`Search` for ``neighbors`` (``"auto"``: the rule in :mod:`.auto`).

    ``n_lib`` library points (the series length), ``dim`` coordinates per state (E times
    the number of columns; the largest of a sweep), ``knn`` neighbours per query, ``n_pred``
    prediction points (default n_lib), ``backend`` where kernels run, ``recall`` the target
    recall (default 0.99), ``sweep`` several E at once (embed_dimension).
    """
    from . import auto

    method = check_method(neighbors)
    recall = check_recall(get_option("neighbors_recall") if recall is None else recall)
    n_pred = n_lib if n_pred is None else n_pred
    if method == "auto":
        method, reason = auto.choose(n_lib=n_lib, dim=dim, knn=knn, n_pred=n_pred,
                                     backend=backend, recall=recall, sweep=sweep)
        log.info("neighbors='auto' -> %r: %s", method, reason)
    else:
        reason = "requested"
    if method == "ivf":
        from .ivf import check_backend

        check_backend(backend)
    if method == "sorted1d" and dim != 1:
        raise ValueError(
            f"neighbors='sorted1d' searches one-coordinate states only (E=1 with one column, "
            f"or one embedded column); these states have {dim} coordinates: use "
            "neighbors='exact', 'kdtree' or 'auto'"
        )
    return Search(method, recall, reason)


def neighbor_attrs(search: Search, lazy: bool) -> dict:
    """``neighbors`` (the method(s) that searched) and ``neighbors_recall`` (measured against
    exact brute force; 1.0 for exact methods) for a result's attrs.  Dask-backed results are
    computed later: they record the method chosen before computing and, for an approximate or
    an "auto" method, NaN as the recall."""
    if lazy:
        return {"neighbors": search.method,
                "neighbors_recall": 1.0 if search.method in EXACT_METHODS else float("nan")}
    return {"neighbors": search.used_name, "neighbors_recall": float(search.measured_recall)}


def as_search(method) -> Search:
    return method if isinstance(method, Search) else Search(str(method))


def method_name(method) -> str:
    return as_search(method).method


def knn_tables(prep, k_list, excl: int, *, backend: str, method="exact"):
    """Neighbour tables for every E of ``prep`` (see module docstring).

    ``method``: a name from :data:`METHODS` other than "auto", or a :class:`Search` (which
    then records the measured recall).
    """
    search = as_search(method)
    name = search.method
    k_list = np.asarray(k_list, np.int64)
    if name == "auto":
        from .auto import tables

        return tables(prep, k_list, excl, backend=backend, search=search)
    if name in EXACT_METHODS:
        search.used.add(name)
    if name == "exact":
        from .exact import tables
    elif name == "kdtree":
        from .kdtree import tables
    elif name == "sorted1d":
        from .sorted1d import tables
    elif name == "nndescent":
        from .nndescent import tables
    elif name == "hnsw":
        from .hnsw import tables
    elif name == "ivf":
        from .ivf import tables
    else:
        raise ValueError(f"neighbors={name!r} is invalid; choose one of {METHODS}")
    return tables(prep, k_list, excl, backend=backend, search=search)


def exact_on_gpu(backend: str, method) -> bool:
    """True for exact neighbours on the GPU, which its exact kernel serves straight, tables
    kept on the device (recorded as the method used)."""
    if backend != "gpu" or method_name(method) != "exact":
        return False
    as_search(method).used.add("exact")
    return True


def native_tables(prep, k_list, excl: int, *, backend: str, method="exact"):
    """:func:`knn_tables`, except that exact neighbours on the GPU stay on the device (CuPy
    arrays straight from :func:`xedm.kernels.gpu_knn.knn_device`, which the GPU kernels take
    as they are): for callers that hand the tables to kernels of the same backend only."""
    if exact_on_gpu(backend, method):
        return get_kernel("knn_device", "gpu")(
            prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t, prep.pred_ok, prep.kernel_E,
            np.asarray(k_list, np.int64), prep.tau, excl, prep.q_lo, prep.q_hi)
    return knn_tables(prep, k_list, excl, backend=backend, method=method)


# ------------------------------------------------------------------ shared by index methods
def missing_extra(package: str, method: str) -> ImportError:
    return ImportError(
        f"neighbors={method!r} needs the optional package {package!r}: "
        'pip install "xedm[ann]"'
    )


def empty_tables(prep, k_list):
    nE, B, _ = prep.lib_ok.shape
    kmax = max(1, int(np.max(k_list)))
    P = len(prep.pred_t)
    return np.full((nE, B, P, kmax), -1, np.int64), np.full((nE, B, P, kmax), np.inf)


def states(prep, ie: int, b: int, times: np.ndarray, dtype=np.float64) -> np.ndarray:
    """(n, E*C) state vectors of series b at ``times`` for the ie-th E of ``prep``."""
    E = int(prep.kernel_E[ie])
    out = np.empty((len(times), E * prep.Xpad.shape[1]), dtype)
    get_kernel("gather_states", "cpu")(prep.Xpad, prep.pad, b, E, prep.tau,
                                       np.ascontiguousarray(times, np.int64), out)
    return out


def rerank(prep, ie: int, b: int, times, cand, excl: int, k: int):
    """Exact (idx, dist, count) rows from candidate time positions (``knn_rerank``)."""
    return get_kernel("knn_rerank", "cpu")(
        prep.Xpad, prep.pad, b, int(prep.kernel_E[ie]), prep.tau, prep.lib_ok[ie, b],
        np.ascontiguousarray(times, np.int64), np.ascontiguousarray(cand, np.int64), excl, k)


def exact_rows(prep, ie: int, b: int, rows: np.ndarray, k: int, excl: int,
               dense: bool = False):
    """Exact (idx, dist) (n, k) for the prediction rows ``rows`` of series b (brute force).
    ``dense``: most rows of the series (``knn_single``, whose diagonal recurrence then pays)."""
    rows = np.asarray(rows, np.int64)
    if len(rows) == 0:
        return np.empty((0, k), np.int64), np.empty((0, k))
    sl = slice(b, b + 1)
    if dense:
        mask = np.zeros((1, len(prep.pred_t)), bool)
        mask[0, rows] = prep.pred_ok[ie, b, rows]
        idx, dist = get_kernel("knn_single", "cpu")(
            prep.Xpad[sl], prep.pad, np.ascontiguousarray(prep.lib_ok[ie, sl]), prep.pred_t,
            mask, int(prep.kernel_E[ie]), k, prep.tau, excl, prep.q_lo[sl], prep.q_hi[sl])
        return idx[0, rows], dist[0, rows]
    idx, dist = get_kernel("knn_sweep", "cpu")(
        prep.Xpad[sl], prep.pad, np.ascontiguousarray(prep.lib_ok[ie : ie + 1, sl]),
        np.ascontiguousarray(prep.pred_t[rows]), np.ones((1, 1, len(rows)), bool),
        prep.kernel_E[ie : ie + 1], np.array([k], np.int64), prep.tau, excl,
        prep.q_lo[sl], prep.q_hi[sl])
    return idx[0, 0], dist[0, 0]


def available(lib_ok_b: np.ndarray, times: np.ndarray, excl: int) -> np.ndarray:
    """Library points each prediction point may use: all of them but those within ``excl``
    steps (itself included)."""
    cum = np.concatenate([[0], np.cumsum(lib_ok_b, dtype=np.int64)])
    T = len(lib_ok_b)
    lo = np.clip(times - excl, 0, T)
    hi = np.clip(times + excl + 1, 0, T)
    return cum[-1] - (cum[hi] - cum[lo])


def over_query(k: int, excl: int, n_lib: int) -> int:
    """Candidates to ask an index for: k plus every point an exclusion can remove."""
    return int(min(n_lib, k + 2 * excl + 1))


ROW_CHUNK = 1 << 16  # prediction rows per index query: bounds the candidate arrays' memory


def recall_of(idx: np.ndarray, ref: np.ndarray) -> tuple[int, int]:
    """(exact neighbours found, exact neighbours sought) of rows ``idx`` against ``ref``."""
    hits = 0
    total = 0
    for a, r in zip(idx, ref, strict=True):
        r = r[r >= 0]
        total += len(r)
        hits += len(np.intersect1d(a[a >= 0], r, assume_unique=True))
    return hits, total


def lower_bound(hits: int, total: int) -> float:
    """Wilson score lower bound (two standard errors) of the recall hits / total: a sample
    that clears the target by this bound keeps the whole table above it with high
    probability, and a small sample cannot clear a high target by luck."""
    if total == 0:
        return 1.0
    z2 = 4.0
    r = hits / total
    centre = r + z2 / (2 * total)
    spread = np.sqrt(z2 * (r * (1.0 - r) / total + z2 / (4.0 * total * total)))
    return float((centre - spread) / (1.0 + z2 / total))


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
            from .sorted1d import one_E

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


def series_table(table, Xpad, pad, valid, pred_t, E: int, tau: int, excl: int, depth: int,
                 backend: str, method="exact"):
    """One series' (P, depth) table for cross mapping (``ccm``): the ``sorted_table`` kernel
    ``table`` for "exact", else :func:`knn_tables` on the same point sets (``Xpad`` (C, pad+T),
    ``valid`` (T,) library points, every row of ``pred_t`` predicted)."""
    from ..core.embed import Prepared, candidate_range

    if method_name(method) == "exact":
        as_search(method).used.add("exact")
        return table(Xpad, pad, valid, pred_t, np.ones(len(pred_t), bool), E, tau, excl, depth)
    lib_ok = valid[None, None]
    lo, hi = candidate_range(lib_ok)
    prep = Prepared(Xpad[None], pad, lib_ok, pred_t, np.ones((1, 1, len(pred_t)), bool),
                    np.array([E], np.int64), lo, hi, tau, np.zeros(1, np.int64))
    idx, dist = knn_tables(prep, [depth], excl, backend=backend, method=method)
    return idx[0, 0], dist[0, 0]
