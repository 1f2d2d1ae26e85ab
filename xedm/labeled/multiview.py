"""The xarray layer of Multiview embedding (:func:`multiview`); the numerics are
:mod:`xedm.core.multiview`."""

from __future__ import annotations

from collections.abc import Sequence
from math import isqrt

import numpy as np
import xarray as xr

from ..core import validate as v
from ..core.embed import LibSpec, library_selection
from ..core.multiview import multiview as _multiview
from ..core.multiview import view_count
from .checks import PREDICTED, check_horizon
from .inputs import (
    VAR,
    Data,
    build_dataset,
    check_names,
    describe,
    extended_labels,
    lib_spec,
    select,
    time_index,
)
from .inputs import pred_mask as _pred_mask

_VIEW_VARS = ("view_columns", "view_rank_rho", "view_rho", "view_mae", "view_rmse", "view_n")


def _check_count(name: str, value, low: int, high: int, what: str) -> int:
    value = v.check_int(name, value, low)
    if value > high:
        raise ValueError(f"{name}={value} is invalid: there are only {high} {what}; "
                         f"use {name} <= {high}")
    return value


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
    data : Dataset
        The series; time on ``time_dim`` (default "time"); other dims broadcast (one result,
        and one table of views, per series).
    columns : str or list of str
        Variables whose lags make the views.
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
    from .edm import _engines

    train_lib = v.check_bool("train_lib", train_lib)
    exclude_target = v.check_bool("exclude_target", exclude_target)
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
    n_lagged = E * len(cols)
    D = _check_count("D", n_given if D is None else D, 1, n_lagged,
                     f"lagged columns (E={E} x {len(cols)} columns)")
    V = view_count(n_lagged, D)
    k = _check_count("multiview", max(1, isqrt(V)) if multiview is None else multiview, 1, V,
                     f"views of D={D} from {n_lagged} lagged columns")
    if train_lib and lib is None and pred is None:
        half = T // 2
        spec, pmask = LibSpec(segments=np.array([[0, half - 1]], np.int64)), np.arange(T) >= half
    else:
        spec, pmask = lib_spec(lib, index, dim), _pred_mask(pred, index, dim)
    rank = library_selection(T, spec, 1, 1, 0, True) if train_lib else pmask
    backend, method = _engines(backend, neighbors, ["knn_sweep", "simplex_predict"],
                               n_lib=T, dim=D, knn=knn or D + 1, n_pred=int((rank | pmask).sum()),
                               work=V * D * T * T)
    lead = X.dims[:-2]
    Xa = np.asarray(X.transpose(*lead, VAR, dim).values, np.float64)
    ya = np.asarray(y.transpose(*lead, dim).values, np.float64)
    flat_X, flat_y = Xa.reshape((-1,) + Xa.shape[-2:]), ya.reshape(-1, T)
    runs = [_multiview(xb, yb, E=E, tau=tau, D=D, k=k, Tp=Tp, knn=knn, excl=excl, lib=spec,
                       pred_mask=pmask, rank_mask=rank, backend=backend, method=method)
            for xb, yb in zip(flat_X, flat_y, strict=True)]
    names = np.array([f"{c}(t-{e * tau})" for e in range(E) for c in cols])
    shape = Xa.shape[:-2]

    def stack(key, extra_dims=()):
        arr = np.stack([r[key] for r in runs]) if runs else np.empty((0,))
        return (*lead, *extra_dims), arr.reshape(shape + arr.shape[1:])

    data_vars = {key: stack(key, dims) for key, dims in (
        ("prediction", (dim,)), ("observed", (dim,)), ("rho", ()), ("mae", ()), ("rmse", ()),
        ("n", ()), ("rank_rho", ("view",)), ("view_rho", ("view",)), ("view_mae", ("view",)),
        ("view_rmse", ("view",)), ("view_n", ("view",)))}
    data_vars["view_rank_rho"] = data_vars.pop("rank_rho")
    views = np.stack([r["views"] for r in runs])
    data_vars["view_columns"] = ((*lead, "view", "d"),
                                 names[views].reshape(shape + views.shape[1:]))
    coords = {c: X[c].variable for c in X.coords if c != dim and set(X[c].dims) <= set(lead)}
    coords[dim] = extended_labels(index, runs[0]["out_t"])
    attrs = {"E": E, "tau": tau, "Tp": Tp, "D": D, "multiview": k, "views": V,
             "knn": knn or D + 1, "exclusion_radius": excl, "train_lib": int(train_lib),
             "exclude_target": int(exclude_target), "lib": describe(lib), "pred": describe(pred),
             "columns": ", ".join(cols), "target": tgt, "backend": backend,
             "neighbors": method.used_name if hasattr(method, "used_name") else str(method),
             "xedm_function": "multiview"}
    return build_dataset(data_vars, coords, attrs)
