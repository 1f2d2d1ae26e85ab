"""The xarray layer of generative (closed-loop) forecasts: ``simplex(..., generate_steps=n)``
and ``smap(..., generate_steps=n)``.  The loop itself is :mod:`xedm.core.generate`."""

from __future__ import annotations

import warnings

import numpy as np

from ..core import validate as v
from ..core.generate import generate
from .checks import check_variance, degenerate_rows, shown
from .inputs import VAR, build_dataset, extended_labels, user_stacklevel
from .progress import counter_bar


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


def _check_generated(kind, steps, p, x, prediction, X, lead) -> None:
    """No finite forecast anywhere raises; all-NaN, constant or otherwise forecast-less series
    among others warn once, named (their forecasts are NaN, or the constant repeated)."""
    none, same = degenerate_rows(x)
    failed = ~np.isfinite(prediction).any(axis=-1) & ~none
    what = f"{kind}(..., generate_steps={steps})"
    why_failed = (f"the newest state (the last (E-1)*tau + 1 = {(p.E - 1) * p.tau + 1} values) "
                  "holds NaN, or no library point has a finite next value: fill the gaps or "
                  "cut the series where its last finite state ends")
    if none.all():
        raise ValueError(f"{what}: the data have no finite value (all NaN or inf); there is "
                         "nothing to forecast")
    if (none | failed).all():
        raise ValueError(f"{what}: no series gives a finite forecast: {why_failed}")

    def names(mask):
        if not lead:
            return "the series"
        idx = np.argwhere(mask.reshape(X.shape[:-1]))
        return "series " + shown([", ".join(f"{d}={X[d].values[i].item() if d in X.coords else i}"
                                             for d, i in zip(lead, row, strict=True))
                                  for row in idx])

    parts = []
    if none.any():
        parts.append(f"{names(none)} are all NaN: their forecasts are NaN")
    if failed.any():
        parts.append(f"{names(failed)} give no finite forecast: {why_failed}")
    if same.any():
        parts.append(f"{names(same)} are constant: every neighbour is at distance 0, and the "
                     "forecast repeats that value")
    if parts:
        warnings.warn(f"{what}: " + "; ".join(parts), UserWarning,
                      stacklevel=user_stacklevel())


def generative(kind: str, p, steps: int, *, thetas=(0.0,), alpha=0.0, estimator=None,
               coef=None):
    """The Dataset of ``steps`` generated values (``kind``: "simplex" or "smap"): one result
    per series, on the time coordinate extended past the data with its step."""
    X, dim = p.X, p.dim
    if VAR in X.dims:
        X = X.isel({VAR: 0}, drop=True)
    lead = [d for d in X.dims if d != dim]
    X = X.transpose(*lead, dim)
    _check_cost(kind, int(np.prod([X.sizes[d] for d in lead], dtype=np.int64)),
                X.sizes[dim], p.E, steps)
    Xa = np.asarray(X.values, dtype=np.float64)  # dask data are computed: the loop is serial
    T = Xa.shape[-1]
    flat = Xa.reshape(-1, 1, T)
    bar = counter_bar(None, f"{kind} generate_steps", steps, unit="step")
    try:
        res = generate(flat, flat[:, 0], kind=kind, steps=steps, E=p.E, tau=p.tau, knn=p.knn,
                       excl=p.excl, lib=p.spec["lib"], thetas=thetas, alpha=alpha,
                       estimator=estimator, progress=bar.update)
    finally:
        bar.close()
    shape = Xa.shape[:-1]
    _check_generated(kind, steps, p, flat[:, 0], res["prediction"], X, lead)
    dims = (*lead, dim)
    data_vars = {"prediction": (dims, res["prediction"].reshape(*shape, steps)),
                 "observed": (dims, np.full(shape + (steps,), np.nan))}
    if kind == "simplex":
        check_variance(f"simplex(..., generate_steps={steps})", res["prediction"],
                       res["pred_variance"])
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


STEP_OPS = 1e4  # one step's Python-level work (its row of the kernels, a few small arrays)


def _check_cost(kind: str, B: int, T: int, E: int, steps: int) -> None:
    """The work policy (:mod:`xedm.memory`) for ``steps`` generated values of ``B`` series of
    ``T`` points: the series extended by ``steps`` (with their padded and scaled copies, and
    the result) in memory, and one serial step after another, each a kNN row over the
    library (S-map: and a weighted fit), refused up front."""
    from ..memory import check_memory, check_work

    what = f"{kind}(generate_steps={steps:,}) of {B} series of {T} time points"
    fix = "use a smaller generate_steps"
    check_memory(8.0 * B * (T + steps) * (10 + E), what, fix, share=0.5)
    per_step = B * T * (E + 2) * ((E + 1) if kind == "smap" else 1)
    check_work(float(steps) * (STEP_OPS + per_step), what, fix, serial=True)
