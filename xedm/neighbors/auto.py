"""``neighbors="auto"``: the written rule that picks a neighbour method.

The rule (measured on this project's 2-core machine, ``benchmarks/ann.py``; docs/neighbors.md
has the table):

1. States with one coordinate (E = 1 on one column, or one embedded column): ``sorted1d``,
   exact by sorting, O(L log L + L k); nothing else comes close.
2. Small problems, ``n_pred * n_lib * dim <= EXACT_WORK`` or ``n_lib < INDEX_MIN_LIB``:
   ``exact`` brute force (an index costs more to build than the search it saves).
3. Otherwise, per series and E, a kd-tree is built (cheap: O(L log L)) and *probed*: a random
   sample of :data:`PROBE_ROWS` prediction points is searched with it (their rows are kept;
   the kd-tree is exact) and its time, scaled to every prediction point, is its predicted
   cost.  It is compared with the predicted cost of brute force (``EXACT_PAIR_S`` seconds per
   (prediction, library) pair) and, when approximate neighbours are allowed (target recall
   ``neighbors_recall`` < 1) and faiss (or else pynndescent) is installed, of HNSW (or
   NN-descent): ``HNSW_BUILD_S`` per library point and ``HNSW_QUERY_S`` per prediction point,
   per 20 coordinates.  The cheapest wins; exact methods win ties within
   :data:`EXACT_PREFERENCE` (exactness is worth a little time).

Trees prune well when the states fill few dimensions, as the attractors of low-dimensional
dynamics do even when embedded with E = 20 (Lorenz-63 at L = 2^20: 20 s for the kd-tree
against 36 s for HNSW); on noisy or high-dimensional data they degrade towards brute force,
which the probe sees.  The GPU method ``ivf`` is not available yet, so ``backend="gpu"`` does
not change the rule.  The choice and the figures behind it are logged (logger ``"xedm"``,
level INFO) and the method used is recorded in the result's ``attrs["neighbors"]``.
"""

from __future__ import annotations

import importlib.util
import logging
import time

import numpy as np

log = logging.getLogger("xedm")

EXACT_WORK = 2.0**29  # prediction x library points x coordinates: brute force below it
INDEX_MIN_LIB = 4096  # library points: brute force below it
PROBE_ROWS = 2048
PROBE_MIN_ROWS = 256  # fewer prediction points: brute force
# brute force, seconds per (prediction, library) pair, dim >= 3 (2 cores): 4.0e-10 measured at
# L = 2^18 and 2^20, more per pair on shorter series (5.4e-10 at 2^16, 7.1e-10 at 2^14), hence
# the factor (2^18 / L)^0.2 below 2^18
EXACT_PAIR_S = 4.0e-10
EXACT_PAIR_DIM_S = 4.0e-11  # ... per pair and coordinate when the diagonal recurrence is off
HNSW_BUILD_S = 40e-6  # faiss HNSW (M = 8, efConstruction = 64), seconds per point at dim 20
HNSW_QUERY_S = 15e-6  # ... per query at efSearch 32 (re-ranking and the recall sample included)
NNDESCENT_FACTOR = 3.0  # NN-descent against HNSW, same recall (measured at L = 2^16)
EXACT_PREFERENCE = 1.25


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def approximate_method(recall: float) -> str | None:
    """The approximate method auto may use: hnsw (faiss), else nndescent, else none."""
    if recall >= 1.0:
        return None
    if installed("faiss"):
        return "hnsw"
    if installed("pynndescent"):
        return "nndescent"
    return None


def choose(*, n_lib: int, dim: int, knn: int, n_pred: int, backend: str, recall: float,
           sweep: bool = False) -> tuple[str, str]:
    """(method, reason) from the sizes alone: "sorted1d", "exact", or "auto" (decided per
    series by the probe in :func:`tables`)."""
    if dim == 1:
        return "sorted1d", "one-coordinate states: exact by sorting, O(L log L + L k)"
    work = float(n_pred) * float(n_lib) * float(dim)
    if n_lib < INDEX_MIN_LIB or work <= EXACT_WORK:
        return "exact", (f"{n_pred} x {n_lib} x {dim} = {work:.3g} <= {EXACT_WORK:.3g} "
                         f"(or < {INDEX_MIN_LIB} library points): brute force")
    approx = approximate_method(recall)
    return "auto", (f"{work:.3g} > {EXACT_WORK:.3g}: kd-tree probed per series against exact "
                    f"and {approx or 'no approximate method'} (recall target {recall})")


def predicted_costs(n_lib: int, n_rows: int, dim: int, dense: bool, approx: str | None):
    """Seconds predicted for brute force and for the approximate method (None: not allowed)."""
    per_pair = EXACT_PAIR_S if dense and dim >= 3 else EXACT_PAIR_DIM_S * dim
    per_pair *= max(1.0, (2.0**18 / max(n_lib, 1)) ** 0.2)
    exact = per_pair * float(n_lib) * float(n_rows)
    if approx is None:
        return exact, None
    scale = max(dim, 4) / 20.0
    hnsw = scale * (HNSW_BUILD_S * n_lib + HNSW_QUERY_S * n_rows)
    return exact, hnsw * (NNDESCENT_FACTOR if approx == "nndescent" else 1.0)


def tables(prep, k_list, excl: int, *, backend: str, search):
    """Tables under rule 3: per (E, series) the probe decides (see module docstring)."""
    from . import kdtree
    from .base import empty_tables, exact_rows, index_tables, over_query

    idx, dist = empty_tables(prep, k_list)
    C = prep.Xpad.shape[1]
    approx = approximate_method(search.recall)
    rng = np.random.default_rng(0)
    for ie, E in enumerate(prep.kernel_E.tolist()):
        k = int(k_list[ie])
        dim = E * C
        for b in range(prep.Xpad.shape[0]):
            rows = np.flatnonzero(prep.pred_ok[ie, b])
            lib_pos = np.flatnonzero(prep.lib_ok[ie, b])
            if len(rows) == 0 or len(lib_pos) == 0:
                continue
            if dim == 1:
                choice = "sorted1d"
            elif (len(lib_pos) < INDEX_MIN_LIB or len(rows) < PROBE_MIN_ROWS
                  or over_query(k, excl, len(lib_pos)) >= len(lib_pos)):
                choice = "exact"  # few library points or few queries: brute force is cheap
            else:
                t0 = time.perf_counter()
                tree = kdtree.build(prep, ie, b, lib_pos)
                build_s = time.perf_counter() - t0
                pick = rng.choice(len(rows), min(PROBE_ROWS, len(rows)), replace=False)
                # three batches: the first loads the kernels (numba's cache) and is not timed;
                # the time per row is the slope between the other two, so fixed costs per call
                # (thread start-up, launches) are not multiplied by the number of rows
                cuts = [0, len(pick) // 16, len(pick) // 4, len(pick)]
                times, nb = [], 0
                for a, z in zip(cuts[:-1], cuts[1:], strict=True):
                    part = np.sort(pick[a:z])
                    t1 = time.perf_counter()
                    i, d, f = kdtree.search_rows(prep, ie, b, rows[part], lib_pos, k, excl, tree)
                    times.append(time.perf_counter() - t1)
                    idx[ie, b, rows[part], :k], dist[ie, b, rows[part], :k] = i, d
                    nb += f
                n2, n3 = cuts[2] - cuts[1], cuts[3] - cuts[2]
                per_row = max((times[2] - times[1]) / max(n3 - n2, 1), times[2] / max(n3, 1) / 4)
                kd_cost = build_s + times[2] + per_row * len(rows)
                span = prep.pred_t[rows[-1]] - prep.pred_t[rows[0]] + 1
                ex_cost, ap_cost = predicted_costs(len(lib_pos), len(rows), dim,
                                                   span <= 1.25 * len(rows), approx)
                best_exact = min(kd_cost, ex_cost)
                choice = "kdtree" if kd_cost <= ex_cost else "exact"
                if ap_cost is not None and ap_cost * EXACT_PREFERENCE < best_exact:
                    choice = approx
                log.info("neighbors='auto' (E=%d, series %d, %d library points, %d queries): "
                         "kd-tree probe predicts %.3g s, brute force %.3g s, %s %s -> %r",
                         E, b, len(lib_pos), len(rows), kd_cost, ex_cost, approx or "-",
                         "-" if ap_cost is None else f"{ap_cost:.3g} s", choice)
                if choice == "kdtree":
                    rest = np.setdiff1d(np.arange(len(rows)), pick)
                    i, d, nb2 = kdtree.search_rows(prep, ie, b, rows[rest], lib_pos, k, excl,
                                                   tree)
                    idx[ie, b, rows[rest], :k], dist[ie, b, rows[rest], :k] = i, d
                    search.add(fallback=nb + nb2)
                    search.used.add("kdtree")
                    continue
                del tree
            search.used.add(choice)
            if choice == "exact":
                i, d = exact_rows(prep, ie, b, rows, k, excl, dense=True)
                idx[ie, b, rows, :k], dist[ie, b, rows, :k] = i, d
            else:
                sub = _one(prep, ie, b)
                if choice == "sorted1d":
                    from .sorted1d import one_E

                    i, d = one_E(sub, 0, k, excl)
                else:
                    from . import hnsw, nndescent

                    build = hnsw.build if choice == "hnsw" else nndescent.build
                    i, d = index_tables(sub, [k], excl, search, build, choice)
                idx[ie, b, :, :k] = i[0, 0] if i.ndim == 4 else i[0]
                dist[ie, b, :, :k] = d[0, 0] if d.ndim == 4 else d[0]
    return idx, dist


def _one(prep, ie: int, b: int):
    """``prep`` restricted to one E and one series (a view-like copy of its metadata)."""
    from dataclasses import replace

    sl = slice(b, b + 1)
    return replace(prep, Xpad=prep.Xpad[sl], lib_ok=prep.lib_ok[ie : ie + 1, sl],
                   pred_ok=prep.pred_ok[ie : ie + 1, sl], kernel_E=prep.kernel_E[ie : ie + 1],
                   q_lo=prep.q_lo[sl], q_hi=prep.q_hi[sl], xexp=prep.xexp[sl])
