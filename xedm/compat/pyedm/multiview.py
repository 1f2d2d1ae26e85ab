"""pyEDM's Multiview on xedm."""

from __future__ import annotations

from math import isqrt

import numpy as np
import pandas as pd

from ...core import validate as val
from ...core.embed import library_selection
from ...core.multiview import check_views, view_count
from ...core.multiview import multiview as _multiview
from ...core.validate import check_int
from ...labeled.checks import check_horizon
from ...labeled.edm import _engines
from ...labeled.inputs import lib_spec, pred_mask
from ._args import _Data, _frame, _names, _plot, _refuse, _target, _tau


def _view_order(rho: np.ndarray) -> np.ndarray:
    """pyEDM's ranking of the views: numpy's argsort of rho rounded to 6 decimals, reversed
    (so NaN first, and tied views in numpy's order reversed: the later view first)."""
    return np.argsort(np.round(rho, 6))[::-1]


def _view_table(names, res) -> pd.DataFrame:
    """pyEDM's View: each top view's columns and its ComputeError on the forecast (rho, the
    signed maximum error obs - pred that pyEDM calls "MAE", CAE the sum of absolute errors,
    RMSE) over the finite pairs, rounded to 6 decimals, NaN with fewer than 5 pairs."""
    err = res["observed"][None] - res["view_prediction"]
    ok = np.isfinite(err)
    stats = np.column_stack([res["view_rho"], np.where(ok, err, -np.inf).max(axis=1),
                             np.where(ok, np.abs(err), 0.0).sum(axis=1), res["view_rmse"]])
    stats[res["view_n"] < 5] = np.nan
    table = pd.DataFrame(np.round(stats, 6), columns=["rho", "MAE", "CAE", "RMSE"])
    table.insert(0, "Columns", [tuple(names[i] for i in view) for view in res["views"]])
    return table


def Multiview(dataFrame=None, columns="", target="", lib="", pred="", D=0, E=1, Tp=1, knn=0,
              tau=-1, multiview=0, exclusionRadius=0, trainLib=True, excludeTarget=False,
              ignoreNan=True, verbose=False, numProcess=4, mpMethod=None, chunksize=1,
              kdWorkers=-1, showPlot=False, returnObject=False) -> dict:
    """pyEDM's ``Multiview`` (:func:`xedm.multiview`): ``{"Predictions", "View"}``.

    Every D-combination of the columns' E lags (``x(t-0), y(t-0), x(t-1), ...``) is a view;
    the views are ranked by their simplex rho (knn = D + 1) on ``lib`` predicted from
    itself (``trainLib=True``; with neither lib nor pred, lib is the first half of the rows
    and pred the second) or on ``pred`` (``trainLib=False``), and ``Predictions`` is the mean
    of the top ``multiview`` views' forecasts (default floor(sqrt(views))).  As pyEDM's:

    - ``Predictions`` has ``Time, Observations, Predictions``, its ``Time`` the row numbers
      1..N (pyEDM's Multiview drops the time column), not the data's times;
    - ``View`` lists the top views in rank order (their rho on the ranking rows, rounded to
      6 decimals; ties and NaN as numpy's argsort, reversed), with each view's error on
      the forecast: ``Columns`` (a tuple of lag names), ``rho``, ``MAE`` (pyEDM's signed
      maximum error), ``CAE``, ``RMSE``, rounded to 6 decimals;

    pyEDM 2.5.7 ignores ``knn`` and ``excludeTarget`` here: knn other than 0 and
    ``excludeTarget=True`` are refused (xedm.multiview has both).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> t = np.arange(1, 201)
    >>> df = pd.DataFrame({"Time": t, "x": np.sin(0.3 * t), "y": np.cos(0.2 * t)})
    >>> out = Multiview(df, columns="x y", target="x", lib="1 100", pred="101 190", E=2)
    >>> out["View"].columns.tolist()
    ['Columns', 'rho', 'MAE', 'CAE', 'RMSE']
    >>> out["View"].Columns[0]
    ('x(t-0)', 'x(t-1)')
    """
    _refuse(returnObject=returnObject, ignoreNan=not ignoreNan, excludeTarget=excludeTarget)
    if not isinstance(dataFrame, pd.DataFrame):
        raise TypeError(f"dataFrame must be a pandas DataFrame, got {type(dataFrame).__name__}")
    available = [str(c) for c in dataFrame.columns]
    cols = _names(columns, available, "columns")
    if not cols:
        raise ValueError("columns is required, e.g. columns='x y'")
    tgt = _target(target, available, cols)
    used = list(dict.fromkeys([*cols, tgt]))
    # pyEDM's Multiview embeds the columns alone: its times are the row numbers 1..N
    d = _Data(dataFrame.iloc[:, [available.index(c) for c in used]], cols, tgt, noTime=True)
    E, tau_, Tp = val.check_E(E), _tau(tau), val.check_Tp(Tp)
    excl, T = val.check_exclusion_radius(exclusionRadius), len(d.index)
    n_lagged = E * len(cols)
    D = check_int("D", D, 0) or len(cols)
    if D > n_lagged:  # pyEDM warns, sets D to n_lagged, then fails on its single view
        raise ValueError(f"D={D} is invalid: there are only {n_lagged} lagged columns (E={E} "
                         f"x {len(cols)} columns); use D <= {n_lagged}")
    if check_int("knn", knn, 0):
        raise ValueError(f"knn={knn} is refused: pyEDM 2.5.7's Multiview ignores knn (its "
                         f"views use knn = D + 1 = {D + 1}); leave it out, or use "
                         f"xedm.multiview(..., knn={knn})")
    V = view_count(n_lagged, D)
    k = check_int("multiview", multiview)
    k = k if k >= 1 else max(1, isqrt(V))
    if k > V:
        raise ValueError(f"multiview={k} is invalid: there are only {V} views of D={D} from "
                         f"{n_lagged} lagged columns; use multiview <= {V}")
    trainLib = val.check_bool("trainLib", trainLib)
    no_lib, no_pred = d.rows(lib, "lib") is None, d.rows(pred, "pred") is None
    if trainLib and no_lib and no_pred:  # pyEDM's default: lib the first half, pred the rest
        half = T // 2
        libsel, predsel = slice(d.index[0], d.index[half - 1]), slice(d.index[half], d.index[-1])
    elif no_lib or no_pred:
        raise ValueError("Multiview needs both lib and pred (e.g. lib='1 100', pred='101 "
                         "190'), or neither with trainLib=True (first half, second half)")
    else:
        libsel, predsel = d.rows(lib, "lib"), d.rows(pred, "pred", one=True)
    check_horizon(Tp, T)
    spec, pmask = lib_spec(libsel, d.index, d.tdim), pred_mask(predsel, d.index, d.tdim)
    rank = library_selection(T, spec, 1, 1, 0, True) if trainLib else pmask
    backend, method = _engines(None, None, ["knn_sweep", "simplex_predict_var"], n_lib=T,
                               dim=D, knn=D + 1, n_pred=int((rank | pmask).sum()),
                               work=V * D * T * T)
    check_views(V, D, T, n_lagged, f"{len(cols)} columns, E={E}", backend)
    X = np.stack([d.ds[c].values.astype(float) for c in cols])
    res = _multiview(X, d.ds[d.target].values.astype(float), E=E, tau=tau_, D=D, k=k, Tp=Tp,
                     knn=None, excl=excl, lib=spec, pred_mask=pmask, rank_mask=rank,
                     backend=backend, method=method, order=_view_order)
    out = _frame(d, res["out_t"], res["prediction"], None, Tp, variance_column=False)
    names = [f"{c}(t-{e * tau_})" for e in range(E) for c in cols]
    if showPlot:
        _plot(out, "Time", f"D = {D}  Tp = {Tp}  rho = {float(res['rho']):.3f}", "Time", "")
    return {"Predictions": out, "View": _view_table(names, res)}

