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


def upload(a, dtype=None):
    """``a`` as a C-contiguous CuPy array (of ``dtype`` when given).  A NumPy view broadcast
    along some axes (stride 0: one row repeated, as the point sets of NaN-free series in
    :mod:`xedm.core.resident`) travels as that one row and is repeated on the device: no
    host copy of the whole, no transfer of it."""
    import cupy
    import numpy as np

    if isinstance(a, np.ndarray) and a.size and 0 in a.strides:
        one = tuple(slice(0, 1) if s == 0 else slice(None) for s in a.strides)
        a = cupy.broadcast_to(cupy.asarray(np.ascontiguousarray(a[one])), a.shape)
    a = cupy.ascontiguousarray(cupy.asarray(a))
    return a if dtype is None else a.astype(dtype, copy=False)


def array_module(a):
    """numpy for a NumPy array, cupy for a CuPy one (imported only then): for code above
    the kernels that runs the same NumPy calls on either (``xedm.core.resident``)."""
    import numpy as np

    if isinstance(a, np.ndarray):
        return np
    import cupy

    return cupy
