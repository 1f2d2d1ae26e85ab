"""``xedm demo``: a whole first analysis on generated data (the README's first command).

The coupled logistic pair (x drives y): the best embedding dimension, simplex forecasts
of the second half from the first, S-map skill against theta, and CCM in both directions
when ``ccm`` is available; a printed summary and one figure.  The command line itself
(parsing, one-line errors) is :mod:`xedm.cli`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import xarray as xr

from ._common import (
    CLIError,
    add_common,
    add_neighbours,
    call,
    figure_path,
    int_at_least,
    options,
    suffix,
)
from ._common import xedm as _xedm
from ._outputs import write_output


def add_parser(sub) -> None:
    """The ``demo`` subcommand of the parser."""
    d = sub.add_parser("demo", help="run the EDM workflow on coupled logistic maps",
                       description="Generate coupled logistic maps (x drives y), find the best "
                       "E, forecast with simplex, test nonlinearity with S-map, run CCM when "
                       "available, print a summary and write a PNG figure.")
    d.add_argument("--n", type=int_at_least(100), default=1000,
                   help="series length, at least 100 (default 1000)")
    d.add_argument("--out", type=figure_path, default="xedm-demo.png",
                   help="figure file: .png, .pdf or .svg (default xedm-demo.png); an existing "
                   "one is replaced only with --overwrite")
    d.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed (>= 0) for the initial values and CCM sampling (default 0)")
    d.add_argument("--var", choices=["x", "y"], default="x",
                   help="variable to embed and forecast (default x)")
    d.add_argument("--E-max", dest="E_max", type=int_at_least(1), default=8,
                   help="largest E searched (default 8)")
    d.add_argument("--samples", type=int_at_least(1), default=50,
                   help="CCM samples per size (default 50)")
    add_common(d)
    add_neighbours(d)
    d.set_defaults(func=demo)


def demo(args) -> int:
    """``xedm demo``: forecast skill, S-map nonlinearity and CCM on a coupled logistic
    pair, printed as a summary and drawn into one figure (``args.out``)."""
    xedm = _xedm()
    n = args.n  # >= 100: checked by argparse (_int_at_least(100))
    rng = np.random.default_rng(args.seed)
    x0, y0 = (float(v) for v in rng.uniform(0.2, 0.8, 2))
    ds = xedm.datasets.coupled_logistic(n, x0=x0, y0=y0, transient=100)
    half = n // 2
    t = ds.time.values
    split = {"lib": slice(t[0], t[half - 1]), "pred": slice(t[half], t[-1])}
    has_ccm = hasattr(xedm, "ccm")
    v = args.var

    lines = [
        f"xedm demo: coupled logistic maps (Sugihara et al. 2012), n = {n}, seed = {args.seed}",
        f"  truth: x -> y with beta_yx = {ds.attrs['beta_yx']}, "
        f"y -> x with beta_xy = {ds.attrs['beta_xy']} (x drives y more strongly)",
        f"  library = first half (time {t[0]}..{t[half - 1]}), "
        f"prediction = second half (time {t[half]}..{t[-1]}), Tp = 1",
    ]
    steps = ["embed_dimension", "simplex", "predict_nonlinear"] + (["ccm"] if has_ccm else [])
    results: dict[str, Any] = {}
    start = time.perf_counter()
    try:
        _demo_steps(args, ds, v, split, steps, results)
    except (ValueError, TypeError) as err:  # e.g. --E-max too large for --n, --backend gpu
        raise CLIError(str(err)) from err
    best_E = int(results["embed_dimension"].attrs["best_E"])
    E_list = results.get("ccm_E")
    elapsed = time.perf_counter() - start

    edim = results["embed_dimension"]
    lines.append(
        f"  best embedding dimension:  E = {best_E}  "
        f"(rho = {float(edim.rho.sel(E=best_E)):.3f}; searched E = 1..{args.E_max})"
    )
    sim = results["simplex"]
    lines.append(
        f"  simplex forecast of {v}:     rho = {float(sim.rho):.3f}, mae = {float(sim.mae):.4f}, "
        f"rmse = {float(sim.rmse):.4f}, n = {int(sim.n)}"
    )
    nl = results["predict_nonlinear"]
    theta_best = float(nl.attrs["best_theta"])
    rho_lin = float(nl.rho.sel(theta=0.0))
    rho_best = float(nl.rho.sel(theta=theta_best))
    verdict = "nonlinear (skill rises with theta)" if rho_best > rho_lin + 0.01 else "no clear gain"
    lines.append(
        f"  S-map nonlinearity test:   rho(theta=0) = {rho_lin:.3f} -> rho(theta={theta_best:g}) "
        f"= {rho_best:.3f}: {verdict}"
    )
    if has_ccm:
        rho = results["ccm"]["rho"]
        if "sample" in rho.dims:
            rho = rho.mean("sample")
        L = int(rho.lib_size[-1])
        r_xy = float(rho.sel(library="y", target="x").isel(lib_size=-1))
        r_yx = float(rho.sel(library="x", target="y").isel(lib_size=-1))
        winner = "x -> y" if r_xy > r_yx else "y -> x"
        lines.append(
            f"  CCM at L = {L} (E: x = {E_list[0]}, y = {E_list[1]}):  "
            f"x -> y (library y, target x) rho = {r_xy:.3f};  "
            f"y -> x (library x, target y) rho = {r_yx:.3f}  => stronger: {winner}"
        )
    else:
        lines.append("  CCM: not available in this version of xedm (skipped)")

    if "note" in results:
        lines.append(f"  note: {results['note']}")
    _demo_figure(results, ds, v, best_E, args.out, args.overwrite)
    lines.append(f"  figure written to {args.out}  ({elapsed:.1f} s of analysis)")
    print("\n".join(lines))
    return 0


def _has_gpu_twin(kernel: str) -> bool:
    from ..kernels import available

    return "gpu" in available(kernel)


def _demo_steps(args, ds, v, split, steps, results) -> None:
    """The demo's analyses, in order, into ``results``."""
    from .. import _progress

    xedm = _xedm()
    n = args.n
    with options(args), _progress.bar(steps, desc="xedm demo", unit="step",
                                      disable=args.quiet, delay=1.0) as bar:
        for step in bar:
            bar.set_postfix_str(step)
            if step == "embed_dimension":
                res = xedm.embed_dimension(ds, E_max=args.E_max, columns=v, target=v, **split)
                results[step] = res
                best_E = int(res.attrs["best_E"])
            elif step == "simplex":
                results[step] = xedm.simplex(ds, E=best_E, columns=v, target=v, **split)
            elif step == "predict_nonlinear":
                kw = {}
                if xedm.get_option("backend") == "gpu" and not _has_gpu_twin("smap_predict"):
                    kw["backend"] = "cpu"  # S-map has no GPU kernel yet: the rest stays there
                    results["note"] = "S-map ran on the CPU (no GPU kernel for it yet)"
                from ..labeled.edm import THETAS  # pyEDM's grid, which lacks theta = 0

                results[step] = xedm.predict_nonlinear(
                    ds, E=best_E, columns=v, target=v, theta=(0.0, *THETAS), **split, **kw
                )
            else:
                # each library series is embedded with its own best E (leave-one-out, Tp = 1)
                ccm_E = {v: best_E}
                for other in {"x", "y"} - {v}:
                    res = xedm.embed_dimension(ds, E_max=args.E_max, columns=other)
                    ccm_E[other] = int(res.attrs["best_E"])
                E_list = [ccm_E["x"], ccm_E["y"]]
                results["ccm_E"] = E_list
                sizes = np.unique(np.linspace(max(2 * max(E_list) + 2, 10), n - 2 * max(E_list),
                                              8).astype(int)).tolist()
                results[step] = call(
                    xedm.ccm, ds,
                    user={"columns": ["x", "y"], "lib_sizes": sizes, "samples": args.samples,
                          "seed": args.seed, "E": E_list},
                    optional={"progress": False},
                )


def _demo_figure(results: dict, ds: xr.Dataset, v: str, best_E: int, out: str,
                 overwrite: bool = False) -> None:
    from matplotlib.figure import Figure

    from .. import plot

    # a bare Figure renders with Agg and never touches pyplot's global backend
    fig = Figure(figsize=(11, 8), layout="constrained")
    axes = fig.subplots(2, 2)
    plot.skill(results["embed_dimension"], ax=axes[0, 0])
    axes[0, 0].set_title("simplex skill vs embedding dimension")
    sim = results["simplex"]
    window = sim.isel(time=slice(0, min(150, sim.sizes["time"])))
    plot.prediction(window, ax=axes[0, 1])
    axes[0, 1].set_title(f"simplex, E = {best_E}: {v} (first 150 forecasts), rho = "
                         f"{float(sim.rho):.3f}")
    plot.skill(results["predict_nonlinear"], ax=axes[1, 0])
    axes[1, 0].set_title("S-map skill vs nonlinearity")
    if "ccm" in results:
        plot.ccm_convergence(results["ccm"], ax=axes[1, 1])
        axes[1, 1].set_title("convergent cross mapping")
    else:
        ax = axes[1, 1]
        ax.plot(ds.x.values[:-1], ds.x.values[1:], ".", ms=2, label="x")
        ax.plot(ds.y.values[:-1], ds.y.values[1:], ".", ms=2, label="y")
        ax.set_xlabel("value at t")
        ax.set_ylabel("value at t + 1")
        ax.set_title("return maps")
        ax.legend()
    fig.suptitle("xedm demo: coupled logistic maps (x drives y)")
    write_output(out, lambda tmp: fig.savefig(tmp, dpi=100, format=suffix(out)[1:]),
                 overwrite)
