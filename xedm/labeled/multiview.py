"""The xarray layer of Multiview embedding (:func:`multiview`); the numerics are
:mod:`xedm.core.multiview`."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from math import isqrt

import numpy as np
import xarray as xr

from ..core import validate as v
from ..core.embed import LibSpec, library_selection
from ..core.multiview import check_views, view_count
from ..core.multiview import multiview as _multiview
from ..neighbors.base import method_name
from .checks import PREDICTED, check_horizon, degenerate_rows, shown
from .inputs import (
    VAR,
    Data,
    check_names,
    describe,
    is_lazy,
    lib_spec,
    select,
    time_index,
    user_stacklevel,
)
from .inputs import pred_mask as _pred_mask
from .progress import counter_bar

_OUTPUTS = ("prediction", "observed", "rho", "mae", "rmse", "n", "rank_rho", "view_rho",
            "view_mae", "view_rmse", "view_n", "views")
_VIEW_VARS = ("view_columns", "view_rank_rho", "view_rho", "view_mae", "view_rmse", "view_n")


def _check_count(name: str, value, low: int, high: int, what: str) -> int:
    value = v.check_int(name, value, low)
    if value > high:
        raise ValueError(f"{name}={value} is invalid: there are only {high} {what}; "
                         f"use {name} <= {high}")
    return value


def _as_dataset(da: xr.DataArray, series_dim: str, columns, target):
    """A DataArray's series along ``series_dim`` as Dataset variables named by their labels
    (as strings); columns default to all of them."""
    if series_dim not in da.dims:
        raise ValueError(f"series_dim={series_dim!r} is not a dim of the data {da.dims}; name "
                         "the dim whose labels are the columns")
    labels = da[series_dim].values.tolist()
    ds = da.to_dataset(dim=series_dim)
    ds = ds.rename({k: str(k) for k in ds.data_vars if not isinstance(k, str)})
    if columns is None:
        columns = labels
    cols = [str(c) for c in ([columns] if isinstance(columns, (str, int)) else columns)]
    return ds, cols, None if target is None else str(target)


def _check_values(results, X, y, cols, dim, excl, out_t) -> None:
    """In-memory results as simplex's (no finite forecast raises, NaN rho warns why), and one
    warning naming the constant columns: views of their lags alone have every state at the
    same point, their neighbours picked by time order alone."""
    from .edm import _check_results

    _check_results("multiview", results, X, y, dim, excl, out_t)
    const = degenerate_rows(X.transpose(..., VAR, dim).values)[1]
    const = const.reshape(-1, const.shape[-1]).any(axis=0)
    if const.any():
        warnings.warn(f"multiview: columns {shown([cols[i] for i in np.flatnonzero(const)])} "
                      "are constant: they add nothing to a view, and views of their lags "
                      "alone pick neighbours by time order alone; leave them out",
                      UserWarning, stacklevel=user_stacklevel())


def multiview(
    data: Data,
    columns: str | Sequence[str] | None = None,
    target: str | None = None,
    E: int = 1,
    *,
    D: int | None = None,
    multiview: int | None = None,
    train_lib: bool = True,
    exclude_target: bool = False,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    time_dim: str | None = None,
    series_dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
) -> xr.Dataset:
    """Multiview embedding (Ye & Sugihara 2016): average the forecasts of the best views.

    Each column contributes E lags (``x(t-0), x(t-tau), ...``); every combination of D of
    these lagged columns is a view, a state space of its own.  Each view forecasts the target
    by simplex (knn = D + 1 by default); the views are ranked by their rho on the ranking set,
    and the forecast is the mean of the top ``multiview`` views' forecasts.

    Parameters
    ----------
    data : Dataset, or DataArray with a series dim ``series_dim``
        The series; time on ``time_dim`` (default "time"); other dims broadcast (one result,
        and one table of views, per series).
    columns : str or list of str
        Variables whose lags make the views (on a DataArray: labels along ``series_dim``,
        default all of them).
    target : str
        Variable forecast (default: the first column).
    E : int, default 1
        Lags per column (E = 1: the columns themselves).
    D : int, optional
        Dimension of each view (default: the number of columns given, as pyEDM).
    multiview : int, optional
        Views averaged (default ``floor(sqrt(number of views))``, Ye & Sugihara's choice).
    train_lib : bool, default True
        Rank the views in sample: predict the lib rows from the library (leave-one-out), then
        forecast ``pred``.  False: rank them by their skill on ``pred`` itself.  With
        ``train_lib=True`` and neither lib nor pred given, lib is the first half of the data
        and pred the second (as pyEDM).
    exclude_target : bool, default False
        Leave the target's own lags out of the views.
    tau, Tp, knn, exclusion_radius, lib, pred, backend, neighbors
        As in :func:`simplex`; ``knn`` defaults to D + 1.
    time_dim : str, optional
        Time dimension.
    series_dim : str, optional
        The dim of a DataArray whose labels are the columns.

    Returns
    -------
    Dataset
        ``prediction`` (the mean of the top views) and ``observed`` on the (extended) time
        coordinate at the target times, its ``rho``, ``mae``, ``rmse``, ``n``; the table of
        the top views over dim ``view`` (best first): ``view_columns`` (view, ``d``), their
        ranking skill ``view_rank_rho`` and their forecast skill ``view_rho``, ``view_mae``,
        ``view_rmse``, ``view_n``.  ``attrs["views"]`` is the number of views ranked.

    Examples
    --------
    >>> import xedm
    >>> ds = xedm.datasets.lorenz63(400)
    >>> out = ds.edm.multiview(columns=["x", "y", "z"], target="x", E=2, D=3)
    >>> out.sizes["view"], out.sizes["d"]
    (4, 3)
    >>> bool(out.rho > 0.9)
    True
    """
    from .edm import _OUT, _apply, _engines, _finish

    train_lib = v.check_bool("train_lib", train_lib)
    exclude_target = v.check_bool("exclude_target", exclude_target)
    if isinstance(data, xr.DataArray) and series_dim is not None:
        data, columns, target = _as_dataset(data, series_dim, columns, target)
    X, y, cols, tgt, dim = select(data, columns, target, time_dim)
    check_names("multiview", X, y, PREDICTED.union(_VIEW_VARS, ("view", "d")))
    if VAR not in X.dims:
        X = X.expand_dims({VAR: 1}, axis=-2)
    n_given = len(cols)
    if exclude_target:
        keep = [i for i, c in enumerate(cols) if c != tgt]
        if not keep:
            raise ValueError(f"exclude_target=True leaves no column: columns={cols} are all "
                             f"the target {tgt!r}; add other columns")
        X, cols = X.isel({VAR: keep}), [cols[i] for i in keep]
    index = time_index(X, dim)
    T = len(index)
    E, tau, Tp = v.check_E(E), v.check_tau(tau), v.check_Tp(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    check_horizon(Tp, T)
    v.check_embedding_fits(E, tau, T)
    n_lagged = E * len(cols)
    D = _check_count("D", n_given if D is None else D, 1, n_lagged,
                     f"lagged columns (E={E} x {len(cols)} columns"
                     + (" left by exclude_target=True" if exclude_target else "") + ")")
    V = view_count(n_lagged, D)
    k = _check_count("multiview", max(1, isqrt(V)) if multiview is None else multiview, 1, V,
                     f"views of D={D} from {n_lagged} lagged columns")
    if train_lib and lib is None and pred is None:
        half = T // 2
        spec, pmask = LibSpec(segments=np.array([[0, half - 1]], np.int64)), np.arange(T) >= half
    else:
        spec, pmask = lib_spec(lib, index, dim), _pred_mask(pred, index, dim)
    rank = library_selection(T, spec, 1, 1, 0, True) if train_lib else pmask
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict_var"],
                               n_lib=T, dim=D, knn=knn or D + 1, n_pred=int((rank | pmask).sum()),
                               work=V * D * T * T)
    check_views(V, D, T, n_lagged, f"{len(cols)} columns, E={E}", backend)
    out_t = np.flatnonzero(pmask) + Tp  # static: every pred row, forecast Tp ahead
    P = len(out_t)

    def core(Xb, yb):
        bar = counter_bar(None, "multiview", V * len(Xb), unit="view")
        try:
            runs = [_multiview(xb, y1, E=E, tau=tau, D=D, k=k, Tp=Tp, knn=knn, excl=excl,
                               lib=spec, pred_mask=pmask, rank_mask=rank, backend=backend,
                               method=method, progress=bar.update)
                    for xb, y1 in zip(Xb, yb, strict=True)]
        finally:
            bar.close()
        return {key: np.stack([r[key] for r in runs]) for key in _OUTPUTS}

    one, view = ([], {}), (["view"], {"view": k})
    dims = {"prediction": ([_OUT], {_OUT: P}), "observed": ([_OUT], {_OUT: P}),
            "rho": one, "mae": one, "rmse": one, "n": one, "rank_rho": view, "view_rho": view,
            "view_mae": view, "view_rmse": view, "view_n": view,
            "views": (["view", "d"], {"view": k, "d": D})}
    outputs = {key: (*dims[key], np.int64 if key in ("n", "view_n", "views") else float)
               for key in _OUTPUTS}
    results = _apply(X, y, dim, core, outputs)
    if not is_lazy(X, y):
        _check_values(results[0], X, y, cols, dim, excl, out_t)
    names = np.array([f"{c}(t-{e * tau})" for e in range(E) for c in cols])
    res = results[0]
    vdims, views = res.pop("views")
    res["view_columns"] = (vdims, views.map_blocks(lambda a: names[a], dtype=names.dtype)
                           if hasattr(views, "map_blocks") else names[views])
    res["view_rank_rho"] = res.pop("rank_rho")
    attrs = {"E": E, "tau": tau, "Tp": Tp, "D": D, "multiview": k, "views": V,
             "knn": knn or D + 1, "exclusion_radius": excl, "train_lib": int(train_lib),
             "exclude_target": int(exclude_target), "lib": describe(lib), "pred": describe(pred),
             "columns": ", ".join(cols), "target": tgt, "backend": backend,
             "neighbors": method_name(method), "xedm_function": "multiview"}
    return _finish(results, dim, index, out_t, attrs)
