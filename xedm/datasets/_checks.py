"""Parameter checks and shared helpers of the generators: every argument is checked here
before anything is computed, and every orbit after (see the package docstring)."""

from __future__ import annotations

import math
import numbers

import numpy as np

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


def _range(value, name: str, expected: str, **bounds) -> tuple:
    """One number (``(v, v)``) or a ``(low, high)`` pair of them, low <= high, each checked
    by :func:`_number` with ``bounds`` (``integer``, ``low``, ``above``, ``high``)."""
    try:
        scalar = (isinstance(value, (str, bytes)) or not hasattr(value, "__len__")
                  or np.ndim(value) == 0)
    except ValueError:  # ragged nesting: a sequence
        scalar = False
    if scalar:  # a number, or something _number refuses
        v = _number(value, name, expected=expected, **bounds)
        return v, v
    if len(value) != 2:
        raise ValueError(f"{name} must be {expected}, got {len(value)} values: {_short(value)}")
    lo, hi = (_number(v, name, expected=expected, **bounds) for v in value)
    if lo > hi:
        raise ValueError(f"{name} must be a (low, high) pair with low <= high, got "
                         f"{_short(value)}")
    return lo, hi


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


def _check_loops(system: str, steps: int, per_step: float, names: str) -> None:
    """Refuse (or warn about) ``steps`` iterations of ``per_step`` operations each that would
    take hours (the work limit of :mod:`xedm.memory`): a huge transient is a hang, not an
    error, otherwise.  ``names`` are the parameters that set the count."""
    from ..memory import check_work

    check_work(float(steps) * per_step, f"{system} with {steps:,} steps ({names})",
               f"use a smaller {names.replace(' + ', ' or ')}")


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


def _step_time(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


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
