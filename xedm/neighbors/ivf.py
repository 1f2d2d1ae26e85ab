"""``neighbors="ivf"``: the GPU method (inverted-file search over a coarse quantiser).

It needs the GPU EDM backend (``backend="gpu"``), which this version of xedm does not have
yet: asking for it raises a ValueError that says so.  ``auto`` never picks it until then.
"""

from __future__ import annotations


def unavailable(backend: str | None = None):
    raise ValueError(
        "neighbors='ivf' is the GPU neighbour method: it needs backend='gpu' for simplex, "
        "S-map and cross mapping, which is not available in this version of xedm; use "
        "neighbors='hnsw' (approximate, CPU), 'kdtree' or 'exact', or 'auto'"
    )


def tables(prep, k_list, excl: int, *, backend: str, search=None):
    unavailable(backend)
