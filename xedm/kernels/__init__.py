"""Kernel registry: one name, one signature, one implementation per device.

``get_kernel("knn_sweep", "cpu")`` returns the numba kernel; ``get_kernel(name, "gpu")`` the
CuPy twin.  Modules are imported lazily so that ``import xedm`` never pulls numba-compiled code
or CuPy.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

# name -> {backend: "module:function"}
_REGISTRY: dict[str, dict[str, str]] = {}
_LOADED: dict[tuple[str, str], Callable[..., Any]] = {}  # imported kernels, by (name, backend)
_log = logging.getLogger("xedm")


def register(name: str, backend: str, target: str) -> None:
    """Register ``target`` ("module:function", relative to xedm.kernels) for (name, backend)."""
    _REGISTRY.setdefault(name, {})[backend] = target
    _LOADED.pop((name, backend), None)


def available(name: str) -> list[str]:
    return sorted(_REGISTRY.get(name, {}))


def get_kernel(name: str, backend: str) -> Callable[..., Any]:
    kernel = _LOADED.get((name, backend))
    if kernel is not None:
        return kernel
    try:
        target = _REGISTRY[name][backend]
    except KeyError:
        raise ValueError(
            f"no {backend!r} kernel named {name!r}; available backends: {available(name)}"
        ) from None
    module, func = target.split(":")
    kernel = getattr(importlib.import_module(f"xedm.kernels.{module}"), func)
    if backend == "cpu":
        from ._numba import serialized

        kernel = serialized(kernel)  # one call at a time only under numba's workqueue layer
    _LOADED[(name, backend)] = kernel
    return kernel


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


# backend="auto" takes the GPU for EDM work of at least this many (prediction x library
# point x column) pairs, one series of L = 4,096: there simplex took 3.9 ms on an H100
# against 8.7 ms on its 16 cores (an earlier run, scan kernel), and below it every
# call takes milliseconds either way while a kernel's first compilation (NVRTC, about a
# second, then cached on disk by CuPy) would dominate
GPU_MIN_WORK = 2**24
# GPU twins that "auto" never picks because they measured slower than the CPU kernels;
# backend="gpu" still runs them.  None today: S-map's twin was one (one thread per
# least-squares problem, 7.3 s on an H100 against 2.4 s on its 16 cores at L = 10,000,
# E = 20) until its tall-skinny QR solver (gpu_smap_qr); at GPU_MIN_WORK (L = 4,096, Lorenz-63
# x, theta = 2) it took 6.2 ms against 30 ms at E = 3 and 25 ms against 0.53 s at E = 20
AUTO_CPU_ONLY: frozenset[str] = frozenset()


def resolve_backend(backend: str | None, kernels: list[str] | tuple[str, ...] = (),
                    work: int | None = None) -> str:
    """Turn ``"auto"`` into a concrete backend.

    Rule: "gpu" when every kernel in ``kernels`` has a GPU twin, none of them is in
    ``AUTO_CPU_ONLY`` (twins measured slower than the CPU), CuPy sees a device and the
    problem is large enough to pay (``work``, the number of (prediction, library point,
    column) pairs, at least ``GPU_MIN_WORK``; no ``work`` given: any size), else "cpu".  The
    choice is logged (logger "xedm", debug) and recorded by the callers in
    ``attrs["backend"]``.  An explicit "gpu" without a device or without the kernels is a
    clear error naming the ``gpu`` extra.
    """
    from ..options import get_option

    backend = get_option("backend") if backend is None else backend
    if backend not in ("auto", "cpu", "gpu"):
        raise ValueError(f"backend={backend!r} is invalid; choose 'auto', 'cpu' or 'gpu'")
    has_gpu_kernels = all("gpu" in _REGISTRY.get(k, {}) for k in kernels)
    if backend == "auto":
        large = work is None or work >= GPU_MIN_WORK
        slow = any(k in AUTO_CPU_ONLY for k in kernels)
        pick = "gpu" if has_gpu_kernels and large and not slow and gpu_available() else "cpu"
        _log.debug("backend='auto' -> %r (GPU kernels: %s, work %s, GPU_MIN_WORK %d)", pick,
                   has_gpu_kernels, work, GPU_MIN_WORK)
        return pick
    if backend == "gpu":
        if not has_gpu_kernels:
            missing = [k for k in kernels if "gpu" not in _REGISTRY.get(k, {})]
            raise ValueError(
                f"backend='gpu' is not available for this function yet (no GPU kernel for "
                f"{missing}); use backend='cpu'"
            )
        if not gpu_available():
            raise ValueError(
                "backend='gpu' needs CuPy and an NVIDIA GPU: install the gpu extra with "
                'pip install "xedm[gpu]" (CUDA 12; on CUDA 13: pip install "xedm[gpu-cuda13]"), '
                "or use backend='cpu'"
            )
    return backend


# EDM kernels
register("knn_sweep", "cpu", "cpu_knn:knn_sweep")
register("knn_single", "cpu", "cpu_knn:knn_single")
register("simplex_predict", "cpu", "cpu_predict:simplex_predict")
register("simplex_sweep", "cpu", "cpu_predict:simplex_sweep")
register("smap_predict", "cpu", "cpu_smap:smap_predict")
register("sorted_table", "cpu", "cpu_ccm:sorted_table")
register("floyd_members", "cpu", "cpu_ccm:floyd_members")
register("ccm_skill", "cpu", "cpu_ccm:ccm_skill")
register("xmap_skill", "cpu", "cpu_xmap:xmap_skill")
register("xmap_skill_groups", "cpu", "cpu_xmap:xmap_skill_groups")
register("to_device", "cpu", "cpu_xmap:to_device")
register("skill_rows", "cpu", "cpu_skill:skill_rows")
# shared by the index-based neighbour methods (xedm/neighbors/)
register("gather_states", "cpu", "cpu_ann:gather_states")
register("knn_rerank", "cpu", "cpu_ann:knn_rerank")
register("knn_sorted1d", "cpu", "cpu_ann:knn_sorted1d")
# their GPU twins (CuPy; tests/test_edm_gpu.py): backend="auto" picks the GPU for a function
# only when every kernel it needs has one
register("knn_sweep", "gpu", "gpu_knn:knn_sweep")
register("knn_single", "gpu", "gpu_knn:knn_single")
register("simplex_predict", "gpu", "gpu_predict:simplex_predict")
register("simplex_sweep", "gpu", "gpu_predict:simplex_sweep")
register("skill_rows", "gpu", "gpu_predict:skill_rows")
register("xmap_skill", "gpu", "gpu_xmap:xmap_skill")
register("xmap_skill_groups", "gpu", "gpu_xmap:xmap_skill_groups")
register("xmap_choose_tables", "gpu", "gpu_xmap:choose_tables")
register("to_device", "gpu", "gpu_xmap:to_device")
register("knn_device", "gpu", "gpu_knn:knn_device")
register("sorted_table", "gpu", "gpu_ccm:sorted_table")
register("ccm_skill", "gpu", "gpu_ccm:ccm_skill")
register("smap_predict", "gpu", "gpu_smap:smap_predict")

# RQA kernels (xedm/kernels/cpu_rqa.py, gpu_rqa.py) are registered below.
register("rqa_line_histograms", "cpu", "cpu_rqa:line_histograms")
register("rqa_pair_distances", "cpu", "cpu_rqa:pair_distances")
register("rqa_upper_distances", "cpu", "cpu_rqa:upper_distances")
register("rqa_line_histograms", "gpu", "gpu_rqa:line_histograms")

# significance tests (xedm/stats)
register("twin_walk", "cpu", "cpu_stats:twin_walk")
register("phase_spectrum", "cpu", "cpu_stats:phase_spectrum")
