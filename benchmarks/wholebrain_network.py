"""causal_network at whole-brain sizes: time, memory, precision and recall per N (issue 44).

Each N runs in a fresh process (its own peak memory): ``xedm.datasets.sparse_network(N, T)``
(1-3 drivers per series, the graph known); first a small network and a large one (200
series: the large path's kernels compiled, ``warmup_s``), then one plain ``xmap`` (the N^2
stage: timed after a first run at that size), then one ``causal_network`` (the whole call,
work limit off), its precision and recall against the graph, the result's size in memory
(an edge list past 1,000 series: causal_network's ``result="auto"``), the peak host memory
(max RSS) and, on the GPU, the bytes CuPy's memory pool holds at the end (its peak: freed
blocks stay cached).

    python benchmarks/wholebrain_network.py --sizes 1000,10000 --T 1450 --backend gpu \\
        --json benchmarks/results/wholebrain_network_h100.json
    python benchmarks/wholebrain_network.py --table benchmarks/results/wholebrain_network_h100.json

Beside it, the published figure of the xmap stage alone at the whole-brain shape (101,729 x
1,450): mpEDM (Ichinose et al.), 199 s on 512 nodes with 2,048 V100 GPUs, as quoted by
issue 44.  A size whose call fails (memory, the time limit) is recorded with its error.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

PUBLISHED = [{"tool": "mpEDM", "stage": "all-pairs cross map (xmap)", "N": 101729, "T": 1450,
              "seconds": 199.0, "hardware": "512 nodes, 2,048 V100 GPUs",
              "source": "as quoted by issue 44"}]


def one(N: int, T: int, backend: str | None, seed: int) -> dict:
    """Every figure of one size, in this process."""
    import xedm

    xedm.set_options(work_limit=None)
    gpu = backend == "gpu"
    sync = (lambda: __import__("cupy").cuda.Device().synchronize()) if gpu else (lambda: None)
    t0 = time.perf_counter()
    ds = xedm.datasets.sparse_network(N, T, seed=seed)
    out = {"N": N, "T": T, "backend": backend or "auto", "generate_s": time.perf_counter() - t0,
           "true_links": int(ds.sizes["edge"])}
    truth = np.unique(ds.driven.values.astype(np.int64) * N + ds.driver.values)
    small = xedm.datasets.sparse_network(8, 200, seed=1).x  # the kernels compiled first
    large = xedm.datasets.sparse_network(200, T, seed=1).x  # and a large network's path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        xedm.causal_network(small, seed=0, backend=backend, progress=False, surrogates=9)
        xedm.causal_network(large, seed=0, backend=backend, progress=False)
        out["warmup_s"] = time.perf_counter() - t
        times = []
        for _ in range(2):  # the first at this size compiles its variants
            sync()
            t = time.perf_counter()
            xedm.xmap(ds.x, "series", backend=backend, progress=False)
            sync()
            times.append(time.perf_counter() - t)
        out["xmap_s"], out["xmap_first_s"] = times[1], times[0]
        t = time.perf_counter()
        net = xedm.causal_network(ds.x, seed=0, backend=backend, progress=False)
        out["causal_network_s"] = time.perf_counter() - t
    out["ratio"] = out["causal_network_s"] / out["xmap_s"]
    out["result"] = net.attrs.get("result", "dense")
    if "edge" in net.dims:  # an edge list: the links' (library, target) positions
        on = net.link.values
        found = net.library_index.values[on] * N + net.target_index.values[on]
    else:
        li, ti = np.nonzero(net.link.values)
        found = li.astype(np.int64) * N + ti
    tp = int(np.isin(found, truth).sum())
    out.update(links=len(found), precision=tp / max(len(found), 1),
               recall=tp / max(len(truth), 1))
    out["result_gib"] = net.nbytes / 2**30
    out["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if gpu:
        import cupy as cp

        out["gpu_pool_gib"] = cp.get_default_memory_pool().total_bytes() / 2**30
        out["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return out


def table(doc) -> str:
    lines = ["| N | L | backend | one plain xmap | causal_network | ratio | precision | recall "
             "| result | peak host memory | GPU pool |", "|" + "---|" * 11]
    for r in doc["runs"]:
        if "error" in r:
            lines.append(f"| {r['N']:,} | {r['T']:,} | {r['backend']} | – | failed: "
                         f"{r['error'][:60]} | | | | | | |")
            continue
        def f(k, d=2, r=r):
            return f"{r[k]:.{d}f}" if k in r else "–"

        cells = [f"{r['N']:,}", f"{r['T']:,}", r.get("device", r["backend"]),
                 f"{f('xmap_s')} s", f"{f('causal_network_s', 1)} s", f"{f('ratio', 0)}x",
                 f("precision", 3), f("recall", 3), *(f"{f(k)} GiB" for k in
                                                      ("result_gib", "peak_rss_gib",
                                                       "gpu_pool_gib"))]
        lines.append("| " + " | ".join(cells) + " |")
    for p in doc.get("published", []):
        lines.append(f"\n{p['tool']} ({p['source']}): {p['stage']} at {p['N']:,} x {p['T']:,} "
                     f"in {p['seconds']:.0f} s on {p['hardware']}.")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--T", type=int, default=1450)
    ap.add_argument("--backend", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=3600.0, help="seconds per size")
    ap.add_argument("--json", default=None)
    ap.add_argument("--table", default=None, help="print the table of a JSON file and exit")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.table:
        print(table(json.load(open(args.table))))
        return None
    if args.one is not None:  # a child: one size, its figures as JSON on the last line
        print(json.dumps(one(args.one, args.T, args.backend, args.seed)))
        return None
    doc = {"date": _dt.datetime.now().isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": platform.python_version()},
           "command": " ".join(["benchmarks/wholebrain_network.py", *(argv or sys.argv[1:])]),
           "runs": [], "published": PUBLISHED}
    for N in (int(s) for s in args.sizes.split(",")):
        cmd = [sys.executable, __file__, "--one", str(N), "--T", str(args.T), "--seed",
               str(args.seed)] + (["--backend", args.backend] if args.backend else [])
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.limit)
            lines = done.stdout.strip().splitlines()
            run = (json.loads(lines[-1]) if done.returncode == 0 and lines else
                   {"N": N, "T": args.T, "backend": args.backend or "auto",
                    "error": (done.stderr.strip().splitlines() or ["no output"])[-1]})
        except subprocess.TimeoutExpired:
            run = {"N": N, "T": args.T, "backend": args.backend or "auto",
                   "error": f"over {args.limit:.0f} s"}
        doc["runs"].append(run)
        print(json.dumps(run), flush=True)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(doc, fh, indent=2)
    print(table(doc))
    return doc


if __name__ == "__main__":
    main()
