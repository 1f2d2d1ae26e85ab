"""pred_variance and multiview on the GPU (skipped without one): backend="gpu" against
backend="cpu" to rtol 1e-12 (tests/test_edm_gpu.py's tolerance for public functions)."""

from __future__ import annotations

import numpy as np
import pytest

import xedm
from xedm.kernels import gpu_available

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU"),
]


def test_simplex_pred_variance_gpu_equals_cpu():
    x = xedm.datasets.lorenz63(600).x
    kw = {"knn": 6, "exclusion_radius": 3, "lib": slice(None, x.time.values[399])}
    cpu = xedm.simplex(x, 3, backend="cpu", **kw)
    gpu = xedm.simplex(x, 3, backend="gpu", **kw)
    np.testing.assert_allclose(gpu.prediction, cpu.prediction, rtol=1e-12)
    np.testing.assert_allclose(gpu.pred_variance, cpu.pred_variance, rtol=1e-12)


def test_multiview_gpu_equals_cpu():
    ds = xedm.datasets.lorenz63(400)
    cpu = xedm.multiview(ds, ["x", "y", "z"], "x", 2, D=3, backend="cpu")
    gpu = xedm.multiview(ds, ["x", "y", "z"], "x", 2, D=3, backend="gpu")
    assert (gpu.view_columns == cpu.view_columns).all()
    np.testing.assert_allclose(gpu.prediction, cpu.prediction, rtol=1e-12)
    assert gpu.attrs["backend"] == "gpu"
