"""Iterated maps: logistic, tent, Henon and two coupled logistic maps (integer time steps)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..kernels._numba import njit  # numba's, with xedm's kernel cache
from ._checks import (
    _check_loops,
    _check_n,
    _check_size,
    _check_steps,
    _number,
    _run,
    _state,
    _step_time,
)

__all__ = ["coupled_logistic", "henon", "logistic_map", "tent_map"]


@njit(cache=True)
def _logistic_kernel(n, r, x0, transient):
    out = np.empty(n)
    x = x0
    for _ in range(transient):
        x = r * x * (1.0 - x)
    for t in range(n):
        out[t] = x
        x = r * x * (1.0 - x)
    return out


@njit(cache=True)
def _tent_kernel(n, mu, x0, transient):
    out = np.empty(n)
    x = x0
    for _ in range(transient):
        x = mu * min(x, 1.0 - x)
    for t in range(n):
        out[t] = x
        x = mu * min(x, 1.0 - x)
    return out


@njit(cache=True)
def _henon_kernel(n, a, b, x0, y0, transient):
    out = np.empty((2, n))
    x = x0
    y = y0
    for _ in range(transient):
        x, y = 1.0 - a * x * x + y, b * x
    for t in range(n):
        out[0, t] = x
        out[1, t] = y
        x, y = 1.0 - a * x * x + y, b * x
    return out


@njit(cache=True)
def _coupled_logistic_kernel(n, r_x, r_y, beta_xy, beta_yx, x0, y0, transient):
    out = np.empty((2, n))
    x = x0
    y = y0
    for _ in range(transient):
        x, y = x * (r_x - r_x * x - beta_xy * y), y * (r_y - r_y * y - beta_yx * x)
    for t in range(n):
        out[0, t] = x
        out[1, t] = y
        x, y = x * (r_x - r_x * x - beta_xy * y), y * (r_y - r_y * y - beta_yx * x)
    return out


def logistic_map(n: int, r: float = 3.9, x0: float = 0.4, *, transient: int = 0) -> xr.DataArray:
    """Logistic map ``x[t+1] = r x[t] (1 - x[t])``.

    Parameters
    ----------
    n : int
        Number of points returned.
    r : float, default 3.9
        Growth rate; chaotic for most r in (3.57, 4].
    x0 : float, default 0.4
        Value at the first iteration (``time = 0`` when ``transient = 0``).
    transient : int, default 0
        Iterations discarded before the first returned point.

    Returns
    -------
    xarray.DataArray
        ``x`` over ``time = 0, 1, ..., n-1``; parameters in ``attrs``.

    Examples
    --------
    >>> from xedm import datasets
    >>> x = datasets.logistic_map(5, r=3.9, x0=0.4)
    >>> x.dims, float(x[0]), round(float(x[1]), 6)
    (('time',), 0.4, 0.936)
    """
    n = _check_n(n)
    r = _number(r, "r")
    x0 = _number(x0, "x0")
    transient = _check_steps(transient, "transient")
    _check_size(n, f"n={n}")
    _check_loops("logistic_map", transient + n, 4, "transient + n")
    values = _run("logistic_map", f"n={n}", _logistic_kernel, n, r, x0, transient)
    return xr.DataArray(
        values,
        dims="time",
        coords={"time": _step_time(n)},
        name="x",
        attrs={
            "system": "logistic map",
            "equations": "x[t+1] = r x[t] (1 - x[t])",
            "r": r,
            "x0": x0,
            "transient": transient,
        },
    )


def tent_map(n: int, mu: float = 1.99, x0: float = 0.3, *, transient: int = 0) -> xr.DataArray:
    """Tent map ``x[t+1] = mu min(x[t], 1 - x[t])``.

    ``mu = 2`` is the textbook value, but in binary floating point every orbit then collapses
    to 0 within about 55 steps (each step shifts one mantissa bit out), so the default is 1.99.

    Parameters
    ----------
    n : int
        Number of points returned.
    mu : float, default 1.99
        Slope; chaotic for 1 < mu < 2.
    x0 : float, default 0.3
        Value at the first iteration.
    transient : int, default 0
        Iterations discarded before the first returned point.

    Returns
    -------
    xarray.DataArray
        ``x`` over integer ``time``; parameters in ``attrs``.

    Examples
    --------
    >>> from xedm import datasets
    >>> x = datasets.tent_map(1000)
    >>> bool((x > 0).all() and (x < 1).all())
    True
    """
    n = _check_n(n)
    mu = _number(mu, "mu")
    x0 = _number(x0, "x0")
    transient = _check_steps(transient, "transient")
    _check_size(n, f"n={n}")
    _check_loops("tent_map", transient + n, 4, "transient + n")
    values = _run("tent_map", f"n={n}", _tent_kernel, n, mu, x0, transient)
    return xr.DataArray(
        values,
        dims="time",
        coords={"time": _step_time(n)},
        name="x",
        attrs={
            "system": "tent map",
            "equations": "x[t+1] = mu min(x[t], 1 - x[t])",
            "mu": mu,
            "x0": x0,
            "transient": transient,
        },
    )


def henon(
    n: int,
    a: float = 1.4,
    b: float = 0.3,
    x0: Sequence[float] = (0.1, 0.1),
    *,
    transient: int = 100,
) -> xr.Dataset:
    """Henon map ``x[t+1] = 1 - a x[t]^2 + y[t]``, ``y[t+1] = b x[t]``.

    Parameters
    ----------
    n : int
        Number of points returned.
    a, b : float, default 1.4, 0.3
        Map parameters (the classical chaotic values).
    x0 : pair of float, default (0.1, 0.1)
        Initial ``(x, y)``.
    transient : int, default 100
        Iterations discarded before the first returned point.

    Returns
    -------
    xarray.Dataset
        Variables ``x`` and ``y`` over integer ``time``.

    Examples
    --------
    >>> from xedm import datasets
    >>> ds = datasets.henon(1000)
    >>> sorted(ds.data_vars), ds.sizes["time"]
    (['x', 'y'], 1000)
    """
    n = _check_n(n)
    a = _number(a, "a")
    b = _number(b, "b")
    s0 = _state(x0, 2, "x0")
    transient = _check_steps(transient, "transient")
    _check_size(2 * n, f"n={n} (2 variables)")
    _check_loops("henon", transient + n, 6, "transient + n")
    values = _run("henon", f"n={n}", _henon_kernel, n, a, b, s0[0], s0[1], transient)
    return xr.Dataset(
        {"x": ("time", values[0]), "y": ("time", values[1])},
        coords={"time": _step_time(n)},
        attrs={
            "system": "Henon map",
            "equations": "x[t+1] = 1 - a x[t]^2 + y[t]; y[t+1] = b x[t]",
            "a": a,
            "b": b,
            "x0": [float(v) for v in s0],
            "transient": transient,
        },
    )


def coupled_logistic(
    n: int,
    r_x: float = 3.8,
    r_y: float = 3.5,
    beta_xy: float = 0.02,
    beta_yx: float = 0.1,
    x0: float = 0.4,
    y0: float = 0.2,
    *,
    transient: int = 0,
) -> xr.Dataset:
    """Two coupled logistic maps (Sugihara et al. 2012, *Science* 338:496).

    The maps are::

        x[t+1] = x[t] (r_x - r_x x[t] - beta_xy y[t])
        y[t+1] = y[t] (r_y - r_y y[t] - beta_yx x[t])

    The first index of ``beta`` names the variable that is *driven*, the second the
    *driver*: ``beta_xy`` is the effect of y on x (**y → x**) and ``beta_yx`` the effect of x
    on y (**x → y**). With ``beta_xy = 0`` x evolves on its own and y cannot influence it.
    The defaults (``beta_yx = 0.1 > beta_xy = 0.02``) make x the stronger driver.

    In CCM terms (see CONVENTIONS.md), x → y shows up as a high skill when cross-mapping
    from y's manifold: ``rho(library="y", target="x")`` grows with library size.

    Parameters
    ----------
    n : int
        Number of points returned.
    r_x, r_y : float, default 3.8, 3.5
        Growth rates of x and y.
    beta_xy : float, default 0.02
        Strength of y → x (y drives x).
    beta_yx : float, default 0.1
        Strength of x → y (x drives y).
    x0, y0 : float, default 0.4, 0.2
        Initial values (returned at ``time = 0`` when ``transient = 0``).
    transient : int, default 0
        Iterations discarded before the first returned point.

    Returns
    -------
    xarray.Dataset
        Variables ``x`` and ``y`` over integer ``time``; parameters in ``attrs``
        (``attrs["drives"]`` spells out the causal directions).

    Raises
    ------
    ValueError
        If the orbit leaves the bounded region (too strong coupling for the growth rates).

    Examples
    --------
    >>> from xedm import datasets
    >>> ds = datasets.coupled_logistic(1000, beta_xy=0.0, beta_yx=0.1)
    >>> ds.attrs["drives"]
    'x -> y: 0.1; y -> x: 0.0'
    >>> float(ds.x[0]), float(ds.y[0])
    (0.4, 0.2)
    """
    n = _check_n(n)
    r_x, r_y, beta_xy, beta_yx, x0, y0 = (
        _number(value, name)
        for value, name in [
            (r_x, "r_x"), (r_y, "r_y"), (beta_xy, "beta_xy"), (beta_yx, "beta_yx"),
            (x0, "x0"), (y0, "y0"),
        ]
    )
    transient = _check_steps(transient, "transient")
    _check_size(2 * n, f"n={n} (2 variables)")
    _check_loops("coupled_logistic", transient + n, 12, "transient + n")
    values = _run(
        "coupled_logistic", f"n={n}", _coupled_logistic_kernel,
        n, r_x, r_y, beta_xy, beta_yx, x0, y0, transient,
    )
    if np.abs(values).max() > 1e6:
        raise ValueError("coupled_logistic: the orbit diverged; reduce beta_xy/beta_yx or r")
    return xr.Dataset(
        {"x": ("time", values[0]), "y": ("time", values[1])},
        coords={"time": _step_time(n)},
        attrs={
            "system": "coupled logistic maps (Sugihara et al. 2012)",
            "equations": (
                "x[t+1] = x[t] (r_x - r_x x[t] - beta_xy y[t]); "
                "y[t+1] = y[t] (r_y - r_y y[t] - beta_yx x[t])"
            ),
            "drives": f"x -> y: {beta_yx}; y -> x: {beta_xy}",
            "r_x": r_x,
            "r_y": r_y,
            "beta_xy": beta_xy,
            "beta_yx": beta_yx,
            "x0": x0,
            "y0": y0,
            "transient": transient,
        },
    )
