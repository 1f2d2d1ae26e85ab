"""Numba kernels for recurrence networks: the recurrence matrix minus its diagonal read as the
adjacency matrix of an undirected graph (pyunicorn's ``RecurrenceNetwork``).

Two kinds of kernel:

* **matrix-free** (:func:`neighbor_sums`: degrees, neighbours' degree sums): each row's
  distances are computed on the fly (the same float64 sums as the RQA kernels, so a pair
  is recurrent here exactly when it is in :func:`xedm.rqa`), O(N) memory, O(N^2) time;
* **on the adjacency lists** (:func:`adjacency`, :func:`triangles`, :func:`path_sums`): a
  CSR list of every link (int32 column indices, 4 bytes per recurrent pair), built
  matrix-free, then triangles per node and breadth-first searches from every node.

Arrays are those of :mod:`xedm.kernels.rqa.cpu`: ``X`` (rows, time) raw series, ``cvar``,
``coff``, ``cchan`` the embedding coordinates, ``ra, sa, n`` the matrix's row offset, time
offset and number of states, ``thr`` (nch,) the thresholds (squared for the Euclidean norm).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._numba import njit  # numba's, with xedm's kernel cache
from .cpu import _distances

_FLAGS = {"cache": True, "nogil": True, "boundscheck": False}
ROWS = 32  # rows per parallel block (one distance buffer each)


@njit(**_FLAGS)
def _linked(acc, thr, b):
    """Whether point b of the row in ``acc`` is recurrent in every channel."""
    for ch in range(acc.shape[0]):
        if not acc[ch, b] < thr[ch]:
            return False
    return True


@njit(parallel=True, **_FLAGS)
def neighbor_sums(X, ra, sa, n, cvar, coff, cchan, nch, thr, norm, weight, out):
    """out[i] = sum of weight[j] over the neighbours j != i of i (matrix-free): the degree
    with unit weights, the sum of the neighbours' degrees with weight = degree."""
    nblk = (n + ROWS - 1) // ROWS
    for blk in prange(nblk):
        acc = np.empty((nch, n))
        for i in range(blk * ROWS, min(n, (blk + 1) * ROWS)):
            _distances(X, ra, sa, i, X, ra, sa, 0, n, cvar, coff, cchan, norm, acc)
            s = 0
            for j in range(n):
                if j != i and _linked(acc, thr, j):
                    s += weight[j]
            out[i] = s


@njit(parallel=True, **_FLAGS)
def adjacency(X, ra, sa, n, cvar, coff, cchan, nch, thr, norm, indptr, indices):
    """Fill ``indices[indptr[i]:indptr[i+1]]`` with the neighbours of i, ascending
    (``indptr`` from the degrees)."""
    nblk = (n + ROWS - 1) // ROWS
    for blk in prange(nblk):
        acc = np.empty((nch, n))
        for i in range(blk * ROWS, min(n, (blk + 1) * ROWS)):
            _distances(X, ra, sa, i, X, ra, sa, 0, n, cvar, coff, cchan, norm, acc)
            p = indptr[i]
            for j in range(n):
                if j != i and _linked(acc, thr, j):
                    indices[p] = j
                    p += 1


@njit(parallel=True, **_FLAGS)
def triangles(indptr, indices, n, tri):
    """tri[i] = number of links between neighbours of i (triangles through i)."""
    nblk = (n + ROWS - 1) // ROWS
    for blk in prange(nblk):
        mark = np.zeros(n, np.uint8)
        for i in range(blk * ROWS, min(n, (blk + 1) * ROWS)):
            for q in range(indptr[i], indptr[i + 1]):
                mark[indices[q]] = 1
            t = 0
            for q in range(indptr[i], indptr[i + 1]):
                j = indices[q]
                for r in range(indptr[j], indptr[j + 1]):
                    t += mark[indices[r]]
            for q in range(indptr[i], indptr[i + 1]):
                mark[indices[q]] = 0
            tri[i] = t // 2  # each link (j, k) among the neighbours is seen from j and k


@njit(parallel=True, **_FLAGS)
def path_sums(indptr, indices, n, total, reached):
    """Breadth-first search from every node: total[i] = sum of the shortest path lengths
    from i to the nodes it reaches, reached[i] = how many it reaches (i itself not)."""
    nblk = (n + ROWS - 1) // ROWS
    for blk in prange(nblk):
        dist = np.full(n, -1, np.int32)
        queue = np.empty(n, np.int32)
        for s in range(blk * ROWS, min(n, (blk + 1) * ROWS)):
            dist[s] = 0
            queue[0] = s
            head, tail = 0, 1
            acc = 0
            while head < tail:
                u = queue[head]
                head += 1
                du = dist[u] + 1
                for q in range(indptr[u], indptr[u + 1]):
                    w = indices[q]
                    if dist[w] < 0:
                        dist[w] = du
                        acc += du
                        queue[tail] = w
                        tail += 1
            total[s] = acc
            reached[s] = tail - 1
            for q in range(tail):
                dist[queue[q]] = -1
