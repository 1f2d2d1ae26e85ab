#!/usr/bin/env python
"""skill_grid against looping the single sweeps over the same grid (xedm alone).

    python benchmarks/skill_grid.py                   # L = 10,000 (about a minute)
    python benchmarks/skill_grid.py --quick           # L = 1,000 (seconds)
    python benchmarks/skill_grid.py --json benchmarks/results/skill_grid.json

The grid is E x tau x Tp x theta on the x coordinate of Lorenz-63 (``xedm.datasets``) with
``knn`` neighbours (S-map).  The loop is what a user writes without ``skill_grid``: one
``predict_nonlinear`` (every theta in one call) per (E, tau, Tp).  ``skill_grid`` searches
once per tau for every E and reuses each (E, tau) table for every Tp and theta.  Both give
the same numbers: the largest |rho difference| is printed (0 expected: the same neighbours
in the same order).  Timings: best of ``--repeat`` calls after a warm-up call on small data
(numba compilation excluded).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np


def best_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="L = 1,000")
    p.add_argument("--L", type=int, default=10_000)
    p.add_argument("--knn", type=int, default=50)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    import xarray as xr

    import xedm

    L = 1_000 if args.quick else args.L
    E = [1, 2, 3, 4, 5]
    taus = [1, 2, 3]
    Tps = [1, 2, 3, 4]
    thetas = [0.0, 0.5, 1.0, 2.0, 4.0, 8.0]
    da = xr.DataArray(xedm.datasets.lorenz63(L).x.values, dims="time")
    small = da[:200]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xedm.set_options(progress=False)
        small.edm.skill_grid(E=E, tau=taus, Tp=Tps, theta=thetas, knn=args.knn)  # warm-up
        small.edm.predict_nonlinear(E=2, tau=2, Tp=2, theta=thetas, knn=args.knn)

        def grid():
            return da.edm.skill_grid(E=E, tau=taus, Tp=Tps, theta=thetas, knn=args.knn)

        def loop():
            return np.array([[[da.edm.predict_nonlinear(E=e, tau=t, Tp=tp, theta=thetas,
                                                        knn=args.knn).rho.values
                               for tp in Tps] for t in taus] for e in E])

        t_grid, g = best_of(grid, args.repeat)
        t_loop, rho_loop = best_of(loop, args.repeat)
    diff = float(np.nanmax(np.abs(g.rho.values - rho_loop)))
    cells = len(E) * len(taus) * len(Tps) * len(thetas)
    row = {"L": L, "knn": args.knn, "E": E, "tau": taus, "Tp": Tps, "theta": thetas,
           "cells": cells, "skill_grid_s": t_grid, "loop_s": t_loop,
           "speedup": t_loop / t_grid, "max_abs_rho_diff": diff,
           "best": {d: g.attrs[f"best_{d}"] for d in ("E", "tau", "Tp", "theta", "rho")}}
    print(f"skill_grid on {platform.node()} ({os.cpu_count()} cores), L = {L:,}, knn = "
          f"{args.knn}, {cells} cells (E {E}, tau {taus}, Tp {Tps}, theta {thetas})")
    print(f"  skill_grid            {t_grid:8.2f} s")
    print(f"  loop predict_nonlinear {t_loop:7.2f} s  ({len(E) * len(taus) * len(Tps)} calls)")
    print(f"  speedup {row['speedup']:.1f}x, max |rho difference| {diff:.2e}, best cell "
          f"{row['best']}")
    if args.json:
        payload = {"when": _dt.datetime.now().isoformat(timespec="seconds"),
                   "host": platform.node(), "cpu_count": os.cpu_count(),
                   "argv": sys.argv[1:] if argv is None else list(argv),
                   "xedm": xedm.__version__ if hasattr(xedm, "__version__") else None,
                   "rows": [row]}
        Path(args.json).write_text(json.dumps(payload, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
