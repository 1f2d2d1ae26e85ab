"""What every neighbour method shares, below the dispatcher and the methods.

The input of a search is a :class:`Prepared` point set (padded series, library and
prediction points per E; :func:`xedm.core.embed.prepare` builds it), the output a pair of
tables ``idx``/``dist`` (nE, B, P, kmax) (:mod:`xedm.neighbors.base` states the contract).
A :class:`Search` names the method and records what it measured.  The helpers below serve
the methods: exact rows from the brute-force kernels, state vectors, re-ranking of
candidates, the recall of a sample.  Nothing here imports a method module or the dispatcher.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from ..kernels import get_kernel
from .registry import EXACT_METHODS

DEFAULT_RECALL = 0.99


def candidate_range(lib_ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per series the hull [lo, hi) of positions that are library points for any E: (B,), (B,)."""
    any_ok = lib_ok.reshape(-1, lib_ok.shape[-2], lib_ok.shape[-1]).any(axis=0)
    B, T = any_ok.shape
    some = any_ok.any(axis=1)
    lo = np.where(some, np.argmax(any_ok, axis=1), 0).astype(np.int64)
    hi = np.where(some, T - np.argmax(any_ok[:, ::-1], axis=1), 0).astype(np.int64)
    return lo, hi


@dataclass
class Prepared:
    """Everything the kernels need for one (E list, tau, Tp) problem on a batch of series."""

    Xpad: np.ndarray  # (B, C, pad + T)
    pad: int
    lib_ok: np.ndarray  # (nE, B, T)
    pred_t: np.ndarray  # (P,)
    pred_ok: np.ndarray  # (nE, B, P)
    kernel_E: np.ndarray  # (nE,) lags the kernel uses (1 for embedded=True)
    q_lo: np.ndarray  # (B,)
    q_hi: np.ndarray  # (B,)
    tau: int
    xexp: np.ndarray  # (B,) Xpad holds series b times 2^-xexp[b] (padded_series)



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




def as_search(method) -> Search:
    return method if isinstance(method, Search) else Search(str(method))


def method_name(method) -> str:
    return as_search(method).method


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
