"""Networks: many logistic maps coupled through a sparse random directed graph with known
drivers (:func:`many_series`)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.validate import renamed
from ..kernels._numba import njit  # numba's, with xedm's kernel cache
from ._checks import (
    _check_loops,
    _check_n,
    _check_size,
    _check_steps,
    _number,
    _range,
    _run,
    _short,
    _step_time,
)

__all__ = ["many_series"]


@njit(cache=True)
def _network_kernel(n, r, x0, src, dst, weight, transient):
    # x_i(t+1) = (1 - c_i) f_i(x_i(t)) + sum_{j -> i} w_ji f_j(x_j(t)),  c_i = sum_j w_ji
    m = x0.shape[0]
    x = x0.copy()
    fx = np.empty(m)
    incoming = np.zeros(m)
    for e in range(src.shape[0]):
        incoming[dst[e]] += weight[e]
    out = np.empty((m, n))
    for t in range(transient + n):
        if t >= transient:
            for i in range(m):
                out[i, t - transient] = x[i]
        for i in range(m):
            fx[i] = r[i] * x[i] * (1.0 - x[i])
        for i in range(m):
            x[i] = (1.0 - incoming[i]) * fx[i]
        for e in range(src.shape[0]):
            x[dst[e]] += weight[e] * fx[src[e]]
    return out


def _rate_range(r) -> tuple[float, float]:
    """many_series' ``r``: one growth rate or a ``(low, high)`` pair, within (0, 4]."""
    return _range(r, "r", "a growth rate or a (low, high) pair of them", low=0, above=True,
                  high=4)


@renamed("dim", "series_dim", "the series dimension")
def many_series(
    n_series: int,
    n: int,
    *,
    density: float = 0.05,
    coupling: float = 0.2,
    r: tuple[float, float] = (3.7, 3.9),
    seed: int | None = 0,
    transient: int = 100,
    series_dim: str = "series",
) -> xr.Dataset:
    """Many logistic maps coupled through a sparse random directed graph with known drivers.

    Each series follows its own logistic map ``f_i(x) = r_i x (1 - x)`` and mixes in the
    images of its drivers (diffusive coupling, as in coupled map lattices)::

        x_i[t+1] = (1 - c_i) f_i(x_i[t]) + sum_{j -> i} w_ji f_j(x_j[t])

    Every directed edge ``j -> i`` (j ≠ i) is present with probability ``density``; a driven
    series splits the total weight ``c_i = coupling`` equally among its drivers
    (``w_ji = coupling / in_degree(i)``), undriven series have ``c_i = 0``. Because each new
    value is a convex combination of logistic images, every series stays in ``[0, 1]`` for
    any graph.

    Parameters
    ----------
    n_series : int
        Number of series.
    n : int
        Number of time points. ``n_series * n + 2 * n_series**2`` (the result and the two
        ``(series, series)`` matrices) may not exceed 2**31 values (16 GiB of float64).
    density : float, default 0.05
        Probability of each directed edge, in ``[0, 1]``.
    coupling : float, default 0.2
        Total incoming weight of a driven series, in ``[0, 1]``.
    r : float or (float, float), default (3.7, 3.9)
        Range ``(low, high)`` of the growth rates, drawn uniformly per series, within
        ``(0, 4]``; one number gives every series that rate (the same as ``(r, r)``).
    seed : int or None, default 0
        Non-negative seed for ``numpy.random.default_rng`` (graph, growth rates, initial
        values).
    transient : int, default 100
        Iterations discarded before the first returned point.
    series_dim : str, default "series"
        Name of the series dimension (not ``"time"``, ``"driver"`` or ``"driven"``).  Its old
        name ``dim`` still works, with a FutureWarning, until the next release.

    Returns
    -------
    xarray.Dataset
        ``x`` ``(series, time)``; ``adjacency`` ``(driver, driven)``, True where the driver
        series drives the driven one; ``coupling`` ``(driver, driven)``, the weights
        ``w_ji``; ``r`` ``(series)``. ``driver`` and ``driven`` carry the series labels.

    Notes
    -----
    To compare with a cross-map result ``rho(library, target)``: a causal link
    ``driver -> driven`` should give a high ``rho(library=driven, target=driver)``, so the
    expected pattern is ``ds.adjacency.rename(driver="target", driven="library")``.

    Examples
    --------
    >>> from xedm import datasets
    >>> ds = datasets.many_series(20, 500, density=0.1, seed=1)
    >>> ds.x.dims, ds.adjacency.dims
    (('series', 'time'), ('driver', 'driven'))
    >>> bool(ds.adjacency.values.diagonal().any())
    False
    """
    n_series = _check_n(n_series, "n_series")
    n = _check_n(n, "n")
    transient = _check_steps(transient, "transient")
    density = _number(density, "density", low=0, high=1)
    coupling = _number(coupling, "coupling", low=0, high=1)
    r_lo, r_hi = _rate_range(r)
    if seed is not None:
        seed = _number(seed, "seed", integer=True, low=0, expected="a non-negative integer or None")
    dim = series_dim
    if not isinstance(dim, str):
        raise TypeError(f"series_dim must be a string (the series dimension's name), got "
                        f"{_short(dim)}")
    if dim in ("time", "driver", "driven"):
        raise ValueError(f"series_dim must not be 'time', 'driver' or 'driven' (taken), got "
                         f"{dim!r}")
    request = f"n_series={n_series}, n={n}"
    # x (series, time), then the (series, series) random draw and coupling weights
    _check_size(n_series * n + 2 * n_series**2, request)
    rng = np.random.default_rng(seed)
    adjacency = rng.random((n_series, n_series)) < density
    np.fill_diagonal(adjacency, False)
    rates = rng.uniform(r_lo, r_hi, n_series)
    start = rng.uniform(0.1, 0.9, n_series)

    in_degree = adjacency.sum(axis=0)
    weights = np.zeros((n_series, n_series))
    driven = in_degree > 0
    weights[:, driven] = adjacency[:, driven] * (coupling / in_degree[driven])
    src, dst = np.nonzero(adjacency)
    _check_loops("many_series", transient + n, 10 * n_series + 4 * len(src), "transient + n")
    values = _run(
        "many_series", request, _network_kernel,
        n, rates, start, src.astype(np.int64), dst.astype(np.int64), weights[src, dst], transient,
    )
    labels = np.arange(n_series)
    return xr.Dataset(
        {
            "x": ((dim, "time"), values),
            "adjacency": (("driver", "driven"), adjacency),
            "coupling": (("driver", "driven"), weights),
            "r": (dim, rates),
        },
        coords={dim: labels, "time": _step_time(n), "driver": labels, "driven": labels},
        attrs={
            "system": "logistic maps coupled on a random directed graph",
            "equations": "x_i[t+1] = (1 - c_i) f_i(x_i[t]) + sum_{j -> i} w_ji f_j(x_j[t])",
            "density": density,
            "coupling": coupling,
            "r_range": [r_lo, r_hi],
            "seed": -1 if seed is None else int(seed),
            "transient": transient,
            "n_edges": int(adjacency.sum()),
        },
    )
