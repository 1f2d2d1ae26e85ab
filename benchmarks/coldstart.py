#!/usr/bin/env python
"""Cold start: the first calls in a fresh process, on the GPU (CuPy) or the CPU (numba).

    PYTHONPATH=$PWD python3 benchmarks/coldstart.py                  # GPU (default)
    python benchmarks/coldstart.py --backend cpu                     # the CPU suite below
    python benchmarks/coldstart.py --table benchmarks/results/coldstart_cpu.json  # README table

**GPU** (``--backend gpu``).  Every measurement is a fresh ``python`` process that imports
xedm, times its first call of one case, then a second identical call (warm: what the kernels
cost without compiling):

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

**CPU** (``--backend cpu``, issue 45: the kernels a wheel ships compiled ahead for
x86-64-v3, ``xedm/_precompiled``).  Each part runs in each *mode*: ``shipped`` (the default
environment: the shipped kernels are used) and ``jit`` (``XEDM_PRECOMPILED=0``: every kernel
compiles for this CPU on first use, the behaviour before them).  Every process gets a new,
empty ``XEDM_CACHE_DIR`` and ``CUDA_VISIBLE_DEVICES=""`` (``backend="auto"`` is the CPU).

1. **cold** (the issue's table): one fresh process per mode runs the README's quick-start
   calls in order (:data:`COLD_ROWS`: ``import xedm``, embed_dimension, simplex,
   predict_nonlinear, ccm, xmap, causal_network, rqa, each data set on a row of its own),
   each timed on its first call (cold) and again (second: warm), with the kernels it
   compiled and those it loaded from the shipped cache.  Targets (shipped mode): every
   row <= 3 s, their total <= 20 s;
2. **demo**: ``xedm demo`` in a fresh process and a new working directory, wall time;
3. **warm**: the kernels' speed, shipped against jit (issue 45: within 5 %): per mode one
   untimed process runs every case once (compiling into that mode's cache), then timed
   processes alternate shipped, jit, shipped, jit (``--rounds``), each case timed
   ``--repeats`` times after one untimed call; per case the median over all repeats of a mode
   and the ratio shipped / jit (flagged above 1.05);
4. **quick** (``--skip-quick-tests``; last, as its install may rebuild ``xedm/_precompiled``):
   in a new venv, the README's ``python -m pip install -e "<repo>[quick]"`` (pip may reuse
   its wheel cache), then ``python -m pytest -m quick -n 2 -q -p no:cacheprovider`` in the
   repository with an empty cache: both durations, their sum (target <= 300 s), pytest's
   counts (shipped mode only).

Writes ``benchmarks/results/coldstart_cpu.json`` (``--out``; ``--merge`` keeps the parts of
an existing file that this run does not redo); ``--table FILE`` prints the README's tables
of such a file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _coldstart_table import table

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


def gpu_main(args) -> int:
    """The GPU cold starts (the CPU: :func:`cpu_main`)."""
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




# ------------------------------------------------------------------ CPU (issue 45)

MODES = ("shipped", "jit")
#: the cold table, in the order one process runs it: (row, code); "import" is timed around
#: ``import xedm`` itself, the data set rows are the quick start's setup (timed apart)
COLD_ROWS = [
    ("import", "import xedm"),
    ("datasets", "ds = xedm.datasets.coupled_logistic(1000)"),
    ("embed_dimension", 'ds.edm.embed_dimension(columns="y", E_max=8)'),
    ("simplex", 'ds.edm.simplex(columns="x", target="x", E=3, lib=slice(0, 499), '
                'pred=slice(500, 999))'),
    ("predict_nonlinear", 'ds.edm.predict_nonlinear(columns="x", E=3)'),
    ("ccm", 'ds.edm.ccm(["x", "y"], lib_sizes=[10, 50, 200, 900], E=2, samples=20)'),
    ("many_series", "net = xedm.datasets.many_series(10, 300)"),
    ("xmap", 'net.x.edm.xmap(series_dim="series")'),
    ("causal_network", 'net.x.edm.causal_network(series_dim="series")'),
    ("logistic_map", "lm = xedm.datasets.logistic_map(2000)"),
    ("rqa", "lm.edm.rqa(E=3, recurrence_rate=0.05)"),
]
SETUP_ROWS = ("import", "datasets", "many_series", "logistic_map")  # run whatever --cases
#: the warm cases (medium sizes): case -> (setup, timed call)
WARM_CASES = {
    "simplex": ("x = xedm.datasets.lorenz63(20000, subsample=5).x", "x.edm.simplex(E=5)"),
    "smap": ("x = xedm.datasets.lorenz63(2000, subsample=5).x", "x.edm.smap(E=5, theta=2.0)"),
    "xmap": ("xs = xedm.datasets.whole_brain(100, 1450, n_sources=20, seed=0).x",
             'xs.edm.xmap(series_dim="series", E_max=10, progress=False)'),
    "embed_dimension": ("x = xedm.datasets.lorenz63(5000, subsample=5).x",
                        "x.edm.embed_dimension(E_max=10)"),
    "ccm": ("ds = xedm.datasets.coupled_logistic(2000)",
            'ds.edm.ccm(["x", "y"], lib_sizes=[100, 500, 1900], E=2, samples=50)'),
    "rqa": ("x = xedm.datasets.logistic_map(20000)",
            "x.edm.rqa(E=5, tau=3, recurrence_rate=0.05)"),
    "causal_network": ("net = xedm.datasets.many_series(20, 1000)",
                       'net.x.edm.causal_network(series_dim="series")'),
}
TARGETS = {"row_s": 3.0, "total_s": 20.0, "quick_tests_s": 300.0, "warm_ratio": 1.05}
QUICK_INSTALL = 'python -m pip install -e ".[quick]"'
QUICK_TESTS = "python -m pytest -m quick -n 2 -q -p no:cacheprovider"

#: every CPU child: the timed import, a count of numba compilations (a cache miss: loads from
#: the user's or the shipped cache do not count) and of loads from the shipped cache
CPU_PRELUDE = r"""
import json, os, statistics, sys, time
t0 = time.perf_counter()
import xedm
t_import = time.perf_counter() - t0
import numba
from numba.core import event
import xedm.ahead
from xedm.kernels import _shipped

class Count(event.Listener):
    n, names = 0, []
    def on_start(self, ev):
        Count.n += 1
        disp = (ev.data or {}).get("dispatcher")
        Count.names.append(getattr(getattr(disp, "py_func", None), "__qualname__", "?"))
    def on_end(self, ev):
        pass

event.register("numba:compile", Count())

def loads():
    return _shipped._state.get("hits", 0)

def timed(code, env, run=exec):
    # seconds, the kernels compiled (count and names), the loads from the shipped cache
    c, h, t = Count.n, loads(), time.perf_counter()
    run(code, env)
    sec = time.perf_counter() - t
    return sec, {"compiled": Count.n - c, "compiled_kernels": sorted(set(Count.names[c:])),
                 "shipped_loads": loads() - h}

def seen():
    ok, why = _shipped.usable()
    man = _shipped.manifest(os.path.basename(_shipped.build_dir())) or {}
    try:
        layer = numba.threading_layer()
    except Exception:
        layer = None
    return {"shipped_usable": ok, "shipped_why_not": why,
            "manifest": {k: man.get(k) for k in ("numba", "python", "cpu_name", "entries")},
            "shipped_build_current": xedm.ahead.current(_shipped.build_dir()),
            "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
            "threading_layer": layer, "xedm": xedm.__version__,
            "python": sys.version.split()[0], "cpu_count": os.cpu_count()}
"""

COLD_CPU = CPU_PRELUDE + r"""
env = {"xedm": xedm}
rows = {"import": {"cold_s": round(t_import, 3), "second_s": None}}
for name, code in json.loads(sys.argv[1]):
    if name == "import":
        continue
    cold, counts = timed(code, env)
    second, _ = timed(code, env)
    rows[name] = {"cold_s": round(cold, 3), "second_s": round(second, 4), **counts}
print("RESULT " + json.dumps({"rows": rows, "seen": seen()}))
"""

WARM_CPU = CPU_PRELUDE + r"""
repeats = int(sys.argv[1])
cases = {}
for name, (setup, call) in json.loads(sys.argv[2]).items():
    env = {"xedm": xedm}
    exec(setup, env)
    first, counts = timed(call, env, eval)
    res = {"first_s": round(first, 4), **counts}
    times = [timed(call, env, eval)[0] for _ in range(repeats)]
    if times:
        res["times_s"] = [round(t, 5) for t in times]
        res["median_s"] = round(statistics.median(times), 5)
    cases[name] = res
print("RESULT " + json.dumps({"cases": cases, "seen": seen()}))
"""


def cpu_env(mode: str, cache: str, progress: bool = True, pythonpath: bool = True) -> dict:
    """The environment of a CPU child: ``cache`` its (empty) numba cache, ``mode`` shipped or
    jit (``XEDM_PRECOMPILED=0``), no GPU for ``backend="auto"``."""
    env = dict(os.environ)
    for k in ("NUMBA_CACHE_DIR", "XEDM_PRECOMPILED", "XEDM_PROGRESS", "XEDM_COMPILE_NOTICE"):
        env.pop(k, None)
    env.update(XEDM_CACHE_DIR=cache, CUDA_VISIBLE_DEVICES="")
    if mode == "jit":
        env["XEDM_PRECOMPILED"] = "0"
    if not progress:
        env["XEDM_PROGRESS"] = "0"
    if pythonpath:
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_cmd(cmd: list, env: dict, cwd, timeout: float, keep: bool = False) -> dict:
    """Run ``cmd``: its wall seconds, exit status, a ``RESULT`` line's JSON, whether xedm's
    compile notice came, and the output's tails (``keep``, or on an error)."""
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=str(cwd))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "wall_s": round(timeout, 1)}
    out = {"wall_s": round(time.perf_counter() - t, 3), "rc": p.returncode,
           "compile_notice": "xedm: compiling" in p.stderr}
    found = [ln[7:] for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if found:
        out.update(json.loads(found[0]))
    if p.returncode:
        out["error"] = f"exit status {p.returncode}"
    if keep or p.returncode or (not found and cmd[1:2] == ["-c"]):  # a child said nothing
        out.update(stdout_tail=p.stdout[-1500:], stderr_tail=p.stderr[-1500:])
    return out


def new_dir(tmp: str, name: str) -> str:
    path = os.path.join(tmp, name)
    os.makedirs(path)
    return path


def cold_part(rows, modes, tmp, timeout) -> dict:
    out = {"rows": [list(r) for r in rows], "env": "a new empty XEDM_CACHE_DIR per mode; "
           "progress bars and the compile notice as a user sees them"}
    for mode in modes:
        res = run_cmd([sys.executable, "-c", COLD_CPU, json.dumps(rows)],
                      cpu_env(mode, new_dir(tmp, f"cold-{mode}")), ROOT, timeout)
        if "rows" in res:
            res["total_cold_s"] = round(sum(r["cold_s"] for r in res["rows"].values()), 3)
        out[mode] = res
        print(f"cold table, {mode}: total {res.get('total_cold_s')} s "
              f"(process {res.get('wall_s')} s) {res.get('error', '')}", flush=True)
        for name, r in res.get("rows", {}).items():
            print(f"  {name:18s} cold {r['cold_s']:8.3f}  second {r['second_s']!s:>8s}  "
                  f"compiled {r.get('compiled', '-')!s:>4s}  shipped loads "
                  f"{r.get('shipped_loads', '-')}", flush=True)
    s = out.get("shipped", {})
    if "rows" in s:
        over = [n for n, r in s["rows"].items() if r["cold_s"] > TARGETS["row_s"]]
        out["targets_met"] = {"rows_over_3s": over, "all_rows_le_3s": not over,
                              "total_le_20s": s["total_cold_s"] <= TARGETS["total_s"]}
    return out


def xedm_command() -> list:
    exe = Path(sys.executable).with_name("xedm")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "xedm"]


def demo_part(modes, tmp, timeout) -> dict:
    cmd = xedm_command() + ["demo"]
    out = {"command": "xedm demo", "argv": cmd}
    for mode in modes:
        cwd = new_dir(tmp, f"demo-{mode}")
        res = run_cmd(cmd, cpu_env(mode, new_dir(tmp, f"demo-{mode}-cache")), cwd, timeout)
        res["png"] = os.path.exists(os.path.join(cwd, "xedm-demo.png"))
        out[mode] = res
        print(f"xedm demo, {mode}: {res['wall_s']} s, PNG {res['png']} "
              f"{res.get('error', '')}", flush=True)
    return out


def pytest_counts(text: str) -> dict:
    """pytest's last summary line (``3 passed, 2 deselected in 4.1s``) as counts."""
    lines = [ln.strip("= ").strip() for ln in text.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    counts = {"summary": last}
    for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped|deselected|xfailed|"
                           r"xpassed|warnings?)", last):
        counts[{"errors": "error", "warnings": "warning"}.get(k, k)] = int(n)
    return counts


def quick_part(tmp, timeout) -> dict:
    """The README's quick tests as a new user runs them: a fresh clone of the committed
    repository (no kernels compiled ahead yet: the install compiles them), a new venv."""
    repo = os.path.join(tmp, "clone")
    subprocess.run(["git", "clone", "-q", str(ROOT), repo], check=True)
    venv = os.path.join(tmp, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    env = cpu_env("shipped", new_dir(tmp, "quick-cache"), pythonpath=False)
    check = ("import json, numba, xedm.ahead as a, xedm.kernels._shipped as s; "
             "print('RESULT ' + json.dumps({'numba': numba.__version__, "
             "'current': a.current(s.build_dir()), 'usable': s.usable()}))")
    out = {"install_command": QUICK_INSTALL, "tests_command": QUICK_TESTS,
           "note": "a fresh clone and a new venv; pip may reuse its wheel and HTTP caches; the "
                   "editable install compiles the kernels ahead into the clone (setup.py)"}
    pip = run_cmd([py, "-m", "pip", "--version"], env, ROOT, 60, keep=True)
    out["pip"] = pip.get("stdout_tail", "").strip()
    install = run_cmd([py, "-m", "pip", "install", "-e", ".[quick]"], env, repo, timeout)
    out["install_s"] = install["wall_s"]
    out["install_rc"] = install.get("rc")
    if "error" in install:
        out["install_error"] = install.get("stderr_tail") or install.get("error")
    out["precompiled_after"] = run_cmd([py, "-c", check], env, repo, 120)
    for k in ("precompiled_after",):
        out[k] = {key: out[k].get(key) for key in ("numba", "current", "usable", "error")}
    tests = run_cmd([py, "-m", "pytest", "-m", "quick", "-n", "2", "-q", "-p",
                     "no:cacheprovider"], env, repo, timeout, keep=True)
    out["tests_s"] = tests["wall_s"]
    out["tests_rc"] = tests.get("rc")
    out["pytest"] = pytest_counts(tests.get("stdout_tail", "") or tests.get("stderr_tail", ""))
    out["selected_none"] = tests.get("rc") == 5 or not any(
        out["pytest"].get(k) for k in ("passed", "failed", "error", "skipped"))
    if tests.get("rc") not in (0, None):
        out["tests_tail"] = (tests.get("stdout_tail", "") + tests.get("stderr_tail", ""))[-1500:]
    out["total_s"] = round(out["install_s"] + out["tests_s"], 3)
    out["le_300s"] = out["total_s"] <= TARGETS["quick_tests_s"]
    out["target_met"] = bool(out["le_300s"] and out["install_rc"] == 0
                             and out["tests_rc"] == 0 and not out["selected_none"])
    print(f"quick tests: install {out['install_s']} s (rc {out['install_rc']}), pytest "
          f"{out['tests_s']} s (rc {out['tests_rc']}): {out['pytest']['summary']}", flush=True)
    return out


def warm_part(cases, modes, tmp, rounds, repeats, timeout) -> dict:
    out = {"cases": {k: "; ".join(v) for k, v in cases.items()}, "repeats": repeats,
           "rounds": rounds, "timing": f"per process: one untimed call, then the median of "
           f"{repeats}; per mode: the median of all its repeats",
           "env": "XEDM_PROGRESS=0; per mode one cache, filled by the untimed warm-up process",
           "warmup": {}, "runs": []}
    caches = {m: new_dir(tmp, f"warm-{m}") for m in modes}
    arg = json.dumps(cases)
    for m in modes:
        res = run_cmd([sys.executable, "-c", WARM_CPU, "0", arg],
                      cpu_env(m, caches[m], progress=False), ROOT, timeout)
        out["warmup"][m] = res
        print(f"warm-up {m}: {res['wall_s']} s {res.get('error', '')}", flush=True)
    for r in range(rounds):
        for m in modes:
            res = run_cmd([sys.executable, "-c", WARM_CPU, str(repeats), arg],
                          cpu_env(m, caches[m], progress=False), ROOT, timeout)
            res.pop("seen", None)
            out["runs"].append({"mode": m, "round": r, **res})
            print(f"warm {m} round {r}: {res['wall_s']} s "
                  + " ".join(f"{c}={v.get('median_s')}" for c, v in res.get("cases", {}).items())
                  + f" {res.get('error', '')}", flush=True)
    summary, flagged = {}, []
    for c in cases:
        row = {}
        for m in modes:
            times = [t for run in out["runs"] if run["mode"] == m
                     for t in run.get("cases", {}).get(c, {}).get("times_s", [])]
            row[f"{m}_s"] = round(statistics.median(times), 5) if times else None
        if row.get("shipped_s") and row.get("jit_s"):
            row["ratio"] = round(row["shipped_s"] / row["jit_s"], 3)
            row["over_1_05"] = row["ratio"] > TARGETS["warm_ratio"]
            if row["over_1_05"]:
                flagged.append(c)
        row["shipped_compiled"] = out["warmup"].get("shipped", {}).get("cases", {}).get(
            c, {}).get("compiled")  # kernels not shipped: compiled for this CPU in both modes
        summary[c] = row
    out["summary"], out["flagged"] = summary, flagged
    return out


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_main(args) -> int:
    """The CPU suite (module docstring): cold table, demo, quick tests, warm speed."""
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    parts = [p for p in args.parts.split(",") if p]
    if args.skip_quick_tests:
        parts = [p for p in parts if p != "quick"]
    names = {n for n, _ in COLD_ROWS} | set(WARM_CASES)
    wanted = None if args.cases is None else [c for c in args.cases.split(",") if c]
    unknown = [c for c in wanted or [] if c not in names]
    unknown += [p for p in parts if p not in ("cold", "demo", "quick", "warm")]
    if bad or unknown:
        print(f"unknown modes/cases/parts: {bad + unknown}; modes {MODES}, cases "
              f"{sorted(names)}", file=sys.stderr)
        return 2
    rows = [r for r in COLD_ROWS if wanted is None or r[0] in wanted or r[0] in SETUP_ROWS]
    warm = {k: v for k, v in WARM_CASES.items() if wanted is None or k in wanted}
    out = Path(args.out) if args.out else HERE / "results" / "coldstart_cpu.json"
    doc = json.loads(out.read_text()) if args.merge and out.exists() else {}
    command = " ".join(["python", "benchmarks/coldstart.py", *sys.argv[1:]])
    doc["commands"] = doc.get("commands", [doc["command"]] if "command" in doc else [])
    doc["commands"].append(command)  # with --merge: every run that wrote a part
    import numba

    doc.update({"benchmark": "coldstart", "backend": "cpu",
                "command": command,
                "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "machine": {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(),
                            "platform": platform.platform()},
                "python": sys.version.split()[0], "numba": numba.__version__,
                "modes": {"shipped": "the default environment: the kernels shipped compiled "
                                     "ahead (xedm/_precompiled)",
                          "jit": "XEDM_PRECOMPILED=0: every kernel compiles for this CPU on "
                                 "first use (before issue 45)"},
                "targets": TARGETS})
    check = ("import xedm.ahead as a, xedm.kernels._shipped as s; "
             "print(a.current(s.build_dir()), s.usable())")
    seen = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          cwd=str(ROOT)).stdout.strip()
    doc["shipped_build_at_start"] = seen
    if not seen.startswith("True"):
        print(f"WARNING: xedm/_precompiled is not a current build of these sources ({seen}): "
              "shipped mode compiles what changed; first `python -m xedm.ahead build "
              "xedm/_precompiled` (or `pip install -e .`)", file=sys.stderr, flush=True)
    timeout = args.timeout or 1200.0
    with tempfile.TemporaryDirectory(prefix="xedm-coldstart-") as tmp:
        if "cold" in parts:
            doc["cold"] = cold_part(rows, modes, tmp, timeout)
        if "demo" in parts:
            doc["demo"] = demo_part(modes, tmp, timeout)
        if "warm" in parts and warm:
            doc["warm"] = warm_part(warm, modes, tmp, args.rounds, args.repeats, timeout)
        if "quick" in parts:  # last: its install may rebuild xedm/_precompiled (setup.py)
            doc["quick_tests"] = quick_part(tmp, max(timeout, 1800.0))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}\n")
    print(table(doc))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--cases", default=None,
                    help="comma list of cases (GPU: default all of CASES; CPU: rows of the "
                         "cold table and warm cases, default all)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per process (default 240 on the GPU, 1200 on the CPU)")
    ap.add_argument("--out", default=None)
    cpu = ap.add_argument_group("CPU (--backend cpu)")
    cpu.add_argument("--modes", default=",".join(MODES), help="comma list of shipped, jit")
    cpu.add_argument("--parts", default="cold,demo,quick,warm", help="comma list")
    cpu.add_argument("--skip-quick-tests", action="store_true")
    cpu.add_argument("--rounds", type=int, default=2, help="timed warm processes per mode")
    cpu.add_argument("--repeats", type=int, default=5, help="timed calls per warm case")
    cpu.add_argument("--merge", action="store_true",
                     help="keep the parts of an existing --out that this run does not redo")
    ap.add_argument("--table", default=None, help="print the README tables of a CPU JSON file")
    args = ap.parse_args(argv)
    if args.table:
        print(table(json.loads(Path(args.table).read_text())))
        return 0
    if args.backend == "cpu":
        return cpu_main(args)
    if args.cases is None:
        args.cases = ",".join(CASES)
    if args.timeout is None:
        args.timeout = 240.0
    return gpu_main(args)


if __name__ == "__main__":
    sys.exit(main())
