"""``neighbors="exact"``: brute force, the reference every other method is measured against.

The numba kernels of :mod:`xedm.kernels.knn.cpu` (via the registry): distances summed straight
from the padded series and fused with top-k selection, O(P * k) memory; one pass serves every
E of a sweep (``knn_sweep``), a single E with consecutive prediction rows uses the diagonal
recurrence (``knn_single``).  Cost O(P * L * E) per series.
"""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel


def tables(prep, k_list, excl: int, *, backend: str, search=None):
    """(idx, dist) (nE, B, P, kmax) by brute force (see :mod:`xedm.neighbors.base`)."""
    if len(prep.kernel_E) == 1:
        idx, dist = get_kernel("knn_single", backend)(
            prep.Xpad, prep.pad, prep.lib_ok[0], prep.pred_t, prep.pred_ok[0],
            int(prep.kernel_E[0]), int(k_list[0]), prep.tau, excl, prep.q_lo, prep.q_hi,
        )
        return idx[None], dist[None]
    return get_kernel("knn_sweep", backend)(
        prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t, prep.pred_ok, prep.kernel_E,
        np.asarray(k_list, np.int64), prep.tau, excl, prep.q_lo, prep.q_hi,
    )
