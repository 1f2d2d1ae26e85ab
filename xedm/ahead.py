"""The CPU kernels a session uses, compiled ahead: the work list, and the build of the
precompiled kernels a wheel ships.

:data:`STEPS` is what a CPU session runs on first contact (the README's quick start, ``xedm
demo``, the tutorials' calls) as small calls, one per public function and code path.  Two
things run it:

* ``xedm warmup --backend cpu`` (:func:`xedm.warmup`): in this process, into the user's numba
  cache, with a progress bar;
* ``python -m xedm.ahead build DIR`` (run by ``setup.py`` when a wheel is built): for each
  portable target (``x86-64-v4``, ``x86-64-v3``: :mod:`xedm.kernels._shipped`), in worker
  processes that compile into their own folders, merged into ``DIR/<target>`` with a
  ``manifest.json``; a current build of the same sources is reused.  Numba's cache files
  are per function; two processes writing one function's index could pair an entry with the
  other's object code, so each worker writes apart and the merge renumbers the entries.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

#: name -> (weight (seconds to compile cold, 2-core VM), code run with ``xedm`` and ``np``
#: imported).  Sizes pick the code paths a small session meets (brute-force kNN, the
#: direct-sum and diagonal kNN kernels, E = 1's own sort, every S-map solver).
STEPS = {
    "datasets": (9, "xedm.datasets.coupled_logistic(1000); xedm.datasets.many_series(10, 300);"
                    "xedm.datasets.logistic_map(2000); xedm.datasets.lorenz63(2000);"
                    "xedm.datasets.whole_brain(20, 400, n_sources=4, seed=0)"),
    "embed_dimension": (2, "ds = xedm.datasets.coupled_logistic(1000);"
                           "ds.edm.embed_dimension(columns='y', E_max=8);"
                           "ds.x.edm.embed_dimension(E_max=10)"),
    "simplex": (3, "ds = xedm.datasets.coupled_logistic(1000);"
                    "ds.edm.simplex(columns='x', target='x', E=3, lib=slice(0, 499),"
                    " pred=slice(500, 999)); ds.x.edm.simplex(E=1); ds.x.edm.simplex(E=8);"
                    "ds.edm.simplex(columns=['x', 'y'], target='y', E=2)"),
    "smap": (20, "ds = xedm.datasets.coupled_logistic(1000);"
                 "ds.edm.predict_nonlinear(columns='x', E=3);"
                 "ds.x.edm.smap(E=3, theta=2.0); ds.x.edm.smap(E=3, theta=2.0, generate_steps=50);"
                 "ds.x.edm.smap(E=1, theta=0.0, singular_values=True);"  # the SVD solver
                 "ds.edm.multiview(columns=['x', 'y'], target='x', E=2);"
                 "ds.x.edm.predict_interval(E=3)"),
    "ccm": (5, "ds = xedm.datasets.coupled_logistic(1000);"
                "ds.edm.ccm(['x', 'y'], lib_sizes=[10, 50, 200, 900], E=2, samples=20,"
                " progress=False);"
                "ds.edm.ccm(['x', 'y'], lib_sizes=[10, 50, 200, 900], E=2, samples=20, seed=1,"
                " surrogates=9, progress=False)"),
    "xmap": (15, "net = xedm.datasets.many_series(10, 300);"
                 "net.x.edm.xmap(series_dim='series', progress=False);"
                 "net.x.edm.xmap(series_dim='series', E=3, progress=False);"
                 "net.x.edm.xmap(series_dim='series', surrogates=9, seed=0, progress=False);"
                 "ds = xedm.datasets.coupled_logistic(1000);"
                 "ds.edm.xmap(columns=['x', 'y'], E=2, Tp=list(range(-5, 3)))"),
    "causal_network": (60, "net = xedm.datasets.many_series(10, 300);"
                           "net.x.edm.causal_network(series_dim='series', progress=False)"),
    "rqa": (30, "x = xedm.datasets.logistic_map(2000);"
                "x.edm.rqa(E=3, recurrence_rate=0.05, progress=False);"
                "x.edm.rqa(E=5, tau=3, recurrence_rate=0.05, progress=False);"
                "ds = xedm.datasets.coupled_logistic(1000);"  # cross recurrence
                "ds.edm.rqa('x', other='y', E=2, eps=0.3, progress=False);"
                # over 2e7 distances: the threshold from sampled pairs
                "xedm.datasets.logistic_map(7000).edm.rqa(E=3, recurrence_rate=0.05,"
                " progress=False)"),
    "sweeps": (40, "ds = xedm.datasets.coupled_logistic(1000);"
                   "ds.x.edm.predict_tau(E=3, tau_max=3); ds.x.edm.predict_exclusion_radius(E=3);"
                   "ds.x.edm.skill_grid(E=[2, 3], theta=[0.5, 2.0]);"
                   # a finite knn: every Tp and theta from one table (smap_grid)
                   "ds.x.edm.skill_grid(E=[1, 3], tau=[1, 2], Tp=[1, -2], theta=[0.0, 2.0],"
                   " knn=8);"
                   "ds.x.edm.test_nonlinearity(E=3, surrogates=9, seed=0)"),
    "recurrence": (10, "x = xedm.datasets.logistic_map(1000);"
                       "x.edm.recurrence_plot(E=3, recurrence_rate=0.05);"
                       "x.edm.recurrence_network(E=3, recurrence_rate=0.05)"),
    # long series (the kd-tree of neighbors="auto"), E = 1 (its own sort) and E = 10
    "paths": (100, "xedm.warmup('cpu', functions=['simplex', 'embed_dimension', 'smap', 'ccm',"
                  " 'xmap'], lengths=[8000], session=False)"),
    "surrogates": (3, "x = xedm.datasets.coupled_logistic(1000).x;"
                      "[x.edm.surrogates(m, n=9, seed=0)"
                      " for m in ('shuffle', 'ebisuzaki', 'twin')];"
                      "x.edm.surrogates('block', n=9, seed=0, block_length=20)"),
}


def run_step(name: str) -> None:
    """Run one of :data:`STEPS` in this process."""
    import numpy as np

    import xedm

    exec(STEPS[name][1], {"xedm": xedm, "np": np})  # noqa: S102  (our own list)


def run_steps(names=None) -> dict:
    """Run the named steps (default all) in this process; seconds per step, and the errors."""
    seconds, errors = {}, {}
    for name in list(STEPS) if names is None else names:
        t = time.perf_counter()
        try:
            run_step(name)
        except Exception as err:  # noqa: BLE001  (said in the result: a build fails on it)
            errors[name] = f"{type(err).__name__}: {err}"
        seconds[name] = round(time.perf_counter() - t, 3)
    return {"seconds": seconds, "errors": errors}


def sources_hash() -> str:
    """A hash of every source file of the package: a shipped build made from other sources
    is built again (its entries would not load: numba checks each file's hash)."""
    import hashlib

    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs[:] = sorted(d for d in dirs if d not in ("_precompiled", "__pycache__"))
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as fh:
                    h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


def current(out: str) -> bool:
    """Whether ``out`` holds a shipped build of these sources for this numba and Python."""
    import numba

    from .kernels import _shipped

    try:
        with open(os.path.join(out, "manifest.json")) as f:
            man = json.load(f)
    except (OSError, ValueError):
        return False
    return (man.get("sources") == sources_hash() and man.get("numba") == numba.__version__
            and man.get("python") == _shipped.PYTHON
            and man.get("steps") == list(STEPS))


def _groups(names, n):
    """``names`` in ``n`` groups of about equal weight (largest first, to the lightest)."""
    groups = [[] for _ in range(n)]
    load = [0] * n
    for name in sorted(names, key=lambda m: -STEPS[m][0]):
        i = load.index(min(load))
        groups[i].append(name)
        load[i] += STEPS[name][0]
    return [g for g in groups if g]


def _merge(parts, out) -> int:
    """Merge the workers' cache folders into ``out``; the number of entries."""
    import pickle

    import numba
    from numba.core.caching import IndexDataCacheFile

    n = 0
    for part in parts:
        for folder, _, files in os.walk(part):
            rel = os.path.relpath(folder, part)
            for f in sorted(files):
                if not f.endswith(".nbi"):
                    continue
                src_path = os.path.join(folder, f)
                with open(src_path, "rb") as fh:
                    if pickle.load(fh) != numba.__version__:
                        continue
                    stamp, overloads = pickle.loads(fh.read())
                base = f[:-len(".nbi")]
                src = IndexDataCacheFile(folder, base, stamp)
                dst = IndexDataCacheFile(os.path.join(out, rel), base, stamp)
                os.makedirs(os.path.join(out, rel), exist_ok=True)
                for key, name in overloads.items():
                    dst.save(key, src._load_data(name))
                    n += 1
    return n


def resolve_targets(which=None) -> list:
    """The targets to build: ``"all"`` (default: every target of this machine), ``"host"`` (the
    best this CPU runs: an install used here only) or a comma list of names."""
    from .kernels import _shipped

    every = list(_shipped.targets())
    if not every:
        raise ValueError(f"no portable target for this machine ({_shipped._machine()}): "
                         "nothing to ship")
    if which in (None, "", "all"):
        return every
    if which == "host":
        host = _shipped.host_targets()
        return host[:1] or every[-1:]
    names = [n.strip() for n in str(which).split(",") if n.strip()]
    unknown = sorted(set(names) - {t[0] for t in every})
    if unknown:
        raise ValueError(f"targets: unknown {unknown}; choose among {[t[0] for t in every]}, "
                         "'all' or 'host'")
    return [t for t in every if t[0] in names]


def build(out: str, workers: int | None = None, names=None, quiet: bool = False,
          targets=None, reuse: str | None = None) -> dict:
    """Compile the steps into ``out/<target>`` for each target (:func:`resolve_targets`),
    reusing a current build there or in ``reuse/<target>``; returns {target: manifest}."""
    done = {}
    for tgt in resolve_targets(targets):
        dest = os.path.join(out, tgt[0])
        for path in (dest, reuse and os.path.join(reuse, tgt[0])):
            if path and names is None and current(path):
                if os.path.abspath(path) != os.path.abspath(dest):
                    shutil.rmtree(dest, ignore_errors=True)
                    shutil.copytree(path, dest)
                if not quiet:
                    print(f"xedm.ahead: {tgt[0]}: reused {path}", flush=True)
                with open(os.path.join(dest, "manifest.json")) as f:
                    done[tgt[0]] = json.load(f)
                break
        else:
            done[tgt[0]] = _build_one(dest, tgt, workers, names, quiet)
    return done


def _build_one(out: str, tgt, workers, names, quiet) -> dict:
    """Compile the steps for one target into ``out`` (replaced); its manifest."""
    import numba

    from .kernels import _shipped

    names = list(STEPS) if names is None else list(names)
    workers = max(1, min(workers or os.cpu_count() or 1, 4, len(names)))
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="xedm-ahead-")
    try:
        procs, parts = [], []
        for i, group in enumerate(_groups(names, workers)):
            part = os.path.join(tmp, f"w{i}")
            parts.append(part)
            env = dict(os.environ, NUMBA_CPU_NAME=tgt[0], NUMBA_CPU_FEATURES=tgt[1],
                       XEDM_PROGRESS="0", XEDM_COMPILE_NOTICE="0", **{_shipped.BUILD_ENV: part})
            env.pop("NUMBA_CACHE_DIR", None)
            procs.append((group, subprocess.Popen(
                [sys.executable, "-m", "xedm.ahead", "run", *group], env=env,
                stdout=subprocess.PIPE, text=True)))
        seconds, errors = {}, {}
        for group, p in procs:
            stdout, _ = p.communicate()
            res = json.loads(stdout.strip().splitlines()[-1]) if p.returncode == 0 else {
                "seconds": {}, "errors": {g: f"worker exited {p.returncode}" for g in group}}
            seconds.update(res["seconds"])
            errors.update(res["errors"])
            if not quiet:
                print(f"xedm.ahead: {tgt[0]}: {', '.join(group)}: "
                      f"{sum(res['seconds'].values()):.0f} s", flush=True)
        if errors:
            raise RuntimeError(f"precompiling failed: {errors}")
        staged = os.path.join(tmp, "out")
        entries = _merge(parts, staged)
        manifest = {"xedm_ahead": 1, "numba": numba.__version__,
                    "python": _shipped.PYTHON, "machine": _shipped._machine(),
                    "cpu_name": tgt[0], "cpu_features": tgt[1], "steps": names,
                    "sources": sources_hash(),
                    "entries": entries, "workers": workers, "seconds": seconds,
                    "wall_seconds": round(time.perf_counter() - t0, 1)}
        with open(os.path.join(staged, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        if os.path.exists(out):
            shutil.rmtree(out)
        shutil.copytree(staged, out)
        return manifest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m xedm.ahead", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile the steps into DIR/<target> for each target")
    b.add_argument("out")
    b.add_argument("--targets", default="all", help="all (default), host, or a comma list")
    b.add_argument("--reuse", default=None, help="a folder whose current builds are copied")
    b.add_argument("--workers", type=int, default=None)
    b.add_argument("--steps", default=None, help="comma list (default all)")
    r = sub.add_parser("run", help="run steps in this process (a build's worker)")
    r.add_argument("steps", nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        print(json.dumps(run_steps(args.steps)))
        return 0
    names = None if args.steps is None else args.steps.split(",")
    for name, man in build(args.out, args.workers, names, targets=args.targets,
                           reuse=args.reuse).items():
        print(f"xedm.ahead: {man['entries']} kernels for {name} in {args.out}/{name} "
              f"({man['wall_seconds']} s to build)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
