"""Blocked all-pairs cross map on Dask: the fan-out that ``apply_ufunc`` cannot express.

``xmap`` on N series is N x N pairs.  On dask-backed data (:func:`xedm.xmap` dispatches
here when the data have only the series and time dims and no surrogates are asked) the
pair space is cut into blocks (library series x target series) and every block is one task
that runs the ordinary kernels (numba, or CuPy with ``backend="gpu"``) on a worker:

1. **E stage** (with ``E=None``): one task per chunk of series chooses each series' E
   (leave-one-out simplex, as in memory).  A series' E does not depend on the others, so
   this is embarrassingly parallel, and every block below depends only on the E of its own
   targets.
2. **Block stage**: task (I, J) builds the neighbour table of each library series of I
   once (for every E that the targets of J use) and looks up every target of J in it.

The result is a dask-backed ``(library, target[, Tp])`` array, chunked like the blocks, so
``result.to_zarr(path)`` writes it block by block.  Nothing here starts or talks to a
cluster: the graph runs on whatever Dask scheduler is active (threads, processes, a
``distributed.Client`` on a ``LocalCluster`` or on dask-jobqueue / dask-kubernetes / Coiled,
dask-cuda's ``LocalCUDACluster`` with ``backend="gpu"``), and a lost worker's blocks are
recomputed by Dask.

Block sizes (:func:`block_sizes`): the library block is the chunk of the input along the
series dim (choose it with ``.chunk({dim: n})``); the target block is as many targets as
fit in a quarter of a worker's memory (of its GPU's with ``backend="gpu"``, asked of the
workers when the blocks are laid out; all targets up to very large maps), because a
library's table is built once per target block: the fewer target blocks, the less the
tables are rebuilt.  See ``docs/scaling.md`` for the rule and the measured throughput.

GPU workers (:func:`gpu_cluster`): one worker process per GPU, each seeing only its own
device (``CUDA_VISIBLE_DEVICES``), through dask-cuda's ``LocalCUDACluster`` when it is
installed, else a plain ``distributed`` cluster that sets the variable per worker.  Any
cluster whose workers each see one GPU works the same way (dask-jobqueue with one GPU per
job, ``dask cuda worker`` on each node).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import threading
import warnings

import numpy as np

from .memory import MEMORY_SHARE  # share of a worker's memory one block may use

__all__ = ["block_sizes", "device_memory", "forget_targets", "gpu_cluster", "xmap_blocks"]

#: blocks per worker thread at least, for load balance (the E stage is a barrier before the
#: blocks, so uneven chunks leave a worker idle) and cheap recovery from a lost worker;
#: 8 rather than 4 measured 1.76-1.81x rather than 1.72x with 2 workers (docs/scaling.md)
BLOCKS_PER_THREAD = 8
#: library blocks per GPU worker at least; beyond that as few as fit its memory, the same
#: number on every worker: every task pays work that does not shrink with its block (the
#: result's copy to the host, the targets' columns on the worker's first task), and a
#: block of a few thousand libraries x all targets keeps a GPU busy for a second or more.
#: On 4 H100s, N = 20,000, L = 1,450, 8 blocks placed 1, 2, 2 and 3 to a worker (by where
#: the one target block lay) took 5.7 s against 2.9 s on 4 workers of 2 blocks each.
BLOCKS_PER_GPU = 1
#: device memory assumed for a GPU worker when neither the workers nor this process answer
DEFAULT_GPU_MEMORY = 16 * 2**30


def _bytes_per_target(T: int) -> int:
    # the series, its scaled copy and its column in the lookup's (T, targets) matrix
    return 24 * T


def _bytes_per_library(T: int, n_E: int, depth: int) -> int:
    # one int64 index and one float64 distance per (E, prediction point, neighbour); the
    # core batches libraries so that their tables stay under 256 MiB at a time anyway
    return 16 * n_E * T * depth + 8 * T


def block_sizes(n_series: int, n_time: int, *, E_max: int = 10, knn: int | None = None,
                n_Tp: int = 1, memory: float | None = None, workers: int = 1,
                threads_per_worker: int = 1, backend: str | None = None) -> tuple[int, int]:
    """The (library block, target block) of a distributed :func:`xedm.xmap`: the rule.

    With ``M = MEMORY_SHARE * memory`` bytes per block (a quarter of one worker's memory;
    for a GPU worker its device memory):

    * **target block** ``b_T = min(N, M / 2 / (24 T))``: every target costs ``24 T`` bytes
      (the series, a scaled copy, its column of the lookup matrix), and a library's table is
      rebuilt once per target block, so one block of all targets is best while it fits
      (for T = 10,000: 1,000 targets in 240 MB; 100,000 in 24 GB);
    * **library block** ``b_L`` is the smaller of ``ceil(N / (BLOCKS_PER_THREAD x
      workers x threads))`` (enough blocks to keep every thread busy and to lose little
      when a worker dies) and what fits in the other half of M: ``16 E_max T (knn + 1)``
      bytes of table per library (E_max tables of depth knn + 1 at most) plus its
      ``8 b_T n_Tp`` bytes of results.  GPU workers: ``ceil(N / (m workers))`` with m the
      fewest blocks per worker (``BLOCKS_PER_GPU`` at least) that fit, so that every
      worker gets as many blocks.

    Parameters
    ----------
    n_series, n_time : int
        N series of T time points.
    E_max, knn, n_Tp : int
        Largest E in use, neighbours (default E_max + 1), number of horizons.
    memory : float, optional
        Bytes of memory of one worker (default: this machine's memory / workers; with
        ``backend="gpu"``, :func:`device_memory`: the free memory of the workers' GPUs).
    workers, threads_per_worker : int
        The cluster's worker processes (GPUs) and threads per worker.
    backend : str, optional
        ``"gpu"``: GPU workers (device memory, ``BLOCKS_PER_GPU``); anything else: CPU.

    Returns
    -------
    (int, int)
        Library block and target block, in series.

    Examples
    --------
    >>> from xedm.distributed import block_sizes
    >>> block_sizes(400, 2000, E_max=10, memory=4e9, workers=2)
    (25, 400)
    >>> block_sizes(100_000, 10_000, E_max=10, memory=64e9, workers=64)[1]  # target block
    33333
    >>> block_sizes(20_000, 1450, memory=80e9, workers=4, backend="gpu")  # 4 GPUs of 80 GB
    (2500, 20000)
    """
    N, T = int(n_series), int(n_time)
    if N < 1 or T < 1:
        raise ValueError(f"n_series and n_time must be >= 1, got {N} and {T}")
    gpu = backend == "gpu"
    if memory is None and gpu:
        memory = device_memory() or DEFAULT_GPU_MEMORY
    if memory is None:
        from .memory import total_memory

        memory = (total_memory() or 8 * 2**30) / max(1, workers)
    share = MEMORY_SHARE * float(memory)
    b_T = int(max(1, min(N, share / 2 // _bytes_per_target(T))))
    depth = (E_max + 1 if knn is None else knn) + 1
    per_lib = _bytes_per_library(T, E_max, depth) + 8 * b_T * n_Tp
    fit = int(max(1, share / 2 // per_lib))
    if gpu:  # as few blocks as fit, a multiple of the workers (all of them equally busy)
        W = max(1, workers)
        per_worker = max(BLOCKS_PER_GPU, math.ceil(math.ceil(N / W) / fit))
        return int(max(1, math.ceil(N / (per_worker * W)))), b_T
    per_worker = BLOCKS_PER_THREAD * max(1, threads_per_worker)
    balance = math.ceil(N / (per_worker * max(1, workers)))
    return int(max(1, min(fit, balance))), b_T


# ----------------------------------------------------------------------------- GPU workers
def _current_client():
    """The active ``distributed.Client``, if distributed is imported and one is active."""
    dist = sys.modules.get("distributed")
    if dist is None:
        return None
    try:
        return dist.get_client()
    except (ValueError, AttributeError):
        return None


def device_memory(client=None) -> int | None:
    """Free GPU memory in bytes of the smallest worker GPU, asked of ``client``'s workers
    (default: the active ``distributed.Client``, if any), else of this process's GPU; None
    when nobody has one.

    Examples
    --------
    >>> from xedm.distributed import device_memory
    >>> device_memory() is None or device_memory() > 0
    True
    """
    from .kernels.device import memory_info

    client = client if client is not None else _current_client()
    if client is not None:
        try:
            answers = client.run(memory_info)
        except Exception:  # noqa: BLE001  (workers without xedm or without CuPy: no answer)
            answers = {}
        free = [a[0] for a in answers.values() if a]
        if free:
            return int(min(free))
    here = memory_info()
    return None if here is None else here[0]


def _visible_devices() -> list[str]:
    """The devices this process may hand out: CUDA_VISIBLE_DEVICES, else 0..count-1."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None and env.strip():
        return [d.strip() for d in env.split(",") if d.strip()]
    from .kernels.device import device_count

    return [str(i) for i in range(device_count())]


def _worker_specs(devs, threads_per_worker, memory_limit) -> dict:
    """SpecCluster workers: one Nanny process per device, seeing only that device."""
    from distributed import Nanny

    return {f"gpu-{d}": {"cls": Nanny, "options": {
        "nthreads": threads_per_worker, "memory_limit": memory_limit,
        "env": {"CUDA_VISIBLE_DEVICES": d}}} for d in devs}


def gpu_cluster(n_workers: int | None = None, *, devices=None, threads_per_worker: int = 1,
                dask_cuda: bool | None = None, **kwargs):
    """A local Dask cluster of one worker process per GPU, each seeing only its own GPU.

    dask-cuda's ``LocalCUDACluster`` when it imports (``pip install "xedm[gpu-cluster]"``),
    else a plain ``distributed.SpecCluster`` of ``Nanny`` workers, worker i started with
    ``CUDA_VISIBLE_DEVICES=devices[i]``: either way a task's CuPy arrays land on its
    worker's GPU (device 0 of that process).  Run the map with ``backend="gpu"``.

    Parameters
    ----------
    n_workers : int, optional
        GPUs to use (default: all of ``devices``).
    devices : sequence of int or str, optional
        Device ids (default: ``CUDA_VISIBLE_DEVICES``, else every device CuPy sees).
    threads_per_worker : int, default 1
        Dask threads per worker (tasks that share a GPU).
    dask_cuda : bool, optional
        True: dask-cuda or its error; False: never dask-cuda; None: dask-cuda if it imports
        and starts (else the plain cluster, with a RuntimeWarning when it failed to start).
    **kwargs
        Passed to ``LocalCUDACluster`` (or, for the plain cluster, ``memory_limit``: per
        worker, default the host's memory divided among the workers).

    Returns
    -------
    distributed.deploy.Cluster
        With ``cluster.xedm_devices`` (the device of each worker) and ``cluster.xedm_kind``
        (``"dask-cuda"`` or ``"distributed"``).

    Examples
    --------
    >>> from dask.distributed import Client
    >>> from xedm.distributed import gpu_cluster
    >>> cluster = gpu_cluster(4)              # doctest: +SKIP
    >>> client = Client(cluster)              # doctest: +SKIP
    >>> cmap = data.chunk({"neuron": 2500}).edm.xmap(backend="gpu")  # doctest: +SKIP
    """
    devs = [str(d) for d in (devices if devices is not None else _visible_devices())]
    if n_workers is not None:
        if n_workers > len(devs):
            raise ValueError(f"n_workers={n_workers} but only {len(devs)} GPU(s) visible "
                             f"({devs}); use n_workers <= {len(devs)}")
        devs = devs[:n_workers]
    if not devs:
        raise ValueError("gpu_cluster found no GPU: pass devices=[...] or set "
                         "CUDA_VISIBLE_DEVICES")
    cluster = None
    if dask_cuda is not False:
        try:
            from dask_cuda import LocalCUDACluster
        except Exception:  # noqa: BLE001  (not installed, or not importable with this dask)
            if dask_cuda:
                raise
        else:
            kwargs.setdefault("dashboard_address", None)
            try:
                cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(devs),
                                           n_workers=len(devs),
                                           threads_per_worker=threads_per_worker, **kwargs)
                kind = "dask-cuda"
            except Exception as err:  # noqa: BLE001  (e.g. its CUDA or NVML setup failed)
                if dask_cuda:
                    raise
                warnings.warn(f"gpu_cluster: dask-cuda's LocalCUDACluster failed ({err}); "
                              "starting one plain worker per GPU instead", RuntimeWarning,
                              stacklevel=2)
    if cluster is None:
        from distributed import Scheduler, SpecCluster
        from distributed.system import MEMORY_LIMIT

        # the host's memory shared by the GPU workers (as dask-cuda does), not Dask's
        # "auto" (a share by threads: a worker of 1 thread on a 64-core host had 1/64 of
        # the memory, 7.9 GiB, and spilled a map of 40,000 series to disk)
        limit = kwargs.get("memory_limit", int(MEMORY_LIMIT // len(devs)))
        cluster = SpecCluster(workers=_worker_specs(devs, threads_per_worker, limit),
                              scheduler={"cls": Scheduler,
                                         "options": {"dashboard_address": None}},
                              silence_logs=40)
        kind = "distributed"
    cluster.xedm_devices = devs
    cluster.xedm_kind = kind
    return cluster


# ----------------------------------------------------------------------------- tasks
#: the last target chunk's columns on the GPU (backend="gpu"), kept by this worker process
#: for its next block task of the same targets (xedm.core.ccm.xmap's ``cache``):
#: at N = 20,000, L = 1,450 their preparation took 0.3 s of each task's 1.8 s
_TARGETS: dict = {}
#: one block at a time per worker process uses (and may replace) them
_TARGETS_LOCK = threading.Lock()
#: the last targets joined from X's chunks (one target block), for the worker's next task
_JOINED: dict = {}
_JOIN_LOCK = threading.Lock()

def forget_targets() -> None:
    """Drop this worker process's kept targets (the joined target chunks and their columns
    on the GPU): the next block task prepares them again.  ``client.run(forget_targets)``
    frees them on every worker; a benchmark that maps the same data twice runs it between
    the maps so that each map pays its own preparation.  They hold host and device memory
    (about twice the targets' size on the GPU) until then, or until a task joins other
    targets.

    Examples
    --------
    >>> from xedm.distributed import forget_targets
    >>> forget_targets()                    # this process
    >>> client.run(forget_targets)          # every worker  # doctest: +SKIP
    """
    with _JOIN_LOCK, _TARGETS_LOCK:
        _JOINED.clear()
        _TARGETS.clear()


def _label_array(labels) -> np.ndarray:
    """The series' labels as one 1-D NumPy array (an object array when they are tuples,
    e.g. of a stacked dim): cheap to pickle into every task, unlike a list of NumPy scalars
    (0.16 s for 20,000), and indexed by position."""
    out = np.asarray(labels)
    if out.ndim != 1 or (out.dtype.kind in "US" and not all(isinstance(v, str)
                                                              for v in labels)):
        out = np.empty(len(labels), object)
        for i, v in enumerate(labels):
            out[i] = v
    return out


def _live(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x).any(axis=1)


def _choose_E_chunk(x, *, E_max, tau, knn, excl, backend, labels, block_info=None):
    """E per series of one chunk (1 for an all-NaN series, as in memory).  ``labels``: of
    every series (the chunk's start from ``block_info``), for the warning."""
    from .core.ccm import choose_E

    live = _live(x)
    E = np.ones(len(x), np.int64)
    if not live.all():
        at = block_info[0]["array-location"][0][0] if block_info and 0 in block_info else 0
        names = None if labels is None else [
            v.item() if isinstance(v, np.generic) else v
            for v in (labels[at + i] for i in np.flatnonzero(~live))]
        warnings.warn(f"xmap (one dask chunk of the data): series {names} are all NaN; their "
                      "rows (library) and columns (target) of rho are NaN", UserWarning)
    if live.any():
        E[live] = choose_E(np.ascontiguousarray(x[live]), E_tab=np.arange(1, E_max + 1),
                           tau=tau, knn=knn, excl=excl, backend=backend)
    return E


def _xmap_block(xl, xt, et, *, tau, Tps, knn, excl, backend, method, recall, lt=None):
    """rho (libraries of the block, targets of the block, nTp): one task of the map.
    ``lt``: the targets' live mask when known (kept with the joined targets)."""
    from .core import ccm as _ccm
    from .neighbors.base import Search

    ll = _live(xl)
    lt = _live(xt) if lt is None else lt
    if not (ll.any() and lt.any()):
        return np.full((len(xl), len(xt), len(Tps)), np.nan)
    # every target live: the worker's target chunk itself, whose columns the cache keeps
    # for this worker's next block of the same targets (one per library block)
    # (GPU workers: their threads share one device anyway, so they take turns)
    targets = (xt if not isinstance(xt, np.ndarray) else np.ascontiguousarray(xt) if lt.all()
               else np.ascontiguousarray(xt[lt]))
    cache = _TARGETS if backend == "gpu" and lt.all() else None
    with _TARGETS_LOCK if cache is not None else contextlib.nullcontext():
        res = _ccm.xmap(np.ascontiguousarray(xl if ll.all() else xl[ll]),
                        E=np.asarray(et)[lt], tau=tau, Tp=Tps, knn=knn, excl=excl,
                        backend=backend, method=Search(method, recall=recall), Y=targets,
                        cache=cache)
    if ll.all() and lt.all():  # every series live: the block as computed, no copy
        return res["rho"]
    rho = np.full((len(xl), len(xt), len(Tps)), np.nan)
    rho[np.ix_(ll, lt)] = res["rho"]
    return rho


def _joined_targets(parts, es, backend="cpu", method="exact"):
    """The target chunks ``parts`` and their E joined into one array, once per worker
    process: the last join is kept (with the chunks, whose identity is its key) for the
    worker's next task, and xmap's target cache recognises it."""
    et = np.concatenate([np.atleast_1d(np.asarray(e)) for e in es])
    on_gpu = backend == "gpu" and method == "exact"  # the join may live on the device
    with _JOIN_LOCK:
        hit = _JOINED.get("last")
        if hit is not None and hit[4] == on_gpu and len(hit[0]) == len(parts) and all(
                a is b for a, b in zip(hit[0], parts, strict=True)):
            # the same chunks, joined for the same kind of map (a CPU map must not get the
            # device's copy): their join and live mask; the E are this task's (another map
            # of the same data may give other E: xmap's cache keys on their partition)
            return hit[1], et, hit[3]
        _JOINED.clear()
        with _TARGETS_LOCK:  # the old targets' columns freed before these are made
            _TARGETS.clear()
        xt = None
        if on_gpu:
            # the chunks copied to the GPU and joined there (no joined copy on the host),
            # kept when NaN-free (checked there: no pass over them on the host); xmap makes
            # the columns from it
            from .core.resident import Resident

            res = Resident(list(parts), backend)
            if res.all_finite():
                xt, lt = res, np.ones(len(res), bool)
            del res
        if xt is None:
            xt = np.concatenate(parts) if len(parts) > 1 else np.ascontiguousarray(parts[0])
            lt = _live(xt)
        _JOINED["last"] = (list(parts), xt, et, lt, on_gpu)
        return xt, et, lt


def _xmap_block_all(xl, xts, ets, **kw):
    """:func:`_xmap_block` of one library chunk against every target (the chunks of X as
    lists: ``concatenate=False``)."""
    xt, et, lt = _joined_targets([_only(p) for p in xts], ets, kw["backend"], kw["method"])
    return _xmap_block(_only(xl), xt, et, lt=lt, **kw)


def _xmap_block_all_E(xl, xts, *, E_all, **kw):
    """:func:`_xmap_block_all` with the targets' E given (an array in the task itself: no
    task of its own to fetch from another worker)."""
    return _xmap_block_all(xl, xts, [E_all], **kw)


def _only(v):
    """The one chunk along time (a list of one with ``concatenate=False``)."""
    return v[0] if isinstance(v, list) else v


def xmap_blocks(X, *, E, E_max, tau, Tp, knn, excl, backend, method="exact", recall=None,
                target_block: int | None = None, labels=None):
    """The blocked map of a dask array ``X`` (N, T), chunked along series only.

    ``E``: one int per series (numpy) or None (chosen per chunk, 1..E_max).  The library
    blocks are X's chunks along the series; ``target_block`` series per target block
    (default: the option ``xmap_target_block``, else :func:`block_sizes`).  Returns
    (rho (N, N, nTp), E (N,)): rho a dask array chunked (library block, target block, nTp),
    E a dask array when chosen, else the given E.
    """
    import dask.array as da
    from dask.base import tokenize

    from .neighbors.base import DEFAULT_RECALL

    N, T = X.shape
    Tps = np.atleast_1d(np.asarray(Tp, np.int64))
    if len(X.chunks[1]) != 1:
        raise ValueError("xmap_blocks needs one chunk along time: X.rechunk({1: -1})")
    recall = DEFAULT_RECALL if recall is None else float(recall)
    if E is None:
        # the labels (for warnings) bound by partial: a list among map_blocks' kwargs would
        # become a task of its own with a random key
        func = functools.partial(_choose_E_chunk, labels=None if labels is None else
                                 _label_array(labels))
        E_d = X.map_blocks(func, drop_axis=1, dtype=np.int64, meta=np.empty(0, np.int64),
                           E_max=int(E_max), tau=tau, knn=knn, excl=excl, backend=backend,
                           token="xedm-choose-E")
        E_top = int(E_max)
    else:
        E = E_d = np.asarray(E, np.int64)  # given: no stage, and the E coordinate in memory
        E_top = int(E.max())
    if target_block is None:
        from .options import get_option

        target_block = get_option("xmap_target_block")
    if target_block is None:
        target_block = block_sizes(N, T, E_max=E_top, knn=knn, n_Tp=len(Tps),
                                   backend=backend)[1]
    target_block = int(max(1, min(N, target_block)))
    kw = {"tau": tau, "Tps": Tps, "knn": knn, "excl": excl, "backend": backend,
          "method": method, "recall": recall}
    if target_block >= N:
        # one target block: every task takes the chunks of X as they lie (joined once per
        # worker, :func:`_joined_targets`), so each task goes where its library chunk is,
        # not to the one worker that would hold a rechunked target block
        # (E given: in every task; at 4 GPUs fetching its chunks from the workers that
        # made them cost about 0.2 s a task)
        name = "xedm-xmap-block-" + tokenize(X, E_d, target_block, kw)
        if isinstance(E_d, np.ndarray):
            rho = da.blockwise(
                _xmap_block_all_E, "inp", X, "it", X, "jt", new_axes={"n": N, "p": len(Tps)},
                dtype=np.float64, concatenate=False, meta=np.empty((0, 0, 0)), name=name,
                E_all=E_d, **kw)
        else:
            rho = da.blockwise(
                _xmap_block_all, "inp", X, "it", X, "jt", E_d, "j",
                new_axes={"n": N, "p": len(Tps)}, dtype=np.float64, concatenate=False,
                meta=np.empty((0, 0, 0)), name=name, **kw)
        return rho, E_d
    XT = X.rechunk({0: target_block})
    ET = (da.from_array(E_d, chunks=target_block) if isinstance(E_d, np.ndarray) else
          E_d.rechunk(target_block))
    rho = da.blockwise(
        _xmap_block, "ijp", X, "it", XT, "jt", ET, "j", new_axes={"p": len(Tps)},
        dtype=np.float64, concatenate=True, meta=np.empty((0, 0, 0)),
        name="xedm-xmap-block-" + tokenize(X, E_d, target_block, kw), **kw)
    return rho, E_d
