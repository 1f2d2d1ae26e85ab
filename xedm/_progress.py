"""Progress of long work: a tqdm bar on a terminal, a plain log line a minute elsewhere.

Every bar of xedm (the xarray layer's, the batch jobs' and the warmup's) comes from
:func:`bar`.  Where stderr is a terminal (or an IPython/Jupyter kernel, whose widgets tqdm
draws) it is a tqdm bar.  Where it is not (stderr captured or redirected: CI, batch
schedulers, ``nohup``, ``2> log``) a bar's carriage returns would fill the log, so
:class:`LogProgress` stands in: it writes nothing for the first minute and then at most
one line a minute, e.g. ``xmap: 340/1000 series (34%), 2m10s elapsed``.  Turning progress
off (``progress=False``, ``xedm.set_options(progress=False)``, ``XEDM_PROGRESS=0``, the
command line's ``-q``) is decided by the callers, which then ask for no bar at all.

A leaf module (imports no other module of xedm): the kernels' callers in ``core/`` use it too.
"""

from __future__ import annotations

import sys
import time

#: seconds between two log lines when stderr is not a terminal (the first after as long)
LOG_INTERVAL = 60.0

clock = time.monotonic  # the clock of the log lines (tests replace it)


def interactive() -> bool:
    """Whether progress is drawn as bars: stderr is a terminal, or this is an IPython kernel
    (Jupyter's widgets)."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):  # a closed or replaced stream
        pass
    ipython = sys.modules.get("IPython")  # only when already imported: never import it here
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    # Jupyter's kernel and its subclasses (Colab's, VS Code's)
    return any(c.__name__ == "ZMQInteractiveShell" for c in type(shell).__mro__)


def bar(iterable=None, *, desc: str = "", total: float | None = None, unit: str = "it",
        unit_scale: bool = False, initial: float = 0, delay: float = 0.0,
        leave: bool = False, disable: bool = False):
    """A progress bar over ``iterable`` or advanced by hand (``update(n)``): tqdm's on a
    terminal, :class:`LogProgress` elsewhere (module doc).  Both iterate, ``update``,
    ``set_postfix_str``, ``close`` and work as context managers."""
    if not disable and interactive():
        from tqdm.auto import tqdm  # looked up here: tests replace tqdm.auto.tqdm

        return tqdm(iterable, desc=desc, total=total, unit=unit, unit_scale=unit_scale,
                    initial=initial, delay=delay, leave=leave)
    return LogProgress(iterable, desc=desc, total=total, unit=unit, unit_scale=unit_scale,
                       initial=initial, disable=disable)


class LogProgress:
    """Progress as plain lines on stderr, at most one per :data:`LOG_INTERVAL` seconds and
    none before the first interval has passed (a short call writes nothing)."""

    def __init__(self, iterable=None, *, desc: str = "", total: float | None = None,
                 unit: str = "it", unit_scale: bool = False, initial: float = 0,
                 disable: bool = False):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.desc, self.total, self.unit = iterable, desc, total, unit
        self.unit_scale, self.n, self.disable, self.postfix = unit_scale, initial, disable, ""
        self.start = self.last = clock()
        self.lines = 0

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)

    def __len__(self):
        return len(self.iterable) if self.iterable is not None else int(self.total or 0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def update(self, n: float = 1) -> None:
        """Advance by ``n``; write a line when an interval has passed since the last one."""
        self.n += n
        if self.disable:
            return
        now = clock()
        if now - self.last >= LOG_INTERVAL:
            self.last = now
            self.lines += 1
            print(self.line(now - self.start), file=sys.stderr, flush=True)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = str(s)

    def refresh(self) -> None:  # tqdm's API; lines are written by update only
        pass

    def close(self) -> None:
        pass

    def line(self, elapsed: float) -> str:
        """``desc: n/total unit (p%), 2m10s elapsed`` (``[postfix]`` when one is set)."""
        def count(v):
            if self.unit_scale:
                from tqdm import tqdm

                return tqdm.format_sizeof(v)
            return f"{v:g}" if isinstance(v, float) and not v.is_integer() else f"{int(v)}"

        done = count(self.n)
        if self.total:
            done += f"/{count(self.total)} {self.unit} ({100 * self.n / self.total:.0f}%)"
        else:
            done += f" {self.unit}"
        minutes, seconds = divmod(int(elapsed), 60)
        hours, minutes = divmod(minutes, 60)
        took = (f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s")
        extra = f" [{self.postfix}]" if self.postfix else ""
        return f"{self.desc or 'xedm'}: {done}{extra}, {took} elapsed"
