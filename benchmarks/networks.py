#!/usr/bin/env python
"""Direct causal networks: xedm.causal_network against raw xmap and Tigramite's PCMCI.

    python benchmarks/networks.py --tools causal_network,xmap --json out.json    # xedm
    python benchmarks/networks.py --tools pcmci,pcmci_gpdc,pcmci_cmiknn --only delay1_5,...
    python benchmarks/networks.py --quick                                  # small (minutes)
    python benchmarks/networks.py --table a.json,b.json                    # the README table
    python benchmarks/networks.py --only scale --backend gpu --scale 1000  # on a GPU

Every tool runs on the same data (the generators are deterministic, so separate runs of
different tools see the same series).  Each case has a generating adjacency
``truth[library=i, target=j]`` (True: j drives i, the orientation of xmap) and the delay
``lag[i, j]`` >= 1 of each link; a tool's decided links are scored by precision, recall and
F1 over the off-diagonal pairs, with its seconds; ``lag_right``: the share of its true
positive links whose reported delay is the true one (tools that report one).  On the null
cases (``seasonal``, ``hidden_driver``, ``ar1``: no links) ``share_linked`` is the score.
``targets`` (issue 41) are computed from the results, also by ``--table``.

Tools
- ``causal_network``: ``xedm.causal_network`` with its defaults (library's E chosen in
  1..10, lags -2..2, 29 ebisuzaki surrogates with the normal p, alpha = 0.05, predictive
  conditioning with driver delays 1..5), seed 0; its ``lag`` is the delay reported, and
  the counts of ``decision`` "undetermined" and "no link" pairs are recorded;
  ``--conditioning partial``: partial cross mapping (min_partial = 0.2).
- ``xmap``: ``xedm.xmap`` (E chosen per series, Tp = 0), 99 surrogates, ``p_method="normal"``,
  links where ``q_value <= 0.05``.
- ``pcmci``: Tigramite's PCMCI with ParCorr, tau_min = 1, tau_max = 5, pc_alpha = None
  (chosen; ``--pc-alpha 0.05``: several times faster), Benjamini-Hochberg q <= 0.05 over
  the lagged links; j -> i when any lag is linked, its delay the lag of smallest q.
- ``pcmci_gpdc``, ``pcmci_cmiknn``: the same with GPDC (its analytic significance) or
  CMIknn (its default shuffle test, 500 shuffles) and pc_alpha = 0.2 (run_pcmci's
  default), each in a child process killed after ``--limit`` (600) seconds.  They are
  first run on ``--probe`` (rossler_chain: 4 series, L = 2,000); a case whose estimate
  (the probe's seconds times (N / N_probe)^2 times L / L_probe) passes the limit is not
  run (issue 41: "where it finishes in 10 minutes").

Cases (earlier): ``many_series(50, 1000, seed=0)``, ``(50, 300, seed=1)``,
``(100, 500, seed=2)`` (xedm.datasets; truth = ``adjacency.T``), Lorenz-96 (N = 10,
L = 2,000: node i driven by i-2, i-1, i+1), a motif of eight coupled logistic maps (chain
0 -> 1 -> 2, common driver 3 -> 4, 3 -> 5, independent 6 and 7; coupling 0.2 as
many_series), independent AR(1) red noise (20 series, L = 400, phi = 0.9: every link is
false), and the coupled logistic pair (x drives y, ``beta_yx = 0.1``, ``beta_xy = 0``,
L = 1,000); delay 1 on every link.  Cases (issue 41, benchmarks/_network_cases.py):
``delay1_5`` (20 coupled maps, L = 1,000, delays drawn from 1..5, seed 1), ``noise0`` ..
``noise30`` (20 coupled maps, seed 2, observation noise 0 / 10 / 20 / 30 % of each sd),
``lorenz96_20`` (N = 20, F = 10, L = 2,000), ``rossler_chain`` (4 phase-locked Rössler
oscillators 0 -> 1 -> 2 -> 3, L = 2,000), ``stochastic`` (10 series, nonlinear, delays
1..3), the null cases ``seasonal`` (10 maps under one seasonal forcing) and
``hidden_driver`` (8 maps under one unobserved driver), and ``short50`` / ``short100`` /
``short200`` (20 coupled maps, seed 3, L = 50 / 100 / 200).  ``scale``: one
causal_network against one plain xmap (E chosen, no surrogates) on
``many_series(--scale, 1000)``, as a ratio (on the GPU after a full-size run of each, best
of three).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

OLD_CASES = ["ms50_1000", "ms50_300", "ms100_500", "lorenz96", "motif", "ar1",
             "logistic_pair"]
NEW_CASES = ["delay1_5", "noise0", "noise10", "noise20", "noise30", "lorenz96_20",
             "rossler_chain", "stochastic", "seasonal", "hidden_driver", "short50",
             "short100", "short200"]
CASES = OLD_CASES + NEW_CASES
NULL_CASES = ("seasonal", "hidden_driver", "ar1")
TOOLS = ["causal_network", "xmap", "pcmci", "pcmci_gpdc", "pcmci_cmiknn"]
SLOW_TOOLS = ("pcmci_gpdc", "pcmci_cmiknn")
TAU_MAX = 5
BASELINE = Path(__file__).parent / "results" / "networks_xedm.json"
TOLERANCE = 0.02  # "no worse than today": F1 at most this much lower (share linked: higher)


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
    """(X (N, T), truth (N, N) over (library, target), lag (N, N): the delay of each link)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import _network_cases as nc

    ms = {"ms50_1000": (50, 1000, 0), "ms50_300": (50, 300, 1), "ms100_500": (100, 500, 2)}
    if name in ms:
        n, T, seed = ms[name]
        if quick:
            n, T = 12, 300
        ds = xedm.datasets.many_series(n, T, seed=seed)
        truth = ds.adjacency.values.T
        return ds.x.values, truth, truth.astype(np.int64)
    if name == "lorenz96":
        X, truth, lag = nc.lorenz96(xedm, N=10, F=8.0, T=500 if quick else 2000)
        return X, truth, lag
    if name == "motif":
        X, truth = motif(300 if quick else 1000)
        return X, truth, truth.astype(np.int64)
    if name == "ar1":
        return nc.red_noise(xedm, 20, 400, phi=0.9, seed=0)
    if name == "logistic_pair":
        ds = xedm.datasets.coupled_logistic(1000, beta_xy=0.0, beta_yx=0.1)
        truth = np.array([[False, False], [True, False]])  # library y, target x: x drives y
        return np.stack([ds.x.values, ds.y.values]), truth, truth.astype(np.int64)
    n, T = (10, 300) if quick else (20, 1000)
    if name == "delay1_5":
        return nc.coupled_maps(n, T, lags=(1, 2, 3, 4, 5), seed=1)
    if name.startswith("noise"):
        X, truth, lag = nc.coupled_maps(n, T, seed=2)
        return nc.observed_with_noise(X, int(name[5:]) / 100), truth, lag
    if name == "lorenz96_20":
        return nc.lorenz96(xedm, N=20, F=10.0, T=500 if quick else 2000)
    if name == "rossler_chain":
        return nc.rossler_chain(T=500 if quick else 2000)
    if name == "stochastic":
        return nc.stochastic(T=300 if quick else 1000)
    if name == "seasonal":
        return nc.seasonal(T=300 if quick else 1000)
    if name == "hidden_driver":
        return nc.hidden_driver(T=300 if quick else 1000)
    if name.startswith("short"):
        return nc.coupled_maps(n, int(name[5:]), seed=3)
    raise ValueError(name)


def score(link, truth, true_lag=None, est_lag=None) -> dict:
    off = ~np.eye(len(truth), dtype=bool)
    link = np.asarray(link, bool) & off
    tp = int((link & truth).sum())
    fp = int((link & ~truth).sum())
    fn = int((~link & truth & off).sum())
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / (tp + fn) if tp + fn else float("nan")
    f1 = (2 * prec * rec / (prec + rec) if np.isfinite(prec) and np.isfinite(rec)
          and prec + rec > 0 else (0.0 if tp + fn else float("nan")))
    out = {"precision": prec, "recall": rec, "f1": f1, "links": int(link.sum()),
           "true_links": int((truth & off).sum()),
           "share_linked": float(link.sum() / off.sum())}
    if est_lag is not None and true_lag is not None:
        hit = link & truth
        out["lag_right"] = (float((np.asarray(est_lag)[hit] == np.asarray(true_lag)[hit]).mean())
                            if hit.any() else float("nan"))
    return out


def _pcmci(X, test: str, pc_alpha, tau_max: int = TAU_MAX):
    """PCMCI with ParCorr, GPDC or CMIknn: (link, lag, extra) over (library = driven,
    target = driver); BH q <= 0.05 over lags 1..tau_max, the delay of smallest q."""
    from tigramite import data_processing as pp
    from tigramite.independence_tests.independence_tests_base import CondIndTest
    from tigramite.pcmci import PCMCI

    def _get_acf(self, series, max_lag=None):  # tigramite 5.2's, without corrcoef's ddof
        max_lag = int(max(5, 0.1 * len(series))) if max_lag is None else max_lag
        return np.r_[1.0, [np.corrcoef(series[k:], series[:len(series) - k])[0, 1]
                           for k in range(1, max_lag + 1)]]

    CondIndTest._get_acf = _get_acf  # numpy 2 removed ddof (it had no effect)
    if test == "parcorr":
        from tigramite.independence_tests.parcorr import ParCorr
        cit = ParCorr()
    elif test == "gpdc":
        from tigramite.independence_tests.gpdc import GPDC
        cit = GPDC()  # significance "analytic" (its default)
    elif test == "cmiknn":
        from tigramite.independence_tests.cmiknn import CMIknn
        cit = CMIknn()  # significance "shuffle_test", 500 shuffles (its defaults)
    else:
        raise ValueError(test)
    pc = PCMCI(dataframe=pp.DataFrame(X.T.copy()), cond_ind_test=cit, verbosity=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pc.run_pcmci(tau_min=1, tau_max=tau_max, pc_alpha=pc_alpha)
        q = pc.get_corrected_pvalues(p_matrix=res["p_matrix"], fdr_method="fdr_bh",
                                     tau_min=1, tau_max=tau_max)
    q = q[:, :, 1:]  # [driver, driven, tau - 1]
    sig = q <= 0.05
    driver_driven = sig.any(axis=-1)
    lag = np.where(driver_driven, np.argmin(np.where(sig, q, np.inf), axis=-1) + 1, 0)
    return driver_driven.T, lag.T, {"pc_alpha": pc_alpha, "tau_max": tau_max, "test": test}


def _child(conn, X, test, pc_alpha):
    try:
        t0 = time.perf_counter()
        link, lag, extra = _pcmci(X, test, pc_alpha)
        conn.send(("ok", link, lag, extra, time.perf_counter() - t0))
    except Exception as e:  # noqa: BLE001 - reported in the JSON
        conn.send(("error", f"{type(e).__name__}: {e}"))
    conn.close()


def run_slow(X, test: str, pc_alpha, limit: float):
    """``_pcmci`` in a child process (spawned), killed after ``limit`` seconds: (link, lag,
    seconds, extra) or a status string."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_child, args=(child, X, test, pc_alpha), daemon=True)
    proc.start()
    child.close()
    got = parent.poll(limit)
    msg = parent.recv() if got else None
    secs = time.perf_counter() - t0
    if proc.is_alive():
        if msg is None:
            proc.kill()
        proc.join(10)
    if msg is None:
        return f"timeout after {limit:.0f} s"
    if msg[0] != "ok":
        return f"error: {msg[1]}"
    _, link, lag, extra, _inner = msg
    return link, lag, secs, extra


def run_tool(xedm, tool: str, X, backend: str | None, n_sur: int, pc_alpha=None,
             conditioning="predictive"):
    """(link, lag or None, seconds, extra) of an in-process tool."""
    import xarray as xr

    da = xr.DataArray(X, dims=("series", "time"))
    t0 = time.perf_counter()
    lag = None
    if tool == "causal_network":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the undetermined summary
            net = xedm.causal_network(da, seed=0, backend=backend, progress=False,
                                      surrogates=n_sur, conditioning=conditioning)
        link = net.link.values
        off = ~np.eye(len(X), dtype=bool)
        extra = {"candidates": int(net.candidate.values.sum()),
                 "synchrony": int(net.synchrony.values.sum()), "conditioning": conditioning}
        if "lag" in net:
            lag = net.lag.values
        if "decision" in net:
            dec = net.decision.values.astype(str)
            extra["undetermined"] = int(((dec == "undetermined") & off).sum())
            extra["no_link"] = int(((dec == "no link") & off).sum())
            extra["_decision"] = dec
    elif tool == "xmap":
        cm = xedm.xmap(da, "series", surrogates=99, p_method="normal", seed=0,
                       backend=backend, progress=False)
        link = cm.q_value.values <= 0.05
        extra = {}
    elif tool == "pcmci":
        link, lag, extra = _pcmci(X, "parcorr", pc_alpha)
    else:
        raise ValueError(tool)
    return link, lag, time.perf_counter() - t0, extra


def scale(xedm, N: int, T: int, backend: str | None, n_sur: int,
          conditioning="predictive", gen="many") -> dict:
    """One causal_network against one plain xmap on many_series(N, T) (``gen="many"``:
    density 0.05, about 0.05 N drivers per series) or sparse_network(N, T) (``"sparse"``:
    1-3 drivers per series, the whole-brain benchmark's graph; precision and recall
    recorded).  On the GPU each is run once at full size first (the kernels' variants of
    that size compiled: a cold start, not the method's cost) and timed as the best of three
    runs."""
    truth = None
    if gen == "sparse":
        ds = xedm.datasets.sparse_network(N, T, seed=0)
        truth = np.zeros((N, N), bool)
        truth[ds.driven.values, ds.driver.values] = True
        da = ds.x
    else:
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
    nets = []

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nets.append(xedm.causal_network(da, seed=0, backend=backend, progress=False,
                                            surrogates=n_sur, conditioning=conditioning))

    t_n = best(run)
    out = {"N": N, "T": T, "backend": backend or "auto", "data": gen, "xmap_s": t_x,
           "causal_network_s": t_n, "ratio": t_n / t_x, "conditioning": conditioning,
           "timing": "best of 3 after a full-size run" if gpu else "one run"}
    if truth is not None:
        link = nets[-1].link.values
        out.update(precision=float((link & truth).sum() / max(link.sum(), 1)),
                   recall=float((link & truth).sum() / truth.sum()),
                   true_links=int(truth.sum()))
    return out


def fmt(v, digits=2):
    return "–" if v is None or not np.isfinite(v) else f"{v:.{digits}f}"


def cell(case: str, r: dict | None, tool: str = "") -> str:
    if r is None:
        return "–"
    if "status" in r:  # shortened: "timeout after 600 s", "not run: estimated over 1875 s ..."
        st = r["status"]
        m = re.match(r"not run: estimated (over )?(\d+) s", st)
        if m:
            return f"not run (estimate {'> ' if m[1] else ''}{m[2]} s)"
        m = re.match(r"timeout after (\d+) s", st)
        return f"timeout ({m[1]} s)" if m else st
    if case in NULL_CASES:
        c = f"{100 * r['share_linked']:.1f} % of pairs linked ({r['seconds']:.1f} s)"
    else:
        c = (f"{fmt(r['precision'])} / {fmt(r['recall'])} / {fmt(r['f1'])} "
             f"({r['seconds']:.1f} s)")
    if case in ("delay1_5", "stochastic") and r.get("lag_right") is not None:
        c += f", lags {100 * r['lag_right']:.0f} %" if np.isfinite(r["lag_right"]) else ""
    if r.get("undetermined"):
        c += f", {r['undetermined']} undetermined"
    if r.get("pc_alpha") is not None:
        c += f" [pc_alpha {r['pc_alpha']:g}]"
    if tool == "pcmci" and "tau_max" not in r:  # the runs before issue 41
        c += " [tau_max 3]"
    return c


def table(doc: dict) -> str:
    """The README's table: precision / recall / F1 (seconds) per case and tool, then the
    targets of issue 41."""
    head = "| case | true links | " + " | ".join(
        f"{t}: P / R / F1 (s)" for t in doc["tools"]) + " |"
    lines = [head, "|" + "---|" * (len(doc["tools"]) + 2)]
    for case in doc["cases"]:
        res = doc["results"].get(case, {})
        cells = [cell(case, res.get(t), t) for t in doc["tools"]]
        true = next((r["true_links"] for r in res.values() if "true_links" in r), "–")
        lines.append(f"| {case} | {true} | " + " | ".join(cells) + " |")
    s = doc.get("scale")
    if s:
        pr = (f", precision {s['precision']:.3f}, recall {s['recall']:.3f}"
              if "precision" in s else "")
        lines.append(f"\nScale ({s['backend']}, {s.get('data', 'many')}): N = {s['N']}, "
                     f"L = {s['T']}: causal_network {s['causal_network_s']:.1f} s, one plain "
                     f"xmap {s['xmap_s']:.2f} s, ratio {s['ratio']:.1f}{pr}")
    tg = targets(doc)
    if any(t["pass"] is not None for t in tg):
        lines.append("\nTargets (issue 41; causal_network):\n")
        for t in tg:
            mark = {True: "pass", False: "FAIL", None: "not measured"}[t["pass"]]
            lines.append(f"- {t['target']}: {t['measured']} — **{mark}**")
    return "\n".join(lines)


def _get(doc, case, tool, key):
    r = doc["results"].get(case, {}).get(tool)
    if r is None or "status" in r:
        return None
    v = r.get(key)
    return None if v is None or (isinstance(v, float) and not np.isfinite(v)) else v


def targets(doc: dict, baseline: Path | None = BASELINE) -> list[dict]:
    """Issue 41's targets, from the results (causal_network unless said): each with the
    measured values and pass (None where a value is missing)."""
    cn = "causal_network"
    out = []

    def add(target, values: dict, ok):
        shown = ", ".join(f"{k} {fmt(v) if isinstance(v, float) else ('–' if v is None else v)}"
                          for k, v in values.items())
        out.append({"target": target, "values": values, "measured": shown,
                    "pass": None if any(v is None for v in values.values()) else bool(ok())})

    g = lambda c, k, t=cn: _get(doc, c, t, k)  # noqa: E731
    p, r, lr = g("delay1_5", "precision"), g("delay1_5", "recall"), g("delay1_5", "lag_right")
    add("delay1_5: precision >= 0.8 at recall >= 0.7, lags right on >= 80 % of links",
        {"precision": p, "recall": r, "lag_right": lr},
        lambda: p >= 0.8 and r >= 0.7 and lr >= 0.8)
    p, r = g("noise10", "precision"), g("noise10", "recall")
    add("noise10: recall >= 0.75 at precision >= 0.8", {"precision": p, "recall": r},
        lambda: r >= 0.75 and p >= 0.8)
    f, fp = g("noise30", "f1"), g("noise30", "f1", "pcmci")
    add("noise30: F1 >= PCMCI's + 0.1", {"F1": f, "PCMCI F1": fp}, lambda: f >= fp + 0.1)
    p, r = g("lorenz96_20", "precision"), g("lorenz96_20", "recall")
    add("lorenz96_20: recall >= 0.85 at precision >= 0.85", {"precision": p, "recall": r},
        lambda: r >= 0.85 and p >= 0.85)
    r, p = g("rossler_chain", "recall"), g("rossler_chain", "precision")
    add("rossler_chain: all links (recall 1)", {"recall": r, "precision": p},
        lambda: r == 1.0)
    f = g("stochastic", "f1")
    add("stochastic (lags 1..3): F1 >= 0.8", {"F1": f}, lambda: f >= 0.8)
    for c in NULL_CASES:
        v = g(c, "share_linked")
        add(f"{c} (null): <= 5 % of pairs linked", {"share_linked": v}, lambda v=v: v <= 0.05)
    base = {}
    if baseline is not None and Path(baseline).exists():
        base = json.loads(Path(baseline).read_text())["results"]
    for c in OLD_CASES:
        b = base.get(c, {}).get(cn)
        if b is None:
            continue
        if c in NULL_CASES:
            v, bv = g(c, "share_linked"), b["share_linked"]
            add(f"{c}: no worse than today (share linked <= {bv:.3f} + {TOLERANCE})",
                {"share_linked": v}, lambda v=v, bv=bv: v <= bv + TOLERANCE)
        else:
            v, bv = g(c, "f1"), b["f1"]
            add(f"{c}: no worse than today (F1 >= {bv:.3f} - {TOLERANCE})", {"F1": v},
                lambda v=v, bv=bv: v >= bv - TOLERANCE)
    for c in ("short50", "short100", "short200"):
        m, u = g(c, "missed_no_link"), g(c, "missed_undetermined")
        add(f"{c}: missed true links answered undetermined, not no link (>= 80 %)",
            {"missed undetermined": u, "missed no link": m, "undetermined pairs":
             g(c, "undetermined")},
            lambda m=m, u=u: (u / (u + m) if u + m else 1.0) >= 0.8)
    return out


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
    out["tools"] = [t for t in TOOLS if t in out["tools"]]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--quick", action="store_true", help="small sizes (a minute)")
    ap.add_argument("--only", default=",".join(CASES + ["scale"]))
    ap.add_argument("--tools", default="causal_network,xmap,pcmci")
    ap.add_argument("--surrogates", type=int, default=29, help="causal_network's")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--scale", type=int, default=100, help="N of the scale case (L = 1,000)")
    ap.add_argument("--scale-data", default="many", choices=("many", "sparse"),
                    help="the scale case's data: many_series (density 0.05) or "
                    "sparse_network (1-3 drivers per series)")
    ap.add_argument("--pc-alpha", default=None,
                    help="PCMCI (ParCorr)'s pc_alpha: 'none' (chosen among 0.05-0.5, its "
                    "best; the default) or a number (0.05: several times faster; the default "
                    "of --quick)")
    ap.add_argument("--slow-pc-alpha", type=float, default=0.2,
                    help="pc_alpha of pcmci_gpdc and pcmci_cmiknn (run_pcmci's default)")
    ap.add_argument("--limit", type=float, default=600.0,
                    help="seconds allowed to pcmci_gpdc / pcmci_cmiknn per case")
    ap.add_argument("--probe", default="rossler_chain",
                    help="the case the slow tools are timed on first, for the estimates "
                    "('': none, every case run under the limit)")
    ap.add_argument("--conditioning", default="predictive",
                    help="causal_network's conditioning: predictive (default) or partial")
    ap.add_argument("--json", default=None, help="write the results to this path")
    ap.add_argument("--table", default=None,
                    help="print the table of JSON files (comma-separated, merged: each cell "
                    "from the first that has it; missing files skipped) and exit")
    args = ap.parse_args(argv)
    if args.pc_alpha is None:
        args.pc_alpha = "0.05" if args.quick else "none"
    if args.table:
        files = [Path(f) for f in args.table.split(",")]
        for f in files:
            if not f.exists():
                print(f"(skipped {f}: no such file)", file=sys.stderr)
        print(table(merge([json.loads(f.read_text()) for f in files if f.exists()])))
        return None
    import xedm

    only = args.only.split(",")
    tools = args.tools.split(",")
    bad = [t for t in tools if t not in TOOLS] + [c for c in only if c not in CASES + ["scale"]]
    if bad:
        ap.error(f"unknown: {bad}")
    doc = {"date": _dt.datetime.now().isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": sys.version.split()[0],
                       "load_average": list(os.getloadavg())},
           "command": " ".join(sys.argv), "quick": args.quick, "tools": tools,
           "cases": [c for c in only if c in CASES], "results": {}, "probe": {}}

    def save():
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            doc["targets"] = targets(doc)
            doc["machine"]["load_average_end"] = list(os.getloadavg())
            Path(args.json).write_text(json.dumps(doc, indent=2))

    def record(case, tool, X, truth, true_lag, link, lag, secs, extra):
        dec = extra.pop("_decision", None)
        r = {**score(link, truth, true_lag, lag), "seconds": secs, **extra}
        if dec is not None:
            miss = truth & ~np.asarray(link, bool)
            r["missed_no_link"] = int((miss & (dec == "no link")).sum())
            r["missed_undetermined"] = int((miss & (dec == "undetermined")).sum())
        if case == "logistic_pair":
            r["x_to_y"] = bool(link[1, 0])
            r["y_to_x"] = bool(link[0, 1])
        doc["results"][case][tool] = r
        lr = f" lags {fmt(r['lag_right'])}" if "lag_right" in r else ""
        print(f"{case:14s} {tool:15s} P {fmt(r['precision'])} R {fmt(r['recall'])} "
              f"F1 {fmt(r['f1'])} links {r['links']:4d}/{r['true_links']:4d}{lr} "
              f"{secs:7.1f} s", flush=True)

    probe = {}  # slow tool -> (seconds or None, N, T, status)
    for tool in [t for t in tools if t in SLOW_TOOLS and args.probe]:
        X, truth, true_lag = make_case(xedm, args.probe, args.quick)
        out = run_slow(X, tool.split("_")[1], args.slow_pc_alpha, args.limit)
        if isinstance(out, str):
            probe[tool] = (None, *X.shape, out)
            doc["probe"][tool] = {"case": args.probe, "status": out}
            print(f"probe {args.probe} {tool}: {out}", flush=True)
        else:
            probe[tool] = (out[2], *X.shape, out)
            doc["probe"][tool] = {"case": args.probe, "seconds": out[2],
                                  "N": X.shape[0], "T": X.shape[1]}
            print(f"probe {args.probe} {tool}: {out[2]:.1f} s", flush=True)
    for case in doc["cases"]:
        X, truth, true_lag = make_case(xedm, case, args.quick)
        doc["results"][case] = {}
        for tool in tools:
            if tool in SLOW_TOOLS:
                s0, n0, t0, out = probe.get(tool, (None, 0, 0, None))
                if case != args.probe:
                    if out is not None:  # the estimate (a lower bound where the probe failed)
                        est = (s0 or args.limit) * (X.shape[0] / n0) ** 2 * X.shape[1] / t0
                        if est > args.limit:
                            how = f"{est:.0f} s" if s0 else f"over {est:.0f} s ({out})"
                            doc["results"][case][tool] = {
                                "status": f"not run: estimated {how} from {args.probe}"}
                            print(f"{case:14s} {tool:15s} "
                                  f"{doc['results'][case][tool]['status']}")
                            continue
                    out = run_slow(X, tool.split("_")[1], args.slow_pc_alpha, args.limit)
                if isinstance(out, str):
                    doc["results"][case][tool] = {"status": out}
                    print(f"{case:14s} {tool:15s} {out}", flush=True)
                    continue
                link, lag, secs, extra = out
            else:
                pc_alpha = None if args.pc_alpha.lower() == "none" else float(args.pc_alpha)
                link, lag, secs, extra = run_tool(xedm, tool, X, args.backend, args.surrogates,
                                                  pc_alpha, args.conditioning)
            record(case, tool, X, truth, true_lag, link, lag, secs, extra)
            save()
    if "scale" in only:
        doc["scale"] = scale(xedm, 10 if args.quick else args.scale, 300 if args.quick else 1000,
                             args.backend, args.surrogates, args.conditioning,
                             args.scale_data)
        print(f"scale: {doc['scale']}", flush=True)
    print(table(doc))
    save()
    if args.json:
        print(f"wrote {args.json}")
    return doc


if __name__ == "__main__":
    main()
