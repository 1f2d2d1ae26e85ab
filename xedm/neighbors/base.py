"""The one neighbour-search contract every kNN method implements.

``knn_tables(prep, k_list, excl, backend=..., method=...)`` returns ``idx``/``dist`` of shape
(nE, B, P, kmax): for every embedding dimension of ``prep``, every series and prediction
point, the k nearest library points ordered by (distance, |t_pred - t_lib|, t_lib), with -1 /
inf where fewer exist.  Exact methods must agree exactly; approximate ones report recall.
"""

from __future__ import annotations

import logging

import numpy as np

from ..kernels import get_kernel
from ..options import get_option

log = logging.getLogger("xedm")

METHODS = ("exact", "kdtree", "nndescent", "hnsw")


def resolve_method(neighbors: str | None) -> str:
    """Rule for ``"auto"``: exact brute force (tiled, O(P*k) memory) is used for every size
    until the approximate methods land; the choice is recorded in the result's attrs."""
    method = get_option("neighbors") if neighbors is None else neighbors
    if method == "auto":
        method = "exact"
        log.debug("neighbors='auto' -> 'exact'")
    if method not in METHODS:
        raise ValueError(
            f"neighbors={method!r} is invalid; choose 'auto', 'exact', 'kdtree', 'nndescent' "
            "or 'hnsw'"
        )
    if method != "exact":
        raise ValueError(
            f"neighbors={method!r} is not available in this version of xedm; use neighbors='exact'"
        )
    return method


def knn_tables(prep, k_list, excl: int, *, backend: str, method: str):
    """Neighbour tables for every E of ``prep`` (see module docstring)."""
    if method != "exact":  # pragma: no cover - resolve_method guards this
        raise ValueError(method)
    if len(prep.kernel_E) == 1:
        idx, dist = get_kernel("knn_single", backend)(
            prep.Xpad, prep.pad, prep.lib_ok[0], prep.pred_t, prep.pred_ok[0],
            int(prep.kernel_E[0]), int(k_list[0]), prep.tau, excl, prep.q_lo, prep.q_hi,
        )
        return idx[None], dist[None]
    kernel = get_kernel("knn_sweep", backend)
    return kernel(
        prep.Xpad,
        prep.pad,
        prep.lib_ok,
        prep.pred_t,
        prep.pred_ok,
        prep.kernel_E,
        np.asarray(k_list, np.int64),
        prep.tau,
        excl,
        prep.q_lo,
        prep.q_hi,
    )
