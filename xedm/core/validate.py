"""Parameter checks shared by every EDM function: clear errors naming the parameter and the fix."""

from __future__ import annotations

import functools
import inspect
import numbers
import warnings

import numpy as np


def check_int(name: str, value, minimum: int | None = None, hint: str = "") -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral,)):
        raise TypeError(f"{name}={value!r} is invalid: {name} must be an integer, got "
                        f"{type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={value} is invalid: {name} must be >= {minimum}{hint}")
    return value


def check_E(E) -> int:
    return check_int("E", E, 1, " (E is the embedding dimension: use E=1 or more)")


def check_tau(tau) -> int:
    return check_int(
        "tau", tau, 1, " (tau >= 1 lags into the past; pyEDM's tau=-1 is xedm's tau=1)"
    )


def check_Tp(Tp) -> int:
    return check_int("Tp", Tp)


def check_exclusion_radius(r) -> int:
    r = check_int("exclusion_radius", r, 0, " (use 0 for plain leave-one-out)")
    if r >= 2**62:
        raise ValueError(f"exclusion_radius={r} is too large to be a number of time steps; a "
                         "radius of the series length or more excludes every neighbour")
    return r


def check_knn(knn, name: str = "knn") -> int | None:
    if knn is None:
        return None
    return check_int(name, knn, 1, " (leave knn=None for the default)")


def check_theta(theta, name: str = "theta") -> np.ndarray:
    """theta as a 1-D float array: numbers (not bool or strings), finite, >= 0, distinct."""
    wrong = f"{name} must be a number or a 1-D list of numbers, got {theta!r}"
    raw = np.asarray(theta)
    if raw.dtype.kind not in "iuf" and not (raw.dtype == object and raw.size):
        raise TypeError(wrong)
    try:
        arr = np.atleast_1d(raw.astype(float))
    except (TypeError, ValueError):
        raise TypeError(wrong) from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a number or a 1-D list of numbers, got {theta!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {theta!r}")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} has repeated values: {arr.tolist()}; give each value once")
    return arr


def check_int_list(name: str, values, minimum: int | None = None) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be an integer or a list of integers, got {values!r}")
    arr = np.atleast_1d(np.asarray(values, dtype=object if isinstance(values, (list, tuple))
                                   else None))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be an integer or a non-empty 1-D list of integers")
    # item by item (a list's own items, not numpy's conversion, which turns True into 1)
    values = [check_int(name, v, minimum) for v in arr.tolist()]
    if any(abs(v) >= 2**62 for v in values):
        raise ValueError(f"{name} has values too large to be time steps: {values}")
    out = np.array(values, dtype=np.int64)
    if len(np.unique(out)) != len(out):
        raise ValueError(f"{name} has repeated values: {out.tolist()}; give each value once")
    return out


def check_embedding_fits(E: int, tau: int, T: int, ncols: int = 1, embedded: bool = False,
                         name: str = "E") -> None:
    """(E-1)*tau must fit in the series; ``name`` is the parameter the user passed (e.g.
    "E_max" for a sweep), so that the message names it."""
    if embedded:
        if E != ncols:
            raise ValueError(
                f"with embedded=True, E must equal the number of columns ({ncols}), got E={E} "
                "(or leave E out)"
            )
        return
    span = (E - 1) * tau
    if span >= T:
        raise ValueError(
            f"{name}={E} with tau={tau} needs ({name}-1)*tau = {span} < the series length {T}; "
            f"use a smaller {name} or tau, or a longer series"
        )


def check_bool(name: str, value) -> bool:
    """True or False (numpy bools too); anything else is refused, the string "no" and the
    number 1 included: a truthy stand-in would silently switch the option on.

    >>> check_bool("keep_samples", np.True_)
    True
    >>> check_bool("keep_samples", "no")
    Traceback (most recent call last):
    ...
    TypeError: keep_samples must be True or False, got 'no' (str)
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")


def check_optional_bool(name: str, value) -> bool | None:
    """None (the default rule) or :func:`check_bool`."""
    return None if value is None else check_bool(name, value)


def check_number(name: str, value, example: str, minimum: float | None = None) -> float:
    """A finite real number (not a str, not a bool), at least ``minimum``; else a TypeError /
    ValueError naming the parameter and an example.

    >>> check_number("alpha", "0.05", "0.05")
    Traceback (most recent call last):
    ...
    TypeError: alpha must be a number, e.g. alpha=0.05, got str '0.05'
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, e.g. {name}={example}, got "
                        f"{type(value).__name__} {value!r}")
    x = float(value)
    if not np.isfinite(x) or (minimum is not None and x < minimum):
        raise ValueError(f"{name}={value!r} is invalid: it must be finite"
                         + (f" and >= {minimum}" if minimum is not None else "")
                         + f", e.g. {name}={example}")
    return x


def check_fraction(name: str, value, example: str, *, low_open: bool = True,
                   high_open: bool = True) -> float:
    """A real number in (0, 1) (``low_open``: 0 excluded; ``high_open``: 1 excluded), else a
    TypeError / ValueError naming the parameter: the one rule of every fraction (alpha of
    causal_network, recurrence rates, ...).  Strings such as "0.05" are refused.

    >>> check_fraction("alpha", 0.05, "0.05")
    0.05
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, e.g. {name}={example}, got "
                        f"{type(value).__name__} {value!r}")
    x = float(value)
    low_ok = (0 < x) if low_open else (0 <= x)
    high_ok = (x < 1) if high_open else (x <= 1)
    if not (low_ok and high_ok):
        raise ValueError(f"{name}={value} must lie in {'(0' if low_open else '[0'}, "
                         f"{'1)' if high_open else '1]'}, e.g. {name}={example}")
    return x


def check_solver(solver: str, alpha: float) -> tuple[str, float]:
    if solver not in ("lstsq", "ridge"):
        raise ValueError(f"solver must be 'lstsq' or 'ridge', got {solver!r}")
    alpha = check_number("alpha", alpha, "0.1 (with solver='ridge')", 0)
    if solver == "ridge" and alpha == 0:
        raise ValueError("solver='ridge' needs alpha > 0 (alpha=0 is solver='lstsq')")
    return solver, alpha


def check_quantiles(quantiles, name: str = "quantiles") -> tuple[float, ...]:
    """Distinct numbers in [0, 1] (one number or a 1-D list; None or [] for none).

    >>> check_quantiles([0.05, 0.95])
    (0.05, 0.95)
    """
    if quantiles is None:
        return ()
    raw = np.atleast_1d(np.asarray(quantiles, dtype=object))
    if raw.ndim != 1:
        raise ValueError(f"{name} must be a number or a 1-D list of numbers in [0, 1], got "
                         f"{quantiles!r}")
    for q in raw.tolist():
        if isinstance(q, (bool, np.bool_)) or not isinstance(q, numbers.Real):
            raise TypeError(f"{name} must be numbers in [0, 1], got {q!r} "
                            f"({type(q).__name__}) in {quantiles!r}")
    q = raw.astype(np.float64)
    if not np.all((q >= 0) & (q <= 1)):
        raise ValueError(f"{name}={quantiles!r} is invalid; give numbers in [0, 1]")
    if np.unique(q).size != q.size:
        raise ValueError(f"{name} has repeated values: {q.tolist()}; give each quantile once")
    return tuple(float(x) for x in q)


def user_stacklevel() -> int:
    """The stacklevel of the first frame outside xedm, xarray and dask: warnings raised deep
    inside apply_ufunc point at the user's call."""
    import os
    import sys

    skip = tuple(os.path.dirname(sys.modules[m].__file__) + os.sep
                 for m in ("xedm", "xarray", "dask")
                 if m in sys.modules and getattr(sys.modules[m], "__file__", None))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1
    return level


def renamed(old: str, new: str, what: str):
    """Decorator: the keyword ``old`` is the deprecated spelling of the parameter ``new``.

    Passing ``old=value`` still works for one release: it becomes ``new=value`` with a
    FutureWarning that names both; passing both with different values is a TypeError (never
    silently one of them).  ``what`` says what the parameter is (e.g. "the time dimension").

    >>> @renamed("dim", "time_dim", "the time dimension")
    ... def f(x, *, time_dim=None):
    ...     return time_dim
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     f(1, dim="t"), w[0].category.__name__
    ('t', 'FutureWarning')
    """

    def decorate(func):
        sig = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if old in kwargs:
                value = kwargs.pop(old)
                given = sig.bind_partial(*args, **kwargs).arguments.get(new)
                if given is not None and value is not None and given != value:
                    raise TypeError(
                        f"{func.__name__}() got {old}={value!r} and {new}={given!r}: {old} is "
                        f"the old name of {new} ({what}); pass only {new}={given!r}"
                    )
                warnings.warn(
                    f"{func.__name__}({old}={value!r}): the parameter {old!r} is renamed "
                    f"{new!r} ({what}; every xedm function calls the time dimension time_dim "
                    f"and the series dimension series_dim); {old}= stops working in the next "
                    f"release: pass {new}={value!r}",
                    FutureWarning, stacklevel=user_stacklevel(),
                )
                if given is None:
                    kwargs[new] = value
            return func(*args, **kwargs)

        return wrapper

    return decorate
