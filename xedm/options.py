"""Global options: ``xedm.set_options(backend=..., neighbors=..., neighbors_recall=...,
progress=..., xmap_target_block=..., work_limit=...)``."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .neighbors.registry import METHODS as NEIGHBOR_METHODS  # plain data: importing stays light

OPTIONS: dict[str, Any] = {
    "backend": "auto",
    "neighbors": "auto",
    "neighbors_recall": 0.99,
    # XEDM_PROGRESS=0 turns the bars off from the start (executed docs pages, batch logs)
    "progress": os.environ.get("XEDM_PROGRESS", "1").strip().lower()
    not in {"0", "false", "no", "off"},
    # targets per block of a distributed xmap (None: the rule of xedm.distributed.block_sizes)
    "xmap_target_block": None,
    # estimated seconds of computing (on the chosen backend) a call may take before it is
    # refused up front (None: no limit); see xedm.memory
    "work_limit": 600.0,
}

_VALID = {
    "backend": {"auto", "cpu", "gpu"},
    "neighbors": set(NEIGHBOR_METHODS),
    "progress": {True, False},
}


def _valid(key: str, value: Any) -> bool:
    if key == "xmap_target_block":  # None or a number of series >= 1
        return value is None or (isinstance(value, int) and not isinstance(value, bool)
                                 and value >= 1)
    if key == "work_limit":  # None or a positive number of seconds
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                 and float(value) > 0)
    if key == "progress":  # True or False itself (numpy bools too), not 1 or "no"
        return isinstance(value, (bool, np.bool_))
    if key == "neighbors_recall":  # a target recall in (0, 1]
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and 0.0 < float(value) <= 1.0)
    try:
        return value in _VALID[key]
    except TypeError:  # unhashable
        return False


class set_options:  # noqa: N801  (a function to users, as in xarray)
    """Set global defaults: for the rest of the session, or inside a ``with`` block only.

    ``xedm.set_options(progress=False)`` applies at once and stays; used as a context
    manager, the previous values come back when the block ends (also on an error).

    Examples
    --------
    >>> import xedm
    >>> with xedm.set_options(backend="cpu"):
    ...     xedm.get_option("backend")
    'cpu'
    >>> xedm.get_option("backend")
    'auto'
    >>> _ = xedm.set_options(progress=False)  # from now on
    >>> xedm.get_option("progress")
    False
    >>> _ = xedm.set_options(progress=True)

    Options: ``backend`` ("auto", "cpu", "gpu"), ``neighbors`` (the neighbour method),
    ``neighbors_recall`` (target recall of approximate methods), ``progress`` (True or
    False), ``xmap_target_block`` (targets per block of a distributed xmap, None for the
    rule) and ``work_limit`` (estimated seconds of computing on the chosen backend a call may
    take before it is refused up front, default 600; None lifts the limit: see
    ``xedm.memory``).

    The environment variable ``XEDM_PROGRESS=0`` (also ``false``, ``no``, ``off``), set
    before xedm is imported, makes ``progress=False`` the default (executed notebooks, logs).
    """

    def __init__(self, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            if key not in OPTIONS:
                raise ValueError(f"unknown option {key!r}; valid options are {sorted(OPTIONS)}")
            if not _valid(key, value):
                if key == "neighbors_recall":
                    raise ValueError(f"option neighbors_recall={value!r} is invalid; give a "
                                     "target recall in (0, 1], e.g. 0.99")
                if key == "progress":
                    raise TypeError(f"option progress={value!r} is invalid; give True or False")
                if key == "work_limit":
                    raise ValueError(f"option work_limit={value!r} is invalid; give a positive "
                                     "number of seconds (default 600) or None (no limit)")
                if key == "xmap_target_block":
                    raise ValueError(f"option xmap_target_block={value!r} is invalid; give "
                                     "None (the block rule) or a number of series >= 1")
                choices = sorted(map(str, _VALID[key]))
                raise ValueError(f"option {key}={value!r} is invalid; choose from {choices}")
        limit = kwargs.get("work_limit")
        if limit is not None and float(limit) >= 1e6:  # a count of operations, as before 0.x
            import warnings

            warnings.warn(f"work_limit={limit:g} is read as seconds (the option now "
                          "counts estimated seconds, default 600, not elementary "
                          "operations); None lifts the limit", FutureWarning, stacklevel=2)
        self._old = {key: OPTIONS[key] for key in kwargs}
        OPTIONS.update(kwargs)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        OPTIONS.update(self._old)


def get_option(key: str) -> Any:
    """The current value of global option ``key`` (see :class:`set_options`).

    Examples
    --------
    >>> import xedm
    >>> xedm.get_option("neighbors")
    'auto'
    """
    try:
        return OPTIONS[key]
    except (KeyError, TypeError):
        raise ValueError(f"unknown option {key!r}; valid options are {sorted(OPTIONS)}") from None
