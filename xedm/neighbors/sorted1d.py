"""``neighbors="sorted1d"``: exact neighbours of one-coordinate states by sorting.

For E = 1 (and one embedded column) a state is one number, so the library values are sorted
once per series (O(L log L)) and each prediction point walks outwards from its place in the
sorted values to the nearer side until it has k neighbours (O(log L + k), plus the points an
exclusion skips).  Distances and the tie order are those of the brute-force kernels
(:func:`xedm.kernels.knn.cpu_ann.knn_sorted1d`), so the tables equal ``exact``'s bit for bit.
``auto`` always uses it for such states; the approximate methods use it for them too.
"""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel
from .contract import empty_tables


def one_E(prep, ie: int, k: int, excl: int):
    """(B, P, k) tables for the ie-th E of ``prep`` (its states must have one coordinate)."""
    if int(prep.kernel_E[ie]) * prep.Xpad.shape[1] != 1:
        raise ValueError(
            "neighbors='sorted1d' searches one-coordinate states only (E=1 with one column); "
            "use neighbors='exact', 'kdtree' or 'auto'"
        )
    return get_kernel("knn_sorted1d", "cpu")(
        prep.Xpad, prep.pad, np.ascontiguousarray(prep.lib_ok[ie]), prep.pred_t,
        np.ascontiguousarray(prep.pred_ok[ie]), int(k), int(excl))


def tables(prep, k_list, excl: int, *, backend: str, search=None):
    """(idx, dist) (nE, B, P, kmax) by sorting (see :mod:`xedm.neighbors.base`)."""
    idx, dist = empty_tables(prep, k_list)
    for ie in range(len(prep.kernel_E)):
        k = int(k_list[ie])
        idx[ie, :, :, :k], dist[ie, :, :, :k] = one_E(prep, ie, k, excl)
    return idx, dist
