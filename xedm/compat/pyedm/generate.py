"""pyEDM's ``generateSteps`` and ``generateConcat`` (Simplex and SMap): its frames and numbers.

pyEDM 2.5.7 generates as follows, and so does this module (each step one call of this
module's Simplex or SMap, computed by xedm):

- the prediction rows are ``[last lib row - 1, last lib row]`` (1-based), moved on by one
  row each step, with the library fixed;
- each step keeps the last row of that call's Projection (its time, observation,
  prediction, variance; S-map: its coefficients and singular values) and appends its
  prediction and time to the data *after the last row of the data*, as the newest value of
  the first column (the data then hold the time and that column only).

So where lib ends at the data's end each step feeds its forecast back (a true generative
forecast), while where lib ends before the data's end pyEDM's steps are one-step forecasts
from the observed data, the appended values unused until the rows reach them.
:func:`xedm.simplex` (``generate_steps=``) always feeds the forecasts back.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ...core.validate import check_bool
from ._args import _names, _target


def check_generate(dataFrame, columns, target, embedded, noTime) -> tuple[str, str]:
    """pyEDM's conditions for generation: univariate, not embedded, target = column, no
    datetime times (use noTime=True); returns (column, target)."""
    if embedded:
        raise ValueError("generateSteps > 0 needs embedded=False (one column, embedded here)")
    if not isinstance(dataFrame, pd.DataFrame):
        raise TypeError(f"dataFrame must be a pandas DataFrame, got "
                        f"{type(dataFrame).__name__}")
    available = [str(c) for c in dataFrame.columns]
    cols = _names(columns, available, "columns")
    if not cols:
        raise ValueError("columns is required, e.g. columns='x'")
    tgt = _target(target, available, cols)
    if tgt != cols[0]:
        raise ValueError(f"generateSteps > 0 needs target ({tgt}) == columns ({cols[0]}): "
                         "the forecast is fed back as the column's next value")
    t0 = dataFrame.iloc[:, 0]
    if not check_bool("noTime", noTime) and (pd.api.types.is_datetime64_any_dtype(t0) or (
            t0.dtype == object and _is_date(t0.iloc[0]))):
        raise ValueError("generateSteps > 0 with datetime times needs noTime=True (as pyEDM)")
    return cols[0], tgt


def _is_date(v) -> bool:
    try:
        pd.Timestamp(str(v))
    except (ValueError, TypeError):
        return False
    return isinstance(v, str) and any(c in v for c in "-/:")


def last_lib_row(lib, N: int) -> int:
    """The last row of pyEDM's lib (1-based; all rows when lib is empty)."""
    if lib is None or (not isinstance(lib, str) and len(lib) == 0) or lib == "":
        return N
    vals = lib.split() if isinstance(lib, str) else list(lib)
    return int(vals[-1])


def _check_cost(N: int, steps: int, name: str) -> None:
    """The work policy (:mod:`xedm.memory`): pyEDM's generation is one call per step, in
    Python, on the data grown by the steps so far; refused up front when it cannot fit or
    takes longer than the work limit."""
    from ...memory import CALL_OPS, check_memory, check_work

    what = f"{name}(generateSteps={steps:,}) on {N} rows (one {name} call per step)"
    fix = "use a smaller generateSteps"
    check_memory(8.0 * (N + steps) * 16, what, fix, share=0.5)
    check_work(steps * (CALL_OPS + 100.0 * (N + steps / 2)), what, fix, serial=True)


def generate(func, dataFrame: pd.DataFrame, column: str, target: str, lib, pred, steps: int,
             concat: bool, noTime: bool, smap: bool, kw: dict):
    """Run pyEDM's generation with ``func`` (this module's Simplex or SMap)."""
    N = len(dataFrame)
    if pred is None or (not isinstance(pred, str) and len(pred) == 0) or pred == "":
        raise ValueError("pred is required (pyEDM requires it with generateSteps, then "
                         "replaces it), e.g. pred='1 2'")
    _check_cost(N, steps, "SMap" if smap else "Simplex")
    last = last_lib_row(lib, N)
    pred = [last - 1, last]
    t0 = dataFrame.iloc[:, 0].to_numpy()
    if noTime:
        time = np.linspace(1, N, N)
        data = dataFrame.copy()
        data.insert(0, "Time", time)  # pyEDM joins a Time column before the data
        tdtype = float
    else:
        time = t0
        data = dataFrame
        tdtype = float if np.asarray(t0).dtype.kind in "iub" else np.asarray(t0).dtype
    values = np.full(N + steps, np.nan)
    values[:N] = dataFrame[column].to_numpy(dtype=float)
    times = np.full(N + steps, np.nan, dtype=tdtype)
    times[:N] = time
    gen = pd.DataFrame({"Time": np.full(steps, np.nan, dtype=tdtype),
                        **{c: np.full(steps, np.nan) for c in
                           ("Observations", "Predictions", "Pred_Variance")}})
    coef = sv = None
    step_t = times[1] - times[0] if N > 1 else 1
    for step in range(steps):
        n = N + step
        # each call on the rows alone (positions as time): pyEDM works on rows, and its
        # appended times may repeat the data's (lib ending before the data's end)
        new = pd.DataFrame({"Time": np.arange(1.0, n + 1), column: values[:n]})
        with warnings.catch_warnings():  # two prediction rows: no rho, as pyEDM's
            warnings.simplefilter("ignore", UserWarning)
            out = func(new, columns=column, target=target, lib=lib, pred=pred, **kw)
        proj = out["predictions"] if smap else out
        r = int(round(proj.Time.iat[-1])) - 1  # the row of the newest target
        t_new = times[r] if r < n else times[n - 1] + step_t * (r - n + 1)
        if smap:
            if coef is None:
                coef = pd.DataFrame(np.nan, index=range(steps),
                                    columns=out["coefficients"].columns)
                sv = pd.DataFrame(np.nan, index=range(steps),
                                  columns=out["singularValues"].columns)
            coef.iloc[step, 1:] = out["coefficients"].iloc[-1, 1:].to_numpy(dtype=float)
            sv.iloc[step, 1:] = out["singularValues"].iloc[-1, 1:].to_numpy(dtype=float)
            coef.iloc[step, 0] = sv.iloc[step, 0] = t_new
        gen.iloc[step, 1:] = proj.iloc[-1, 1:].to_numpy(dtype=float)
        gen.iloc[step, 0] = t_new
        pred = [p + 1 for p in pred]
        values[n] = proj["Predictions"].iat[-1]
        times[n] = t_new
    if concat:
        obs = data.loc[:, [data.columns[0], column]]
        obs.columns = ["Time", "Observations"]
        gen = pd.concat([obs, gen], axis=0)
    if smap:
        return {"predictions": gen, "coefficients": coef, "singularValues": sv}
    return gen
