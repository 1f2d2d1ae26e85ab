#!/usr/bin/env python
"""AccRQA's RP_Speed_Test protocol on one GPU: xedm against AccRQA's CUDA build, same process.

    python benchmarks/rqa_speedtest.py --out benchmarks/results/rqa_speedtest_h100.json

The protocol of AccRQA's published GPU figure: the x variable of the Rossler system, m = 3,
tau = 6, eps = 1.2, N = 474,275 points.  Here the series is ``xedm.datasets.rossler(N)`` (dt
0.05, RK4); both tools embed it the same way and count with the line of identity (theiler
0).  Per norm (Euclidean; maximum, AccRQA's "maximal"):

- xedm: ``xedm.rqa(..., backend="gpu")``, every measure (13) and the three histograms;
- AccRQA: ``DET`` then ``LAM`` on the ``nv_gpu`` platform (RR, DET, L, L_max, ENTR, LAM, TT,
  V_max, ...), timed together.

Kernels of both are compiled / loaded on a small series first.  RR, DET and LAM of the two
must agree (AccRQA computes in float32 where xedm is exact: differences of a few 1e-6 are
its rounding); the JSON holds the seconds, the ratio xedm / AccRQA and the measures.
AccRQA is a benchmark peer only (``pip install accrqa``, built with CUDA); never imported by
xedm.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _accrqa(x, eps, norm):
    import accrqa

    dist = accrqa.accrqaDistance("euclidean" if norm == "euclidean" else "maximal")
    gpu = accrqa.accrqaCompPlatform("nv_gpu")
    t = time.perf_counter()
    det = accrqa.DET(x, 6, 3, 2, float(eps), dist, comp_platform=gpu, tidy_data=False).ravel()
    lam = accrqa.LAM(x, 6, 3, 2, float(eps), dist, comp_platform=gpu, tidy_data=False).ravel()
    dt = time.perf_counter() - t
    return dt, {"DET": float(det[0]), "L": float(det[1]), "L_max": float(det[2]),
                "ENTR": float(det[3]), "RR": float(det[4]), "LAM": float(lam[0]),
                "TT": float(lam[1])}


def _xedm(x, eps, norm):
    import xarray as xr

    import xedm

    da = xr.DataArray(x, dims="time")
    t = time.perf_counter()
    res = xedm.rqa(da, E=3, tau=6, eps=eps, norm=norm, theiler=0, backend="gpu",
                   progress=False)
    dt = time.perf_counter() - t
    return dt, {k: float(res[k]) for k in ("RR", "DET", "L", "L_max", "ENTR", "LAM", "TT")}


def main(argv=None):
    import cupy as cp

    import xedm

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=474_275)
    p.add_argument("--eps", type=float, default=1.2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    xedm.set_options(work_limit=None)
    x = np.ascontiguousarray(xedm.datasets.rossler(args.n).x.values, np.float64)
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    out = {"card": card, "N": args.n, "m": 3, "tau": 6, "eps": args.eps, "theiler": 0,
           "repeat": args.repeat, "rows": []}
    small = x[:5000].copy()
    for norm in ("euclidean", "maximum"):
        _xedm(small, args.eps, norm)  # compile
        _accrqa(small, args.eps, norm)  # CUDA context, kernels loaded
        tx = [_xedm(x, args.eps, norm) for _ in range(args.repeat)]
        ta = [_accrqa(x, args.eps, norm) for _ in range(args.repeat)]
        sx, mx = min(t for t, _ in tx), tx[0][1]
        sa, ma = min(t for t, _ in ta), ta[0][1]
        row = {"norm": norm, "xedm_s": sx, "accrqa_s": sa, "ratio": sx / sa,
               "xedm": mx, "accrqa": ma,
               "max_abs_diff": {k: abs(mx[k] - ma[k]) for k in ("RR", "DET", "LAM")}}
        out["rows"].append(row)
        print(f"{card} N={args.n} {norm}: xedm {sx:.3f} s, AccRQA {sa:.3f} s, "
              f"ratio {sx / sa:.3f}; RR {mx['RR']:.5f} vs {ma['RR']:.5f}, "
              f"DET {mx['DET']:.5f} vs {ma['DET']:.5f}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
