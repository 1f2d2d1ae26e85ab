"""Issue 43's probe cases (item 2: silent NaN and accepted nonsense), each run and classified.

Every case is one call with hostile or unusual input; its outcome is one of

* ``clear``: a ValueError or TypeError whose message names the parameter (or the data's
  problem) the case is about,
* ``vague``: a ValueError or TypeError that does not,
* ``warning``: a result, with a UserWarning that names the problem,
* ``silent_nan``: a result holding NaN (in its main variable) and no such warning,
* ``accepted``: a result with no error and no warning (nonsense accepted),
* ``other``: any other exception (AttributeError, MemoryError, ...).

Each case says which outcomes are good (``want``); the summary counts outcomes per class and
how many cases got a good one.  Run from the repository root::

    python benchmarks/probe_counts.py                       # the table
    python benchmarks/probe_counts.py --json OUT --label after    # (add to) OUT under a label
    PYTHONPATH=/tmp/base python benchmarks/probe_counts.py --json OUT --label before \
        --commit c47d73f                  # the same cases on an export of an older commit

The committed results: ``benchmarks/results/probe_counts_issue43.json`` (before and after
the fixes of issue 43, item 2).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

import xedm
from xedm.compat import pyedm as P

T = 120
t = np.arange(T)
RNG = np.random.default_rng(0)
X = np.sin(0.3 * t) + 0.1 * RNG.standard_normal(T)
Y = np.cos(0.21 * t) + 0.1 * RNG.standard_normal(T)
Z = np.sin(0.17 * t + 1)
DS = xr.Dataset({"x": ("time", X), "y": ("time", Y), "z": ("time", Z)},
                coords={"time": t})
DA = xr.DataArray(np.stack([X, Y, Z]), dims=("series", "time"),
                  coords={"series": ["x", "y", "z"], "time": t})
DUP = pd.DataFrame({"time": t // 2, "x": X, "y": Y})        # duplicate time labels
DF = pd.DataFrame({"Time": t + 1, "x": X, "y": Y})           # pyEDM's layout
CONST = np.full(T, 3.0)
NAN = np.full(T, np.nan)


def _ds(**cols):
    return xr.Dataset({k: ("time", v) for k, v in cols.items()}, coords={"time": t})


def _da(*rows):
    return xr.DataArray(np.stack(rows), dims=("series", "time"),
                        coords={"series": [f"s{i}" for i in range(len(rows))], "time": t})


def _df(**cols):
    return pd.DataFrame({"Time": t + 1, **cols})


class _KMeans:  # an estimator that is not a regressor (sklearn.cluster.KMeans' shape)
    def fit(self, X, y=None, sample_weight=None):
        self.cluster_centers_ = X[:2]
        return self


class _Ridge:  # a regressor class (not an instance)
    def fit(self, X, y, sample_weight=None):
        return self


@dataclass
class Case:
    group: str
    name: str
    call: Callable[[], Any]
    words: str          # regex: what a good message names
    want: tuple = ("clear",)


CASES: list[Case] = []


def case(group, name, words, want=("clear",)):
    def deco(f):
        CASES.append(Case(group, name, f, words, want))
        return f
    return deco


# --------------------------------------------------------------- duplicate time labels
_DUP_CALLS = {
    "simplex": lambda: xedm.simplex(DUP, 2, columns="x", target="x"),
    "smap": lambda: xedm.smap(DUP, 2, columns="x", target="x", theta=1),
    "embed_dimension": lambda: xedm.embed_dimension(DUP, 4, columns="x", target="x"),
    "predict_interval": lambda: xedm.predict_interval(DUP, 2, Tp_max=3, columns="x"),
    "predict_nonlinear": lambda: xedm.predict_nonlinear(DUP, 2, theta=[0, 1], columns="x"),
    "predict_exclusion_radius": lambda: xedm.predict_exclusion_radius(
        DUP, 2, exclusion_radius=[0, 2], columns="x"),
    "predict_tau": lambda: xedm.predict_tau(DUP, 2, tau_max=2, columns="x"),
    "skill_grid": lambda: xedm.skill_grid(DUP, E=[1, 2], theta=[0, 1], columns="x"),
    "ccm": lambda: xedm.ccm(DUP, ["x", "y"], lib_sizes=[20, 60], E=2, samples=5, seed=1),
    "xmap": lambda: xedm.xmap(DUP, columns=["x", "y"], E=2),
    "multiview": lambda: xedm.multiview(DUP, ["x", "y"], "x", E=2),
    "causal_network": lambda: xedm.causal_network(DUP, columns=["x", "y"], E=2, surrogates=9,
                                                  seed=1),
    "surrogates": lambda: xedm.surrogates(DUP, "ebisuzaki", 3, seed=1),
    "test_nonlinearity": lambda: xedm.test_nonlinearity(DUP, 2, theta=[0, 1], surrogates=9,
                                                        seed=1, target="x"),
    "rqa": lambda: xedm.rqa(DUP, "x", E=2, recurrence_rate=0.1),
    "recurrence_plot": lambda: xedm.recurrence_plot(DUP, "x", E=2, recurrence_rate=0.1),
    "recurrence_network": lambda: xedm.recurrence_network(DUP, "x", E=2, recurrence_rate=0.1),
    "compat Simplex": lambda: P.Simplex(pd.DataFrame({"Time": t // 2 + 1, "x": X}),
                                        columns="x", target="x", lib="1 60", pred="61 110",
                                        E=2),
}
for _name, _call in _DUP_CALLS.items():
    CASES.append(Case("duplicate time labels", _name, _call, r"time|duplicate|repeat"))


# --------------------------------------------------------------- constant / all-NaN data
@case("constant or all-NaN", "causal_network one constant series", r"s1|constant")
def _():
    return xedm.causal_network(_da(X, CONST, Y), E=2, surrogates=9, seed=1)


CASES[-1].want = ("warning",)


@case("constant or all-NaN", "causal_network all constant", r"constant")
def _():
    return xedm.causal_network(_da(CONST, CONST + 1), E=2, surrogates=9, seed=1)


CASES[-1].want = ("warning", "clear")


@case("constant or all-NaN", "causal_network all-NaN", r"NaN|finite")
def _():
    return xedm.causal_network(_da(NAN, NAN), E=2, surrogates=9, seed=1)


@case("constant or all-NaN", "multiview constant target", r"constant|variance", ("warning",))
def _():
    return xedm.multiview(_ds(x=CONST, y=Y), ["x", "y"], "x", E=2)


@case("constant or all-NaN", "multiview constant column", r"constant|'y'", ("warning",))
def _():
    return xedm.multiview(_ds(x=X, y=CONST), ["x", "y"], "x", E=2)


@case("constant or all-NaN", "multiview all-NaN", r"NaN|finite")
def _():
    return xedm.multiview(_ds(x=NAN, y=NAN), ["x", "y"], "x", E=2)


@case("constant or all-NaN", "simplex generate_steps constant", r"constant", ("warning",))
def _():
    return xedm.simplex(CONST, 2, generate_steps=5)


@case("constant or all-NaN", "simplex generate_steps all-NaN", r"NaN|finite")
def _():
    return xedm.simplex(NAN, 2, generate_steps=5)


@case("constant or all-NaN", "smap generate_steps all-NaN", r"NaN|finite")
def _():
    return xedm.smap(NAN, 2, generate_steps=5)


@case("constant or all-NaN", "smap generate_steps constant", r"constant", ("warning",))
def _():
    return xedm.smap(CONST, 2, generate_steps=5, theta=1)


@case("constant or all-NaN", "iaaft surrogates constant", r"constant", ("warning", "clear"))
def _():
    return xedm.surrogates(xr.DataArray(CONST, dims="time"), "iaaft", 3, seed=1)


@case("constant or all-NaN", "iaaft surrogates all-NaN", r"NaN|finite")
def _():
    return xedm.surrogates(xr.DataArray(NAN, dims="time"), "iaaft", 3, seed=1)


@case("constant or all-NaN", "iaaft surrogates one constant series", r"constant|s1",
      ("warning",))
def _():
    return xedm.surrogates(_da(X, CONST), "iaaft", 3, seed=1)


@case("constant or all-NaN", "compat CCM constant", r"constant|'y'|y", ("warning",))
def _():
    return P.CCM(_df(x=X, y=CONST), columns="x", target="y", libSizes="20 60", sample=5,
                 E=2, seed=1)


@case("constant or all-NaN", "compat CCM all-NaN", r"NaN|finite")
def _():
    return P.CCM(_df(x=NAN, y=NAN), columns="x", target="y", libSizes="20 60", sample=5, E=2,
                 seed=1)


# --------------------------------------------------------------- fractions as strings
@case("strings for numbers", "causal_network alpha='0.05'", r"alpha")
def _():
    return xedm.causal_network(DA, E=2, surrogates=9, seed=1, alpha="0.05")


@case("strings for numbers", "smap alpha='0.05'", r"alpha")
def _():
    return xedm.smap(X, 2, solver="ridge", alpha="0.05")


@case("strings for numbers", "predict_nonlinear alpha='0.05'", r"alpha")
def _():
    return xedm.predict_nonlinear(X, 2, theta=[0, 1], solver="ridge", alpha="0.05")


@case("strings for numbers", "rqa recurrence_rate='0.05'", r"recurrence_rate")
def _():
    return xedm.rqa(X, E=2, recurrence_rate="0.05")


@case("strings for numbers", "causal_network min_partial='0.2'", r"min_partial")
def _():
    return xedm.causal_network(DA, E=2, surrogates=9, seed=1, min_partial="0.2")


@case("strings for numbers", "surrogates recurrence_rate='0.1'", r"recurrence_rate")
def _():
    return xedm.surrogates(xr.DataArray(X, dims="time"), "twin", 3, seed=1,
                           recurrence_rate="0.1")


@case("strings for numbers", "neighbors_recall='0.9'", r"neighbors_recall")
def _():
    return xedm.simplex(X, 2, neighbors="nndescent", neighbors_recall="0.9")


# --------------------------------------------------------------- duplicates, sizes
@case("repeats and sizes", "recurrence_network duplicated measures", r"measures",
      ("clear", "warning"))
def _():
    return xedm.recurrence_network(X, E=2, recurrence_rate=0.1,
                                   measures=["degree", "degree", "transitivity"])


@case("repeats and sizes", "ccm lib_sizes larger than pooled replicates", r"lib_sizes")
def _():
    plots = xr.concat([xr.Dataset({"x": ("time", X[:50] * s), "y": ("time", Y[:50])})
                       for s in (1.0, 1.1, 0.9)], dim="plot")
    pooled = xedm.pool_replicates(plots, "plot", E=2)
    return xedm.ccm(pooled, ["x", "y"], lib_sizes=[20, 1000], E=2, samples=5, seed=1)


@case("repeats and sizes", "ccm lib_sizes larger than the data", r"lib_sizes")
def _():
    return xedm.ccm(DS, ["x", "y"], lib_sizes=[20, 10 * T], E=2, samples=5, seed=1)


# --------------------------------------------------------------- compat
_KW = dict(columns="x", target="x", lib="1 60", pred="61 110", E=2)


@case("compat", "Simplex lib=None", r"lib")
def _():
    return P.Simplex(DF, **{**_KW, "lib": None})


@case("compat", "Simplex target='x y'", r"target")
def _():
    return P.Simplex(DF, **{**_KW, "target": "x y"})


@case("compat", "Simplex noTime='yes'", r"noTime")
def _():
    return P.Simplex(DF, **_KW, noTime="yes")


@case("compat", "CCM libSizes beyond the data", r"libSizes")
def _():
    return P.CCM(DF, columns="x", target="y", libSizes="20 500", sample=5, E=2, seed=1)


@case("compat", "Multiview knn=3", r"knn")
def _():
    return P.Multiview(DF, columns="x y", target="x", lib="1 60", pred="61 110", E=2, knn=3)


@case("compat", "PredictExclusionRadius exclusionRadius=[]", r"exclusionRadius")
def _():
    return P.PredictExclusionRadius(DF, **_KW, exclusionRadius=[], showPlot=False)


@case("compat", "CCM target='y x'", r"target")
def _():
    return P.CCM(DF, columns="x", target="y x", libSizes="20 60", sample=5, E=2, seed=1)


# --------------------------------------------------------------- scale
@case("scale", "simplex pred_variance at 1e200", r"pred_variance", ("accepted", "warning"))
def _():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = xedm.simplex(X * 1e200, 2)
    said = [w for w in caught if "pred_variance" in str(w.message)]
    if said:  # its variance (1e400) has no float64 value: inf with the reason is right
        warnings.warn(str(said[0].message), UserWarning, stacklevel=1)
    elif not np.isfinite(res.pred_variance.values[1:]).all():
        raise _Nonsense("pred_variance is inf at 1e200 while the prediction is finite, "
                        "without a warning")
    return res


# --------------------------------------------------------------- solver
@case("solver", "smap solver=class", r"solver")
def _():
    return xedm.smap(X, 2, solver=_Ridge)


@case("solver", "smap solver=KMeans()", r"solver")
def _():
    return xedm.smap(X, 2, solver=_KMeans())


@case("solver", "predict_nonlinear solver=KMeans()", r"solver")
def _():
    return xedm.predict_nonlinear(X, 2, theta=[0, 1], solver=_KMeans())


@case("solver", "compat SMap solver=KMeans()", r"solver")
def _():
    return P.SMap(DF, **_KW, theta=1, solver=_KMeans())


@case("solver", "compat SMap solver=class", r"solver")
def _():
    return P.SMap(DF, **_KW, theta=1, solver=_Ridge)


@case("solver", "smap solver=sklearn KMeans()", r"solver")
def _():
    from sklearn.cluster import KMeans

    return xedm.smap(X, 2, solver=KMeans(n_clusters=2, n_init=1))


# --------------------------------------------------------------- bad parameters, new functions
# every parameter of the newer functions given each kind of wrong value: the message must name
# the parameter (a result is classified too, but most of these values are wrong beyond doubt)
_REP = xr.DataArray(np.stack([X, Y]), dims=("replicate", "time"))
_NEW = {
    "causal_network": (lambda **k: xedm.causal_network(DA, E=2, surrogates=9, seed=1, **k),
                       ["E", "tau", "lags", "knn", "exclusion_radius", "surrogates",
                        "surrogate_method", "p_method", "seed", "max_lag", "conditioning",
                        "E_from", "E_max", "backend", "progress", "neighbors",
                        "surrogate_options"]),
    "multiview": (lambda **k: xedm.multiview(DS, ["x", "y"], "x", **k),
                  ["E", "D", "multiview", "train_lib", "exclude_target", "tau", "Tp", "knn",
                   "exclusion_radius", "lib", "pred", "backend", "neighbors", "series_dim"]),
    "pool_replicates": (lambda **k: xedm.pool_replicates(_REP, **k),
                        ["E", "tau", "Tp", "replicate_dim", "time_dim"]),
    "test_nonlinearity": (lambda **k: xedm.test_nonlinearity(X, 2, surrogates=5, seed=1, **k),
                          ["theta", "surrogates", "method", "seed", "tau", "Tp", "knn",
                           "exclusion_radius", "surrogate_options"]),
    "skill_grid": (lambda **k: xedm.skill_grid(X, **k),
                   ["E", "tau", "Tp", "theta", "knn", "solver", "alpha"]),
    "predict_tau": (lambda **k: xedm.predict_tau(X, 2, **k), ["tau_max", "tau", "Tp", "knn"]),
    "recurrence_network": (lambda **k: xedm.recurrence_network(X, recurrence_rate=0.1, **k),
                           ["E", "tau", "norm", "measures", "eps_method"]),
}
_BAD = {"str": "abc", "negative": -3, "float": 2.5, "None": None, "list": [1, 2],
        "huge": 10**20, "bool": True, "dict": {}, "nan": float("nan")}
for _f, (_call, _params) in _NEW.items():
    for _p in _params:
        for _b, _v in _BAD.items():
            CASES.append(Case("bad parameters (new functions)", f"{_f} {_p}={_b}",
                              (lambda c=_call, p=_p, v=_v: c(**{p: v})), re.escape(_p),
                              ("clear", "accepted", "warning")))


class _Nonsense(Exception):
    """A result that is wrong in a way the classification cannot see by itself."""


def _has_nan(res) -> bool:
    """NaN where a result must have a number: any skill or p-value, or a whole prediction or
    array (NaN at its edges or in gaps, as pool_replicates' between replicates, is normal)."""
    if isinstance(res, xr.Dataset):
        for k in ("rho", "p_value", "RR"):
            if k in res and res[k].dtype.kind == "f" and np.isnan(res[k].values).any():
                return True
        pred = res.get("prediction")
        return pred is not None and bool(np.isnan(pred.values).all())
    if isinstance(res, xr.DataArray):
        return res.dtype.kind == "f" and bool(np.isnan(res.values).all())
    if isinstance(res, pd.DataFrame):
        num = res.select_dtypes("number").drop(columns=["Time"], errors="ignore")
        return bool(num.isna().all().any()) if len(num) else False
    if isinstance(res, dict):
        return any(_has_nan(v) for v in res.values())
    return False


def classify(c: Case) -> tuple[str, str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = c.call()
        except (ValueError, TypeError) as err:
            msg = f"{type(err).__name__}: {err}"
            return ("clear" if re.search(c.words, str(err)) else "vague"), msg
        except _Nonsense as err:
            return "silent_nan", str(err)
        except Exception as err:  # noqa: BLE001 - the point is to count them
            return "other", f"{type(err).__name__}: {err}"
    texts = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    named = [m for m in texts if re.search(c.words, m)]
    if named:
        return "warning", named[0]
    if _has_nan(res):
        return "silent_nan", "; ".join(texts)[:300]
    return "accepted", "; ".join(texts)[:300]


OUTCOMES = ("clear", "vague", "warning", "silent_nan", "accepted", "other")


def run() -> dict:
    rows = []
    for c in CASES:
        outcome, msg = classify(c)
        rows.append({"group": c.group, "case": c.name, "outcome": outcome,
                     "good": outcome in c.want, "message": msg[:400]})
        print(f"{'ok ' if outcome in c.want else 'BAD'} {outcome:10s} {c.group:24s} {c.name}"
              f"  | {msg[:110]}", flush=True)
    counts = {k: sum(r["outcome"] == k for r in rows) for k in OUTCOMES}
    groups = {}
    for r in rows:
        g = groups.setdefault(r["group"], {k: 0 for k in OUTCOMES} | {"good": 0, "cases": 0})
        g[r["outcome"]] += 1
        g["good"] += r["good"]
        g["cases"] += 1
    return {"cases": len(rows), "good": sum(r["good"] for r in rows), "counts": counts,
            "groups": groups, "rows": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write (or add to) this JSON file")
    ap.add_argument("--label", default="run", help="the key of this run in --json")
    ap.add_argument("--commit", help="the commit of the xedm imported (default: this "
                                     "checkout's HEAD), e.g. when PYTHONPATH points at an "
                                     "export of an older commit")
    a = ap.parse_args(argv)
    out = run()
    print(f"{out['good']} of {out['cases']} cases good; outcomes {out['counts']}")
    if a.json:
        try:
            with open(a.json) as f:
                whole = json.load(f)
        except FileNotFoundError:
            whole = {}
        import subprocess
        commit = a.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                            capture_output=True, text=True).stdout.strip()
        whole[a.label] = {"commit": commit, "xedm": xedm.__file__, "argv": sys.argv, **out}
        with open(a.json, "w") as f:
            json.dump(whole, f, indent=1)


if __name__ == "__main__":
    main()
