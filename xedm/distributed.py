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
fit in a quarter of a worker's memory (all of them up to very large maps), because a
library's table is built once per target block: the fewer target blocks, the less the
tables are rebuilt.  See ``docs/scaling.md`` for the rule and the measured throughput.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .memory import MEMORY_SHARE  # share of a worker's memory one block may use

__all__ = ["block_sizes", "xmap_blocks"]

#: blocks per worker thread at least, for load balance (the E stage is a barrier before the
#: blocks, so uneven chunks leave a worker idle) and cheap recovery from a lost worker;
#: 8 rather than 4 measured 1.76-1.81x rather than 1.72x with 2 workers (docs/scaling.md)
BLOCKS_PER_THREAD = 8


def _bytes_per_target(T: int) -> int:
    # the series, its scaled copy and its column in the lookup's (T, targets) matrix
    return 24 * T


def _bytes_per_library(T: int, n_E: int, depth: int) -> int:
    # one int64 index and one float64 distance per (E, prediction point, neighbour); the
    # core batches libraries so that their tables stay under 256 MiB at a time anyway
    return 16 * n_E * T * depth + 8 * T


def block_sizes(n_series: int, n_time: int, *, E_max: int = 10, knn: int | None = None,
                n_Tp: int = 1, memory: float | None = None, workers: int = 1,
                threads_per_worker: int = 1) -> tuple[int, int]:
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
      ``8 b_T n_Tp`` bytes of results.

    Parameters
    ----------
    n_series, n_time : int
        N series of T time points.
    E_max, knn, n_Tp : int
        Largest E in use, neighbours (default E_max + 1), number of horizons.
    memory : float, optional
        Bytes of memory of one worker (default: this machine's memory / workers).
    workers, threads_per_worker : int
        The cluster's worker processes and threads per worker.

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
    """
    N, T = int(n_series), int(n_time)
    if N < 1 or T < 1:
        raise ValueError(f"n_series and n_time must be >= 1, got {N} and {T}")
    if memory is None:
        from .memory import total_memory

        memory = (total_memory() or 8 * 2**30) / max(1, workers)
    share = MEMORY_SHARE * float(memory)
    b_T = int(max(1, min(N, share / 2 // _bytes_per_target(T))))
    depth = (E_max + 1 if knn is None else knn) + 1
    per_lib = _bytes_per_library(T, E_max, depth) + 8 * b_T * n_Tp
    fit = int(max(1, share / 2 // per_lib))
    balance = math.ceil(N / (BLOCKS_PER_THREAD * max(1, workers) * max(1, threads_per_worker)))
    return int(max(1, min(fit, balance))), b_T


# ----------------------------------------------------------------------------- tasks
def _live(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x).any(axis=1)


def _choose_E_chunk(x, *, E_max, tau, knn, excl, backend, labels):
    """E per series of one chunk (1 for an all-NaN series, as in memory)."""
    from .core.ccm import choose_E

    live = _live(x)
    E = np.ones(len(x), np.int64)
    if not live.all():
        names = [labels[i] for i in np.flatnonzero(~live)] if labels is not None else None
        warnings.warn(f"xmap (one dask chunk of the data): series {names} are all NaN; their "
                      "rows (library) and columns (target) of rho are NaN", UserWarning)
    if live.any():
        E[live] = choose_E(np.ascontiguousarray(x[live]), E_tab=np.arange(1, E_max + 1),
                           tau=tau, knn=knn, excl=excl, backend=backend)
    return E


def _xmap_block(xl, xt, et, *, tau, Tps, knn, excl, backend, method, recall):
    """rho (libraries of the block, targets of the block, nTp): one task of the map."""
    from .core import ccm as _ccm
    from .neighbors.base import Search

    rho = np.full((len(xl), len(xt), len(Tps)), np.nan)
    ll, lt = _live(xl), _live(xt)
    if ll.any() and lt.any():
        res = _ccm.xmap(np.ascontiguousarray(xl[ll]), E=np.asarray(et)[lt], tau=tau, Tp=Tps,
                        knn=knn, excl=excl, backend=backend,
                        method=Search(method, recall=recall),
                        Y=np.ascontiguousarray(xt[lt]))
        rho[np.ix_(ll, lt)] = res["rho"]
    return rho


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
                                 tuple(x.item() if isinstance(x, np.generic) else x
                                       for x in labels))
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
        target_block = block_sizes(N, T, E_max=E_top, knn=knn, n_Tp=len(Tps))[1]
    target_block = int(max(1, min(N, target_block)))
    XT = X.rechunk({0: target_block})
    ET = (da.from_array(E_d, chunks=target_block) if isinstance(E_d, np.ndarray) else
          E_d.rechunk(target_block))
    kw = {"tau": tau, "Tps": Tps, "knn": knn, "excl": excl, "backend": backend,
          "method": method, "recall": recall}
    rho = da.blockwise(
        _xmap_block, "ijp", X, "it", XT, "jt", ET, "j", new_axes={"p": len(Tps)},
        dtype=np.float64, concatenate=True, meta=np.empty((0, 0, 0)),
        name="xedm-xmap-block-" + tokenize(X, E_d, target_block, kw), **kw)
    return rho, E_d
