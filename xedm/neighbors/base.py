"""The one neighbour-search contract every kNN method implements, and its dispatcher.

``knn_tables(prep, k_list, excl, backend=..., method=...)`` returns ``idx``/``dist`` of shape
(nE, B, P, kmax): for every embedding dimension of ``prep``, every series and prediction
point, the k nearest library points (k = ``k_list[ie]``; entries past it are padding),
ordered by (distance, |t_pred - t_lib|, t_lib), with -1 / inf where fewer exist.  Distances
are Euclidean, square roots of the plain float64 sums of squared differences (lag by lag,
column by column within a lag), whatever found the neighbours.

Methods (one module each, declared with their capabilities in :mod:`.registry`): ``exact``
(brute force, :mod:`.exact`), ``kdtree`` (scipy's cKDTree, :mod:`.kdtree`), ``sorted1d``
(one-coordinate states by sorting, :mod:`.sorted1d`), the approximate ``nndescent``
(:mod:`.nndescent`) and ``hnsw`` (:mod:`.hnsw`), and ``ivf`` (the GPU method, :mod:`.ivf`: an
inverted file on the device, ``backend="gpu"``).  ``auto`` (:mod:`.auto`) picks one by a
written rule.  The exact methods give identical tables, order included; the approximate ones
build an index over each series' library points (so lib masks, segments and NaN are honoured
by construction), over-query by the points an exclusion can remove (self and the exclusion
radius), re-rank every candidate with its exact distance, and fall back to the exact kernel
for rows left short (:mod:`.index`).  Their recall against exact brute force is measured on a
sample of prediction points and tuned (ef, n_neighbors) to the target ``recall``
(:class:`Search`).  What the methods share is in :mod:`.contract`; none of them imports this
module.
"""

from __future__ import annotations

import logging

import numpy as np

from ..kernels import get_kernel
from ..options import get_option
from .contract import (  # noqa: F401  (Search, DEFAULT_RECALL: this module's public names)
    DEFAULT_RECALL,
    Prepared,
    Search,
    as_search,
    candidate_range,
    method_name,
)
from .registry import EXACT_METHODS, METHODS, REGISTRY

log = logging.getLogger("xedm")


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
    recall (default 0.99), ``sweep`` several E at once (embed_dimension).  A method that
    cannot serve ``backend`` or ``dim`` (its :class:`~.registry.Method` capabilities) is a
    ValueError naming the alternatives.
    """
    method = check_method(neighbors)
    recall = check_recall(get_option("neighbors_recall") if recall is None else recall)
    n_pred = n_lib if n_pred is None else n_pred
    if method == "auto":
        method, reason = REGISTRY["auto"].load().choose(
            n_lib=n_lib, dim=dim, knn=knn, n_pred=n_pred, backend=backend, recall=recall,
            sweep=sweep)
        log.info("neighbors='auto' -> %r: %s", method, reason)
    else:
        reason = "requested"
    REGISTRY[method].check(backend, dim)
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


def knn_tables(prep, k_list, excl: int, *, backend: str, method="exact"):
    """Neighbour tables for every E of ``prep`` (see module docstring).

    ``method``: a name from :data:`METHODS` other than "auto", or a :class:`Search` (which
    then records the measured recall).
    """
    search = as_search(method)
    name = search.method
    k_list = np.asarray(k_list, np.int64)
    if name not in REGISTRY:
        raise ValueError(f"neighbors={name!r} is invalid; choose one of {METHODS}")
    if name in EXACT_METHODS:
        search.used.add(name)
    return REGISTRY[name].load().tables(prep, k_list, excl, backend=backend, search=search)


def exact_on_gpu(backend: str, method) -> bool:
    """True for exact neighbours on the GPU, which its exact kernel serves straight, tables
    kept on the device (recorded as the method used)."""
    if backend != "gpu" or method_name(method) != "exact":
        return False
    as_search(method).used.add("exact")
    return True


def native_tables(prep, k_list, excl: int, *, backend: str, method="exact",
                  int32: bool = False, key_order: bool = False):
    """:func:`knn_tables`, except that exact neighbours on the GPU stay on the device (CuPy
    arrays straight from :func:`xedm.kernels.knn.gpu.knn_device`, which the GPU kernels take
    as they are; indices int32 there with ``int32``): for callers that hand the tables to
    kernels of the same backend only.  ``key_order``: (idx, dist, rows), the tables' rows
    possibly in another order than the prediction rows' (``rows`` (B, P): see
    ``knn_device``; None: in their own order, always so off the GPU)."""
    if exact_on_gpu(backend, method):
        return get_kernel("knn_device", "gpu")(
            prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t, prep.pred_ok, prep.kernel_E,
            np.asarray(k_list, np.int64), prep.tau, excl, prep.q_lo, prep.q_hi, int32=int32,
            key_order=key_order)
    idx, dist = knn_tables(prep, k_list, excl, backend=backend, method=method)
    return (idx, dist, None) if key_order else (idx, dist)


def concat_rows(parts):
    """Tables of consecutive ranges of prediction rows, ``[(idx, dist), ...]`` from
    :func:`native_tables`, joined along the rows (on the device when they are there)."""
    dev = hasattr(parts[0][0], "__cuda_array_interface__")
    return get_kernel("concat_tables", "gpu" if dev else "cpu")(parts)


def series_table(table, Xpad, pad, valid, pred_t, E: int, tau: int, excl: int, depth: int,
                 backend: str, method="exact"):
    """One series' (P, depth) table for cross mapping (``ccm``): the ``sorted_table`` kernel
    ``table`` for "exact", else :func:`knn_tables` on the same point sets (``Xpad`` (C, pad+T),
    ``valid`` (T,) library points, every row of ``pred_t`` predicted)."""
    if method_name(method) == "exact":
        as_search(method).used.add("exact")
        return table(Xpad, pad, valid, pred_t, np.ones(len(pred_t), bool), E, tau, excl, depth)
    lib_ok = valid[None, None]
    lo, hi = candidate_range(lib_ok)
    prep = Prepared(Xpad[None], pad, lib_ok, pred_t, np.ones((1, 1, len(pred_t)), bool),
                    np.array([E], np.int64), lo, hi, tau, np.zeros(1, np.int64))
    idx, dist = knn_tables(prep, [depth], excl, backend=backend, method=method)
    return idx[0, 0], dist[0, 0]
