"""``neighbors="ivf"``: the GPU method, an inverted file over a k-means coarse quantiser (CuPy).

Per (E, series), on the device:

1. **States.**  The library points' and prediction points' state vectors are gathered from the
   padded series (float64, coordinates lag by lag, column by column within a lag: the order
   the brute-force kernels sum them).  The index holds the series' library points only, so
   lib segments, masks and NaN gaps are honoured by construction.
2. **Coarse quantiser.**  ``nlist`` = :data:`NLIST_FACTOR` x sqrt(library points) (a power of
   two, 16 to :data:`NLIST_MAX`) centroids from :data:`KMEANS_ITERS` Lloyd iterations on up
   to :data:`TRAIN_PER_LIST` x nlist random library points (float32 GEMMs; the centroids only
   route queries, no distance comes from them).  Every library point goes to its nearest
   centroid; the points are stored list by list (the inverted lists).
3. **Search.**  Each prediction point probes its ``nprobe`` nearest lists: one CUDA thread per
   query scans their points, skips those the exclusion removes (itself and every point
   within the exclusion radius: the filter is applied while scanning, so the kernel keeps
   exactly knn and never needs to over-query), sums each squared distance exactly as the
   brute-force kernels do (float64, compiled without fused multiply-add, so the value is
   theirs bit for bit), stops summing once the partial sum exceeds the current k-th
   neighbour, and keeps the k nearest in the tie order (distance, |dt|, t) of the exact GPU
   kernel (the CUDA kernel: :mod:`xedm.kernels.knn.gpu_ivf`).
4. **Recall target.**  A random sample of prediction points (:data:`SAMPLE_ROWS`) is searched
   by the exact GPU kernel first; ``nprobe`` starts at :data:`NPROBE_START` and doubles until
   the Wilson lower bound of the sampled recall reaches ``neighbors_recall``
   (:func:`xedm.neighbors.contract.lower_bound`); at nprobe = nlist every list is scanned, which
   is exact.  Sampled rows keep their exact neighbours; the measured recall goes in
   ``attrs["neighbors_recall"]``.
5. **Exact fallback.**  Rows left with fewer than min(knn, available points) neighbours (their
   probed lists held too few points outside the exclusion) are searched by the exact GPU
   kernel, as are series with too few library points for an index (fewer than
   :data:`MIN_LIB`), more than :data:`MAX_K` neighbours per query (ccm's deep tables with
   small library sizes), or a target recall of 1 (these record ``"exact"`` in
   ``attrs["neighbors"]``), and states of one coordinate (sorted on the CPU,
   :mod:`.sorted1d`, exact).

It needs ``backend="gpu"`` and CuPy (``pip install "xedm[gpu]"``; CUDA 13:
``"xedm[gpu-cuda13]"``); CuPy is imported only when the method runs.  The array steps are
written once for an array module ``xp`` (CuPy on the device; NumPy in the CPU tests, with
:func:`xedm.kernels.knn.gpu_ivf.scan_reference`, a NumPy twin of the CUDA kernel).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from ..kernels import get_kernel
from ..kernels.knn.gpu_ivf import scan_reference
from .contract import (
    Search,
    as_search,
    available,
    empty_tables,
    exact_rows,
    lower_bound,
    over_query,
    recall_of,
)
from .index import series_problems
from .registry import REGISTRY

log = logging.getLogger("xedm")

NLIST_FACTOR = 4  # lists per sqrt(library points)
NLIST_MAX = 1 << 14
TRAIN_PER_LIST = 64  # k-means training points per list
KMEANS_ITERS = 12
NPROBE_START = 1  # nprobe doubles from here until the sampled recall clears the target
SAMPLE_ROWS = 1000  # prediction rows searched exactly to measure the recall
MIN_LIB = 2048  # fewer library points: the exact GPU kernel
MAX_K = 128  # neighbours per query the kernel holds (knn); more: the exact GPU kernel
QUERY_CHUNK_CELLS = 1 << 28  # (query rows x nlist) per chunk of the coarse search
ARGMIN_PROBES = 32  # up to this nprobe, the nearest lists by repeated argmin
QUERY_CHUNK = 1 << 20  # prediction rows per scan launch (enough threads to fill the device)


def check_backend(backend) -> None:
    """A ValueError unless ``backend`` is "gpu" (``resolve_backend`` has then checked that
    CuPy sees a device)."""
    REGISTRY["ivf"].check(backend, 1)


def _cupy():
    try:
        import cupy
    except ImportError:
        raise ImportError(
            "neighbors='ivf' runs on an NVIDIA GPU and needs CuPy: pip install \"xedm[gpu]\" "
            "(CUDA 12) or \"xedm[gpu-cuda13]\" (CUDA 13)"
        ) from None
    return cupy


# --------------------------------------------------------------------------- device plumbing
class Device:
    """The array module and the two device-specific steps (the scan and the exact search).
    :class:`Host` is its NumPy twin for the CPU tests."""

    def __init__(self):
        self.xp = _cupy()

    def scan(self, lib, lib_t, offs, q, q_t, probe, excl, k, C):
        return get_kernel("ivf_scan", "gpu")(lib, lib_t, offs, q, q_t, probe, excl, k, C)

    def exact(self, prep, ie, b, rows, k, excl):
        sl = slice(b, b + 1)
        idx, dist = get_kernel("knn_device", "gpu")(
            prep.Xpad[sl], prep.pad, prep.lib_ok[ie : ie + 1, sl],
            np.ascontiguousarray(prep.pred_t[rows]), np.ones((1, 1, len(rows)), bool),
            [int(prep.kernel_E[ie])], [int(k)], prep.tau, excl, prep.q_lo[sl], prep.q_hi[sl])
        return idx[0, 0].get(), dist[0, 0].get()

    def numpy(self, a):
        return self.xp.asnumpy(a)


class Host(Device):
    """NumPy twin of :class:`Device` (tests on machines without a GPU)."""

    def __init__(self):
        self.xp = np

    def scan(self, lib, lib_t, offs, q, q_t, probe, excl, k, C):
        return scan_reference(lib, lib_t, offs, q, q_t, probe, excl, k, C)

    def exact(self, prep, ie, b, rows, k, excl):
        return exact_rows(prep, ie, b, rows, k, excl)

    def numpy(self, a):
        return np.asarray(a)


def _device() -> Device:
    return Device()


# ------------------------------------------------------------------------------ index steps
def gather(xp, Xb, pad: int, times, E: int, tau: int):
    """(n, E*C) float64 states of the series ``Xb`` (C, W) at ``times`` (device array),
    coordinates lag by lag, column by column within a lag (as ``gather_states``)."""
    C = Xb.shape[0]
    n = int(times.shape[0])
    out = xp.empty((n, E * C), xp.float64)
    lags = xp.arange(E, dtype=xp.int64) * tau
    step = max(1, (1 << 24) // max(E * C, 1))
    for a in range(0, n, step):
        cols = pad + times[a : a + step, None] - lags[None, :]  # (m, E)
        block = Xb[:, cols]  # (C, m, E)
        out[a : a + step] = block.transpose(1, 2, 0).reshape(-1, E * C)
    return out


def n_lists(n_lib: int) -> int:
    """NLIST_FACTOR * sqrt(n_lib), rounded to a power of two, in [16, NLIST_MAX], and at
    most n_lib / 8 (lists of 8 points at least)."""
    target = NLIST_FACTOR * np.sqrt(max(n_lib, 1))
    nl = 1 << int(np.round(np.log2(max(target, 1.0))))
    return int(max(1, min(max(nl, 16), NLIST_MAX, n_lib // 8)))


def _nearest(xp, x32, cent, c2, nprobe: int | None = None):
    """For rows x32 (m, D) float32: the nearest centroid (nprobe None) or the nprobe nearest
    (m, nprobe), ascending list ids; chunked so that no (rows x nlist) block exceeds
    QUERY_CHUNK_CELLS."""
    m = int(x32.shape[0])
    nlist = int(cent.shape[0])
    step = max(1, QUERY_CHUNK_CELLS // max(nlist, 1))
    outs = []
    for a in range(0, m, step):
        d = c2[None, :] - 2.0 * (x32[a : a + step] @ cent.T)  # |x|^2 is the same per row
        if nprobe is None:
            outs.append(xp.argmin(d, axis=1).astype(xp.int32))
        elif nprobe >= nlist:
            outs.append(xp.broadcast_to(xp.arange(nlist, dtype=xp.int32),
                                        (d.shape[0], nlist)).copy())
        elif nprobe <= ARGMIN_PROBES:
            # nprobe passes of argmin (each reads the block once) beat a partition, which
            # CuPy may do by sorting whole rows
            part = xp.empty((d.shape[0], nprobe), xp.int32)
            at = xp.arange(d.shape[0])
            for j in range(nprobe):
                best = xp.argmin(d, axis=1)
                part[:, j] = best
                d[at, best] = xp.inf
            outs.append(xp.sort(part, axis=1))
        else:
            part = xp.argpartition(d, nprobe - 1, axis=1)[:, :nprobe]
            outs.append(xp.sort(part, axis=1).astype(xp.int32))
    if not outs:
        shape = (0,) if nprobe is None else (0, min(nprobe, nlist))
        return xp.empty(shape, xp.int32)
    return xp.concatenate(outs, axis=0)


class Index:
    """Inverted lists over one series' library states (see the module docstring)."""

    def __init__(self, dev: Device, lib64, lib_t, rng):
        xp = dev.xp
        t0 = time.perf_counter()
        n, self.D = int(lib64.shape[0]), int(lib64.shape[1])
        self.nlist = n_lists(n)
        lib32 = lib64.astype(xp.float32)
        n_train = int(min(n, TRAIN_PER_LIST * self.nlist))
        sel = xp.asarray(np.sort(rng.choice(n, n_train, replace=False)))
        train = lib32[sel]
        start = xp.asarray(rng.choice(n_train, self.nlist, replace=False))
        cent = train[start].copy()
        for _ in range(KMEANS_ITERS):
            c2 = (cent * cent).sum(axis=1)
            a = _nearest(xp, train, cent, c2)
            order = xp.argsort(a)
            counts = xp.bincount(a, minlength=self.nlist)
            ends = xp.cumsum(counts)
            cs = xp.cumsum(train[order].astype(xp.float64), axis=0)
            cs = xp.concatenate([xp.zeros((1, self.D), xp.float64), cs], axis=0)
            sums = cs[ends] - cs[ends - counts]
            filled = counts > 0
            new = sums / xp.maximum(counts, 1)[:, None]
            cent = xp.where(filled[:, None], new.astype(xp.float32), cent)
        self.cent = cent
        self.c2 = (cent * cent).sum(axis=1)
        assign = _nearest(xp, lib32, cent, self.c2)
        order = xp.argsort(assign)  # the order within a list is free: the scan decides ties
        counts = xp.bincount(assign, minlength=self.nlist)
        self.offs = xp.concatenate([xp.zeros(1, xp.int64), xp.cumsum(counts).astype(xp.int64)])
        self.lib = xp.ascontiguousarray(lib64[order])
        self.lib_t = xp.ascontiguousarray(lib_t[order].astype(xp.int64))
        self.n_train = n_train
        self.build_s = time.perf_counter() - t0

    def probes(self, xp, q64, nprobe: int | None):
        """(m, nprobe) ascending ids of each query's nprobe nearest lists (None: (m,) the
        nearest list)."""
        return _nearest(xp, q64.astype(xp.float32), self.cent, self.c2, nprobe)

    def params(self, nprobe: int) -> dict:
        return {"nlist": self.nlist, "nprobe": int(nprobe), "kmeans_train": self.n_train,
                "kmeans_iters": KMEANS_ITERS}


# ------------------------------------------------------------------------------- the method
def tables(prep, k_list, excl: int, *, backend: str, search=None, dev: Device | None = None):
    """(idx, dist) (nE, B, P, kmax) via the GPU inverted file (see the module docstring).
    ``dev``: :class:`Host` runs the same steps with NumPy (tests)."""
    if dev is None:
        check_backend(backend)
        dev = _device()
    search = as_search("ivf" if search is None else search)
    idx, dist = empty_tables(prep, k_list)
    xp = dev.xp
    for ie, k, b, rows, lib_pos in series_problems(prep, k_list, excl, search, idx, dist):
        E = int(prep.kernel_E[ie])
        n_lib = len(lib_pos)
        why = None
        if n_lib < MIN_LIB:
            why = f"{n_lib} < MIN_LIB = {MIN_LIB} library points"
        elif k > MAX_K:
            why = f"knn = {k} > MAX_K = {MAX_K}"
        elif over_query(k, excl, n_lib) >= n_lib:
            why = "the exclusion leaves too few library points for an index"
        elif search.recall >= 1.0:
            why = "target recall 1"
        if why is not None:
            log.info("neighbors='ivf' (E=%d, series %d): %s: the exact GPU kernel", E, b,
                     why)
            search.used.add("exact")  # recorded as what ran
            i, d = dev.exact(prep, ie, b, rows, k, excl)
            idx[ie, b, rows, :k], dist[ie, b, rows, :k] = i, d
            continue
        search.used.add("ivf")
        i, d = _search(dev, xp, prep, ie, b, rows, lib_pos, k, excl, search)
        idx[ie, b, rows, :k], dist[ie, b, rows, :k] = i, d
    return idx, dist


def _search(dev, xp, prep, ie, b, rows, lib_pos, k, excl, search: Search):
    E = int(prep.kernel_E[ie])
    C = prep.Xpad.shape[1]
    rng = np.random.default_rng(0)
    Xb = xp.asarray(prep.Xpad[b])
    times = prep.pred_t[rows]
    lib64 = gather(xp, Xb, prep.pad, xp.asarray(lib_pos), E, prep.tau)
    index = Index(dev, lib64, xp.asarray(lib_pos), rng)
    # the recall sample: exact neighbours first, then nprobe doubles until it clears the target
    t0 = time.perf_counter()
    pick = np.sort(rng.choice(len(rows), min(SAMPLE_ROWS, len(rows)), replace=False))
    ex_idx, ex_dist = dev.exact(prep, ie, b, rows[pick], k, excl)
    qs = gather(xp, Xb, prep.pad, xp.asarray(times[pick]), E, prep.tau)
    qs_t = xp.asarray(times[pick])
    nprobe = min(NPROBE_START, index.nlist)
    while True:
        got, _, _ = dev.scan(index.lib, index.lib_t, index.offs, qs, qs_t,
                             index.probes(xp, qs, nprobe), excl, k, C)
        hits, total = recall_of(dev.numpy(got), ex_idx)
        if lower_bound(hits, total) >= search.recall or nprobe >= index.nlist:
            break
        nprobe = min(index.nlist, 2 * nprobe)
    tune_s = time.perf_counter() - t0
    # every other row, in chunks (the coarse search's (rows x nlist) block and the outputs)
    t0 = time.perf_counter()
    out_idx = np.full((len(rows), k), -1, np.int64)
    out_dist = np.full((len(rows), k), np.inf)
    out_idx[pick], out_dist[pick] = ex_idx, ex_dist
    rest = np.setdiff1d(np.arange(len(rows)), pick)
    avail = available(prep.lib_ok[ie, b], times, excl)
    step = QUERY_CHUNK
    short = []
    for a in range(0, len(rest), step):
        part = rest[a : a + step]
        q_t = xp.asarray(times[part])
        q = gather(xp, Xb, prep.pad, q_t, E, prep.tau)
        # queries grouped by their nearest list: the threads of a warp then scan the same
        # lists (the same rows of the index, read once for the warp)
        order = xp.argsort(index.probes(xp, q, None))
        q, q_t = q[order], q_t[order]
        part = part[dev.numpy(order)]
        t_, d_, cnt = dev.scan(index.lib, index.lib_t, index.offs, q, q_t,
                               index.probes(xp, q, nprobe), excl, k, C)
        out_idx[part], out_dist[part] = dev.numpy(t_), dev.numpy(d_)
        cnt = dev.numpy(cnt)
        short.append(part[cnt < np.minimum(k, avail[part])])
    short = np.concatenate(short) if short else np.empty(0, np.int64)
    if len(short):
        out_idx[short], out_dist[short] = dev.exact(prep, ie, b, rows[short], k, excl)
    search_s = time.perf_counter() - t0
    params = index.params(nprobe)
    search.add(hits=hits, total=total, fallback=len(short), exact_only=False, **params)
    log.info("neighbors='ivf' (E=%d, series %d, %d library points, %d queries): nlist %d "
             "(k-means on %d points, %.3g s), nprobe %d: sampled recall %.4f (lower bound "
             "%.4f, target %.3f) on %d rows (%.3g s); search %.3g s, %d rows short -> exact",
             E, b, len(lib_pos), len(rows), index.nlist, index.n_train, index.build_s, nprobe,
             hits / max(total, 1), lower_bound(hits, total), search.recall, len(pick), tune_s,
             search_s, len(short))
    return out_idx, out_dist
