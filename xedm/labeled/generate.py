"""The xarray layer of generative (closed-loop) forecasts: ``simplex(..., generate_steps=n)``
and ``smap(..., generate_steps=n)``.  The loop itself is :mod:`xedm.core.generate`."""

from __future__ import annotations

import numpy as np

from ..core import validate as v
from ..core.generate import generate
from .inputs import VAR, build_dataset, extended_labels


def check_generate(steps, p, pred, embedded) -> int:
    """``generate_steps`` (0: no generation), checked against the other parameters of a
    simplex / smap call (its :class:`xedm.labeled.edm.Params` ``p``)."""
    steps = v.check_int("generate_steps", steps, minimum=0)
    if steps == 0:
        return 0
    why = None
    if embedded:
        why = "embedded=True (the states must be lags of the series fed back)"
    elif p.attrs["columns"] != p.attrs["target"]:
        why = (f"columns={p.attrs['columns']!r} and target={p.attrs['target']!r} differ (the "
               "forecast of the target is fed back as the newest value of the one column)")
    elif p.Tp != 1:
        why = f"Tp={p.Tp} (each step forecasts one step ahead: Tp=1)"
    elif pred is not None:
        why = "pred is given (generation starts from the last state of the data)"
    if why is not None:
        raise ValueError(f"generate_steps={steps} cannot be used with {why}; "
                         "see docs/conventions.md, 'Generative forecasts'")
    return steps


def generative(kind: str, p, steps: int, *, thetas=(0.0,), alpha=0.0, estimator=None,
               coef=None):
    """The Dataset of ``steps`` generated values (``kind``: "simplex" or "smap"): one result
    per series, on the time coordinate extended past the data with its step."""
    X, dim = p.X, p.dim
    if VAR in X.dims:
        X = X.isel({VAR: 0}, drop=True)
    lead = [d for d in X.dims if d != dim]
    X = X.transpose(*lead, dim)
    Xa = np.asarray(X.values, dtype=np.float64)  # dask data are computed: the loop is serial
    T = Xa.shape[-1]
    flat = Xa.reshape(-1, 1, T)
    res = generate(flat, flat[:, 0], kind=kind, steps=steps, E=p.E, tau=p.tau, knn=p.knn,
                   excl=p.excl, lib=p.spec["lib"], thetas=thetas, alpha=alpha,
                   estimator=estimator)
    shape = Xa.shape[:-1]
    dims = (*lead, dim)
    data_vars = {"prediction": (dims, res["prediction"].reshape(*shape, steps)),
                 "observed": (dims, np.full(shape + (steps,), np.nan))}
    if kind == "simplex":
        data_vars["pred_variance"] = (dims, res["pred_variance"].reshape(*shape, steps))
    else:
        data_vars["coefficients"] = ((*dims, "coef"),
                                     res["coefficients"].reshape(*shape, steps, -1))
    coords = {k: c.variable for k, c in X.coords.items() if k != dim and dim not in c.dims}
    coords[dim] = extended_labels(p.index, np.arange(T, T + steps))
    if coef is not None:
        coords["coef"] = coef
    attrs = dict(p.attrs, generate_steps=steps, backend="cpu", neighbors="exact",
                 neighbors_recall=1.0)
    return build_dataset(data_vars, coords, attrs)
