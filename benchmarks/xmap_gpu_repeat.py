#!/usr/bin/env python
"""xmap of 1,000 series x 1,000 steps (E = 3) on the GPU, best and median of 5 after a warm-up,
through each exact kNN kernel (sorted, scan, the rule), against fastccm 0.4.2 float32 in the
same process.  ``python benchmarks/xmap_gpu_repeat.py [OUT.json]`` (from the repository root).

benchmarks/gpu.py times each xmap row once after its warm-up; this repeats the smallest row,
whose single timings vary by about 30 % between runs.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import xedm


def device_times(fn, rep):
    """Seconds of ``rep`` calls of ``fn``, each synchronised with the device, after one
    warm-up call."""
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(rep):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        ts.append(time.perf_counter() - t0)
    return ts


def timed(fn, rep=5):
    ts = device_times(fn, rep)
    return min(ts), float(np.median(ts))


def main(out=None):
    from xedm.kernels.knn import gpu as gpu_knn

    xedm.set_options(progress=False)
    ds = xedm.datasets.many_series(1000, 1000, seed=0)
    res = {}
    rule = gpu_knn.SORTED_MIN_ROWS
    for name, v in (("sorted", 0), ("scan", 2**62), ("rule", rule)):
        gpu_knn.SORTED_MIN_ROWS = v
        res[name] = timed(lambda: ds.x.edm.xmap(series_dim="series", backend="gpu", E=3))
        print("xmap N=1000 L=1000 E=3", name, res[name], flush=True)
    gpu_knn.SORTED_MIN_ROWS = rule
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu import fastccm_peer

    X = ds.x.transpose("series", ...).values
    res["fastccm_float32"] = timed(fastccm_peer(X, 3, "float32"))
    print("fastccm float32", res["fastccm_float32"], flush=True)
    if out:
        with open(out, "w") as f:
            json.dump({"case": "xmap N=1000 L=1000 E=3", "seconds": "[best, median] of 5",
                       **res}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
