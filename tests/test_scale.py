"""Skill and S-map do not depend on the data's unit (docs/conventions.md, difference 10).

Tolerances: skill (rho, and mae / rmse divided by the scale) 1e-12 relative; S-map predictions
and coefficients 1e-9 relative to the largest value of their column (scaling by 10^k rounds
the data, and the least-squares solution amplifies that by its condition number).  Scales that
are powers of 2 are exact, so there the results are bitwise the same.

Simplex's ``d_min >= 1e-6`` floor applies to the series after its exact power-of-2 scaling
(largest |value| in [0.5, 1)), so it is relative to the series' magnitude, and simplex-based
results (simplex, embed_dimension, predict_interval, ccm, xmap) are compared over the whole
range of units, of the target alone and of everything, up to 1e300 (squared distances of the
scaled series cannot overflow).
"""

import naive
import numpy as np
import pytest
import xarray as xr

import xedm
from conftest import logistic, make_dataset
from xedm.core.skill import skill

SKILL_SCALES = [1e-100, 1e-50, 1e-13, 1e13, 1e50, 1e100]
ALL_SCALES = SKILL_SCALES + [1e-8, 1e-300, 1e200, 1e300]
SMAP_SCALES = [1e-30, 1e-13, 1e-5, 1e5, 1e13, 1e30]
RTOL = 1e-12


@pytest.fixture(scope="module")
def x():
    rng = np.random.default_rng(7)
    return logistic(160) + 0.001 * rng.standard_normal(160)


@pytest.fixture(scope="module")
def pair():
    ds = xedm.datasets.coupled_logistic(150)
    return ds["x"].values.copy(), ds["y"].values.copy()


def same_skill(out, ref, s, rtol=RTOL):
    """rho equal, mae and rmse scaled by s, n equal."""
    np.testing.assert_allclose(out.rho.values, ref.rho.values, rtol=rtol)
    for key in ("mae", "rmse"):
        np.testing.assert_allclose(out[key].values / s, ref[key].values, rtol=rtol)
    np.testing.assert_array_equal(out.n.values, ref.n.values)


def target_scaled(x, s):
    """library x at its unit, target the same series times s."""
    return make_dataset(x[None], x * s, ["x"])


# --- the skill function itself -------------------------------------------------------------

@pytest.mark.parametrize("k", [-1000, -330, -40, 40, 330, 1000])
def test_skill_exact_under_powers_of_two(rng, k):
    o = rng.standard_normal((3, 50)) + 5.0
    p = o + 0.3 * rng.standard_normal((3, 50))
    p[1, 7] = np.nan
    ref = skill(o, p)
    out = skill(np.ldexp(o, k), np.ldexp(p, k))
    np.testing.assert_array_equal(out["rho"], ref["rho"])
    np.testing.assert_array_equal(out["mae"], np.ldexp(ref["mae"], k))
    np.testing.assert_array_equal(out["rmse"], np.ldexp(ref["rmse"], k))


@pytest.mark.parametrize("s", [1e-300, 1e-150, 1e-100, 1e100, 1e150, 1e300])
def test_skill_any_unit(rng, s):
    o = rng.standard_normal(200)
    p = o + 0.5 * rng.standard_normal(200)
    ref = naive.skill(o, p)
    out = skill(o * s, p * s)
    np.testing.assert_allclose(out["rho"], ref["rho"], rtol=RTOL)
    np.testing.assert_allclose(out["mae"] / s, ref["mae"], rtol=RTOL)
    np.testing.assert_allclose(out["rmse"] / s, ref["rmse"], rtol=RTOL)


def test_skill_observed_and_predicted_in_different_units(rng):
    o = rng.standard_normal(100)
    p = o + 0.5 * rng.standard_normal(100)
    out = skill(o * 1e200, p * 1e-200)
    np.testing.assert_allclose(out["rho"], naive.skill(o, p)["rho"], rtol=RTOL)
    np.testing.assert_allclose(out["rmse"] / 1e200, np.sqrt(np.mean(o**2)), rtol=1e-9)


# --- simplex-based functions ---------------------------------------------------------------

@pytest.mark.parametrize("s", SKILL_SCALES)
def test_simplex_target_any_unit(x, s):
    ref = target_scaled(x, 1.0).edm.simplex(E=2, columns="x", target="target")
    out = target_scaled(x, s).edm.simplex(E=2, columns="x", target="target")
    same_skill(out, ref, s)
    np.testing.assert_allclose(out.prediction.values / s, ref.prediction.values, rtol=RTOL)


def test_simplex_all_units(x):
    da = xr.DataArray(x, dims="time")
    ref = da.edm.simplex(E=2)
    for s in ALL_SCALES:
        same_skill((da * s).edm.simplex(E=2), ref, s)


@pytest.mark.parametrize("s", SKILL_SCALES)
def test_embed_dimension_and_predict_interval_target_any_unit(x, s):
    ref = target_scaled(x, 1.0)
    out = target_scaled(x, s)
    kw = dict(columns="x", target="target")
    same_skill(out.edm.embed_dimension(E_max=4, **kw), ref.edm.embed_dimension(E_max=4, **kw), s)
    same_skill(out.edm.predict_interval(E=2, Tp_max=3, **kw),
               ref.edm.predict_interval(E=2, Tp_max=3, **kw), s)


def test_embed_dimension_and_predict_interval_all_units(x):
    da = xr.DataArray(x, dims="time")
    for f in (lambda d: d.edm.embed_dimension(E_max=4),
              lambda d: d.edm.predict_interval(E=2, Tp_max=3)):
        ref = f(da)
        for s in ALL_SCALES:
            same_skill(f(da * s), ref, s)


def ccm_rho(xs, ys):
    ds = xr.Dataset({"x": ("time", xs), "y": ("time", ys)})
    out = xedm.ccm(ds, columns=["x", "y"], lib_sizes=[20, 60, 149], E=2, samples=4, seed=1,
                   progress=False)
    return out.rho


@pytest.mark.parametrize("s", SKILL_SCALES)
def test_ccm_target_any_unit(pair, s):
    xs, ys = pair
    ref = ccm_rho(xs, ys)
    out = ccm_rho(xs, ys * s)
    # library x (its unit unchanged), target y scaled: the Pearson sums alone see s
    np.testing.assert_allclose(out.sel(library="x", target="y"),
                               ref.sel(library="x", target="y"), rtol=RTOL)
    np.testing.assert_allclose(out.sel(library="x", target="x"),
                               ref.sel(library="x", target="x"), rtol=RTOL)


def test_ccm_all_units(pair):
    xs, ys = pair
    ref = ccm_rho(xs, ys)
    assert np.all(np.isfinite(ref))
    for s in ALL_SCALES:
        np.testing.assert_allclose(ccm_rho(xs * s, ys * s), ref, rtol=RTOL)


def xmap_rho(X):
    return xedm.xmap(xr.DataArray(X, dims=("series", "time")), dim="series", E=[2, 3, 2],
                     progress=False).rho.values


@pytest.mark.parametrize("s", SKILL_SCALES)
def test_xmap_any_unit(pair, x, s):
    X = np.stack([pair[0], pair[1], x[:150]])
    ref = xmap_rho(X)
    assert np.all(np.isfinite(ref))
    scale = np.array([1.0, 1.0, s])[:, None]
    out = xmap_rho(X * scale)
    # target 2 scaled, libraries 0 and 1 at their unit: the Pearson sums alone see s
    np.testing.assert_allclose(out[:2], ref[:2], rtol=RTOL)
    # library 2 in another unit: its own neighbours, the same skill
    np.testing.assert_allclose(out, ref, rtol=RTOL)


@pytest.mark.parametrize("s", ALL_SCALES)
def test_xmap_all_units(pair, x, s):
    X = np.stack([pair[0], pair[1], x[:150]])
    np.testing.assert_allclose(xmap_rho(X * s), xmap_rho(X), rtol=RTOL)


# --- S-map ---------------------------------------------------------------------------------

def assert_coefficients(out, ref, s, rtol=1e-9):
    """Predictions scale with s, intercepts with s, Jacobians not (target = the series)."""
    np.testing.assert_allclose(out.prediction.values / s, ref.prediction.values,
                               rtol=rtol, atol=rtol * np.nanmax(np.abs(ref.prediction.values)))
    c_out = out.coefficients.values.copy()
    c_out[:, 0] /= s
    c_ref = ref.coefficients.values
    big = np.nanmax(np.abs(c_ref), axis=0)  # each column relative to its largest value
    np.testing.assert_allclose(c_out / big, c_ref / big, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("s", SKILL_SCALES + [1e200, 1e300])
@pytest.mark.parametrize("theta", [0.0, 2.0])
def test_smap_skill_any_unit(x, s, theta):
    da = xr.DataArray(x, dims="time")
    ref = da.edm.smap(E=2, theta=theta)
    same_skill((da * s).edm.smap(E=2, theta=theta), ref, s, rtol=1e-9)


@pytest.mark.parametrize("s", SMAP_SCALES)
@pytest.mark.parametrize("theta", [0.0, 1.0, 4.0])
@pytest.mark.parametrize("knn", [None, 12])
def test_smap_predictions_and_coefficients_any_unit(x, s, theta, knn):
    da = xr.DataArray(x, dims="time")
    ref = da.edm.smap(E=3, theta=theta, knn=knn)
    assert_coefficients((da * s).edm.smap(E=3, theta=theta, knn=knn), ref, s)


@pytest.mark.parametrize("k", [-100, -43, 43, 100])
def test_smap_exact_under_powers_of_two(x, k):
    da = xr.DataArray(x, dims="time")
    ref = da.edm.smap(E=3, theta=2.0)
    out = xr.DataArray(np.ldexp(x, k), dims="time").edm.smap(E=3, theta=2.0)
    np.testing.assert_array_equal(out.prediction.values, np.ldexp(ref.prediction.values, k))
    c = ref.coefficients.values.copy()
    c[:, 0] = np.ldexp(c[:, 0], k)
    np.testing.assert_array_equal(out.coefficients.values, c)
    np.testing.assert_array_equal(out.rho.values, ref.rho.values)


def test_smap_columns_in_different_units(x):
    # two state variables, one in units 1e-13 of the other: the solve does not cut it (theta
    # = 0: the distances, which do depend on the relative units, do not enter)
    X = np.stack([x, np.roll(x, 1)])
    ref = make_dataset(X, x).edm.smap(E=2, theta=0.0, columns=["v0", "v1"], target="target",
                                      embedded=True)
    out = make_dataset(X * np.array([[1.0], [1e-13]]), x).edm.smap(
        E=2, theta=0.0, columns=["v0", "v1"], target="target", embedded=True)
    np.testing.assert_allclose(out.prediction.values, ref.prediction.values, rtol=1e-9)
    c = out.coefficients.values.copy()
    c[:, 2] *= 1e-13
    np.testing.assert_allclose(c, ref.coefficients.values, rtol=1e-8,
                               atol=1e-9 * np.nanmax(np.abs(ref.coefficients.values)))


def test_smap_theta0_tiny_unit(x):
    # reported: rho -1.0 at x * 1e-13 (the state columns fell under the rank cutoff)
    da = xr.DataArray(x, dims="time")
    ref = da.edm.smap(E=2, theta=0.0)
    out = (da * 1e-13).edm.smap(E=2, theta=0.0)
    same_skill(out, ref, 1e-13, rtol=1e-9)
    assert_coefficients(out, ref, 1e-13)
    assert float(ref.rho) > 0.5


@pytest.mark.parametrize("s", [1e-30, 1.0, 1e30])
def test_smap_large_theta(x, s):
    # reported: predictions exactly 0.0 at theta = 1e6 (every weight underflowed); weights
    # relative to the nearest neighbour give the fit dominated by that neighbour
    theta = 1e6
    out = xr.DataArray(x * s, dims="time").edm.smap(E=2, theta=theta)
    pred = out.prediction.values / s
    assert np.all(np.isfinite(pred[2:-1]))
    ref = naive.smap(x[None], x, 2, theta=theta)
    np.testing.assert_allclose(pred, ref["prediction"], rtol=1e-9, atol=1e-12)
    # the limit: the minimum-norm fit of the nearest neighbour's row alone (columns divided
    # by their norms), wherever every other weight is below 1e-20
    lib = naive.library_points(x[None], x, 2, 1, 1, [(0, 159)])
    checked = 0
    for i, p in enumerate(range(1, 159)):
        nb = naive.neighbors(x[None], p, lib, 2, 1, None, 0)
        d = np.array([n[0] for n in nb])
        if np.exp(-theta * (d[1] - d[0]) / d.mean()) > 1e-20:
            continue
        q = nb[0][2]
        a = np.array([1.0, x[q], x[q - 1]])
        a_s = a / np.abs(a)
        c = a_s * x[q + 1] / (a_s @ a_s) / np.abs(a)
        np.testing.assert_allclose(pred[i], c @ [1.0, x[p], x[p - 1]], rtol=1e-9)
        checked += 1
    assert checked > 100


def test_smap_near_1e200(x):
    # reported: SystemError from the smap kernel (squared distances overflowed)
    da = xr.DataArray(x, dims="time")
    thetas = [0.0, 1.0, 4.0]
    ref = da.edm.predict_nonlinear(E=2, theta=thetas)
    for s in (1e200, 1e300, 1.5e308 / np.abs(x).max()):
        out = (da * s).edm.predict_nonlinear(E=2, theta=thetas)
        same_skill(out, ref, s, rtol=1e-9)
    out = (da * 1e200 + 1e200).edm.smap(E=2, theta=1.0, knn=20)
    ref = (da + 1.0).edm.smap(E=2, theta=1.0, knn=20)
    same_skill(out, ref, 1e200, rtol=1e-9)


@pytest.mark.parametrize("s", [1e-100, 1e-13, 1e13, 1e100])
def test_predict_nonlinear_any_unit(x, s):
    da = xr.DataArray(x, dims="time")
    thetas = [0.0, 0.5, 2.0, 8.0]
    ref = da.edm.predict_nonlinear(E=2, theta=thetas)
    out = (da * s).edm.predict_nonlinear(E=2, theta=thetas)
    same_skill(out, ref, s, rtol=1e-9)
    assert out.attrs["best_theta"] == ref.attrs["best_theta"]


def test_smap_ridge_and_singular_values_keep_their_definition(x):
    # ridge: || diag(w) (A c - b) ||^2 + alpha sum c_j^2 with w = exp(-theta d / mean d), and
    # singular values of diag(w) [1, X] (with the ridge rows), in the data's units
    da = xr.DataArray(x, dims="time")
    out = da.edm.smap(E=2, theta=3.0, solver="ridge", alpha=0.05, singular_values=True)
    lib = naive.library_points(x[None], x, 2, 1, 1, [(0, 159)])
    for i, p in [(0, 1), (40, 41), (100, 101)]:
        nb = naive.neighbors(x[None], p, lib, 2, 1, None, 0)
        d = np.array([n[0] for n in nb])
        w = np.exp(-3.0 * d / d.mean())
        A = np.array([[1.0, x[q], x[q - 1]] for _, _, q in nb]) * w[:, None]
        b = np.array([x[q + 1] for _, _, q in nb]) * w
        A = np.vstack([A, np.sqrt(0.05) * np.array([[0.0, 1, 0], [0, 0, 1]])])
        b = np.concatenate([b, [0.0, 0.0]])
        c = np.linalg.solve(A.T @ A, A.T @ b)
        np.testing.assert_allclose(out.coefficients.values[i], c, rtol=1e-8)
        np.testing.assert_allclose(out.singular_values.values[i],
                                   np.linalg.svd(A, compute_uv=False), rtol=1e-10)


@pytest.mark.parametrize("s", [1e-200, 1.0, 1e200])
@pytest.mark.parametrize("alpha", [1e-30, 0.5, 1e30])
def test_smap_ridge_extremes_are_finite(x, s, alpha):
    # the ridge penalty is in the coefficients' units (unit-dependent by definition), but no
    # combination of unit, alpha and theta may break the solve
    da = xr.DataArray(x * s, dims="time")
    for theta in (0.0, 2.0, 1e6):
        out = da.edm.smap(E=2, theta=theta, solver="ridge", alpha=alpha, singular_values=True)
        assert np.all(np.isfinite(out.prediction.values))
        assert np.all(np.isfinite(out.coefficients.values))
        assert np.all(np.isfinite(out.singular_values.values))
