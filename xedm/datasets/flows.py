"""ODE flows: Lorenz-63, Rossler and Lorenz-96, integrated with fixed-step fourth-order
Runge-Kutta (one numba kernel for the three systems); time is model time."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..kernels._numba import njit  # numba's, with xedm's kernel cache
from ._checks import _check_loops, _check_n, _check_size, _check_steps, _number, _run, _state

__all__ = ["lorenz63", "lorenz96", "rossler"]


@njit(cache=True)
def _lorenz63_rhs(s, sigma, rho, beta, out):
    out[0] = sigma * (s[1] - s[0])
    out[1] = s[0] * (rho - s[2]) - s[1]
    out[2] = s[0] * s[1] - beta * s[2]


@njit(cache=True)
def _rossler_rhs(s, a, b, c, out):
    out[0] = -s[1] - s[2]
    out[1] = s[0] + a * s[1]
    out[2] = b + s[2] * (s[0] - c)


@njit(cache=True)
def _lorenz96_rhs(s, F, out):
    N = s.shape[0]
    for i in range(N):
        out[i] = (s[(i + 1) % N] - s[(i - 2) % N]) * s[(i - 1) % N] - s[i] + F


@njit(cache=True)
def _rk4_step(s, dt, system, p, k1, k2, k3, k4, tmp):
    # system: 0 = Lorenz-63 (p = sigma, rho, beta), 1 = Rossler (p = a, b, c),
    # 2 = Lorenz-96 (p[0] = F); one kernel keeps compiled code (and cache files) small
    m = s.shape[0]
    for stage in range(4):
        if stage == 0:
            src = s
            dst = k1
        else:
            h = dt if stage == 3 else 0.5 * dt
            prev = k1 if stage == 1 else (k2 if stage == 2 else k3)
            for i in range(m):
                tmp[i] = s[i] + h * prev[i]
            src = tmp
            dst = k2 if stage == 1 else (k3 if stage == 2 else k4)
        if system == 0:
            _lorenz63_rhs(src, p[0], p[1], p[2], dst)
        elif system == 1:
            _rossler_rhs(src, p[0], p[1], p[2], dst)
        else:
            _lorenz96_rhs(src, p[0], dst)
    for i in range(m):
        s[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])


@njit(cache=True)
def _integrate(system, p, s0, dt, n, subsample, transient):
    m = s0.shape[0]
    s = s0.copy()
    k1 = np.empty(m)
    k2 = np.empty(m)
    k3 = np.empty(m)
    k4 = np.empty(m)
    tmp = np.empty(m)
    out = np.empty((m, n))
    for _ in range(transient):
        _rk4_step(s, dt, system, p, k1, k2, k3, k4, tmp)
    for t in range(n):
        for i in range(m):
            out[i, t] = s[i]
        if t < n - 1:
            for _ in range(subsample):
                _rk4_step(s, dt, system, p, k1, k2, k3, k4, tmp)
    return out


def _flow_time(n: int, dt: float, subsample: int) -> np.ndarray:
    return np.arange(n, dtype=np.float64) * (dt * subsample)


def _check_flow(dt: float, subsample: int, transient: int) -> tuple[float, int, int]:
    return (
        _number(dt, "dt", low=0, above=True),
        _check_steps(subsample, "subsample", low=1),
        _check_steps(transient, "transient"),
    )


def _flow_dataset(values, names, n, dt, subsample, attrs) -> xr.Dataset:
    return xr.Dataset(
        {name: ("time", values[i]) for i, name in enumerate(names)},
        coords={"time": _flow_time(n, dt, subsample)},
        attrs=attrs,
    )


def lorenz63(
    n: int,
    dt: float = 0.01,
    sigma: float = 10.0,
    rho: float = 28.0,
    beta: float = 8.0 / 3.0,
    *,
    subsample: int = 1,
    x0: Sequence[float] = (1.0, 1.0, 1.0),
    transient: int = 1000,
) -> xr.Dataset:
    """Lorenz (1963) system, integrated with fourth-order Runge-Kutta.

    The equations are::

        dx/dt = sigma (y - x);  dy/dt = x (rho - z) - y;  dz/dt = x y - beta z

    Parameters
    ----------
    n : int
        Number of points returned.
    dt : float, default 0.01
        Integration step, > 0.
    sigma, rho, beta : float, default 10, 28, 8/3
        The classical chaotic parameters.
    subsample : int, default 1
        Integration steps between returned points (sampling interval ``dt * subsample``),
        >= 1.
    x0 : three floats, default (1, 1, 1)
        State at the start of the transient.
    transient : int, default 1000
        Integration steps discarded before the first returned point.

    Returns
    -------
    xarray.Dataset
        ``x``, ``y``, ``z`` over ``time`` (model time from 0, spacing ``dt * subsample``).

    Examples
    --------
    >>> from xedm import datasets
    >>> ds = datasets.lorenz63(2000, subsample=5)
    >>> sorted(ds.data_vars), float(ds.time[1])
    (['x', 'y', 'z'], 0.05)
    """
    n = _check_n(n)
    dt, subsample, transient = _check_flow(dt, subsample, transient)
    p = np.array([_number(sigma, "sigma"), _number(rho, "rho"), _number(beta, "beta")])
    s0 = _state(x0, 3, "x0")
    _check_size(3 * n, f"n={n} (3 variables)")
    _check_loops("lorenz63", transient + n * subsample, 120, "transient + n * subsample")
    values = _run("lorenz63", f"n={n}", _integrate, 0, p, s0, dt, n, subsample, transient)
    attrs = {
        "system": "Lorenz-63",
        "equations": "dx/dt = sigma (y - x); dy/dt = x (rho - z) - y; dz/dt = x y - beta z",
        "integrator": "RK4",
        "dt": dt,
        "sigma": float(p[0]),
        "rho": float(p[1]),
        "beta": float(p[2]),
        "subsample": subsample,
        "x0": [float(v) for v in s0],
        "transient": transient,
    }
    return _flow_dataset(values, "xyz", n, dt, subsample, attrs)


def rossler(
    n: int,
    dt: float = 0.05,
    a: float = 0.2,
    b: float = 0.2,
    c: float = 5.7,
    *,
    subsample: int = 1,
    x0: Sequence[float] = (1.0, 1.0, 1.0),
    transient: int = 2000,
) -> xr.Dataset:
    """Rossler (1976) system, integrated with fourth-order Runge-Kutta.

    The equations are::

        dx/dt = -y - z;  dy/dt = x + a y;  dz/dt = b + z (x - c)

    Parameters
    ----------
    n : int
        Number of points returned.
    dt : float, default 0.05
        Integration step, > 0.
    a, b, c : float, default 0.2, 0.2, 5.7
        The classical chaotic parameters.
    subsample : int, default 1
        Integration steps between returned points, >= 1.
    x0 : three floats, default (1, 1, 1)
        State at the start of the transient.
    transient : int, default 2000
        Integration steps discarded before the first returned point.

    Returns
    -------
    xarray.Dataset
        ``x``, ``y``, ``z`` over ``time`` (model time from 0).

    Examples
    --------
    >>> from xedm import datasets
    >>> ds = datasets.rossler(1000, subsample=2)
    >>> ds.sizes["time"], ds.attrs["c"]
    (1000, 5.7)
    """
    n = _check_n(n)
    dt, subsample, transient = _check_flow(dt, subsample, transient)
    p = np.array([_number(a, "a"), _number(b, "b"), _number(c, "c")])
    s0 = _state(x0, 3, "x0")
    _check_size(3 * n, f"n={n} (3 variables)")
    _check_loops("rossler", transient + n * subsample, 120, "transient + n * subsample")
    values = _run("rossler", f"n={n}", _integrate, 1, p, s0, dt, n, subsample, transient)
    attrs = {
        "system": "Rossler",
        "equations": "dx/dt = -y - z; dy/dt = x + a y; dz/dt = b + z (x - c)",
        "integrator": "RK4",
        "dt": dt,
        "a": float(p[0]),
        "b": float(p[1]),
        "c": float(p[2]),
        "subsample": subsample,
        "x0": [float(v) for v in s0],
        "transient": transient,
    }
    return _flow_dataset(values, "xyz", n, dt, subsample, attrs)


def lorenz96(
    n: int,
    N: int = 10,
    F: float = 8.0,
    dt: float = 0.01,
    *,
    subsample: int = 5,
    x0: Sequence[float] | None = None,
    transient: int = 2000,
) -> xr.DataArray:
    """Lorenz (1996) model of ``N`` nodes on a ring, integrated with fourth-order Runge-Kutta.

    The equations are (indices modulo N)::

        dx_i/dt = (x_{i+1} - x_{i-2}) x_{i-1} - x_i + F

    Each node is driven by its neighbours ``i-2``, ``i-1`` and ``i+1``, which makes the model
    a small known causal network for :func:`xedm.xmap`-style analyses.

    Parameters
    ----------
    n : int
        Number of points returned.
    N : int, default 10
        Number of nodes (>= 4).
    F : float, default 8.0
        Forcing; chaotic for F >~ 5 at moderate N.
    dt : float, default 0.01
        Integration step, > 0.
    subsample : int, default 5
        Integration steps between returned points (sampling interval 0.05 by default), >= 1.
    x0 : N floats, optional
        Initial state; default ``F`` everywhere with node 0 raised by 0.01 (the usual
        perturbation of the equilibrium).
    transient : int, default 2000
        Integration steps discarded before the first returned point.

    Returns
    -------
    xarray.DataArray
        ``x`` with dims ``(node, time)``; ``node = 0..N-1``.

    Examples
    --------
    >>> from xedm import datasets
    >>> da = datasets.lorenz96(500, N=8)
    >>> da.dims, da.shape
    (('node', 'time'), (8, 500))
    """
    n = _check_n(n)
    N = _number(N, "N", integer=True, low=4)
    F = _number(F, "F")
    dt, subsample, transient = _check_flow(dt, subsample, transient)
    request = f"n={n}, N={N}"
    _check_size(N * n, request)
    if x0 is None:
        s0 = np.full(N, F)
        s0[0] += 0.01
    else:
        s0 = _state(x0, N, "x0")
    p = np.array([F])
    _check_loops("lorenz96", transient + n * subsample, 40 * s0.size,
                 "transient + n * subsample")
    values = _run("lorenz96", request, _integrate, 2, p, s0, dt, n, subsample, transient)
    return xr.DataArray(
        values,
        dims=("node", "time"),
        coords={"node": np.arange(N), "time": _flow_time(n, dt, subsample)},
        name="x",
        attrs={
            "system": "Lorenz-96",
            "equations": "dx_i/dt = (x_{i+1} - x_{i-2}) x_{i-1} - x_i + F",
            "integrator": "RK4",
            "N": N,
            "F": F,
            "dt": dt,
            "subsample": subsample,
            "transient": transient,
        },
    )
