"""pyEDM's Simplex, SMap and its sweeps (EmbedDimension, PredictInterval, PredictNonlinear,
PredictExclusionRadius) on xedm."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.validate import check_int
from ...labeled import edm as _edm
from ...labeled import sweeps as _sweeps
from ...memory import CALL_OPS
from ._args import _E, RADII, _Data, _plot, _projection, _refuse, _smap_knn, _smap_rows, _tau
from .auxiliary import ComputeError
from .generate import check_generate, generate
from .smap_fit import check_solver, local_fits, states


def Simplex(dataFrame=None, columns="", target="", lib="", pred="", E=0, Tp=1, knn=0,
            tau=-1, exclusionRadius=0, embedded=False, validLib=(), noTime=False,
            kdWorkers=-1, generateSteps=0, generateConcat=False, verbose=False,
            showPlot=False, ignoreNan=True, returnObject=False) -> pd.DataFrame:
    """pyEDM's ``Simplex`` (:func:`xedm.simplex`): ``Time, Observations, Predictions,
    Pred_Variance``; ``generateSteps=n``: pyEDM's n generated rows (``generateConcat``: after
    the data's time and observations), as :mod:`xedm.compat.pyedm.generate` describes."""
    _refuse(returnObject=returnObject, ignoreNan=not ignoreNan)
    if check_int("generateSteps", generateSteps, 0):
        col, tgt = check_generate(dataFrame, columns, target, embedded, noTime)
        return generate(Simplex, dataFrame, col, tgt, lib, pred, generateSteps, generateConcat,
                        noTime, False, dict(E=E, Tp=Tp, knn=knn, tau=tau,
                                            exclusionRadius=exclusionRadius,
                                            validLib=validLib))
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


def _pred_rows(d: _Data, proj: pd.DataFrame, where: np.ndarray, Tp: int) -> np.ndarray:
    """The data rows of the prediction points of the Projection rows ``where``."""
    n = int(where.sum())
    if not n:
        return np.zeros(0, np.int64)
    first = np.flatnonzero(where)[0]
    lo = d.index.get_loc(proj.Time.iat[0]) if proj.Time.iat[0] in d.index else None
    start = (lo + first) if lo is not None else d.index.get_loc(proj.Time.iat[first])
    return start - Tp + np.arange(n)


def SMap(dataFrame=None, columns="", target="", lib="", pred="", E=0, Tp=1, knn=0, tau=-1,
         theta=None, exclusionRadius=0, solver=None, embedded=False, validLib=(),
         noTime=False, kdWorkers=-1, generateSteps=0, generateConcat=False, ignoreNan=True,
         showPlot=False, verbose=False, returnObject=False) -> dict:
    """pyEDM's ``SMap`` (:func:`xedm.smap`): ``{"predictions", "coefficients",
    "singularValues"}``, with pyEDM's default knn (its library rows - 1), its
    ``Pred_Variance`` and its ``solver`` (a scikit-learn regressor fitted on pyEDM's weighted
    rows, :mod:`xedm.compat.pyedm.smap_fit`); ``generateSteps`` as :func:`Simplex`'s.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> t = np.arange(1, 201)
    >>> df = pd.DataFrame({"Time": t, "x": np.sin(0.3 * t)})
    >>> out = SMap(df, columns="x", target="x", lib="1 100", pred="101 190", E=2, theta=2)
    >>> list(out)
    ['predictions', 'coefficients', 'singularValues']
    """
    _refuse(returnObject=returnObject, ignoreNan=not ignoreNan)
    estimator = check_solver(solver)
    if check_int("generateSteps", generateSteps, 0):
        col, tgt = check_generate(dataFrame, columns, target, embedded, noTime)
        return generate(SMap, dataFrame, col, tgt, lib, pred, generateSteps, generateConcat,
                        noTime, True, dict(E=E, Tp=Tp, knn=knn, tau=tau, theta=theta,
                                           exclusionRadius=exclusionRadius, solver=solver,
                                           validLib=validLib))
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
    # pyEDM's Pred_Variance, and its fit with a regressor: the same neighbours, per row
    X = np.stack([d.ds[c].values.astype(float) for c in d.cols])
    lib_rows = np.flatnonzero(_smap_rows(d, libsel, E, tau_, Tp, embedded, target=True))
    pred_rows = _pred_rows(d, proj, where, Tp)
    fits = local_fits(states(X, 1 if embedded else E, tau_, embedded),
                      d.ds[d.target].values.astype(float), lib_rows, pred_rows, Tp,
                      0.0 if theta is None else float(theta), knn, exclusionRadius, estimator)
    proj.loc[where, "Pred_Variance"] = fits[1]
    if estimator is not None:
        proj.loc[where, "Predictions"] = fits[0]
        coef[where], sv[where] = fits[2], fits[3]
    if showPlot:
        _plot(proj[["Time", "Observations", "Predictions"]], "Time",
              f"E = {res.attrs['E']}  theta = {theta}", "Time", "")
    return {"predictions": proj,
            "coefficients": pd.concat([proj[["Time"]], pd.DataFrame(coef, columns=names)],
                                      axis=1),
            "singularValues": pd.concat([proj[["Time"]], pd.DataFrame(
                sv, columns=[f"C{i}" for i in range(sv.shape[1])])], axis=1)}


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
    _refuse(ignoreNan=not ignoreNan)
    d = _Data(dataFrame, columns, target, noTime)
    thetas = list(_edm.THETAS) if theta is None else (  # xedm's default is pyEDM's
        [float(t) for t in theta.split()] if isinstance(theta, str) else list(theta))
    if check_solver(solver) is not None:  # pyEDM's fit with the regressor, theta by theta
        _loop_cost(len(thetas), len(d.index), f"PredictNonlinear with {len(thetas):,} theta "
                   "values and a solver (one fit per prediction, in Python)",
                   "give fewer theta values (pyEDM's default list has 15)", CALL_OPS / 10)
        rho = [ComputeError(*(SMap(dataFrame, columns, target, lib, pred, E, Tp, knn, tau, t,
                                   exclusionRadius, solver, embedded, validLib, noTime)[
            "predictions"][k].to_numpy() for k in ("Observations", "Predictions")))["rho"]
            for t in thetas]
        out = pd.DataFrame({"theta": thetas, "rho": rho})
        if showPlot:
            _plot(out, "theta", f"E={E}", "S-map Localisation (θ)", "Prediction Skill ρ")
        return out
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


def _loop_cost(n_calls: int, rows: int, what: str, fix: str, per_row: float) -> None:
    """The work policy (:mod:`xedm.memory`) for a loop of ``n_calls`` public calls in Python
    (pyEDM's one call per theta or radius), each ``per_row`` operations per data row."""
    from ...memory import check_work

    check_work(n_calls * (CALL_OPS + rows * per_row), what, fix, serial=True)


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
    if not radii:
        raise ValueError(f"exclusionRadius={exclusionRadius!r} gives no radius; give some, "
                         "e.g. exclusionRadius=[0, 5, 10], or leave it out (pyEDM's "
                         f"default {list(RADII)})")
    _loop_cost(len(radii), len(d.index), f"PredictExclusionRadius with {len(radii):,} radii",
               "give fewer exclusion radii", 100.0 * len(d.index))
    kw = dict(tau=_tau(tau), Tp=Tp, lib=d.lib(lib, validLib), pred=d.rows(pred, "pred", True),
              columns=d.cols, target=d.target, embedded=embedded, time_dim=d.tdim)
    rho = [float(_edm.simplex(d.ds, _E(E, embedded, d.cols), exclusion_radius=r, **kw).rho)
           for r in radii]
    out = pd.DataFrame({"Exclusion radius": radii, "rho": rho})
    if showPlot:
        _plot(out, "Exclusion radius", f"E={E}  Tp={Tp}", "Exclusion radius",
              "Prediction Skill ρ")
    return out

