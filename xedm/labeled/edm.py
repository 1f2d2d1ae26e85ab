"""The xarray layer of the EDM functions: names, dims, coords, attrs, dask.

Each public function resolves labels into positions, validates parameters, and runs the array
core (:mod:`xedm.core`) through :func:`xarray.apply_ufunc`, so extra dims broadcast (one result
per series, computed in batched kernels) and dask-backed inputs stay lazy.  What is checked
about the input and the results (containers, dtypes, names, nothing finite) is in
:mod:`xedm.labeled.checks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..core import simplex as _simplex
from ..core import smap as _smap
from ..core import validate as v
from ..core.embed import lag_step
from ..core.smap_estimator import smap_estimator
from ..core.validate import renamed
from ..kernels import resolve_backend
from ..neighbors.base import (
    Search,
    check_method,
    check_recall,
    method_name,
    neighbor_attrs,
    resolve_method,
)
from .checks import (
    PREDICTED,
    block_check,
    check_estimator,
    check_exclusion,
    check_horizon,
    check_predictions,
    check_skill,
    check_variance,
    library_check,
    pred_times,
)
from .device import cupy_io
from .generate import check_generate, generative
from .inputs import (
    VAR,
    Data,
    build_dataset,
    check_names,
    counter_bar,
    describe,
    extended_labels,
    is_lazy,
    lib_spec,
    one_time_chunk,
    pred_mask,
    select,
    time_index,
)

THETAS = (0.01, 0.1, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
_OUT = "__xedm_out__"


@dataclass(frozen=True, eq=False)
class Params:
    """The checked data and parameters of a predicting function (:func:`_params`)."""

    X: xr.DataArray  # the columns (one or more), dims (dim, column)
    y: xr.DataArray  # the target
    index: Any  # the time coordinate (a pandas Index)
    dim: str  # the time dim
    E: int
    tau: int  # the lag step (1 when embedded: no lags)
    Tp: int
    knn: int | None
    excl: int  # exclusion radius
    spec: dict  # "lib" (library spec) and "pred_mask"
    attrs: dict  # the result's attrs


def _params(data: Data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, dim,
            embedded, func: str = "simplex", reserved=PREDICTED, E_name: str = "E") -> Params:
    embedded = v.check_bool("embedded", embedded)
    X, y, cols, tgt, dim = select(data, columns, target, dim)
    check_names(func, X, y, reserved)
    index = time_index(X, dim)
    T = len(index)
    if T < 3:
        raise ValueError(
            f"the data has {T} time point{'s' * (T != 1)} along dim {dim!r}; EDM needs at least 3 "
            "(library points and a point to predict): pass a longer series"
        )
    if E is None:
        if not embedded:
            raise TypeError(
                "E (the embedding dimension) is required, e.g. E=3; it may be left out only "
                "with embedded=True, where it is the number of columns"
            )
        E = len(cols)
    E = v.check_E(E)
    tau = v.check_tau(tau)
    Tp = v.check_Tp(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    v.check_embedding_fits(E, tau, T, len(cols), bool(embedded), name=E_name)
    check_horizon(Tp, T)
    spec = {
        "lib": lib_spec(lib, index, dim),
        "pred_mask": pred_mask(pred, index, dim),
    }
    attrs = {
        "E": E, "tau": tau, "Tp": Tp, "exclusion_radius": excl,
        "lib": describe(lib), "pred": describe(pred), "columns": ", ".join(cols),
        "target": tgt, "embedded": int(bool(embedded)),
        "xedm_function": func,  # which function made the result (result.edm.plot dispatches)
    }
    tau = lag_step(E, tau, bool(embedded))  # no lags: tau has no effect
    return Params(X, y, index, dim, E, tau, Tp, knn, excl, spec, attrs)


def _engines(backend, neighbors, kernels: Sequence[str], recall=None, *, n_lib: int, dim: int,
             knn: int | None, n_pred: int, sweep: bool = False, work: int | None = None):
    """(backend, :class:`Search`): the concrete backend (``"auto"`` weighs ``work``, the
    (series x columns x time) x time pairs, against :data:`xedm.kernels.GPU_MIN_WORK`) and
    neighbour method (``"auto"``: the rule of :mod:`xedm.neighbors.auto`, from the sizes).
    ``knn=None`` (S-map's default) uses every library point: no search, so exact whatever
    was asked."""
    backend = resolve_backend(backend, kernels, work)
    if knn is None:
        check_method(neighbors)
        if recall is not None:
            check_recall(recall)
        return backend, Search("exact", reason="knn=None: every library point is used")
    return backend, resolve_method(neighbors, n_lib=n_lib, dim=dim, knn=knn, n_pred=n_pred,
                                   backend=backend, recall=recall, sweep=sweep)


def _ncols(attrs: dict) -> int:
    return len(attrs["columns"].split(", "))


# ----------------------------------------------------------------------------- running
def _apply(X, y, dim, core, outputs: dict[str, tuple[list[str], dict[str, int], Any]],
           lazy: bool | None = None):
    """Run ``core(Xb (B, C, T), yb (B, T)) -> dict`` over every series of X/y.

    ``outputs`` maps result names to (core dims, their sizes, dtype); arrays the core returns
    have the series axis first; ``lazy`` is :func:`is_lazy` when the caller has it.
    """
    names = list(outputs)

    def wrapped(xa, ya):
        # float64 up front: float16/float32/int data would otherwise reach the kernels as
        # other numba specialisations (float16 has none); a no-op for float64
        xa = xa.astype(np.float64, copy=False)
        ya = ya.astype(np.float64, copy=False)
        lead = xa.shape[:-2]
        if 0 in lead:  # a series dim of size 0: empty results, the core never sees it
            return tuple(np.empty(lead + tuple(outputs[n][1][d] for d in outputs[n][0]),
                                  outputs[n][2]) for n in names)
        res = core(xa.reshape((-1,) + xa.shape[-2:]), ya.reshape((-1, ya.shape[-1])))
        return tuple(np.asarray(res[n]).reshape(lead + np.shape(res[n])[1:]) for n in names)

    if not (is_lazy(X, y) if lazy is None else lazy):
        # numpy in, numpy out, without apply_ufunc's bookkeeping (it dominates small calls)
        one = VAR not in X.dims
        lead_dims = X.dims[:-1] if one else X.dims[:-2]
        if y.dims != (*lead_dims, dim):
            y = y.transpose(*lead_dims, dim)
        arrays = _with_progress(wrapped, X.data[..., None, :] if one else X.data, y.data,
                                core.__qualname__.split(".")[0])
        lead_coords = {k: v for k, v in X.coords.variables.items()
                       if k != dim and set(v.dims) <= set(lead_dims)}
        return {n: ((*lead_dims, *outputs[n][0]), a) for n, a in zip(names, arrays,
                                                                     strict=True)}, lead_coords
    if VAR not in X.dims:
        X = X.expand_dims({VAR: 1}, axis=-2)
    what = core.__qualname__.split(".")[0]
    X = one_time_chunk(X, dim, what).chunk({VAR: -1})
    y = one_time_chunk(y, dim, what)
    sizes = {d: s for spec in outputs.values() for d, s in spec[1].items()}
    results = xr.apply_ufunc(
        wrapped,
        X,
        y,
        input_core_dims=[[VAR, dim], [dim]],
        output_core_dims=[outputs[n][0] for n in names],
        dask="parallelized",
        output_dtypes=[outputs[n][2] for n in names],
        dask_gufunc_kwargs={"output_sizes": sizes},
        keep_attrs=False,
    )
    coords = {k: c.variable for k, c in results[0].coords.items()}
    return {n: (r.dims, r.data) for n, r in zip(names, results, strict=True)}, coords


# below this much work (series x time points squared) a call is too quick for a progress bar
# to be worth splitting the series into chunks (each chunk is one batched kernel call); above
# it the work runs in at least _PROGRESS_CHUNKS chunks, and in more when a chunk would pass
# _CHUNK_WORK (time points squared x sweep values: about a second on a few cores), whether a
# bar shows or not, so that Ctrl-C stops the call within a chunk (xedm.kernels._numba's
# interruptible holds it back to the end of each kernel call)
_PROGRESS_MIN_WORK = 1e7
_PROGRESS_CHUNKS = 50
_CHUNK_WORK = 2e8


def _chunks(work: float, most: int) -> int:
    """How many pieces ``work`` runs in (at most ``most``)."""
    return int(min(most, max(_PROGRESS_CHUNKS, np.ceil(work / _CHUNK_WORK))))


# simplex splits one series' rows only from T² = 1e9 (about half a second of kNN on two
# cores; the bar shows after two seconds): a split of shorter work only costs, its 50 small
# kernel calls of one task each running on one core (L = 4,000, E = 20: 0.10 -> 0.05 s)
_SIMPLEX_SPLIT_WORK = 1e9


def _with_progress(wrapped, xa, ya, desc: str):
    """``wrapped(xa, ya)``, run over chunks of series with one progress bar (unit: series)
    when there are several series and enough work; the results are the same either way."""
    lead = xa.shape[:-2]
    B, T = int(np.prod(lead)), xa.shape[-1]
    if B < 2 or B * T * T < _PROGRESS_MIN_WORK:
        return wrapped(xa, ya)
    xf = xa.reshape((B,) + xa.shape[-2:])
    yf = ya.reshape((B, ya.shape[-1]))
    step = -(-B // _chunks(float(B) * T * T, B))
    bar = counter_bar(None, desc, B, unit="series")
    parts = []
    try:
        for s in range(0, B, step):
            parts.append(wrapped(xf[s:s + step], yf[s:s + step]))
            bar.update(min(step, B - s))
    finally:
        bar.close()
    return tuple(np.concatenate([p[i] for p in parts]).reshape(lead + parts[0][i].shape[1:])
                 for i in range(len(parts[0])))


def _row_progress(Xb, desc: str, method=None, weight: int = 1,
                  min_work: float | None = None):
    """(row_chunks, tick, close) for the core of one long series: its prediction rows run in
    :func:`_chunks` ranges (``weight``: the sweep's values, thetas or E, that each row runs)
    with one bar when progress is on (several series get theirs from :func:`_with_progress`);
    (1, None, no-op) when there is little work (T² x weight below ``min_work``, default
    ``_PROGRESS_MIN_WORK``), or the neighbour ``method`` (when given) is an index that a
    split would rebuild."""
    B, T = Xb.shape[0], Xb.shape[-1]
    min_work = _PROGRESS_MIN_WORK if min_work is None else min_work
    split = method is None or method_name(method) == "exact"
    work = float(T) * T * max(weight, 1)
    if B != 1 or not split or work < min_work:
        return 1, None, lambda: None
    n = _chunks(work, T)
    bar = counter_bar(None, desc, n, unit="chunk")
    return n, lambda rows: bar.update(1), bar.close


def _finish(applied, dim: str, index, out_t, attrs: dict, coords: dict | None = None):
    """One Dataset from ``_apply``'s (dims, data) pairs: the output axis becomes ``dim`` on the
    (extended) time labels of ``out_t``."""
    results, all_coords = applied
    all_coords = dict(all_coords)
    data_vars = {n: (tuple(dim if d == _OUT else d for d in dims), data)
                 for n, (dims, data) in results.items()}
    if out_t is not None:
        all_coords[dim] = extended_labels(index, out_t)
    all_coords.update(coords or {})
    return build_dataset(data_vars, all_coords, attrs)


_SKILL = {"rho": ([], {}, float), "mae": ([], {}, float), "rmse": ([], {}, float),
          "n": ([], {}, np.int64)}


def _check_results(func: str, results: dict, X, y, dim: str, excl: int, out_t) -> None:
    """In-memory results: no finite prediction raises, some warn; NaN rho beside finite
    predictions warns (too few pairs, zero variance, only forecasts finite)."""
    pred = results["prediction"][1]
    check_predictions(func, pred, X, y, dim, excl)
    inside = (out_t >= 0) & (out_t < X.sizes[dim])
    check_skill(func, results["rho"][1], results["n"][1], pred, inside, excl)


def _skill_over(d: str, size: int):
    return {k: ([d], {d: size}, t) for k, (_, _, t) in _SKILL.items()}


# ----------------------------------------------------------------------------- public
_INPUT_NOTES = """Notes
    -----
    *Input.*  ``data`` may also be a numpy array, a list or a pandas Series (time on the last
    axis).  Integer and float data of any width are computed in float64 (the input is never
    modified); bool, complex, string, object and datetime data are refused with a TypeError
    (convert with ``.astype(float)``: a 0/1 series is allowed that way, though its neighbours
    are mostly ties).  Time labels only label: states follow the array order, and forecasts
    past the data get labels extrapolated with the step ``time[1] - time[0]`` (numbers,
    datetimes) or NaN labels where the labels cannot be extrapolated (strings).

    *No finite result.*  With in-memory data, a call where no prediction is finite raises a
    ValueError saying why (all-NaN data, NaN gaps, exclusion_radius, ...); when only some
    series (e.g. some neurons of a ``(neuron, time)`` array) have no finite prediction, their
    results are NaN and a UserWarning says how many (and how many of those are all-NaN).
    Finite predictions with a NaN rho (fewer than 3 pairs, e.g. a pred shorter than the
    embedding window; a constant series, whose values have zero variance) warn, saying why.
    Dask-backed data stays lazy: each chunk's results are checked when it is computed, and a
    chunk with no finite prediction or rho warns (UserWarning) instead of raising.
"""


@cupy_io
@renamed("dim", "time_dim", "the time dimension")
def simplex(
    data: Data,
    E: int | None = None,
    *,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    embedded: bool = False,
    time_dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
    generate_steps: int = 0,
) -> xr.Dataset:
    """Simplex projection (Sugihara & May 1990): forecast by the k nearest states.

    Parameters
    ----------
    data : DataArray, Dataset or pandas DataFrame
        The series; time on ``time_dim`` (default "time"), any other dims broadcast (one result per
        series).  On a Dataset choose variables with ``columns`` and ``target``.  A DataFrame
        is a Dataset of its columns, time from the column ``time_dim``, else "time"/"Time",
        else a non-default index, else an increasing first column (pyEDM's convention).
    E : int
        Embedding dimension; the state at t is ``(x_t, x_{t-tau}, ..., x_{t-(E-1)tau})``.
        Required, except with ``embedded=True`` (where it is the number of columns).
    tau : int, default 1
        Lag in time steps (>= 1; pyEDM's ``tau=-1``).  No effect with E = 1 or
        ``embedded=True``.
    Tp : int, default 1
        Prediction horizon; negative values predict the past.  Forecasts past the end of the
        data land on an extended time coordinate with ``observed = NaN``.
    knn : int, optional
        Neighbours used (default E + 1).
    exclusion_radius : int, default 0
        Library points within this many steps of the prediction point are excluded (the point
        itself always is: leave-one-out).
    lib, pred : None, slice, list of slices, or boolean mask along time
        Library and prediction sets by label (inclusive slices, like ``.sel``).
    columns, target : str or list of str
        Dataset variables forming the state (each contributes E lags) and the variable
        predicted (default: the first column).  ``columns="x", target="y"`` cross-maps.  A
        target with dims the columns lack broadcasts them (one result per target series).
    embedded : bool, default False
        Use the columns themselves as state coordinates; E may be left out (a given E must
        equal their number).
    time_dim : str, optional
        The time dimension (default "time"; a 1-D DataArray uses its only dim).  Its old
        name ``dim`` still works, with a FutureWarning, until the next release.
    backend : {"auto", "cpu", "gpu"}, optional
    neighbors : {"auto", "exact", "kdtree", "sorted1d", "nndescent", "hnsw", "ivf"}, optional
        How neighbours are found (default: xedm's option, "auto"); see docs/neighbors.md.
        "exact", "kdtree" and "sorted1d" (one-coordinate states) give identical tables;
        "nndescent" and "hnsw" are approximate (``pip install "xedm[ann]"``); "ivf" is the
        approximate GPU method (backend="gpu").  ``attrs["neighbors"]`` records the method used.
    neighbors_recall : float, optional
        Target recall of approximate methods (default 0.99): their search effort is raised
        until the recall measured against brute force on a sample of prediction points
        reaches it; the measured value is ``attrs["neighbors_recall"]`` (1.0 when exact).
    generate_steps : int, default 0
        Generative (closed-loop) forecast of this many steps (pyEDM's ``generateSteps``):
        from the last state of the data, each one-step forecast is appended as the newest
        observation and the next state is built from it; the library stays the data's.  The
        result is then the ``generate_steps`` forecasts on the time coordinate extended past
        the data with its step (``observed`` NaN, no skill).  Needs one column that is also
        the target, ``Tp=1``, no ``pred`` and ``embedded=False``; runs on the CPU.

    Returns
    -------
    Dataset
        ``prediction`` and ``observed`` on the (extended) time coordinate at the target times
        t + Tp; ``pred_variance``, the weighted variance of the neighbours' targets about each
        prediction, ``sum w_i (y_i - prediction)^2 / sum w_i`` (pyEDM's Pred_Variance);
        ``rho``, ``mae``, ``rmse``, ``n``; parameters, backend and neighbour method in
        ``attrs``.
    {notes}
    Examples
    --------
    >>> import numpy as np, xarray as xr, xedm
    >>> x = xr.DataArray(np.sin(0.3 * np.arange(300)), dims="time", name="x")
    >>> out = x.edm.simplex(E=2)
    >>> bool(out.rho > 0.99)
    True
    >>> ds = xr.Dataset({"a": x, "b": x.shift(time=1)})
    >>> ds.edm.simplex(columns=["a", "b"], embedded=True).attrs["E"]  # E = number of columns
    2
    """
    p = _params(
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, time_dim, embedded)
    if check_generate(generate_steps, p, pred, embedded):
        return generative("simplex", p, generate_steps)
    X, y, index, dim, E = p.X, p.y, p.index, p.dim, p.E
    tau, Tp, knn, excl, spec, attrs = p.tau, p.Tp, p.knn, p.excl, p.spec, p.attrs
    kE = 1 if embedded else E
    pred_t = pred_times(spec, kE, tau)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict_var"],
                               neighbors_recall, n_lib=len(index), dim=kE * _ncols(attrs),
                               knn=knn or E + 1, n_pred=len(pred_t),
                               work=int(X.size) * len(index))
    check_exclusion(excl, len(index), spec["lib"], pred_t, [(kE, tau, Tp)])
    lazy = is_lazy(X, y)
    if lazy:
        library_check(False, knn, [(E, tau, Tp)], len(index), spec["lib"], bool(embedded),
                       "a smaller E", spec["pred_mask"], excl)
    out_t = pred_t + Tp
    P = len(out_t)

    def core(Xb, yb):
        chunks, tick, close = _row_progress(Xb, "simplex", method,
                                            min_work=_SIMPLEX_SPLIT_WORK)
        try:
            return _simplex.simplex(Xb, yb, E=E, tau=tau, Tp=Tp, knn=knn, excl=excl,
                                    embedded=bool(embedded), backend=backend, method=method,
                                    row_chunks=chunks, progress=tick, **spec)
        finally:
            close()

    results = _apply(X, y, dim, block_check("simplex", core) if lazy else core, {
        "prediction": ([_OUT], {_OUT: P}, float),
        "pred_variance": ([_OUT], {_OUT: P}, float),
        "observed": ([_OUT], {_OUT: P}, float),
        **_SKILL,
    }, lazy)
    if not lazy:
        _check_results("simplex", results[0], X, y, dim, excl, out_t)
        check_variance("simplex", results[0]["prediction"][1], results[0]["pred_variance"][1])
    attrs.update(knn=int(knn if knn is not None else E + 1), backend=backend,
                 **neighbor_attrs(method, lazy))
    return _finish(results, dim, index, out_t, attrs)


@cupy_io
@renamed("dim", "time_dim", "the time dimension")
def smap(
    data: Data,
    E: int | None = None,
    *,
    theta: float = 0.0,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    embedded: bool = False,
    solver: str = "lstsq",
    alpha: float = 0.0,
    singular_values: bool = False,
    time_dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
    generate_steps: int = 0,
) -> xr.Dataset:
    """S-map (Sugihara 1994): locally weighted linear maps; theta sets the nonlinearity.

    Weights ``exp(-theta * d / mean(d))`` over the neighbours (every library point unless
    ``knn`` is given); each prediction solves a weighted least-squares problem whose
    coefficients (intercept, then one per state coordinate: the local Jacobian) are returned.

    Parameters
    ----------
    theta : float, default 0
        Localisation; 0 is a global linear autoregression.
    solver : {"lstsq", "ridge"} or scikit-learn-style regressor
        "lstsq": SVD least squares (minimum-norm, as numpy.linalg.lstsq).  "ridge":
        ``|| diag(w) (A c - b) ||^2 + alpha * sum_{j>=1} c_j^2`` (intercept not penalised).
        A regressor (anything with ``fit(X, y, sample_weight)``, ``coef_`` and
        ``intercept_``: scikit-learn's Ridge, Lasso, ElasticNet, their CV versions,
        LinearRegression, ...) fits each local map with its own objective and
        ``sample_weight = w**2`` (a clone is fitted, one fit per prediction point, on the
        CPU); the coefficients are ``[intercept_, *coef_]``.  See docs/conventions.md for
        how this differs from pyEDM's ``solver=``.
    alpha : float
        Ridge strength (solver="ridge"; a regressor carries its own).
    singular_values : bool
        Also return the singular values of each weighted design matrix.
    Other parameters are as in :func:`simplex` (E may be left out with ``embedded=True``;
    ``generate_steps`` gives ``coefficients`` of each generated step too).

    Returns
    -------
    Dataset
        As :func:`simplex`, plus ``coefficients`` over (time, ``coef``).

    Notes
    -----
    Input types, forecast labels and results without any finite prediction are handled as in
    :func:`simplex`.

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(400)
    >>> out = x.edm.smap(E=2, theta=2.0)
    >>> out.coef.values.tolist()
    ['intercept', 'x(t-0)', 'x(t-1)']
    """
    reserved = PREDICTED.union(("coefficients", "coef"), ("singular_values", "singular_value")
                                if singular_values else ())
    p = _params(
        data, E, tau, Tp, knn, exclusion_radius, lib, pred, columns, target, time_dim, embedded,
        "smap", reserved)
    X, y, index, dim, E = p.X, p.y, p.index, p.dim, p.E
    tau, Tp, knn, excl, spec, attrs = p.tau, p.Tp, p.knn, p.excl, p.spec, p.attrs
    thetas = v.check_theta(theta)
    if thetas.size != 1:
        raise ValueError("smap takes one theta; use predict_nonlinear for a list of theta")
    estimator = check_estimator(solver, alpha, singular_values)
    if estimator is None:
        solver, alpha = v.check_solver(solver, alpha)
    singular_values = v.check_bool("singular_values", singular_values)
    kE = 1 if embedded else E
    names = attrs["columns"].split(", ")
    coef = ["intercept"] + [f"{c}(t-{e * tau})" for c in names for e in range(kE)]
    if check_generate(generate_steps, p, pred, embedded):
        attrs.update(theta=float(thetas[0]), solver=str(estimator or solver), alpha=alpha)
        return generative("smap", p, generate_steps, thetas=thetas, coef=coef,
                          alpha=alpha if solver == "ridge" else 0.0, estimator=estimator)
    pred_t = pred_times(spec, kE, tau)
    backend, method = _engines(backend, neighbors, ["knn_sweep", "smap_predict"],
                               neighbors_recall, n_lib=len(index), dim=kE * _ncols(attrs),
                               knn=knn, n_pred=len(pred_t), work=int(X.size) * len(index))
    check_exclusion(excl, len(index), spec["lib"], pred_t, [(kE, tau, Tp)])
    lazy = is_lazy(X, y)
    if lazy:
        library_check(True, knn, [(kE, tau, Tp)], len(index), spec["lib"], bool(embedded),
                       "a smaller E", spec["pred_mask"], excl)
    out_t = pred_t + Tp
    P = len(out_t)
    nc = len(coef)

    def core(Xb, yb):
        if estimator is not None:
            return smap_estimator(Xb, yb, E=kE, tau=tau, Tp=Tp, theta=float(thetas[0]),
                                  knn=knn, excl=excl, embedded=bool(embedded),
                                  estimator=estimator, **spec)
        chunks, tick, close = _row_progress(Xb, "smap")
        try:
            res = _smap.smap(Xb, yb, E=kE, tau=tau, Tp=Tp, thetas=thetas, knn=knn, excl=excl,
                             embedded=bool(embedded), backend=backend, method=method,
                             alpha=alpha if solver == "ridge" else 0.0,
                             want_sv=singular_values, row_chunks=chunks, progress=tick, **spec)
        finally:
            close()
        out = {k: res[k][0] for k in ("prediction", "coefficients", *(
            ["singular_values"] if singular_values else []), "rho", "mae", "rmse", "n")}
        out["observed"] = res["observed"]
        return out

    outputs = {
        "prediction": ([_OUT], {_OUT: P}, float),
        "observed": ([_OUT], {_OUT: P}, float),
        "coefficients": ([_OUT, "coef"], {_OUT: P, "coef": nc}, float),
        **_SKILL,
    }
    if singular_values:
        outputs["singular_values"] = ([_OUT, "singular_value"], {"singular_value": nc}, float)
    results = _apply(X, y, dim, block_check("smap", core) if lazy else core, outputs, lazy)
    if not lazy:
        _check_results("smap", results[0], X, y, dim, excl, out_t)
    if estimator is not None:  # fitted on the CPU, every neighbour found exactly
        solver, backend = str(estimator), "cpu"
    attrs.update(theta=float(thetas[0]), knn=-1 if knn is None else knn, solver=solver,
                 alpha=alpha, backend=backend, **neighbor_attrs(method, lazy))
    return _finish(results, dim, index, out_t, attrs, {"coef": coef})


simplex.__doc__ = simplex.__doc__.replace("{notes}", "\n    " + _INPUT_NOTES)
