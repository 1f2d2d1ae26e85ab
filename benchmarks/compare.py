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
import inspect
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

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


# --------------------------------------------------------------------------- data
def lorenz_x(n, dt=0.01, subsample=5, transient=1000):
    """x of Lorenz-63 (sigma=10, rho=28, beta=8/3), RK4 with step dt, every `subsample` steps.

    Pure Python on floats: deterministic, no dependency, ~0.1 s per 10,000 samples.
    """
    import numpy as np

    s, r, b = 10.0, 28.0, 8.0 / 3.0
    x, y, z = 1.0, 1.0, 1.0
    h = dt
    out = np.empty(n)

    def step(x, y, z):
        k1x, k1y, k1z = s * (y - x), x * (r - z) - y, x * y - b * z
        x2, y2, z2 = x + 0.5 * h * k1x, y + 0.5 * h * k1y, z + 0.5 * h * k1z
        k2x, k2y, k2z = s * (y2 - x2), x2 * (r - z2) - y2, x2 * y2 - b * z2
        x3, y3, z3 = x + 0.5 * h * k2x, y + 0.5 * h * k2y, z + 0.5 * h * k2z
        k3x, k3y, k3z = s * (y3 - x3), x3 * (r - z3) - y3, x3 * y3 - b * z3
        x4, y4, z4 = x + h * k3x, y + h * k3y, z + h * k3z
        k4x, k4y, k4z = s * (y4 - x4), x4 * (r - z4) - y4, x4 * y4 - b * z4
        return (
            x + h / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x),
            y + h / 6.0 * (k1y + 2 * k2y + 2 * k3y + k4y),
            z + h / 6.0 * (k1z + 2 * k2z + 2 * k3z + k4z),
        )

    for _ in range(transient):
        x, y, z = step(x, y, z)
    for i in range(n):
        out[i] = x
        for _ in range(subsample):
            x, y, z = step(x, y, z)
    return out


def logistic(n, r=3.9, x0=0.4, transient=100):
    """Logistic map x[t+1] = r x[t] (1 - x[t]); pure Python, ~0.3 s per million points."""
    import numpy as np

    out = np.empty(n)
    x = x0
    for _ in range(transient):
        x = r * x * (1.0 - x)
    for i in range(n):
        out[i] = x
        x = r * x * (1.0 - x)
    return out


def coupled_logistic(n, transient=100):
    """Sugihara et al. (2012) pair: x drives y (beta_yx = 0.1), y barely drives x (0.02)."""
    import numpy as np

    x, y = 0.4, 0.2
    out = np.empty((2, n))
    for t in range(transient + n):
        if t >= transient:
            out[0, t - transient] = x
            out[1, t - transient] = y
        x, y = x * (3.8 - 3.8 * x - 0.02 * y), y * (3.5 - 3.5 * y - 0.1 * x)
    return out


def network_logistic(n_series, n, beta=0.05, transient=100):
    """n_series logistic maps (r in 3.6..3.9) on a ring, series i driven by series i-1."""
    import numpy as np

    r = np.linspace(3.6, 3.9, n_series)
    x = np.linspace(0.2, 0.7, n_series)
    out = np.empty((n_series, n))
    for t in range(transient + n):
        if t >= transient:
            out[:, t - transient] = x
        x = x * (r - r * x - beta * np.roll(x, 1))
    return out


def as_dataarray(values, dim="time", series_dim="series"):
    import numpy as np
    import xarray as xr

    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        return xr.DataArray(values, dims=(dim,), coords={dim: np.arange(1, values.size + 1)})
    return xr.DataArray(
        values,
        dims=(series_dim, dim),
        coords={series_dim: np.arange(values.shape[0]), dim: np.arange(1, values.shape[1] + 1)},
    )


def as_frame(columns: dict):
    import numpy as np
    import pandas as pd

    n = len(next(iter(columns.values())))
    return pd.DataFrame({"Time": np.arange(1, n + 1), **columns})


# --------------------------------------------------------------------------- helpers
def rho_of(obs, pred):
    """Pearson rho over finite pairs, float64 (the CONVENTIONS definition)."""
    import numpy as np

    obs = np.asarray(obs, dtype=np.float64)
    pred = np.asarray(pred, dtype=np.float64)
    ok = np.isfinite(obs) & np.isfinite(pred)
    if ok.sum() < 3:
        return float("nan")
    return float(np.corrcoef(obs[ok], pred[ok])[0, 1])


def kedm_rho(x, pred, E, tau=1, Tp=1):
    """rho of kEDM's output against the series: output i targets index i+(E-1)tau+Tp."""
    start = (E - 1) * tau + Tp
    obs = x[start:]
    m = min(len(obs), len(pred))
    return rho_of(obs[:m], pred[:m])


def pyedm_rho(df):
    return rho_of(df["Observations"].to_numpy(), df["Predictions"].to_numpy())


def scalar(v):
    import numpy as np

    return float(np.asarray(v).reshape(-1)[0]) if np.asarray(v).size == 1 else np.asarray(v)


def call(fn, *args, **kwargs):
    """Call fn, silently dropping optional keyword arguments its signature does not have.

    Keeps the benchmark running while xedm's signatures settle (e.g. ``progress=``).
    Keys listed in ``kwargs.pop('_required', ())`` are always passed.
    """
    required = set(kwargs.pop("_required", ()))
    try:
        sig = inspect.signature(fn)
        params = sig.parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            kwargs = {k: v for k, v in kwargs.items() if k in params or k in required}
    except (TypeError, ValueError):
        pass
    return fn(*args, **kwargs)


def timed(fn, repeat=3, long_s=2.0):
    """(best seconds, last result): repeat only calls shorter than long_s."""
    t0 = time.perf_counter()
    out = fn()
    best = time.perf_counter() - t0
    n = 1
    while n < repeat and best < long_s:
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
        n += 1
    return best, out


RETIME_S = 0.5  # calls shorter than this get a second timing pass at the end of their row


def retime(row, repeat):
    """Second pass for a row's short calls: each tool's best over both passes."""
    for attr, fn in row.__dict__.pop("_retime", []):
        current = getattr(row, attr)
        if current is None:
            continue
        best, _ = timed(quiet(fn), repeat)
        setattr(row, attr, min(current, best))


def quiet(fn):
    def wrapped():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()

    return wrapped


def maxabs(*pairs):
    """max |a - b| over pairs of numbers/arrays, ignoring NaN; None when nothing to compare."""
    import numpy as np

    vals = []
    for a, b in pairs:
        if a is None or b is None:
            continue
        d = np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
        d = d[np.isfinite(d)]
        if d.size:
            vals.append(float(d.max()))
    return max(vals) if vals else None


# --------------------------------------------------------------------------- rows
@dataclass
class Row:
    name: str
    label: str
    xedm_s: float | None = None
    kedm_s: float | None = None
    pyedm_s: float | None = None
    d_rho_pyedm: float | None = None  # max |rho_xedm - rho_pyEDM|
    d_rho_kedm: float | None = None  # max |rho_xedm - rho_kEDM|
    rho: float | None = None  # xedm's rho (first one, for the eye)
    target: str = ""
    notes: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def x_over_k(self):
        if self.xedm_s and self.kedm_s:
            return self.xedm_s / self.kedm_s
        return None

    @property
    def p_over_x(self):
        if self.xedm_s and self.pyedm_s:
            return self.pyedm_s / self.xedm_s
        return None


class Bench:
    def __init__(self, args, tools, notes):
        self.args = args
        self.quick = args.quick
        self.xedm = tools["xedm"]
        self.kedm = tools["kedm"]
        self.pyedm = tools["pyEDM"]
        self.tool_notes = notes
        self.threads = args.threads or os.cpu_count() or 1
        self._cache = {}

    # sizes --------------------------------------------------------------
    def L(self, full, quick):
        return quick if self.quick else full

    def series(self, n):
        key = ("lorenz", n)
        if key not in self._cache:
            self._cache[key] = lorenz_x(n)
        return self._cache[key]

    def xfn(self, name):
        """xedm.<name> or None."""
        if self.xedm is None:
            return None
        try:
            return getattr(self.xedm, name)
        except AttributeError:
            return None

    def run_tool(self, row, tool, fn):
        """Time fn for one tool; errors become notes, never crashes.

        Short calls (< RETIME_S) are timed again after the row's other tools ran (see
        :func:`retime`): on a shared VM a slow spell then cannot land on one tool only.
        """
        try:
            best, out = timed(quiet(fn), self.args.repeat)
        except Exception as exc:
            row.notes.append(f"{tool} failed: {type(exc).__name__}: {str(exc)[:160]}")
            return None, None
        attr = {"xedm": "xedm_s", "kEDM": "kedm_s", "pyEDM": "pyedm_s"}.get(tool)
        if attr is not None and best < RETIME_S:
            row.__dict__.setdefault("_retime", []).append((attr, fn))
        return best, out

    # warm-up ------------------------------------------------------------
    def warm_up(self):
        """Run each xedm function once on tiny data; returns seconds (None if no xedm)."""
        if self.xedm is None:
            return None, []
        da = as_dataarray(self.series(80))
        done = []
        t0 = time.perf_counter()
        jobs = [
            ("simplex", lambda f: f(da, E=3)),
            ("smap", lambda f: f(da, E=3, theta=2.0)),
            ("embed_dimension", lambda f: call(f, da, E_max=4)),
            (
                "ccm",
                lambda f: call(
                    f,
                    _ccm_dataset(coupled_logistic(80)),
                    columns=["x", "y"],
                    lib_sizes=[20, 40],
                    samples=3,
                    seed=1,
                    E=2,
                    progress=False,
                ),
            ),
            (
                "xmap",
                lambda f: call(
                    f, as_dataarray(network_logistic(3, 80)), dim="series", E=2, progress=False
                ),
            ),
            (
                "xmap",
                lambda f: call(
                    f,
                    as_dataarray(network_logistic(3, 80)),
                    dim="series",
                    E=None,
                    E_max=4,
                    progress=False,
                ),
            ),
        ]
        for name, job in jobs:
            fn = self.xfn(name)
            if fn is None:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    job(fn)
                done.append(name)
            except Exception as exc:
                print(f"  warm-up of xedm.{name} failed: {type(exc).__name__}: {exc}")
        # pyEDM's first call pays its own imports; keep that out of its timings too
        if self.pyedm is not None:
            try:
                quiet(
                    lambda: self.pyedm.Simplex(
                        as_frame({"x": self.series(80)}),
                        columns="x",
                        target="x",
                        lib="1 80",
                        pred="1 80",
                        E=2,
                    )
                )()
            except Exception:
                pass
        return time.perf_counter() - t0, done

    # simplex ------------------------------------------------------------
    def simplex_row(self, name, L, E, target=""):
        import numpy as np

        x = self.series(L)
        row = Row(name, f"simplex LOO L={L:,} E={E}", target=target)
        f = self.xfn("simplex")
        rx = rk = rp = None
        if f is None:
            row.notes.append("xedm.simplex missing")
        else:
            da = as_dataarray(x)
            row.xedm_s, res = self.run_tool(row, "xedm", lambda: f(da, E=E))
            if res is not None:
                rx = scalar(res["rho"])
                row.rho = rx
        if self.kedm is not None:
            x32 = x.astype(np.float32)
            row.kedm_s, pred = self.run_tool(row, "kEDM", lambda: self.kedm.simplex(x32, x32, E=E))
            if pred is not None:
                rk = kedm_rho(x, pred, E)
        if self.pyedm is not None:
            df = as_frame({"x": x})
            row.pyedm_s, out = self.run_tool(
                row,
                "pyEDM",
                lambda: self.pyedm.Simplex(
                    df,
                    columns="x",
                    target="x",
                    lib=f"1 {L}",
                    pred=f"1 {L}",
                    E=E,
                    Tp=1,
                    kdWorkers=self.threads,
                ),
            )
            if out is not None:
                rp = pyedm_rho(out)
        row.d_rho_pyedm = maxabs((rx, rp))
        row.d_rho_kedm = maxabs((rx, rk))
        return row

    # S-map --------------------------------------------------------------
    def smap_row(self, name, L, E=5, theta=2.0):
        import numpy as np

        x = self.series(L)
        row = Row(name, f"smap LOO L={L:,} E={E} theta={theta:g}")
        f = self.xfn("smap")
        rx = rk = rp = None
        if f is None:
            row.notes.append("xedm.smap missing")
        else:
            da = as_dataarray(x)
            row.xedm_s, res = self.run_tool(row, "xedm", lambda: f(da, E=E, theta=theta))
            if res is not None:
                rx = scalar(res["rho"])
                row.rho = rx
        if self.kedm is not None:
            x32 = x.astype(np.float32)
            row.kedm_s, pred = self.run_tool(
                row, "kEDM", lambda: self.kedm.smap(x32, x32, E=E, theta=theta)
            )
            if pred is not None:
                rk = kedm_rho(x, pred, E)
        if self.pyedm is not None:
            df = as_frame({"x": x})
            # leave-one-out with pyEDM's default knn (len(lib)-1) uses every other library
            # point: the same neighbour set as xedm's default
            row.pyedm_s, out = self.run_tool(
                row,
                "pyEDM",
                lambda: self.pyedm.SMap(
                    df,
                    columns="x",
                    target="x",
                    lib=f"1 {L}",
                    pred=f"1 {L}",
                    E=E,
                    Tp=1,
                    theta=theta,
                    kdWorkers=self.threads,
                ),
            )
            if out is not None:
                rp = pyedm_rho(out["predictions"])
        row.d_rho_pyedm = maxabs((rx, rp))
        row.d_rho_kedm = maxabs((rx, rk))
        row.notes.append("kEDM S-map is float32 (sgels) with mean(d) over n_lib incl. self")
        return row

    # embed_dimension ----------------------------------------------------
    def edim_row(self, name, L, E_max=20):
        import numpy as np

        x = self.series(L)
        half = L // 2
        row = Row(name, f"embed_dimension E=1..{E_max} L={L:,} (lib 1st half, pred 2nd)")
        f = self.xfn("embed_dimension")
        rho_x = rho_p = None
        best = {}
        if f is None:
            row.notes.append("xedm.embed_dimension missing")
        else:
            da = as_dataarray(x)
            row.xedm_s, res = self.run_tool(
                row, "xedm", lambda: f(da, E_max=E_max, lib=slice(1, half), pred=slice(half + 1, L))
            )
            if res is not None:
                rho_x = np.asarray(res["rho"].values, dtype=float).reshape(-1)
                row.rho = float(np.nanmax(rho_x))
                best["xedm"] = int(res.attrs.get("best_E", int(np.nanargmax(rho_x)) + 1))
        if self.kedm is not None:
            x32 = x.astype(np.float32)
            row.kedm_s, bk = self.run_tool(
                row, "kEDM", lambda: self.kedm.edim(x32, E_max=E_max, tau=1, Tp=1)
            )
            if bk is not None:
                best["kEDM"] = int(bk)
                # kEDM's rho per E, untimed, for the agreement column
                lib32, pred32 = x32[:half], x32[half:]
                rho_k = []
                for E in range(1, E_max + 1):
                    p = self.kedm.simplex(lib32, pred32, E=E, Tp=1)
                    rho_k.append(kedm_rho(x[half:], p, E))
                if rho_x is not None:
                    # xedm's pred windows may reach back into the first half (E-1 more
                    # points than kEDM): rho differs by O(E/L)
                    row.d_rho_kedm = maxabs((rho_x, np.array(rho_k)))
        if self.pyedm is not None:
            df = as_frame({"x": x})
            row.pyedm_s, out = self.run_tool(
                row,
                "pyEDM",
                lambda: self.pyedm.EmbedDimension(
                    df,
                    columns="x",
                    target="x",
                    maxE=E_max,
                    lib=f"1 {half}",
                    pred=f"{half + 1} {L}",
                    Tp=1,
                    numProcess=self.threads,
                    kdWorkers=1,
                    showPlot=False,
                ),
            )
            if out is not None:
                rho_p = out["rho"].to_numpy(dtype=float)  # rounded to 6 dp by pyEDM
                best["pyEDM"] = int(out["E"].to_numpy()[int(np.nanargmax(rho_p))])
                row.d_rho_pyedm = maxabs((rho_x, rho_p))
        row.extra["best_E"] = best
        if best:
            row.notes.append("best E " + ", ".join(f"{k}={v}" for k, v in best.items()))
        row.notes.append("pyEDM rho rounded to 6 dp")
        return row

    # big ------------------------------------------------------------------
    def big_row(self, name, L, E):
        row = Row(name, f"simplex LOO L={L:,} E={E} (xedm alone)", target="peak RSS < 4 GB")
        if self.xfn("simplex") is None:
            row.notes.append("xedm.simplex missing")
            return row
        cmd = [sys.executable, str(Path(__file__).resolve()), "--_child-big", str(L), str(E)]
        env = dict(os.environ)
        if self.args.threads:
            env["OMP_NUM_THREADS"] = env["NUMBA_NUM_THREADS"] = str(self.args.threads)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        line = [s for s in proc.stdout.splitlines() if s.startswith("{")]
        if proc.returncode != 0 or not line:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            row.notes.append(f"child failed (rc={proc.returncode}): {' | '.join(tail)[:300]}")
            return row
        info = json.loads(line[-1])
        row.xedm_s = info["seconds"]
        row.rho = info["rho"]
        row.extra.update(info)
        gb = info["peak_rss_bytes"] / 1e9
        row.notes.append(
            f"peak RSS {gb:.2f} GB ({'OK' if gb < 4 else 'OVER'} < 4 GB), "
            f"data+interpreter before the call {info['rss_before_bytes'] / 1e9:.2f} GB"
        )
        return row

    # xmap -----------------------------------------------------------------
    def xmap_row(self, name, N, L, E_max=20):
        import numpy as np

        data = network_logistic(N, L)
        row = Row(
            name,
            f"xmap N={N} L={L:,}, E per series (E_max={E_max}) + all pairs",
            target="<= 0.5x kEDM (edim+xmap)" if not self.quick else "",
        )
        f = self.xfn("xmap")
        if f is None:
            row.notes.append("skipped xedm column: xedm.xmap does not exist yet")
        else:
            da = as_dataarray(data)
            row.xedm_s, res = self.run_tool(
                row, "xedm", lambda: call(f, da, dim="series", E=None, E_max=E_max, progress=False)
            )
            if res is not None:
                rho = res["rho"] if hasattr(res, "data_vars") else res
                row.rho = float(np.nanmean(np.asarray(rho)))
        if self.kedm is not None:
            d32 = np.ascontiguousarray(data.T.astype(np.float32))  # (L, N): columns = series
            t_edim, edims = self.run_tool(
                row,
                "kEDM edim",
                lambda: [int(self.kedm.edim(d32[:, i].copy(), E_max=E_max)) for i in range(N)],
            )
            if edims is not None:
                t_xmap, _ = self.run_tool(row, "kEDM xmap", lambda: self.kedm.xmap(d32, edims))
                if t_xmap is not None:
                    row.kedm_s = t_edim + t_xmap
                    row.extra.update(kedm_edim_s=t_edim, kedm_xmap_s=t_xmap)
                    row.notes.append(f"kEDM edim {t_edim:.2f} s + xmap {t_xmap:.2f} s")
        # rho agreement, untimed: a few series, one common E (kEDM uses the target's E,
        # xedm the library's, so only a common E compares like with like)
        if f is not None and self.kedm is not None:
            n_sub, E_c = min(N, 6), 3
            sub = data[:n_sub]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rx = call(f, as_dataarray(sub), dim="series", E=E_c, progress=False)
                rx = rx["rho"] if hasattr(rx, "data_vars") else rx
                if {"library", "target"} <= set(getattr(rx, "dims", ())):
                    rx = rx.transpose("library", "target")  # kEDM's [i, j] = library i
                rx = np.asarray(rx, dtype=float)
                rk = self.kedm.xmap(np.ascontiguousarray(sub.T.astype(np.float32)), [E_c] * n_sub)
                row.d_rho_kedm = maxabs((rx, rk))
                row.notes.append(f"d_rho on {n_sub} series, E={E_c} for all")
            except Exception as exc:
                row.notes.append(f"xmap rho check failed: {type(exc).__name__}: {exc}")
        return row

    # ccm ------------------------------------------------------------------
    def ccm_row(self, name, L, n_sizes=10, samples=100, E=2):
        import numpy as np

        data = coupled_logistic(L)
        M = L - (E - 1)  # valid states at Tp=0: the full library
        sizes = [int(s) for s in np.linspace(M / n_sizes, M, n_sizes).round()]
        sizes[-1] = M
        row = Row(
            name,
            f"ccm x<->y L={L:,} {n_sizes} lib sizes x {samples} samples E={E}",
            target=">= 50x pyEDM" if not self.quick else "",
        )
        f = self.xfn("ccm")
        rx = None
        seed = 42
        if f is None:
            row.notes.append("skipped xedm column: xedm.ccm does not exist yet")
        else:
            ds = _ccm_dataset(data)
            row.xedm_s, res = self.run_tool(
                row,
                "xedm",
                lambda: call(
                    f,
                    ds,
                    columns=["x", "y"],
                    lib_sizes=sizes,
                    samples=samples,
                    seed=seed,
                    E=E,
                    tau=1,
                    Tp=0,
                    progress=False,
                    _required=("samples", "seed"),
                ),
            )
            if res is not None:
                try:
                    rho = res["rho"] if hasattr(res, "data_vars") else res
                    rx = {
                        "x:y": np.asarray(rho.sel(library="x", target="y"), dtype=float),
                        "y:x": np.asarray(rho.sel(library="y", target="x"), dtype=float),
                    }
                    row.rho = float(rx["y:x"][-1])
                except Exception as exc:
                    row.notes.append(f"xedm ccm result not understood: {exc}")
        if self.kedm is not None:
            x32, y32 = (np.ascontiguousarray(v.astype(np.float32)) for v in data)
            # kEDM draws lib_size raw positions of the series (Floyd, without replacement),
            # (E-1)tau+Tp of which can never be library states; only lib_size >= len(series)
            # is its full library. So its last size is L, not M.
            k_sizes = sizes[:-1] + [L]

            def kedm_both():
                return {
                    "x:y": np.array(
                        self.kedm.ccm(
                            x32, y32, lib_sizes=k_sizes, sample=samples, E=E, tau=1, Tp=0, seed=seed
                        )
                    ),
                    "y:x": np.array(
                        self.kedm.ccm(
                            y32, x32, lib_sizes=k_sizes, sample=samples, E=E, tau=1, Tp=0, seed=seed
                        )
                    ),
                }

            row.kedm_s, rk = self.run_tool(row, "kEDM", kedm_both)
            if rx is not None and rk is not None:
                row.d_rho_kedm = maxabs(*((rx[k][-1], rk[k][-1]) for k in rx))
        if self.pyedm is not None:
            df = as_frame({"x": data[0], "y": data[1]})
            row.pyedm_s, out = self.run_tool(
                row,
                "pyEDM",
                lambda: self.pyedm.CCM(
                    df,
                    columns="x",
                    target="y",
                    libSizes=sizes,
                    sample=samples,
                    E=E,
                    Tp=0,
                    seed=seed,
                    parallel=self.threads,
                    showPlot=False,
                ),
            )
            if out is not None and rx is not None:
                rp = {"x:y": out["x:y"].to_numpy(float), "y:x": out["y:x"].to_numpy(float)}
                # only the full library size is deterministic: sampling RNGs differ
                row.d_rho_pyedm = maxabs(*((rx[k][-1], rp[k][-1]) for k in rx))
                row.extra["d_rho_pyedm_mean_over_sizes"] = maxabs(*((rx[k], rp[k]) for k in rx))
        row.notes.append("d_rho at the full library size only (sampling RNGs differ)")
        return row

    # table of rows --------------------------------------------------------
    def plan(self):
        q = self.quick
        L1k, L10k, L4k = (300, 600, 400) if q else (1_000, 10_000, 4_000)
        Ebig = 20
        rows = [
            ("simplex-1k-E3", lambda: self.simplex_row("simplex-1k-E3", L1k, 3)),
            ("simplex-1k-E20", lambda: self.simplex_row("simplex-1k-E20", L1k, 20 if not q else 8)),
            ("simplex-10k-E3", lambda: self.simplex_row("simplex-10k-E3", L10k, 3)),
            (
                "simplex-10k-E20",
                lambda: self.simplex_row("simplex-10k-E20", L10k, 20 if not q else 8),
            ),
            (
                "simplex-4k-E3",
                lambda: self.simplex_row(
                    "simplex-4k-E3", L4k, 3, target="" if q else ">= 100x pyEDM"
                ),
            ),
            ("smap-1k", lambda: self.smap_row("smap-1k", 200 if q else 1_000)),
            ("smap-4k", lambda: self.smap_row("smap-4k", 300 if q else 4_000)),
            (
                "edim-10k",
                lambda: self.edim_row("edim-10k", 600 if q else 10_000, E_max=6 if q else 20),
            ),
            (
                "xmap-100x1k",
                lambda: self.xmap_row(
                    "xmap-100x1k", *((4, 300) if q else (100, 1_000)), E_max=6 if q else 20
                ),
            ),
            (
                "xmap-20x10k",
                lambda: self.xmap_row(
                    "xmap-20x10k", *((3, 600) if q else (20, 10_000)), E_max=6 if q else 20
                ),
            ),
            (
                "ccm-2k",
                lambda: self.ccm_row(
                    "ccm-2k", 300 if q else 2_000, n_sizes=3 if q else 10, samples=5 if q else 100
                ),
            ),
            (
                "simplex-1M-E20",
                lambda: self.big_row("simplex-1M-E20", 2**14 if q else 2**20, Ebig if not q else 8),
            ),
        ]
        return rows


def _ccm_dataset(data):
    import xarray as xr

    da_x = as_dataarray(data[0])
    return xr.Dataset({"x": da_x, "y": as_dataarray(data[1])})


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


# --------------------------------------------------------------------------- report
def fmt_s(v):
    return "-" if v is None else (f"{v:.3f}" if v < 100 else f"{v:.1f}")


def fmt_ratio(v):
    if v is None:
        return "-"
    return f"{v:.2f}x" if v < 100 else f"{v:.0f}x"


def fmt_d(v):
    return "-" if v is None else f"{v:.1e}"


def print_table(rows):
    head = [
        "row",
        "case",
        "xedm s",
        "kEDM s",
        "pyEDM s",
        "xedm/kEDM",
        "pyEDM/xedm",
        "|drho| py",
        "|drho| k",
        "target",
    ]
    body = [
        [
            r.name,
            r.label,
            fmt_s(r.xedm_s),
            fmt_s(r.kedm_s),
            fmt_s(r.pyedm_s),
            fmt_ratio(r.x_over_k),
            fmt_ratio(r.p_over_x),
            fmt_d(r.d_rho_pyedm),
            fmt_d(r.d_rho_kedm),
            r.target,
        ]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))
    print(line)
    print("-" * len(line))
    for b in body:
        print("  ".join(str(x).ljust(w) for x, w in zip(b, widths, strict=True)))
    print()
    for r in rows:
        for n in r.notes:
            print(f"  [{r.name}] {n}")


def versions(tools):
    import numpy as np

    out = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("numba", "xarray", "scipy", "pandas"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            pass
    for k, m in tools.items():
        out[k] = getattr(m, "__version__", "?") if m is not None else None
    return out


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
        payload = {
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
        path.write_text(json.dumps(payload, indent=2, default=_json_default))
        print(f"\nwrote {path}")
    return 0


def _json_default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:
        pass
    if isinstance(o, float) and math.isnan(o):
        return None
    return str(o)


if __name__ == "__main__":
    sys.exit(main())
