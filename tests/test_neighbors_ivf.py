"""neighbors="ivf", the GPU inverted file (xedm/neighbors/ivf.py).

Without a GPU, the method's steps run with NumPy (``ivf.Host``: the same gather, k-means,
inverted lists, probes, recall tuning and fallbacks, with ``gpu_ivf.scan_reference``, the
NumPy twin of the CUDA scan in xedm/kernels/knn/gpu_ivf.py); with one (marker ``gpu``,
skipped otherwise), the CUDA scan must equal its twin bit for bit and the public functions
run with ``backend="gpu", neighbors="ivf"``.  Both must keep the contract of every method
(tests/test_neighbors.py: library points only, exclusions, no row left short, exact
distances, the tie order), reach recall >= 0.95 at E = 20 on Lorenz-63 and keep simplex rho
within RHO_TOL of exact's.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from neighbor_cases import CASES, RHO_TOL, _check_contract, _gappy, _prep

import xedm
from xedm.core.embed import LibSpec
from xedm.kernels import gpu_available
from xedm.kernels.knn import gpu_ivf
from xedm.neighbors import auto, contract, ivf
from xedm.neighbors.base import Search, knn_tables

gpu = pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU")


@pytest.fixture(scope="module")
def lorenz():
    return xedm.datasets.lorenz63(4000).x.values.copy()


@pytest.fixture(autouse=True)
def small_sample(monkeypatch):
    # a sample of 40 rows leaves most rows of these short series to the index, and lists of
    # a few points make the probes approximate
    monkeypatch.setattr(ivf, "SAMPLE_ROWS", 40)
    monkeypatch.setattr(ivf, "MIN_LIB", 200)
    monkeypatch.setattr(ivf, "NPROBE_START", 1)


def host_tables(prep, k, excl, recall=0.95):
    s = Search("ivf", recall=recall)
    idx, dist = ivf.tables(prep, [k], excl, backend="cpu", search=s, dev=ivf.Host())
    return idx, dist, s


# ------------------------------------------------------------------- NumPy twin (no GPU)
@pytest.mark.parametrize("E, excl, lib, Tp, tau", CASES)
def test_host_contract_and_recall(lorenz, E, excl, lib, Tp, tau):
    prep = _prep(_gappy(lorenz[:3000]), E, lib, Tp, tau)
    idx, dist, s = host_tables(prep, E + 1, excl)
    _check_contract(prep, idx, dist, E + 1, excl)
    ref = knn_tables(prep, [E + 1], excl, backend="cpu", method="exact")
    f, n = contract.recall_of(idx[0, 0], ref[0][0, 0])
    assert f / n >= 0.95
    assert s.used_name == ("sorted1d" if E == 1 else "ivf")
    if E > 1:
        assert s.params["nlist"] >= 16 and s.params["nprobe"] >= 1
        assert 0.95 <= s.measured_recall <= 1.0


def test_host_multi_column_embedded():
    ds = xedm.datasets.lorenz63(3000)
    X = np.stack([ds.x.values, ds.y.values, ds.z.values])[None]
    X[0, 1, 900:905] = np.nan
    from xedm.core.embed import prepare

    prep = prepare(X, X[:, 0], np.array([3]), 1, 1, LibSpec.whole(3000), np.ones(3000, bool),
                   True)
    idx, dist, _ = host_tables(prep, 4, 3)
    _check_contract(prep, idx, dist, 4, 3)


def test_host_exhaustive_equals_exact(lorenz, monkeypatch):
    # every list probed: the scan is brute force, so the tables equal exact's bit for bit
    monkeypatch.setattr(ivf, "NPROBE_START", 10**6)
    prep = _prep(_gappy(lorenz[:3000]), 5)
    idx, dist, s = host_tables(prep, 6, 2)
    ref = knn_tables(prep, [6], 2, backend="cpu", method="exact")
    np.testing.assert_array_equal(idx, ref[0])
    np.testing.assert_array_equal(dist, ref[1])
    assert s.params["nprobe"] == s.params["nlist"]


def test_host_recall_target_raises_nprobe(lorenz):
    prep = _prep(lorenz[:3000], 20)
    _, _, lo = host_tables(prep, 21, 0, recall=0.5)
    _, _, hi = host_tables(prep, 21, 0, recall=0.999)
    assert hi.params["nprobe"] > lo.params["nprobe"]
    assert contract.lower_bound(hi.hits, hi.total) >= 0.999 or hi.params["nprobe"] == hi.params[
        "nlist"]


def test_host_short_rows_fall_back(lorenz, monkeypatch):
    # one probe of lists of ~8 points with a wide exclusion: most rows are left short and
    # must be completed exactly
    monkeypatch.setattr(ivf, "NLIST_FACTOR", 64)
    prep = _prep(lorenz[:3000], 4)
    idx, dist, s = host_tables(prep, 5, 20, recall=0.01)
    assert s.fallback > 0
    _check_contract(prep, idx, dist, 5, 20)


def test_host_small_or_deep_goes_exact(lorenz, monkeypatch):
    prep = _prep(lorenz[:3000], 3)
    ref = knn_tables(prep, [150], 0, backend="cpu", method="exact")
    idx, dist, s = host_tables(prep, 150, 0)  # knn > MAX_K
    np.testing.assert_array_equal(idx, ref[0])
    assert s.used_name == "exact" and s.measured_recall == 1.0
    monkeypatch.setattr(ivf, "MIN_LIB", 10**6)
    idx, dist, _ = host_tables(prep, 150, 0)
    np.testing.assert_array_equal(idx, ref[0])


def test_gather_order_and_lists(lorenz):
    prep = _prep(lorenz[:2000], 4, tau=2)
    lib_pos = np.flatnonzero(prep.lib_ok[0, 0])
    got = ivf.gather(np, prep.Xpad[0], prep.pad, lib_pos, 4, 2)
    np.testing.assert_array_equal(got, contract.states(prep, 0, 0, lib_pos))
    index = ivf.Index(ivf.Host(), got, lib_pos, np.random.default_rng(0))
    assert index.offs[0] == 0 and index.offs[-1] == len(lib_pos)
    assert np.array_equal(np.sort(index.lib_t), lib_pos)  # every point in exactly one list
    assert ivf.n_lists(2**20) == 4096 and ivf.n_lists(100) == 12


def test_ivf_errors(lorenz, monkeypatch):
    x = xr.DataArray(lorenz[:500], dims="time", name="x")
    with pytest.raises(ValueError, match=r"backend='gpu'.*xedm\[gpu\]"):
        xedm.simplex(x, E=3, neighbors="ivf")
    with pytest.raises(ValueError, match="backend='gpu'"):
        knn_tables(_prep(lorenz[:500], 3), [4], 0, backend="cpu", method="ivf")
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "cupy":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"xedm\[gpu\]"):
        ivf.Device()


def test_auto_rule_on_gpu():
    def pick(**kw):
        args = {"n_lib": auto.IVF_MIN_LIB, "dim": 20, "knn": 21, "n_pred": 2**20, "backend": "gpu",
                "recall": 0.99} | kw
        return auto.choose(**args)[0]

    assert pick() == "ivf"
    assert pick(n_lib=auto.IVF_MIN_LIB - 1) == "exact"
    assert pick(recall=1.0) == "exact"
    assert pick(knn=auto.IVF_MAX_K) == "exact"
    assert pick(dim=1) == "exact"  # the GPU kernel's key is the state itself
    assert pick(dim=1, backend="cpu") == "sorted1d"
    assert pick(backend="cpu") == "auto"


# ------------------------------------------------------------------------------ on a GPU
@pytest.mark.gpu
@gpu
def test_gpu_scan_equals_twin(lorenz):
    import cupy as cp

    for E, C, k, excl in ((20, 1, 21, 0), (3, 2, 7, 4)):
        X = _gappy(lorenz[:3000])
        if C == 2:
            X = np.stack([X, np.roll(X, 11)])[None]
        prep = _prep(X, E)
        lib_pos = np.flatnonzero(prep.lib_ok[0, 0])
        lib64 = ivf.gather(np, prep.Xpad[0], prep.pad, lib_pos, E, 1)
        index = ivf.Index(ivf.Host(), lib64, lib_pos, np.random.default_rng(0))
        times = prep.pred_t[prep.pred_ok[0, 0]]
        q = ivf.gather(np, prep.Xpad[0], prep.pad, times, E, 1)
        for nprobe in (1, 4, index.nlist):
            pr = index.probes(np, q, nprobe)
            ref = gpu_ivf.scan_reference(index.lib, index.lib_t, index.offs, q, times, pr, excl,
                                     k, C)
            got = gpu_ivf.scan_device(cp.asarray(index.lib), cp.asarray(index.lib_t),
                                  cp.asarray(index.offs), cp.asarray(q), cp.asarray(times),
                                  cp.asarray(pr), excl, k, C)
            for a, b in zip(ref, got, strict=True):
                np.testing.assert_array_equal(a, cp.asnumpy(b))


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("E, excl, lib, Tp, tau", CASES)
def test_gpu_contract_and_recall(lorenz, E, excl, lib, Tp, tau):
    prep = _prep(_gappy(lorenz[:3000]), E, lib, Tp, tau)
    s = Search("ivf", recall=0.95)
    idx, dist = knn_tables(prep, [E + 1], excl, backend="gpu", method=s)
    _check_contract(prep, idx, dist, E + 1, excl)
    ref = knn_tables(prep, [E + 1], excl, backend="cpu", method="exact")
    f, n = contract.recall_of(idx[0, 0], ref[0][0, 0])
    assert f / n >= 0.95
    # the GPU run of the twin's steps gives the twin's tables (same sample, same k-means
    # seed; the device's float32 GEMMs may route a borderline query to another list, so
    # compare recall rather than bits)
    hidx, _, _ = host_tables(prep, E + 1, excl)
    hf, _ = contract.recall_of(hidx[0, 0], ref[0][0, 0])
    assert abs(f - hf) / n <= 0.05


@pytest.mark.gpu
@gpu
def test_gpu_exhaustive_equals_exact(lorenz, monkeypatch):
    monkeypatch.setattr(ivf, "NPROBE_START", 10**6)
    prep = _prep(_gappy(lorenz[:3000]), 6, LibSpec(mask=(np.arange(3000) % 3 != 0)), 2)
    idx, dist = knn_tables(prep, [7], 3, backend="gpu", method="ivf")
    ref = knn_tables(prep, [7], 3, backend="cpu", method="exact")
    np.testing.assert_array_equal(idx, ref[0])
    np.testing.assert_array_equal(dist, ref[1])


@pytest.mark.gpu
@gpu
def test_gpu_simplex_recall_and_rho_at_E20(monkeypatch):
    monkeypatch.setattr(ivf, "SAMPLE_ROWS", 1000)
    monkeypatch.setattr(ivf, "MIN_LIB", 2048)
    monkeypatch.setattr(ivf, "NPROBE_START", 8)
    x = xedm.datasets.lorenz63(2**15).x
    ref = xedm.simplex(x, E=20, neighbors="exact", backend="gpu")
    res = xedm.simplex(x, E=20, neighbors="ivf", backend="gpu", neighbors_recall=0.95)
    assert res.attrs["neighbors"] == "ivf"
    assert res.attrs["neighbors_recall"] >= 0.95
    prep = _prep(x.values, 20)
    ex = knn_tables(prep, [21], 0, backend="gpu", method="exact")
    got = knn_tables(prep, [21], 0, backend="gpu", method=Search("ivf", recall=0.95))
    f, n = contract.recall_of(got[0][0, 0], ex[0][0, 0])
    assert f / n >= 0.95  # every row
    assert abs(float(res.rho) - float(ref.rho)) <= RHO_TOL


@pytest.mark.gpu
@gpu
def test_gpu_operations_and_auto():
    x = xr.DataArray(xedm.datasets.lorenz63(3000).x.values, dims="time", name="x")
    for f, args in ((xedm.simplex, {"E": 5}), (xedm.smap, {"E": 5, "knn": 20, "theta": 2.0}),
                    (xedm.embed_dimension, {"E_max": 6}),
                    (xedm.predict_interval, {"E": 5, "Tp_max": 3})):
        got = f(x, **args, neighbors="ivf", backend="gpu")
        ref = f(x, **args, neighbors="exact", backend="cpu")
        np.testing.assert_allclose(got.rho, ref.rho, atol=0.01)
        assert got.attrs["neighbors"] in ("ivf", "ivf+sorted1d")
    got = xedm.simplex(x, E=5, backend="gpu", neighbors="auto")
    assert got.attrs["neighbors"] == "exact"  # below IVF_MIN_LIB
    got = xedm.simplex(x, E=1, backend="gpu", neighbors="auto")
    assert got.attrs["neighbors"] == "exact"  # one coordinate: the GPU kernel, not sorted1d
    ref = xedm.simplex(x, E=1, backend="cpu", neighbors="auto")
    assert ref.attrs["neighbors"] == "sorted1d"
    np.testing.assert_allclose(got.prediction, ref.prediction, rtol=1e-12)


@pytest.mark.gpu
@gpu
def test_gpu_ccm_xmap_ivf():
    ds = xedm.datasets.coupled_logistic(3000)
    # library sizes from 1,000: tables 52 deep, within the kernel's MAX_K
    kw = {"lib_sizes": [1000, 2000, 2990], "E": 3, "samples": 5, "seed": 1}
    ref = xedm.ccm(ds, ["x", "y"], **kw, neighbors="exact")
    got = xedm.ccm(ds, ["x", "y"], **kw, neighbors="ivf", backend="gpu")
    np.testing.assert_allclose(got.rho, ref.rho, atol=0.02)
    assert got.attrs["neighbors"] == "ivf" and got.attrs["neighbors_recall"] >= 0.95
    da = ds.to_array("v")
    xref = xedm.xmap(da, series_dim="v", E=[3, 4], neighbors="exact")
    xgot = xedm.xmap(da, series_dim="v", E=[3, 4], neighbors="ivf", backend="gpu")
    np.testing.assert_allclose(xgot.rho, xref.rho, atol=0.02)
    assert xgot.attrs["neighbors_recall"] >= 0.95
