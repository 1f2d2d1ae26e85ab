"""How xedm runs numba: where compiled kernels are cached, and which threading layer runs them.

Imported by every ``cpu_*`` kernel module before its first ``@njit`` (so the cache locator is in
place when the decorators run, and the threading layer is chosen before the first parallel
launch).  Nothing here runs at ``import xedm``.

**Cache.** numba's default writes ``.nbi``/``.nbc`` files into ``__pycache__`` beside the
source, i.e. into ``site-packages/xedm``.  pip does not know those files, so after
``pip uninstall`` (or a switch to an editable install) ``site-packages/xedm`` survives as an
empty namespace package that shadows the real one.  xedm's kernels are therefore cached in a
per-user directory: ``$XEDM_CACHE_DIR``, else ``$XDG_CACHE_HOME/xedm/numba`` (Linux),
``~/Library/Caches/xedm/numba`` (macOS) or ``%LOCALAPPDATA%\\xedm\\numba`` (Windows).  A
``NUMBA_CACHE_DIR`` set by the user wins (numba's own rule).  Only functions defined in
xedm's own files are affected.

numba loads cached kernels by unpickling the index files, so whoever can write into the cache
directory can make any process that uses xedm run their code.  On POSIX the directory xedm
creates is private (mode 0o700, its missing parents too), and a cache directory (the default's
``xedm`` parent included, and a user's ``NUMBA_CACHE_DIR``) that is not owned by the user or
that the group or others may write into is not used: a warning names it, why, and the fix,
and the kernels go to the next safe place (``$XEDM_CACHE_DIR``, then the default directory,
then a private temporary directory removed at exit, where they compile in every process).

**Threading layer.** numba's default on Linux is GNU OpenMP, which is not fork-safe: after a
parallel kernel has run, a fork-based ``multiprocessing.Pool`` (Linux's default start method)
hangs.  xedm asks for Intel TBB, which is both fork-safe and thread-safe (``tbb`` is a
dependency wherever a wheel exists: x86-64 Linux, Windows and macOS).  Where TBB cannot be
loaded, xedm uses numba's ``workqueue`` layer, which is fork-safe but not thread-safe, and
serialises its own parallel kernels with a lock (:func:`serialized`), so calls from several
threads stay correct.  A ``NUMBA_THREADING_LAYER`` set by the user wins; with ``workqueue``
the lock is used too.  The layer in use is ``numba.threading_layer()`` after the first call.

**TBB and process exit.** numba starts its TBB pool with one empty task, meant to make the
worker threads start early, and waits for it only when the interpreter unloads numba.  Where
the process may use one CPU (``taskset``, a one-core batch job, or after ``import kedm``,
which binds the main thread to one core through ``OMP_PROC_BIND=close``), TBB has no worker
thread, so that task is still queued when the process forks; numba's before-fork handler shuts
TBB down and the task is lost, and at exit the unload waits for it for ever (a process that
used xedm and then a fork-based pool never exited).  So xedm launches numba's pool itself when
it chooses TBB and waits for that start-up task at once (:func:`_launch_tbb`).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
import warnings

import numba
from numba.core import caching, config

from . import _shipped

_LOCK = threading.RLock()
_state: dict[str, object] = {"layer": None, "serialize": False}
_CACHE_DIRS: dict[tuple, str] = {}  # cache_dir()'s choice per setting of the environment
_NUMBA_DIRS: dict[str, bool] = {}  # the user's NUMBA_CACHE_DIR: whether it is safe


def _default_cache_dir() -> str:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        return os.path.join(base, "xedm", "numba")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/xedm/numba")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "xedm", "numba")


def unsafe_reason(path: str) -> str | None:
    """Why others could write into the directory ``path`` (owned by another user, writable by
    the group or everyone, or not a directory), or None.  Windows: None (no POSIX modes)."""
    if not hasattr(os, "getuid"):
        return None
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != os.getuid():
        return f"it is owned by uid {st.st_uid}, not by you (uid {os.getuid()})"
    if st.st_mode & 0o022:
        return f"the group or others may write into it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _make_private(path: str, checked: list[str]) -> str | None:
    """Create ``path`` and its missing parents with mode 0o700; why ``path`` or one of
    ``checked`` may not hold xedm's kernels, or None."""
    missing = []
    p = path
    while not os.path.lexists(p) and os.path.dirname(p) != p:
        missing.append(p)
        p = os.path.dirname(p)

    def refused() -> str | None:
        for p in checked:
            why = unsafe_reason(p) if os.path.lexists(p) else None
            if why:
                return why if p == path else f"{p}: {why}"
        return None

    try:
        why = refused()  # nothing is created inside a directory refused
        if why:
            return why
        for p in reversed(missing):
            try:
                os.mkdir(p, 0o700)
            except FileExistsError:  # another process made it meanwhile: checked next
                pass
        return refused()
    except OSError as err:
        return str(err)


TEMP_PREFIX = "xedm-numba-"


def _private_temp_dir() -> str:
    path = tempfile.mkdtemp(prefix=TEMP_PREFIX)  # mode 0o700, new, ours
    pid = os.getpid()
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(path, ignore_errors=True))
    return path


def _warn_unsafe(path: str, why: str, instead: str) -> None:
    if os.path.basename(instead).startswith(TEMP_PREFIX):
        instead += " (new, and removed at exit: the kernels compile again in every process)"
    warnings.warn(
        f"xedm does not cache its compiled kernels in {path} ({why}): whoever can write there "
        f"can make this process run their code. It uses {instead} instead. Fix: give xedm a "
        f"directory only you can write to (`chmod 700` one you own, after emptying it) or set "
        f"XEDM_CACHE_DIR to one.",
        UserWarning,
        stacklevel=2,
    )


def cache_dir() -> str:
    """The directory where xedm's compiled numba kernels are cached: ``$XEDM_CACHE_DIR``, else
    the per-user default, whichever is first private to the user (created with mode 0o700),
    else a private temporary directory; a warning names a directory passed over and why.
    Resolved once per setting of the environment."""
    env = os.environ.get("XEDM_CACHE_DIR")
    default = _default_cache_dir()
    key = (env, default)
    if key not in _CACHE_DIRS:
        candidates = []
        if env:
            path = os.path.abspath(os.path.expanduser(env))
            candidates.append((path, [path]))
        candidates.append((default, [os.path.dirname(default), default]))
        skipped = []
        for path, checked in candidates:
            why = _make_private(path, checked)
            if why is None:
                break
            skipped.append((path, why))
        else:
            path = _private_temp_dir()
        for bad, why in skipped:
            if bad != path:
                _warn_unsafe(bad, why, path)
        _CACHE_DIRS[key] = path
    return _CACHE_DIRS[key]


def kernel_cache_dir() -> str:
    """Where kernels compiled in this process are cached: a user's NUMBA_CACHE_DIR (numba's
    rule), else :func:`cache_dir`."""
    return os.environ.get("NUMBA_CACHE_DIR") or cache_dir()


def _user_numba_cache_dir_safe() -> bool:
    """Whether the user's NUMBA_CACHE_DIR may hold xedm's kernels (else xedm's own is used)."""
    path = config.CACHE_DIR
    if path not in _NUMBA_DIRS:
        why = unsafe_reason(path) if os.path.isdir(path) else None
        _NUMBA_DIRS[path] = why is None
        if why:
            _warn_unsafe(path, why, cache_dir())
    return _NUMBA_DIRS[path]


def _install_cache_locator() -> None:
    from numba.core import caching

    base = getattr(caching, "UserProvidedCacheLocator", None) or getattr(
        caching, "_UserProvidedCacheLocator", None
    )
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if base is None or impl is None or not isinstance(getattr(impl, "_locator_classes", None),
                                                      list):
        return  # an unknown numba layout: numba's own locators apply
    if any(getattr(c, "_xedm", False) for c in impl._locator_classes):
        return

    class XedmCacheLocator(base):
        """Caches functions defined in xedm's files under :func:`cache_dir`."""

        _xedm = True

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            build = os.environ.get(_shipped.BUILD_ENV)
            if build:  # a shipped build: laid out by the package's folders, as shipped
                self._cache_path = os.path.join(build, _shipped.relative_dir(py_file))
            else:
                self._cache_path = os.path.join(cache_dir(),
                                                self.get_suitable_cache_subpath(py_file))

        @classmethod
        def from_function(cls, py_func, py_file):
            if (config.CACHE_DIR and not os.environ.get(_shipped.BUILD_ENV)
                    and _user_numba_cache_dir_safe()):
                return None  # the user's NUMBA_CACHE_DIR: numba's own locator takes it
            if _shipped.relative_dir(py_file) is None:  # not one of xedm's files
                return None
            return super(base, cls).from_function(py_func, py_file)

    impl._locator_classes.insert(0, XedmCacheLocator)


def _load_tbb() -> bool:
    """Make numba's TBB pool importable: the ``tbb`` wheel puts libtbb in ``<prefix>/lib``,
    which the loader does not search inside a virtual environment, so load it first."""
    try:
        import numba.np.ufunc.tbbpool  # noqa: F401

        return True
    except ImportError:
        pass
    candidates = []
    try:
        from importlib import metadata

        dist = metadata.distribution("tbb")
        for f in dist.files or ():
            name = os.path.basename(str(f))
            if name.startswith(("libtbb.so.", "libtbb.", "tbb12.dll", "tbb.dll")) and (
                "malloc" not in name and "bind" not in name
            ):
                candidates.append(str(dist.locate_file(f)))
    except Exception:  # no tbb distribution, or an odd layout
        pass
    for prefix in {sys.prefix, sys.base_prefix}:
        candidates.append(os.path.join(prefix, "lib", "libtbb.so.12"))
    mode = getattr(ctypes, "RTLD_GLOBAL", 0)
    for path in candidates:
        if not os.path.exists(path):
            continue
        try:
            ctypes.CDLL(path, mode=mode)
            import numba.np.ufunc.tbbpool  # noqa: F401, F811

            return True
        except (OSError, ImportError):
            continue
    return False


def _choose_threading_layer() -> None:
    from numba.np.ufunc import parallel

    user = os.environ.get("NUMBA_THREADING_LAYER", "").strip().lower()
    if user and user != "default":
        _state["layer"] = user
        _state["serialize"] = user == "workqueue"
        if user in ("tbb", "safe", "threadsafe", "forksafe"):
            _load_tbb()  # the user's choice may need TBB: make it loadable inside a venv too
            _launch_tbb()
        return
    if getattr(parallel, "_is_initialized", False):
        # numba already launched its threads for someone else's code: the layer is fixed
        layer = numba.threading_layer()
        _state["layer"] = layer
        _state["serialize"] = layer == "workqueue"
        return
    if _load_tbb():
        config.THREADING_LAYER = "tbb"
        _state["layer"] = "tbb"
        _launch_tbb()
    else:
        config.THREADING_LAYER = "workqueue"
        _state["layer"] = "workqueue"
        _state["serialize"] = True


def _launch_tbb() -> None:
    """Launch numba's threads now and, if numba chose TBB, wait for the task that starts TBB's
    workers, so that no task is left queued for a fork to lose (module docstring).

    numba's TBB pool runs ``task_group::run`` with an empty task at launch and calls
    ``task_group::wait`` only when the module is unloaded at exit; its ``synchronize`` entry
    point is that same wait.  Only a launch made here is settled: a pool someone else
    launched may already have forked (its task lost), and waiting on it would block here."""
    from numba.np.ufunc import parallel

    if getattr(parallel, "_is_initialized", False):
        return
    try:
        parallel._launch_threads()
    except Exception:  # no layer loads: numba says why at the first parallel kernel
        return
    if getattr(parallel, "_threading_layer", None) != "tbb":
        return
    from numba.np.ufunc import tbbpool

    address = getattr(tbbpool, "synchronize", None)
    if address:
        ctypes.CFUNCTYPE(None)(address)()


def threading_layer() -> str | None:
    """The layer xedm asked numba for ("tbb", or "workqueue" where TBB cannot be loaded)."""
    return _state["layer"]  # type: ignore[return-value]


def serialized(kernel):
    """``kernel`` itself, or, with the thread-unsafe workqueue layer, a wrapper that runs one
    call at a time (numba aborts the process on concurrent workqueue launches)."""
    if not _state["serialize"]:
        return kernel

    @functools.wraps(kernel)
    def call(*args, **kwargs):
        with _LOCK:
            return kernel(*args, **kwargs)

    return call


def interruptible(kernel):
    """``kernel`` behind a wrapper that holds back Ctrl-C (SIGINT) until the call returns, then
    raises it (the handler that was installed runs then).  numba boxes a kernel's result by
    calling Python (``_numba_unpickle``); a KeyboardInterrupt raised there leaves a NULL in the
    returned tuple: a SystemError, or a segmentation fault when the tuple is unpacked (a
    Ctrl-C during xmap crashed the interpreter).  So Ctrl-C stops a call between kernel
    launches, which the callers keep to batches of seconds; only the main thread receives
    signals, so calls from other threads run as they are."""

    @functools.wraps(kernel)
    def call(*args, **kwargs):
        if getattr(_HOLD, "on", False) or threading.current_thread() is not threading.main_thread():
            return kernel(*args, **kwargs)
        old = signal.getsignal(signal.SIGINT)
        if not callable(old):  # SIG_IGN / SIG_DFL, or set outside Python: nothing to defer
            return kernel(*args, **kwargs)
        caught: list = []
        signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
        _HOLD.on = True
        try:
            out = kernel(*args, **kwargs)
        finally:
            _HOLD.on = False
            signal.signal(signal.SIGINT, old)
            if caught:
                old(signal.SIGINT, caught[0])  # the default handler raises KeyboardInterrupt
        return out

    return call


_HOLD = threading.local()


def njit(*args, **kwargs):
    """``numba.njit`` for xedm's kernels: with ``cache=True`` the kernel's cache is
    :class:`xedm.kernels._shipped.XedmFunctionCache` (the user's cache, then the kernels
    compiled ahead that a wheel ships)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return numba.njit(args[0])
    decorate = numba.njit(*args, **kwargs)
    if not kwargs.get("cache"):
        return decorate

    def wrap(fn):
        disp = decorate(fn)
        if type(getattr(disp, "_cache", None)) is caching.FunctionCache:
            disp._cache = _shipped.XedmFunctionCache(disp.py_func)
        return disp

    return wrap


_install_cache_locator()
_choose_threading_layer()
_shipped.install_notice(kernel_cache_dir)
