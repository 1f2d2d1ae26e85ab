"""The kernels' shared pieces, checked without a GPU: the CUDA sources take S-map's ridge
weight (one ``__device__`` function, ``LOG_BIG`` written in from smap/constants.py), the
neighbour tie rule (the exact GPU kernel's ``before``, spliced into ivf's scan) and simplex's
distance floor ``D_MIN`` (predict/constants.py) from one place each; the CPU's one
ridge-weight helper agrees with a NumPy reference; CuPy stays in the kernel and neighbour
layers.  tests/test_edm_gpu.py runs the kernels themselves.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from xedm.kernels.knn import gpu as knn_gpu
from xedm.kernels.knn import gpu_ivf
from xedm.kernels.smap import gpu as smap_gpu
from xedm.kernels.smap import gpu_thread
from xedm.kernels.smap.constants import LOG_BIG
from xedm.kernels.smap.cpu_qr import ridge_weight

PACKAGE = Path(__file__).resolve().parents[1] / "xedm"


@pytest.mark.parametrize("source", [smap_gpu._TSQR, gpu_thread._SOURCE],
                         ids=["smap_tsqr", "smap_qr_thread"])
def test_smap_cuda_sources_splice_one_ridge_weight(source):
    assert source.count(gpu_thread.RIDGE_WEIGHT) == 1
    assert source.count("ridge_weight(") == 2  # its definition and the one call
    assert source.count("lra") == gpu_thread.RIDGE_WEIGHT.count("lra")  # no other copy
    assert f"if (lra > {LOG_BIG!r}) return exp({LOG_BIG!r});" in gpu_thread.RIDGE_WEIGHT
    assert "690" not in source.replace(gpu_thread.RIDGE_WEIGHT, "")


def test_ivf_scan_uses_the_exact_kernels_tie_rule():
    for k, D, C in ((2, 1, 1), (7, 6, 2)):
        src = gpu_ivf._scan_source(k, D, C)
        assert src.count(knn_gpu.BEFORE) == 1
        assert src.count("bool before(") == 1
    assert knn_gpu._COMMON.startswith(knn_gpu.BEFORE)


def test_simplex_weight_floor_from_the_constants():
    from xedm.kernels.cross import gpu_ccm, gpu_xmap
    from xedm.kernels.predict import gpu as predict_gpu
    from xedm.kernels.predict.constants import D_MIN

    for src in (predict_gpu._PREDICT, gpu_xmap._SOURCE, gpu_ccm._ccm_source(3)):
        assert repr(D_MIN) in src
        assert "1e-6" not in src


def _reference_weight(alpha, lf, xexp):
    # sqrt(alpha) exp(lf) 2^-xexp in logs, capped at exp(LOG_BIG)
    return math.exp(min(0.5 * math.log(alpha) + lf - xexp * math.log(2.0), LOG_BIG))


@pytest.mark.parametrize("alpha, lf, xexp", [
    (0.3, 0.0, 0), (1e-8, 2.5, 17), (4.0, 120.0, -3),  # the direct product
    (1e280, 1.0, 0), (0.5, 400.0, 300),  # from logs: the product would overflow
    (1e300, 600.0, -200),  # capped at exp(LOG_BIG)
])
def test_ridge_weight_against_reference(alpha, lf, xexp):
    got = ridge_weight(alpha, lf, np.int64(xexp))
    np.testing.assert_allclose(got, _reference_weight(alpha, lf, xexp), rtol=1e-12)


def test_no_cupy_in_the_numerical_layers():
    # CuPy is called only by kernels/ (and neighbors/ through them): core, stats and
    # recurrence reach the device through the kernel registry
    for layer in ("core", "stats", "recurrence"):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                else:
                    continue
                assert not any(n.split(".")[0] == "cupy" for n in names), (path, node.lineno)
