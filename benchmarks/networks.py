#!/usr/bin/env python
"""Direct causal networks: xedm.causal_network against raw xmap and Tigramite's PCMCI.

    python benchmarks/networks.py --json benchmarks/results/networks.json   # every case
    python benchmarks/networks.py --quick                                  # small (seconds)
    python benchmarks/networks.py --table a.json,b.json                    # the README table
    python benchmarks/networks.py --only scale --backend gpu --scale 1000  # on a GPU

Every tool runs in this process on the same data.  Each case has a generating adjacency
``truth[library=i, target=j]`` (True: j drives i, the orientation of xmap); a tool's decided
links are scored by precision, recall and F1 over the off-diagonal pairs, with its seconds.

Tools
- ``causal_network``: ``xedm.causal_network`` with its defaults (library's E chosen in
  1..10, lags -2..2, 29 ebisuzaki surrogates with the normal p, alpha = 0.05, predictive
  conditioning), seed 0; ``--conditioning partial``: partial cross mapping (min_partial =
  0.2), the default before.
- ``xmap``: ``xedm.xmap`` (E chosen per series, Tp = 0), 99 surrogates, ``p_method="normal"``,
  links where ``q_value <= 0.05``.
- ``pcmci``: Tigramite's PCMCI with ParCorr, tau_min = 1, tau_max = 3, pc_alpha = None
  (chosen; ``--pc-alpha 0.05``: run_pcmci's default, several times faster),
  Benjamini-Hochberg q <= 0.05 over the lagged links; j -> i when any lag is linked.

Cases: ``many_series(50, 1000, seed=0)``, ``(50, 300, seed=1)``, ``(100, 500, seed=2)``
(xedm.datasets; truth = ``adjacency.T``), Lorenz-96 (N = 10, L = 2,000: node i driven by
i-2, i-1, i+1), a motif of eight coupled logistic maps (chain 0 -> 1 -> 2, common driver
3 -> 4, 3 -> 5, independent 6 and 7; coupling 0.2 as many_series), independent AR(1) red
noise (20 series, L = 400, phi = 0.9: every link is false; the share of pairs linked is
reported), and the coupled logistic pair (x drives y, ``beta_yx = 0.1``, ``beta_xy = 0``,
L = 1,000).  ``scale``: one causal_network against one plain xmap (E chosen, no
surrogates) on ``many_series(--scale, 1000)``, as a ratio (on the GPU after a full-size run
of each, best of three).
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

CASES = ["ms50_1000", "ms50_300", "ms100_500", "lorenz96", "motif", "ar1", "logistic_pair"]
TOOLS = ["causal_network", "xmap", "pcmci"]


def motif(L: int, seed: int = 0, coupling: float = 0.2):
    """Eight logistic maps: chain 0 -> 1 -> 2, common driver 3 -> 4, 3 -> 5, independent 6,
    7 (the update of xedm.datasets.many_series); truth (library, target)."""
    rng = np.random.default_rng(seed)
    n = 8
    adj = np.zeros((n, n), bool)  # adj[driver, driven]
    for d, v in [(0, 1), (1, 2), (3, 4), (3, 5)]:
        adj[d, v] = True
    r = rng.uniform(3.7, 3.9, n)
    x = rng.uniform(0.1, 0.9, n)
    out = np.empty((n, L + 100))
    for t in range(L + 100):
        out[:, t] = x
        f = r * x * (1 - x)
        x = f.copy()
        for d, v in zip(*np.nonzero(adj), strict=True):
            x[v] = (1 - coupling) * f[v] + coupling * f[d]
    return out[:, 100:], adj.T


def make_case(xedm, name: str, quick: bool):
    """(X (N, T), truth (N, N) over (library, target) or None, labels)."""
    ms = {"ms50_1000": (50, 1000, 0), "ms50_300": (50, 300, 1), "ms100_500": (100, 500, 2)}
    if name in ms:
        n, T, seed = ms[name]
        if quick:
            n, T = 12, 300
        ds = xedm.datasets.many_series(n, T, seed=seed)
        return ds.x.values, ds.adjacency.values.T
    if name == "lorenz96":
        N, T = 10, 500 if quick else 2000
        X = xedm.datasets.lorenz96(T, N=N).values
        truth = np.zeros((N, N), bool)
        for i in range(N):
            for d in (-2, -1, 1):
                truth[i, (i + d) % N] = True
        return X, truth
    if name == "motif":
        return motif(300 if quick else 1000)
    if name == "ar1":
        X = xedm.datasets.ar1(20, 400, phi=0.9, seed=0).values
        return X, np.zeros((20, 20), bool)
    if name == "logistic_pair":
        ds = xedm.datasets.coupled_logistic(1000, beta_xy=0.0, beta_yx=0.1)
        truth = np.array([[False, False], [True, False]])  # library y, target x: x drives y
        return np.stack([ds.x.values, ds.y.values]), truth
    raise ValueError(name)


def score(link, truth) -> dict:
    off = ~np.eye(len(truth), dtype=bool)
    link = np.asarray(link, bool) & off
    tp = int((link & truth).sum())
    fp = int((link & ~truth).sum())
    fn = int((~link & truth & off).sum())
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / (tp + fn) if tp + fn else float("nan")
    f1 = (2 * prec * rec / (prec + rec) if np.isfinite(prec) and np.isfinite(rec)
          and prec + rec > 0 else (0.0 if tp + fn else float("nan")))
    return {"precision": prec, "recall": rec, "f1": f1, "links": int(link.sum()),
            "true_links": int((truth & off).sum()), "share_linked": float(link.sum() / off.sum())}


def run_tool(xedm, tool: str, X, backend: str | None, n_sur: int, pc_alpha=None,
             conditioning="predictive"):
    import xarray as xr

    da = xr.DataArray(X, dims=("series", "time"))
    t0 = time.perf_counter()
    if tool == "causal_network":
        net = xedm.causal_network(da, seed=0, backend=backend, progress=False,
                                  surrogates=n_sur, conditioning=conditioning)
        link = net.link.values
        extra = {"candidates": int(net.candidate.values.sum()),
                 "synchrony": int(net.synchrony.values.sum()), "conditioning": conditioning}
    elif tool == "xmap":
        cm = xedm.xmap(da, "series", surrogates=99, p_method="normal", seed=0,
                       backend=backend, progress=False)
        link = cm.q_value.values <= 0.05
        extra = {}
    elif tool == "pcmci":
        from tigramite import data_processing as pp
        from tigramite.independence_tests.parcorr import ParCorr
        from tigramite.pcmci import PCMCI

        pc = PCMCI(dataframe=pp.DataFrame(X.T.copy()), cond_ind_test=ParCorr(), verbosity=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pc.run_pcmci(tau_min=1, tau_max=3, pc_alpha=pc_alpha)
            q = pc.get_corrected_pvalues(p_matrix=res["p_matrix"], fdr_method="fdr_bh",
                                         tau_min=1, tau_max=3)
        driver_driven = (q[:, :, 1:] <= 0.05).any(axis=-1)  # [driver, driven]
        link = driver_driven.T  # (library = driven, target = driver)
        extra = {"pc_alpha": pc_alpha}
    else:
        raise ValueError(tool)
    return link, time.perf_counter() - t0, extra


def scale(xedm, N: int, T: int, backend: str | None, n_sur: int,
          conditioning="predictive") -> dict:
    """One causal_network against one plain xmap on many_series(N, T).  On the GPU each is
    run once at full size first (the kernels' variants of that size compiled: a cold start,
    not the method's cost) and timed as the best of three runs."""
    da = xedm.datasets.many_series(N, T, seed=0).x
    small = xedm.datasets.many_series(6, 200, seed=0).x  # compile first
    xedm.causal_network(small, seed=0, backend=backend, progress=False, surrogates=9)
    xedm.xmap(small, "series", backend=backend, progress=False)
    gpu = backend == "gpu"
    runs = 4 if gpu else 1

    def best(fn):
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times[1:] if gpu else times)

    t_x = best(lambda: xedm.xmap(da, "series", backend=backend, progress=False))
    t_n = best(lambda: xedm.causal_network(da, seed=0, backend=backend, progress=False,
                                           surrogates=n_sur, conditioning=conditioning))
    return {"N": N, "T": T, "backend": backend or "auto", "xmap_s": t_x,
            "causal_network_s": t_n, "ratio": t_n / t_x, "conditioning": conditioning,
            "timing": "best of 3 after a full-size run" if gpu else "one run"}


def fmt(v, digits=2):
    return "–" if v is None or not np.isfinite(v) else f"{v:.{digits}f}"


def table(doc: dict) -> str:
    """The README's table: precision / recall / F1 (seconds) per case and tool."""
    head = "| case | true links | " + " | ".join(
        f"{t}: P / R / F1 (s)" for t in doc["tools"]) + " |"
    lines = [head, "|" + "---|" * (len(doc["tools"]) + 2)]
    for case in doc["cases"]:
        cells = []
        for t in doc["tools"]:
            r = doc["results"].get(case, {}).get(t)
            if r is None:
                cells.append("–")
            elif case == "ar1":
                cells.append(f"{100 * r['share_linked']:.1f} % of pairs linked "
                             f"({r['seconds']:.1f} s)")
            else:
                cells.append(f"{fmt(r['precision'])} / {fmt(r['recall'])} / {fmt(r['f1'])} "
                             f"({r['seconds']:.1f} s)")
            if r is not None and r.get("pc_alpha") is not None:
                cells[-1] += f" [pc_alpha {r['pc_alpha']:g}]"
        true = next(iter(doc["results"].get(case, {}).values()), {}).get("true_links", "–")
        lines.append(f"| {case} | {true} | " + " | ".join(cells) + " |")
    s = doc.get("scale")
    if s:
        lines.append(f"\nScale ({s['backend']}): N = {s['N']}, L = {s['T']}: causal_network "
                     f"{s['causal_network_s']:.1f} s, one plain xmap {s['xmap_s']:.2f} s, "
                     f"ratio {s['ratio']:.1f}")
    return "\n".join(lines)


def merge(docs: list[dict]) -> dict:
    """One document from several runs (the README's table): tools and cases in order of
    appearance, each (case, tool) result from the first run that has it, the first scale."""
    out = {"tools": [], "cases": [], "results": {}}
    for d in docs:
        out["tools"] += [t for t in d["tools"] if t not in out["tools"]]
        out["cases"] += [c for c in d["cases"] if c not in out["cases"]]
        for case, res in d["results"].items():
            for tool, r in res.items():
                out["results"].setdefault(case, {}).setdefault(tool, r)
        if d.get("scale") and "scale" not in out:
            out["scale"] = d["scale"]
    out["cases"] = [c for c in CASES if c in out["cases"]]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--only", default=",".join(CASES + ["scale"]))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--surrogates", type=int, default=29, help="causal_network's")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--scale", type=int, default=100, help="N of the scale case (L = 1,000)")
    ap.add_argument("--pc-alpha", default="none",
                    help="PCMCI's pc_alpha: 'none' (chosen among 0.05-0.5, its best) or a "
                    "number (0.05 is run_pcmci's default; several times faster)")
    ap.add_argument("--conditioning", default="predictive",
                    help="causal_network's conditioning: predictive (default) or partial")
    ap.add_argument("--json", default=None, help="write the results to this path")
    ap.add_argument("--table", default=None,
                    help="print the table of JSON files (comma-separated, merged) and exit")
    args = ap.parse_args(argv)
    if args.table:
        print(table(merge([json.loads(Path(f).read_text()) for f in args.table.split(",")])))
        return None
    import xedm

    only = args.only.split(",")
    tools = args.tools.split(",")
    doc = {"date": _dt.datetime.now().isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": sys.version.split()[0]},
           "command": " ".join(sys.argv), "tools": tools,
           "cases": [c for c in CASES if c in only], "results": {}}
    for case in doc["cases"]:
        X, truth = make_case(xedm, case, args.quick)
        doc["results"][case] = {}
        for tool in tools:
            pc_alpha = None if args.pc_alpha.lower() == "none" else float(args.pc_alpha)
            link, secs, extra = run_tool(xedm, tool, X, args.backend, args.surrogates,
                                         pc_alpha, args.conditioning)
            r = {**score(link, truth), "seconds": secs, **extra}
            if case == "logistic_pair":
                r["x_to_y"] = bool(link[1, 0])
                r["y_to_x"] = bool(link[0, 1])
            doc["results"][case][tool] = r
            print(f"{case:14s} {tool:15s} P {fmt(r['precision'])} R {fmt(r['recall'])} "
                  f"F1 {fmt(r['f1'])} links {r['links']:4d}/{r['true_links']:4d} "
                  f"{secs:7.1f} s", flush=True)
    if "scale" in only:
        doc["scale"] = scale(xedm, 10 if args.quick else args.scale, 300 if args.quick else 1000,
                             args.backend, args.surrogates, args.conditioning)
        print(f"scale: {doc['scale']}", flush=True)
    print(table(doc))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2))
        print(f"wrote {args.json}")
    return doc


if __name__ == "__main__":
    main()
