"""Global options: ``xedm.set_options(backend=..., neighbors=..., neighbors_recall=...,
progress=...)``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

OPTIONS: dict[str, Any] = {
    "backend": "auto",
    "neighbors": "auto",
    "neighbors_recall": 0.99,
    "progress": True,
}

_VALID = {
    "backend": {"auto", "cpu", "gpu"},
    # xedm.neighbors.base.METHODS (not imported here: importing xedm stays light)
    "neighbors": {"auto", "exact", "kdtree", "sorted1d", "nndescent", "hnsw", "ivf"},
    "progress": {True, False},
}


def _valid(key: str, value: Any) -> bool:
    if key == "neighbors_recall":  # a target recall in (0, 1]
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and 0.0 < float(value) <= 1.0)
    try:
        return value in _VALID[key]
    except TypeError:  # unhashable
        return False


@contextlib.contextmanager
def set_options(**kwargs: Any) -> Iterator[None]:
    """Set global defaults, as a context manager.

    Examples
    --------
    >>> import xedm
    >>> with xedm.set_options(backend="cpu"):
    ...     pass
    """
    old = {}
    for key, value in kwargs.items():
        if key not in OPTIONS:
            raise ValueError(f"unknown option {key!r}; valid options are {sorted(OPTIONS)}")
        if not _valid(key, value):
            if key == "neighbors_recall":
                raise ValueError(f"option neighbors_recall={value!r} is invalid; give a target "
                                 "recall in (0, 1], e.g. 0.99")
            choices = sorted(map(str, _VALID[key]))
            raise ValueError(f"option {key}={value!r} is invalid; choose from {choices}")
        old[key] = OPTIONS[key]
    OPTIONS.update(kwargs)
    try:
        yield
    finally:
        OPTIONS.update(old)


def get_option(key: str) -> Any:
    return OPTIONS[key]
