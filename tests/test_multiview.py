"""multiview against tests/naive.py, its defaults, broadcasting and error messages (parity
with pyEDM's Multiview is in tests/test_parity_extras.py)."""

from __future__ import annotations

import math

import naive
import numpy as np
import pytest
import xarray as xr

import xedm


@pytest.fixture(scope="module")
def ds():
    return xedm.datasets.lorenz63(90)


@pytest.mark.parametrize(("train_lib", "E", "D", "k"), [
    pytest.param(True, 2, 2, None, marks=pytest.mark.quick), (False, 1, 2, 2)])
def test_matches_naive(ds, train_lib, E, D, k):
    T = ds.sizes["time"]
    t = ds.time.values
    out = xedm.multiview(ds, ["x", "y", "z"], "x", E, D=D, multiview=k, train_lib=train_lib,
                         lib=slice(t[0], t[49]), pred=slice(t[50], t[-1]))
    X = np.stack([ds[c].values for c in "xyz"])
    pred = np.arange(T) >= 50
    rank = np.arange(T) < 50 if train_lib else pred
    V = math.comb(3 * E, D)
    kk = int(np.sqrt(V)) if k is None else k
    f, views, rhos = naive.multiview(X, ds.x.values, E, D, kk, lib=[(0, 49)], pred=pred,
                                     rank=rank)
    np.testing.assert_allclose(out.prediction.values, f, atol=1e-12)
    names = [f"{c}(t-{e})" for e in range(E) for c in "xyz"]
    assert out.view_columns.values.tolist() == [[names[i] for i in v] for v in views]
    np.testing.assert_allclose(out.view_rank_rho.values, rhos, atol=1e-12)
    assert out.attrs["views"] == V and out.sizes["view"] == kk
    ref = naive.skill(out.observed.values, f)
    assert float(out.rho) == pytest.approx(ref["rho"], abs=1e-12)



def test_core_order_and_view_predictions(ds):
    """The core's ``order`` (here worst first) picks the views, and ``view_prediction`` holds
    each top view's own simplex forecast (naive.simplex on its lagged columns)."""
    from xedm.core.embed import LibSpec
    from xedm.core.multiview import multiview as core_multiview
    from xedm.labeled.edm import _engines

    T, E, D, k = ds.sizes["time"], 2, 2, 3
    X = np.stack([ds[c].values for c in "xy"])
    y = ds.x.values
    pred = np.arange(T) >= 50
    rank = ~pred
    backend, method = _engines("cpu", None, ["knn_sweep"], n_lib=T, dim=D, knn=D + 1,
                               n_pred=T)
    out = core_multiview(X, y, E=E, tau=1, D=D, k=k, Tp=1, knn=None, excl=0,
                         lib=LibSpec(segments=np.array([[0, 49]])), pred_mask=pred,
                         rank_mask=rank, backend=backend, method=method,
                         order=lambda rho: np.argsort(rho, kind="stable"))
    V = math.comb(2 * E, D)
    _, views, rhos = naive.multiview(X, y, E, D, V, lib=[(0, 49)], pred=pred, rank=rank)
    worst = list(zip(views, rhos, strict=True))[::-1][:k]  # naive ranks best first
    assert [tuple(v) for v in out["views"]] == [v for v, _ in worst]
    np.testing.assert_allclose(out["rank_rho"], [r for _, r in worst], atol=1e-12)
    lagged = np.full((2 * E, T), np.nan)
    for e in range(E):
        lagged[2 * e:2 * e + 2, e:] = X[:, : T - e]
    for view, got in zip(out["views"], out["view_prediction"], strict=True):
        ref = naive.simplex(lagged[list(view)], y, D, lib=[(0, 49)], pred=pred,
                            embedded=True)["prediction"]
        np.testing.assert_allclose(got, ref, atol=1e-12)
    np.testing.assert_allclose(out["prediction"], out["view_prediction"].mean(axis=0),
                               atol=1e-12)

def test_defaults_halves_and_exclude_target(ds):
    T = ds.sizes["time"]
    out = ds.edm.multiview(columns=["x", "y", "z"], target="x", E=2, exclude_target=True)
    assert out.attrs["D"] == 3  # the columns given, the target's among them
    assert out.sizes["view"] == 2  # floor(sqrt(C(4, 3)))
    assert not any("x(" in c for c in out.view_columns.values.ravel())
    # default lib/pred with train_lib: first half / second half (pyEDM's)
    assert out.time.values[0] == ds.time.values[T // 2 + 1]
    assert out.attrs["xedm_function"] == "multiview"


def test_broadcasts_over_other_dims(ds):
    two = xr.concat([ds, ds[["x", "y", "z"]] * 2.0], dim="site")
    out = xedm.multiview(two, ["x", "y"], "x", 2, D=2)
    one = xedm.multiview(ds, ["x", "y"], "x", 2, D=2)
    assert out.prediction.dims == ("site", "time")
    np.testing.assert_allclose(out.prediction.isel(site=1).values,
                               2 * one.prediction.values, rtol=1e-12)
    assert (out.view_columns.isel(site=0) == one.view_columns).all()


@pytest.mark.parametrize(("kw", "err", "match"), [
    ({"D": 7}, ValueError, "only 6 lagged columns"),
    ({"D": 2, "multiview": 16}, ValueError, "only 15 views"),
    ({"D": 0}, ValueError, "D=0"),
    ({"train_lib": "yes"}, TypeError, "train_lib"),
])
def test_errors(ds, kw, err, match):
    with pytest.raises(err, match=match):
        xedm.multiview(ds, ["x", "y", "z"], "x", 2, **kw)


def test_exclude_target_needs_another_column(ds):
    with pytest.raises(ValueError, match="leaves no column"):
        xedm.multiview(ds, ["x"], "x", 2, exclude_target=True)


def test_plot_view(ds):
    import matplotlib

    matplotlib.use("Agg")
    out = xedm.multiview(ds, ["x", "y"], "x", 2, D=2)
    ax = out.edm.plot()
    assert "multiview" in ax.get_title()
