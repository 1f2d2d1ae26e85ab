"""Tests for xedm.datasets: every generator is recomputed here with plain Python/numpy loops."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import xarray as xr

from xedm import datasets

# chaotic orbits amplify rounding differences, so compare the first steps tightly
SHORT = 40


# ----------------------------------------------------------------- independent references
def ref_logistic(n, r, x0, transient=0):
    x = x0
    out = []
    for _ in range(transient):
        x = r * x * (1 - x)
    for _ in range(n):
        out.append(x)
        x = r * x * (1 - x)
    return np.array(out)


def ref_coupled(n, r_x, r_y, bxy, byx, x0, y0, transient=0):
    xs, ys = [], []
    x, y = x0, y0
    for t in range(transient + n):
        if t >= transient:
            xs.append(x)
            ys.append(y)
        x, y = x * (r_x - r_x * x - bxy * y), y * (r_y - r_y * y - byx * x)
    return np.array(xs), np.array(ys)


def ref_rk4(f, s0, dt, n, subsample, transient):
    s = np.array(s0, dtype=float)

    def step(s):
        k1 = f(s)
        k2 = f(s + dt / 2 * k1)
        k3 = f(s + dt / 2 * k2)
        k4 = f(s + dt * k3)
        return s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    for _ in range(transient):
        s = step(s)
    out = [s]
    for _ in range(n - 1):
        for _ in range(subsample):
            s = step(s)
        out.append(s)
    return np.array(out).T


def lorenz_rhs(sigma=10.0, rho=28.0, beta=8 / 3):
    return lambda s: np.array(
        [sigma * (s[1] - s[0]), s[0] * (rho - s[2]) - s[1], s[0] * s[1] - beta * s[2]]
    )


def l96_rhs(F):
    def f(s):
        N = len(s)
        return np.array(
            [(s[(i + 1) % N] - s[(i - 2) % N]) * s[(i - 1) % N] - s[i] + F for i in range(N)]
        )

    return f


def assert_no_nan(obj):
    arrays = obj.data_vars.values() if isinstance(obj, xr.Dataset) else [obj]
    for a in arrays:
        if np.issubdtype(a.dtype, np.floating):
            assert np.isfinite(a.values).all()


# ----------------------------------------------------------------- determinism and layout
CASES = [
    (datasets.logistic_map, (300,), {}),
    (datasets.tent_map, (300,), {}),
    (datasets.henon, (300,), {}),
    (datasets.coupled_logistic, (300,), {}),
    (datasets.lorenz63, (300,), {"subsample": 2}),
    (datasets.rossler, (300,), {}),
    (datasets.lorenz96, (300,), {"N": 6}),
    (datasets.many_series, (7, 300), {"density": 0.3, "seed": 3}),
    (datasets.sparse_network, (7, 300), {"lags": (1, 3), "seed": 3}),
]


@pytest.mark.parametrize("func,args,kwargs", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_deterministic_labeled_finite(func, args, kwargs):
    a = func(*args, **kwargs)
    b = func(*args, **kwargs)
    xr.testing.assert_identical(a, b)
    assert isinstance(a, (xr.DataArray, xr.Dataset))
    assert "time" in a.coords and a.sizes["time"] == 300
    assert np.all(np.diff(a.time.values) > 0)
    assert a.attrs["system"]
    assert_no_nan(a)


@pytest.mark.parametrize("func,args,kwargs", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_attrs_are_netcdf_safe(func, args, kwargs):
    for value in func(*args, **kwargs).attrs.values():
        assert isinstance(value, (str, int, float, list)) and not isinstance(value, bool)


# ----------------------------------------------------------------- maps
@pytest.mark.quick
def test_logistic_matches_loop():
    da = datasets.logistic_map(SHORT, r=3.7, x0=0.3, transient=5)
    np.testing.assert_allclose(da.values, ref_logistic(SHORT, 3.7, 0.3, 5), rtol=1e-9)
    assert da.attrs["r"] == 3.7 and da.attrs["x0"] == 0.3
    assert da.dims == ("time",) and da.time.values.tolist() == list(range(SHORT))


def test_logistic_range_and_parameter_effect():
    da = datasets.logistic_map(5000, r=3.9)
    assert 0 < float(da.min()) and float(da.max()) <= 3.9 / 4 + 1e-12
    # r = 3.2 settles on a period-2 cycle: a chaotic r does not
    periodic = datasets.logistic_map(200, r=3.2, transient=500).values
    np.testing.assert_allclose(periodic[2:], periodic[:-2], atol=1e-9)
    assert not np.allclose(da.values[102:200], da.values[100:198], atol=1e-3)


@pytest.mark.quick
def test_tent_matches_loop_and_stays_chaotic():
    mu, x = 1.99, 0.3
    ref = []
    for _ in range(SHORT):
        ref.append(x)
        x = mu * min(x, 1 - x)
    da = datasets.tent_map(SHORT)
    np.testing.assert_allclose(da.values, ref, rtol=1e-9)
    long = datasets.tent_map(20_000).values
    assert long.min() > 0 and long.max() < 1
    assert long[-1000:].std() > 0.1  # does not collapse to 0 as mu = 2 would


@pytest.mark.quick
def test_henon_matches_loop():
    a, b = 1.4, 0.3
    x, y = 0.1, 0.1
    for _ in range(100):
        x, y = 1 - a * x * x + y, b * x
    xs, ys = [], []
    for _ in range(SHORT):
        xs.append(x)
        ys.append(y)
        x, y = 1 - a * x * x + y, b * x
    ds = datasets.henon(SHORT)
    np.testing.assert_allclose(ds.x.values, xs, rtol=1e-9)
    np.testing.assert_allclose(ds.y.values, ys, rtol=1e-9)
    big = datasets.henon(5000)
    assert -1.5 < float(big.x.min()) and float(big.x.max()) < 1.5


# ----------------------------------------------------------------- coupled logistic
@pytest.mark.quick
def test_coupled_logistic_matches_loop():
    kw = dict(r_x=3.7, r_y=3.6, beta_xy=0.05, beta_yx=0.15, x0=0.3, y0=0.6)
    ds = datasets.coupled_logistic(SHORT, **kw, transient=3)
    xs, ys = ref_coupled(SHORT, *kw.values(), transient=3)
    np.testing.assert_allclose(ds.x.values, xs, rtol=1e-9)
    np.testing.assert_allclose(ds.y.values, ys, rtol=1e-9)
    for key, value in kw.items():
        assert ds.attrs[key] == value


def test_coupled_logistic_beta_xy_zero_removes_y_to_x():
    # y cannot reach x: x is the plain logistic map whatever y does
    a = datasets.coupled_logistic(2000, beta_xy=0.0, beta_yx=0.1, y0=0.2)
    b = datasets.coupled_logistic(2000, beta_xy=0.0, beta_yx=0.3, y0=0.7)
    np.testing.assert_array_equal(a.x.values, b.x.values)
    # x (r - r x) and r x (1 - x) round differently, so compare the first steps loosely
    np.testing.assert_allclose(a.x.values[:15], ref_logistic(15, 3.8, 0.4), rtol=1e-6)
    assert not np.allclose(a.y.values, b.y.values)
    # and the converse: with beta_xy > 0, changing y changes x
    c = datasets.coupled_logistic(200, beta_xy=0.02, y0=0.2)
    d = datasets.coupled_logistic(200, beta_xy=0.02, y0=0.21)
    assert not np.allclose(c.x.values, d.x.values)


def test_coupled_logistic_beta_yx_zero_removes_x_to_y():
    a = datasets.coupled_logistic(500, beta_xy=0.05, beta_yx=0.0, x0=0.4)
    b = datasets.coupled_logistic(500, beta_xy=0.05, beta_yx=0.0, x0=0.6)
    np.testing.assert_array_equal(a.y.values, b.y.values)
    np.testing.assert_allclose(a.y.values[:15], ref_logistic(15, 3.5, 0.2), rtol=1e-6)


def test_coupled_logistic_default_range():
    ds = datasets.coupled_logistic(10_000)
    for v in (ds.x, ds.y):
        assert 0 < float(v.min()) and float(v.max()) < 1
    assert "x -> y: 0.1" in ds.attrs["drives"]


def test_coupled_logistic_divergence_is_an_error():
    with pytest.raises(ValueError, match="diverged"):
        datasets.coupled_logistic(100, beta_xy=5.0, beta_yx=5.0)


# ----------------------------------------------------------------- flows
@pytest.mark.quick
def test_lorenz63_matches_reference_rk4():
    ds = datasets.lorenz63(SHORT, dt=0.01, subsample=3, transient=50, x0=(1.0, 2.0, 3.0))
    ref = ref_rk4(lorenz_rhs(), [1.0, 2.0, 3.0], 0.01, SHORT, 3, 50)
    for i, name in enumerate("xyz"):
        np.testing.assert_allclose(ds[name].values, ref[i], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ds.time.values, np.arange(SHORT) * 0.03)


def test_lorenz63_parameters_and_subsample():
    fine = datasets.lorenz63(300, transient=0)
    coarse = datasets.lorenz63(60, subsample=5, transient=0)
    np.testing.assert_allclose(coarse.x.values, fine.x.values[::5], rtol=1e-12)
    np.testing.assert_allclose(coarse.time.values, fine.time.values[::5])
    other = datasets.lorenz63(300, rho=20.0, transient=0)
    assert not np.allclose(other.x.values, fine.x.values)
    assert other.attrs["rho"] == 20.0


def test_lorenz63_attractor_ranges():
    ds = datasets.lorenz63(20_000)
    assert -25 < float(ds.x.min()) < -10 and 10 < float(ds.x.max()) < 25
    assert 0 < float(ds.z.min()) and float(ds.z.max()) < 55


def test_lorenz63_million_points_fast():
    datasets.lorenz63(10)  # compile (or load from cache) outside the timing
    start = time.perf_counter()
    ds = datasets.lorenz63(1_043_112)
    elapsed = time.perf_counter() - start
    assert ds.sizes["time"] == 1_043_112
    assert np.isfinite(ds.x.values).all()
    assert elapsed < 5.0, elapsed


@pytest.mark.quick
def test_rossler_matches_reference_rk4():
    a, b, c = 0.2, 0.2, 5.7

    def f(s):
        return np.array([-s[1] - s[2], s[0] + a * s[1], b + s[2] * (s[0] - c)])

    ds = datasets.rossler(SHORT, subsample=2, transient=100)
    ref = ref_rk4(f, [1.0, 1.0, 1.0], 0.05, SHORT, 2, 100)
    for i, name in enumerate("xyz"):
        np.testing.assert_allclose(ds[name].values, ref[i], rtol=1e-8, atol=1e-10)
    big = datasets.rossler(5000)
    assert float(big.z.min()) >= -1e-9 and float(big.x.max()) < 15


@pytest.mark.quick
def test_lorenz96_matches_reference_and_layout():
    da = datasets.lorenz96(SHORT, N=5, F=8.0, subsample=2, transient=30)
    s0 = np.full(5, 8.0)
    s0[0] += 0.01
    ref = ref_rk4(l96_rhs(8.0), s0, 0.01, SHORT, 2, 30)
    np.testing.assert_allclose(da.values, ref, rtol=1e-8, atol=1e-10)
    assert da.dims == ("node", "time")
    assert da.node.values.tolist() == list(range(5))


def test_lorenz96_ring_symmetry():
    # the equations are invariant under rotating the ring: rotate x0, rotate the output
    rng = np.random.default_rng(0)
    x0 = 8 + rng.normal(size=8)
    a = datasets.lorenz96(50, N=8, x0=x0, transient=0)
    b = datasets.lorenz96(50, N=8, x0=np.roll(x0, 3), transient=0)
    np.testing.assert_allclose(np.roll(a.values, 3, axis=0), b.values, rtol=1e-10, atol=1e-10)


def test_lorenz96_forcing_effect():
    # below F ~ 1 the dynamics decay to the fixed point x_i = F
    calm = datasets.lorenz96(200, N=10, F=0.5, transient=5000)
    np.testing.assert_allclose(calm.values, 0.5, atol=1e-3)
    chaotic = datasets.lorenz96(2000, N=10, F=8.0)
    assert float(chaotic.std("time").min()) > 1.0


# ----------------------------------------------------------------- many series
def ref_network(x_start, r, w, n):
    x = x_start.copy()
    out = [x.copy()]
    c = w.sum(axis=0)
    for _ in range(n - 1):
        f = r * x * (1 - x)
        m = len(x)
        x = (1 - c) * f + np.array([sum(w[j, i] * f[j] for j in range(m)) for i in range(m)])
        out.append(x.copy())
    return np.array(out).T


@pytest.mark.quick
def test_many_series_matches_loop():
    ds = datasets.many_series(6, SHORT, density=0.4, coupling=0.3, seed=5, transient=0)
    ref = ref_network(ds.x.values[:, 0], ds.r.values, ds.coupling.values, SHORT)
    np.testing.assert_allclose(ds.x.values, ref, rtol=1e-9, atol=1e-12)


def test_many_series_graph_structure():
    ds = datasets.many_series(30, 100, density=0.1, coupling=0.25, seed=2)
    adj = ds.adjacency.values
    w = ds.coupling.values
    assert adj.dtype == bool and adj.shape == (30, 30)
    assert not adj.diagonal().any()
    assert ((w > 0) == adj).all()
    in_weight = w.sum(axis=0)
    driven = adj.any(axis=0)
    np.testing.assert_allclose(in_weight[driven], 0.25)
    np.testing.assert_allclose(in_weight[~driven], 0.0)
    assert ds.attrs["n_edges"] == int(adj.sum()) > 0
    assert ds.x.dims == ("series", "time")
    assert (ds.driver.values == ds.series.values).all()
    assert 0 <= float(ds.x.min()) and float(ds.x.max()) <= 1


def test_many_series_seed():
    a = datasets.many_series(10, 50, density=0.3, seed=1)
    b = datasets.many_series(10, 50, density=0.3, seed=2)
    assert not np.array_equal(a.adjacency.values, b.adjacency.values) or not np.allclose(
        a.x.values, b.x.values
    )


def test_many_series_no_edges_means_independent():
    ds = datasets.many_series(5, 300, density=0.0, seed=4, transient=0)
    assert not ds.adjacency.values.any()
    for i in range(5):
        ref = ref_logistic(SHORT, float(ds.r[i]), float(ds.x[i, 0]))
        np.testing.assert_allclose(ds.x.values[i, :SHORT], ref, rtol=1e-9)


def test_many_series_drivers_matter_only_downstream():
    # perturbing an undriven source changes the series it drives, not unrelated ones
    ds = datasets.many_series(12, 60, density=0.15, seed=7, transient=0)
    adj = ds.adjacency.values
    sources = [j for j in range(12) if adj[j].any() and not adj[:, j].any()]
    if not sources:
        pytest.skip("graph has no pure source for this seed")
    j = sources[0]
    x0 = ds.x.values[:, 0].copy()
    x0[j] += 1e-3
    moved = ref_network(x0, ds.r.values, ds.coupling.values, 60)
    # reachable set from j
    reach = {j}
    frontier = [j]
    while frontier:
        k = frontier.pop()
        for i in np.nonzero(adj[k])[0]:
            if i not in reach:
                reach.add(int(i))
                frontier.append(int(i))
    for i in range(12):
        changed = not np.allclose(moved[i], ds.x.values[i], atol=1e-12)
        assert changed == (i in reach)


def test_many_series_custom_dim():
    ds = datasets.many_series(4, 20, series_dim="neuron")
    assert ds.x.dims == ("neuron", "time")


# ----------------------------------------------------------------- input checks
@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: datasets.logistic_map(0), "n must be >= 1"),
        (lambda: datasets.logistic_map(2.5), "n must be an integer"),
        (lambda: datasets.tent_map(10, transient=-1), "transient"),
        (lambda: datasets.lorenz63(10, dt=0), "dt"),
        (lambda: datasets.lorenz63(10, subsample=0), "subsample"),
        (lambda: datasets.lorenz63(10, x0=(1, 2)), "x0"),
        (lambda: datasets.lorenz96(10, N=3), "N must be >= 4"),
        (lambda: datasets.many_series(5, 10, density=1.5), "density"),
        (lambda: datasets.many_series(5, 10, coupling=-0.1), "coupling"),
        (lambda: datasets.many_series(5, 10, r=(3.0, 4.5)), "r must be"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ----------------------------------------------------------------- parameter checks
# every numeric parameter: a real finite number (TypeError naming it otherwise, bool refused),
# within its range (ValueError naming it); sizes bounded before anything is allocated
GENERATORS = {
    "logistic_map": (datasets.logistic_map, (50,)),
    "tent_map": (datasets.tent_map, (50,)),
    "henon": (datasets.henon, (50,)),
    "coupled_logistic": (datasets.coupled_logistic, (50,)),
    "lorenz63": (datasets.lorenz63, (50,)),
    "rossler": (datasets.rossler, (50,)),
    "lorenz96": (datasets.lorenz96, (50,)),
    "many_series": (datasets.many_series, (3, 50)),
    "sparse_network": (datasets.sparse_network, (4, 50)),
}
REALS = [
    ("logistic_map", "r"), ("logistic_map", "x0"), ("tent_map", "mu"), ("tent_map", "x0"),
    ("henon", "a"), ("henon", "b"), ("coupled_logistic", "r_x"), ("coupled_logistic", "r_y"),
    ("coupled_logistic", "beta_xy"), ("coupled_logistic", "beta_yx"),
    ("coupled_logistic", "x0"), ("coupled_logistic", "y0"), ("lorenz63", "dt"),
    ("lorenz63", "sigma"), ("lorenz63", "rho"), ("lorenz63", "beta"), ("rossler", "dt"),
    ("rossler", "a"), ("rossler", "b"), ("rossler", "c"), ("lorenz96", "F"),
    ("lorenz96", "dt"), ("many_series", "density"), ("many_series", "coupling"),
    ("sparse_network", "coupling"),
]
INTEGERS = [
    ("logistic_map", "transient"), ("tent_map", "transient"), ("henon", "transient"),
    ("coupled_logistic", "transient"), ("lorenz63", "subsample"), ("lorenz63", "transient"),
    ("rossler", "subsample"), ("rossler", "transient"), ("lorenz96", "subsample"),
    ("lorenz96", "transient"), ("many_series", "transient"), ("many_series", "seed"),
    ("sparse_network", "transient"), ("sparse_network", "seed"),
]


def _call(name, **kwargs):
    func, args = GENERATORS[name]
    return func(*args, **kwargs)


# range-checked parameters (dt, density, coupling) refused nan/-inf before: not repeated here
FINITE = [
    (name, param, bad)
    for name, param in REALS
    for bad in (math.nan, math.inf, -math.inf, 10**400)
    if param not in ("density", "coupling") and (param != "dt" or bad > 0)
]


def _raises_naming(exc, param, call):
    with pytest.raises(exc, match=rf"(?<![A-Za-z0-9_]){param}(?![A-Za-z0-9_])") as info:
        call()
    assert "float()" not in str(info.value) and "convert" not in str(info.value)
    return info.value


@pytest.mark.parametrize("bad", ["a", None, [0.1, 0.2], True, 1j, "3.9"], ids=repr)
@pytest.mark.parametrize("name,param", REALS, ids=[f"{a}-{b}" for a, b in REALS])
def test_real_parameter_type(name, param, bad):
    _raises_naming(TypeError, param, lambda: _call(name, **{param: bad}))


@pytest.mark.parametrize(
    "name,param,bad", FINITE, ids=[f"{a}-{b}-{c!r:.8}" for a, b, c in FINITE]
)
def test_real_parameter_finite(name, param, bad):
    _raises_naming(ValueError, param, lambda: _call(name, **{param: bad}))


@pytest.mark.parametrize("bad", ["5", 2.0, 2.5, True, [3]], ids=repr)
@pytest.mark.parametrize("name,param", INTEGERS, ids=[f"{a}-{b}" for a, b in INTEGERS])
def test_integer_parameter_type(name, param, bad):
    _raises_naming(TypeError, param, lambda: _call(name, **{param: bad}))


@pytest.mark.parametrize(
    "name,kwargs,param",
    [
        ("logistic_map", {"transient": 2**63 + 1}, "transient"),
        ("lorenz63", {"subsample": 2**63}, "subsample"),
        ("many_series", {"seed": -1}, "seed"),
        ("many_series", {"r": 0.0}, "r"),
        ("many_series", {"r": 4.5}, "r"),
        ("many_series", {"r": [0.1, 0.2, 0.3]}, "r"),
        ("lorenz96", {"x0": [1.0, math.nan] * 5}, "x0"),
        ("henon", {"x0": (0.1, math.inf)}, "x0"),
    ],
)
def test_parameter_range(name, kwargs, param):
    _raises_naming(ValueError, param, lambda: _call(name, **kwargs))


@pytest.mark.parametrize(
    "name,kwargs,param",
    [
        ("logistic_map", {"x0": [0.1, 0.2]}, "x0"),
        ("coupled_logistic", {"y0": (0.1,)}, "y0"),
        ("henon", {"x0": "ab"}, "x0"),
        ("henon", {"x0": None}, "x0"),
        ("lorenz63", {"x0": ["a", "b", "c"]}, "x0"),
        ("rossler", {"x0": (1.0, None, 1.0)}, "x0"),
        ("lorenz96", {"x0": [True] * 10}, "x0"),
        ("many_series", {"r": "a"}, "r"),
        ("many_series", {"r": None}, "r"),
        ("many_series", {"r": (3.7, "b")}, "r"),
        ("many_series", {"series_dim": 3}, "series_dim"),
        ("many_series", {"series_dim": None}, "series_dim"),
    ],
)
def test_parameter_type(name, kwargs, param):
    _raises_naming(TypeError, param, lambda: _call(name, **kwargs))


def test_many_series_dim_must_not_clash():
    _raises_naming(ValueError, "series_dim", lambda: datasets.many_series(3, 20, series_dim="time"))


def test_fuzz_reports():
    # the calls the fuzz test reported, verbatim
    _raises_naming(TypeError, "r", lambda: datasets.logistic_map(50, r="a"))
    _raises_naming(TypeError, "x0", lambda: datasets.logistic_map(50, x0=[0.1, 0.2]))
    _raises_naming(TypeError, "dt", lambda: datasets.lorenz63(50, dt=None))
    _raises_naming(TypeError, "dt", lambda: datasets.lorenz63(50, dt="x"))


@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: datasets.tent_map(10**15), "n"),
        (lambda: datasets.logistic_map(2**63 + 1), "n"),
        (lambda: datasets.henon(2**31), "n"),
        (lambda: datasets.lorenz63(2**30), "n"),
        (lambda: datasets.lorenz96(2**28, N=10), "N"),
        (lambda: datasets.lorenz96(50, N=10**15), "N"),
        (lambda: datasets.many_series(10**15, 10**15), "n_series"),
        (lambda: datasets.many_series(2**16, 10), "n_series"),
        (lambda: datasets.many_series(10, 2**31), "n"),
    ],
)
def test_size_limit(call, param):
    err = _raises_naming(ValueError, param, call)
    assert "2**31" in str(err)


def test_size_limit_boundary():
    # the limit counts float64 values: 2**31 of them at most
    assert datasets._checks._MAX_VALUES == 2**31
    datasets._checks._check_size(2**31, "n=2147483648")
    with pytest.raises(ValueError, match="2\\*\\*31"):
        datasets._checks._check_size(2**31 + 1, "n=2147483649")


def test_memory_error_becomes_value_error(monkeypatch):
    def no_memory(*args):
        raise MemoryError("Allocation failed (probably too large).")

    monkeypatch.setattr(datasets.maps, "_tent_kernel", no_memory)
    _raises_naming(ValueError, "n", lambda: datasets.tent_map(1000))


def test_many_series_scalar_r_is_a_fixed_rate():
    ds = datasets.many_series(5, 40, density=0.3, r=3.8, seed=2)
    assert (ds.r.values == 3.8).all()
    assert ds.attrs["r_range"] == [3.8, 3.8]
    # same graph and starts as the equivalent pair
    pair = datasets.many_series(5, 40, density=0.3, r=(3.8, 3.8), seed=2)
    xr.testing.assert_identical(ds, pair)



@pytest.mark.quick
def test_ar1_null_series():
    x = datasets.ar1(4, 3000, phi=0.7, seed=3)
    assert x.dims == ("series", "time") and x.shape == (4, 3000)
    np.testing.assert_array_equal(x.values, datasets.ar1(4, 3000, phi=0.7, seed=3).values)
    # the recursion holds exactly, with standard normal innovations
    e = x.values[:, 1:] - 0.7 * x.values[:, :-1]
    assert abs(e.std() - 1) < 0.05 and abs(np.corrcoef(e[0], e[1])[0, 1]) < 0.1
    lag1 = [np.corrcoef(r[1:], r[:-1])[0, 1] for r in x.values]
    assert np.allclose(lag1, 0.7, atol=0.05)
    with pytest.raises(ValueError, match="phi must be in"):
        datasets.ar1(2, 10, phi=1.0)
    with pytest.raises(TypeError, match="n_series must be an integer"):
        datasets.ar1(2.5, 10)
