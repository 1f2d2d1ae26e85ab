"""The multi-GPU layout of the distributed xmap, run on CPU: block sizes from device memory,
one worker process per GPU each seeing only its own device (xedm.distributed.gpu_cluster's
plain-distributed path), and the blocked map on it equal to the in-memory one."""

import numpy as np
import pytest

import xedm
from xedm import distributed as xd
from xedm.kernels import gpu_available

dask = pytest.importorskip("dask")


def test_gpu_block_sizes():
    # 4 GPUs of 80 GB at the whole-brain length: every target in one block, 2 blocks per GPU
    assert xd.block_sizes(20_000, 1450, memory=80e9, workers=4, backend="gpu") == (2500, 20000)
    # as few blocks as fit (3,548 libraries at most here), the same number on every GPU
    for w, blocks in [(1, 6), (2, 6), (3, 6), (4, 8)]:
        lib, _ = xd.block_sizes(20_000, 1450, memory=80e9, workers=w, backend="gpu")
        assert -(-20_000 // lib) == blocks and lib <= 3548
    assert xd.block_sizes(20_000, 1450, memory=80e9, workers=4) == (625, 20000)  # CPU rule
    # a small device: the target block is what fits in half of a quarter of its memory
    lib, tgt = xd.block_sizes(20_000, 1450, memory=1e9, workers=1, backend="gpu")
    assert tgt == int(0.125e9 // (24 * 1450))
    assert lib * (16 * 10 * 1450 * 12 + 8 * 1450 + 8 * tgt) <= 0.125e9
    # no GPU anywhere (this machine): the default device memory, not the host's
    if xd.device_memory() is None:
        assert xd.block_sizes(20_000, 1450, workers=4, backend="gpu") == xd.block_sizes(
            20_000, 1450, workers=4, backend="gpu", memory=xd.DEFAULT_GPU_MEMORY)


def test_gpu_cluster_without_devices_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    if xd._visible_devices():
        pytest.skip("a GPU is visible")
    with pytest.raises(ValueError, match="no GPU"):
        xd.gpu_cluster(dask_cuda=False)
    with pytest.raises(ValueError, match="n_workers=3"):
        xd.gpu_cluster(3, devices=[0, 1], dask_cuda=False)


def test_one_device_per_worker():
    """The plain cluster's workers: one process per device, each seeing only its own."""
    pytest.importorskip("distributed")
    specs = xd._worker_specs(["3", "5"], 1, "auto")
    assert [w["options"]["env"] for w in specs.values()] == [
        {"CUDA_VISIBLE_DEVICES": "3"}, {"CUDA_VISIBLE_DEVICES": "5"}]
    assert all(w["cls"].__name__ == "Nanny" and w["options"]["nthreads"] == 1
               for w in specs.values())


def test_plain_cluster_shares_the_hosts_memory(monkeypatch):
    """Each worker of the plain cluster may use the host's memory over the workers, not
    Dask's "auto" (a share by threads: 1/64 of a 64-core host for a 1-thread worker)."""
    distributed = pytest.importorskip("distributed")
    from distributed.system import MEMORY_LIMIT

    seen = {}

    class Fake:
        def __init__(self, workers, **kw):
            seen.update(workers)

    monkeypatch.setattr(distributed, "SpecCluster", Fake)
    xd.gpu_cluster(devices=["0", "1", "2"], dask_cuda=False)
    assert [w["options"]["memory_limit"] for w in seen.values()] == [MEMORY_LIMIT // 3] * 3
    seen.clear()
    xd.gpu_cluster(devices=["0"], dask_cuda=False, memory_limit="2GiB")
    assert [w["options"]["memory_limit"] for w in seen.values()] == ["2GiB"]


def test_gpu_blocks_equal_in_memory():
    """The map laid out for 2 GPU workers (one library block each, every target in one block),
    run on CPU kernels by Dask's threads, equals the in-memory map."""
    x = xedm.datasets.whole_brain(12, 150, n_sources=4, seed=2).x
    ref = x.edm.xmap(E_max=4, backend="cpu", progress=False)
    lib, tgt = xd.block_sizes(12, 150, E_max=4, memory=1e9, workers=2, backend="gpu")
    assert (lib, tgt) == (6, 12)
    with xedm.set_options(xmap_target_block=tgt):
        out = x.chunk({"series": lib}).edm.xmap(E_max=4, backend="cpu", progress=False)
    assert out.rho.data.numblocks[:2] == (2, 1)
    got = out.compute(scheduler="threads")
    np.testing.assert_allclose(got.rho.values, ref.rho.values, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got.E.values, ref.E.values)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU")
@pytest.mark.parametrize("gap", [False, True])
def test_blocked_map_on_the_gpu_equals_the_cpu(gap):
    """The blocked map with backend="gpu" (one target block: every task joins the target
    chunks, NaN-free on the GPU, else on the host; the worker keeps them for its next block)
    equals the in-memory CPU map; a second map of the same chunks with other E uses its own."""
    x = xedm.datasets.whole_brain(40, 300, n_sources=6, seed=4).x.copy()
    if gap:
        x[5, 100:110] = np.nan
    xd.forget_targets()
    lazy = x.chunk({"series": 10}).persist(scheduler="sync")
    with xedm.set_options(xmap_target_block=40):
        got = lazy.edm.xmap(E_max=6, backend="gpu", progress=False).compute(scheduler="sync")
        ref = x.edm.xmap(E_max=6, backend="cpu", progress=False)
        np.testing.assert_array_equal(got.E.values, ref.E.values)
        np.testing.assert_allclose(got.rho.values, ref.rho.values, rtol=0, atol=1e-12)
        E2 = np.arange(40) % 3 + 2
        got = lazy.edm.xmap(E=E2, backend="gpu", progress=False).compute(scheduler="sync")
        ref = x.edm.xmap(E=E2, backend="cpu", progress=False)
        np.testing.assert_allclose(got.rho.values, ref.rho.values, rtol=0, atol=1e-12)
    kept = xd._JOINED["last"][1]
    assert isinstance(kept, np.ndarray) == gap  # NaN-free targets: joined on the GPU
    xd.forget_targets()
