"""``neighbors="auto"``: the written rule that picks a neighbour method.

The rule (measured with ``benchmarks/ann.py``; docs/neighbors.md has the tables):

On the CPU (``backend="cpu"``):

1. States with one coordinate (E = 1 on one column, or one embedded column): ``sorted1d``,
   exact by sorting, O(L log L + L k); nothing else comes close.
2. Small problems, ``n_pred * n_lib * dim <= EXACT_WORK`` or ``n_lib < INDEX_MIN_LIB``:
   ``exact`` brute force (an index costs more to build than the search it saves).
3. Otherwise, per series and E, **kd-tree first**: a kd-tree is built (O(L log L), cheap)
   and :data:`PROBE_ROWS` random prediction points are searched with it.  Their rows are
   kept (the kd-tree is exact), so this probe costs nothing when the tree goes on; its time
   per row predicts the tree's time for the other rows, ``kd_rest``.  The tree goes on
   unless another method is clearly cheaper:

   - brute force, predicted from ``EXACT_PAIR_S`` seconds per (prediction, library) pair
     (``EXACT_PAIR_DIM_S`` per pair and coordinate without the diagonal recurrence), takes
     over when ``KD_MARGIN * exact < kd_rest``.  When the model cannot call it
     (``CLEAR_KD * exact < kd_rest < CLEAR_EXACT * exact``), brute force is *timed* on a block
     of consecutive rows (about ``CALIBRATE_SHARE`` of ``kd_rest``; its rows kept) and that
     measurement replaces the model;
   - when approximate neighbours are allowed (target recall ``neighbors_recall`` < 1) and
     faiss (or else pynndescent) is installed, HNSW (or NN-descent), predicted from
     ``HNSW_BUILD_S`` per library point and ``HNSW_QUERY_S`` per prediction point (per 20
     coordinates), takes over when it beats the best exact prediction by
     ``EXACT_PREFERENCE * KD_MARGIN``.

   The tree thus costs at most its build and the probe when it loses, and nothing is
   thrown away when it wins (Lorenz-63 at E = 20 from L = 2^13 on: 0.2 s against 0.8 s for
   brute force at 2^14, 15 s against 437 s at 2^20).  On noisy or truly high-dimensional
   states trees degrade towards brute force, which the probe's time per row shows.

On the GPU (``backend="gpu"``; decided from the sizes alone, no probe):

4. One coordinate: ``exact``: the exact GPU kernel sorts the states by a key that is then
   the state itself, so each row visits its neighbours only (1.7 ms at L = 2^16 on an H100,
   where ``sorted1d`` on the host took about 20 ms end to end).  Target recall 1, fewer than
   ``IVF_MIN_LIB`` library points, or more than ``IVF_MAX_K`` candidates per query:
   ``exact`` (the GPU brute-force kernel).  Otherwise ``ivf`` (:mod:`.ivf`), whose k-means
   and probe lists beat the exact kernel's O(P L E) from about ``IVF_MIN_LIB`` library points
   on.  Measured on an H100 (simplex, Lorenz-63, E = 20): the exact kernel is the sorted
   kernel of :mod:`xedm.kernels.knn.gpu` (0.32 s at 2^20, where ivf at recall 0.99 took
   2.5 s, ``benchmarks/ann.py --gpu`` with the earlier scan kernel: 4.7 s), so ivf is kept
   for libraries past 2^23 points, where the exact kernel's cost per row grows with the
   points near it in key space.

The choice and the figures behind it are logged (logger ``"xedm"``, level INFO) and the
method used is recorded in the result's ``attrs["neighbors"]``.
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
# brute force, seconds per (prediction, library) pair, dim > 6 (2 cores): 4.0e-10 measured at
# L = 2^18 and 2^20, more per pair on shorter series (5.4e-10 at 2^16, 7.1e-10 at 2^14), hence
# the factor (2^18 / L)^0.2 below 2^18
EXACT_PAIR_S = 4.0e-10
# ... per pair and coordinate with direct sums (knn_direct: up to 6 coordinates, or rows not
# consecutive): 1.5e-10 measured at L = 8,000 with 4 coordinates (2 cores)
EXACT_PAIR_DIM_S = 1.5e-10
HNSW_BUILD_S = 40e-6  # faiss HNSW (M = 8, efConstruction = 64), seconds per point at dim 20
HNSW_QUERY_S = 15e-6  # ... per query at efSearch 32 (re-ranking and the recall sample included)
NNDESCENT_FACTOR = 3.0  # NN-descent against HNSW, same recall (measured at L = 2^16)
EXACT_PREFERENCE = 1.25  # an approximate method must beat the best exact one by this much
KD_MARGIN = 1.25  # another method must beat the kd-tree's predicted time by this much
CLEAR_KD = 0.5  # kd_rest below CLEAR_KD x the brute-force model: the tree, no timing
CLEAR_EXACT = 3.0  # kd_rest above CLEAR_EXACT x the model: brute force, no timing
CALIBRATE_SHARE = 0.05  # a brute-force timing costs about this share of kd_rest
CALIBRATE_MIN_ROWS = 128
# GPU: ivf from this many library points (measured on an H100: the sorted exact kernel takes
# 0.32 s at 2^20, E = 20, against ivf's 2.5 s; the scan kernel before it lost from 2^19)
IVF_MIN_LIB = 2**23
IVF_MAX_K = 128  # candidates per query (knn + 2 exclusion_radius + 1) the ivf kernel holds


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
           sweep: bool = False, excl: int = 0) -> tuple[str, str]:
    """(method, reason) from the sizes alone: "sorted1d", "exact", "ivf" (GPU), or "auto"
    (CPU: decided per series by the kd-tree probe in :func:`tables`)."""
    if backend == "gpu":
        kq = knn + 2 * excl + 1
        if dim == 1:
            return "exact", ("GPU, one-coordinate states: the exact GPU kernel (its sort key is "
                             "the state itself, so each row visits its neighbours only)")
        if recall >= 1.0:
            return "exact", "GPU, target recall 1: the exact GPU kernel"
        if n_lib < IVF_MIN_LIB:
            return "exact", (f"GPU, {n_lib} < IVF_MIN_LIB = {IVF_MIN_LIB} library points: the "
                             "exact GPU kernel")
        if kq > IVF_MAX_K:
            return "exact", (f"GPU, {kq} candidates per query > IVF_MAX_K = {IVF_MAX_K}: the "
                             "exact GPU kernel")
        return "ivf", (f"GPU, {n_lib} >= IVF_MIN_LIB = {IVF_MIN_LIB} library points: ivf "
                       f"(recall target {recall})")
    if dim == 1:
        return "sorted1d", "one-coordinate states: exact by sorting, O(L log L + L k)"
    work = float(n_pred) * float(n_lib) * float(dim)
    if n_lib < INDEX_MIN_LIB or work <= EXACT_WORK:
        return "exact", (f"{n_pred} x {n_lib} x {dim} = {work:.3g} <= {EXACT_WORK:.3g} "
                         f"(or < {INDEX_MIN_LIB} library points): brute force")
    approx = approximate_method(recall)
    return "auto", (f"{work:.3g} > {EXACT_WORK:.3g}: kd-tree first, probed per series against "
                    f"exact and {approx or 'no approximate method'} (recall target {recall})")


def predicted_costs(n_lib: int, n_rows: int, dim: int, dense: bool, approx: str | None):
    """Seconds predicted for brute force and for the approximate method (None: not allowed)."""
    from ..kernels.knn.cpu import DIAGONAL_MIN_COORDS  # knn_single's rule (numba: lazily)

    per_pair = EXACT_PAIR_S if dense and dim >= DIAGONAL_MIN_COORDS else EXACT_PAIR_DIM_S * dim
    per_pair *= max(1.0, (2.0**18 / max(n_lib, 1)) ** 0.2)
    exact = per_pair * float(n_lib) * float(n_rows)
    if approx is None:
        return exact, None
    scale = max(dim, 4) / 20.0
    hnsw = scale * (HNSW_BUILD_S * n_lib + HNSW_QUERY_S * n_rows)
    return exact, hnsw * (NNDESCENT_FACTOR if approx == "nndescent" else 1.0)


def tables(prep, k_list, excl: int, *, backend: str, search):
    """Tables under rule 3 (see module docstring): per (E, series), a kd-tree search whose
    first rows measure it, continued unless brute force or an approximate index is clearly
    cheaper for the rows left."""
    from .contract import empty_tables, exact_rows, over_query
    from .index import index_tables

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
                choice = _kd_first(prep, ie, b, rows, lib_pos, k, excl, dim, approx, search,
                                   idx, dist, rng)
                if choice == "kdtree":
                    continue
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


def _kd_first(prep, ie, b, rows, lib_pos, k, excl, dim, approx, search, idx, dist, rng):
    """Rule 3 for one (E, series): build the kd-tree, search PROBE_ROWS random rows with it
    (kept: exact), predict the rest from their time per row and decide (see the module
    docstring).  Returns "kdtree" when the tree searched every row (tables filled), else
    the method that must search the series ("exact", or the approximate method)."""
    from . import kdtree

    t0 = time.perf_counter()
    tree = kdtree.build(prep, ie, b, lib_pos)
    build_s = time.perf_counter() - t0
    pick = rng.choice(len(rows), min(PROBE_ROWS, len(rows)), replace=False)
    # three batches: the first loads the kernels (numba's cache) and is not timed; the time
    # per row is the slope between the other two, so fixed costs per call (thread start-up)
    # are not multiplied by the number of rows
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
    rest = np.setdiff1d(np.arange(len(rows)), pick)
    kd_rest = per_row * len(rest)
    span = prep.pred_t[rows[-1]] - prep.pred_t[rows[0]] + 1
    dense = span <= 1.25 * len(rows)
    # switching re-searches every row (brute force's diagonal recurrence wants them all)
    ex_cost, ap_cost = predicted_costs(len(lib_pos), len(rows), dim, dense, approx)
    how = "model"
    if CLEAR_KD * ex_cost < kd_rest < CLEAR_EXACT * ex_cost:
        # too close to call on the model: time brute force on a block of consecutive rows
        # (kept: exact), about CALIBRATE_SHARE of the kd-tree's predicted time for the rest
        n_cal = int(np.clip(CALIBRATE_SHARE * kd_rest / max(ex_cost / len(rows), 1e-12),
                            CALIBRATE_MIN_ROWS, max(CALIBRATE_MIN_ROWS, len(rest) // 8)))
        n_cal = min(n_cal, len(rows))
        if dense:  # consecutive rows, so that the kernel's diagonal recurrence serves them
            s0 = int(rng.integers(0, len(rows) - n_cal + 1))
            block = np.arange(s0, s0 + n_cal)
        else:
            block = np.sort(rng.choice(rest, min(n_cal, len(rest)), replace=False))
        t1 = time.perf_counter()
        i, d = _exact_block(prep, ie, b, rows[block], k, excl, dense)
        ex_s = time.perf_counter() - t1
        idx[ie, b, rows[block], :k], dist[ie, b, rows[block], :k] = i, d
        rest = np.setdiff1d(rest, block)
        ex_cost = ex_s / max(len(block), 1) * len(rows)
        kd_rest = per_row * len(rest)
        how = f"measured on {len(block)} rows"
    choice = "kdtree"
    if ex_cost * KD_MARGIN < kd_rest:
        choice = "exact"
    if ap_cost is not None and ap_cost * EXACT_PREFERENCE * KD_MARGIN < min(kd_rest, ex_cost):
        choice = approx
    log.info("neighbors='auto' (E=%d, series %d, %d library points, %d queries): kd-tree "
             "build %.3g s, %d probe rows %.3g s, predicts %.3g s for the other %d rows; brute "
             "force %.3g s (%s); %s %s -> %r", prep.kernel_E[ie], b, len(lib_pos), len(rows),
             build_s, len(pick), sum(times), kd_rest, len(rest), ex_cost, how, approx or "-",
             "-" if ap_cost is None else f"{ap_cost:.3g} s", choice)
    if choice != "kdtree":
        return choice
    i, d, nb2 = kdtree.search_rows(prep, ie, b, rows[rest], lib_pos, k, excl, tree)
    idx[ie, b, rows[rest], :k], dist[ie, b, rows[rest], :k] = i, d
    search.add(fallback=nb + nb2)
    search.used.add("kdtree")
    return "kdtree"


def _exact_block(prep, ie: int, b: int, rows: np.ndarray, k: int, excl: int, dense: bool):
    """Brute force for the prediction rows ``rows`` of series b alone: consecutive rows
    (``dense``) go to ``knn_single`` as a problem of their own (its diagonal recurrence, as
    the whole series would), others to the direct sums."""
    from ..kernels import get_kernel
    from .contract import exact_rows

    if not dense:
        return exact_rows(prep, ie, b, rows, k, excl)
    sl = slice(b, b + 1)
    idx, dist = get_kernel("knn_single", "cpu")(
        prep.Xpad[sl], prep.pad, np.ascontiguousarray(prep.lib_ok[ie, sl]),
        np.ascontiguousarray(prep.pred_t[rows]), np.ones((1, len(rows)), bool),
        int(prep.kernel_E[ie]), k, prep.tau, excl, prep.q_lo[sl], prep.q_hi[sl])
    return idx[0], dist[0]


def _one(prep, ie: int, b: int):
    """``prep`` restricted to one E and one series (a view-like copy of its metadata)."""
    from dataclasses import replace

    sl = slice(b, b + 1)
    return replace(prep, Xpad=prep.Xpad[sl], lib_ok=prep.lib_ok[ie : ie + 1, sl],
                   pred_ok=prep.pred_ok[ie : ie + 1, sl], kernel_E=prep.kernel_E[ie : ie + 1],
                   q_lo=prep.q_lo[sl], q_hi=prep.q_hi[sl], xexp=prep.xexp[sl])
