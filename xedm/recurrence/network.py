"""Recurrence networks on plain arrays: the recurrence matrix without its diagonal read as the
adjacency matrix of an undirected graph (Marwan et al. 2009; pyunicorn's ``RecurrenceNetwork``).

Measures and what each costs for ``N`` states and ``P`` recurrent pairs (``P ~ RR * N^2``):

=====================  ======================================  ==================
measure                how                                     memory
=====================  ======================================  ==================
degree, link_density   one matrix-free pass, O(N^2)            O(N)
assortativity          a second matrix-free pass, O(N^2)       O(N)
local / global         triangles over the adjacency lists,     4 P bytes
clustering,            O(sum of squared degrees)
transitivity
average_path_length    a breadth-first search from every       4 P bytes
                       node, O(N (N + P))
=====================  ======================================  ==================

Definitions (those of pyunicorn / igraph): ``k_i`` the degree; ``local_clustering_i`` =
links among the neighbours of ``i`` / (k_i (k_i - 1) / 2), 0 for ``k_i < 2``;
``global_clustering`` its mean over the nodes; ``transitivity`` = 3 x triangles / connected
triples = sum_i t_i / sum_i k_i (k_i - 1) / 2; ``average_path_length`` the mean shortest path
length over ordered pairs ``i != j`` joined by a path (NaN without any); ``assortativity``
Newman's degree correlation over the links (NaN without links or when every linked node has
the same degree); ``link_density`` = sum_i k_i / (N (N - 1)).
"""

from __future__ import annotations

import numpy as np

from ..memory import check_memory, check_work

NETWORK_MEASURES = ("degree", "local_clustering", "global_clustering", "transitivity",
                    "average_path_length", "assortativity", "link_density")
#: the measures that need the adjacency lists (4 bytes per recurrent pair)
NEED_LISTS = ("local_clustering", "global_clustering", "transitivity", "average_path_length")


def _args(prob, m):
    ra, sa, n = (int(v) for v in prob.matrices[m, :3])
    X = np.ascontiguousarray(prob.X, np.float64)
    return X, ra, sa, n


def _power_sum(k, p):
    """sum(k**p) exactly (Python integers where int64 could overflow)."""
    if k.size and float(k.max()) ** p * k.size < 2.0 ** 62:
        return int(np.sum(k ** p, dtype=np.int64))
    return sum(int(v) ** p for v in k.tolist())


def assortativity(k, s) -> float:
    """Newman's degree assortativity from degrees ``k`` and neighbour-degree sums ``s``
    (``s_i = sum of k_j over the neighbours j of i``): the formula of pyunicorn's
    ``Network.assortativity`` with the sums over links written as sums over nodes."""
    two_m = _power_sum(k, 1)
    if two_m == 0:
        return float("nan")
    m = two_m / 2
    ks = int(np.dot(k.astype(object), s.astype(object))) if k.size else 0
    num1 = ks / 2 / m  # sum over links of k_i k_j, each link once, over m
    num2 = (_power_sum(k, 2) / two_m) ** 2
    den1 = _power_sum(k, 3) / two_m
    with np.errstate(divide="ignore", invalid="ignore"):
        den = den1 - num2
        return float((num1 - num2) / den) if den != 0 else float("nan")


def network_measures(prob, m: int, thr, norm_code: int, which=NETWORK_MEASURES,
                     what: str = "recurrence_network") -> dict:
    """The measures ``which`` of matrix ``m`` of ``prob`` (a self
    :class:`~xedm.recurrence.recurrence.RecurrenceProblem`) at the kernel thresholds ``thr``
    (nch,) (see :func:`~xedm.recurrence.recurrence.thresholds`).

    Returns a dict: ``degree`` and ``local_clustering`` arrays (n,), the others floats.

    Examples
    --------
    >>> import numpy as np
    >>> from xedm.recurrence.recurrence import RecurrenceProblem, thresholds
    >>> prob = RecurrenceProblem.single(np.sin(np.arange(200) * 0.3), E=2)
    >>> out = network_measures(prob, 0, thresholds([0.3], "euclidean", 1, 1)[0, 0], 0)
    >>> out["degree"].shape, 0 < out["transitivity"] <= 1
    ((199,), True)
    """
    from ..kernels import get_kernel

    X, ra, sa, n = _args(prob, m)
    thr = np.ascontiguousarray(np.asarray(thr, np.float64).reshape(-1))
    geo = (prob.cvar, prob.coff, prob.cchan, prob.nch, thr, norm_code)
    deg = np.zeros(n, np.int64)
    get_kernel("rn_neighbor_sums", "cpu")(X, ra, sa, n, *geo, np.ones(n, np.int64), deg)
    out: dict = {}
    total_links = int(deg.sum())
    if "degree" in which:
        out["degree"] = deg
    if "link_density" in which:
        out["link_density"] = total_links / (n * (n - 1)) if n > 1 else float("nan")
    if "assortativity" in which:
        s = np.zeros(n, np.int64)
        get_kernel("rn_neighbor_sums", "cpu")(X, ra, sa, n, *geo, deg, s)
        out["assortativity"] = assortativity(deg, s)
    if not any(w in which for w in NEED_LISTS):
        return out
    fix = ("ask for the matrix-free measures only (measures=['degree', 'assortativity', "
           "'link_density']), a smaller eps / recurrence_rate, or a shorter series")
    check_memory(4.0 * total_links + 8.0 * (n + 1) + 16.0 * n * 4, f"{what} with "
                 f"{total_links} links among {n} states (its adjacency lists)", fix)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = np.empty(total_links, np.int32)
    get_kernel("rn_adjacency", "cpu")(X, ra, sa, n, *geo, indptr, indices)
    if any(w in which for w in ("local_clustering", "global_clustering", "transitivity")):
        tri = np.zeros(n, np.int64)
        get_kernel("rn_triangles", "cpu")(indptr, indices, n, tri)
        pairs = deg * (deg - 1) // 2
        with np.errstate(divide="ignore", invalid="ignore"):
            local = np.where(pairs > 0, tri / np.where(pairs > 0, pairs, 1), 0.0)
        if "local_clustering" in which:
            out["local_clustering"] = local
        if "global_clustering" in which:
            out["global_clustering"] = float(local.mean())
        if "transitivity" in which:
            den = int(pairs.sum())
            out["transitivity"] = int(tri.sum()) / den if den else float("nan")
    if "average_path_length" in which:
        check_work(float(n) * (n + total_links), f"{what}'s average_path_length on {n} "
                   f"states and {total_links} links", "leave 'average_path_length' out of "
                   "measures=, or use a smaller eps / recurrence_rate or a shorter series")
        total = np.zeros(n, np.int64)
        reached = np.zeros(n, np.int64)
        get_kernel("rn_path_sums", "cpu")(indptr, indices, n, total, reached)
        count = int(reached.sum())
        out["average_path_length"] = int(total.sum()) / count if count else float("nan")
    return out
