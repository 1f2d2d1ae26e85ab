"""Stochastic null cases: independent linear processes (what significance tests must not
flag)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._checks import _check_n, _check_size, _number, _step_time


def ar1(n_series: int, n: int, phi: float = 0.9, *, seed: int = 0,
        transient: int = 100) -> xr.DataArray:
    """Independent AR(1) series ``x[t] = phi x[t-1] + e[t]``, ``e`` standard normal.

    Autocorrelated but uncoupled: cross-map skill between them is spurious, so a calibrated
    significance test flags about ``alpha`` of the pairs (see :func:`xedm.xmap`'s
    ``surrogates=``).  Noise from ``numpy.random.default_rng(seed)`` drawn as one
    ``(n_series, transient + n)`` array, the first ``transient`` steps dropped.

    Parameters
    ----------
    n_series : int
        Number of series (>= 1).
    n : int
        Points per series (>= 1).
    phi : float
        Lag-1 coefficient, in (-1, 1) (stationary).
    seed : int
        Seed (>= 0).
    transient : int
        Steps dropped from the start of each series (>= 0).

    Returns
    -------
    DataArray ``(series, time)`` with ``phi`` and ``seed`` in attrs.

    Examples
    --------
    >>> import xedm
    >>> x = xedm.datasets.ar1(3, 500, seed=1)
    >>> x.dims, round(float(xedm.datasets.ar1(1, 20000)[0].to_series().autocorr()), 1)
    (('series', 'time'), 0.9)
    """
    n_series = _check_n(n_series, "n_series")
    n = _check_n(n)
    phi = _number(phi, "phi", low=-1.0, high=1.0)
    if abs(phi) >= 1.0:
        raise ValueError(f"phi must be in (-1, 1) for a stationary series, got {phi}")
    seed = _number(seed, "seed", integer=True, low=0)
    transient = _number(transient, "transient", integer=True, low=0)
    _check_size(n_series * (n + transient), f"n_series={n_series}, n={n}")
    e = np.random.default_rng(seed).standard_normal((n_series, transient + n))
    X = np.zeros_like(e)
    for t in range(1, X.shape[1]):
        X[:, t] = phi * X[:, t - 1] + e[:, t]
    return xr.DataArray(X[:, transient:], dims=("series", "time"), name="x",
                        coords={"series": np.arange(n_series), "time": _step_time(n)},
                        attrs={"system": "independent AR(1)", "phi": phi, "seed": seed})
