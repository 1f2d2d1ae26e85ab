"""The xarray layer of the test for nonlinearity (rEDM's ``test_nonlinearity``): S-map's gain
in skill from theta = 0 (a global linear map) to the best theta, against the same gain on
surrogates that keep the series' linear structure."""

from __future__ import annotations

from collections.abc import Sequence

import xarray as xr

from ..core import validate as v
from .edm import THETAS
from .inputs import Data, as_xarray, resolve_dim
from .surrogates import surrogates as _surrogates
from .sweeps import predict_nonlinear

_P_RULE = "(1 + #{surrogate delta >= delta}) / (1 + #finite surrogate delta), one-sided"


def _gains(ds: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray]:
    """(delta_rho, delta_mae): max rho - rho(theta=0) and mae(theta=0) - min mae."""
    at0 = ds.sel(theta=0.0)
    return (ds["rho"].max("theta") - at0["rho"]), (at0["mae"] - ds["mae"].min("theta"))


def _p(delta: xr.DataArray, null: xr.DataArray) -> xr.DataArray:
    hits = (null >= delta).sum("surrogate")
    return (1 + hits) / (1 + null.notnull().sum("surrogate"))


def test_nonlinearity(
    data: Data,
    E: int,
    *,
    theta: Sequence[float] = (0.0, *THETAS),
    surrogates: int = 99,
    method: str = "ebisuzaki",
    seed: int | None = None,
    tau: int = 1,
    Tp: int = 1,
    knn: int | None = None,
    exclusion_radius: int = 0,
    lib=None,
    pred=None,
    target: str | None = None,
    time_dim: str | None = None,
    backend: str | None = None,
    neighbors: str | None = None,
    surrogate_options: dict | None = None,
) -> xr.Dataset:
    """Test for nonlinear (state-dependent) dynamics: S-map's skill gain from theta = 0 to
    the best theta, against the same gain on surrogates (rEDM's ``test_nonlinearity``).

    The statistics are ``delta_rho = max_theta rho - rho(theta=0)`` and ``delta_mae =
    mae(theta=0) - min_theta mae``, computed by :func:`predict_nonlinear` on the series and on
    each of its ``surrogates`` (all of them in one batched call).  The default surrogates
    (``"ebisuzaki"``: random Fourier phases; ``"iaaft"`` also keeps the values) keep the
    series' linear autocorrelation and nothing else, so a series whose skill rises with
    theta no more than theirs does is consistent with linear (stochastic) dynamics.
    ``p_value = (1 + #{surrogate delta_rho >= delta_rho}) / (1 + #surrogates)`` (one-sided;
    rEDM counts ``>``, which differs only on exact ties), and ``p_value_mae`` likewise.

    Parameters
    ----------
    data : DataArray or Dataset
        One variable (a Dataset needs ``target=``); time on ``time_dim``, other dims
        broadcast (one test per series).
    E : int
        Embedding dimension (choose it first, e.g. with :func:`embed_dimension`).
    theta : list of float, default (0, 0.01, 0.1, ..., 9)
        The localisations tried; must include 0.
    surrogates : int, default 99
        Surrogates per series (>= 1; 99 or more give p-values down to 0.01).
    method : str, default "ebisuzaki"
        Surrogate method (see :func:`xedm.surrogates`); ``surrogate_options`` passes its
        parameters (e.g. ``{"max_iter": 200}`` for ``"iaaft"``).
    seed : int, optional
        Seed of the surrogates (>= 0); None draws one (recorded in attrs).
    target : str, optional
        On a Dataset: the variable tested.
    time_dim : str, optional
        The time dim (default ``"time"``; a 1-D DataArray uses its only dim).
    Other parameters are as in :func:`smap`.

    Returns
    -------
    Dataset
        ``delta_rho``, ``delta_mae``, ``p_value`` (of delta_rho), ``p_value_mae``,
        ``best_theta``; ``rho`` and ``mae`` over ``theta``; ``delta_rho_null`` and
        ``delta_mae_null`` over ``surrogate``.  attrs: the parameters, the surrogate method,
        count and seed, and the p-value rule.

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.logistic_map(300)
    >>> res = xedm.test_nonlinearity(x, E=2, theta=[0, 1, 4], surrogates=19, seed=0)
    >>> float(res.p_value)
    0.05
    """
    data = as_xarray(data, time_dim)
    if isinstance(data, xr.Dataset):
        if target is None:
            raise TypeError("test_nonlinearity on a Dataset needs target= (the variable "
                            f"tested), one of {sorted(map(str, data.data_vars))}")
        if target not in data.data_vars:
            raise ValueError(f"target={target!r} is not a variable of the Dataset; choose "
                             f"one of {sorted(map(str, data.data_vars))}")
        data = data[target]
    elif target is not None:
        raise TypeError("target= chooses a variable of a Dataset; leave it out for a "
                        "DataArray")
    thetas = v.check_theta(theta)
    if not (thetas == 0).any():
        raise ValueError(f"theta={thetas.tolist()} must include 0: the test measures the "
                         "gain over theta = 0 (the global linear map)")
    n = v.check_int("surrogates", surrogates, 1, " (the number of surrogates per series)")
    if "surrogate" in data.dims:
        raise ValueError("the data already has a 'surrogate' dim; rename it first")
    dim = resolve_dim(data, time_dim)
    if dim != "time":  # the time dim under its default name: no result has it
        if "time" in data.dims:
            raise ValueError(f"time_dim={dim!r}, but another dim is named 'time'; rename it "
                             "first (e.g. data.rename(time='t0'))")
        data = data.rename({dim: "time"})
    common = {"E": E, "theta": thetas, "tau": tau, "Tp": Tp, "knn": knn,
              "exclusion_radius": exclusion_radius, "lib": lib, "pred": pred,
              "backend": backend, "neighbors": neighbors}
    ds = predict_nonlinear(data, **common)
    if surrogate_options is not None and not isinstance(surrogate_options, dict):
        raise TypeError(f"surrogate_options must be a dict of the method's options, e.g. "
                        f"surrogate_options={{'max_iter': 200}}, got "
                        f"{type(surrogate_options).__name__} {surrogate_options!r}")
    S = _surrogates(data, method, n, seed=seed, **(surrogate_options or {}))
    null = predict_nonlinear(S, **common)
    d_rho, d_mae = _gains(ds)
    n_rho, n_mae = _gains(null)
    out = xr.Dataset({
        "delta_rho": d_rho.drop_vars("theta"), "delta_mae": d_mae.drop_vars("theta"),
        "p_value": _p(d_rho, n_rho).drop_vars("theta"),
        "p_value_mae": _p(d_mae, n_mae).drop_vars("theta"),
        "best_theta": ds["best_theta"], "rho": ds["rho"], "mae": ds["mae"],
        "delta_rho_null": n_rho.drop_vars("theta"),
        "delta_mae_null": n_mae.drop_vars("theta"),
    })
    attrs = {k: val for k, val in ds.attrs.items() if not k.startswith("best_")}
    attrs.update(xedm_function="test_nonlinearity", surrogates=n,
                 surrogate_method=S.attrs["surrogate_method"],
                 surrogate_seed=S.attrs["surrogate_seed"], p_value=_P_RULE,
                 statistic="delta_rho = max_theta rho - rho(theta=0); delta_mae = "
                           "mae(theta=0) - min_theta mae",
                 null="the series replaced by its surrogates")
    out.attrs = attrs
    return out


test_nonlinearity.__test__ = False  # not a pytest test, whatever imports it
