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
- ``lookup``: the cross map's lookups alone (``--lookup-sizes``, E = ``--xmap-fixed-E``):
  the general kernel against the tiled one, lookups per second and their share of the
  card's float64 FMA peak.
- ``xmap``: all pairs of N series of length L (``xedm.datasets.many_series``), E = 3 for all
  and E chosen per series (E_max = 10; kEDM: ``edim`` per series, then ``xmap``), backend gpu
  and cpu (the CPU where it fits ``--cpu-limit``), kEDM's GPU build and fastccm.

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


_KEDM = {}


def kedm_gpu(args):
    """kEDM's GPU build (``kedm-cuda13x``), or None (not installed, or --no-kedm)."""
    if args.no_kedm:
        return None
    if "mod" not in _KEDM:
        try:
            cpus = os.sched_getaffinity(0)
            import kedm

            os.sched_setaffinity(0, cpus)  # Kokkos binds the importing thread to one core
            _KEDM["mod"] = kedm
        except Exception as err:  # pragma: no cover - no kEDM
            print("kEDM not importable:", repr(err), flush=True)
            _KEDM["mod"] = None
    return _KEDM["mod"]


def over(args):
    """True once the run's --deadline has passed (rows not started are left out)."""
    return args.t_end is not None and time.time() > args.t_end


def peer(args, row, key, fn, est=None, gpu=True):
    """Time a peer into row[key] with a limit: skipped when its estimate (seconds, from the
    smaller sizes) exceeds --peer-limit; one call only when the first takes over 2 s (its
    time is then the first call's, marked in row[key + "_single"]; with --peer-warm a second
    call's, the first in row[key + "_first"]).  Returns the result."""
    if est is not None and est > args.peer_limit:
        row[key + "_skipped"] = f"estimated {est:.1f} s > --peer-limit {args.peer_limit:g} s"
        return None
    if over(args):
        row[key + "_skipped"] = "deadline"
        return None
    try:
        t0 = time.perf_counter()
        res = fn()
        if gpu:
            sync()
        first = time.perf_counter() - t0
        if first > 2.0 and args.peer_warm:  # its warm time: a second call, the first kept
            row[key + "_first"] = first
            row[key], res = timed(fn, 1, gpu=gpu, warm=False)
            return res
        if first > 2.0:
            row[key] = first
            row[key + "_single"] = True
            return res
        row[key], res = timed(fn, args.repeat, gpu=gpu, warm=False)
        return res
    except Exception as err:  # a peer's failure blanks its column only
        row[key + "_error"] = repr(err)[:300]
        return None


def simplex_kernel(x, E):
    """The kNN pass and the predictions on the device (no host work but the point sets)."""
    from xedm.core.embed import LibSpec, prepare
    from xedm.kernels.knn.gpu import knn_device
    from xedm.kernels.predict.gpu import predict_device

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
    rate = {}  # (peer, E) -> seconds per pair, for the peers' time limit
    for L in sizes:
        if over(args):
            rows.append({"case": "simplex", "L": L, "skipped": "deadline"})
            continue
        x = series(L)
        for E in Es:
            if E == 1 and L > 2**17:
                continue
            row = {"case": "simplex", "L": L, "E": E}
            print(f"simplex L={L} E={E}", flush=True)
            big = L > 2**17
            rep = 1 if big else args.repeat
            if L >= 2**22:  # end to end only (the kernel alone would double the time)
                row["xedm_gpu"], g = timed(lambda x=x, E=E: xedm.simplex(x, E, backend="gpu"),
                                           1, warm=False)
                print("  ", {k: v for k, v in row.items() if k not in ("case",)}, flush=True)
                rows.append(row)
                continue
            row["xedm_gpu_kernel"], _ = timed(simplex_kernel(x, E), rep, warm=not big)
            row["xedm_gpu"], g = timed(lambda x=x, E=E: xedm.simplex(x, E, backend="gpu"), rep,
                                       warm=not big)
            est = cpu_rate.get(E, 0.0) * L * L
            if est < args.cpu_limit and not args.no_cpu:
                row["xedm_cpu"], c = timed(lambda x=x, E=E: xedm.simplex(x, E, backend="cpu"), 1,
                                           gpu=False)
                cpu_rate[E] = row["xedm_cpu"] / (L * L)
                row["max_abs_diff_prediction"] = float(np.nanmax(abs(
                    g.prediction.values - c.prediction.values)))
                row["rho_gpu"], row["rho_cpu"] = float(g.rho), float(c.rho)
            else:
                row["xedm_cpu_estimate"] = est
            if not args.no_torch and L <= 2**20:
                r = rate.get(("torch", E))
                peer(args, row, "torch_cdist_topk", torch_peer(x, E),
                     est=r * L * L if r else None)
                if "torch_cdist_topk" in row:
                    rate[("torch", E)] = row["torch_cdist_topk"] / (L * L)
            km = kedm_gpu(args)
            if km is not None:
                if L > 2**17:  # a dense L x L float32 matrix: 4 TiB at 2^20
                    row["kedm_gpu_skipped"] = "kEDM allocates a dense L x L distance matrix"
                else:
                    x32 = np.asarray(x, np.float32)
                    pk = peer(args, row, "kedm_gpu", lambda km=km, x32=x32, E=E: km.simplex(
                        x32, x32, E=E))
                    if pk is not None:
                        from _compare_measure import kedm_rho

                        row["rho_kedm"] = float(kedm_rho(np.asarray(x, float), pk, E))
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
    row["best_E_xedm"] = int(g.attrs["best_E"])
    km = kedm_gpu(args)
    if km is not None:
        x32 = np.asarray(x, np.float32)
        e = peer(args, row, "kedm_gpu", lambda: km.edim(x32, E_max=20))
        if e is not None:
            row["best_E_kedm"] = int(e)
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
        km = kedm_gpu(args)
        if km is not None:
            x32 = np.asarray(x, np.float32)
            pk = peer(args, row, "kedm_gpu", lambda km=km, x32=x32: km.smap(x32, x32, E=20,
                                                                          theta=2.0))
            if pk is not None:
                from _compare_measure import kedm_rho

                row["rho_kedm"] = float(kedm_rho(np.asarray(x, float), pk, 20))
        print("  ", row, flush=True)
        rows.append(row)


def fastccm_peer(X, E, dtype, device="cuda", budget_gb=None):
    """fastccm 0.4.2 on the GPU: ``PairwiseCCM(device="cuda", dtype=...).score_matrix`` with
    one-column targets (so it computes the one rho matrix; transposed: [target, library]);
    ``budget_gb``: its ``memory_budget_gb`` (None: its default, 1 GB)."""
    from fastccm import PairwiseCCM
    from fastccm.utils.utils import get_td_embedding_np

    N = X.shape[0]
    emb = [np.ascontiguousarray(get_td_embedding_np(X[i][:, None], E, 1)[:, :, 0])
           for i in range(N)]
    tgt = [np.ascontiguousarray(X[i][E - 1:, None]) for i in range(N)]
    kw = {} if budget_gb is None else {"memory_budget_gb": float(budget_gb)}
    cc = PairwiseCCM(device=device, dtype=dtype, **kw)

    def run():
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cc.score_matrix(emb, tgt, exclusion_window=0, tp=0)[0].T

    return run


def fma_peak():
    """The card's float64 FMA rate (per second): SMs x 64 float64 FMA units (Hopper) x the
    boost clock."""
    import cupy as cp

    p = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return float(p["multiProcessorCount"]) * 64 * float(p["clockRate"]) * 1e3


def bench_lookup(args, rows):
    """The cross map's lookups alone (``xmap_skill`` on device-resident tables of k = E + 1
    random neighbours per row, NaN-free targets, rho left on the device): the general kernel
    (``TILED = False``), the L2-tiled one at each ``tileP`` (P column pairs per thread) of
    ``--lookup-variants``, the shared-memory one (``ytile``, where a tile of the targets
    fits shared memory), as lookups (pair x row x neighbour) per second and their share of
    the card's float64 FMA peak (one FMA per lookup)."""
    import cupy as cp

    from xedm.kernels.cross import gpu_xmap

    sizes = (args.lookup_sizes or ("50x500" if args.quick else "1000x10000,10000x1450,"
                                   "20000x1450")).split(",")
    E = args.xmap_fixed_E
    k = E + 1
    peak = fma_peak()
    for size in sizes:
        N, L = (int(v) for v in size.split("x"))
        rng = cp.random.default_rng(0)
        P = L - (E - 1)
        Y = rng.standard_normal((L, N))
        idx = rng.integers(0, L - 1, (N, P, k), dtype=cp.int64).astype(cp.int32)
        dist = cp.sort(rng.random((N, P, k)), axis=-1)
        pred_t = np.arange(E - 1, L, dtype=np.int64)
        ok = cp.ones((N, P), cp.uint8)
        row = {"case": "xmap_lookup", "N": N, "L": L, "E": E, "fma_peak_per_s": peak}
        lookups = float(N) * N * P * k
        ref = None
        for var in args.lookup_variants.split(","):
            if var == "general" and N > args.lookup_general_max:
                continue
            gpu_xmap.TILED = var != "general"
            gpu_xmap.YTILE = var == "ytile"
            if var.startswith("tile"):  # tileP: P column pairs per thread
                gpu_xmap.TILE_PAIRS = int(var[4:] or 1)
            row[var + "_s"], rho = timed(lambda idx=idx, dist=dist, Y=Y, ok=ok, k=k, pt=pred_t, N=N:
                                         gpu_xmap.xmap_skill_groups_device(
                                             [(idx, dist)], Y, np.zeros(N, np.int32), [k],
                                             0, pt, [ok]), args.repeat)
            row[var + "_lookups_per_s"] = lookups / row[var + "_s"]
            row[var + "_share_of_fma_peak"] = row[var + "_lookups_per_s"] / peak
            if "general_s" in row and var != "general":
                row[var + "_speedup"] = row["general_s"] / row[var + "_s"]
            if ref is not None:
                row[var + "_max_abs_diff_rho"] = float(cp.nanmax(abs(rho - ref)))
            else:
                ref = rho
        gpu_xmap.TILED, gpu_xmap.TILE_PAIRS, gpu_xmap.YTILE = True, 1, True
        print("  ", row, flush=True)
        rows.append(row)
        cp.get_default_memory_pool().free_all_blocks()


def bench_xmap(args, rows):
    sizes = [(1000, 1000), (1000, 10000)] if not args.quick else [(20, 500)]
    if args.xmap_sizes:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.xmap_sizes.split(",")]
    rate = {}  # peer -> seconds per N^2 L^2 unit, from the first size
    for N, L in sizes:
        ds = xedm.datasets.many_series(N, L, seed=0)
        X = ds.x.transpose("series", ...).values
        d32 = np.ascontiguousarray(X.T.astype(np.float32))
        unit = float(N) * N * L * L
        for chosen in {"both": (False, True), "fixed": (False,),
                       "chosen": (True,)}[args.xmap_chosen]:
            if over(args):
                rows.append({"case": "xmap", "N": N, "L": L, "skipped": "deadline"})
                continue
            Ef = args.xmap_fixed_E
            row = {"case": "xmap", "N": N, "L": L, "E": "chosen (E_max=10)" if chosen else Ef}
            print(f"xmap N={N} L={L} E={row['E']}", flush=True)
            kw = dict(E=None, E_max=10) if chosen else dict(E=Ef)
            # median of --repeat calls after a warm-up, as the peers' calls under 2 s
            row["xedm_gpu"], g = timed(lambda ds=ds, kw=kw: ds.x.edm.xmap(
                series_dim="series", backend="gpu", **kw), args.repeat)
            if (L <= 1000 or args.quick) and args.cpu_limit >= 60:
                row["xedm_cpu"], c = timed(lambda ds=ds, kw=kw: ds.x.edm.xmap(
                    series_dim="series", backend="cpu", **kw), 1, gpu=False)
                row["max_abs_diff_rho"] = float(np.nanmax(abs(g.rho.values - c.rho.values)))
            km = kedm_gpu(args)
            tag = "chosen" if chosen else "fixed"
            if km is not None:
                r = rate.get(("kedm", tag))
                if chosen:
                    def run_k(km=km, d32=d32):
                        edims = [int(km.edim(np.ascontiguousarray(d32[:, i]), E_max=10))
                                 for i in range(d32.shape[1])]
                        return km.xmap(d32, edims)
                else:
                    def run_k(km=km, d32=d32, N=N, Ef=Ef):
                        return km.xmap(d32, [Ef] * N)
                rk = peer(args, row, "kedm_gpu", run_k, est=r * unit if r else None)
                if "kedm_gpu" in row:
                    rate[("kedm", tag)] = row["kedm_gpu"] / unit
                if rk is not None and not chosen:
                    row["max_abs_diff_rho_kedm"] = float(np.nanmax(abs(
                        np.asarray(rk, float) - g.rho.transpose("library", "target").values)))
            if not chosen and not args.no_fastccm:
                # its default memory budget (1 GB) and a tuned one (16 GB), both
                for dt, gb in (("float32", None), ("float32", 16), ("float64", None)):
                    key = f"fastccm_{dt}" + ("" if gb is None else f"_{gb}gb")
                    r = rate.get(key)
                    rf = peer(args, row, key, fastccm_peer(X, Ef, dt, args.peer_device, gb),
                              est=r * unit if r else None)
                    if key in row:
                        rate[key] = row[key] / unit
                    if rf is not None:
                        row[f"max_abs_diff_rho_{key}"] = float(np.nanmax(abs(
                            rf - g.rho.transpose("library", "target").values)))
            print("  ", row, flush=True)
            rows.append(row)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu-limit", type=float, default=60.0)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--cases", default="smap,simplex,embed,xmap")
    ap.add_argument("--sizes", default="", help="simplex L values, comma separated")
    ap.add_argument("--no-kedm", action="store_true", help="no kEDM GPU build peer")
    ap.add_argument("--no-cpu", action="store_true", help="no xedm CPU simplex timings")
    ap.add_argument("--no-fastccm", action="store_true", help="no fastccm peer")
    ap.add_argument("--peer-device", default="cuda", help="fastccm's device (tests: cpu)")
    ap.add_argument("--peer-warm", action="store_true",
                    help="a peer whose first call takes over 2 s is timed on a second call "
                         "(warm; the first kept as <peer>_first) instead of the first")
    ap.add_argument("--peer-limit", type=float, default=40.0,
                    help="skip a peer call estimated (from the smaller sizes) above this")
    ap.add_argument("--xmap-sizes", default="", help="xmap NxL sizes, e.g. 10000x1450,...")
    ap.add_argument("--xmap-fixed-E", type=int, default=3, help="xmap's fixed-E rows' E")
    ap.add_argument("--xmap-chosen", default="both", choices=["both", "fixed", "chosen"])
    ap.add_argument("--lookup-sizes", default="", help="xmap_lookup NxL sizes")
    ap.add_argument("--lookup-variants", default="general,tile1,ytile",
                    help="lookup kernels to time: general, tileP (P column pairs per thread), "
                    "ytile")
    ap.add_argument("--lookup-general-max", type=int, default=10000,
                    help="largest N at which the general lookup kernel is timed too")
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="seconds from the start after which no new row starts (0: none)")
    args = ap.parse_args(argv)
    args.t_end = time.time() + args.deadline if args.deadline > 0 else None
    xedm.set_options(progress=False)
    result = {"machine": machine(), "argv": sys.argv[1:]}

    class Rows(list):
        """Rows written to --out as each one lands (a run cut short keeps them)."""

        def append(self, row):
            super().append(row)
            if args.out:
                with open(args.out, "w") as f:
                    json.dump(result, f, indent=1)

    rows = Rows()
    result["rows"] = rows
    cases = args.cases.split(",")
    benches = {"simplex": bench_simplex, "embed": bench_embed, "smap": bench_smap,
               "xmap": bench_xmap, "lookup": bench_lookup}
    for name in cases:
        fn = benches[name]
        if True:
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
