"""``neighbors="nndescent"``: approximate neighbours from pynndescent (NN-descent graphs).

Per (E, series) an NN-descent graph is built over the library points' states (float32) and
searched for the k nearest plus every point an exclusion can remove; candidates are re-ranked
with exact distances and the tie order (:mod:`xedm.neighbors.index`), rows left short are
searched by brute force.  The search effort is tuned to the target recall on a sample of
prediction points: the query's ``epsilon`` rises through :data:`EPSILONS`, then the graph is
rebuilt with twice the ``n_neighbors`` (up to :data:`MAX_NEIGHBORS`).
Needs ``pip install "xedm[ann]"``.
"""

from __future__ import annotations

import numpy as np

from .contract import as_search, missing_extra
from .index import index_tables

N_NEIGHBORS = 30  # pynndescent's default graph degree
MAX_NEIGHBORS = 120
EPSILONS = (0.1, 0.2, 0.35, 0.5)


def _pynndescent():
    try:
        import pynndescent
    except ImportError:
        raise missing_extra("pynndescent", "nndescent") from None
    return pynndescent


class Index:
    dtype = np.float32

    def __init__(self, data: np.ndarray, n_neighbors: int = N_NEIGHBORS):
        self.data = data
        self.step = 0
        self._build(n_neighbors)

    def _build(self, n_neighbors: int):
        pynndescent = _pynndescent()
        self.n_neighbors = int(min(n_neighbors, len(self.data) - 1))
        self.index = pynndescent.NNDescent(self.data, metric="euclidean",
                                           n_neighbors=max(self.n_neighbors, 2),
                                           random_state=0, low_memory=True)
        self.step = 0

    def query(self, q: np.ndarray, kq: int) -> np.ndarray:
        labels, _ = self.index.query(q, k=int(kq), epsilon=EPSILONS[self.step])
        return labels

    def harder(self) -> bool:
        if self.step + 1 < len(EPSILONS):
            self.step += 1
            return True
        if self.n_neighbors * 2 <= MAX_NEIGHBORS and self.n_neighbors < len(self.data) - 1:
            self._build(self.n_neighbors * 2)
            return True
        return False

    def params(self) -> dict:
        return {"n_neighbors": self.n_neighbors, "epsilon": EPSILONS[self.step]}


def build(data: np.ndarray, k: int, search) -> Index:
    return Index(data)


def tables(prep, k_list, excl: int, *, backend: str, search=None):
    """(idx, dist) (nE, B, P, kmax) via pynndescent (see :mod:`xedm.neighbors.base`)."""
    _pynndescent()  # the missing-extra error before any work
    return index_tables(prep, k_list, excl, as_search("nndescent" if search is None else search),
                        build, "nndescent")
