"""Whole-brain-shaped data: many observed series mixed sparsely from a few hundred coupled
chaotic sources (:func:`whole_brain`), fast at 100,000 series."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.validate import renamed
from ..kernels._numba import njit  # numba's, with xedm's kernel cache
from ._checks import _check_n, _check_size, _check_steps, _number, _short, _step_time

__all__ = ["whole_brain"]

_DT = 0.01  # RK4 step of the sources (Lorenz-63 model time)
_SUBSAMPLE = 5  # integration steps per sample
_ROWS = 4096  # observed series mixed per pass (bounds the temporaries)


@njit(cache=True)
def _lorenz_sources(rho, state, drivers, coupling, steps, transient, dt, subsample):
    """(n_sources, 3, steps) samples of Lorenz-63 systems (sigma 10, beta 8/3, their own rho)
    whose x is pulled towards the x of its driver (``coupling`` times the difference; no
    driver where ``drivers`` is -1); RK4 with step dt, ``subsample`` steps per sample."""
    m = rho.shape[0]
    s = state.copy()
    k = np.empty((4, m, 3))
    tmp = np.empty((m, 3))
    out = np.empty((m, 3, steps))
    for t in range(transient + steps):
        for _ in range(subsample):
            for stage in range(4):
                if stage == 0:
                    tmp[:] = s
                else:
                    h = dt if stage == 3 else 0.5 * dt
                    for i in range(m):
                        for c in range(3):
                            tmp[i, c] = s[i, c] + h * k[stage - 1, i, c]
                for i in range(m):
                    x, y, z = tmp[i, 0], tmp[i, 1], tmp[i, 2]
                    dx = 10.0 * (y - x)
                    if drivers[i] >= 0:
                        dx += coupling * (tmp[drivers[i], 0] - x)
                    k[stage, i, 0] = dx
                    k[stage, i, 1] = x * (rho[i] - z) - y
                    k[stage, i, 2] = x * y - (8.0 / 3.0) * z
            for i in range(m):
                for c in range(3):
                    s[i, c] += (dt / 6.0) * (k[0, i, c] + 2.0 * k[1, i, c] + 2.0 * k[2, i, c]
                                             + k[3, i, c])
        if t >= transient:
            for i in range(m):
                for c in range(3):
                    out[i, c, t - transient] = s[i, c]
    return out


@njit(cache=True)
def _mix(block, sig, src, w, scale):
    """block[i] = scale[i] block[i] + sum_j w[i, j] sig[src[i, j]] (block holds the noise)."""
    for i in range(block.shape[0]):
        for t in range(block.shape[1]):
            acc = 0.0
            for j in range(src.shape[1]):
                acc += w[i, j] * sig[src[i, j], t]
            block[i, t] = scale[i] * block[i, t] + acc


@renamed("dim", "series_dim", "the series dimension")
def whole_brain(
    n_series: int,
    n: int = 1450,
    *,
    n_sources: int = 300,
    fan_in: int = 3,
    coupling: float = 2.0,
    noise: float = 0.1,
    dtype: str = "float64",
    seed: int | None = 0,
    transient: int = 200,
    series_dim: str = "series",
) -> xr.Dataset:
    """Whole-brain-shaped data: many series mixed sparsely from a few coupled chaotic sources.

    The shape of a light-sheet recording of a larval zebrafish brain (mpEDM's benchmark:
    101,729 neurons x 1,450 steps) with a known structure, for scaling runs of
    :func:`xedm.xmap`.  ``n_sources`` Lorenz-63 systems (``rho`` drawn in [28, 32], sampled
    every 0.05 time units, RK4 with step 0.01) each drive their x towards the mean x of one
    randomly chosen other source (``dx_i/dt += coupling (x_j - x_i)``, a random directed
    graph of in-degree 1).  Their 3 ``n_sources`` coordinates, each scaled to zero mean and
    unit variance, are the signals; observed series i is the weighted sum of ``fan_in``
    distinct signals (indices ``source[i]``, weights ``weight[i]`` drawn uniformly in
    [0.5, 1.5] with a random sign) plus Gaussian noise of ``noise`` times that sum's standard
    deviation.  The mixing matrix is sparse (``fan_in`` non-zeros per row) and is returned
    as indices and weights, not as a dense ``(series, signal)`` matrix.

    Vectorised NumPy: 100,000 series of 1,450 steps (1.16 GB of float64) take a few seconds
    (the sources cost ``O(n_sources n)``, the mixing and the noise ``O(n_series n)``).

    Parameters
    ----------
    n_series : int
        Number of observed series.  ``n_series * n`` may not exceed 2**31 values.
    n : int, default 1450
        Number of time points.
    n_sources : int, default 300
        Number of Lorenz-63 sources (3 signals each); at least 2 unless ``coupling`` is 0.
    fan_in : int, default 3
        Signals mixed into each observed series, in ``1..3 n_sources``.
    coupling : float, default 2.0
        Strength of the drive between sources, >= 0 (0: independent sources).
    noise : float, default 0.1
        Observation noise, as a fraction of each series' signal standard deviation, >= 0.
    dtype : {"float64", "float32"}, default "float64"
        dtype of ``x`` (float32 halves memory; the sources are integrated in float64).
    seed : int or None, default 0
        Non-negative seed for ``numpy.random.default_rng``.
    transient : int, default 200
        Samples of the sources discarded before the first returned point.
    series_dim : str, default "series"
        Name of the series dimension (not ``"time"``, ``"source"``, ``"mix"``, ``"signal"``,
        ``"driver"`` or ``"driven"``).

    Returns
    -------
    xarray.Dataset
        ``x`` ``(series, time)``, the observed series; ``source`` and ``weight``
        ``(series, mix)``, the signals mixed into each series and their weights (the sparse
        mixing matrix); ``signals`` ``(signal, time)``, the standardised source coordinates
        (signal ``3 s + c`` is coordinate c = x, y, z of source s); ``adjacency``
        ``(driver, driven)`` over the sources, True where source ``driver`` drives
        ``driven``.

    Examples
    --------
    >>> from xedm import datasets
    >>> ds = datasets.whole_brain(1000, 1450, n_sources=50, seed=1)
    >>> ds.x.shape, ds.source.shape, int(ds.adjacency.sum())
    ((1000, 1450), (1000, 3), 50)
    >>> datasets.whole_brain(100, 200, n_sources=10, dtype="float32").x.dtype
    dtype('float32')
    """
    n_series = _check_n(n_series, "n_series")
    n = _check_n(n, "n")
    n_sources = _check_n(n_sources, "n_sources")
    fan_in = _check_n(fan_in, "fan_in")
    transient = _check_steps(transient, "transient")
    coupling = _number(coupling, "coupling", low=0)
    noise = _number(noise, "noise", low=0)
    if seed is not None:
        seed = _number(seed, "seed", integer=True, low=0, expected="a non-negative integer or None")
    if dtype not in ("float64", "float32", np.float64, np.float32):
        raise ValueError(f"dtype must be 'float64' or 'float32', got {_short(dtype)}")
    dtype = np.dtype(dtype)
    if fan_in > 3 * n_sources:
        raise ValueError(f"fan_in must be at most 3 * n_sources = {3 * n_sources} (distinct "
                         f"signals per series), got {fan_in}")
    if coupling > 0 and n_sources < 2:
        raise ValueError("n_sources must be >= 2 for coupled sources (or coupling=0)")
    if not isinstance(series_dim, str):
        raise TypeError(f"series_dim must be a string, got {_short(series_dim)}")
    if series_dim in ("time", "source", "mix", "signal", "driver", "driven"):
        raise ValueError(f"series_dim must not be {series_dim!r} (taken); choose another name")
    _check_size(n_series * n + 3 * n_sources * n, f"n_series={n_series}, n={n}")
    from ..memory import check_work

    check_work(60.0 * n_sources * (transient + n) * _SUBSAMPLE,
               f"whole_brain sources ({n_sources} x {transient + n} samples)",
               "use fewer n_sources, a smaller n or transient")

    rng = np.random.default_rng(seed)
    rho = rng.uniform(28.0, 32.0, n_sources)
    state = np.column_stack([rng.uniform(-10, 10, n_sources), rng.uniform(-10, 10, n_sources),
                             rng.uniform(10, 40, n_sources)])
    if coupling > 0:  # one driver per source, never itself
        drivers = (np.arange(n_sources) + rng.integers(1, n_sources, n_sources)) % n_sources
    else:
        drivers = np.full(n_sources, -1, np.int64)
    raw = _lorenz_sources(rho, state, drivers, coupling, n, transient, _DT, _SUBSAMPLE)
    sig = raw.reshape(3 * n_sources, n)
    sig = (sig - sig.mean(axis=1, keepdims=True)) / sig.std(axis=1, keepdims=True)
    n_sig = 3 * n_sources
    # fan_in distinct signals per series: repeats drawn again until none is left
    src = rng.integers(0, n_sig, (n_series, fan_in))
    for j in range(1, fan_in):
        while True:
            dup = (src[:, j:j + 1] == src[:, :j]).any(axis=1)
            if not dup.any():
                break
            src[dup, j] = rng.integers(0, n_sig, int(dup.sum()))
    w = rng.uniform(0.5, 1.5, (n_series, fan_in)) * rng.choice([-1.0, 1.0], (n_series, fan_in))
    # each series' signal variance w' C w from the signals' correlations C (no pass over x)
    C = np.corrcoef(sig)
    var = np.einsum("ij,ik,ijk->i", w, w, C[src[:, :, None], src[:, None, :]])
    scale = noise * np.sqrt(np.maximum(var, 0.0))
    sig_t = sig.astype(dtype)
    x = np.empty((n_series, n), dtype)
    for r0 in range(0, n_series, _ROWS):
        block = x[r0:r0 + _ROWS]
        if noise > 0:
            rng.standard_normal(dtype=dtype, out=block)
        else:
            block[:] = 0
        _mix(block, sig_t, src[r0:r0 + _ROWS], w[r0:r0 + _ROWS].astype(dtype),
             scale[r0:r0 + _ROWS].astype(dtype))
    adjacency = np.zeros((n_sources, n_sources), bool)
    if coupling > 0:
        adjacency[drivers, np.arange(n_sources)] = True
    labels = np.arange(n_sources)
    return xr.Dataset(
        {
            "x": ((series_dim, "time"), x),
            "source": ((series_dim, "mix"), src),
            "weight": ((series_dim, "mix"), w),
            "signals": (("signal", "time"), sig),
            "adjacency": (("driver", "driven"), adjacency),
        },
        coords={series_dim: np.arange(n_series), "time": _step_time(n), "driver": labels,
                "driven": labels},
        attrs={
            "system": "Lorenz-63 sources on a random graph, mixed sparsely into many series "
                      "plus noise",
            "n_sources": n_sources, "fan_in": fan_in, "coupling": coupling, "noise": noise,
            "seed": -1 if seed is None else int(seed), "transient": transient,
            "sampling": _DT * _SUBSAMPLE,
        },
    )
