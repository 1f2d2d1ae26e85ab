"""Issue 42: pyEDM's documented examples unchanged through pyEDM and xedm.compat.pyedm (every
column compared), its auxiliary functions, generateSteps, S-map solvers, and CCM's random
libraries (pyEDM's for the same seed, per sample, also from the native xedm.ccm)."""

from __future__ import annotations

import random
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pyEDM = pytest.importorskip("pyEDM")
import xedm  # noqa: E402
from xedm.compat import pyedm as compat  # noqa: E402
from xedm.compat.pyedm import auxiliary  # noqa: E402
from xedm.compat.pyedm.examples import EXAMPLES  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from pyedm_examples import columns, run  # noqa: E402

S = pyEDM.sampleData


@pytest.mark.parametrize("source, func, data, kw", EXAMPLES,
                         ids=[f"{i}-{e[1]}-{e[2]}" for i, e in enumerate(EXAMPLES)])
def test_documented_example_equals_pyedm(source, func, data, kw):
    """Every column: pyEDM's sweeps round rho to 6 decimals, all else to rounding."""
    res = run(func, data, kw, pyEDM, compat)
    for cols in res["diff"].values():
        for c, v in cols.items():
            assert v is None or v <= (5e-7 if c == "rho" else 1e-12), (c, v)


def test_examples_runs(monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    compat.Examples()
    assert capsys.readouterr().out.count("sampleData") == 8
    plt.close("all")


def test_sample_data_is_pyedms_and_needs_pyedm(monkeypatch):
    assert list(compat.sampleData) == list(S)
    for k in S:
        pd.testing.assert_frame_equal(compat.sampleData[k], S[k])
    monkeypatch.setattr(auxiliary, "_SAMPLES", {})
    monkeypatch.setattr(auxiliary.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match="pip install pyEDM"):
        compat.sampleData  # noqa: B018


@pytest.mark.parametrize("method", ["ebisuzaki", "seasonal", "random_shuffle"])
def test_surrogate_data_equals_pyedm_after_the_same_seeds(method):
    df = S["TentMap"].iloc[:300]
    random.seed(5), np.random.seed(5)  # noqa: NPY002 (pyEDM draws from the global state)
    want = pyEDM.SurrogateData(df, "TentMap", method, 4)
    random.seed(5), np.random.seed(5)  # noqa: NPY002 (pyEDM draws from the global state)
    pd.testing.assert_frame_equal(compat.SurrogateData(df, "TentMap", method, 4), want,
                                  check_exact=True)
    with pytest.raises(ValueError, match="method"):
        compat.SurrogateData(df, "TentMap", "nope")


@pytest.mark.parametrize("kw", [dict(E=3, tau=-1, columns="x_t y_t"),
                                dict(E=2, tau=2, columns=["x_t"], includeTime=True),
                                dict(E=3, tau=-2, columns="x_t")])
def test_embed_and_compute_error_equal_pyedm(kw):
    df = S["block_3sp"]
    pd.testing.assert_frame_equal(compat.Embed(df, **kw), pyEDM.Embed(df, **kw),
                                  check_exact=True)
    o = df.x_t.to_numpy()
    p = o + 0.1 * np.sin(np.arange(len(o)))
    assert compat.ComputeError(o, p) == pyEDM.ComputeError(o, p)
    with pytest.raises(ValueError, match="E="):
        compat.Embed(df, E=0, columns="x_t")


GENERATE = [
    dict(lib="1 200", pred="1 2", E=2, generateSteps=8),  # lib to the end: fed back
    dict(lib="1 100", pred="101 150", E=2, generateSteps=5),  # pyEDM's pred inside the data
    dict(lib="1 200", pred="1 2", E=2, Tp=2, generateSteps=4, generateConcat=True),
]


@pytest.mark.parametrize("kw", GENERATE)
def test_generate_steps_equal_pyedm(kw):
    kw = dict(columns="x", target="x", **kw)
    df = S["circle"]
    columns(pyEDM.Simplex(df, **kw), compat.Simplex(df, **kw))
    want, got = pyEDM.SMap(df, theta=2, **kw), compat.SMap(df, theta=2, **kw)
    for k in want:
        for v in columns(want[k], got[k]).values():
            assert v < 1e-12
    with pytest.raises(ValueError, match="target"):
        compat.Simplex(S["block_3sp"], columns="x_t", target="y_t", lib="1 100", pred="1 2",
                       E=2, generateSteps=3)


@pytest.mark.parametrize("solver", ["LinearRegression", "Ridge", "Lasso"])
def test_smap_solver_equals_pyedm(solver):
    lm = pytest.importorskip("sklearn.linear_model")
    est = getattr(lm, solver)(**({} if solver == "LinearRegression" else {"alpha": 0.01}))
    kw = dict(columns="x_t", target="x_t", lib="1 100", pred="101 195", E=3, theta=2,
              solver=est)
    want, got = pyEDM.SMap(S["block_3sp"], **kw), compat.SMap(S["block_3sp"], **kw)
    for k in want:
        assert max(columns(want[k], got[k]).values()) < 1e-12
    with pytest.raises(ValueError, match="solver"):
        compat.SMap(S["block_3sp"], **{**kw, "solver": object()})


def test_ccm_samples_equal_pyedm_per_sample_and_native():
    """pyEDM's per-sample rho (its own sampling routine, same seed) equals xedm.ccm's
    (sampling="pyedm", keep_samples=True) to 1e-12, for both directions and every size."""
    from pyEDM.CCM import CCM as CCMClass
    from pyEDM.CCM import _ccm_for_libsize

    df, sizes, n, seed = S["sardine_anchovy_sst"], [10, 30, 60, 78], 15, 11
    ref = CCMClass(df, columns="anchovy", target="np_sst", E=3, libSizes=sizes, sample=n)
    ref.Validate()
    ref.Embed()
    got = xedm.ccm(df, ["anchovy", "np_sst"], lib_sizes=sizes, E=3, samples=n, seed=seed,
                   sampling="pyedm", keep_samples=True)
    for lib, tgt, emb, vals, idx in [
            ("anchovy", "np_sst", ref.embed_valid_col, ref.pred_vals_col, ref.idx_col),
            ("np_sst", "anchovy", ref.embed_valid_tgt, ref.pred_vals_tgt, ref.idx_tgt)]:
        for i, L in enumerate(sizes):
            want = _ccm_for_libsize(emb, vals, idx, L, n, 4, 0, np.random.default_rng(seed))
            have = got.rho_sample.sel(library=lib, target=tgt).isel(lib_size=i).values
            np.testing.assert_allclose(have, want, atol=1e-12, rtol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = pyEDM.CCM(df, columns="anchovy", target="np_sst", E=3, libSizes=sizes,
                          sample=n, seed=seed, parallel=False)
    assert max(columns(frame, compat.CCM(df, columns="anchovy", target="np_sst", E=3,
                                         libSizes=sizes, sample=n, seed=seed)).values()) < 1e-12
    with pytest.raises(ValueError, match="sampling"):
        xedm.ccm(df, ["anchovy", "np_sst"], lib_sizes=[20], E=3, sampling="nope")


def test_row_slices():
    df = S["Lorenz5D"]
    assert compat.row_slices(df, "1 500") == slice(df.Time[0], df.Time[499])
    assert compat.row_slices(df, [1, 2, 5, 6]) == [slice(df.Time[0], df.Time[1]),
                                                   slice(df.Time[4], df.Time[5])]
    with pytest.raises(ValueError, match="rows"):
        compat.row_slices(df, "1 5000")
    with pytest.raises(TypeError, match="rows"):
        compat.row_slices(df, 3.5)
