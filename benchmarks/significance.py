#!/usr/bin/env python
"""Significance of cross maps: cost, calibration and power; xmap at fixed E against fastccm.

    python benchmarks/significance.py                 # every section (a few minutes)
    python benchmarks/significance.py --quick         # small sizes (seconds)
    python benchmarks/significance.py --json benchmarks/results/significance.json

Sections
- ``peers``: ``xedm.xmap`` at fixed E = 4 (float64) against fastccm 0.4.2
  (``PairwiseCCM(device="cpu").score_matrix``, its float32 default; PyTorch on the CPU) on
  the same data, in this process: the same matrix (full library, leave-one-out, Tp = 0;
  fastccm's is transposed and its targets are given as one-column embeddings so that it
  computes this one matrix).  Also the largest |rho difference| against fastccm in float64
  on the first case.  fastccm lives here rather than in ``compare.py``, whose columns are
  kEDM's and pyEDM's (and which is past the size at which DESIGN.md splits a module).
- ``cost``: one xmap with ``surrogates=100`` (ebisuzaki) as a ratio to the same xmap
  without, at N = 100, L = 1,000, with E chosen per series (the default) and at fixed E = 4.
- ``calibration``: independent AR(1) series (phi = 0.9, L = 300, 20 series: 380 ordered
  pairs), 99 ebisuzaki surrogates: the share of pairs with p < 0.05 (5% expected) next to
  the share with raw rho > 0.3, and the pairs with q <= 0.05, over ``--seeds`` data sets.
- ``power``: the coupled logistic pair (x drives y, ``beta_xy = 0``, L = 500), 99
  surrogates: p of the true direction (library y, target x) and of the reverse one, for
  xmap and ccm (at the largest lib_size), over ``--seeds`` initial conditions.

Timings: best of ``--repeat`` calls after a warm-up call (numba compilation excluded);
threads: every core for numba and for torch.
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
import xarray as xr

HERE = Path(__file__).resolve().parent


def best_of(fn, repeat):
    fn()  # warm-up: compilation, caches, first-touch allocations
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def peers(xedm, cases, repeat):
    try:
        import torch
        from fastccm import PairwiseCCM
        from fastccm.utils.utils import get_td_embedding_np
    except ImportError as exc:
        return {"skipped": f"fastccm not importable ({exc}); pip install fastccm==0.4.2"}
    torch.set_num_threads(os.cpu_count() or 1)
    rows = []
    E = 4
    for N, L in cases:
        da = xedm.datasets.many_series(N, L, seed=0).x
        X = da.transpose("series", ...).values
        t_x, rx = best_of(lambda da=da: xedm.xmap(da, series_dim="series", E=E, progress=False),
                          repeat)
        emb = [np.ascontiguousarray(get_td_embedding_np(X[i][:, None], E, 1)[:, :, 0])
               for i in range(N)]
        tgt = [np.ascontiguousarray(X[i][E - 1:, None]) for i in range(N)]
        cc = PairwiseCCM(device="cpu")  # float32, its default
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_f, rf = best_of(lambda cc=cc, emb=emb, tgt=tgt: cc.score_matrix(
                emb, tgt, exclusion_window=0, tp=0),
                              max(1, repeat - 1))
        row = {"N": N, "L": L, "E": E, "xedm_s": t_x, "fastccm_s": t_f, "ratio": t_x / t_f,
               "max_abs_diff_float32": float(np.nanmax(np.abs(rf[0].T - rx.rho.values)))}
        if not rows:
            cc64 = PairwiseCCM(device="cpu", dtype="float64")
            r64 = cc64.score_matrix(emb, tgt, exclusion_window=0, tp=0)
            row["max_abs_diff_float64"] = float(np.nanmax(np.abs(r64[0].T - rx.rho.values)))
        rows.append(row)
        print(f"  xmap N={N} L={L} E={E}: xedm {t_x:.3f} s, fastccm {t_f:.3f} s, "
              f"ratio {t_x / t_f:.2f}", flush=True)
    return {"rows": rows, "fastccm": _version("fastccm"), "torch": _version("torch")}


def cost(xedm, N, L, n_sur, repeat):
    da = xedm.datasets.many_series(N, L, seed=0).x
    out = []
    for E in (None, 4):
        t_plain, _ = best_of(lambda E=E: xedm.xmap(da, series_dim="series", E=E, progress=False),
                             repeat)
        t_sur, res = best_of(lambda E=E: xedm.xmap(da, series_dim="series", E=E, surrogates=n_sur,
                                               seed=1, progress=False), max(1, repeat - 1))
        out.append({"N": N, "L": L, "E": "chosen" if E is None else E, "surrogates": n_sur,
                    "plain_s": t_plain, "surrogates_s": t_sur, "ratio": t_sur / t_plain})
        print(f"  xmap N={N} L={L} E={'chosen' if E is None else E}: plain {t_plain:.2f} s, "
              f"{n_sur} surrogates {t_sur:.2f} s, ratio {t_sur / t_plain:.1f}", flush=True)
    return out


def calibration(xedm, seeds, n_series, T, n_sur):
    out = []
    off = ~np.eye(n_series, dtype=bool)
    for seed in range(seeds):
        X = xedm.datasets.ar1(n_series, T, 0.9, seed=100 + seed).values
        res = xr.DataArray(X, dims=("s", "time")).edm.xmap(series_dim="s", surrogates=n_sur,
                                                           seed=seed,
                                                          progress=False)
        p = res.p_value.values[off]
        out.append({"seed": 100 + seed, "share_p_below_0.05": float((p < 0.05).mean()),
                    "share_rho_above_0.3": float((res.rho.values[off] > 0.3).mean()),
                    "discoveries_q_0.05": int((res.q_value.values[off] <= 0.05).sum())})
        print(f"  AR(1) set {seed}: p<0.05 {out[-1]['share_p_below_0.05']:.3f}, "
              f"rho>0.3 {out[-1]['share_rho_above_0.3']:.3f}, "
              f"q<=0.05 {out[-1]['discoveries_q_0.05']}", flush=True)
    shares = [r["share_p_below_0.05"] for r in out]
    return {"n_series": n_series, "T": T, "phi": 0.9, "surrogates": n_sur, "sets": out,
            "mean_share_p_below_0.05": float(np.mean(shares)),
            "max_share_p_below_0.05": float(np.max(shares)),
            "mean_share_rho_above_0.3": float(np.mean([r["share_rho_above_0.3"] for r in out]))}


def power(xedm, seeds, T, n_sur):
    out = []
    for seed in range(seeds):
        ds = xedm.datasets.coupled_logistic(T, beta_xy=0.0, beta_yx=0.1,
                                            x0=0.2 + 0.05 * seed)
        cm = ds.edm.xmap(columns=["x", "y"], E=2, surrogates=n_sur, seed=seed, progress=False)
        cc = ds.edm.ccm(["x", "y"], lib_sizes=[20, 100, 250, T - 1], E=2, samples=20,
                        seed=seed, surrogates=n_sur, progress=False)
        last = cc.lib_size.values[-1]
        row = {"x0": 0.2 + 0.05 * seed,
               "xmap_p_true": float(cm.p_value.sel(library="y", target="x")),
               "xmap_p_reverse": float(cm.p_value.sel(library="x", target="y")),
               "ccm_p_true": float(cc.p_value.sel(library="y", target="x", lib_size=last)),
               "ccm_p_reverse": float(cc.p_value.sel(library="x", target="y", lib_size=last)),
               "ccm_kendall_p_true": float(cc.kendall_p.sel(library="y", target="x"))}
        out.append(row)
        print("  coupled logistic " + ", ".join(f"{k} {v:.3g}" for k, v in row.items()),
              flush=True)
    return {"T": T, "surrogates": n_sur, "rows": out}


def _version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=10, help="data sets for calibration/power")
    ap.add_argument("--only", default="peers,cost,calibration,power")
    ap.add_argument("--json", default=None, help="write the results to this path")
    args = ap.parse_args(argv)
    import xedm

    only = set(args.only.split(","))
    q = args.quick
    res = {"date": _dt.datetime.now().isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": sys.version.split()[0]},
           "xedm": xedm.__version__, "numpy": np.__version__, "command": " ".join(sys.argv)}
    if "peers" in only:
        print("xmap at fixed E against fastccm")
        cases = [(10, 300)] if q else [(100, 1_000), (100, 8_000), (400, 1_000)]
        res["peers"] = peers(xedm, cases, args.repeat)
    if "cost" in only:
        print("xmap with surrogates, as a ratio to one plain xmap")
        res["cost"] = cost(xedm, *((10, 300, 20) if q else (100, 1_000, 100)), args.repeat)
    if "calibration" in only:
        print("calibration on independent AR(1) series")
        res["calibration"] = calibration(xedm, 2 if q else args.seeds, 20, 300, 19 if q else 99)
    if "power" in only:
        print("power on the coupled logistic pair")
        res["power"] = power(xedm, 1 if q else min(args.seeds, 5), 500, 19 if q else 99)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=2))
        print(f"wrote {args.json}")
    return res


if __name__ == "__main__":
    main()
