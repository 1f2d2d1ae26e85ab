"""Compile the kernels a session will use, once, so that a later process starts fast.

xedm's GPU kernels are CUDA C++ compiled at run time by NVRTC through CuPy (``RawModule``),
one module per **variant**: the kNN kernels are generated for each tuple of embedding
dimensions and neighbour counts they serve (``(E_list, k_list, columns)``, one for the
"scan" path of small problems and one for the "sorted" path of rows x series >= 4,096), the
S-map solver for each number of unknowns (E + 1), ivf's scan for each (k, E); the prediction,
cross-map and merge kernels are one module each.  CuPy caches every compiled module on disk
(``$CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``), keyed by its source and options, so
only the first process on a machine pays the compilation (about a second per variant); the
CPU's numba kernels are cached on disk the same way (:mod:`xedm.kernels._numba`).

:func:`warmup` runs the public functions once on small synthetic data, at both kNN paths and
every E a session may use, which fills those caches; it returns the variants it compiled.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np

__all__ = ["warmup"]

FUNCTIONS = ("simplex", "embed_dimension", "smap", "ccm", "xmap", "ivf", "causal_network")
#: series lengths: on the GPU one below the sorted kNN kernel's threshold (4,096 rows) and
#: one above; on the CPU one under brute force and one on the kd-tree path of
#: ``neighbors="auto"`` (prediction x library x E > 2**29, xedm.neighbors.auto)
GPU_LENGTHS = (600, 4800)
CPU_LENGTHS = (300, 8000)


def _series(n: int, T: int) -> np.ndarray:
    """(n, T) deterministic, irregular series (no ties): sums of incommensurate sines and
    noise."""
    t = np.arange(T)
    rng = np.random.default_rng(0)
    f = rng.uniform(0.05, 0.5, (n, 3))
    return (np.sin(f[:, :1] * t) + 0.6 * np.sin(f[:, 1:2] * t + 1.0)
            + 0.3 * np.sin(f[:, 2:] * t + 2.0) + 0.05 * rng.standard_normal((n, T)))


def _variants() -> list[str]:
    """The compiled GPU modules held by the loaded kernel modules (their ``*CACHE*`` dicts)."""
    out = []
    for name, mod in sorted(sys.modules.items()):
        if not name.startswith("xedm.kernels.") or ".gpu" not in name or mod is None:
            continue
        for attr, val in sorted(vars(mod).items()):
            if "CACHE" in attr and isinstance(val, dict):
                out += [f"{name.removeprefix('xedm.kernels.')}.{attr}: {k!r}" for k in val]
    return sorted(set(out))


def _cache_dir(backend: str) -> str:
    if backend == "gpu":
        return os.environ.get("CUPY_CACHE_DIR",
                              os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache"))
    from .kernels._numba import kernel_cache_dir

    return kernel_cache_dir()


def warmup(backend: str = "gpu", *, E_max: int = 10, E=None, knn: int | None = None,
           tau: int = 1, functions=FUNCTIONS, lengths=None, progress: bool = False,
           session: bool | None = None) -> dict:
    """Compile the kernels a session will use on small inputs (a cold start paid once).

    On the GPU every variant is compiled for the given parameters: simplex, S-map, CCM and ivf
    at each E of ``E`` (default 1..``E_max``), the choice of E (``embed_dimension``, and
    ``xmap`` with E chosen) over 1..``E_max``, each at two lengths (the kNN kernel's scan and
    sorted paths), and what a map of many long series adds at each E (the kNN tables in the key
    order, the L2-tiled lookups at every block size).  CuPy keeps the compiled modules on disk
    (``$CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``), so a later process loads them
    instead of compiling: run this once per machine (or per image build), e.g. ``xedm warmup
    --backend gpu``.  A variant a session uses that the warm-up did not compile (another
    ``knn``, ``tau`` or ``E_max``, or an xmap whose targets use a set of E other than one E or
    all of 1..E_max) is compiled on first use, as without the warm-up.  On the CPU the numba
    kernels (specialised by types, not by E) are compiled and cached once, at the smallest and
    largest E (E = 1 takes its own sorting path) and at two lengths (brute force; the kd-tree
    path of ``neighbors="auto"``), and then what a CPU session meets first
    (``xedm.ahead.STEPS``: the quick start, ``xedm demo``, the sweeps, RQA, surrogates).
    On the CPU, kernels compiled ahead that ship with the package are loaded instead of
    compiled where they serve (``precompiled`` in the result says whether they do and why not).

    Parameters
    ----------
    backend : {"gpu", "cpu"}, default "gpu"
        Which kernels; ``"gpu"`` needs CuPy and a device (a ValueError otherwise).
    E_max : int, default 10
        Largest E of the choice of E (``embed_dimension``, ``xmap`` with E chosen).
    E : int or sequence of int, optional
        The embedding dimensions used with a fixed E (default 1..E_max).
    knn, tau : int
        As in the functions (default knn: E + 1; all points for S-map).
    functions : sequence of str
        Any of ``"simplex"``, ``"embed_dimension"``, ``"smap"``, ``"ccm"``, ``"xmap"``,
        ``"ivf"`` (GPU only; skipped on the CPU), ``"causal_network"`` (on the GPU also
        every variant of the predictive conditioning's kernels for E up to ``E_max`` and 8
        drivers: one per number of own coordinates and per size of the local fit).
    lengths : sequence of int, optional
        Series lengths to run at (default ``GPU_LENGTHS`` or ``CPU_LENGTHS``: both kNN
        paths).
    progress : bool, default False
        A progress bar over the steps (the function or session step at work beside it).
    session : bool, optional
        On the CPU, also run ``xedm.ahead.STEPS`` (default: when ``functions`` and
        ``lengths`` are left at their defaults).

    Returns
    -------
    dict
        ``backend``, ``seconds`` (per function or session step), ``total_seconds``,
        ``variants`` (the GPU modules compiled or loaded in this process, by cache and key),
        ``cache_dir`` (where the compiled kernels are cached), on the CPU ``precompiled``
        (``used``, ``why_not``, ``dir``, ``hits``: kernels loaded from it).

    Examples
    --------
    >>> import xedm
    >>> info = xedm.warmup("cpu", E_max=2, functions=["simplex"], lengths=[300])
    >>> sorted(info["seconds"]), info["backend"]
    (['simplex'], 'cpu')
    """
    from . import api
    from .kernels import resolve_backend

    if backend not in ("cpu", "gpu"):
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    resolve_backend(backend)  # "gpu" without CuPy or a device: the clear error, here
    unknown = sorted(set(functions) - set(FUNCTIONS))
    if unknown:
        raise ValueError(f"functions: unknown {unknown}; choose among {list(FUNCTIONS)}")
    E_max = int(E_max)
    if E_max < 1:
        raise ValueError(f"E_max must be >= 1, got {E_max}")
    gpu = backend == "gpu"
    Es = list(range(1, E_max + 1)) if E is None else sorted({int(e) for e in np.atleast_1d(E)})
    if any(e < 1 for e in Es):
        raise ValueError(f"E must be >= 1, got {Es}")
    if not gpu:  # numba compiles per argument types, not per E: E = 1 and the largest
        Es = sorted({Es[0], Es[-1]})
    if session is None:
        session = tuple(functions) == FUNCTIONS and lengths is None
    if lengths is None:
        lengths = GPU_LENGTHS if gpu else CPU_LENGTHS
    lengths = [int(T) for T in lengths]
    if any(T < 50 for T in lengths):
        raise ValueError(f"lengths must be >= 50 time points each, got {lengths}")
    fn = {name: api.method(name).function() for name in
          ("simplex", "embed_dimension", "smap", "ccm", "xmap", "causal_network")}
    kw = {"backend": backend}
    tasks = [(name, lambda name=name: _run(name, fn, Es, lengths, E_max, tau, knn, kw))
             for name in functions if gpu or name != "ivf"]
    if not gpu and session:  # what a CPU session meets first (xedm.ahead.STEPS)
        from .ahead import STEPS, run_step

        tasks += [(f"session:{s}", lambda s=s: run_step(s)) for s in STEPS]
    if not gpu:
        from .kernels import _shipped

        _shipped.silence_notice()
    seconds, errors = {}, {}
    t_all = time.perf_counter()
    bar = None
    if progress:
        from . import _progress

        bar = _progress.bar(total=len(tasks), desc=f"warmup {backend}", unit="step",
                            leave=True)
    for name, task in tasks:
        if bar is not None:
            bar.set_postfix_str(name)
        t = time.perf_counter()
        try:
            task()
        except Exception as err:  # noqa: BLE001  (one function's failure: said, not fatal)
            errors[name] = f"{type(err).__name__}: {err}"
            warnings.warn(f"warmup: {name} failed ({errors[name]}); its kernels will "
                          "compile on first use", RuntimeWarning, stacklevel=2)
        seconds[name] = round(time.perf_counter() - t, 3)
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    out = {"backend": backend, "seconds": seconds,
           "total_seconds": round(time.perf_counter() - t_all, 3),
           "variants": _variants() if gpu else [], "cache_dir": _cache_dir(backend)}
    if not gpu:
        from .kernels import _shipped

        ok, why = _shipped.usable()
        out["precompiled"] = {"used": ok, "why_not": why, "dir": _shipped.build_dir(),
                              "hits": _shipped._state.get("hits", 0)}
    if errors:
        out["errors"] = errors
    return out


def _run(name, fn, Es, lengths, E_max, tau, knn, kw) -> None:
    """One function of :func:`warmup` at every length and E."""
    import xarray as xr

    for T in lengths:
        x = xr.DataArray(_series(1, T)[0], dims="time")
        if name == "simplex":
            for e in Es:
                fn["simplex"](x, E=e, tau=tau, knn=knn, **kw)
        elif name == "ivf":
            for e in Es:
                fn["simplex"](x, E=e, tau=tau, knn=knn, neighbors="ivf", **kw)
        elif name == "embed_dimension":
            fn["embed_dimension"](x, E_max=E_max, tau=tau, knn=knn, **kw)
        elif name == "smap" and T == lengths[0]:  # its kernel is the same at any size
            for e in Es:
                fn["smap"](x, E=e, theta=2.0, tau=tau, **kw)
        elif name == "ccm":
            pair = xr.DataArray(_series(2, T), dims=("series", "time"))
            for e in Es:
                fn["ccm"](pair, E=e, lib_sizes=[T // 2], samples=2, seed=0, tau=tau,
                          knn=knn, progress=False, **kw)
        elif name == "causal_network" and T == lengths[0]:
            X = xr.DataArray(_series(4, T), dims=("series", "time"))
            fn["causal_network"](X, E_max=E_max, tau=tau, knn=knn, surrogates=9, seed=0,
                                 progress=False, **kw)
            if kw["backend"] == "gpu":
                from .core.predictive import DEFAULTS, NEIGHBORHOOD
                from .kernels import get_kernel

                # the default fit's variants; the wider fits' (a noisy series' second
                # selection) compile on first use: each holds up to 99 neighbours, and
                # compiling all of them here is not measured yet
                extra, width = NEIGHBORHOOD
                get_kernel("conditional_compile", "gpu")(E_max, DEFAULTS["max_drivers"],
                                                         M=width, extra=extra)
        elif name == "xmap":
            X = xr.DataArray(_series(2, T), dims=("series", "time"))
            fn["xmap"](X, E_max=E_max, tau=tau, knn=knn, progress=False, **kw)
            for e in Es:
                fn["xmap"](X, E=e, tau=tau, knn=knn, progress=False, **kw)
            if kw["backend"] == "gpu" and T == lengths[-1]:
                # what maps of many long series use and two series do not reach: the kNN
                # tables in key order, the L2-tiled lookups at every block size
                from .kernels import get_kernel

                get_kernel("xmap_compile", "gpu")(Es, knn)
