#!/usr/bin/env python
"""GPU xmap with and without the neighbour tables in the kNN kernel's key order, and with
each rule for the tiled lookups' block size: ``xedm.core.ccm.xmap`` at fixed E = 5 for
N = 1,000, L = 10,000 and N = 10,000, L = 1,450 (many_series), and at E chosen (1..10) for
N = 1,000, L = 10,000; medians of three calls after a warm-up.

``PYTHONPATH=$PWD python3 benchmarks/xmap_key_order.py [OUT.json]`` (from the repository root,
on a machine with CuPy and an NVIDIA GPU).  Key order "off" forces ``knn_device`` to return
the rows in their own order whatever the lookups would ask; the block sizes replace
``gpu_xmap.TILE_BTS``.  Results: benchmarks/results/gpu_h200_xmap_key_order_ab.json (docs/gpu.md).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import xedm
from xedm import kernels
from xedm.core import ccm


def _median(fn, n=3):
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(n):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        ts.append(time.perf_counter() - t0)
    return round(float(np.median(ts)), 4), [round(t, 4) for t in ts]


def main(out=None):
    import cupy as cp

    from xedm.kernels.cross import gpu_xmap
    from xedm.kernels.knn import gpu as kg

    real = kg.knn_device

    def own_order(*a, **k):  # the tables' rows in their own order whatever is asked
        want = k.pop("key_order", False)
        got = real(*a, **k)
        return (*got, None) if want else got

    kw = dict(tau=1, Tp=0, knn=None, excl=0, backend="gpu")
    res = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    bts = gpu_xmap.TILE_BTS
    try:
        for N, L in [(1000, 10000), (10000, 1450)]:
            X = np.ascontiguousarray(xedm.datasets.many_series(N, L, seed=0).x.values)
            for order in (True, False):
                kernels._LOADED[("knn_device", "gpu")] = real if order else own_order
                name = f"{N}x{L}_E5_order{int(order)}"
                res[name] = _median(lambda X=X, N=N: ccm.xmap(X, E=np.full(N, 5), **kw))
                print(name, res[name], flush=True)
            kernels._LOADED[("knn_device", "gpu")] = real
            if N == 1000:
                for rule in (bts, (256,), (128,)):
                    gpu_xmap.TILE_BTS = rule
                    name = f"{N}x{L}_chosen_bts{rule}"
                    res[name] = _median(lambda X=X: ccm.xmap(X, E=None, E_max=10, **kw))
                    print(name, res[name], flush=True)
                gpu_xmap.TILE_BTS = bts
            del X
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        kernels._LOADED[("knn_device", "gpu")] = real
        gpu_xmap.TILE_BTS = bts
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
