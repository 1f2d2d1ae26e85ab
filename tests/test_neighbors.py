"""Every neighbour method behind the one contract (xedm.neighbors.knn_tables).

Exact methods (exact, kdtree, sorted1d) must give identical tables, order included, and
agree with tests/naive.py; approximate ones (nndescent, hnsw) must honour every exclusion
(self, exclusion radius, lib segments and masks, NaN), hold their rows in the exact order of
the neighbours they found, reach recall >= 0.95 against exact at E = 20 on Lorenz data and
keep simplex rho within RHO_TOL of exact's.
"""

from __future__ import annotations

import importlib.util
import logging

import naive
import numpy as np
import pytest
import xarray as xr
from neighbor_cases import CASES, RHO_TOL, _check_contract, _gappy, _prep

import xedm
from xedm.core.embed import LibSpec, prepare
from xedm.neighbors import auto, base, contract, index
from xedm.neighbors.base import Search, knn_tables

pytest.importorskip("faiss")
# not imported here: pynndescent compiles its numba functions when imported and used, which
# only the worker that runs this module should pay for (ONE_WORKER in the root conftest.py)
if importlib.util.find_spec("pynndescent") is None:
    pytest.skip("pynndescent not installed", allow_module_level=True)

EXACT = ("exact", "kdtree")
APPROX = ("nndescent", "hnsw")
ALL = EXACT + APPROX + ("auto",)


@pytest.fixture(scope="module")
def lorenz():
    return xedm.datasets.lorenz63(4000).x.values.copy()


@pytest.fixture(autouse=True)
def small_sample(monkeypatch):
    # a sample of 40 rows leaves most rows of these short series to the index
    monkeypatch.setattr(index, "SAMPLE_MIN", 40)
    monkeypatch.setattr(index, "SAMPLE_MAX", 40)


@pytest.mark.parametrize("E, excl, lib, Tp, tau", CASES)
def test_exact_methods_identical(lorenz, E, excl, lib, Tp, tau):
    x = _gappy(lorenz[:3000])
    prep = _prep(x, E, lib, Tp, tau)
    ref = knn_tables(prep, [E + 1], excl, backend="cpu", method="exact")
    methods = ["kdtree", "auto"] + (["sorted1d"] if E == 1 else [])
    for m in methods:
        got = knn_tables(prep, [E + 1], excl, backend="cpu", method=Search(m))
        np.testing.assert_array_equal(got[0], ref[0], err_msg=m)
        np.testing.assert_array_equal(got[1], ref[1], err_msg=m)


def test_exact_methods_match_naive_on_ties():
    rng = np.random.default_rng(3)
    x = np.round(4 * rng.normal(size=300)) / 4  # many exact ties, exactly representable
    x[40:45] = np.nan
    y = x.copy()
    lib = [(0, 149), (170, 299)]
    for E, excl in ((1, 0), (1, 3), (3, 2)):
        prep = _prep(x, E, LibSpec(segments=np.array(lib)))
        libpts = naive.library_points(x[None], y, E, 1, 1, lib)
        # the naive neighbours of each prediction point, once for every method (O(n) each)
        ref = {p: naive.neighbors(x[None], p, libpts, E, 1, E + 1, excl)
               for pi, p in enumerate(prep.pred_t.tolist()) if prep.pred_ok[0, 0, pi]}
        for m in ("exact", "kdtree") + (("sorted1d",) if E == 1 else ()):
            idx, dist = knn_tables(prep, [E + 1], excl, backend="cpu", method=m)
            for pi, p in enumerate(prep.pred_t.tolist()):
                if not prep.pred_ok[0, 0, pi]:
                    continue
                nb = ref[p]
                assert idx[0, 0, pi, : len(nb)].tolist() == [n[2] for n in nb], (m, E, p)
                # tables hold distances of the series scaled by 2^-xexp (exact)
                np.testing.assert_allclose(np.ldexp(dist[0, 0, pi, : len(nb)], prep.xexp[0]),
                                           [n[0] for n in nb],
                                           rtol=1e-12, atol=1e-15)


def test_sweep_tables_identical(lorenz):
    prep = _prep(_gappy(lorenz[:2000]), np.array([1, 2, 5]))
    ref = knn_tables(prep, [2, 3, 6], 2, backend="cpu", method="exact")
    got = knn_tables(prep, [2, 3, 6], 2, backend="cpu", method="kdtree")
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])


@pytest.mark.parametrize("method", APPROX)
@pytest.mark.parametrize("E, excl, lib, Tp, tau", CASES[1:])
def test_approximate_honour_exclusions(lorenz, method, E, excl, lib, Tp, tau):
    x = _gappy(lorenz[:3000])
    prep = _prep(x, E, lib, Tp, tau)
    s = Search(method, recall=0.95)
    idx, dist = knn_tables(prep, [E + 1], excl, backend="cpu", method=s)
    _check_contract(prep, idx, dist, E + 1, excl)
    ref = knn_tables(prep, [E + 1], excl, backend="cpu", method="exact")
    f, n = contract.recall_of(idx[0, 0], ref[0][0, 0])
    assert f / n >= 0.95
    assert s.used_name == ("sorted1d" if E == 1 else method)


def test_multi_column_embedded(lorenz):
    ds = xedm.datasets.lorenz63(3000)
    X = np.stack([ds.x.values, ds.y.values, ds.z.values])[None]
    X[0, 1, 900:905] = np.nan
    prep = prepare(X, X[:, 0], np.array([3]), 1, 1, LibSpec.whole(3000), np.ones(3000, bool),
                   True)
    ref = knn_tables(prep, [4], 3, backend="cpu", method="exact")
    kd = knn_tables(prep, [4], 3, backend="cpu", method="kdtree")
    np.testing.assert_array_equal(kd[0], ref[0])
    np.testing.assert_array_equal(kd[1], ref[1])
    for m in APPROX:
        idx, dist = knn_tables(prep, [4], 3, backend="cpu", method=Search(m))
        _check_contract(prep, idx, dist, 4, 3)


@pytest.mark.parametrize("method", APPROX)
def test_recall_and_rho_at_E20(lorenz, method):
    x = xr.DataArray(lorenz, dims="time", name="x")
    ref = xedm.simplex(x, E=20, neighbors="exact")
    res = xedm.simplex(x, E=20, neighbors=method, neighbors_recall=0.95)
    assert res.attrs["neighbors"] == method
    assert res.attrs["neighbors_recall"] >= 0.95  # measured on the sample
    prep = _prep(lorenz, 20)
    ex = knn_tables(prep, [21], 0, backend="cpu", method="exact")
    got = knn_tables(prep, [21], 0, backend="cpu", method=Search(method, recall=0.95))
    f, n = contract.recall_of(got[0][0, 0], ex[0][0, 0])
    assert f / n >= 0.95  # measured independently, on every row
    assert abs(float(res.rho) - float(ref.rho)) <= RHO_TOL


def test_recall_target_raises_effort(lorenz, monkeypatch):
    # an unreachable target: the effort rises to its cap, then the search is exact
    prep = _prep(lorenz[:3000], 5)
    s = Search("hnsw", recall=1.0)
    from xedm.neighbors import hnsw

    monkeypatch.setattr(hnsw, "EF_MAX", 64)
    monkeypatch.setattr(hnsw, "EF_START", 16)
    monkeypatch.setattr(hnsw, "M", 2)
    idx, dist = knn_tables(prep, [6], 0, backend="cpu", method=s)
    ref = knn_tables(prep, [6], 0, backend="cpu", method="exact")
    np.testing.assert_array_equal(idx, ref[0])


@pytest.mark.parametrize("method", ALL + ("sorted1d",))
def test_short_series_every_method(method):
    x = xr.DataArray(np.sin(0.7 * np.arange(14)) + 0.1 * np.arange(14), dims="time", name="x")
    E = 1 if method == "sorted1d" else 2
    ref = xedm.simplex(x, E=E, neighbors="exact", exclusion_radius=1)
    got = xedm.simplex(x, E=E, neighbors=method, exclusion_radius=1)
    np.testing.assert_array_equal(got.prediction.values, ref.prediction.values)
    ref = naive.simplex(x.values[None], x.values, E, excl=1)
    np.testing.assert_allclose(got.prediction.values, ref["prediction"], rtol=1e-12)


@pytest.mark.parametrize("method", ALL)
def test_every_operation_every_method(method):
    x = xr.DataArray(xedm.datasets.lorenz63(600).x.values, dims="time", name="x")
    kw = {"neighbors": method}
    exact = method in EXACT or method == "auto"
    for f, args in ((xedm.simplex, {"E": 3}), (xedm.smap, {"E": 3, "knn": 10, "theta": 2.0}),
                    (xedm.embed_dimension, {"E_max": 4}),
                    (xedm.predict_interval, {"E": 3, "Tp_max": 3}),
                    (xedm.predict_nonlinear, {"E": 3, "knn": 10, "theta": [0, 2]})):
        got = f(x, **args, **kw)
        ref = f(x, **args, neighbors="exact")
        if exact:
            # identical tables; embed_dimension's exact path fuses the prediction into the
            # search (another summation order), hence rounding-level differences there
            xr.testing.assert_allclose(got.drop_attrs(), ref.drop_attrs(), rtol=1e-12)
        else:
            np.testing.assert_allclose(got.rho, ref.rho, atol=0.01)
        assert got.attrs["neighbors"] in ("exact", "kdtree", "sorted1d", method,
                                          f"{method}+sorted1d")
        assert 0.95 <= got.attrs["neighbors_recall"] <= 1.0


@pytest.mark.parametrize("method", ALL)
def test_ccm_xmap_every_method(method):
    ds = xedm.datasets.coupled_logistic(500)
    kw = {"lib_sizes": [20, 100, 490], "E": 2, "samples": 5, "seed": 1}
    ref = xedm.ccm(ds, ["x", "y"], **kw, neighbors="exact")
    got = xedm.ccm(ds, ["x", "y"], **kw, neighbors=method)
    da = ds.to_array("v")
    xref = xedm.xmap(da, series_dim="v", E=[2, 3], neighbors="exact")
    xgot = xedm.xmap(da, series_dim="v", E=[2, 3], neighbors=method)
    if method in APPROX:
        np.testing.assert_allclose(got.rho, ref.rho, atol=0.02)
        np.testing.assert_allclose(xgot.rho, xref.rho, atol=0.02)
        assert got.attrs["neighbors"] == method
    else:
        np.testing.assert_array_equal(got.rho, ref.rho)
        np.testing.assert_array_equal(xgot.rho, xref.rho)
    assert got.attrs["neighbors_recall"] >= 0.95 and xgot.attrs["neighbors_recall"] >= 0.95


def test_ccm_deep_tables_approximate(lorenz):
    # ccm's tables are deep (many more than knn entries): the index path must fill them
    x = lorenz[:3000]
    prep = _prep(x, 3)
    ref = knn_tables(prep, [60], 0, backend="cpu", method="exact")
    got = knn_tables(prep, [60], 0, backend="cpu", method=Search("hnsw"))
    _check_contract(prep, got[0], got[1], 60, 0)
    f, n = contract.recall_of(got[0][0, 0], ref[0][0, 0])
    assert f / n >= 0.95


# ------------------------------------------------------------------------- the auto rule
def test_auto_rule(caplog):
    with caplog.at_level(logging.INFO, logger="xedm"):
        s = base.resolve_method("auto", n_lib=2**20, dim=1, knn=2)
    assert s.method == "sorted1d" and "sorting" in caplog.text
    assert base.resolve_method("auto", n_lib=1000, dim=5, knn=6).method == "exact"
    s = base.resolve_method("auto", n_lib=2**20, dim=20, knn=21)
    assert s.method == "auto" and "probe" in s.reason
    assert auto.approximate_method(1.0) is None  # recall 1: exact methods only
    assert auto.approximate_method(0.99) == "hnsw"


def test_auto_probe_picks_and_logs(lorenz, monkeypatch, caplog):
    monkeypatch.setattr(auto, "INDEX_MIN_LIB", 100)
    prep = _prep(lorenz, 20)
    ref = knn_tables(prep, [21], 0, backend="cpu", method="exact")
    s = Search("auto", recall=1.0)  # exact methods only
    with caplog.at_level(logging.INFO, logger="xedm"):
        idx, dist = knn_tables(prep, [21], 0, backend="cpu", method=s)
    assert "kd-tree build" in caplog.text
    assert s.used_name in ("exact", "kdtree")
    np.testing.assert_array_equal(idx, ref[0])
    np.testing.assert_array_equal(dist, ref[1])
    # brute force made expensive: the probe's kd-tree or the index wins
    monkeypatch.setattr(auto, "EXACT_PAIR_S", 1.0)
    monkeypatch.setattr(auto, "EXACT_PAIR_DIM_S", 1.0)
    s = Search("auto", recall=0.95)
    knn_tables(prep, [21], 0, backend="cpu", method=s)
    assert s.used_name in ("kdtree", "hnsw")


@pytest.mark.parametrize("case", ["switch", "calibrate"])
def test_auto_kd_first_switches_and_times(lorenz, monkeypatch, caplog, case):
    """kd-tree first: brute force takes over when the model says it is much cheaper, and is
    timed on a block of rows when the model cannot call it; the tables stay exact."""
    monkeypatch.setattr(auto, "INDEX_MIN_LIB", 100)
    monkeypatch.setattr(auto, "PROBE_ROWS", 512)
    prep = _prep(_gappy(lorenz[:3000]), 6)
    ref = knn_tables(prep, [7], 3, backend="cpu", method="exact")
    if case == "switch":  # brute force predicted free: no timing, straight to exact
        monkeypatch.setattr(auto, "EXACT_PAIR_S", 1e-30)
        monkeypatch.setattr(auto, "EXACT_PAIR_DIM_S", 1e-30)
    else:  # nothing clear: brute force is timed
        monkeypatch.setattr(auto, "CLEAR_KD", 0.0)
        monkeypatch.setattr(auto, "CLEAR_EXACT", np.inf)
    s = Search("auto", recall=1.0)
    with caplog.at_level(logging.INFO, logger="xedm"):
        idx, dist = knn_tables(prep, [7], 3, backend="cpu", method=s)
    if case == "switch":
        assert "(model)" in caplog.text and s.used_name == "exact"
    else:
        assert "measured on" in caplog.text and s.used_name in ("exact", "kdtree")
    np.testing.assert_array_equal(idx, ref[0])
    np.testing.assert_array_equal(dist, ref[1])


def test_options_and_errors(lorenz):
    x = xr.DataArray(lorenz[:500], dims="time", name="x")
    with xedm.set_options(neighbors="kdtree"):
        assert xedm.simplex(x, E=3).attrs["neighbors"] == "kdtree"
    with xedm.set_options(neighbors="hnsw", neighbors_recall=0.9):
        assert xedm.simplex(x, E=3).attrs["neighbors"] == "hnsw"
    with pytest.raises(ValueError, match="neighbors_recall"):
        xedm.set_options(neighbors_recall=1.5).__enter__()
    with pytest.raises(ValueError, match="neighbors_recall"):
        xedm.simplex(x, E=3, neighbors_recall=0)
    with pytest.raises(TypeError, match="neighbors_recall"):
        xedm.simplex(x, E=3, neighbors_recall="high")
    with pytest.raises(ValueError, match="backend='gpu'"):
        xedm.simplex(x, E=3, neighbors="ivf")
    with pytest.raises(ValueError, match="one-coordinate"):
        xedm.simplex(x, E=3, neighbors="sorted1d")
    with pytest.raises(ValueError, match="neighbors="):
        xedm.ccm(x.to_dataset().assign(y=x), ["x", "y"], lib_sizes=[50], E=2,
                 neighbors="annoy")


def test_missing_extra_names_it(lorenz, monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name in ("faiss", "pynndescent"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    prep = _prep(lorenz[:500], 3)
    for m in APPROX:
        with pytest.raises(ImportError, match=r"xedm\[ann\]"):
            knn_tables(prep, [4], 0, backend="cpu", method=m)


def test_inputs_untouched(lorenz):
    x = _gappy(lorenz[:1000])
    keep = x.copy()
    prep = _prep(x, 4)
    Xpad = prep.Xpad.copy()
    for m in ("kdtree",) + APPROX:
        knn_tables(prep, [5], 2, backend="cpu", method=m)
    np.testing.assert_array_equal(prep.Xpad, Xpad)
    np.testing.assert_array_equal(x, keep)


def test_registry_declares_every_method():
    # one declaration per method: its module implements the contract, the option accepts it,
    # and no method module imports the dispatcher (the import circle this registry removed)
    import ast
    from pathlib import Path

    from xedm.neighbors import registry
    from xedm.options import _VALID

    assert _VALID["neighbors"] == set(registry.METHODS) == {
        "auto", "exact", "kdtree", "sorted1d", "nndescent", "hnsw", "ivf"}
    assert registry.EXACT_METHODS == ("exact", "kdtree", "sorted1d")
    for m in registry.REGISTRY.values():
        assert callable(m.load().tables), m.name
        src = Path(m.load().__file__).read_text()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module != "base" and not (
                    node.module is None and any(a.name == "base" for a in node.names)), m.name
    with pytest.raises(ValueError, match="needs backend='gpu'"):
        base.resolve_method("ivf", backend="cpu")
    with pytest.raises(ValueError, match="one-coordinate states only"):
        base.resolve_method("sorted1d", dim=3)
