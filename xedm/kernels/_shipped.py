"""Kernels compiled ahead: the numba cache a wheel ships, and the notice of a slow first call.

numba compiles a kernel on its first call (seconds each, minutes for a whole session on a small
machine) and caches the object code on disk (:mod:`xedm.kernels._numba`).  A wheel of xedm also
carries that object code for the commonest signatures, built when the wheel is built
(``python -m xedm.ahead build``, run by ``setup.py``), in ``xedm/_precompiled/``:

* **portable**: compiled for the ``x86-64-v4`` (AVX-512) and ``x86-64-v3`` (AVX2, FMA: Intel
  since 2013, AMD since 2015) baselines, not for the build machine's CPU; the best one whose
  every feature the CPU has serves (:func:`host_supports`);
* **checked like numba's own cache**: one index per function, valid only for the same numba
  version, Python version and source file (a hash of its bytes), and the same bytecode; a
  kernel whose entry does not match (another numba, an edited file, a signature not shipped) is
  compiled as before and cached in the user's directory, which is looked up first;
* **read-only**: nothing is ever written there after the build;
* **optional**: ``XEDM_PRECOMPILED=0`` ignores them (every kernel is then compiled for this
  very CPU on first use, as without them).

:class:`XedmFunctionCache` is the cache of every ``@njit(cache=True)`` kernel defined in xedm
(through :func:`xedm.kernels._numba.njit`): the user's cache first, then the shipped one.

A first call that has to compile for more than :data:`NOTICE_AFTER` seconds prints one line
to stderr, once per process (:func:`_Notice`), saying what happens and how to avoid it.
"""

from __future__ import annotations

import json
import os
import sys
import threading

from numba.core import caching, event

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: where a wheel (or an in-place build) keeps its precompiled kernels (``XEDM_PRECOMPILED_DIR``
#: names another: tests, or a site-wide build)
SHIP_DIR = os.environ.get("XEDM_PRECOMPILED_DIR") or os.path.join(_PACKAGE_DIR, "_precompiled")
_V3 = ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "popcnt", "sse4.2", "xsave",
       "cx16", "sahf")
#: the portable targets of the shipped object code, per machine, best first: (LLVM CPU name,
#: features string given to LLVM, the host features it needs (llvmlite's names)).  x86-64-v4
#: (AVX-512) serves where the CPU has it (S-map's Gram sums run ~15 % faster than on v3),
#: x86-64-v3 (AVX2, FMA) elsewhere; each is a folder of SHIP_DIR with its own manifest.json
TARGETS = {
    "x86_64": (("x86-64-v4", "", _V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq",
                                         "avx512vl")),
               ("x86-64-v3", "", _V3)),
}
#: a build writes its cache here (set by ``xedm.ahead.build`` in its workers only)
BUILD_ENV = "XEDM_SHIP_BUILD"
#: ``XEDM_PRECOMPILED=0``: ignore the shipped kernels (compile every kernel for this CPU)
OFF_ENV = "XEDM_PRECOMPILED"
#: the Python of this process, as manifests record it
PYTHON = "{}.{}".format(*sys.version_info[:2])
#: seconds of compiling before the one-line notice
NOTICE_AFTER = 2.0
_state: dict = {}


def _machine() -> str:
    import platform

    m = platform.machine().lower()
    return "x86_64" if m in ("x86_64", "amd64") else m


def targets() -> tuple:
    """This machine's shipped targets, best first (empty where none is defined)."""
    return TARGETS.get(_machine(), ())


def host_targets() -> list:
    """The targets this CPU can run, best first."""
    return [t for t in targets() if host_supports(t[2])]


def target() -> tuple[str, str, tuple] | None:
    """The target whose shipped kernels serve this process (:func:`usable`), or None."""
    usable()
    return _state.get("target")


def host_supports(needed) -> bool:
    """Whether this CPU has every feature in ``needed`` (llvmlite's names)."""
    try:
        import llvmlite.binding as ll

        have = ll.get_host_cpu_features()
    except Exception:  # noqa: BLE001  (no feature list: assume not)
        return False
    return all(have.get(f, False) for f in needed)


def manifest(name: str) -> dict | None:
    """The manifest of target ``name``'s shipped build, or None if none ships."""
    try:
        with open(os.path.join(SHIP_DIR, name, "manifest.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _why_not(tgt) -> str:
    import numba

    man = manifest(tgt[0])
    if man is None:
        return f"none ship with this installation ({SHIP_DIR} has no {tgt[0]} build)"
    if man.get("numba") != numba.__version__:
        return f"they are built for numba {man.get('numba')}, this is numba {numba.__version__}"
    if man.get("python") != PYTHON:
        return f"they are built for Python {man.get('python')}"
    return ""


def usable() -> tuple[bool, str]:
    """Whether shipped kernels can serve this process, and why not; the first target this CPU
    can run whose build matches this numba and Python serves (:func:`target`)."""
    if "usable" not in _state:
        why = ""
        if os.environ.get(BUILD_ENV):
            why = "this process builds them"
        elif os.environ.get(OFF_ENV, "1") == "0":
            why = f"{OFF_ENV}=0"
        elif not targets():
            why = f"none are built for this machine ({_machine()})"
        elif not host_targets():
            why = f"this CPU lacks part of the {targets()[-1][0]} baseline they are built for"
        else:
            reasons = []
            for tgt in host_targets():
                why = _why_not(tgt)
                if not why:
                    _state["target"] = tgt
                    break
                reasons.append(why)
            else:  # the reason of a build that is there, if any
                why = next((r for r in reasons if not r.startswith("none ship")), reasons[0])
        _state["usable"] = (not why, why)
    return _state["usable"]


def build_dir() -> str:
    """The folder of the build that serves this process, else of this CPU's best target."""
    tgt = target() or (host_targets() or list(targets()) or [("none",)])[0]
    return os.path.join(SHIP_DIR, tgt[0])


def magic_tuple() -> tuple:
    """The codegen key numba gives the shipped object code (the build's ``magic_tuple``)."""
    import llvmlite.binding as ll

    name, features, _ = target()
    return (ll.get_process_triple(), name, features)


def relative_dir(py_file: str) -> str | None:
    """``py_file``'s folder relative to the package (``kernels/knn``), or None if outside."""
    path = os.path.abspath(py_file)
    if os.path.commonpath([path, _PACKAGE_DIR]) != _PACKAGE_DIR:
        return None
    return os.path.relpath(os.path.dirname(path), _PACKAGE_DIR)


class XedmFunctionCache(caching.FunctionCache):
    """numba's per-function cache (the user's directory), then the shipped one, read-only."""

    def __init__(self, py_func):
        super().__init__(py_func)
        self._shipped = None
        ok, _ = usable()
        rel = relative_dir(self._impl.locator._py_file) if ok else None
        if rel is not None:
            self._shipped = caching.IndexDataCacheFile(
                cache_path=os.path.join(SHIP_DIR, target()[0], rel),
                filename_base=self._impl.filename_base,
                source_stamp=self._impl.locator.get_source_stamp())

    def _load_overload(self, sig, target_context):
        data = super()._load_overload(sig, target_context)
        if data is not None or self._shipped is None or not self._enabled:
            return data
        own = self._index_key(sig, target_context.codegen())
        data = self._shipped.load((own[0], magic_tuple(), own[2]))
        if data is not None:
            data = self._impl.rebuild(target_context, data)
            _state["hits"] = _state.get("hits", 0) + 1
        return data


class _Notice(event.Listener):
    """One line on stderr, once per process, when a first call compiles for more than
    NOTICE_AFTER seconds (the outermost compile of an xedm kernel; cache loads do not count)."""

    def __init__(self, cache_dir):
        self._local = threading.local()
        self._said = False
        self._cache_dir = cache_dir

    def on_start(self, ev):
        disp = (ev.data or {}).get("dispatcher")
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth or self._said or disp is None or not _is_xedm(disp):
            return
        self._local.timer = threading.Timer(NOTICE_AFTER, self._say, (disp,))
        self._local.timer.daemon = True
        self._local.timer.start()

    def on_end(self, ev):
        self._local.depth = max(getattr(self._local, "depth", 1) - 1, 0)
        if self._local.depth == 0 and getattr(self._local, "timer", None) is not None:
            self._local.timer.cancel()
            self._local.timer = None

    def _say(self, disp):
        if self._said or os.environ.get("XEDM_COMPILE_NOTICE", "1") == "0":
            return
        self._said = True
        ok, why = usable()
        cache_dir = self._cache_dir()
        sys.stderr.write(
            f"xedm: compiling {disp.py_func.__name__} and the kernels it needs for their first "
            f"use (once per machine: they are cached in {cache_dir}"
            + ("" if ok else f"; no precompiled kernels are used: {why}")
            + "); `xedm warmup --backend cpu` compiles them all ahead.\n")
        sys.stderr.flush()


def _is_xedm(disp) -> bool:
    file = getattr(getattr(disp, "py_func", None), "__code__", None)
    return file is not None and relative_dir(file.co_filename) is not None


def install_notice(cache_dir) -> None:
    """Register the notice (``cache_dir()``: where compiled kernels are cached now)."""
    if "notice" not in _state:
        _state["notice"] = _Notice(cache_dir)
        event.register("numba:compile", _state["notice"])


def silence_notice() -> None:
    """No notice in this process from now on (``xedm.warmup`` says what it compiles)."""
    if "notice" in _state:
        _state["notice"]._said = True
