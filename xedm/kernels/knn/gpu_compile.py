"""The GPU kernels' compiled CUDA modules, one per key (CuPy, imported on call)."""

from __future__ import annotations

_CACHE: dict = {}


def _module(key, source):
    """``source`` compiled once per ``key`` (no fused multiply-adds: the sums round as the
    CPU's do)."""
    mod = _CACHE.get(key)
    if mod is None:
        import cupy as cp

        mod = cp.RawModule(code=source, options=("--fmad=false", "--std=c++17"))
        _CACHE[key] = mod
    return mod


_LIMITS: dict = {}


def device_limits() -> tuple[int, int]:
    """(opt-in shared memory per block in bytes, multiprocessors) of the current device."""
    import cupy as cp

    dev = cp.cuda.Device().id
    if dev not in _LIMITS:
        props = cp.cuda.runtime.getDeviceProperties(dev)
        _LIMITS[dev] = (int(props.get("sharedMemPerBlockOptin", props["sharedMemPerBlock"])),
                        int(props["multiProcessorCount"]))
    return _LIMITS[dev]
