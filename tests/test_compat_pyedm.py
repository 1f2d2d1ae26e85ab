"""xedm.compat.pyedm against the installed pyEDM on pyEDM's own sample data (issue 25): the
same DataFrames (columns, rows, times) and the same numbers to 1e-6.

Differences that pyEDM's own conventions force, and so are not compared:
- (none for S-map's ``Pred_Variance`` and CCM's random libraries any more: both are pyEDM's,
  compared here and in tests/test_compat_pyedm_examples.py);
- pyEDM's sweeps round rho to 6 decimals (ComputeError): within the 1e-6 tolerance;
- Multiview's Time is pyEDM's: the row numbers 1..N, not the data's times (compared).
The cases avoid the differences listed in docs/conventions.md (NaN data, several lib
segments with Tp != 0, negative Tp beyond the embedding span)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

pyEDM = pytest.importorskip("pyEDM")
from xedm.compat import pyedm as compat  # noqa: E402

ATOL = 1e-6
S = pyEDM.sampleData
FAST = {"numProcess": 1, "showPlot": False}  # pyEDM's sweeps: one worker, no plot

CASES = [
    ("Simplex", "block_3sp", dict(columns="x_t", target="x_t", lib="1 100", pred="101 195",
                                  E=3)),
    ("Simplex", "block_3sp", dict(columns="x_t", target="x_t", lib="1 100", pred="1 50", E=3,
                                  Tp=2)),
    ("Simplex", "block_3sp", dict(columns="x_t y_t", target="y_t", lib="1 100",
                                  pred="101 195", E=2, tau=-2, knn=5, exclusionRadius=2)),
    ("Simplex", "block_3sp", dict(columns="x_t y_t z_t", target="x_t", lib="1 100",
                                  pred="101 195", embedded=True)),
    ("Simplex", "Lorenz5D", dict(columns="V1", target="V1", lib="1 500", pred="501 800",
                                 E=4)),
    ("Simplex", "circle_noTime", dict(columns="x", target="y", lib="1 100", pred="101 195",
                                      E=2, noTime=True)),
    ("SMap", "block_3sp", dict(columns="x_t", target="x_t", lib="1 100", pred="101 195",
                               E=3, theta=2.0)),
    ("SMap", "block_3sp", dict(columns="x_t y_t z_t", target="x_t", lib="1 100",
                               pred="101 195", theta=3.0, embedded=True)),
    ("SMap", "circle", dict(columns="x", target="x", lib="1 100", pred="50 150", E=2,
                            theta=1.0)),
    ("EmbedDimension", "TentMap", dict(columns="TentMap", target="TentMap", lib="1 100",
                                       pred="201 500", maxE=6, **FAST)),
    ("PredictInterval", "TentMap", dict(columns="TentMap", target="TentMap", lib="1 100",
                                        pred="201 500", E=2, maxTp=5, **FAST)),
    ("PredictNonlinear", "TentMapNoise", dict(columns="TentMap", target="TentMap",
                                              lib="1 100", pred="201 400", E=2,
                                              theta="0.1 1 4", **FAST)),
    ("PredictExclusionRadius", "TentMap", dict(columns="TentMap", target="TentMap",
                                               lib="1 300", pred="1 300", E=2,
                                               exclusionRadius=[0, 2, 5], **FAST)),
    ("Multiview", "block_3sp", dict(columns="x_t y_t z_t", target="x_t", lib="1 100",
                                    pred="101 198", E=2, numProcess=1)),
    ("Multiview", "block_3sp", dict(columns="x_t y_t", target="y_t", lib="101 198",
                                    pred="1 100", E=2, D=2, Tp=0, multiview=2,
                                    trainLib=False, numProcess=1)),
    ("Multiview", "Lorenz5D", dict(columns="V1 V2 V3", target="V2", lib="1 300",
                                   pred="301 500", E=2, D=2, Tp=2, tau=-2, multiview=3,
                                   exclusionRadius=2, numProcess=1)),
    ("CCM", "sardine_anchovy_sst", dict(columns="anchovy", target="np_sst", libSizes="78",
                                        parallel=False,
                                        sample=2, E=3, seed=0)),
]


def _frames(name, a, b) -> float:
    """Same columns and rows; every number equal to ATOL; the largest difference."""
    assert list(a.columns) == list(b.columns), name
    assert len(a) == len(b), name
    worst = 0.0
    for c in a.columns:
        if c == "Columns":  # Multiview's views: tuples of lag names, in rank order
            assert a[c].tolist() == b[c].tolist(), name
            continue
        x = pd.to_numeric(a[c]).to_numpy(float)
        y = pd.to_numeric(b[c]).to_numpy(float)
        np.testing.assert_array_equal(np.isnan(x), np.isnan(y), err_msg=f"{name} {c}")
        ok = ~np.isnan(x)
        if ok.any():
            worst = max(worst, float(np.max(np.abs(x[ok] - y[ok]))))
        np.testing.assert_allclose(x[ok], y[ok], atol=ATOL, rtol=0, err_msg=f"{name} {c}")
    return worst


@pytest.mark.parametrize("func, data, kw", CASES,
                         ids=[f"{f}-{d}-{i}" for i, (f, d, _) in enumerate(CASES)])
def test_same_frames_as_pyedm(func, data, kw):
    df = S[data]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyEDM's own warnings
        want = getattr(pyEDM, func)(df, **kw)
    got = getattr(compat, func)(df, **kw)
    if isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _frames(f"{func} {key}", got[key], want[key])
    else:
        _frames(func, got, want)


def test_ccm_at_smaller_sizes_equals_pyedm():
    """The random libraries are pyEDM's for the same seed: equal numbers at every size."""
    kw = dict(columns="anchovy", target="np_sst", libSizes="40", sample=40, E=3,
              parallel=False,
              seed=1)
    got = compat.CCM(S["sardine_anchovy_sst"], **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = pyEDM.CCM(S["sardine_anchovy_sst"], **kw)
    assert list(got.columns) == list(want.columns) == ["LibSize", "anchovy:np_sst",
                                                       "np_sst:anchovy"]
    np.testing.assert_allclose(got.iloc[:, 1:], want.iloc[:, 1:], atol=1e-12, rtol=0)


@pytest.mark.parametrize("kw, words", [
    (dict(generateSteps=5, target="y_t"), "target"),
    (dict(returnObject=True), "returnObject"),
    (dict(ignoreNan=False), "ignoreNan"),
    (dict(tau=1), "tau > 0"),
    (dict(lib="1 100 5"), "pairs"),
    (dict(lib="1 5000"), "1..198"),
    (dict(pred="1 50 60 90"), "one pair"),
    (dict(columns="nope"), "not in the DataFrame"),
])
def test_arguments_without_counterpart_are_refused(kw, words):
    base = dict(columns="x_t", target="x_t", lib="1 100", pred="101 195", E=3)
    with pytest.raises((ValueError, TypeError), match=words):
        compat.Simplex(S["block_3sp"], **{**base, **kw})
    with pytest.raises(ValueError, match="solver"):
        compat.SMap(S["block_3sp"], **base, solver=object())


def test_multiview_view_order_is_pyedms():
    """pyEDM ranks the views by rho rounded to 6 decimals with numpy's argsort reversed: NaN
    first, tied views the later first."""
    rho = np.array([0.5, np.nan, 0.7, 0.70000001, 0.5, 0.9])
    assert compat._view_order(rho).tolist() == [1, 5, 3, 2, 4, 0]


@pytest.mark.parametrize("kw, words", [
    (dict(knn=5), "ignores knn"),
    (dict(excludeTarget=True), "excludeTarget"),
    (dict(D=7), "only 6 lagged columns"),
    (dict(multiview=21), "only 20 views"),
    (dict(pred=""), "both lib and pred"),
    (dict(lib="", pred="", trainLib=False), "both lib and pred"),
    (dict(returnObject=True), "returnObject"),
])
def test_multiview_arguments_pyedm_ignores_are_refused(kw, words):
    base = dict(columns="x_t y_t z_t", target="x_t", lib="1 100", pred="101 195", E=2)
    with pytest.raises(ValueError, match=words):
        compat.Multiview(S["block_3sp"], **{**base, **kw})


def test_multiview_knn_is_refused_even_at_d_plus_1():
    """pyEDM 2.5.7's Multiview ignores knn (it always uses D + 1): any knn but 0 is refused,
    as the module says, D + 1 included (issue 43: a knn that does nothing is nonsense)."""
    base = dict(columns="x_t y_t z_t", target="x_t", lib="1 100", pred="101 195", E=2)
    with pytest.raises(ValueError, match="knn=4 is refused: pyEDM 2.5.7's Multiview ignores"):
        compat.Multiview(S["block_3sp"], **base, knn=4)
