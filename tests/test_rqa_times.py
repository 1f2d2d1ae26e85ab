"""Recurrence times (T1, T2, RTE) and the border correction of the line histograms, against
the dense reference (naive_rqa), for self, cross and joint recurrence and windows."""

from __future__ import annotations

import naive_rqa as nr
import numpy as np
import pytest
import xarray as xr

import xedm
from conftest import logistic  # noqa: E402

EPS = 0.15


def _pair():
    return logistic(90), logistic(70, x0=0.3)


def _expected(R, theiler, symmetric, border):
    hd, hv, hw = nr.naive_line_histograms(R, theiler, symmetric)
    if border == "drop":
        bd, bv, bw = nr.naive_border_lines(R, theiler, symmetric)
        hd, hv, hw = hd - bd[:hd.size], hv - bv, hw - bw
    return hd, hv, hw


@pytest.mark.parametrize("kind, theiler", [("self", 0), ("self", 3), ("cross", 0),
                                           ("joint", 1)])
@pytest.mark.parametrize("border", ["keep", "drop"])
def test_times_and_border_match_dense(kind, theiler, border):
    x, y = _pair()
    da = xr.DataArray(x, dims="time")
    if kind == "self":
        res = da.edm.rqa(E=2, eps=EPS, theiler=theiler, border=border,
                         recurrence_times=True, backend="cpu")
        R = nr.naive_recurrence_matrix(x, E=2, eps=EPS)
    elif kind == "cross":
        res = da.edm.rqa(other=xr.DataArray(y, dims="time"), E=2, eps=EPS, border=border,
                         recurrence_times=True, backend="cpu")
        R = nr.naive_recurrence_matrix(y, x, E=2, eps=EPS)  # rows: other (pyrqa)
    else:
        da = da[:70]
        res = da.edm.rqa(joint=xr.DataArray(y, dims="time"), E=2, eps=EPS, theiler=theiler,
                         border=border, recurrence_times=True, backend="cpu")
        R = nr.naive_recurrence_matrix(x[:70], E=2, eps=EPS, joint=y, joint_eps=EPS)
    symmetric = kind != "cross"
    hd, hv, hw = _expected(R, theiler, symmetric, border)
    L = hv.size
    np.testing.assert_array_equal(res.diagonal_lines.values[:L - 1], hd[1:L])
    np.testing.assert_array_equal(res.vertical_lines.values[:L - 1], hv[1:])
    np.testing.assert_array_equal(res.white_vertical_lines.values[:L - 1], hw[1:])
    times = nr.naive_recurrence_times(R)
    for name in ("T1", "T2", "RTE"):
        assert float(res[name]) == pytest.approx(times[name], rel=1e-12), name
    assert float(res.RR) == R.sum() / R.size  # every point, whatever the border rule
    assert res.attrs["border"] == border
    # the measures come from the histograms used (corrected with border="drop")
    for name, h in (("DET", hd), ("LAM", hv)):
        share = (h[2:] * np.arange(2, h.size)).sum() / (h[1:] * np.arange(1, h.size)).sum()
        assert float(res[name]) == pytest.approx(share, rel=1e-12), name


def test_windowed_times_are_those_of_each_window():
    x = logistic(200)
    da = xr.DataArray(x, dims="time")
    win = da.edm.rqa(E=2, eps=EPS, window=80, step=60, recurrence_times=True,
                     border="drop", backend="cpu")
    for w, t in enumerate(win.time.values):
        one = da.isel(time=slice(t - 79, t + 1)).edm.rqa(E=2, eps=EPS, recurrence_times=True,
                                                    border="drop", backend="cpu")
        for name in ("T1", "T2", "RTE", "DET", "LAM", "W"):
            np.testing.assert_equal(float(win[name][w]), float(one[name]), err_msg=name)


def test_default_is_unchanged_and_bad_border():
    da = xr.DataArray(logistic(80), dims="time")
    plain = da.edm.rqa(E=2, eps=EPS, backend="cpu")
    assert "T1" not in plain and plain.attrs["border"] == "keep"
    with pytest.raises(ValueError, match="border="):
        da.edm.rqa(E=2, eps=EPS, border="dibo")
    with pytest.raises(TypeError, match="recurrence_times"):
        da.edm.rqa(E=2, eps=EPS, recurrence_times="yes")


def test_windows_view_draws_each_windows_eps():
    import matplotlib

    matplotlib.use("Agg")
    da = xr.DataArray(logistic(400), dims="time")
    win = da.edm.rqa(E=2, recurrence_rate=0.05, window=120, step=40, backend="cpu")
    fig = xedm.plot.rqa_windows(win, ["DET", "LAM"])
    assert [ax.get_ylabel() for ax in fig.axes] == ["DET", "LAM", "ε"]
    np.testing.assert_array_equal(fig.axes[-1].lines[0].get_ydata(), win.eps.values)
    np.testing.assert_array_equal(fig.axes[0].lines[0].get_ydata(), win.DET.values)
    with pytest.raises(ValueError, match="windowed"):
        xedm.plot.rqa_windows(da.edm.rqa(E=2, eps=EPS, backend="cpu"))


def _fan_matrix(x, k, E, tau, norm):
    """Dense FAN matrix: row i recurs where d < the distance of rank k in row i."""
    a = nr.naive_embed(x, E, tau)
    D = nr.naive_distance_matrix(a, a, norm)
    eps = np.sort(D, axis=1)[:, k]
    return D < np.where(eps > 0, eps, np.finfo(np.float64).tiny)[:, None]


@pytest.mark.parametrize("norm, theiler", [("euclidean", 1), ("maximum", 0),
                                           ("manhattan", 3)])
def test_neighbors_per_state_matches_dense(norm, theiler):
    x = np.random.default_rng(1).normal(size=130).cumsum()
    res = xr.DataArray(x, dims="time").edm.rqa(E=3, tau=2, neighbors_per_state=9, norm=norm,
                                               theiler=theiler)
    R = _fan_matrix(x, 9, 3, 2, norm)
    assert not np.array_equal(R, R.T)  # the hard case: not symmetric
    hd, hv, hw = nr.naive_line_histograms(R, theiler, True)  # both triangles, band left out
    L = hv.size
    np.testing.assert_array_equal(res.diagonal_lines.values[:L - 1], hd[1:L])
    np.testing.assert_array_equal(res.vertical_lines.values, hv[1:])
    np.testing.assert_array_equal(res.white_vertical_lines.values, hw[1:])
    ref = nr.naive_measures(R, theiler)
    for name, value in ref.items():
        np.testing.assert_allclose(float(res[name]), value, rtol=1e-12, err_msg=name)
    assert res.attrs["neighbors_per_state"] == 9 and "eps" not in res.attrs


def test_neighbors_per_state_windows_and_errors():
    x = logistic(200)
    da = xr.DataArray(x, dims="time")
    win = da.edm.rqa(E=2, neighbors_per_state=5, window=90, step=50)
    for w, t in enumerate(win.time.values):
        R = _fan_matrix(x[t - 89:t + 1], 5, 2, 1, "euclidean")
        np.testing.assert_allclose(float(win.DET[w]), nr.naive_measures(R)["DET"], rtol=1e-12)
    for kwargs, match in (({"eps": 0.1}, "instead of eps"),
                          ({"other": da}, "self recurrence"),
                          ({"backend": "gpu"}, "runs on the CPU"),
                          ({"border": "drop"}, "own eps"),
                          ({"window": 10}, "smaller than the number of states")):
        with pytest.raises(ValueError, match=match):
            da.edm.rqa(E=2, neighbors_per_state=9, **kwargs)
