"""Memory and work policy: the one module that says how much a call may take.

Every public function (and :mod:`xedm.compat.pyedm`, which calls them) estimates, before it
starts, the memory its arrays will hold and the elementary operations its kernels will run;
a call over this machine's figures is refused up front with a ValueError that gives the
estimate, the limit and the parameter to change, instead of a MemoryError, a swap storm or a
run of hours.

* **Memory** is compared with the machine's physical memory (``os.sysconf``; psutil when it
  is installed) times a share: a deterministic figure, so a call is refused or not whatever
  else runs at the time.  The available memory is quoted in the message as well.  A GPU
  call's device arrays are compared with the device's memory too (:func:`check_device_memory`;
  without CuPy or a device there is no figure and nothing is refused).
* **Work** is counted in elementary operations (distance terms, kernel steps) and turned into
  estimated seconds on the chosen backend (:func:`estimate_seconds`): on the CPU
  ``CPU_OPS_PER_CORE`` a second on each core numba may use (one core for the serial paths),
  on a GPU ``GPU_OPS_PER_SECOND``.  A call whose estimate passes the option ``work_limit``
  (seconds, default 600: ten minutes) is refused; one over ``WARN_SECONDS`` warns that it
  will take minutes (it shows progress and stops on Ctrl-C).  ``xedm.set_options(
  work_limit=None)`` lifts the limit, a larger number of seconds raises it.
* The batch sizes of the kernels' working tables (neighbour tables per batch of series, the
  share of a device's free memory that the choice of E may keep) live here too.

Examples
--------
>>> from xedm.memory import check_work, estimate_seconds
>>> check_work(1e6, "a small call", "use less")  # well under the limit: nothing happens
>>> estimate_seconds(2e12, "gpu")  # the GPU's rate: no CuPy needed
2.0
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


# Rates that turn elementary operations into seconds (conservative: a call runs in the
# estimate or less).  CPU: one core does about 1e8 of them a second (ccm's sampled cross maps
# ran at ~4e8 a core on a shared 2-core VM, IAAFT's FFT rounds at ~2.5e8).  GPU: rqa(E=5,
# tau=3, recurrence_rate=0.05) on 1,043,112 points counts 5.4e12 (cells x (one threshold +
# E_DIST_OPS)) and ran in 1.4-3.5 s on an H100 / H200: 1.5e12-3.9e12 a second.
CPU_OPS_PER_CORE = 1e8
GPU_OPS_PER_SECOND = 1e12
CALL_OPS = 1e6  # a Python-level call (a compat loop's one fit, one result) in operations
WARN_SECONDS = 60.0  # an estimate over this warns (minutes of computing)
WORK_LIMIT_SECONDS = 600.0  # the option work_limit's default


def cpu_cores() -> int:
    """The cores the CPU kernels run on: ``NUMBA_NUM_THREADS`` when set, else the cores this
    process may use (its affinity), else ``os.cpu_count()``."""
    env = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def estimate_seconds(n_ops: float, backend: str | None = "cpu", *, serial: bool = False,
                     cores: int | None = None) -> float:
    """Estimated seconds of ``n_ops`` elementary operations on ``backend`` ("gpu": the
    device's rate; anything else: the CPU's, on ``cores`` cores (default
    :func:`cpu_cores`), or one when ``serial``).  Needs no device and no CuPy.

    >>> estimate_seconds(4e8, "cpu", cores=4)
    1.0
    >>> estimate_seconds(4e8, "cpu", serial=True)
    4.0
    """
    if backend == "gpu":
        return float(n_ops) / GPU_OPS_PER_SECOND
    n = 1 if serial else (cores or cpu_cores())
    return float(n_ops) / (CPU_OPS_PER_CORE * n)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.2g} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} minutes"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} hours"
    return f"{seconds / 86400:.2g} days"


def _where(backend: str | None, serial: bool) -> str:
    if backend == "gpu":
        return "the GPU"
    n = 1 if serial else cpu_cores()
    return f"{n} CPU core{'s' if n > 1 else ''}"


def check_work(n_ops: float, what: str, fix: str, *, backend: str | None = "cpu",
               serial: bool = False) -> None:
    """Refuse ``what`` when its estimated ``n_ops`` elementary operations take longer on
    ``backend`` (see :func:`estimate_seconds`) than the option ``work_limit`` (seconds; None:
    no limit), and warn when they take more than ``WARN_SECONDS``; ``fix`` says which
    parameter to change."""
    limit = get_option("work_limit")
    seconds = estimate_seconds(n_ops, backend, serial=serial)
    if limit is None or seconds <= min(WARN_SECONDS, float(limit)):
        return
    where = _where(backend, serial)
    if seconds <= limit:
        import warnings

        warnings.warn(f"{what} needs about {float(n_ops):.0e} elementary operations: expect "
                      f"about {_duration(seconds)} on {where}; {fix} for a quicker result",
                      UserWarning, stacklevel=_user_level())
        return
    raise ValueError(
        f"{what} needs about {float(n_ops):.0e} elementary operations, about "
        f"{_duration(seconds)} on {where} (estimated), more than the work limit of "
        f"{_duration(float(limit))}; {fix}, or raise the limit with "
        "xedm.set_options(work_limit=seconds) (None: no limit)"
    )


def check_device_memory(nbytes: float, what: str, fix: str, info, share: float = 0.9) -> None:
    """Refuse a GPU call whose device arrays (``nbytes``) exceed ``share`` of the device's
    memory; ``info``: the device's (free, total) bytes (the caller asks
    ``xedm.kernels.device.memory_info``: this module sits below the kernels), None without
    CuPy or a device (no figure, nothing checked, as :func:`check_memory`)."""
    if info is None or nbytes <= share * info[1]:
        return
    free, total = info
    raise ValueError(f"{what} needs about {_gib(nbytes)} of GPU memory, more than "
                     f"{share:g} of the device's {_gib(total)} ({_gib(free)} free now); {fix}")


def _user_level() -> int:
    """The stacklevel of the first frame outside xedm (warnings point at the user's call)."""
    import sys

    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level
