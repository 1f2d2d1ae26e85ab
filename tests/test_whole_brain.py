"""xedm.datasets.whole_brain: recomputed with plain loops (sources, mixing), sparsity, seeds."""

import numpy as np
import pytest

from xedm import datasets


def _naive_sources(m, n, transient, coupling, seed):
    """The sources of whole_brain, integrated with a plain Python RK4 loop."""
    rng = np.random.default_rng(seed)
    rho = rng.uniform(28.0, 32.0, m)
    s = np.column_stack([rng.uniform(-10, 10, m), rng.uniform(-10, 10, m),
                         rng.uniform(10, 40, m)])
    drv = (np.arange(m) + rng.integers(1, m, m)) % m if coupling > 0 else None

    def f(v):
        d = np.empty_like(v)
        for i in range(m):
            x, y, z = v[i]
            dx = 10 * (y - x) + (coupling * (v[drv[i], 0] - x) if drv is not None else 0.0)
            d[i] = dx, x * (rho[i] - z) - y, x * y - 8 / 3 * z
        return d

    out = []
    dt = 0.01
    for t in range(transient + n):
        for _ in range(5):
            k1 = f(s)
            k2 = f(s + dt / 2 * k1)
            k3 = f(s + dt / 2 * k2)
            k4 = f(s + dt * k3)
            s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if t >= transient:
            out.append(s.copy())
    sig = np.stack(out, axis=-1).reshape(3 * m, n)  # (source, coord, time) -> signal 3s + c
    return (sig - sig.mean(1, keepdims=True)) / sig.std(1, keepdims=True), drv


def test_sources_and_mixing_match_loops():
    ds = datasets.whole_brain(40, 20, n_sources=3, fan_in=2, noise=0.0, transient=5, seed=3)
    sig, drv = _naive_sources(3, 20, 5, 2.0, 3)
    np.testing.assert_allclose(ds.signals.values, sig, rtol=1e-9, atol=1e-9)
    expect = np.zeros((3, 3), bool)
    expect[drv, np.arange(3)] = True
    np.testing.assert_array_equal(ds.adjacency.values, expect)
    src, w = ds.source.values, ds.weight.values
    mixed = np.array([sum(w[i, j] * sig[src[i, j]] for j in range(2)) for i in range(40)])
    np.testing.assert_allclose(ds.x.values, mixed, rtol=1e-9, atol=1e-9)


def test_shape_sparsity_noise_dtype_and_seed():
    ds = datasets.whole_brain(3000, 200, n_sources=20, noise=0.5, seed=1)
    assert ds.x.shape == (3000, 200) and ds.x.dims == ("series", "time")
    assert np.isfinite(ds.x.values).all()
    src = ds.source.values
    assert src.shape == (3000, 3) and src.min() >= 0 and src.max() < 60
    assert all(len(set(row)) == 3 for row in src)  # fan_in distinct signals per series
    assert (np.abs(ds.weight.values) >= 0.5).all() and (np.abs(ds.weight.values) <= 1.5).all()
    adj = ds.adjacency.values
    assert (adj.sum(axis=0) == 1).all() and not adj.diagonal().any()  # one driver, not itself
    sig = ds.signals.values
    mixed = np.einsum("ij,ijt->it", ds.weight.values, sig[src])
    ratio = (ds.x.values - mixed).std(axis=1) / mixed.std(axis=1)
    assert abs(np.median(ratio) - 0.5) < 0.03  # noise: 0.5 of the signal's sd
    again = datasets.whole_brain(3000, 200, n_sources=20, noise=0.5, seed=1)
    np.testing.assert_array_equal(again.x.values, ds.x.values)
    other = datasets.whole_brain(3000, 200, n_sources=20, noise=0.5, seed=2)
    assert not np.array_equal(other.x.values, ds.x.values)
    f32 = datasets.whole_brain(50, 100, n_sources=5, coupling=0, seed=0, dtype="float32")
    assert f32.x.dtype == np.float32 and not f32.adjacency.values.any()


@pytest.mark.parametrize("kwargs, match", [
    ({"fan_in": 100}, "fan_in"), ({"noise": -1}, "noise"), ({"dtype": "int8"}, "dtype"),
    ({"n_sources": 1}, "n_sources"), ({"series_dim": "time"}, "series_dim"),
])
def test_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        datasets.whole_brain(10, 50, **{"n_sources": 5, **kwargs})
