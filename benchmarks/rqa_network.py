"""Recurrence networks: xedm's recurrence_network against pyunicorn's RecurrenceNetwork on
three cases (logistic map, Lorenz x, Gaussian noise), the same float32-exact series and eps
(RR about 5 %), in one process: every measure's largest relative difference and the seconds.

    python benchmarks/rqa_network.py [--sizes 1000,2000] [--out FILE.json]

pyunicorn builds the dense N x N matrix (float32 distances); xedm never stores it.  The eps is
put in the widest gap between neighbouring distances near the 5 % quantile, so float32
rounding cannot move a pair across it and both tools see the same network.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import xarray as xr

import xedm

MEASURES = ("degree", "local_clustering", "global_clustering", "transitivity",
            "average_path_length", "assortativity", "link_density")


def series(name, n):
    if name == "logistic":
        x = xedm.datasets.logistic_map(n, transient=100).values
        E, tau = 3, 1
    elif name == "lorenz_x":
        x = xedm.datasets.lorenz63(n, dt=0.02).x.values / 10
        E, tau = 3, 4
    else:
        x = np.random.default_rng(7).normal(size=n)
        E, tau = 2, 1
    return x.astype(np.float32).astype(np.float64), E, tau


def gap_eps(x, E, tau, q=0.05, sample=2_000_000):
    """eps in the widest gap between distances near the q-quantile (Euclidean)."""
    n = x.size - (E - 1) * tau
    v = np.stack([x[(E - 1 - k) * tau:(E - 1 - k) * tau + n] for k in range(E)], 1)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, n, sample), rng.integers(0, n, sample)
    d = np.unique(np.sqrt(((v[i] - v[j]) ** 2).sum(1)))
    k = int(q * d.size)
    lo, hi = max(k - d.size // 200, 1), min(k + d.size // 200, d.size - 1)
    g = lo + int(np.argmax(d[lo:hi] - d[lo - 1:hi - 1]))
    return float(0.5 * (d[g - 1] + d[g]))


def run(name, n):
    from pyunicorn.timeseries import RecurrenceNetwork

    x, E, tau = series(name, n)
    eps = gap_eps(x, E, tau)
    t0 = time.perf_counter()
    ours = xr.DataArray(x, dims="time").edm.recurrence_network(E=E, tau=tau, eps=eps)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    rn = RecurrenceNetwork(x, dim=E, tau=tau, metric="euclidean", threshold=eps,
                           silence_level=3)
    theirs = {"degree": rn.degree(), "local_clustering": rn.local_clustering(),
              "global_clustering": rn.global_clustering(), "transitivity": rn.transitivity(),
              "average_path_length": rn.average_path_length(),
              "assortativity": rn.assortativity(), "link_density": rn.link_density}
    t_theirs = time.perf_counter() - t0
    row = {"case": name, "N": n, "E": E, "tau": tau, "eps": eps,
           "xedm_s": round(t_ours, 3), "pyunicorn_s": round(t_theirs, 3)}
    for m in MEASURES:
        a = np.asarray(ours[m].values, np.float64)
        b = np.asarray(theirs[m], np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.nanmax(np.where(a == b, 0.0, np.abs(a - b) / np.abs(b)))
        row[m] = float(ours[m]) if a.ndim == 0 else None
        row[f"{m}_maxrel"] = float(rel)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    rows = []
    # compile once outside the timings
    xr.DataArray(np.sin(np.arange(100.0)), dims="time").edm.recurrence_network(eps=0.1)
    for n in (int(s) for s in args.sizes.split(",")):
        for name in ("logistic", "lorenz_x", "noise"):
            row = run(name, n)
            rows.append(row)
            print(f"{name:9s} N={n:6d} xedm {row['xedm_s']:7.3f} s  pyunicorn "
                  f"{row['pyunicorn_s']:7.3f} s  " + "  ".join(
                      f"{m}={row[m]:.6g}" for m in MEASURES if row[m] is not None)
                  + "  max rel diff " + f"{max(row[m + '_maxrel'] for m in MEASURES):.1e}",
                  flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"argv": sys.argv, "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
