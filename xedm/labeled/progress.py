"""Progress bars of the xarray layer (shown only when the work outlasts two seconds; on a
terminal a tqdm bar, elsewhere a plain line a minute: :mod:`xedm._progress`)."""

from __future__ import annotations

from .. import _progress
from ..options import get_option


def progress_bar(progress: bool | None, desc: str, total: int):
    """A bar over series (or batches of them), shown only when the work outlasts two seconds
    (off: progress=False)."""
    show = get_option("progress") if progress is None else progress
    if not show:
        return iter

    def wrap(it):
        n = len(it) if hasattr(it, "__len__") else total  # batches of series, or series
        return _progress.bar(it, desc=desc, total=n, delay=2.0, leave=False,
                             unit="series" if n == total else "batch")

    return wrap


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def counter_bar(progress: bool | None, desc: str, total: float, unit: str = "it",
                unit_scale: bool = False):
    """A bar advanced by hand with ``update(n)`` (units of real work: series, matrix
    cells), shown only when the work outlasts two seconds; a no-op object when progress is
    off (``progress=False`` or ``xedm.set_options(progress=False)``)."""
    show = get_option("progress") if progress is None else progress
    if not show:
        return _NoBar()
    return _progress.bar(desc=desc, total=total, unit=unit, unit_scale=unit_scale, delay=2.0,
                         leave=False)
