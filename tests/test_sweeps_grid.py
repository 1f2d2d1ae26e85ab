"""predict_exclusion_radius, predict_tau and skill_grid against tests/naive.py, against the
single functions, and predict_exclusion_radius against pyEDM's PredictExclusionRadius."""

import warnings

import naive
import numpy as np
import pytest
import xarray as xr

import xedm
from conftest import logistic


def _noisy(n, seed=0):
    rng = np.random.default_rng(seed)
    return logistic(n) + 0.02 * rng.standard_normal(n)


@pytest.mark.quick
def test_exclusion_radius_matches_naive_and_simplex():
    x = _noisy(90)
    x[40] = np.nan
    da = xr.DataArray(x, dims="time")
    radii = [0, 2, 7, 30]
    out = da.edm.predict_exclusion_radius(E=3, exclusion_radius=radii, knn=5, Tp=2)
    ref = naive.predict_exclusion_radius(x[None], x, 3, radii, knn=5, Tp=2)
    np.testing.assert_allclose(out.rho.values, ref, rtol=1e-9)
    assert out.attrs["best_exclusion_radius"] == radii[int(np.argmax(ref))]
    for r in (2, 30):  # the deep table cut per radius equals a search with that radius
        s = da.edm.simplex(E=3, exclusion_radius=r, knn=5, Tp=2)
        assert float(s.rho) == float(out.rho.sel(exclusion_radius=r))
        assert int(s.n) == int(out.n.sel(exclusion_radius=r))


def test_exclusion_radius_broadcast_and_errors():
    X = np.stack([_noisy(60, s) for s in range(3)])
    out = xr.DataArray(X, dims=("site", "time")).edm.predict_exclusion_radius(
        E=2, exclusion_radius=[1, 4])
    assert out.rho.dims == ("site", "exclusion_radius")
    for i in range(3):
        np.testing.assert_allclose(out.rho[i], naive.predict_exclusion_radius(
            X[i][None], X[i], 2, [1, 4]), rtol=1e-9)
    da = xr.DataArray(X[0], dims="time")
    with pytest.raises(ValueError, match="exclusion_radius"):
        da.edm.predict_exclusion_radius(E=2, exclusion_radius=[0, -1])
    with pytest.raises(ValueError, match="exclusion_radius"):
        da.edm.predict_exclusion_radius(E=2, exclusion_radius=[0, 500])


@pytest.mark.quick
def test_predict_tau_matches_naive():
    x = xedm.datasets.lorenz63(120).x.values
    da = xr.DataArray(x, dims="time")
    out = da.edm.predict_tau(E=3, tau=[1, 4], exclusion_radius=1)
    ref = naive.predict_tau(x[None], x, 3, [1, 4], excl=1)
    np.testing.assert_allclose(out.rho.values, ref, rtol=1e-9)
    assert out.attrs["best_tau"] == [1, 4][int(np.argmax(ref))]
    assert [int(t) for t in da.edm.predict_tau(E=2, tau_max=3).tau] == [1, 2, 3]
    with pytest.raises(ValueError, match="E=1"):
        da.edm.predict_tau(E=1)
    with pytest.raises(ValueError, match="tau"):
        da.edm.predict_tau(E=2, tau=[0, 1])


@pytest.mark.quick
def test_skill_grid_matches_naive():
    knn = 8
    x = _noisy(50, 3)
    x[30] = np.nan
    da = xr.DataArray(x, dims="time")
    Es, taus, Tps, thetas = [1, 3], [1, 2], [2, -5], [0.0, 2.0]
    g = da.edm.skill_grid(E=Es, tau=taus, Tp=Tps, theta=thetas, knn=knn, exclusion_radius=1)
    ref = naive.skill_grid(x[None], x, Es, taus, Tps, thetas, knn=knn, excl=1)
    np.testing.assert_allclose(g.rho.values, ref, rtol=1e-8, atol=1e-12)
    best = np.unravel_index(np.nanargmax(ref), ref.shape)
    for d, i, labels in zip(("E", "tau", "Tp", "theta"), best, (Es, taus, Tps, thetas),
                            strict=True):
        assert g.attrs[f"best_{d}"] == labels[i]
    assert g.attrs["best_rho"] == pytest.approx(np.nanmax(ref), rel=1e-10)


@pytest.mark.parametrize("knn", [10, None])
def test_skill_grid_equals_single_sweeps(knn):
    """Every cell is the S-map of predict_nonlinear with the same parameters (the same
    neighbours; the shared solve of every Tp agrees with the QR solver to rounding)."""
    X = np.stack([_noisy(120, s) for s in (4, 5)])
    da = xr.DataArray(X, dims=("site", "time"))
    g = da.edm.skill_grid(E=[2, 4], tau=[1, 3], Tp=[1, 2], theta=[0.0, 1.0, 3.0], knn=knn)
    assert g.rho.dims == ("site", "E", "tau", "Tp", "theta")
    assert g.best_E.dims == ("site",)
    for E in (2, 4):
        for tau in (1, 3):
            for Tp in (1, 2):
                one = da.edm.predict_nonlinear(E=E, tau=tau, Tp=Tp, theta=[0.0, 1.0, 3.0],
                                               knn=knn)
                np.testing.assert_allclose(g.rho.sel(E=E, tau=tau, Tp=Tp), one.rho,
                                           rtol=1e-10)
                np.testing.assert_array_equal(g.n.sel(E=E, tau=tau, Tp=Tp), one.n)


def test_skill_grid_errors():
    da = xr.DataArray(_noisy(50), dims="time")
    with pytest.raises(ValueError, match="theta"):
        da.edm.skill_grid(E=[2], theta=[-1.0])
    with pytest.raises(ValueError, match="E"):
        da.edm.skill_grid(E=[0, 2])
    with pytest.raises(ValueError, match="knn"):
        da.edm.skill_grid(E=[2], knn=60)


def test_pyedm_predict_exclusion_radius_parity():
    pyEDM = pytest.importorskip("pyEDM")
    import pandas as pd

    x = xedm.datasets.lorenz63(300).x.values
    radii = [0, 1, 5, 12, 25]
    df = pd.DataFrame({"Time": np.arange(1, 301), "x": x})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = pyEDM.PredictExclusionRadius(df, columns="x", target="x", lib="1 300",
                                          pred="1 300", E=3, Tp=1, tau=-1,
                                          exclusionRadius=radii, numProcess=1,
                                          showPlot=False)
    out = xr.DataArray(x, dims="time").edm.predict_exclusion_radius(E=3,
                                                                    exclusion_radius=radii)
    # pyEDM rounds rho to 6 decimals
    np.testing.assert_allclose(out.rho.values, py["rho"].to_numpy(), atol=6e-7, rtol=0)
    for r in (5, 25):  # unrounded: rho from pyEDM's own predictions at that radius
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = pyEDM.Simplex(df, columns="x", target="x", lib="1 300", pred="1 300", E=3,
                              Tp=1, tau=-1, exclusionRadius=r)
        o, p = s["Observations"].to_numpy(float), s["Predictions"].to_numpy(float)
        ok = np.isfinite(o) & np.isfinite(p)
        rho = np.corrcoef(o[ok], p[ok])[0, 1]
        assert abs(rho - float(out.rho.sel(exclusion_radius=r))) < 1e-12


@pytest.mark.gpu
def test_gpu_equals_cpu():
    from xedm.kernels import gpu_available

    if not gpu_available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    X = np.stack([_noisy(150, s) for s in (6, 7)])
    da = xr.DataArray(X, dims=("site", "time"))
    for name, kw in [("predict_exclusion_radius", {"E": 3, "exclusion_radius": [0, 4, 9]}),
                     ("predict_tau", {"E": 3, "tau": [1, 2]}),
                     ("skill_grid", {"E": [1, 3], "tau": [1, 2], "Tp": [1, 2],
                                     "theta": [0.0, 2.0], "knn": 12})]:
        f = getattr(da.edm, name)
        cpu, gpu = f(backend="cpu", **kw), f(backend="gpu", **kw)
        np.testing.assert_allclose(gpu.rho.values, cpu.rho.values, rtol=1e-9, err_msg=name)
