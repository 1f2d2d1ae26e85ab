"""RQA on the GPU: the CuPy kernels give exactly the CPU histograms (skipped without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from xedm.kernels import gpu_available
from xedm.recurrence.recurrence import NORMS, RecurrenceProblem, line_histograms, thresholds

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU"),
]


def _gpu(prob, eps, norm, tile=None, devices=None):
    from xedm.kernels.rqa.gpu import line_histograms as gpu_hist

    thr = thresholds(eps, norm, prob.nch, prob.matrices.shape[0])
    return gpu_hist(prob, thr, NORMS.index(norm), tile, devices)


def _same(cpu, gpu):
    for key, g in zip(("diagonal", "vertical", "white"), gpu, strict=True):
        np.testing.assert_array_equal(cpu[key], g, err_msg=key)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("kind", ["self", "cross", "joint"])
def test_gpu_equals_cpu_small(norm, kind):
    rng = np.random.default_rng(NORMS.index(norm))
    for trial in range(6):
        n = int(rng.integers(10, 300))
        E, tau = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        x = np.round(rng.normal(size=n), 1)  # ties at eps
        theiler = [0, 1, 5][trial % 3]
        if kind == "self":
            prob = RecurrenceProblem.single(x, E=E, tau=tau, theiler=theiler)
        elif kind == "cross":
            y = np.round(rng.normal(size=int(rng.integers(10, 300))), 1)
            prob = RecurrenceProblem.single(x, y, E=E, tau=tau)
        else:
            y = np.round(rng.normal(size=n), 1)
            prob = RecurrenceProblem.single(x, y, E=E, tau=tau, theiler=theiler, joint=True)
        eps = [1.0, 0.5, 1.7]
        if kind == "joint" and trial % 2:
            y = 3 * y  # each series its own threshold (joint_eps): (K, channel) pairs
            prob = RecurrenceProblem.single(x, y, E=E, tau=tau, theiler=theiler, joint=True)
            eps = [[1.0, 3.0], [0.5, 4.1], [1.7, 1.7]]
        cpu = line_histograms(prob, eps, norm, "cpu")
        for tile in (None, 1, 7, 64):
            _same(cpu, _gpu(prob, eps, norm, tile))
        _same(cpu, _gpu(prob, eps, norm, 5, devices=[0, 0, 0]))  # a 3-way split


def test_gpu_long_lines_and_multi_device_split():
    # lines far longer than the shared-memory histogram (4096 bins) go to device memory
    x = np.sin(np.arange(9000) * 0.0007)
    prob = RecurrenceProblem.single(x, E=3, tau=5)
    cpu = line_histograms(prob, [0.05, 4.0], "euclidean", "cpu")
    assert cpu["vertical"][0, 1, prob.na] == prob.na  # every column one line
    _same(cpu, _gpu(prob, [0.05, 4.0], "euclidean"))
    _same(cpu, _gpu(prob, [0.05, 4.0], "euclidean", tile=1000, devices=[0, 0]))


def test_gpu_backend_through_xarray():
    rng = np.random.default_rng(0)
    data = xr.DataArray(rng.normal(size=(2, 400)), dims=("unit", "time"))
    a = data.edm.rqa(E=2, eps=[0.5, 1.0], backend="gpu")
    b = data.edm.rqa(E=2, eps=[0.5, 1.0], backend="cpu")
    assert a.attrs["backend"] == "gpu"
    a.attrs["backend"] = "cpu"
    xr.testing.assert_identical(a, b)
    w_gpu = data.edm.rqa(E=2, eps=0.8, window=100, step=50, backend="gpu")
    w_cpu = data.edm.rqa(E=2, eps=0.8, window=100, step=50, backend="cpu")
    xr.testing.assert_equal(w_gpu, w_cpu)


def test_gpu_joint_own_thresholds_through_xarray():
    rng = np.random.default_rng(2)
    x = xr.DataArray(np.round(rng.normal(size=(2, 300)), 1), dims=("unit", "time"))
    y = xr.DataArray(np.round(3 * rng.normal(size=(2, 300)), 1), dims=("unit", "time"))
    for kw in ({"eps": [0.5, 1.0], "joint_eps": [1.5, 3.0, 4.2]},
               {"recurrence_rate": 0.1, "joint_recurrence_rate": [0.05, 0.2]},
               {"eps": 0.8, "joint_recurrence_rate": 0.1, "window": 100, "step": 50}):
        a = x.edm.rqa(joint=y, E=2, backend="gpu", **kw)
        b = x.edm.rqa(joint=y, E=2, backend="cpu", **kw)
        assert a.attrs.pop("backend") == "gpu"
        b.attrs.pop("backend")
        xr.testing.assert_identical(a, b)


@pytest.mark.parametrize("kind", ["self", "cross"])
def test_gpu_recurrence_times_and_border_equal_cpu(kind):
    # the border scans run on the CPU whatever the backend; the histograms they correct
    # come from the GPU kernel
    rng = np.random.default_rng(5)
    x = xr.DataArray(np.round(rng.normal(size=400), 1), dims="time")
    kw = {"other": x[::-1].assign_coords(time=x.time)} if kind == "cross" else {}
    args = dict(E=2, tau=2, eps=[0.3, 0.6], border="drop", recurrence_times=True, **kw)
    xr.testing.assert_identical(x.edm.rqa(backend="gpu", **args).drop_attrs(),
                                x.edm.rqa(backend="cpu", **args).drop_attrs())


@pytest.mark.parametrize("norm", NORMS)
def test_gpu_float32_filter_equals_cpu(norm):
    # the float32-filtered kernels (one-variable delay embeddings, <= 4 thresholds, one
    # launch): data far from 0 (the guard band matters), values tied at eps, long E * tau
    from xedm.kernels.rqa import gpu as G
    from xedm.kernels.rqa.gpu_f32 import qualifies

    rng = np.random.default_rng(3)
    for E, tau, theiler in ((5, 3, 1), (7, 5, 0), (3, 1, 4), (1, 1, 1), (4, 16, 1)):
        x = 1e4 + np.round(np.cumsum(rng.normal(size=2500)) * 0.5, 1)
        prob = RecurrenceProblem.single(x, E=E, tau=tau, theiler=theiler)
        eps = [0.5, 2.0, 4.0, 9.0]
        assert qualifies(prob, NORMS.index(norm), len(eps)) == tau
        cpu = line_histograms(prob, eps, norm, "cpu")
        _same(cpu, _gpu(prob, eps, norm))
        G.USE_CHAIN = False
        try:
            _same(cpu, _gpu(prob, eps, norm))  # the general kernels agree too
        finally:
            G.USE_CHAIN = True
    y = np.round(rng.normal(size=1800), 1)
    prob = RecurrenceProblem.single(np.round(rng.normal(size=2100), 1), y, E=3, tau=2)
    _same(line_histograms(prob, [1.0], norm, "cpu"), _gpu(prob, [1.0], norm))


def test_gpu_windows_and_eps_sweep_one_launch_equal_cpu():
    rng = np.random.default_rng(4)
    da = xr.DataArray(np.cumsum(rng.normal(size=6000)), dims="time")
    kw = {"E": 4, "tau": 2, "eps": [1.0, 2.5, 4.0], "window": 500, "step": 37}
    cpu = da.edm.rqa(backend="cpu", **kw)
    gpu = da.edm.rqa(backend="gpu", **kw)
    assert gpu.sizes["time"] > 100
    for v in cpu.data_vars:
        np.testing.assert_array_equal(cpu[v].values, gpu[v].values, err_msg=v)


@pytest.mark.parametrize("norm", NORMS)
def test_gpu_bitmap_path_equals_cpu(norm):
    # one series, one threshold: each distance once, the upper triangle kept as bits
    # (xedm.kernels.rqa.gpu_bitmap); lengths around multiples of 32, Theiler 0, 1 and 5
    from xedm.kernels.rqa import gpu as G
    from xedm.kernels.rqa.gpu_bitmap import suits

    rng = np.random.default_rng(5)
    for n, E, tau, theiler in ((700, 5, 3, 1), (77, 3, 1, 0), (1100, 4, 7, 5), (40, 2, 1, 0)):
        x = 50.0 + np.round(np.cumsum(rng.normal(size=n)), 1)
        prob = RecurrenceProblem.single(x, E=E, tau=tau, theiler=theiler)
        eps = [float(np.round(np.std(x) * 0.3, 1))]
        thr = thresholds(eps, norm, prob.nch, 1)
        assert suits(prob, thr, NORMS.index(norm))
        cpu = line_histograms(prob, eps, norm, "cpu")
        _same(cpu, _gpu(prob, eps, norm))
        G.USE_BITMAP = False
        try:
            _same(cpu, _gpu(prob, eps, norm))  # the float32 column kernels agree too
        finally:
            G.USE_BITMAP = True


@pytest.mark.parametrize("pop,delta", [(1, 1), (0, 0), (1, 0), (0, 1)])
def test_gpu_bitmap_short_lines_equal_cpu(pop, delta):
    # a chaotic map: most lines have 1 to 3 points, counted by popcounts (pop=1) or one by
    # one; distances from the window of differences (delta=1) or of values; the counts are
    # the CPU's either way
    from xedm.kernels.rqa import gpu_bitmap as GB

    x = np.empty(3000)
    v = 0.3
    for i in range(x.size):
        v = 4.0 * v * (1.0 - v)
        x[i] = v
    old = dict(GB.TUNE)
    GB.TUNE.update(pop=pop, delta=delta)
    try:
        cases = ((5, 3, 1, 0.2, "euclidean"), (2, 1, 0, 0.05, "maximum"),
                 (3, 2, 4, 0.1, "manhattan"), (1, 1, 0, 0.01, "euclidean"))
        for E, tau, theiler, eps, norm in cases:
            prob = RecurrenceProblem.single(x, E=E, tau=tau, theiler=theiler)
            thr = thresholds([eps], norm, 1, 1)
            assert GB.suits(prob, thr, NORMS.index(norm))
            cpu = line_histograms(prob, [eps], norm, "cpu")
            _same(cpu, GB.line_histograms(prob, thr, NORMS.index(norm)))
    finally:
        GB.TUNE.update(old)


@pytest.mark.parametrize("norm", NORMS)
def test_gpu_sampled_eps_equals_cpu(norm):
    # recurrence_rate= with the sampled distances on the GPU: the same eps, bit for bit
    from xedm.recurrence.threshold import eps_for_recurrence_rate

    rng = np.random.default_rng(3)
    x = np.cumsum(rng.normal(size=4000))
    probs = [RecurrenceProblem.single(x, E=4, tau=2),
             RecurrenceProblem.single(x[:3000], x[500:], E=3, tau=1),
             RecurrenceProblem.single(x[:3000], x[500:3500] ** 2, E=3, tau=2, joint=True)]
    for prob in probs:
        kw = dict(norm=norm, method="sample", n_sample=200_000, seed=7)
        cpu, _ = eps_for_recurrence_rate(prob, [0.01, 0.05, 0.3], backend="cpu", **kw)
        gpu, how = eps_for_recurrence_rate(prob, [0.01, 0.05, 0.3], backend="gpu", **kw)
        assert how == "sample"
        np.testing.assert_array_equal(cpu, gpu)
