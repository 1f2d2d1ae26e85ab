#!/usr/bin/env python
"""GPU xmap at N = 1,000 series, L = 10,000, E = 5 on three data families, as benchmarks/gpu.py
times it (``DataArray.edm.xmap``, median of 3 calls after a warm-up, device synchronised).

    PYTHONPATH=$PWD python3 benchmarks/xmap_gpu_families.py [OUT.json]

Families: coupled logistic maps (``xedm.datasets.many_series``, the benchmark's data),
AR(1) noise (``xedm.datasets.ar1``, phi = 0.9) and Lorenz-96 with 1,000 nodes
(``xedm.datasets.lorenz96``, F = 8).
"""

from __future__ import annotations

import json
import sys

import numpy as np

import xedm


def timed(fn, rep=3):
    from xmap_gpu_repeat import device_times  # benchmarks/ is the script's folder

    ts = device_times(fn, rep)
    return float(np.median(ts)), ts


def main(out=None):
    import cupy as cp

    xedm.set_options(progress=False)
    N, L, E = 1000, 10_000, 5
    fams = {
        "many_series (coupled logistic)": lambda: xedm.datasets.many_series(N, L, seed=0).x,
        "ar1 phi=0.9": lambda: xedm.datasets.ar1(N, L),
        "lorenz96 N=1000": lambda: xedm.datasets.lorenz96(L, N=N).rename(node="series"),
    }
    res = {"card": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "case": f"xmap N={N} L={L} E={E}", "seconds": "median of 3 after a warm-up",
           "rows": {}}
    for name, make in fams.items():
        da = make().transpose("series", "time")
        med, ts = timed(lambda da=da: da.edm.xmap(series_dim="series", backend="gpu", E=E))
        res["rows"][name] = {"median_s": med, "calls_s": ts}
        print(name, med, ts, flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
