#!/usr/bin/env python
"""Distributed xmap: wall time against Dask worker processes, and per-pair throughput.

    flock /tmp/xedm-cpu.lock python benchmarks/scale.py --json benchmarks/results/scale_cpu.json
    python benchmarks/scale.py --quick                      # small sizes (seconds)
    python benchmarks/scale.py --gpu --workers 1 --json benchmarks/results/scale_h100.json

What is timed: ``xedm.xmap`` (E chosen per series in 1..E_max, the default, or ``--E``) on
``many_series(N, L)`` chunked along the series (``xedm.distributed``: the E stage, then
(library x target) blocks), computed by a ``distributed.Client`` on a ``LocalCluster`` of
``w`` worker processes with one thread each (``NUMBA_NUM_THREADS=1`` in every worker, so a
worker is one core).  The same chunking for every ``w`` (the block rule of
:func:`xedm.distributed.block_sizes` for the largest ``w``).  Before timing, every worker
runs a small xmap (numba's cache loaded, kernels warm).  Also: the in-memory xmap in this
process with numba on one thread (the single-core baseline without Dask), and the largest
|rho difference| of the distributed map from it.

``--gpu``: one GPU worker (dask-cuda's ``LocalCUDACluster`` when installed, else a
LocalCluster of one worker process) with ``backend="gpu"``, and the in-memory GPU time.

Throughput is pairs (N^2) per second; ``speedup`` is the 1-worker time over the w-worker
time (the target in issue 13: >= 1.7 with 2 workers at N = 400, L = 2,000).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def machine() -> dict:
    import dask
    import distributed
    import numba

    import xedm

    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "numpy": np.__version__, "numba": numba.__version__,
            "dask": dask.__version__, "distributed": distributed.__version__,
            "xedm": xedm.__version__,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    try:
        import cupy

        info["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        info["cupy"] = cupy.__version__
    except Exception:  # no CuPy or no device
        pass
    return info


def warm(backend: str, E) -> None:
    """A small xmap: numba's cache (or CuPy's kernels) loaded in this process."""
    import xedm

    x = xedm.datasets.many_series(6, 200, seed=1).x
    x.edm.xmap(series_dim="series", E=E, E_max=4 if E is None else 10, backend=backend,
               progress=False)


def cluster(workers: int, gpu: bool):
    import distributed

    env = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if gpu:
        try:
            from dask_cuda import LocalCUDACluster

            return LocalCUDACluster(n_workers=workers, threads_per_worker=1,
                                    dashboard_address=None), "LocalCUDACluster"
        except ImportError:
            pass
    return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address=None, env=env), "LocalCluster"


def run(args) -> dict:
    import dask
    import distributed

    import xedm
    from xedm.distributed import block_sizes

    backend = "gpu" if args.gpu else "cpu"
    x = xedm.datasets.many_series(args.N, args.L, seed=0).x
    wmax = max(args.workers)
    lib_block, tgt_block = block_sizes(args.N, args.L, E_max=args.E_max if args.E is None
                                       else args.E, workers=wmax)
    if args.lib_block:
        lib_block = args.lib_block
    lazy = x.chunk({"series": lib_block})
    kw = {"dim": "series", "E": args.E, "E_max": args.E_max, "backend": backend,
          "progress": False}
    out = {"N": args.N, "L": args.L, "E": args.E if args.E is not None else
           f"chosen in 1..{args.E_max}", "backend": backend, "library_block": lib_block,
           "target_block": tgt_block, "repeat": args.repeat, "rows": []}

    # the single-core baseline without Dask: numba on one thread, in this process
    import numba

    threads = numba.get_num_threads()
    if not args.gpu:
        numba.set_num_threads(1)
    warm(backend, args.E)
    t0 = time.perf_counter()
    ref = x.edm.xmap(**kw)
    t_mem = time.perf_counter() - t0
    numba.set_num_threads(threads)
    out["in_memory_s"] = t_mem
    out["in_memory"] = "one numba thread" if not args.gpu else "one GPU"
    print(f"in memory ({out['in_memory']}): {t_mem:.2f} s", flush=True)

    for w in args.workers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cl, kind = cluster(w, args.gpu)
        with cl, distributed.Client(cl) as client:
            client.wait_for_workers(w, timeout=120)
            client.run(warm, backend, args.E)
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                res = lazy.edm.xmap(**kw).compute()
                times.append(time.perf_counter() - t0)
            nblocks = len(lazy.chunks[0]) * -(-args.N // tgt_block)
        diff = float(np.nanmax(np.abs(res.rho.values - ref.rho.values)))
        same_nan = bool(np.array_equal(np.isnan(res.rho.values), np.isnan(ref.rho.values)))
        row = {"workers": w, "threads_per_worker": 1, "cluster": kind, "wall_s": min(times),
               "all_s": times, "pairs_per_s": args.N**2 / min(times), "blocks": nblocks,
               "max_abs_diff_rho_vs_in_memory": diff, "same_nan": same_nan}
        out["rows"].append(row)
        print(f"{w} worker(s) [{kind}]: {min(times):.2f} s (all {[round(t, 2) for t in times]}),"
              f" {row['pairs_per_s']:.0f} pairs/s, {nblocks} blocks, max |diff| {diff:.1e}",
              flush=True)
    base = next((r["wall_s"] for r in out["rows"] if r["workers"] == 1), None)
    if base:
        for r in out["rows"]:
            r["speedup_vs_1_worker"] = base / r["wall_s"]
    dask.config.refresh()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--N", type=int, default=400)
    p.add_argument("--L", type=int, default=2000)
    p.add_argument("--E", type=int, default=None, help="fixed E (default: chosen per series)")
    p.add_argument("--E-max", dest="E_max", type=int, default=10)
    p.add_argument("--workers", type=lambda s: [int(v) for v in s.split(",")], default=[1, 2])
    p.add_argument("--lib-block", dest="lib_block", type=int, default=None,
                   help="library block (default: the block rule)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--gpu", action="store_true", help="one GPU per worker, backend='gpu'")
    p.add_argument("--quick", action="store_true", help="N = 40, L = 400, one repeat")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    if args.quick:
        args.N, args.L, args.repeat = 40, 400, 1
    result = {"machine": machine(), "command": " ".join([sys.executable] + sys.argv),
              "scale": run(args)}
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
