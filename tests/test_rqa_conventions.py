"""rqa(convention=...): each convention reproduces its tool's numbers -- "pyunicorn" against
pyunicorn's RecurrencePlot (when installed), "crp" against a step-by-step reference of the CRP
toolbox's crqa.m (tests/naive_rqa.py) -- and the switch's defaults, overrides and errors."""

from __future__ import annotations

import importlib.util

import naive_rqa as nr
import numpy as np
import pytest
import xarray as xr

import xedm  # noqa: F401  (the .edm accessor)
from conftest import logistic  # noqa: E402
from xedm.recurrence.measures import MEASURES

ALL = ("RR", "DET", "L", "L_max", "DIV", "ENTR", "LAM", "TT", "V_max", "V_ENTR", "W",
       "W_max", "W_ENTR")


def _series(kind, n):
    rng = np.random.default_rng(5)
    if kind == "logistic":
        x = logistic(n)
    elif kind == "noise":
        x = rng.normal(size=n)
    else:
        x = np.sin(np.arange(n) * 0.31) + 0.05 * rng.normal(size=n)
    return x.astype(np.float32).astype(np.float64)  # float32-exact (pyunicorn's storage)


def _ours(x, **kw):
    return xr.DataArray(x, dims="time").edm.rqa(backend="cpu", **kw)


@pytest.mark.skipif(importlib.util.find_spec("pyunicorn") is None,
                    reason="pyunicorn not installed")
@pytest.mark.parametrize("kind, E, tau, q, norm", [
    ("logistic", 3, 1, 0.05, None), ("noise", 2, 1, 0.1, "euclidean"),
    ("sine", 3, 2, 0.08, None), ("noise", 2, 1, 0.0005, None)])
def test_pyunicorn_convention_equals_pyunicorn(kind, E, tau, q, norm):
    from pyunicorn.timeseries import RecurrencePlot

    x = _series(kind, 250)
    metric = "supremum" if norm is None else norm
    eps = nr.gap_eps(x, q, E, tau, norm or "maximum")
    rp = RecurrencePlot(x, dim=E, tau=tau, metric=metric, threshold=eps, silence_level=3)
    res = _ours(x, E=E, tau=tau, eps=eps, norm=norm, convention="pyunicorn")
    assert res.attrs["convention"] == "pyunicorn"
    assert res.attrs["norm"] == (norm or "maximum") and res.attrs["w_min"] == 1
    theirs = {"RR": rp.recurrence_rate(), "DET": rp.determinism(2),
              "L": rp.average_diaglength(2), "L_max": rp.max_diaglength(),
              "ENTR": rp.diag_entropy(2), "LAM": rp.laminarity(2), "TT": rp.trapping_time(2),
              "V_max": rp.max_vertlength(), "V_ENTR": rp.vert_entropy(2),
              "W": rp.average_white_vertlength(1), "W_max": rp.max_white_vertlength(),
              "W_ENTR": rp.white_vert_entropy(1)}
    for k, v in theirs.items():
        assert float(res[k]) == pytest.approx(float(v), rel=1e-12, abs=1e-15), k
    if q < 0.001:  # the empty case: pyunicorn's regularised ratios give 0, not NaN
        assert float(res.DET) == 0.0 and float(res.L_max) == float(theirs["L_max"])


def _windows(x, window, step, E, tau):
    n = len(x) - window + 1
    return [x[s:s + window] for s in range(0, n, step)]


@pytest.mark.parametrize("norm, theiler, E, tau, eps", [
    (None, 1, 2, 1, 0.12), ("euclidean", 3, 3, 2, 0.3), ("manhattan", 0, 2, 1, 0.2),
    (None, 7, 1, 1, 0.02)])
def test_crp_convention_equals_crqa_reference(norm, theiler, E, tau, eps):
    x = _series("logistic", 160)
    res = _ours(x, E=E, tau=tau, eps=eps, norm=norm, theiler=theiler, convention="crp")
    assert res.attrs["convention"] == "crp" and res.attrs["norm"] == (norm or "maximum")
    R = nr.naive_recurrence_matrix(x, E=E, tau=tau, eps=eps, norm=norm or "maximum")
    ref = nr.naive_crqa(R, theiler)
    for k in ALL:
        np.testing.assert_allclose(float(res[k]), ref[k], rtol=1e-12, atol=0, err_msg=k)
    # the same call in windows: each window is crqa.m of its piece
    win = _ours(x, E=E, tau=tau, eps=eps, norm=norm, theiler=theiler, convention="crp",
                window=60, step=50)
    for i, piece in enumerate(_windows(x, 60, 50, E, tau)):
        R = nr.naive_recurrence_matrix(piece, E=E, tau=tau, eps=eps, norm=norm or "maximum")
        ref = nr.naive_crqa(R, theiler)
        for k in ("RR", "DET", "L", "LAM", "TT", "V_max", "W", "W_max"):
            np.testing.assert_allclose(float(win[k][i]), ref[k], rtol=1e-12, err_msg=k)


def test_crp_cross_and_joint_and_sweep():
    x, y = _series("logistic", 120), _series("noise", 100)
    res = _ours(x, other=xr.DataArray(y, dims="time"), E=2, eps=[0.3, 0.6],
                convention="crp")
    for k, eps in enumerate([0.3, 0.6]):
        # pyrqa's (and crp.m's) orientation: columns are the states of data, rows those of other
        R = nr.naive_recurrence_matrix(y, x, E=2, eps=eps, norm="maximum")
        ref = nr.naive_crqa(R, 0, symmetric=False)
        for name in ALL:
            np.testing.assert_allclose(float(res[name][k]), ref[name], rtol=1e-12,
                                       err_msg=name)
    z = _series("sine", 120)
    res = _ours(x, joint=xr.DataArray(z, dims="time"), E=2, eps=0.3, joint_eps=0.4,
                theiler=2, convention="crp")
    R = nr.naive_recurrence_matrix(x, E=2, eps=0.3, norm="maximum", joint=z, joint_eps=0.4)
    ref = nr.naive_crqa(R, 2)
    for name in ALL:
        np.testing.assert_allclose(float(res[name]), ref[name], rtol=1e-12, err_msg=name)


def test_crp_empty_lines_are_zero_not_nan():
    # a few isolated recurrences: no diagonal or vertical line of length 2
    x = np.array([0.0, 1.0, 2.0, 3.0, 0.05, 5.0, 6.0, 7.0, 8.0, 9.0])
    res = _ours(x, eps=0.1, convention="crp")
    ref = nr.naive_crqa(nr.naive_recurrence_matrix(x, eps=0.1, norm="maximum"), 1)
    assert float(res.L) == 0.0 and float(res.L_max) == 0.0 and float(res.ENTR) == 0.0
    assert float(res.V_max) == 0.0 and np.isnan(float(res.TT))
    for name in ALL:
        np.testing.assert_allclose(float(res[name]), ref[name], err_msg=name)
    default = _ours(x, eps=0.1)
    assert np.isnan(float(default.L)) and float(default.L_max) == 1.0  # lines of 1 only


def test_default_convention_is_unchanged_and_explicit_args_win():
    x = _series("sine", 200)
    a = _ours(x, E=2, eps=0.2)
    b = _ours(x, E=2, eps=0.2, convention="xedm", norm="euclidean", theiler=1, w_min=2)
    assert a.attrs["convention"] == "xedm"
    for k in MEASURES:
        np.testing.assert_array_equal(a[k].values, b[k].values)
    c = _ours(x, E=2, eps=0.2, convention="pyunicorn", norm="euclidean", w_min=2)
    assert c.attrs["norm"] == "euclidean" and c.attrs["w_min"] == 2
    np.testing.assert_allclose(float(c.DET), float(a.DET), rtol=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    ({"convention": "pyrqa2"}, r"convention='pyrqa2' is invalid.*'xedm', 'pyunicorn', 'crp'"),
    ({"convention": None}, "convention=None is invalid"),
    ({"convention": "crp", "border": "drop"}, "convention='crp' does not combine with border"),
    ({"convention": "crp", "recurrence_times": True}, "recurrence_times=True"),
    ({"convention": "crp", "backend": "gpu"}, "backend='gpu'"),
])
def test_convention_errors(kwargs, match):
    x = xr.DataArray(_series("sine", 100), dims="time")
    kw = {"eps": 0.2} | kwargs
    with pytest.raises(ValueError, match=match):
        x.edm.rqa(**kw)
    with pytest.raises(ValueError, match="neighbors_per_state="):
        x.edm.rqa(neighbors_per_state=5, convention="crp")
