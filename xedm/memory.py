"""Memory and work policy: the one module that says how much a call may take.

Every public function estimates, before it starts, the memory its arrays will hold and the
elementary operations its kernels will run; a call over this machine's figures is refused
up front with a ValueError that gives the estimate, the limit and the parameter to change,
instead of a MemoryError, a swap storm or a run of hours.

* **Memory** is compared with the machine's physical memory (``os.sysconf``; psutil when it
  is installed) times a share: a deterministic figure, so a call is refused or not whatever
  else runs at the time.  The available memory is quoted in the message as well.
* **Work** (elementary operations: distance terms, kernel steps) is compared with the option
  ``work_limit`` (default 1e12, about an hour of one core; ``xedm.set_options(work_limit=None)``
  lifts it, a larger number raises it).
* The batch sizes of the kernels' working tables (neighbour tables per batch of series, the
  share of a device's free memory that the choice of E may keep) live here too.

Examples
--------
>>> from xedm.memory import check_work
>>> check_work(1e6, "a small call", "use less")  # well under the limit: nothing happens
>>> try:
...     check_work(1e15, "ccm with samples=10**9", "use fewer samples")
... except ValueError as err:
...     print(str(err)[:61])
ccm with samples=10**9 needs about 1e+15 elementary operation
"""

from __future__ import annotations

import os

from .options import get_option

# neighbour tables of one batch of series (simplex, ccm) and of one batch of library series
# (xmap, CPU and GPU); the choice of E on a GPU keeps its tables in at most this share of the
# device's free memory; a distributed block takes this share of one worker's (or GPU's)
# memory (Dask keeps a few results and inputs of other tasks beside the running one)
TABLE_BYTES = 512 * 2**20
SWEEP_BYTES = 256 * 2**20  # predictions + masks of one batch of xmap's choice of E
XMAP_TABLE_BYTES = 256 * 2**20
XMAP_GPU_TABLE_BYTES = 2 * 2**30  # a batch's tables with the kNN kernel's partial lists
XMAP_GPU_TABLE_SHARE = 0.25  # ... or this share of the device's free memory when more
XMAP_KEEP_FRACTION = 0.4
MEMORY_SHARE = 0.25


def xmap_gpu_table_bytes(free: int) -> int:
    """The bytes of one batch of xmap's tables on the GPU, whose free memory is ``free``
    bytes: ``XMAP_GPU_TABLE_BYTES``, or ``XMAP_GPU_TABLE_SHARE`` of the free memory when
    that is more.  Fewer, larger batches keep the device busy: the choice of E for 1,000
    series of 10,000 steps took 1.0 s of kNN in 15 batches and 0.8 s in one on an H200.

    >>> xmap_gpu_table_bytes(0) == XMAP_GPU_TABLE_BYTES
    True
    """
    return max(XMAP_GPU_TABLE_BYTES, int(XMAP_GPU_TABLE_SHARE * free))


def total_memory() -> int | None:
    """Physical memory of this machine in bytes (None where the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        pass
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # noqa: BLE001  (psutil missing or failing: no figure)
        return None


def available_memory() -> int | None:
    """Memory available to a new allocation in bytes (psutil, else ``SC_AVPHYS_PAGES``)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_AVPHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def _gib(nbytes: float) -> str:
    gib = nbytes / 2**30
    return f"{gib:,.1f} GiB" if gib < 100 else f"{gib:,.0f} GiB"


def check_memory(nbytes: float, what: str, fix: str, share: float = 1.0) -> None:
    """Refuse ``what`` (e.g. "surrogates(n=10**9) on 300 points") when its estimated
    ``nbytes`` exceed ``share`` of this machine's physical memory; ``fix`` says which
    parameter to change.  Does nothing when the system gives no memory figure."""
    total = total_memory()
    if total is None or nbytes <= share * total:
        return
    avail = available_memory()
    part = "" if share == 1 else f"{share:g} of "
    raise ValueError(
        f"{what} needs about {_gib(nbytes)} of memory, more than {part}this machine's "
        f"{_gib(total)}" + (f" ({_gib(avail)} available now)" if avail is not None else "")
        + f"; {fix}"
    )


# a call over this share of the work limit warns that it will take minutes (one core does
# about 1e8 of these operations a second)
WORK_WARN_SHARE = 0.01


def check_work(n_ops: float, what: str, fix: str) -> None:
    """Refuse ``what`` when its estimated ``n_ops`` elementary operations exceed the option
    ``work_limit`` (None: no limit), and warn when they exceed ``WORK_WARN_SHARE`` of it
    (minutes of computing); ``fix`` says which parameter to change."""
    limit = get_option("work_limit")
    if limit is None or n_ops <= WORK_WARN_SHARE * limit:
        return
    if n_ops <= limit:
        import warnings

        warnings.warn(f"{what} needs about {float(n_ops):.0e} elementary operations: expect "
                      f"minutes of computing; {fix} for a quicker result", UserWarning,
                      stacklevel=_user_level())
        return
    raise ValueError(
        f"{what} needs about {float(n_ops):.0e} elementary operations, more than the work "
        f"limit of {float(limit):.0e} (hours of computing); {fix}, or raise the limit with "
        "xedm.set_options(work_limit=...) (None: no limit)"
    )


def _user_level() -> int:
    """The stacklevel of the first frame outside xedm (warnings point at the user's call)."""
    import sys

    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level
