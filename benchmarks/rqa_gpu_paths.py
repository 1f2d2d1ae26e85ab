#!/usr/bin/env python
"""RQA on one GPU at N = 1,043,112 (E = 5, tau = 3, RR 0.05): kernel paths and the whole call.

    PYTHONPATH=$PWD python3 benchmarks/rqa_gpu_paths.py --out benchmarks/results/rqa_gpu_h100.json

Per series (Lorenz-63 x, the project's generator; a logistic map r = 4 made here with NumPy):

- eps of ``recurrence_rate=0.05`` from the 2e6-pair sample, with the distances on the CPU
  (numba) and on the GPU (``eps_s_cpu`` / ``eps_s_gpu``; the first call of each, then a
  second), and whether both give the same eps bit for bit;
- which kernel of :func:`xedm.kernels.rqa.gpu.line_histograms` the whole ``xedm.rqa`` call
  takes with that eps rounded to 4 digits (``eps=``) and with ``recurrence_rate=0.05``;
- the bitmap path's three kernels (CUDA events) with and without each of
  ``gpu_bitmap.TUNE``'s ``pop`` and ``delta``, and the float32 kernels' histograms (unless
  ``--skip-f32``), all compared;
- the whole ``xedm.rqa(..., backend="gpu")`` call three times with eps given and twice with
  ``recurrence_rate=0.05``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def logistic(n, r=4.0, x0=0.4):
    x = np.empty(n)
    v = x0
    for i in range(n):  # plain Python: generated independently of xedm.datasets
        v = r * v * (1.0 - v)
        x[i] = v
    return x


def main(argv=None):
    import cupy as cp
    import xarray as xr

    import xedm
    from xedm.kernels.rqa import gpu_bitmap as GB
    from xedm.kernels.rqa import gpu_f32 as GF
    from xedm.recurrence.recurrence import RecurrenceProblem, thresholds
    from xedm.recurrence.threshold import eps_for_recurrence_rate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", default=None)
    ap.add_argument("--n", type=int, default=1_043_112)
    ap.add_argument("--skip-f32", action="store_true")
    args = ap.parse_args(argv)
    xedm.set_options(work_limit=None)
    props = cp.cuda.runtime.getDeviceProperties(0)
    out = {"card": props["name"].decode(), "N": args.n, "E": 5, "tau": 3, "rows": []}
    taken = []
    for mod in (GB, GF):
        orig, tag = mod.line_histograms, mod.__name__.rsplit(".", 1)[-1]

        def wrapped(*a, _o=orig, _m=tag, **k):
            taken.append(_m)
            return _o(*a, **k)
        mod.line_histograms = wrapped
    series = {"lorenz63 x": xedm.datasets.lorenz63(args.n).x.values,
              "logistic r=4": logistic(args.n)}
    # warm-up of every kernel on a small series
    small = xr.DataArray(series["lorenz63 x"][:5000], dims="time")
    xedm.rqa(small, E=5, tau=3, eps=3.259, backend="gpu", progress=False)
    xedm.rqa(small, E=5, tau=3, recurrence_rate=0.05, backend="gpu", progress=False)
    for name, x in series.items():
        row = {"series": name}
        prob = RecurrenceProblem.single(x, E=5, tau=3)
        for be in ("cpu", "gpu", "cpu", "gpu"):
            t = time.perf_counter()
            e, how = eps_for_recurrence_rate(prob, [0.05], method="sample", backend=be)
            row.setdefault(f"eps_s_{be}", []).append(time.perf_counter() - t)
            row[f"eps_{be}"] = float(e.ravel()[0])
        row["eps_equal"] = row["eps_cpu"] == row["eps_gpu"]
        eps = float(f"{row['eps_gpu']:.4g}")
        row["eps"] = eps
        thr = thresholds([eps], "euclidean", 1, 1)
        stages, hists = {}, {}
        for pop, delta in ((1, 1), (0, 1), (1, 0), (0, 0)):
            GB.TUNE.update(pop=pop, delta=delta)
            GB.line_histograms(RecurrenceProblem.single(x[:5000], E=5, tau=3), thr, 0)
            st = {}
            t = time.perf_counter()
            hists[f"pop{pop}_delta{delta}"] = GB.line_histograms(prob, thr, 0, timings=st)
            st["call_s"] = time.perf_counter() - t
            stages[f"pop{pop}_delta{delta}"] = st
        GB.TUNE.update(pop=1, delta=1)
        row["bitmap_stages_s"] = stages
        if not args.skip_f32:
            t = time.perf_counter()
            hists["float32"] = GF.line_histograms(prob, thr, 0)
            row["float32_s"] = time.perf_counter() - t
        ref = hists["pop1_delta1"]
        row["identical"] = all(np.array_equal(a, b) for p in hists
                               for a, b in zip(ref, hists[p], strict=True))
        # the bits: one word per upper-triangle row per 32 diagonals, written once and read
        # by each runs kernel (vertical: twice over, above and below the line)
        row["bitmap_bytes"] = 4 * GB.words(prob.na)
        print(row, flush=True)
        da = xr.DataArray(x, dims="time")
        for key, kw in (("eps", {"eps": eps}), ("rr", {"recurrence_rate": 0.05})):
            calls = []
            for _ in range(3 if key == "eps" else 2):
                del taken[:]
                t = time.perf_counter()
                res = xedm.rqa(da, E=5, tau=3, backend="gpu", progress=False, **kw)
                calls.append(time.perf_counter() - t)
            row[f"rqa_call_{key}_s"] = calls
            row[f"path_{key}"] = list(taken)
            row[f"measures_{key}"] = {m: float(res[m]) for m in ("RR", "DET", "L", "LAM", "TT")}
        out["rows"].append(row)
        print({k: row[k] for k in row if k.startswith(("rqa_call", "path", "measures"))},
              flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
