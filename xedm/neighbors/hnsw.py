"""``neighbors="hnsw"``: approximate neighbours from a hierarchical navigable small-world graph
(Malkov & Yashunin 2018), via faiss-cpu's ``IndexHNSWFlat``.

Per (E, series) a graph is built over the library points' states (float32, M = :data:`M`
links per node, ``efConstruction`` = :data:`EF_CONSTRUCTION`) and searched for the k nearest
plus every point an exclusion can remove; candidates are re-ranked with exact float64
distances and the tie order, rows left short are searched by brute force
(:mod:`xedm.neighbors.index`).  The search breadth ``efSearch`` starts at
max(:data:`EF_START`, candidates) and doubles (up to :data:`EF_MAX`) until the recall on a
sample of prediction points, measured against brute force, reaches the target.

Why faiss: measured on this project's machine (Lorenz-63 x, E = 20, L = 2^20, 2 cores, M = 8),
hnswlib, faiss-cpu and usearch reach the same recall (>= 0.998 at ef = 32), and faiss built
the graph fastest (26.6 s against 28.2 s for usearch and 42.0 s for hnswlib) with queries as
fast; faiss is actively maintained and ships wheels for every platform (the GPU method
``ivf`` is xedm's own CuPy code, :mod:`.ivf`).  Needs ``pip install "xedm[ann]"``.
"""

from __future__ import annotations

import numpy as np

from .contract import as_search, missing_extra
from .index import index_tables

M = 8  # links per node: Lorenz-like attractors have low intrinsic dimension
EF_CONSTRUCTION = 64
EF_START = 32
EF_MAX = 1024


def _faiss():
    try:
        import faiss
    except ImportError:
        raise missing_extra("faiss-cpu", "hnsw") from None
    return faiss


class Index:
    dtype = np.float32

    def __init__(self, data: np.ndarray, kq_hint: int):
        faiss = _faiss()
        self.index = faiss.IndexHNSWFlat(data.shape[1], M)
        self.index.hnsw.efConstruction = EF_CONSTRUCTION
        self.index.add(np.ascontiguousarray(data, np.float32))
        self.ef = max(EF_START, int(kq_hint))

    def query(self, q: np.ndarray, kq: int) -> np.ndarray:
        self.index.hnsw.efSearch = max(self.ef, int(kq))
        _, labels = self.index.search(np.ascontiguousarray(q, np.float32), int(kq))
        return labels

    def harder(self) -> bool:
        if self.ef * 2 > EF_MAX:
            return False
        self.ef *= 2
        return True

    def params(self) -> dict:
        return {"M": M, "efConstruction": EF_CONSTRUCTION, "efSearch": self.ef}


def build(data: np.ndarray, k: int, search) -> Index:
    return Index(data, k)


def tables(prep, k_list, excl: int, *, backend: str, search=None):
    """(idx, dist) (nE, B, P, kmax) via faiss HNSW (see :mod:`xedm.neighbors.base`)."""
    _faiss()  # the missing-extra error before any work
    return index_tables(prep, k_list, excl, as_search("hnsw" if search is None else search),
                        build, "hnsw")
