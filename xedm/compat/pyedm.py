"""pyEDM's functions on xedm: a pyEDM script runs by changing its import.

>>> from xedm.compat import pyedm as pyEDM          # was: import pyEDM

Each function takes pyEDM's parameters (``dataFrame`` with time in its first column,
``columns``/``target`` as names or space-separated strings, ``lib``/``pred`` as 1-based row
ranges such as ``"1 100"``, ``tau=-1``, ``knn=0`` for the default, ...) and returns pyEDM's
DataFrames (``Time, Observations, Predictions, Pred_Variance``; ``LibSize, x:y, y:x``; ``E,
rho``; ...) with pyEDM's numbers, computed by xedm.  The differences that pyEDM's own
conventions force (its random CCM libraries, its treatment of NaN and of several lib
segments, its "MAE") are listed in docs/from-pyedm.md; arguments that would change pyEDM's
results and have no xedm counterpart (``generateSteps``, ``returnObject``, an S-map
``solver``, ``ignoreNan=False``, tau > 0) raise a ValueError saying so.  Arguments that only
tune pyEDM's own parallelism (``numProcess``, ``mpMethod``, ``chunksize``, ``kdWorkers``,
``parallel``, ``sharedMB``) and ``verbose`` are accepted and have no effect.  pyEDM's
``Multiview`` is not here yet (:func:`xedm.multiview` computes it, with xedm's output).

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

import numpy as np
import pandas as pd

from ..core.embed import library_selection
from ..core.validate import check_int
from ..labeled import edm as _edm
from ..labeled import sweeps as _sweeps
from ..labeled import xmap as _cross
from ..labeled.inputs import extended_labels, from_dataframe, lib_spec

__all__ = ["CCM", "EmbedDimension", "PredictExclusionRadius", "PredictInterval",
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
    """pyEDM's Projection: rows from the first prediction point to the last target (Tp > 0;
    from the first target to the last prediction point for Tp < 0), predictions at the
    target times, observations of the target."""
    T = len(d.index)
    labels = res[d.tdim].values  # xedm's target times: one contiguous run of positions
    j = int(np.flatnonzero(np.isin(labels, d.index.values))[0])
    pos = d.index.get_loc(labels[j]) - j + np.arange(len(labels))
    lo, hi = min(pos[0] - Tp, pos[0]), max(pos[-1] - Tp, pos[-1])
    rows = np.arange(lo, hi + 1)
    y = d.ds[d.target].values.astype(float)
    obs = np.full(len(rows), np.nan)
    inside = (rows >= 0) & (rows < T)
    obs[inside] = y[rows[inside]]
    pred, var = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    pred[pos - lo] = res.prediction.values
    if "pred_variance" in res:  # simplex's; S-map has none (NaN)
        var[pos - lo] = res.pred_variance.values
    return pd.DataFrame({"Time": extended_labels(d.index, rows), "Observations": obs,
                         "Predictions": pred, "Pred_Variance": var})


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
