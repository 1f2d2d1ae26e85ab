"""Global options: ``xedm.set_options(backend=..., neighbors=..., progress=...)``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

OPTIONS: dict[str, Any] = {
    "backend": "auto",
    "neighbors": "auto",
    "progress": True,
}

_VALID = {
    "backend": {"auto", "cpu", "gpu"},
    "neighbors": {"auto", "exact", "kdtree", "nndescent", "hnsw"},
    "progress": {True, False},
}


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
        if value not in _VALID[key]:
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
