#!/usr/bin/env python
"""Benchmark xedm's GPU EDM path (CuPy) against its CPU path and a PyTorch peer.

    python benchmarks/gpu.py --out benchmarks/results/gpu_h100.json        # on a GPU machine
    python benchmarks/gpu.py --quick                                      # seconds

Rows (same data for every tool in one run):

- ``simplex``: leave-one-out simplex (lib = pred = every point, Tp = 1, knn = E + 1) on the
  x variable of ``xedm.datasets.lorenz63(L)``, E = 20 (and E = 1), at L = 2^14 .. 2^20.
  ``xedm_gpu`` is ``xedm.simplex(..., backend="gpu")`` end to end (point sets on the host,
  the kNN tables and predictions on the GPU, NumPy out); ``xedm_gpu_kernel`` the kNN pass
  plus the predictions alone, device arrays in and out; ``xedm_cpu`` the same call with
  backend="cpu" on this machine's cores (only where it takes under ``--cpu-limit`` seconds,
  estimated from the smaller sizes); ``torch_cdist_topk`` the peer a GPU-savvy user would
  write: float32 ``torch.cdist`` + ``torch.topk`` over blocks of 4,096 queries, self
  excluded, exact simplex weights in float64 (it is not tie-exact: float32 distances).
- ``embed_dimension``: E = 1..20 at L = 2^16, one fused sweep.
- ``smap``: E = 20, theta = 2, every library point a neighbour, L = 1,000 and 10,000.
- ``xmap``: all pairs of N series of length L (``xedm.datasets.many_series``), E = 3 for all,
  backend gpu and cpu (the CPU where it fits ``--cpu-limit``).

Every GPU timing is the median of ``--repeat`` runs after a warm-up (which compiles the
kernels), with ``cupy.cuda.Device().synchronize()`` before the clock stops.  GPU results are
checked against the CPU's where both ran (rho to 1e-12).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import xedm


def machine():
    info = {"python": sys.version.split()[0], "platform": platform.platform(),
            "cpus": os.cpu_count(), "numpy": np.__version__, "xedm": xedm.__version__}
    try:
        import cupy as cp

        dev = cp.cuda.Device()
        info["cupy"] = cp.__version__
        info["gpu"] = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
        info["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
    except Exception as err:  # pragma: no cover - no GPU
        info["gpu"] = f"none ({err})"
    return info


def sync():
    import cupy as cp

    cp.cuda.Device().synchronize()


def timed(fn, repeat, gpu=True, warm=True):
    if warm:
        fn()  # warm-up: compiles kernels (the big sizes reuse those of the small ones)
        if gpu:
            sync()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        if gpu:
            sync()
        out.append(time.perf_counter() - t0)
    return float(np.median(out)), res


def series(L):
    return xedm.datasets.lorenz63(L).x


def simplex_kernel(x, E):
    """The kNN pass and the predictions on the device (no host work but the point sets)."""
    from xedm.core.embed import LibSpec, prepare
    from xedm.kernels.gpu_knn import knn_device
    from xedm.kernels.gpu_predict import predict_device

    T = len(x)
    X = np.asarray(x, float)[None, None]
    prep = prepare(X, X[:, 0], np.array([E]), 1, 1, LibSpec.whole(T), np.ones(T, bool), False)
    import cupy as cp

    args = [cp.asarray(a) for a in (prep.Xpad, prep.lib_ok, prep.pred_t, prep.pred_ok)]
    y = cp.asarray(np.where(np.isfinite(X[:, 0]), X[:, 0], 0.0))

    def run():
        idx, dist = knn_device(args[0], prep.pad, args[1], args[2], args[3], [E], [E + 1], 1,
                               0, prep.q_lo, prep.q_hi)
        return predict_device(idx[0], dist[0], args[1][0], y, cp.full(1, E + 1, cp.int64), 1)

    return run


def torch_peer(x, E, block=4096):
    """Exact-ish simplex with torch.cdist + torch.topk (float32 distances), self excluded."""
    import torch

    dev = torch.device("cuda")
    x = np.asarray(x, float)
    T = len(x)
    emb = np.stack([x[E - 1 - e: T - e] for e in range(E)], axis=1)  # rows t = E-1 .. T-1
    target = x[E:]  # y[t + 1] for library rows t = E-1 .. T-2
    lib = torch.tensor(emb[:-1], dtype=torch.float32, device=dev)
    yl = torch.tensor(target, dtype=torch.float64, device=dev)
    k = E + 1

    def run():
        preds = []
        for s in range(0, lib.shape[0], block):
            q = lib[s:s + block]
            d = torch.cdist(q, lib)
            rows = torch.arange(q.shape[0], device=dev)
            d[rows, rows + s] = float("inf")  # leave-one-out
            dk, ik = torch.topk(d, k, dim=1, largest=False)
            dk = dk.double()
            w = torch.exp(-dk / dk[:, :1].clamp_min(1e-6))
            preds.append((w * yl[ik]).sum(1) / w.sum(1))
        return torch.cat(preds)

    return run


def bench_simplex(args, rows):
    sizes = [2**14, 2**16, 2**17, 2**20] if not args.quick else [2**12]
    if args.sizes:
        sizes = [int(v) for v in args.sizes.split(",")]
    Es = [20, 1] if not args.quick else [5]
    cpu_rate = {}  # E -> seconds per (pred x lib) pair, from the largest CPU size run
    for L in sizes:
        x = series(L)
        for E in Es:
            if E == 1 and L > 2**17:
                continue
            row = {"case": "simplex", "L": L, "E": E}
            print(f"simplex L={L} E={E}", flush=True)
            big = L > 2**17
            rep = 1 if big else args.repeat
            row["xedm_gpu_kernel"], _ = timed(simplex_kernel(x, E), rep, warm=not big)
            row["xedm_gpu"], g = timed(lambda x=x, E=E: xedm.simplex(x, E, backend="gpu"), rep,
                                       warm=not big)
            est = cpu_rate.get(E, 0.0) * L * L
            if est < args.cpu_limit:
                row["xedm_cpu"], c = timed(lambda x=x, E=E: xedm.simplex(x, E, backend="cpu"), 1,
                                           gpu=False)
                cpu_rate[E] = row["xedm_cpu"] / (L * L)
                row["max_abs_diff_prediction"] = float(np.nanmax(abs(
                    g.prediction.values - c.prediction.values)))
                row["rho_gpu"], row["rho_cpu"] = float(g.rho), float(c.rho)
            else:
                row["xedm_cpu_estimate"] = est
            if not args.no_torch and L <= 2**20:
                try:
                    row["torch_cdist_topk"], _ = timed(torch_peer(x, E), rep, warm=not big)
                except Exception as err:  # pragma: no cover - e.g. no torch
                    row["torch_error"] = repr(err)
            print("  ", {k: v for k, v in row.items() if k not in ("case",)}, flush=True)
            rows.append(row)


def bench_embed(args, rows):
    L = 2**16 if not args.quick else 2**12
    x = series(L)
    row = {"case": "embed_dimension", "L": L, "E_max": 20}
    print(f"embed_dimension L={L}", flush=True)
    row["xedm_gpu"], g = timed(lambda: xedm.embed_dimension(x, E_max=20, backend="gpu"), 1)
    if not args.quick and args.cpu_limit < 30:
        row["xedm_cpu_skipped"] = "cpu_limit"
    else:
        row["xedm_cpu"], c = timed(lambda: xedm.embed_dimension(x, E_max=20, backend="cpu"), 1,
                                   gpu=False)
        row["max_abs_diff_rho"] = float(np.nanmax(abs(g.rho.values - c.rho.values)))
    print("  ", row, flush=True)
    rows.append(row)


def bench_smap(args, rows):
    sizes = [1000, 10000] if not args.quick else [500]
    for L in sizes:
        x = series(L)
        row = {"case": "smap", "L": L, "E": 20, "theta": 2.0}
        print(f"smap L={L}", flush=True)
        row["xedm_gpu"], g = timed(lambda x=x: xedm.smap(x, 20, theta=2.0, backend="gpu"),
                                   args.repeat)
        row["xedm_cpu"], c = timed(lambda x=x: xedm.smap(x, 20, theta=2.0, backend="cpu"), 1,
                                   gpu=False)
        b = np.abs(c.prediction.values)
        row["max_rel_diff_prediction"] = float(np.nanmax(abs(g.prediction.values
                                                             - c.prediction.values))
                                               / np.nanmax(b))
        row["rho_gpu"], row["rho_cpu"] = float(g.rho), float(c.rho)
        print("  ", row, flush=True)
        rows.append(row)


def bench_xmap(args, rows):
    sizes = [(1000, 1000), (1000, 10000)] if not args.quick else [(20, 500)]
    for N, L in sizes:
        ds = xedm.datasets.many_series(N, L, seed=0)
        row = {"case": "xmap", "N": N, "L": L, "E": 3}
        print(f"xmap N={N} L={L}", flush=True)
        row["xedm_gpu"], g = timed(lambda ds=ds: ds.x.edm.xmap(dim="series", E=3, backend="gpu"),
                                    1)
        if L <= 1000 or args.quick:
            row["xedm_cpu"], c = timed(lambda ds=ds: ds.x.edm.xmap(dim="series", E=3,
                                                                      backend="cpu"),
                                       1, gpu=False)
            row["max_abs_diff_rho"] = float(np.nanmax(abs(g.rho.values - c.rho.values)))
        print("  ", row, flush=True)
        rows.append(row)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu-limit", type=float, default=60.0)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--cases", default="simplex,embed,smap,xmap")
    ap.add_argument("--sizes", default="", help="simplex L values, comma separated")
    args = ap.parse_args(argv)
    xedm.set_options(progress=False)
    rows = []
    result = {"machine": machine(), "rows": rows, "argv": sys.argv[1:]}
    cases = args.cases.split(",")
    for name, fn in (("simplex", bench_simplex), ("embed", bench_embed), ("smap", bench_smap),
                     ("xmap", bench_xmap)):
        if name in cases:
            try:
                fn(args, rows)
            except Exception as err:  # keep what ran
                rows.append({"case": name, "error": repr(err)})
                print("ERROR", name, repr(err), flush=True)
            if args.out:
                with open(args.out, "w") as f:
                    json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
