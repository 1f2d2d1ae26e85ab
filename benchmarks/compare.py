#!/usr/bin/env python
"""Benchmark xedm against kEDM (PyPI ``kedm``, CPU build) and pyEDM (PyPI ``pyEDM``).

All three run in this one process on the same data; the table gives seconds, the ratios
``xedm/kEDM`` (lower is better for xedm, target <= 1) and ``pyEDM/xedm`` (higher is better),
and the largest difference in rho between the tools on that row.

    python benchmarks/compare.py                      # every row (minutes; the L=2^20 row too)
    python benchmarks/compare.py --quick              # small sizes, seconds (used by the tests)
    python benchmarks/compare.py --skip-big           # everything but simplex at L=2^20
    python benchmarks/compare.py --only simplex-10k   # rows whose name starts with this
    python benchmarks/compare.py --list               # row names
    python benchmarks/compare.py --json               # also write benchmarks/results/*.json
    python benchmarks/compare.py --only multiview --merge benchmarks/results/compare-final.json
                                                      # put these rows into an earlier run's JSON

This file is the entry point (command line, tools, the big row's child process, JSON); its
parts: ``_compare_data.py`` (the series), ``_compare_measure.py`` (timing, rho agreement,
``Row``), ``_compare_cases.py`` (the rows, ``Bench``), ``_compare_report.py`` (the table).

Rules of the measurement
- Every xedm function runs once on tiny data before anything is timed. That warm-up (numba
  compilation, or loading numba's on-disk cache on later runs) is reported once and is not
  part of any ratio.
- A timing is the best of ``--repeat`` calls (default 3) for calls under ~2 s, else one call.
- Threads: ``--threads N`` sets OMP_NUM_THREADS (kEDM/Kokkos, read once at ``import kedm``)
  and NUMBA_NUM_THREADS before any of the libraries is imported; pyEDM gets
  ``kdWorkers``/``numProcess``/``parallel`` = N. Default: every core.
- Conventions: pyEDM ``tau=-1`` == xedm/kEDM ``tau=1``; pyEDM rows ``"1 L"`` == xedm
  ``lib=None`` on a time coordinate 1..L; kEDM ``simplex(x, x)`` is leave-one-out. kEDM is
  float32, so its rho agrees to ~1e-5 (simplex) or ~1e-3 (S-map), not 1e-6.
- kEDM ``edim`` always uses the first half of the series as library and the second half as
  prediction set; the embed_dimension row gives xedm and pyEDM the same split.
- kEDM ``xmap`` uses the *target's* E for a pair, xedm the *library's*: the xmap rho
  comparison is therefore made on a few series with one common E (untimed).
- Missing pyEDM or kEDM only blanks their columns; missing xedm functions (``ccm``,
  ``xmap`` until they land) skip their rows with a note.
- The L=2^20 row runs xedm alone in a child process, so that its peak RSS
  (``resource.getrusage``) is its own; the target is < 4 GB.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

from _compare_cases import Bench
from _compare_data import as_dataarray, logistic
from _compare_measure import Row, retime
from _compare_report import json_default, print_table, versions

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"


# --------------------------------------------------------------------------- CLI
def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="xedm vs kEDM vs pyEDM timings and rho agreement",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="small sizes (seconds); used by tests")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="ROW",
        help="run rows whose name starts with ROW (repeatable, or comma-separated)",
    )
    p.add_argument("--skip-big", action="store_true", help="skip simplex at L=2^20")
    p.add_argument("--skip-pyedm", action="store_true", help="do not run pyEDM")
    p.add_argument("--skip-kedm", action="store_true", help="do not run kEDM")
    p.add_argument(
        "--repeat", type=int, default=3,
        help="best of N for calls under 2 s; calls under 0.5 s get N more after the row's "
        "other tools ran",
    )
    p.add_argument("--threads", type=int, default=None, help="threads for every tool")
    p.add_argument(
        "--json",
        nargs="?",
        const="auto",
        default=None,
        metavar="PATH",
        help="write results as JSON (default path benchmarks/results/compare-<time>.json)",
    )
    p.add_argument(
        "--merge",
        default=None,
        metavar="PATH",
        help="also put this run's rows into the JSON of an earlier run (rows of the same name "
        "replaced, new ones appended; the run's argv and time are recorded under 'merged')",
    )
    p.add_argument("--list", action="store_true", help="list row names and exit")
    # internal: the big row runs in a child process to measure its own peak RSS
    p.add_argument("--_child-big", dest="child_big", nargs=2, type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    only = []
    for item in args.only:
        only.extend(s.strip() for s in item.split(",") if s.strip())
    args.only = only
    return args


def _set_threads(n):
    if n is None:
        return
    for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(n)


# --------------------------------------------------------------------------- imports
def _import_tools(args):
    """Import the three tools (after the thread variables are set); None when absent."""
    import numpy as np  # noqa: F401

    tools = {"xedm": None, "kedm": None, "pyEDM": None}
    notes = {}
    try:
        import xedm

        tools["xedm"] = xedm
    except Exception as exc:  # the script must still report kEDM/pyEDM and say why
        notes["xedm"] = f"xedm not importable: {type(exc).__name__}: {exc}"
    if not args.skip_kedm:
        try:
            cpus = os.sched_getaffinity(0)
            import kedm

            # Kokkos binds the calling thread to core 0 at import (OMP_PROC_BIND=close); numba's
            # thread pool, started later from this thread, and any child process would inherit
            # that one-core mask. Give the main thread back every core.
            os.sched_setaffinity(0, cpus)
            tools["kedm"] = kedm
        except Exception as exc:
            notes["kedm"] = f"kEDM columns skipped: {type(exc).__name__}: {exc}"
    else:
        notes["kedm"] = "kEDM columns skipped (--skip-kedm)"
    if not args.skip_pyedm:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import pyEDM

            tools["pyEDM"] = pyEDM
        except Exception as exc:
            notes["pyEDM"] = f"pyEDM columns skipped: {type(exc).__name__}: {exc}"
    else:
        notes["pyEDM"] = "pyEDM columns skipped (--skip-pyedm)"
    return tools, notes

# --------------------------------------------------------------------------- child (big row)
def child_big(L, E):
    """Run xedm.simplex at L, E in this (fresh) process; print one JSON line."""
    os.sched_setaffinity(0, range(os.cpu_count()))  # never inherit a pinned parent's mask
    import numpy as np

    import xedm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        xedm.simplex(as_dataarray(logistic(100)), E=E)  # compile / cache load
        warm = time.perf_counter() - t0
        da = as_dataarray(logistic(L))
        rss_before = _rss_now()
        t0 = time.perf_counter()
        res = xedm.simplex(da, E=E)
        seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    if sys.platform == "darwin":
        peak //= 1024  # bytes already
    print(
        json.dumps(
            {
                "L": L,
                "E": E,
                "seconds": seconds,
                "warm_up_s": warm,
                "rho": float(np.asarray(res["rho"]).reshape(-1)[0]),
                "peak_rss_bytes": int(peak),
                "rss_before_bytes": int(rss_before),
                "data": "logistic map r=3.9",
            }
        )
    )


def _rss_now():
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

def main(argv=None):
    args = parse_args(argv)
    _set_threads(args.threads)
    if args.child_big:
        child_big(*args.child_big)
        return 0

    tools, notes = _import_tools(args)
    bench = Bench(args, tools, notes)
    plan = bench.plan()
    if args.list:
        for name, _ in plan:
            print(name)
        return 0
    selected = [
        (n, f)
        for n, f in plan
        if (not args.only or any(n.startswith(o) for o in args.only))
        and not (args.skip_big and n.startswith("simplex-1M"))
    ]
    if not selected:
        print(f"no row matches {args.only}; rows: {', '.join(n for n, _ in plan)}")
        return 2

    print(
        f"xedm benchmark {'(quick) ' if args.quick else ''}on {platform.node()}: "
        f"{os.cpu_count()} cores, threads={bench.threads}"
    )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions(tools).items()))
    for msg in notes.values():
        print(f"note: {msg}")
    warm, warmed = bench.warm_up()
    if warm is not None:
        print(
            f"xedm warm-up (numba compile, or cache load when cached): {warm:.2f} s "
            f"for {', '.join(warmed) or 'nothing'}; excluded from every ratio"
        )
    print()

    rows = []
    for name, fn in selected:
        t0 = time.perf_counter()
        try:
            row = fn()
            retime(row, args.repeat)
        except Exception as exc:  # a broken row must not hide the others
            row = Row(name, name, notes=[f"row failed: {type(exc).__name__}: {exc}"])
        rows.append(row)
        print(f"  done {name} in {time.perf_counter() - t0:.1f} s", flush=True)
    print()
    print_table(rows)

    if args.json or args.merge:
        payload = _payload(args, argv, bench, tools, notes, warm, rows)
    if args.merge:
        merge_rows(Path(args.merge), payload)
        print(f"merged {len(rows)} rows into {args.merge}")
    if args.json:
        path = (
            Path(args.json)
            if args.json != "auto"
            else RESULTS_DIR
            / (
                "compare-"
                + _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
                + ("-quick" if args.quick else "")
                + ".json"
            )
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, default=json_default))
        print(f"\nwrote {path}")
    return 0


def _payload(args, argv, bench, tools, notes, warm, rows):
    return {
        "when": _dt.datetime.now().isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "threads": bench.threads,
        "quick": args.quick,
        "argv": sys.argv[1:] if argv is None else list(argv),
        "versions": versions(tools),
        "tool_notes": notes,
        "xedm_warm_up_s": warm,
        "rows": [
            {**asdict(r), "xedm_over_kedm": r.x_over_k, "pyedm_over_xedm": r.p_over_x}
            for r in rows
        ],
    }


def merge_rows(path: Path, payload: dict) -> None:
    """Put ``payload``'s rows into the JSON at ``path`` (same name: replaced; new: appended),
    recording the run (argv, time, versions, row names) in its ``merged`` list."""
    old = json.loads(path.read_text())
    new = {r["name"]: r for r in payload["rows"]}
    rows = [new.pop(r["name"], r) for r in old.get("rows", [])]
    old["rows"] = rows + list(new.values())
    old.setdefault("merged", []).append({
        k: payload[k] for k in ("when", "host", "argv", "versions", "xedm_warm_up_s")
    } | {"rows": [r["name"] for r in payload["rows"]]})
    path.write_text(json.dumps(old, indent=2, default=json_default))


if __name__ == "__main__":
    sys.exit(main())
