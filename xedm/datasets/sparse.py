"""Sparse networks at whole-brain scale: logistic maps coupled through a random directed graph
of bounded in-degree, with delays per link, returned as an edge list
(:func:`sparse_network`).  Memory and time grow as ``n_series * (n + edges)``: nothing of size
``n_series**2`` is ever made."""

from __future__ import annotations

import numpy as np
import xarray as xr

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
from .network import _rate_range

__all__ = ["sparse_network"]

#: time steps staged per series before they are written into the (series, time) result: the
#: states are computed a whole step at a time, and writing them one column at a time would
#: touch a cache line of every series at every step
_BLOCK = 32
#: series per tile of that transpose (a tile of _BLOCK x _TILE float64 stays in L2)
_TILE = 256
_EQUATION = ("x_i[t+1] = (1 - c_i) f_i(x_i[t]) + sum_{j -> i} w_ji f_j(x_j[t + 1 - lag_ji]), "
             "f_i(x) = r_i x (1 - x), w_ji = coupling / in_degree(i), c_i = sum_j w_ji")
#: names the result uses besides the series dimension
_TAKEN = ("time", "edge", "x", "r", "driver", "driven", "weight", "lag")


@njit(cache=True)
def _choose_drivers(ptr, draws, n_series):
    """The drivers of every series, ascending: series i gets ``ptr[i+1] - ptr[i]`` distinct
    others, a uniform draw by Floyd's algorithm (``draws[ptr[i] + s]`` uniform in
    ``0..m-k+s``, m = n_series - 1 candidates) in O(k) per series with a marker array."""
    m = n_series - 1
    out = np.empty(draws.shape[0], np.int64)
    mark = np.zeros(max(m, 1), np.bool_)
    for i in range(n_series):
        a = ptr[i]
        k = ptr[i + 1] - a
        for s in range(k):
            t = draws[a + s]
            if mark[t]:  # taken: the new top candidate is free (all taken ones are below it)
                t = m - k + s
            mark[t] = True
            out[a + s] = t
        for e in range(a, a + k):
            mark[out[e]] = False
        out[a:a + k] = np.sort(out[a:a + k])
        for e in range(a, a + k):  # candidate c is series c, or c + 1 from i on (no self-loop)
            if out[e] >= i:
                out[e] += 1
    return out


@njit(cache=True)
def _sparse_kernel(n, r, init, dst, src, weight, lag, transient):
    """(series, n) states after ``transient`` steps.  ``init`` (h, series): the first h states
    (h = the longest delay); edge e: ``src[e] -> dst[e]`` (``dst`` ascending), ``weight[e]``,
    delay ``lag[e]``.  f of the last h steps is kept in a flat ring of h rows of ``series``.
    The edges are visited in one sweep per step (not series by series: a loop of 1 to 3
    edges per series mispredicts a branch at every series, about twice as slow)."""
    h, m = init.shape
    incoming = np.zeros(m)  # c_i, summed in edge order
    for e in range(dst.shape[0]):
        incoming[dst[e]] += weight[e]
    keep = 1.0 - incoming
    fx = np.empty(h * m)
    off = np.zeros(h + 1, np.int64)  # off[l]: where f of step s - l starts in the ring
    x = np.empty(m)
    buf = np.empty((_BLOCK, m))
    out = np.empty((m, n))
    for s in range(transient + n):
        if s < h:
            for i in range(m):
                x[i] = init[s, i]
        else:
            for lg in range(1, h + 1):
                off[lg] = ((s - lg) % h) * m
            prev = off[1]
            for i in range(m):
                x[i] = keep[i] * fx[prev + i]
            for e in range(dst.shape[0]):
                x[dst[e]] += weight[e] * fx[off[lag[e]] + src[e]]
        cur = (s % h) * m
        for i in range(m):
            fx[cur + i] = r[i] * x[i] * (1.0 - x[i])
        if s >= transient:
            t = s - transient
            b = t % _BLOCK
            for i in range(m):
                buf[b, i] = x[i]
            if b == _BLOCK - 1 or t == n - 1:  # write the staged steps, tile by tile
                t0 = t - b
                for i0 in range(0, m, _TILE):
                    for i in range(i0, min(i0 + _TILE, m)):
                        for k in range(b + 1):
                            out[i, t0 + k] = buf[k, i]
    return out


def sparse_network(
    n_series: int,
    n: int,
    *,
    drivers: int | tuple[int, int] = (1, 3),
    coupling: float = 0.2,
    r: float | tuple[float, float] = (3.7, 3.9),
    lags: int | tuple[int, int] = 1,
    seed: int | None = 0,
    transient: int = 100,
    series_dim: str = "series",
) -> xr.Dataset:
    """Logistic maps coupled through a sparse random directed graph with delays, at any scale.

    :func:`many_series`' system for networks of whole-brain size: 100,000 series of 1,450
    steps take about 3 s on 2 cores and 1.2 GiB (the series are 1.08 GiB), because the
    graph is drawn, kept and returned as an edge list (``n_series x n_series`` would be
    10**10 entries).  Each series follows its own logistic map ``f_i(x) = r_i x (1 - x)`` and mixes
    in the images of its drivers, each seen ``lag_ji`` steps late::

        x_i[t+1] = (1 - c_i) f_i(x_i[t]) + sum_{j -> i} w_ji f_j(x_j[t + 1 - lag_ji])

    so ``x_j[t]`` acts on ``x_i[t + lag_ji]``.  Series i has ``k_i`` drivers, ``k_i`` drawn
    uniformly in ``drivers``, chosen uniformly among the other series without replacement
    (no self-loops, no repeated links); ``w_ji = coupling / k_i``, ``c_i = sum_j w_ji``
    (``coupling``, or 0 without drivers).  Each new value is a convex combination of
    logistic images, so every series stays in ``[0, 1]``.  The first ``h`` states of each
    series (``h`` the longest delay, ``lags``' high end) are drawn uniformly in
    ``[0.1, 0.9]``; the recursion runs from there, and the first ``transient`` states are
    discarded.

    The graph, the growth rates, the delays and the first states come from four independent
    streams of ``seed``: the graph depends only on ``seed``, ``n_series`` and ``drivers``
    (the same for any ``lags``, ``coupling``, ``r``, ``n``), and ``n`` and ``transient``
    change nothing but the span returned.

    Parameters
    ----------
    n_series : int
        Number of series (at least 2 when a series may have drivers).
    n : int
        Number of time points.  About ``n_series * (n + 2 h + 4 k)`` values (h the longest
        delay, k the most drivers) may not exceed 2**31 (16 GiB).
    drivers : int or (int, int), default (1, 3)
        Range ``(low, high)`` of the number of drivers per series (in-degree), inclusive,
        ``0 <= low <= high <= n_series - 1``; one integer gives every series that many.
    coupling : float, default 0.2
        Total incoming weight of a driven series, in ``[0, 1]``.
    r : float or (float, float), default (3.7, 3.9)
        Range ``(low, high)`` of the growth rates, drawn uniformly per series, within
        ``(0, 4]``; one number gives every series that rate.
    lags : int or (int, int), default 1
        Delay of each link in steps, >= 1: one integer for every link, or a ``(low, high)``
        range drawn uniformly per link, inclusive.
    seed : int or None, default 0
        Non-negative seed for ``numpy.random.SeedSequence`` (None: fresh entropy).
    transient : int, default 100
        Iterations discarded before the first returned point.
    series_dim : str, default "series"
        Name of the series dimension (not ``"time"``, ``"edge"``, nor a variable's name).

    Returns
    -------
    xarray.Dataset
        ``x`` ``(series, time)`` float64; ``r`` ``(series)``; the graph along ``edge``,
        sorted by driven series, then driver: ``driver`` and ``driven`` (series labels),
        ``weight`` (``w_ji``) and ``lag`` (steps).  ``attrs``: every parameter,
        ``n_edges`` and the ``equations``.

    Notes
    -----
    A cross map finds ``driver -> driven`` as a high ``rho(library=driven, target=driver)``
    (see :func:`many_series`).  One step costs about ``n_series`` + ``edges`` multiply-adds
    whose drivers are read at random places, so the time grows linearly with both.

    Examples
    --------
    >>> import numpy as np
    >>> from xedm import datasets
    >>> ds = datasets.sparse_network(1000, 300, drivers=(1, 3), lags=(1, 4), seed=1)
    >>> ds.x.dims, ds.driver.dims
    (('series', 'time'), ('edge',))
    >>> bool((ds.driver != ds.driven).all()), int(ds.lag.min()), int(ds.lag.max())
    (True, 1, 4)
    >>> degree = np.bincount(ds.driven, minlength=1000)
    >>> int(degree.min()), int(degree.max()), ds.attrs["n_edges"] == ds.sizes["edge"]
    (1, 3, True)
    """
    n_series = _check_n(n_series, "n_series")
    n = _check_n(n, "n")
    transient = _check_steps(transient, "transient")
    d_lo, d_hi = _range(drivers, "drivers", "a number of drivers or a (low, high) pair of them",
                        integer=True, low=0)
    coupling = _number(coupling, "coupling", low=0, high=1)
    r_lo, r_hi = _rate_range(r)
    l_lo, l_hi = _range(lags, "lags", "a delay in steps or a (low, high) pair of them",
                        integer=True, low=1)
    if seed is not None:
        seed = _number(seed, "seed", integer=True, low=0, expected="a non-negative integer or None")
    dim = series_dim
    if not isinstance(dim, str):
        raise TypeError(f"series_dim must be a string (the series dimension's name), got "
                        f"{_short(dim)}")
    if dim in _TAKEN:
        raise ValueError(f"series_dim must not be one of {', '.join(map(repr, _TAKEN))} "
                         f"(taken), got {dim!r}")
    if d_hi > n_series - 1:
        raise ValueError(f"drivers must be at most n_series - 1 = {n_series - 1} (distinct "
                         f"other series), got {_short(drivers)}")
    request = f"n_series={n_series}, n={n}, drivers up to {d_hi}, lags up to {l_hi}"
    # x, the first states and the ring of f (h each), the edges (driver, weight, lag, draw)
    _check_size(n_series * (n + 2 * l_hi + _BLOCK + 4) + 4 * n_series * d_hi, request)

    graph, rates, delays, starts = (np.random.default_rng(s)
                                    for s in np.random.SeedSequence(seed).spawn(4))
    degree = graph.integers(d_lo, d_hi + 1, n_series)
    ptr = np.zeros(n_series + 1, np.int64)
    np.cumsum(degree, out=ptr[1:])
    n_edges = int(ptr[-1])
    # Floyd's draws: step s of a series with k drivers picks uniformly in 0..(n_series-1-k+s)
    step = np.arange(n_edges, dtype=np.int64) - np.repeat(ptr[:-1], degree)
    draws = graph.integers(0, n_series - np.repeat(degree, degree) + step)
    src = _choose_drivers(ptr, draws, n_series)
    del draws, step
    dst = np.repeat(np.arange(n_series, dtype=np.int64), degree)
    weight = coupling / degree[dst].astype(np.float64)  # every listed series has drivers
    r_values = rates.uniform(r_lo, r_hi, n_series)
    lag = delays.integers(l_lo, l_hi + 1, n_edges)
    init = starts.uniform(0.1, 0.9, (l_hi, n_series))

    _check_loops("sparse_network", transient + n, 6 * n_series + 4 * n_edges, "transient + n")
    values = _run("sparse_network", request, _sparse_kernel,
                  n, r_values, init, dst, src, weight, lag, transient)
    labels = np.arange(n_series)
    return xr.Dataset(
        {
            "x": ((dim, "time"), values),
            "r": (dim, r_values),
            "driver": ("edge", src),
            "driven": ("edge", dst),
            "weight": ("edge", weight),
            "lag": ("edge", lag),
        },
        coords={dim: labels, "time": _step_time(n)},
        attrs={
            "system": "logistic maps coupled on a sparse random directed graph with delays",
            "equations": _EQUATION,
            "drivers": [d_lo, d_hi],
            "coupling": coupling,
            "r_range": [r_lo, r_hi],
            "lags": [l_lo, l_hi],
            "seed": -1 if seed is None else int(seed),
            "transient": transient,
            "n_edges": n_edges,
        },
    )
