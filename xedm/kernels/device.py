"""The GPU this process sees: its count, name and memory (CuPy, imported on call)."""

from __future__ import annotations

import threading


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
    elif (isinstance(a, np.ndarray) and a.nbytes >= STAGED_MIN_BYTES and a.flags.c_contiguous
          and a.dtype.kind in "biuf"):
        a = _staged(a)
    a = cupy.ascontiguousarray(cupy.asarray(a))
    return a if dtype is None else a.astype(dtype, copy=False)


STAGED_MIN_BYTES = 16 * 2**20  # host arrays from this size travel through _staged
STAGED_CHUNK = 16 * 2**20  # bytes per pinned staging buffer (two per device)
_STAGING: dict = {}
_STAGING_LOCK = threading.Lock()  # the first call on a device makes its buffers once


def _staged(a):
    """A large C-contiguous NumPy array ``a`` as a new CuPy array, through two pinned
    buffers per device: threads copy one chunk of ``a`` into one buffer while the other
    buffer's chunk travels to the device.  CuPy's own path copies the whole array into
    pinned memory on one thread first: 18 ms for 80 MB on an H200's host, most of the
    host's time in an xmap of N = 1,000 series of L = 10,000."""
    import cupy
    import numpy as np

    st = _staging()
    out = cupy.empty(a.shape, a.dtype)
    src = a.reshape(-1).view(np.uint8)
    n = src.size
    stream = cupy.cuda.get_current_stream()
    with st["lock"]:
        for i, off in enumerate(range(0, n, st["chunk"])):
            j = i % 2
            if st["events"][j] is not None:  # the buffer's last chunk has left it
                st["events"][j].synchronize()
            size = min(st["chunk"], n - off)
            _copy(st, np.ndarray((size,), np.uint8, buffer=st["bufs"][j]),
                  src[off:off + size])
            cupy.cuda.runtime.memcpyAsync(out.data.ptr + off, st["bufs"][j].ptr, size,
                                          cupy.cuda.runtime.memcpyHostToDevice, stream.ptr)
            ev = cupy.cuda.Event(block=False, disable_timing=True)
            ev.record(stream)
            st["events"][j] = ev
    return out


def download(a, out) -> None:
    """The C-contiguous CuPy array ``a`` into the C-contiguous NumPy array ``out`` of its
    size, through the pinned buffers of :func:`_staged`: each chunk copied there by the
    device, then into ``out`` by threads while the next chunk comes (a pageable copy of 8
    MB took 0.5-2.8 ms on an H200's host, the pages of a new ``out`` touched one by one)."""
    import cupy
    import numpy as np

    if a.nbytes != out.nbytes or a.dtype != out.dtype or not (
            a.flags.c_contiguous and out.flags.c_contiguous):
        raise ValueError(f"download: a {a.dtype} {a.shape} into out {out.dtype} {out.shape}, "
                         "both C-contiguous and of one size")
    st = _staging()
    dst = out.reshape(-1).view(np.uint8)
    n = dst.size
    stream = cupy.cuda.get_current_stream()
    offs = list(range(0, n, st["chunk"]))
    with st["lock"]:
        for ev in st["events"]:  # an upload's last chunks have left the buffers
            if ev is not None:
                ev.synchronize()
        st["events"] = [None, None]
        pending = {}

        def fetch(i):
            j, off = i % 2, offs[i]
            size = min(st["chunk"], n - off)
            cupy.cuda.runtime.memcpyAsync(st["bufs"][j].ptr, a.data.ptr + off, size,
                                          cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr)
            ev = cupy.cuda.Event(block=False, disable_timing=True)
            ev.record(stream)
            pending[j] = (off, size, ev)

        try:
            for i in range(min(2, len(offs))):
                fetch(i)
            for i in range(len(offs)):
                off, size, ev = pending[i % 2]
                ev.synchronize()
                _copy(st, dst[off:off + size],
                      np.ndarray((size,), np.uint8, buffer=st["bufs"][i % 2]))
                if i + 2 < len(offs):
                    fetch(i + 2)
        finally:  # no copy into a buffer outlives this call (an error above included)
            for _, _, ev in pending.values():
                ev.synchronize()


def prefault(out) -> None:
    """Every page of the C-contiguous NumPy array ``out`` touched (zeros written, by the
    staging threads): done while the device computes what comes back into ``out``, the
    copy back then finds its pages in place."""
    import numpy as np

    st = _staging()
    flat = out.reshape(-1).view(np.uint8)
    step = max(2 << 20, -(-flat.size // st["workers"]))
    list(st["pool"].map(lambda c: flat[c:c + step].fill(0), range(0, flat.size, step)))


def _staging() -> dict:
    """The current device's two pinned buffers, their last copies' events, a lock and the
    threads that copy on the host."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    import cupy

    dev = cupy.cuda.Device().id
    st = _STAGING.get(dev)
    if st is not None:
        return st
    with _STAGING_LOCK:
        st = _STAGING.get(dev)
        if st is not None:
            return st
        workers = max(1, min(8, os.cpu_count() or 1))
        st = _STAGING[dev] = {
            "bufs": [cupy.cuda.alloc_pinned_memory(STAGED_CHUNK) for _ in range(2)],
            "events": [None, None], "lock": threading.Lock(),
            "pool": ThreadPoolExecutor(workers, thread_name_prefix="xedm-copy"),
            "workers": workers, "chunk": STAGED_CHUNK}
    return st


def _copy(st, dst, src) -> None:
    """``src`` into ``dst`` (1-d uint8 arrays of one size) by the staging threads."""
    import numpy as np

    size = dst.size
    step = max(2 << 20, -(-size // st["workers"]))
    parts = [(dst[c:c + step], src[c:c + step]) for c in range(0, size, step)]
    if len(parts) == 1:
        np.copyto(*parts[0])
    else:
        list(st["pool"].map(lambda p: np.copyto(*p), parts))


def array_module(a):
    """numpy for a NumPy array, cupy for a CuPy one (imported only then): for code above
    the kernels that runs the same NumPy calls on either (``xedm.core.resident``)."""
    import numpy as np

    if isinstance(a, np.ndarray):
        return np
    import cupy

    return cupy
