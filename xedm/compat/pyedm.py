"""pyEDM's functions on xedm: a pyEDM script runs by changing its import.

>>> from xedm.compat import pyedm as pyEDM          # was: import pyEDM

Each function takes pyEDM's parameters (``dataFrame`` with time in its first column,
``columns``/``target`` as names or space-separated strings, ``lib``/``pred`` as 1-based row
ranges such as ``"1 100"``, ``tau=-1``, ``knn=0`` for the default, ...) and returns pyEDM's
DataFrames (``Time, Observations, Predictions, Pred_Variance``; ``LibSize, x:y, y:x``; ``E,
rho``; Multiview's ``{"Predictions", "View"}``; ...) with pyEDM's numbers, computed by
xedm.  The differences that pyEDM's own conventions force (its random CCM libraries, its
treatment of NaN and of several lib segments, its "MAE") are listed in docs/from-pyedm.md;
arguments that would change pyEDM's results and have no xedm counterpart
(``generateSteps``, ``returnObject``, an S-map ``solver``, ``ignoreNan=False``, tau > 0),
and those pyEDM itself ignores (Multiview's ``knn`` and ``excludeTarget``), raise a
ValueError saying so.  Arguments that only
tune pyEDM's own parallelism (``numProcess``, ``mpMethod``, ``chunksize``, ``kdWorkers``,
``parallel``, ``sharedMB``) and ``verbose`` are accepted and have no effect.

Examples
--------
>>> import numpy as np, pandas as pd
>>> t = np.arange(1, 201)
>>> df = pd.DataFrame({"Time": t, "x": np.sin(0.3 * t)})
>>> out = Simplex(df, columns="x", target="x", lib="1 100", pred="101 190", E=2)
>>> list(out.columns)
['Time', 'Observations', 'Predictions', 'Pred_Variance']
>>> EmbedDimension(df, columns="x", target="x", lib="1 100", pred="101 190", maxE=3,
...                showPlot=False).columns.tolist()
['E', 'rho']
"""

from __future__ import annotations

from math import isqrt

import numpy as np
import pandas as pd

from ..core import validate as val
from ..core.embed import library_selection
from ..core.multiview import multiview as _multiview
from ..core.multiview import view_count
from ..core.validate import check_int
from ..labeled import edm as _edm
from ..labeled import sweeps as _sweeps
from ..labeled import xmap as _cross
from ..labeled.checks import check_horizon
from ..labeled.edm import _engines
from ..labeled.inputs import extended_labels, from_dataframe, lib_spec, pred_mask

__all__ = ["CCM", "EmbedDimension", "Multiview", "PredictExclusionRadius", "PredictInterval",
           "PredictNonlinear", "SMap", "Simplex"]

#: pyEDM's default exclusion radii of PredictExclusionRadius
RADII = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30)


# ----------------------------------------------------------------------------- arguments
class _Data:
    """A pyEDM call's data: the Dataset (time dim ``tdim``), its time labels and columns."""

    def __init__(self, dataFrame, columns, target, noTime: bool):
        if not isinstance(dataFrame, pd.DataFrame):
            raise TypeError(f"dataFrame must be a pandas DataFrame, got "
                            f"{type(dataFrame).__name__}")
        df = dataFrame.copy(deep=False)
        df.columns = [str(c) for c in df.columns]
        if noTime:  # pyEDM numbers the rows 1..N as time
            df.insert(0, "__time__", np.arange(1, len(df) + 1))
        self.tdim = str(df.columns[0])  # pyEDM: the first column is time
        self.ds = from_dataframe(df, self.tdim)
        self.index = pd.Index(self.ds[self.tdim].values)
        self.cols = _names(columns, df.columns, "columns")
        tgt = _names(target, df.columns, "target") if len(target) else self.cols[:1]
        self.target = tgt[0]
        if not self.cols:
            raise ValueError("columns is required, e.g. columns='x' or columns=['x', 'y']")

    def rows(self, spec, name: str, one: bool = False):
        """pyEDM's 1-based inclusive row pairs ("1 100 201 300" or [1, 100]) as slices of
        time labels; None for all rows."""
        if spec is None or (not isinstance(spec, str) and len(spec) == 0) or spec == "":
            return None
        vals = spec.split() if isinstance(spec, str) else list(spec)
        try:
            rows = [check_int(name, int(v) if isinstance(v, str) else v, 1) for v in vals]
        except ValueError:
            raise ValueError(f"{name}={spec!r}: give pairs of 1-based row numbers, e.g. "
                             f"{name}='1 100'") from None
        N = len(self.index)
        if len(rows) % 2 or (one and len(rows) != 2):
            raise ValueError(f"{name}={spec!r}: give {'one pair' if one else 'pairs'} of "
                             f"row numbers (first last), e.g. {name}='1 100'")
        out = []
        for a, b in zip(rows[::2], rows[1::2], strict=True):
            if not a <= b <= N:
                raise ValueError(f"{name}={spec!r}: rows {a}..{b} are not within 1..{N} "
                                 "(first <= last)")
            out.append(slice(self.index[a - 1], self.index[b - 1]))
        return out[0] if len(out) == 1 else out

    def lib(self, lib, validLib):
        sel = self.rows(lib, "lib")
        if validLib is None or len(validLib) == 0:
            return sel
        valid = np.asarray(validLib, dtype=bool)
        if valid.shape != (len(self.index),):
            raise ValueError(f"validLib must have one boolean per row ({len(self.index)}), got "
                             f"shape {valid.shape}")
        mask = np.zeros(len(self.index), bool)
        for s in [sel] if isinstance(sel, slice) else sel or [slice(None, None)]:
            mask[self.index.slice_indexer(s.start, s.stop)] = True
        return mask & valid


def _names(arg, available, name: str) -> list[str]:
    if isinstance(arg, str):
        names = [arg] if arg in available else arg.split()
    else:
        names = [str(a) for a in arg]
    missing = [n for n in names if n not in available]
    if missing:
        raise ValueError(f"{name}: {missing} not in the DataFrame (columns: {list(available)})")
    return names


def _tau(tau) -> int:
    tau = check_int("tau", tau)
    if tau >= 0:
        raise ValueError(f"tau={tau}: pyEDM's tau > 0 embeds future values, which xedm does not "
                         "(xedm's tau=k is pyEDM's tau=-k); use tau < 0")
    return -tau


def _refuse(**given) -> None:
    """Arguments with no xedm counterpart, refused when not at pyEDM's default."""
    why = {
        "generateSteps": "pyEDM's generated frame is not reproduced here; use "
                         "xedm.simplex(..., generate_steps=n)",
        "generateConcat": "pyEDM's generated frame is not reproduced here; use "
                          "xedm.simplex(..., generate_steps=n)",
        "returnObject": "xedm has no pyEDM class instances; call xedm's function instead",
        "ignoreNan": "xedm always leaves states with NaN out (docs/from-pyedm.md)",
        "includeData": "xedm.ccm(..., keep_samples=True) returns every sample's rho instead",
        "solver": "xedm's S-map solves by SVD least squares or ridge (xedm.smap(solver=...))",
        "legacy": "xedm has one CCM",
        "embedded": "embedded columns are not a cross map (use xedm.ccm on the series)",
        "excludeTarget": "pyEDM 2.5.7's Multiview ignores it (its views keep the target's "
                         "lags); xedm.multiview(..., exclude_target=True) leaves them out",
    }
    for k, v in given.items():
        if v:
            raise ValueError(f"{k}={v!r} is not supported by xedm.compat.pyedm: {why[k]}")


def _E(E, embedded: bool, cols) -> int | None:
    if embedded:
        return None if not E else E
    if not E:
        raise ValueError("E is required (E >= 1), e.g. E=3")
    return E


def _smap_knn(d: _Data, lib, E: int | None, tau: int, Tp: int, embedded: bool) -> int:
    """pyEDM's default S-map knn: its library rows (after leaving out those with NaN) - 1."""
    T = len(d.index)
    E_ = len(d.cols) if embedded else E
    sel = library_selection(T, lib_spec(lib, d.index, d.tdim), E_, tau, Tp, embedded)
    ok = np.ones(T, bool)
    for c in d.cols:
        fin = np.isfinite(d.ds[c].values.astype(float))
        for k in range(1 if embedded else E_):
            ok[k * tau:] &= fin[: T - k * tau]
            ok[: k * tau] = False
    return max(int(np.count_nonzero(sel & ok)) - 1, 1)


# ----------------------------------------------------------------------------- outputs
def _projection(d: _Data, res, Tp: int) -> pd.DataFrame:
    """pyEDM's Projection of a simplex or S-map result (see :func:`_frame`)."""
    labels = res[d.tdim].values  # xedm's target times: one contiguous run of positions
    j = int(np.flatnonzero(np.isin(labels, d.index.values))[0])
    pos = d.index.get_loc(labels[j]) - j + np.arange(len(labels))
    var = res.pred_variance.values if "pred_variance" in res else None  # S-map has none
    return _frame(d, pos, res.prediction.values, var, Tp)


def _frame(d: _Data, pos: np.ndarray, prediction, variance, Tp: int,
           variance_column: bool = True) -> pd.DataFrame:
    """pyEDM's Projection: rows from the first prediction point to the last target (Tp > 0;
    from the first target to the last prediction point for Tp < 0), predictions at the
    target positions ``pos`` (contiguous), observations of the target.  Times past the data
    continue the time step (floats for integer times, as pyEDM's)."""
    T = len(d.index)
    lo, hi = min(pos[0] - Tp, pos[0]), max(pos[-1] - Tp, pos[-1])
    rows = np.arange(lo, hi + 1)
    y = d.ds[d.target].values.astype(float)
    obs = np.full(len(rows), np.nan)
    inside = (rows >= 0) & (rows < T)
    obs[inside] = y[rows[inside]]
    pred, var = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    pred[pos - lo] = prediction
    if variance is not None:
        var[pos - lo] = variance
    time = extended_labels(d.index, rows)
    if not inside.all() and np.asarray(time).dtype.kind in "iu":
        time = np.asarray(time, dtype=float)
    out = {"Time": time, "Observations": obs, "Predictions": pred}
    return pd.DataFrame({**out, "Pred_Variance": var} if variance_column else out)


def _plot(df: pd.DataFrame, x: str, title: str, xlabel: str, ylabel: str) -> None:
    import matplotlib.pyplot as plt

    ax = df.plot(x, [c for c in df.columns if c != x], title=title, linewidth=3)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    plt.show()


# ----------------------------------------------------------------------------- functions
def Simplex(dataFrame=None, columns="", target="", lib="", pred="", E=0, Tp=1, knn=0,
            tau=-1, exclusionRadius=0, embedded=False, validLib=(), noTime=False,
            kdWorkers=-1, generateSteps=0, generateConcat=False, verbose=False,
            showPlot=False, ignoreNan=True, returnObject=False) -> pd.DataFrame:
    """pyEDM's ``Simplex`` (:func:`xedm.simplex`): ``Time, Observations, Predictions,
    Pred_Variance``."""
    _refuse(generateSteps=generateSteps, generateConcat=generateConcat,
            returnObject=returnObject, ignoreNan=not ignoreNan)
    d = _Data(dataFrame, columns, target, noTime)
    res = _edm.simplex(d.ds, _E(E, embedded, d.cols), tau=_tau(tau), Tp=Tp, knn=knn or None,
                       exclusion_radius=exclusionRadius, lib=d.lib(lib, validLib),
                       pred=d.rows(pred, "pred", one=True), columns=d.cols, target=d.target,
                       embedded=embedded, time_dim=d.tdim)
    out = _projection(d, res, Tp)
    if showPlot:
        _plot(out[["Time", "Observations", "Predictions"]], "Time",
              f"E = {res.attrs['E']}  Tp = {Tp}  rho = {float(res.rho):.3f}", "Time", "")
    return out


def SMap(dataFrame=None, columns="", target="", lib="", pred="", E=0, Tp=1, knn=0, tau=-1,
         theta=None, exclusionRadius=0, solver=None, embedded=False, validLib=(),
         noTime=False, kdWorkers=-1, generateSteps=0, generateConcat=False, ignoreNan=True,
         showPlot=False, verbose=False, returnObject=False) -> dict:
    """pyEDM's ``SMap`` (:func:`xedm.smap`): ``{"predictions", "coefficients",
    "singularValues"}``, with pyEDM's default knn (its library rows - 1)."""
    _refuse(generateSteps=generateSteps, generateConcat=generateConcat,
            returnObject=returnObject, ignoreNan=not ignoreNan, solver=solver)
    d = _Data(dataFrame, columns, target, noTime)
    E, tau_, libsel = _E(E, embedded, d.cols), _tau(tau), d.lib(lib, validLib)
    if not knn:
        knn = _smap_knn(d, libsel, E, tau_, Tp, embedded)
    res = _edm.smap(d.ds, E, theta=0.0 if theta is None else theta, tau=tau_, Tp=Tp, knn=knn,
                    exclusion_radius=exclusionRadius, lib=libsel,
                    pred=d.rows(pred, "pred", one=True), columns=d.cols, target=d.target,
                    embedded=embedded, singular_values=True, time_dim=d.tdim)
    proj = _projection(d, res, Tp)
    where = proj.Time.isin(res[d.tdim].values).to_numpy()
    labels = [str(c) for c in res.coef.values]
    names = ["C0"] + [f"∂{d.target}/∂{c[:-5] if embedded else c}" for c in labels[1:]]
    coef = np.full((len(proj), len(names)), np.nan)
    coef[where] = res.coefficients.values
    sv = np.full((len(proj), res.sizes["singular_value"]), np.nan)
    sv[where] = res.singular_values.values
    if showPlot:
        _plot(proj[["Time", "Observations", "Predictions"]], "Time",
              f"E = {res.attrs['E']}  theta = {theta}", "Time", "")
    return {"predictions": proj,
            "coefficients": pd.concat([proj[["Time"]], pd.DataFrame(coef, columns=names)],
                                      axis=1),
            "singularValues": pd.concat([proj[["Time"]], pd.DataFrame(
                sv, columns=[f"C{i}" for i in range(sv.shape[1])])], axis=1)}


def CCM(dataFrame=None, columns="", target="", libSizes="", sample=30, E=0, Tp=0, knn=0,
        tau=-1, exclusionRadius=0, seed=None, embedded=False, validLib=(), includeData=False,
        noTime=False, mpMethod=None, parallel=True, sharedMB=0.01, verbose=False,
        showPlot=False, returnObject=False, legacy=False) -> pd.DataFrame:
    """pyEDM's ``CCM`` (:func:`xedm.ccm`): ``LibSize, col:target, target:col`` (``x:y`` is
    the skill of x's manifold at recovering y: y causes x).  The random libraries are
    xedm's (numpy's PCG64 with ``seed``): rho agrees with pyEDM's where a library size uses
    every library point, and statistically elsewhere."""
    _refuse(returnObject=returnObject, includeData=includeData, legacy=legacy,
            embedded=embedded)
    d = _Data(dataFrame, columns, target, noTime)
    if len(validLib):
        raise ValueError("validLib is not supported by CCM here: select the rows first")
    col, tgt = d.cols[0], d.target
    if len(d.cols) != 1 or col == tgt:
        raise ValueError("CCM here takes one column and a different target, e.g. "
                         "columns='x', target='y'")
    sizes = [int(s) for s in (libSizes.split() if isinstance(libSizes, str) else libSizes)]
    if len(sizes) == 3 and sizes[2] < sizes[1]:  # pyEDM's "start stop increment"
        sizes = list(range(sizes[0], sizes[1] + 1, sizes[2]))
    if not sizes:
        raise ValueError("libSizes is required, e.g. libSizes='10 80 10'")
    res = _cross.ccm(d.ds, [col, tgt], lib_sizes=sizes, E=_E(E, False, d.cols), samples=sample,
                     seed=seed, tau=_tau(tau), Tp=Tp, exclusion_radius=exclusionRadius,
                     knn=knn or None, time_dim=d.tdim, progress=False)
    rho = res.rho
    out = pd.DataFrame({"LibSize": sizes,
                        f"{col}:{tgt}": rho.sel(library=col, target=tgt).values,
                        f"{tgt}:{col}": rho.sel(library=tgt, target=col).values})
    if showPlot:
        _plot(out, "LibSize", f"E = {E}", "Library Size", "CCM ρ")
    return out


def _sweep(func, d: _Data, lib, validLib, pred, key: str, values, **kw) -> pd.DataFrame:
    res = func(d.ds, lib=d.lib(lib, validLib), pred=d.rows(pred, "pred", one=True),
               columns=d.cols, target=d.target, time_dim=d.tdim, **kw)
    return pd.DataFrame({key: list(values), "rho": res.rho.values})


def EmbedDimension(dataFrame=None, columns="", target="", maxE=10, lib="", pred="", Tp=1,
                   tau=-1, exclusionRadius=0, embedded=False, validLib=(), noTime=False,
                   ignoreNan=True, verbose=False, numProcess=4, mpMethod=None, chunksize=1,
                   kdWorkers=-1, showPlot=True) -> pd.DataFrame:
    """pyEDM's ``EmbedDimension`` (:func:`xedm.embed_dimension`): ``E, rho``."""
    _refuse(ignoreNan=not ignoreNan, embedded=embedded)
    d = _Data(dataFrame, columns, target, noTime)
    maxE = check_int("maxE", maxE, 1)
    out = _sweep(_sweeps.embed_dimension, d, lib, validLib, pred, "E", range(1, maxE + 1),
                 E_max=maxE, tau=_tau(tau), Tp=Tp, exclusion_radius=exclusionRadius)
    if showPlot:
        _plot(out, "E", f"Tp={Tp}", "Embedding Dimension", "Prediction Skill ρ")
    return out


def PredictInterval(dataFrame=None, columns="", target="", lib="", pred="", maxTp=10, E=1,
                    tau=-1, exclusionRadius=0, embedded=False, validLib=(), noTime=False,
                    ignoreNan=True, verbose=False, numProcess=4, mpMethod=None, chunksize=1,
                    kdWorkers=-1, showPlot=True) -> pd.DataFrame:
    """pyEDM's ``PredictInterval`` (:func:`xedm.predict_interval`): ``Tp, rho``."""
    _refuse(ignoreNan=not ignoreNan)
    d = _Data(dataFrame, columns, target, noTime)
    maxTp = check_int("maxTp", maxTp, 1)
    out = _sweep(_sweeps.predict_interval, d, lib, validLib, pred, "Tp", range(1, maxTp + 1),
                 E=_E(E, embedded, d.cols), Tp_max=maxTp, tau=_tau(tau),
                 exclusion_radius=exclusionRadius, embedded=embedded)
    if showPlot:
        _plot(out, "Tp", f"E={E}", "Forecast Interval", "Prediction Skill ρ")
    return out


def PredictNonlinear(dataFrame=None, columns="", target="", theta=None, lib="", pred="", E=1,
                     Tp=1, knn=0, tau=-1, exclusionRadius=0, solver=None, embedded=False,
                     validLib=(), noTime=False, ignoreNan=True, verbose=False, numProcess=4,
                     mpMethod=None, chunksize=1, kdWorkers=-1,
                     showPlot=True) -> pd.DataFrame:
    """pyEDM's ``PredictNonlinear`` (:func:`xedm.predict_nonlinear`): ``theta, rho``, with
    pyEDM's default knn (its library rows - 1) and theta list."""
    _refuse(ignoreNan=not ignoreNan, solver=solver)
    d = _Data(dataFrame, columns, target, noTime)
    thetas = list(_edm.THETAS) if theta is None else (  # xedm's default is pyEDM's
        [float(t) for t in theta.split()] if isinstance(theta, str) else list(theta))
    E, tau_, libsel = _E(E, embedded, d.cols), _tau(tau), d.lib(lib, validLib)
    if not knn:
        knn = _smap_knn(d, libsel, E, tau_, Tp, embedded)
    res = _sweeps.predict_nonlinear(d.ds, E, theta=thetas, tau=tau_, Tp=Tp, knn=knn,
                                    exclusion_radius=exclusionRadius, lib=libsel,
                                    pred=d.rows(pred, "pred", one=True), columns=d.cols,
                                    target=d.target, embedded=embedded, time_dim=d.tdim)
    out = pd.DataFrame({"theta": thetas, "rho": res.rho.values})
    if showPlot:
        _plot(out, "theta", f"E={E}", "S-map Localisation (θ)", "Prediction Skill ρ")
    return out


def PredictExclusionRadius(dataFrame=None, columns="", target="", lib="", pred="", Tp=1, E=1,
                           tau=-1, exclusionRadius=None, embedded=False, validLib=(),
                           noTime=False, ignoreNan=True, verbose=False, numProcess=4,
                           mpMethod=None, chunksize=1, kdWorkers=-1,
                           showPlot=True) -> pd.DataFrame:
    """pyEDM's ``PredictExclusionRadius`` (:func:`xedm.simplex` per radius):
    ``Exclusion radius, rho``."""
    _refuse(ignoreNan=not ignoreNan)
    d = _Data(dataFrame, columns, target, noTime)
    radii = list(RADII if exclusionRadius is None else (
        [int(r) for r in exclusionRadius.split()] if isinstance(exclusionRadius, str)
        else np.atleast_1d(exclusionRadius).tolist()))
    kw = dict(tau=_tau(tau), Tp=Tp, lib=d.lib(lib, validLib), pred=d.rows(pred, "pred", True),
              columns=d.cols, target=d.target, embedded=embedded, time_dim=d.tdim)
    rho = [float(_edm.simplex(d.ds, _E(E, embedded, d.cols), exclusion_radius=r, **kw).rho)
           for r in radii]
    out = pd.DataFrame({"Exclusion radius": radii, "rho": rho})
    if showPlot:
        _plot(out, "Exclusion radius", f"E={E}  Tp={Tp}", "Exclusion radius",
              "Prediction Skill ρ")
    return out


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

    pyEDM 2.5.7 ignores ``knn`` and ``excludeTarget`` here: knn other than 0 or D + 1 and
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
    tgt = (_names(target, available, "target") if len(target) else cols)[0]
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
    if check_int("knn", knn, 0) not in (0, D + 1):
        raise ValueError(f"knn={knn}: pyEDM 2.5.7's Multiview ignores knn (its views use "
                         f"knn = D + 1 = {D + 1}); leave it out, or use "
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
    X = np.stack([d.ds[c].values.astype(float) for c in cols])
    res = _multiview(X, d.ds[d.target].values.astype(float), E=E, tau=tau_, D=D, k=k, Tp=Tp,
                     knn=None, excl=excl, lib=spec, pred_mask=pmask, rank_mask=rank,
                     backend=backend, method=method, order=_view_order)
    out = _frame(d, res["out_t"], res["prediction"], None, Tp, variance_column=False)
    names = [f"{c}(t-{e * tau_})" for e in range(E) for c in cols]
    if showPlot:
        _plot(out, "Time", f"D = {D}  Tp = {Tp}  rho = {float(res['rho']):.3f}", "Time", "")
    return {"Predictions": out, "View": _view_table(names, res)}
