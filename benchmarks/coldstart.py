#!/usr/bin/env python
"""Cold start on the GPU: the first call in a fresh process, before and after ``xedm.warmup``.

    PYTHONPATH=$PWD python3 benchmarks/coldstart.py                  # GPU (default)
    PYTHONPATH=$PWD python3 benchmarks/coldstart.py --backend cpu    # the same on numba

Every measurement is a fresh ``python`` process that imports xedm, times its first call of
one case, then a second identical call (warm: what the kernels cost without compiling):

1. **cold**: CuPy's kernel cache (``CUPY_CACHE_DIR``) and xedm's numba cache
   (``XEDM_CACHE_DIR``) are new, empty directories, one pair per case: everything the call
   needs is compiled in it;
2. **warm-up**: one process runs ``xedm.warmup(backend, E_max=10, functions=<the cases>)``
   into a new pair of cache directories (timed; its list of compiled variants kept);
3. **after warm-up**: each case again in a fresh process, on the warm-up's caches.

Cases (the issue's cold-start list): simplex (L = 20,000, E = 5, the sorted kNN path),
S-map (L = 2,000, E = 5, theta = 2), xmap (100 series, L = 1,450, E chosen in 1..10),
embed_dimension (L = 5,000, E_max = 10), ivf (simplex with ``neighbors="ivf"``, L = 20,000,
E = 5; GPU only).  Also the bare CUDA start (a CuPy array and one kernel, no xedm kernel),
which no warm-up removes.  The target (issue 26): the first simplex call <= 1 s after the
warm-up.  Writes ``benchmarks/results/coldstart_<card>.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: case -> (setup, timed call), run in the child with ``B`` the backend
CASES = {
    "simplex": ("arg = x(20000)", "xedm.simplex(arg, E=5, backend=B)"),
    "smap": ("arg = x(2000)", "xedm.smap(arg, E=5, theta=2.0, backend=B)"),
    "xmap": ("arg = xs(100, 1450)", "xedm.xmap(arg, E_max=10, backend=B, progress=False)"),
    "embed_dimension": ("arg = x(5000)", "xedm.embed_dimension(arg, E_max=10, backend=B)"),
    "ivf": ("arg = x(20000)", "xedm.simplex(arg, E=5, backend=B, neighbors='ivf')"),
}

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import xedm
t_import = time.perf_counter() - t0
case, B = sys.argv[1], sys.argv[2]

def xs(n, T):
    return xedm.datasets.whole_brain(n, T, n_sources=20, seed=0).x

def x(T):
    return xedm.datasets.lorenz63(T, subsample=5).x

if case == "cuda":  # the CUDA context and one small CuPy kernel: no xedm kernel
    import cupy
    env = {"cupy": cupy}
    setup, call = "", "(cupy.arange(10) * 2).sum().get()"
else:
    env = {"xedm": xedm, "B": B, "x": x, "xs": xs}
    setup, call = sys.argv[3], sys.argv[4]
exec(setup, env)
t = time.perf_counter(); eval(call, env); first = time.perf_counter() - t
t = time.perf_counter(); eval(call, env); second = time.perf_counter() - t
print("RESULT " + json.dumps({"import_s": round(t_import, 3), "first_s": round(first, 3),
                               "second_s": round(second, 3)}))
"""

WARM = r"""
import json, sys, time
import xedm
t = time.perf_counter()
info = xedm.warmup(sys.argv[1], E_max=10, functions=sys.argv[2].split(","))
info["wall_s"] = round(time.perf_counter() - t, 3)
print("RESULT " + json.dumps(info))
"""


def run(code: str, args: list, caches: tuple[str, str], timeout: float) -> dict:
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    env.update(CUPY_CACHE_DIR=caches[0], XEDM_CACHE_DIR=caches[1], XEDM_PROGRESS="0",
               PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                           text=True, timeout=timeout, env=env, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    wall = round(time.perf_counter() - t, 3)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            out = json.loads(line[7:])
            out["process_s"] = wall
            return out
    return {"error": (p.stderr or p.stdout)[-600:], "rc": p.returncode}


def fresh(tmp: str, name: str) -> tuple[str, str]:
    a, b = os.path.join(tmp, name, "cupy"), os.path.join(tmp, name, "numba")
    os.makedirs(a)
    os.makedirs(b)
    return a, b


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--cases", default=",".join(CASES), help="comma list of cases")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per process")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c in CASES
             and not (c == "ivf" and args.backend == "cpu")]
    doc = {"benchmark": "coldstart", "backend": args.backend, "python": sys.version.split()[0],
           "cases": {c: "; ".join(CASES[c]) for c in cases}, "cold": {}, "after_warmup": {}}
    card = "cpu"
    if args.backend == "gpu":
        try:
            import cupy

            name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
            doc["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            doc["cupy"] = cupy.__version__
            found = re.search(r"[HABLV]\d{2,3}", doc["gpu"])
            card = found.group(0).lower() if found else "gpu"
        except Exception as err:  # noqa: BLE001
            print(f"no GPU: {err}; use --backend cpu", file=sys.stderr)
            return 2
    out = Path(args.out) if args.out else HERE / "results" / f"coldstart_{card}.json"
    with tempfile.TemporaryDirectory(prefix="xedm-coldstart-") as tmp:
        if args.backend == "gpu":
            doc["cuda_start"] = run(CHILD, ["cuda", "gpu"], fresh(tmp, "cuda"), args.timeout)
            print("bare CUDA start:", doc["cuda_start"], flush=True)
        for c in cases:
            doc["cold"][c] = run(CHILD, [c, args.backend, *CASES[c]],
                                 fresh(tmp, f"cold-{c}"), args.timeout)
            print(f"cold {c}: {doc['cold'][c]}", flush=True)
        warm = fresh(tmp, "warm")
        info = run(WARM, [args.backend, ",".join(cases)], warm, max(args.timeout, 600))
        doc["warmup"] = info
        print(f"warm-up: {info.get('wall_s')} s, {len(info.get('variants', []))} variants, "
              f"errors: {info.get('errors') or info.get('error')}", flush=True)
        for c in cases:
            doc["after_warmup"][c] = run(CHILD, [c, args.backend, *CASES[c]], warm,
                                         args.timeout)
            print(f"after warm-up {c}: {doc['after_warmup'][c]}", flush=True)
    s = doc["after_warmup"].get("simplex", {}).get("first_s")
    doc["target_first_simplex_le_1s"] = None if s is None else bool(s <= 1.0)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}")
    rows = [(c, doc["cold"][c].get("first_s"), doc["after_warmup"][c].get("first_s"),
             doc["after_warmup"][c].get("second_s")) for c in cases]
    print(f"{'case':16s} {'cold first':>11s} {'after warm-up':>14s} {'second call':>12s}")
    for c, a, b, w in rows:
        print(f"{c:16s} {a!s:>11s} {b!s:>14s} {w!s:>12s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
