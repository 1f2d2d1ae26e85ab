"""Deterministic example systems for EDM, CCM and RQA: no network, no files.

Every generator returns labeled data with a ``time`` coordinate and its parameters in
``attrs``; the same arguments always give the same numbers. Iterated maps (logistic, tent,
Henon, coupled logistic, :func:`many_series`) use integer time steps; flows (Lorenz-63,
Lorenz-96, Rossler) are integrated with fixed-step fourth-order Runge-Kutta and use model
time (``dt * subsample`` per sample). The loops are numba-compiled (``cache=True``), so a
million points take well under a second once compiled.

Every argument is checked before anything is computed: numbers must be real and finite (a
TypeError or ValueError naming the parameter otherwise; bools are refused), integers
integral, and each within its documented range. One call may generate at most 2**31 float64
values (16 GiB: ``n`` times the number of variables or nodes; see :func:`many_series` for its
count); larger requests are a ValueError naming ``n``, not an attempt to allocate them.

================================  =====================================================
:func:`logistic_map`              1-D DataArray ``x``
:func:`tent_map`                  1-D DataArray ``x``
:func:`henon`                     Dataset ``x``, ``y``
:func:`coupled_logistic`          Dataset ``x``, ``y`` with known driving strengths
:func:`lorenz63`                  Dataset ``x``, ``y``, ``z``
:func:`rossler`                   Dataset ``x``, ``y``, ``z``
:func:`lorenz96`                  DataArray ``(node, time)``
:func:`many_series`               Dataset: ``x`` ``(series, time)`` and the ground-truth
                                  ``adjacency`` / ``coupling`` ``(driver, driven)``
================================  =====================================================
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import xarray as xr
from numba import njit

from .kernels import _numba  # noqa: F401  (kernel cache location, threading layer)

__all__ = [
    "coupled_logistic",
    "henon",
    "logistic_map",
    "lorenz63",
    "lorenz96",
    "many_series",
    "rossler",
    "tent_map",
]


# --------------------------------------------------------------------------- kernels
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


# --------------------------------------------------------------------------- helpers
#: Most float64 values one call may generate (the result, plus for :func:`many_series` its two
#: ``(series, series)`` matrices): 2**31 values, 16 GiB. Larger requests are refused before
#: anything is allocated or computed.
_MAX_VALUES = 2**31
#: Loop counts (``transient``, ``subsample``) are int64 inside the kernels; ``transient + n``
#: must not wrap around.
_MAX_STEPS = 2**62


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value, name: str, *, integer: bool = False, low=None, high=None,
            above: bool = False, expected: str | None = None) -> float | int:
    """``value`` checked and converted: a float (an int with ``integer=True``).

    Refused with a TypeError naming ``name``: anything but a real number (an integer with
    ``integer=True``): strings, None, sequences, complex numbers and bools included; 0-d
    numeric arrays are taken as their element. Refused with a ValueError naming ``name``:
    nan, +-inf, a value that no float64 holds, and one outside ``[low, high]`` (``low`` itself
    excluded with ``above=True``). ``expected`` replaces "a real number" / "an integer" in
    the TypeError.
    """
    if (not isinstance(value, (bool, np.bool_)) and getattr(value, "ndim", None) == 0
            and getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u", "f")):
        value = value.item()  # a 0-d array or DataArray: its number
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, kind):
        expected = expected or ("an integer" if integer else "a real number")
        raise TypeError(
            f"{name} must be {expected}, got {type(value).__name__} {_short(value)}"
        )
    if integer:
        value = int(value)
    else:
        given = value
        try:
            value = float(value)
        except OverflowError:  # an int or Fraction beyond float64
            value = math.inf
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {_short(given)}")
    if (low is not None and (value <= low if above else value < low)) or (
        high is not None and value > high
    ):
        if high is None:
            limits = f" {'>' if above else '>='} {low}"
        elif high == _MAX_STEPS:
            limits = f" {'>' if above else '>='} {low} and <= 2**62 (int64 loop counts)"
        else:
            limits = f" in {'(' if above else '['}{low}, {high}]"
        raise ValueError(f"{name} must be{limits}, got {_short(value)}")
    return value


def _check_n(n: int, name: str = "n") -> int:
    return _number(n, name, integer=True, low=1)


def _check_steps(value: int, name: str, low: int = 0) -> int:
    return _number(value, name, integer=True, low=low, high=_MAX_STEPS)


def _check_size(count: int, request: str) -> None:
    """Refuse a request (``"n=..."``) for more than :data:`_MAX_VALUES` float64 values."""
    if count > _MAX_VALUES:
        raise ValueError(
            f"{request} asks for {count:.3g} float64 values ({count * 8 / 2**30:.3g} GiB); "
            f"the limit is 2**31 values (16 GiB) per call: ask for fewer points"
        )


def _run(system: str, request: str, kernel, *args) -> np.ndarray:
    """``kernel(*args)``, its orbit checked; too little memory is a ValueError naming the
    request (``"n=..."``)."""
    try:
        values = kernel(*args)
    except MemoryError as err:
        raise ValueError(
            f"{system}: not enough memory for {request}; ask for fewer points"
        ) from err
    _check_finite(values, system)
    return values


def _check_finite(arr: np.ndarray, system: str) -> None:
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{system}: the orbit diverged (non-finite values); choose parameters or initial "
            "conditions that keep it bounded"
        )


def _rate_range(r) -> tuple[float, float]:
    """many_series' ``r``: one growth rate or a ``(low, high)`` pair, within (0, 4]."""
    expected = "a growth rate or a (low, high) pair of them"
    try:
        scalar = isinstance(r, (str, bytes)) or np.ndim(r) == 0 or not hasattr(r, "__len__")
    except ValueError:  # ragged nesting
        scalar = False
    if scalar:
        rate = _number(r, "r", low=0, above=True, high=4, expected=expected)
        return rate, rate
    if len(r) != 2:
        raise ValueError(f"r must be {expected}, got {len(r)} values")
    lo, hi = (_number(v, "r", low=0, above=True, high=4, expected=expected) for v in r)
    if lo > hi:
        raise ValueError(f"r must be a (low, high) pair with low <= high, got {_short(r)}")
    return lo, hi


def _step_time(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


def _flow_time(n: int, dt: float, subsample: int) -> np.ndarray:
    return np.arange(n, dtype=np.float64) * (dt * subsample)


def _state(x0, size: int, name: str) -> np.ndarray:
    """``x0`` as ``size`` finite float64 values (any shape with that many elements)."""
    expected = f"{size} real numbers"
    if isinstance(x0, (str, bytes)) or x0 is None:
        raise TypeError(f"{name} must be a sequence of {expected}, got {_short(x0)}")
    try:
        arr = np.asarray(x0)
    except (TypeError, ValueError) as err:  # ragged nesting and the like
        raise TypeError(f"{name} must be a sequence of {expected}, got {_short(x0)}") from err
    if arr.dtype == object:  # mixed Python objects: each must be a real number
        arr = np.array([_number(v, f"every value of {name}") for v in arr.ravel()])
    elif arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must be a sequence of {expected}, got values of dtype {arr.dtype}"
        )
    s = arr.astype(np.float64).ravel()
    if s.shape != (size,):
        raise ValueError(f"{name} must have {size} values, got {s.size}")
    if not np.isfinite(s).all():
        raise ValueError(f"{name} must be finite, got {s.tolist()}")
    return s


# --------------------------------------------------------------------------- maps
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


# --------------------------------------------------------------------------- flows
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


# --------------------------------------------------------------------------- networks
def many_series(
    n_series: int,
    n: int,
    *,
    density: float = 0.05,
    coupling: float = 0.2,
    r: tuple[float, float] = (3.7, 3.9),
    seed: int | None = 0,
    transient: int = 100,
    dim: str = "series",
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
    dim : str, default "series"
        Name of the series dimension (not ``"time"``, ``"driver"`` or ``"driven"``).

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
    if not isinstance(dim, str):
        raise TypeError(f"dim must be a string (the series dimension's name), got {_short(dim)}")
    if dim in ("time", "driver", "driven"):
        raise ValueError(f"dim must not be 'time', 'driver' or 'driven' (taken), got {dim!r}")
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
