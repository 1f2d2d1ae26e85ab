"""xedm.warmup and ``xedm warmup``: the CPU path compiles and runs; the GPU path without a
device is a clear error; the GPU variant listing reads the kernel modules' caches."""

import sys
import types

import pytest

import xedm
from xedm import precompile as wu
from xedm.cli import main
from xedm.kernels import gpu_available


def test_cpu_warmup_runs_the_functions():
    info = xedm.warmup("cpu", E_max=2, functions=("simplex", "ivf", "causal_network"),
                       lengths=[300])  # ivf: GPU only
    assert info["backend"] == "cpu" and "errors" not in info
    assert set(info["seconds"]) == {"simplex", "causal_network"} and info["variants"] == []
    assert info["cache_dir"]


@pytest.mark.quick
def test_cpu_warmup_of_one_function():
    """The warm-up a user runs first: one function, one length; afterwards simplex runs and
    equals its reference (the same kernels the warm-up compiled)."""
    import naive
    import numpy as np

    info = xedm.warmup("cpu", E_max=2, functions=["simplex"], lengths=[300])
    assert info["backend"] == "cpu" and "errors" not in info
    assert set(info["seconds"]) == {"simplex"} and info["seconds"]["simplex"] >= 0
    x = xedm.datasets.logistic_map(80)
    out = xedm.simplex(x, 2)
    ref = naive.simplex(x.values[None], x.values, 2)
    np.testing.assert_allclose(out.prediction.values, ref["prediction"], rtol=1e-9)


@pytest.mark.skipif(gpu_available(), reason="a GPU is visible")
def test_gpu_warmup_without_a_gpu_is_a_clear_error(capsys):
    with pytest.raises(ValueError, match="needs CuPy and an NVIDIA GPU"):
        xedm.warmup("gpu")
    assert main(["warmup", "--backend", "gpu"]) == 2
    assert "needs CuPy and an NVIDIA GPU" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, match", [
    ({"backend": "tpu"}, "backend"), ({"functions": ["simplex", "nope"]}, "nope"),
    ({"E_max": 0}, "E_max"), ({"E": [0, 2]}, "E must"), ({"lengths": [10]}, "lengths"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        xedm.warmup(**{"backend": "cpu", **kwargs})


def test_variants_are_read_from_the_gpu_modules_caches(monkeypatch):
    fake = types.ModuleType("xedm.kernels.fake.gpu_fake")
    fake._CACHE = {("scan", (1, 2), (2, 3), 1): object()}
    fake._TSQR_CACHE = {(3, 3, 4): object()}
    fake.OTHER = {"not": "a cache"}
    monkeypatch.setitem(sys.modules, "xedm.kernels.fake.gpu_fake", fake)
    got = [v for v in wu._variants() if v.startswith("fake.")]
    assert got == ["fake.gpu_fake._CACHE: ('scan', (1, 2), (2, 3), 1)",
                   "fake.gpu_fake._TSQR_CACHE: (3, 3, 4)"]


@pytest.mark.quick
def test_cli_warmup_cpu(capsys):
    assert main(["warmup", "--backend", "cpu", "--E-max", "2", "--functions", "simplex",
                 "--lengths", "300", "-q"]) == 0
    assert "warmup cpu:" in capsys.readouterr().out


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU")
def test_gpu_warmup_compiles_the_long_map_kernels(monkeypatch):
    """The GPU warm-up's xmap compiles what maps of many long series use and its two-series
    maps do not reach: the kNN kernel writing its tables in key order at each E, the
    L2-tiled lookups at every block size (else the first such map compiled them)."""
    from xedm.kernels.cross import gpu_xmap
    from xedm.kernels.knn import gpu_compile

    monkeypatch.setattr(gpu_compile, "_CACHE", {})
    info = xedm.warmup("gpu", E=[2, 5], E_max=2, functions=["xmap"], lengths=[600, 800])
    assert "errors" not in info
    keys = set(gpu_compile._CACHE)
    for e in (2, 5):
        assert ("sorted", (e,), (e + 1,), 1, True) in keys
    for bt in gpu_xmap.TILE_BTS:
        assert ("xmap_tile2", bt, gpu_xmap.TILE_PAIRS) in keys
    # the functions run: a map of many long series in key order uses the compiled kernels
    assert all(f is not None for f in gpu_xmap.compile_variants([5]))
