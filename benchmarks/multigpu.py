#!/usr/bin/env python
"""Distributed xmap on 1, 2 and 4 GPUs in one run, and the whole-brain projection.

    PYTHONPATH=$PWD python3 benchmarks/multigpu.py --n 20000           # 1, 2, 4 GPUs
    PYTHONPATH=$PWD python3 benchmarks/multigpu.py --quick             # N = 2,000 smoke test
    PYTHONPATH=$PWD python3 benchmarks/multigpu.py --cpu-test          # no GPU: same code, CPU

What is timed, for k in ``--gpus`` (default 1,2,4; those beyond the visible GPUs are
skipped): a Dask cluster of one worker process per GPU (:func:`xedm.distributed.gpu_cluster`:
dask-cuda's ``LocalCUDACluster``, else one ``Nanny`` per GPU with its own
``CUDA_VISIBLE_DEVICES``; ``--no-dask-cuda`` forces the latter) runs ``xedm.xmap`` with
``backend="gpu"`` on ``xedm.datasets.whole_brain(N, L)`` (E chosen per series in
1..``--E-max``), chunked along the series by :func:`xedm.distributed.block_sizes` for k GPU
workers.  The data are persisted on the workers first and, unless ``--no-replicate``, copied to
every worker (as when each reads the input from a shared store; timed as ``load_s``, not
as the map), every worker runs a small map first (CuPy's kernels compiled or loaded from
its disk cache), then ``--repeat`` times (default 2; the row takes the best run, every run
is kept with its time to build the graph, and ``first_total_s`` is the first run's):

* **E stage**: ``xmap(...).E`` computed (one task per library chunk);
* **block stage**: ``xmap(..., E=E).rho`` persisted on the workers (one task per library
  block x target block; the tables of a block's libraries built once), waited for.

Checked: ``--check`` random series (their E, and rho of every pair among them) against an
in-process single-GPU ``xedm.xmap`` of those series (pairs are independent of the other
series, so that is the full map's value), equal to 1e-12.  Throughput: pairs (N^2) per
second of the block stage, and (pair x prediction row x neighbour) lookups per second.
Projection to the whole-brain shape (N = 101,729, L = 1,450): block stage as N^2, E stage
as N, from the measured k-GPU times.  The JSON (``--out``) is rewritten after every k, so a
run cut short keeps what it measured.  ``--zarr`` (on with ``--quick``) also runs the batch
CLI (``xedm xmap IN.zarr --out MAP.zarr --workers k --backend gpu``) on the data, twice (the
second run must find every block done: resume), and compares the stored map.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WHOLE_BRAIN = (101_729, 1450)
T0 = time.perf_counter()


def say(*args) -> None:
    print(f"[{time.perf_counter() - T0:7.1f} s]", *args, flush=True)


def machine(gpu: bool) -> dict:
    import dask
    import distributed

    import xedm

    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "numpy": np.__version__, "dask": dask.__version__,
            "distributed": distributed.__version__, "xedm": xedm.__version__,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    try:
        import dask_cuda

        info["dask_cuda"] = dask_cuda.__version__
    except Exception as err:  # noqa: BLE001
        info["dask_cuda"] = f"not importable: {type(err).__name__}: {err}"[:200]
    if gpu:
        import cupy

        from xedm.kernels.device import device_count, device_name

        info["cupy"] = cupy.__version__
        info["gpus"] = [device_name(i) for i in range(device_count())]
    return info


def lookups(E: np.ndarray, N: int, L: int) -> float:
    """(pair x prediction row x neighbour) lookups of the map: per target of E e, each of the
    N libraries' L - e + 1 rows takes e + 1 neighbours (tau = 1, Tp = 0, default knn)."""
    E = np.asarray(E, np.float64)
    return float(N * np.sum((L - E + 1) * (E + 1)))


def make_cluster(k: int, args):
    import dask

    from xedm.distributed import gpu_cluster

    if args.replicate:  # Dask's active memory manager would drop the replicas again
        with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
            return _make_cluster(k, args, gpu_cluster)
    return _make_cluster(k, args, gpu_cluster)


def _make_cluster(k: int, args, gpu_cluster):

    if args.cpu_test:  # the same plain cluster, CUDA_VISIBLE_DEVICES set to dummy ids
        return gpu_cluster(k, devices=[str(i) for i in range(k)], dask_cuda=False,
                           memory_limit="2GiB")
    return gpu_cluster(k, dask_cuda=False if args.no_dask_cuda else None)


def worker_cards(client, cpu: bool) -> list:
    if cpu:
        return ["cpu"] * len(client.scheduler_info()["workers"])
    from xedm.kernels.device import device_name

    names = client.run(lambda: (os.environ.get("CUDA_VISIBLE_DEVICES"), device_name(0)))
    return sorted(f"{v[1]} (CUDA_VISIBLE_DEVICES={v[0]})" for v in names.values())


def warm(client, x, backend, E_max, lib) -> None:
    """A small map of the data's first series on every worker: kernels compiled or loaded."""
    import xedm

    n = min(len(x), max(64, 4 * len(client.scheduler_info()["workers"])))
    small = x[:n].chunk({"series": max(1, n // (2 * len(client.scheduler_info()["workers"]))),
                         "time": -1})
    out = xedm.xmap(small, E_max=E_max, backend=backend, progress=False)
    E = out.E.compute()
    xedm.xmap(small, E=E.values, backend=backend, progress=False).rho.compute()


def warm_blocks(X: np.ndarray, E: np.ndarray, backend: str) -> int:
    """One block task on this worker, of the series X whose E cover the map's set of E:
    the lookup kernels of that set compiled (or loaded) before the block stage is timed."""
    from xedm.distributed import _xmap_block

    _xmap_block(X, X, E, tau=1, Tps=np.array([0]), knn=None, excl=0, backend=backend,
                method="exact", recall=None)
    return len(X)


def run_k(k: int, x, args, backend: str, ref: dict | None, deadline: float) -> dict:
    import distributed

    import xedm
    from xedm.distributed import block_sizes

    N, L = x.shape
    row = {"gpus": k, "N": N, "L": L, "E_max": args.E_max, "backend": backend}
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = make_cluster(k, args)
    row["cluster"] = getattr(cluster, "xedm_kind", "?")
    client = distributed.Client(cluster)
    try:
        client.wait_for_workers(k, timeout=180)
        row["start_s"] = round(time.perf_counter() - t, 2)
        row["cards"] = worker_cards(client, args.cpu_test)
        row["worker_memory_limit_gib"] = sorted(
            round(w["memory_limit"] / 2**30, 1)
            for w in client.scheduler_info()["workers"].values())
        say(f"k={k}: {row['cluster']} cluster up in {row['start_s']} s: {row['cards']}")
        # GPU: the workers' free device memory, asked of them by block_sizes
        lib, tgt = block_sizes(N, L, E_max=args.E_max, workers=k, backend="gpu",
                               memory=2e9 if args.cpu_test else None)
        if args.block:
            lib = args.block
        row["blocks"] = {"library": lib, "target": tgt,
                         "tasks": -(-N // lib) * -(-N // tgt)}
        t = time.perf_counter()
        lazy = x.chunk({"series": lib, "time": -1}).persist()
        distributed.wait(lazy.data)
        if args.replicate:  # every worker holds every chunk (as when each reads the input)
            client.replicate(distributed.futures_of(lazy.data))
        row["load_s"] = round(time.perf_counter() - t, 2)
        row["replicated"] = bool(args.replicate)
        t = time.perf_counter()
        warm(client, x, backend, args.E_max, lib)
        row["warm_s"] = round(time.perf_counter() - t, 2)
        say(f"k={k}: blocks {lib} x {tgt} ({row['blocks']['tasks']} tasks); data on the "
            f"workers in {row['load_s']} s; warm-up {row['warm_s']} s")
        runs, rho = [], None
        with xedm.set_options(xmap_target_block=tgt):
            for rep in range(max(1, args.repeat)):
                rho = None  # the last run's map released before the next is made
                run, rho, E = one_pass(client, lazy, args, backend, deadline, first=rep == 0)
                runs.append(run)
                say(f"k={k} run {rep + 1}: E stage {run['E_s']} s, block stage "
                    f"{run['blocks_s']} s (graph {run['graph_s']} s); E used: "
                    f"{np.bincount(E).tolist()}")
        best = min(runs, key=lambda r: r["E_s"] + r["blocks_s"])
        row["runs"] = runs
        row["E_s"], row["blocks_s"] = best["E_s"], best["blocks_s"]
        row["block_tasks"] = best["block_tasks"]
        row["first_total_s"] = round(runs[0]["E_s"] + runs[0]["blocks_s"], 3)
        if "block_sums_total" in best:
            row["block_sums_total"] = best["block_sums_total"]
        row["total_s"] = round(row["E_s"] + row["blocks_s"], 3)
        row["pairs_per_s"] = N * N / row["blocks_s"]
        row["lookups_per_s"] = lookups(E, N, L) / row["blocks_s"]
        say(f"k={k}: block stage {row['blocks_s']} s: {row['pairs_per_s']:.3g} pairs/s, "
            f"{row['lookups_per_s']:.3g} lookups/s; E + blocks {row['total_s']} s")
        row["sink"] = args.sink
        if ref is not None and args.sink == "memory":
            idx = ref["idx"]
            got = rho[idx][:, idx].compute()
            got = np.asarray(got).reshape(len(idx), len(idx))
            row["check"] = {
                "series": len(idx), "pairs": len(idx) ** 2,
                "E_equal": bool(np.array_equal(E[idx], ref["E"])),
                "max_abs_diff": float(np.nanmax(np.abs(got - ref["rho"]))),
                "nan_equal": bool(np.array_equal(np.isnan(got), np.isnan(ref["rho"])))}
            row["check"]["ok"] = (row["check"]["E_equal"] and row["check"]["nan_equal"]
                                  and row["check"]["max_abs_diff"] <= 1e-12)
            say(f"k={k}: check against the in-process map: {row['check']}")
        if args.zarr and k == args.zarr_gpus and args.sink == "memory":
            row["zarr"] = zarr_check(x, k, backend, args, rho)
        del rho
    except Exception as err:  # noqa: BLE001  (recorded; the next k still runs)
        row["error"] = f"{type(err).__name__}: {err}"[:500]
        say(f"k={k}: FAILED: {row['error']}")
    finally:
        client.close()
        cluster.close()
    return row


def one_pass(client, lazy, args, backend, deadline, first):
    """One map of the persisted data: the E stage, then the block stage (timed apart)."""
    import distributed

    import xedm
    from xedm.distributed import forget_targets

    client.run(forget_targets)  # each run prepares its targets (no columns kept from the last)
    run = {}
    t = time.perf_counter()
    fut = client.compute(xedm.xmap(lazy, E_max=args.E_max, backend=backend,
                                   progress=False).E.data)
    E = np.asarray(fut.result(timeout=max(10.0, deadline - time.perf_counter())))
    run["E_s"] = round(time.perf_counter() - t, 3)
    if first:  # every worker: one small block whose targets use the map's set of E
        N = len(E)
        sel = sorted({int(np.flatnonzero(E == e)[0]) for e in np.unique(E)}
                     | set(range(min(N, 8))))
        t = time.perf_counter()
        client.run(warm_blocks, np.ascontiguousarray(lazy[sel].values), E[sel], backend)
        run["warm_blocks_s"] = round(time.perf_counter() - t, 2)
    with distributed.get_task_stream(client) as stream:
        # timed inside: the task stream's own round trips are not the map's
        t, t_wall = time.perf_counter(), time.time()
        rho = xedm.xmap(lazy, E=E, backend=backend, progress=False).rho.data
        run["graph_s"] = round(time.perf_counter() - t, 3)
        left = max(10.0, deadline - time.perf_counter())
        if args.sink == "discard":  # each block summed where it was computed
            sums = rho.map_blocks(_block_sum, chunks=tuple((1,) * len(c) for c in rho.chunks),
                                  dtype=np.float64)
            run["block_sums_total"] = float(client.compute(sums).result(timeout=left).sum())
        else:
            rho = client.persist(rho)
            distributed.wait(rho, timeout=left)
        run["blocks_s"] = round(time.perf_counter() - t, 3)
        t1_wall = time.time()
    run["block_tasks"] = task_summary(stream.data, t_wall, t1_wall)
    return run, rho, E


def _block_sum(b):
    """One block's nansum (``--sink discard``): the map computed, nothing kept."""
    return np.full((1, 1, 1), np.nansum(b))


def task_summary(data, t0=None, t1=None) -> dict:
    """Where the block stage's time went, from Dask's task stream: the seconds each worker
    spent computing block tasks, the tasks' longest and shortest, and the seconds of every
    other action (transfers between workers, the rechunk of the targets, ...); with the
    stage's wall-clock start ``t0`` and end ``t1``, each block task's (start, stop) from
    ``t0`` and the seconds from the last stop to ``t1``."""
    per_worker, durations, other, spans = {}, [], {}, []
    for rec in data:
        key = str(rec.get("key", ""))
        for ss in rec.get("startstops", ()):
            dur = float(ss["stop"] - ss["start"])
            if ss["action"] == "compute" and "xmap-block" in key:
                w = str(rec.get("worker", "?"))
                per_worker[w] = per_worker.get(w, 0.0) + dur
                durations.append(dur)
                if t0 is not None:
                    spans.append((round(ss["start"] - t0, 3), round(ss["stop"] - t0, 3),
                                  w.rsplit(":", 1)[-1]))
            else:
                name = ss["action"] + (":" + key.split("-")[0].strip("('\"") if
                                       ss["action"] == "compute" else "")
                other[name] = other.get(name, 0.0) + dur
    return {"compute_s_per_worker": sorted(round(v, 2) for v in per_worker.values()),
            "tasks": len(durations),
            "task_s_min_max": [round(min(durations), 2), round(max(durations), 2)]
            if durations else [], "other_s": {k: round(v, 2) for k, v in other.items()},
            **({"spans_from_start": sorted(spans),
                "after_last_stop_s": round(t1 - max(s[1] for s in spans) - t0, 3)}
               if spans and t1 is not None else {})}


def zarr_check(x, k, backend, args, rho) -> dict:
    """The batch CLI on the data (input and output Zarr stores), run twice: the second run
    resumes (every block found done); the stored map equals the benchmark's."""
    import xarray as xr

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.zarr"), os.path.join(tmp, "map.zarr")
        x.to_dataset(name="x").to_zarr(src)
        cmd = [sys.executable, "-m", "xedm.cli", "xmap", src, "--var", "x", "--series-dim",
               "series", "--E-max", str(args.E_max), "--out", dst, "--workers", str(k),
               "--backend", backend, "-q"]
        for run in ("first", "resume"):
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            out[f"{run}_s"] = round(time.perf_counter() - t, 2)
            out[f"{run}_rc"] = p.returncode
            out[f"{run}_says"] = (p.stdout.strip().splitlines() or [""])[-1][-300:]
            if p.returncode:
                out[f"{run}_stderr"] = p.stderr[-800:]
        if out.get("first_rc") == 0:  # 200 rows of the map (not all of it: memory)
            rows = np.sort(np.random.default_rng(2).choice(len(x), min(200, len(x)),
                                                           replace=False))
            stored = np.asarray(xr.open_zarr(dst)["rho"][rows].values)
            mine = np.asarray(rho[rows].compute()).reshape(stored.shape)
            out["max_abs_diff"] = float(np.nanmax(np.abs(stored - mine)))
            out["rows_compared"] = len(rows)
    say(f"zarr batch job on {k} worker(s): {out}")
    return out


def project(rows: list, N: int) -> dict:
    """The whole-brain shape from each measured k: block stage as N^2, E stage as N."""
    Nw, _ = WHOLE_BRAIN
    proj = {}
    for r in rows:
        if "blocks_s" in r:
            e = r["E_s"] * Nw / N
            b = Nw * Nw / r["pairs_per_s"]
            proj[f"{r['gpus']}_gpus"] = {"E_s": round(e, 1), "blocks_s": round(b, 1),
                                         "total_s": round(e + b, 1)}
    one = proj.get("1_gpus")
    if one and "4_gpus" not in proj:  # not measured: the ideal 4-GPU figure, marked so
        proj["4_gpus_ideal_from_1"] = {key: round(v / 4, 1) for key, v in one.items()}
    return proj


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20_000, help="series (default 20,000)")
    ap.add_argument("--L", type=int, default=1450, help="time points (default 1,450)")
    ap.add_argument("--E-max", dest="E_max", type=int, default=10)
    ap.add_argument("--gpus", default="1,2,4", help="GPU counts to run (default 1,2,4)")
    ap.add_argument("--block", type=int, default=None,
                    help="library block (default: block_sizes for k GPU workers)")
    ap.add_argument("--check", type=int, default=200,
                    help="series whose pairs are checked against an in-process map (0: none)")
    ap.add_argument("--quick", action="store_true", help="N = 2,000 (a smoke test) and --zarr")
    ap.add_argument("--cpu-test", action="store_true",
                    help="backend cpu on the same kind of cluster (no GPU needed); N = 300, "
                    "L = 400 unless given, k = 1, 2")
    ap.add_argument("--no-dask-cuda", action="store_true",
                    help="one Nanny per GPU with CUDA_VISIBLE_DEVICES, not dask-cuda")
    ap.add_argument("--zarr", action="store_true", help="also run the batch CLI into Zarr")
    ap.add_argument("--sink", default="memory", choices=["memory", "discard"],
                    help="memory: the map persisted on the workers (checked against an "
                    "in-process map); discard: each block summed where it was computed and "
                    "dropped (the compute throughput of maps larger than the workers' memory)")
    ap.add_argument("--repeat", type=int, default=2,
                    help="maps per GPU count (E stage + block stage each); the best is the "
                    "row's time, every run is kept (default 2: the first run pays each "
                    "worker's first use of the device at full size)")
    ap.add_argument("--no-replicate", dest="replicate", action="store_false",
                    help="leave each chunk on one worker (the block stage then moves every "
                    "chunk to every worker); default: every worker holds all the data before "
                    "the maps, as when each reads the input from a shared store")
    ap.add_argument("--time-limit", type=float, default=510.0,
                    help="seconds for the whole run; a k that would not fit is skipped")
    ap.add_argument("--out", default=None, help="JSON (default benchmarks/results/"
                    "multigpu_<card>x<most GPUs>.json, multigpu_cpu_test.json with --cpu-test)")
    args = ap.parse_args(argv)
    given = {a.split("=")[0] for a in (argv if argv is not None else sys.argv[1:])}
    if args.quick:
        args.n, args.zarr = (args.n if "--n" in given else 2000), True
    if args.cpu_test:
        args.n = args.n if "--n" in given else 300
        args.L = args.L if "--L" in given else 400
        args.gpus = args.gpus if "--gpus" in given else "1,2"
        args.check = min(args.check, 40)
    deadline = T0 + args.time_limit
    # the last resort against a hang (a cluster that never closes): tracebacks, then exit;
    # the JSON holds every k measured so far
    import faulthandler

    faulthandler.dump_traceback_later(args.time_limit + 60, exit=True)
    backend = "cpu" if args.cpu_test else "gpu"

    import xedm
    from xedm.kernels.device import device_count, device_name

    n_dev = device_count()
    if not args.cpu_test and n_dev == 0:
        print("no GPU visible (CuPy sees none): run with --cpu-test for the CPU path",
              file=sys.stderr)
        return 2
    want = [int(k) for k in args.gpus.split(",") if k.strip()]
    ks = want if args.cpu_test else [k for k in want if k <= n_dev]
    skipped = [k for k in want if k not in ks]
    args.zarr_gpus = max(ks)
    import re

    found = re.search(r"[HABLV]\d{2,3}", device_name(0) or "") if not args.cpu_test else None
    card = "cpu_test" if args.cpu_test else (found.group(0).lower() if found else "gpu")
    out = Path(args.out) if args.out else HERE / "results" / (
        f"multigpu_{card}x{max(ks)}.json" if not args.cpu_test else "multigpu_cpu_test.json")
    say(f"xedm {xedm.__version__} from {Path(xedm.__file__).parent}; {n_dev} GPU(s) "
        f"visible; running k = {ks}" + (f" (skipped {skipped}: not enough GPUs)"
                                        if skipped else ""))
    t = time.perf_counter()
    ds = xedm.datasets.whole_brain(args.n, args.L, seed=0)
    x = ds.x
    say(f"whole_brain({args.n}, {args.L}) in {time.perf_counter() - t:.1f} s")
    doc = {"benchmark": "multigpu", "command": " ".join([Path(sys.argv[0]).name] + (
        argv if argv is not None else sys.argv[1:])), "machine": machine(not args.cpu_test),
        "data": f"xedm.datasets.whole_brain({args.n}, {args.L}, seed=0)",
        "skipped_gpus": skipped, "rows": []}

    ref = None
    if args.check:
        rng = np.random.default_rng(1)
        idx = np.sort(rng.choice(args.n, min(args.check, args.n), replace=False))
        t = time.perf_counter()
        r = xedm.xmap(x[idx], E_max=args.E_max, backend=backend, progress=False)
        ref = {"idx": idx, "E": r.E.values, "rho": r.rho.values}
        doc["reference"] = {"series": len(idx), "seconds": round(time.perf_counter() - t, 2),
                            "what": "in-process xedm.xmap of the checked series, one GPU"}
        say(f"reference: in-process map of {len(idx)} series in {doc['reference']['seconds']} s")
        if not args.cpu_test:
            import cupy

            cupy.get_default_memory_pool().free_all_blocks()

    for k in ks:
        done = [r for r in doc["rows"] if "total_s" in r]
        left = deadline - time.perf_counter()
        if done:  # the last run's time, shared by k GPUs, plus start-up, with a margin
            last = done[-1]
            need = 1.5 * last["total_s"] * last["gpus"] / k + 60
            if need > left:
                say(f"k={k}: skipped, about {need:.0f} s needed and {left:.0f} s left")
                doc["rows"].append({"gpus": k, "skipped": f"time: {need:.0f} s > {left:.0f} s"})
                continue
        row = run_k(k, x, args, backend, ref, deadline)
        doc["rows"].append(row)
        base = next((r for r in doc["rows"] if r.get("gpus") == ks[0] and "total_s" in r), None)
        if base and "total_s" in row:
            row["scaling_vs_first"] = {
                "of": f"{ks[0]} GPU(s)",
                "total": round(base["total_s"] / row["total_s"], 3),
                "blocks": round(base["blocks_s"] / row["blocks_s"], 3),
                "E": round(base["E_s"] / row["E_s"], 3)}
            say(f"k={k}: scaling vs {ks[0]}: {row['scaling_vs_first']}")
        doc["projection_whole_brain"] = {"N": WHOLE_BRAIN[0], "L": WHOLE_BRAIN[1],
                                         "rule": "blocks as N^2, E stage as N, from the "
                                         "measured rows", **project(doc["rows"], args.n)}
        doc["elapsed_s"] = round(time.perf_counter() - T0, 1)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        say(f"wrote {out}")
    print(json.dumps({"rows": [{k: r.get(k) for k in ("gpus", "cards", "total_s", "E_s",
                                                       "blocks_s", "pairs_per_s",
                                                       "scaling_vs_first", "check", "error")}
                               for r in doc["rows"]],
                      "projection": doc.get("projection_whole_brain")}, indent=1,
                     default=str), flush=True)
    bad = [r for r in doc["rows"] if "error" in r or not r.get("check", {"ok": True})["ok"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
