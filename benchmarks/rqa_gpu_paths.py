#!/usr/bin/env python
"""RQA on one GPU: the three kernel paths and the whole call, N = 1,043,112 (and 474,275).

    PYTHONPATH=$PWD python3 benchmarks/rqa_gpu_paths.py --out benchmarks/results/rqa_gpu_h200.json

Per series (Lorenz-63 x, E = 5, tau = 3, eps = 3.259, i.e. RR = 0.05; Rossler x, E = 3,
tau = 6, eps = 1.2, AccRQA's RP_Speed_Test shape), the line histograms through each GPU path
of :func:`xedm.kernels.rqa.gpu.line_histograms`, with their counts compared:

- ``bitmap``: each distance once, the upper triangle as bits (kernels/rqa/gpu_bitmap.py),
  with the seconds of its three kernels (CUDA events);
- ``float32``: the float32-filtered column and diagonal kernels (kernels/rqa/gpu_f32.py);
- ``float64``: the general kernels (kernels/rqa/gpu.py).

Then the whole ``xedm.rqa`` call (every measure and histogram) three times with eps given,
and once with ``recurrence_rate=0.05`` (eps chosen from a 2e6-pair sample first).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main(argv=None):
    import cupy as cp
    import xarray as xr

    import xedm
    from xedm.kernels.rqa import gpu as G
    from xedm.kernels.rqa import gpu_bitmap as GB
    from xedm.recurrence.recurrence import RecurrenceProblem, thresholds

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    xedm.set_options(work_limit=None)
    out = {"card": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": []}
    cases = (("lorenz63 x", 1_043_112, 5, 3, 3.259), ("rossler x", 474_275, 3, 6, 1.2))
    for name, n, E, tau, eps in cases:
        ds = xedm.datasets.lorenz63(n) if name.startswith("lorenz") else xedm.datasets.rossler(n)
        x = ds.x.values
        prob = RecurrenceProblem.single(x, E=E, tau=tau)
        thr = thresholds([eps], "euclidean", 1, 1)
        row = {"series": name, "N": n, "E": E, "tau": tau, "eps": eps}
        hists = {}
        for path, chain, bitmap in (("bitmap", True, True), ("float32", True, False),
                                    ("float64", False, False)):
            G.USE_CHAIN, G.USE_BITMAP = chain, bitmap
            G.line_histograms(RecurrenceProblem.single(x[:5000], E=E, tau=tau), thr, 0)
            t = time.perf_counter()
            hists[path] = G.line_histograms(prob, thr, 0)
            row[path + "_s"] = time.perf_counter() - t
        G.USE_CHAIN = G.USE_BITMAP = True
        stages = {}
        GB.line_histograms(prob, thr, 0, timings=stages)
        row["bitmap_stages_s"] = stages
        row["identical"] = all(np.array_equal(a, b) for p in ("float32", "float64")
                               for a, b in zip(hists["bitmap"], hists[p], strict=True))
        out["rows"].append(row)
        print(row, flush=True)
    x = xedm.datasets.lorenz63(1_043_112).x.values
    da = xr.DataArray(x, dims="time")
    xedm.rqa(da[:5000], E=5, tau=3, eps=3.259, backend="gpu", progress=False)
    calls = []
    for _ in range(3):
        t = time.perf_counter()
        res = xedm.rqa(da, E=5, tau=3, eps=3.259, backend="gpu", progress=False)
        calls.append(time.perf_counter() - t)
    out["rqa_call_eps_s"] = calls
    out["measures"] = {m: float(res[m]) for m in ("RR", "DET", "L", "LAM", "TT")}
    t = time.perf_counter()
    res = xedm.rqa(da, E=5, tau=3, recurrence_rate=0.05, backend="gpu", progress=False)
    out["rqa_call_rr_s"] = time.perf_counter() - t
    print({k: out[k] for k in ("rqa_call_eps_s", "rqa_call_rr_s", "measures")}, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
