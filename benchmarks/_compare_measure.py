"""Measurement of benchmarks/compare.py: timing (best of N, second pass for short calls), rho
agreement between the tools, and the Row each case fills in.
"""

from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import dataclass, field


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
