"""numba threading layers on xedm's kernels: TBB (xedm's choice: fork- and thread-safe) against
GNU OpenMP (numba's Linux default, which hangs a fork-based multiprocessing.Pool) and
workqueue (xedm's fallback where TBB is missing).

The layer is fixed per process, so each layer runs in its own interpreter, alternating, and the
best time per case over the rounds is kept (compile excluded: one warm-up call per case).

    python benchmarks/threading_layer.py --rounds 2 --json benchmarks/results/threading_layer.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CASE = r"""
import json, time, numba, numpy as np, xedm
xedm.set_options(progress=False)
x = xedm.datasets.logistic_map(10_000)
ds = xedm.datasets.coupled_logistic(2000)
net = xedm.datasets.many_series(100, 1000, seed=0)
sizes = np.linspace(100, 1900, 10).astype(int).tolist()
def best(f, n):
    f()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts)
out = {
    "simplex L=10,000 E=20": best(lambda: xedm.simplex(x, 20), 5),
    "embed_dimension L=10,000 E=1..20": best(lambda: xedm.embed_dimension(x, E_max=20), 5),
    "ccm L=2,000 10 sizes x 100 samples": best(
        lambda: ds.edm.ccm(["x", "y"], lib_sizes=sizes, E=2, samples=100, seed=1), 5),
    "xmap 100 x 1,000": best(lambda: net.x.edm.xmap(series_dim="series"), 3),
}
print(json.dumps({"layer": numba.threading_layer(), "seconds": out}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--layers", default="tbb,omp,workqueue")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    layers = args.layers.split(",")
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for layer in layers:
            env = dict(os.environ, NUMBA_THREADING_LAYER=layer)
            proc = subprocess.run([sys.executable, "-c", CASE], env=env, capture_output=True,
                                  text=True, check=True)
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            assert res["layer"] == layer, res
            for case, t in res["seconds"].items():
                row = best.setdefault(case, {})
                row[layer] = min(t, row.get(layer, t))
    print(f"{'case':40s}" + "".join(f"{la:>12s}" for la in layers))
    for case, row in best.items():
        print(f"{case:40s}" + "".join(f"{row[la]:12.3f}" for la in layers))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": f"{os.cpu_count()} cores", "rounds": args.rounds,
                       "best_seconds": best}, f, indent=1)


if __name__ == "__main__":
    main()
