"""Kernel registry: one name, one signature, one implementation per device.

``get_kernel("knn_sweep", "cpu")`` returns the numba kernel; ``get_kernel(name, "gpu")`` the
CuPy twin.  Modules are imported lazily so that ``import xedm`` never pulls numba-compiled code
or CuPy.  The kernels are grouped by algorithm, each subpackage with its CPU and GPU files
and the constants both use: ``knn/`` (exact neighbours; the helpers of the index methods;
ivf's scan), ``predict/`` (simplex, skill), ``smap/``, ``cross/`` (ccm and xmap lookups),
``rqa/``, ``stats/`` (surrogates).  This is the only layer that runs numba or CuPy.
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
    """Register ``target`` ("module:function", the module relative to xedm.kernels, e.g.
    "knn.cpu:knn_sweep") for (name, backend)."""
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
        from ._numba import interruptible, serialized

        # Ctrl-C held back to the end of the call; one call at a time under workqueue only
        kernel = serialized(interruptible(kernel))
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
# E = 20) until its tall-skinny QR solver (smap/gpu.py); at GPU_MIN_WORK (L = 4,096, Lorenz-63
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


# name -> "subpackage.module:function" per backend; kernels are grouped by algorithm:
# knn/ (exact neighbours and the helpers of the index methods), predict/ (simplex, skill),
# smap/, cross/ (ccm and xmap lookups), rqa/, stats/ (surrogates)
register("knn_sweep", "cpu", "knn.cpu:knn_sweep")
register("knn_single", "cpu", "knn.cpu:knn_single")
register("concat_tables", "cpu", "knn.cpu:concat_tables")
register("simplex_predict", "cpu", "predict.cpu:simplex_predict")
register("simplex_predict_var", "cpu", "predict.cpu:simplex_predict_var")
register("simplex_sweep", "cpu", "predict.cpu:simplex_sweep")
register("skill_rows", "cpu", "predict.cpu_skill:skill_rows")
# causal_network's predictive conditioning
register("conditional_state", "cpu", "predict.cpu_conditional:state")
register("rank_stats", "cpu", "predict.cpu_conditional:rank_stats")
register("smap_predict", "cpu", "smap.cpu:smap_predict")
register("smap_grid", "cpu", "smap.cpu_grid:smap_grid")
register("sorted_table", "cpu", "cross.cpu_ccm:sorted_table")
register("floyd_members", "cpu", "cross.cpu_ccm:floyd_members")
register("ccm_skill", "cpu", "cross.cpu_ccm:ccm_skill")
register("xmap_skill", "cpu", "cross.cpu_xmap:xmap_skill")
register("xmap_skill_groups", "cpu", "cross.cpu_xmap:xmap_skill_groups")
register("xmap_key_order", "cpu", "cross.cpu_xmap:key_order")
register("to_device", "cpu", "cross.cpu_xmap:to_device")
# shared by the index-based neighbour methods (xedm/neighbors/)
register("gather_states", "cpu", "knn.cpu_ann:gather_states")
register("knn_rerank", "cpu", "knn.cpu_ann:knn_rerank")
register("knn_sorted1d", "cpu", "knn.cpu_ann:knn_sorted1d")
# their GPU twins (CuPy; tests/test_edm_gpu.py): backend="auto" picks the GPU for a function
# only when every kernel it needs has one
register("knn_sweep", "gpu", "knn.gpu:knn_sweep")
register("knn_single", "gpu", "knn.gpu:knn_single")
register("knn_device", "gpu", "knn.gpu:knn_device")
register("concat_tables", "gpu", "knn.gpu:concat_tables")
register("ivf_scan", "gpu", "knn.gpu_ivf:scan_device")
register("simplex_predict", "gpu", "predict.gpu:simplex_predict")
register("simplex_predict_var", "gpu", "predict.gpu:simplex_predict_var")
register("simplex_sweep", "gpu", "predict.gpu:simplex_sweep")
register("skill_rows", "gpu", "predict.gpu:skill_rows")
register("conditional_state", "gpu", "predict.gpu_conditional:state")
register("conditional_compile", "gpu", "predict.gpu_conditional:compile_variants")
register("smap_predict", "gpu", "smap.gpu:smap_qr")
register("sorted_table", "gpu", "cross.gpu_ccm:sorted_table")
register("ccm_skill", "gpu", "cross.gpu_ccm:ccm_skill")
register("xmap_skill", "gpu", "cross.gpu_xmap:xmap_skill")
register("xmap_skill_groups", "gpu", "cross.gpu_xmap:xmap_skill_groups")
register("xmap_key_order", "gpu", "cross.gpu_xmap:key_order")
register("xmap_compile", "gpu", "cross.gpu_xmap:compile_variants")
register("xmap_choose_tables", "gpu", "cross.gpu_choose:choose_tables")
register("xmap_kept_tables", "gpu", "cross.gpu_choose:KeptTables")
register("to_device", "gpu", "cross.gpu_xmap:to_device")

# RQA
register("rqa_line_histograms", "cpu", "rqa.cpu:line_histograms")
register("rqa_pair_distances", "cpu", "rqa.cpu:pair_distances")
register("rqa_upper_distances", "cpu", "rqa.cpu:upper_distances")
register("rqa_line_histograms", "gpu", "rqa.gpu:line_histograms")
register("rqa_column_extents", "cpu", "rqa.cpu:column_extents")
register("rqa_diagonal_border_runs", "cpu", "rqa.cpu:diagonal_border_runs")
register("rqa_row_kth_distances", "cpu", "rqa.cpu:row_kth_distances")
register("rqa_row_threshold_histograms", "cpu", "rqa.cpu:row_threshold_histograms")
register("rqa_symmetric_blocks", "cpu", "rqa.symmetric_cpu:block_pass")
register("rqa_symmetric_stitch", "cpu", "rqa.symmetric_cpu:stitch")
register("rn_neighbor_sums", "cpu", "rqa.network_cpu:neighbor_sums")
register("rn_adjacency", "cpu", "rqa.network_cpu:adjacency")
register("rn_triangles", "cpu", "rqa.network_cpu:triangles")
register("rn_path_sums", "cpu", "rqa.network_cpu:path_sums")

# significance tests (xedm/stats)
register("twin_walk", "cpu", "stats.cpu:twin_walk")
register("phase_spectrum", "cpu", "stats.cpu:phase_spectrum")
register("phase_spectra", "cpu", "stats.cpu:phase_spectra")
register("cross_estimates", "cpu", "stats.cpu:cross_estimates")  # causal_network (host step)
register("partial_cross_rows", "cpu", "stats.cpu:partial_cross_rows")  # causal_network
# xmap's lookups left where they ran (the device on the GPU), then summarised there against
# the surrogates: only the (library, target) summaries come back to the host
register("xmap_skill_groups_device", "cpu", "cross.cpu_xmap:xmap_skill_groups")
register("xmap_skill_groups_device", "gpu", "cross.gpu_xmap:xmap_skill_groups_device")
register("xmap_null_summary", "cpu", "stats.null:xmap_null_summary")
# causal_network in a large network: the surrogates of each library's screened candidates
register("xmap_pair_skill", "cpu", "cross.cpu_pairs:xmap_pair_skill")
register("xmap_pair_skill", "gpu", "cross.gpu_pairs:xmap_pair_skill")
register("xmap_null_summary", "gpu", "stats.gpu_null:xmap_null_summary")
# causal_network: the lag scan of its cross maps (on the host for either backend)
register("lag_summary", "cpu", "cross.cpu_lags:lag_summary")
register("gather_scaled", "cpu", "cross.cpu_scale:gather_scaled")
register("screen_pick", "cpu", "predict.cpu_screen:screen_pick")
