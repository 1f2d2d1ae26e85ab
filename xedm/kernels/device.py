"""The GPU this process sees: its count, name and memory (CuPy, imported on call)."""

from __future__ import annotations


def device_count() -> int:
    """CUDA devices this process sees (0 without CuPy or a driver)."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001  (no CuPy, no driver, no device: none)
        return 0


def memory_info() -> tuple[int, int] | None:
    """(free, total) bytes of the current device, or None without one."""
    if not device_count():
        return None
    import cupy

    free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


def device_name(i: int = 0) -> str | None:
    """The name of device ``i`` (e.g. "NVIDIA H100 80GB HBM3"), or None without it."""
    if device_count() <= i:
        return None
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(i)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)
