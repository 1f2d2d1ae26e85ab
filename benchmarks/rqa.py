#!/usr/bin/env python
"""Benchmark xedm's RQA against pyrqa and AccRQA (CPU), and xedm's GPU path.

    python benchmarks/rqa.py cpu                          # N = 5,000, 20,000, 50,000
    python benchmarks/rqa.py cpu --sizes 2000 --quick     # seconds (used by the tests)
    python benchmarks/rqa.py gpu --out rqa_gpu.json       # N = 1,043,112 on every GPU

CPU rows: the logistic map (r = 3.9, x0 = 0.4), E = 5, tau = 3, Euclidean norm, Theiler
window 1, l_min = v_min = w_min = 2, one eps for every N (the exact eps of RR = 0.05 at the
first size, rounded to 4 digits to stay off distance ties; each row reports its RR).  Every
tool runs in this process on the same data:

- xedm: ``xedm.rqa(..., backend="cpu")``, all 13 measures and the three histograms;
  numba's compilation (or cache load) is done once on tiny data before any timing.
- pyrqa: float64 time series (``TimeSeries(dtype=np.float64)``), OpenCL (pocl on the CPU),
  ``Classic`` analysis, ``theiler_corrector=1``; the time is ``RQAComputation.run()``.
  Its three histograms must equal xedm's exactly, and every measure recomputed in float64
  from pyrqa's histograms must equal xedm's to 1e-12 (pyrqa's own float32 measures are
  compared too, to 1e-5).
- ``--repeat k``: at each N, xedm then AccRQA are each timed k times, the fastest kept
  (every run is in ``xedm_runs_s`` / ``accrqa_runs_s``); both use every core (numba's and
  OpenMP's defaults), which is also their best setting.
- AccRQA (PyPI ``accrqa``, CPU platform): ``DET`` (DET, L, L_max, ENTR, RR) plus ``LAM``
  (LAM, TT, ...) calls, timed together.  AccRQA keeps the line of identity in DET, L and
  ENTR (Theiler 0) and leaves it out of L_max; it is compared with xedm's Theiler-0 values,
  obtained from the same histograms by adding the one line of length N'.

GPU rows: the x variable of ``xedm.datasets.lorenz63(1_043_112)`` (dt 0.01, RK4), E = 5,
tau = 3, eps for RR = 0.05 from a 2e6-pair sample; first GPU vs CPU histograms on a 30,000
point piece (all GPUs, odd tile, one GPU), then the full series on all GPUs (through
``xedm.rqa``) and on GPU 0 alone; the histograms of the two must be identical.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

MEASURES = ("RR", "DET", "L", "L_max", "DIV", "ENTR", "LAM", "TT", "V_max", "V_ENTR",
            "W", "W_max", "W_ENTR")


def logistic(n, r=3.9, x0=0.4):
    x = np.empty(n)
    x[0] = x0
    for i in range(1, n):
        x[i] = r * x[i - 1] * (1 - x[i - 1])
    return x


def machine():
    info = {"python": sys.version.split()[0], "platform": platform.platform(),
            "cpus": os.cpu_count()}
    try:
        info["loadavg"] = os.getloadavg()
        ps = subprocess.run(["ps", "-eo", "stat,pcpu,comm"], capture_output=True, text=True)
        busy = [ln for ln in ps.stdout.splitlines()[1:] if ln.split()[0].startswith("R")
                or float(ln.split()[1]) > 20]
        info["busy_processes"] = busy
    except Exception:  # pragma: no cover
        pass
    from importlib.metadata import PackageNotFoundError, version

    for mod in ("numpy", "numba", "xarray", "pyrqa", "accrqa", "cupy-cuda12x", "cupy-cuda13x"):
        try:
            info[mod] = version(mod)
        except PackageNotFoundError:
            info[mod] = None
    return info


def xedm_measures(res):
    return {k: float(res[k]) for k in MEASURES}


def theiler0(hd, n_states):
    h = np.array(hd, np.uint64)
    h[n_states] += 1
    return h


def run_pyrqa(x, eps):
    from pyrqa.analysis_type import Classic
    from pyrqa.computation import RQAComputation
    from pyrqa.metric import EuclideanMetric
    from pyrqa.neighbourhood import FixedRadius
    from pyrqa.settings import Settings
    from pyrqa.time_series import TimeSeries

    ts = TimeSeries(x, embedding_dimension=5, time_delay=3, dtype=np.float64)
    settings = Settings(ts, analysis_type=Classic, neighbourhood=FixedRadius(eps),
                        similarity_measure=EuclideanMetric, theiler_corrector=1)
    t = time.perf_counter()
    res = RQAComputation.create(settings, verbose=False).run()
    return time.perf_counter() - t, res


def run_accrqa(x, eps):
    import accrqa

    dist = accrqa.accrqaDistance("euclidean")
    cpu = accrqa.accrqaCompPlatform("cpu")
    t = time.perf_counter()
    det = accrqa.DET(x, 3, 5, 2, float(eps), dist, comp_platform=cpu, tidy_data=False).ravel()
    lam = accrqa.LAM(x, 3, 5, 2, float(eps), dist, comp_platform=cpu, tidy_data=False).ravel()
    dt = time.perf_counter() - t
    return dt, {"DET": det[0], "L": det[1], "L_max": det[2], "ENTR": det[3], "RR": det[4],
                "LAM": lam[0], "TT": lam[1]}


def cpu_rows(args):
    import xarray as xr

    import xedm
    from xedm.recurrence.measures import rqa_measures

    t = time.perf_counter()
    xedm.rqa(xr.DataArray(logistic(200), dims="time"), E=5, tau=3, eps=0.3, backend="cpu")
    warmup = time.perf_counter() - t
    x0 = xr.DataArray(logistic(args.sizes[0]), dims="time")
    eps = float(xedm.rqa(x0, E=5, tau=3, recurrence_rate=0.05, backend="cpu").eps)
    eps = float(f"{eps:.4g}")  # a short decimal: away from exact distance ties
    rows = []
    for n in args.sizes:
        x = logistic(n)
        da = xr.DataArray(x, dims="time")
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            res = xedm.rqa(da, E=5, tau=3, eps=eps, backend="cpu")
            times.append(time.perf_counter() - t)
        t_xedm = min(times)
        row = {"N": n, "n_states": n - 12, "eps": eps, "xedm_s": t_xedm, "xedm_runs_s": times,
               "xedm": xedm_measures(res)}
        hd, hv, hw = (res[v].values for v in ("diagonal_lines", "vertical_lines",
                                              "white_vertical_lines"))
        pad = np.zeros(1, np.uint64)
        if not args.no_accrqa and (args.accrqa_max is None or n <= args.accrqa_max):
            try:
                runs = [run_accrqa(x, eps) for _ in range(args.repeat)]
                t_acc, acc = min(r[0] for r in runs), runs[0][1]
                row["accrqa_runs_s"] = [r[0] for r in runs]
                m0 = rqa_measures(theiler0(np.concatenate([pad, hd]), n - 12),
                                  np.concatenate([pad, hv]), np.concatenate([pad, hw]),
                                  (n - 12) ** 2)
                row.update(accrqa_s=t_acc, accrqa=acc,
                           xedm_over_accrqa=t_xedm / t_acc,
                           accrqa_max_rel_diff={k: float(abs(acc[k] - m0[k]) / max(abs(m0[k]),
                                                1e-300)) for k in acc if k != "L_max"},
                           accrqa_L_max_vs_xedm_theiler1=[float(acc["L_max"]),
                                                          float(res.L_max)])
            except Exception as err:  # pragma: no cover
                row["accrqa_error"] = repr(err)
        if not args.no_pyrqa and (args.pyrqa_max is None or n <= args.pyrqa_max):
            try:
                t_py, pres = run_pyrqa(x, eps)
                ph = [np.asarray(h, np.uint64) for h in (pres.diagonal_frequency_distribution,
                                                        pres.vertical_frequency_distribution,
                                                        pres.white_vertical_frequency_distribution)]
                same = all(np.array_equal(a, b) for a, b in zip((hd, hv, hw), ph, strict=True))
                mp = rqa_measures(*(np.concatenate([pad, h]) for h in ph), (n - 12) ** 2)
                mx = row["xedm"]
                diff = max(abs(float(mp[k]) - mx[k]) / max(abs(mx[k]), 1e-300)
                           for k in MEASURES if np.isfinite(mx[k]))
                own = {"RR": pres.recurrence_rate, "DET": pres.determinism,
                       "L": pres.average_diagonal_line, "LAM": pres.laminarity,
                       "TT": pres.trapping_time, "W": pres.average_white_vertical_line}
                own_diff = max(abs(float(v) - mx[k]) / max(abs(mx[k]), 1e-300)
                               for k, v in own.items() if np.isfinite(mx[k]))
                row.update(pyrqa_s=t_py, pyrqa_over_xedm=t_py / t_xedm,
                           pyrqa_histograms_identical=bool(same),
                           pyrqa_measures_max_rel_diff_float64=float(diff),
                           pyrqa_own_float32_measures_max_rel_diff=float(own_diff))
            except Exception as err:  # pragma: no cover
                row["pyrqa_error"] = repr(err)
        rows.append(row)
        print(table_row(row), flush=True)
    return {"mode": "cpu", "warmup_s": warmup, "rows": rows}


def table_row(r):
    def f(key, fmt="{:.2f}"):
        return fmt.format(r[key]) if key in r else "-"

    return (f"N={r['N']:>7}  RR={r['xedm']['RR']:.4f}  xedm {f('xedm_s')} s  AccRQA "
            f"{f('accrqa_s')} s  pyrqa {f('pyrqa_s')} s  xedm/AccRQA {f('xedm_over_accrqa')}  "
            f"pyrqa/xedm {f('pyrqa_over_xedm', '{:.1f}')}  pyrqa hist identical "
            f"{r.get('pyrqa_histograms_identical', '-')}")


def gpu_rows(args):
    import cupy as cp
    import xarray as xr

    import xedm
    from xedm.kernels.rqa.gpu import line_histograms as gpu_hist
    from xedm.recurrence.measures import rqa_measures
    from xedm.recurrence.recurrence import RecurrenceProblem, line_histograms, thresholds
    from xedm.recurrence.threshold import eps_for_recurrence_rate

    xedm.set_options(work_limit=None)  # a million points is past the default guard
    ndev = cp.cuda.runtime.getDeviceCount()
    names = [cp.cuda.runtime.getDeviceProperties(d)["name"].decode() for d in range(ndev)]
    t = time.perf_counter()
    x = xedm.datasets.lorenz63(args.n).x.values
    t_data = time.perf_counter() - t
    prob = RecurrenceProblem.single(x, E=5, tau=3)
    t = time.perf_counter()
    eps_arr, how = eps_for_recurrence_rate(prob, [0.05], method="sample")
    eps = float(f"{float(eps_arr.ravel()[0]):.4g}")  # away from exact distance ties
    t_eps = time.perf_counter() - t
    out = {"mode": "gpu", "devices": names, "N": args.n, "n_states": prob.na, "eps": eps,
           "eps_method": how, "data_s": t_data, "eps_s": t_eps}
    thr = thresholds([eps], "euclidean", 1, 1)
    # warm-up: compile the kernels on every device
    t = time.perf_counter()
    small = RecurrenceProblem.single(x[:3000], E=5, tau=3)
    gpu_hist(small, thr, 0, None)
    out["compile_s"] = time.perf_counter() - t
    # exactness on a piece: all GPUs, odd tile, one GPU, against the CPU
    piece = RecurrenceProblem.single(x[:args.check_n], E=5, tau=3)
    cpu = line_histograms(piece, [eps], "euclidean", "cpu")
    checks = {}
    for label, kw in (("all_gpus", {}), ("tile_997", {"tile": 997}),
                      ("gpu0", {"devices": [0]})):
        g = gpu_hist(piece, thr, 0, kw.get("tile"), kw.get("devices"))
        checks[label] = all(np.array_equal(cpu[k], h) for k, h in
                            zip(("diagonal", "vertical", "white"), g, strict=True))
    out["check_n"] = args.check_n
    out["gpu_equals_cpu"] = checks
    print("exact vs CPU:", checks, flush=True)
    # full series, all GPUs, through the public function (all measures + histograms)
    da = xr.DataArray(x, dims="time")
    t = time.perf_counter()
    res = xedm.rqa(da, E=5, tau=3, eps=eps, backend="gpu", progress=False)
    out["all_gpus_s"] = time.perf_counter() - t
    out["measures"] = xedm_measures(res)
    print(f"N={args.n} on {ndev} GPU(s) {names}: {out['all_gpus_s']:.2f} s  "
          f"RR={out['measures']['RR']:.4f} DET={out['measures']['DET']:.4f} "
          f"LAM={out['measures']['LAM']:.4f}", flush=True)
    full = [res[v].values for v in ("diagonal_lines", "vertical_lines", "white_vertical_lines")]
    # histograms alone, all GPUs and GPU 0
    for label, devs in (("hist_all_gpus", None), ("hist_gpu0", [0])):
        if label == "hist_gpu0" and ndev == 1 and not args.single_too:
            continue
        t = time.perf_counter()
        h = gpu_hist(prob, thr, 0, None, devs)
        out[label + "_s"] = time.perf_counter() - t
        out[label + "_identical"] = all(np.array_equal(a[0, 0, 1:], b)
                                        for a, b in zip(h, full, strict=True))
        print(f"{label}: {out[label + '_s']:.2f} s identical={out[label + '_identical']}",
              flush=True)
    if "hist_gpu0_s" in out:
        out["speedup_all_over_one"] = out["hist_gpu0_s"] / out["hist_all_gpus_s"]
    m = rqa_measures(*(np.concatenate([[0], f]).astype(np.uint64) for f in full),
                     prob.na ** 2)
    out["elements_per_s_all_gpus"] = 1.5 * prob.na ** 2 / out["hist_all_gpus_s"]
    assert abs(float(m["DET"]) - out["measures"]["DET"]) < 1e-12
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["cpu", "gpu"])
    p.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000, 50000])
    p.add_argument("--no-pyrqa", action="store_true")
    p.add_argument("--no-accrqa", action="store_true")
    p.add_argument("--pyrqa-max", type=int, default=None)
    p.add_argument("--accrqa-max", type=int, default=None)
    p.add_argument("--n", type=int, default=1_043_112)
    p.add_argument("--check-n", type=int, default=30_000)
    p.add_argument("--single-too", action="store_true", help="also time GPU 0 alone")
    p.add_argument("--repeat", type=int, default=1,
                   help="CPU: time xedm and AccRQA this many times each, keep the fastest "
                        "(a shared machine's load then weighs less)")
    p.add_argument("--quick", action="store_true", help="no JSON unless --out")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    result = {"machine": machine(), "command": " ".join(sys.argv)}
    result.update(cpu_rows(args) if args.mode == "cpu" else gpu_rows(args))
    out = args.out
    if out is None and not args.quick:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = os.path.join(os.path.dirname(__file__), "results", f"rqa_{args.mode}_{stamp}.json")
    if out:
        with open(out, "w") as fh:
            json.dump(result, fh, indent=1, default=float)
        print("wrote", out)
    return result


if __name__ == "__main__":
    main()
