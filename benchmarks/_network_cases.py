"""Systems with a known causal graph for benchmarks/networks.py, of kinds causal_network was
not built on (delayed, noisy, flows, stochastic) and null cases.

Every generator returns ``(X (N, T), truth (N, N), lag (N, N))``: ``truth[i, j]`` True when j
drives i (library i, target j: the orientation of xmap), ``lag[i, j]`` the delay k >= 1 of
that link in steps (j at t - k acts on i at t; 0 where there is no link).  Independent of
xedm's own generators, except where a case says so.
"""

from __future__ import annotations

import numpy as np


def _graph(rng, n, density, lags):
    """A random directed graph without self-loops, every series driven by at least one and at
    most three others when density allows; each edge's delay drawn from ``lags``."""
    adj = (rng.random((n, n)) < density) & ~np.eye(n, dtype=bool)  # [driven, driver]
    for i in range(n):
        if not adj[i].any():
            others = [j for j in range(n) if j != i]
            adj[i, rng.choice(others)] = True
        on = np.flatnonzero(adj[i])
        if len(on) > 3:
            adj[i, rng.choice(on, len(on) - 3, replace=False)] = False
    lag = np.where(adj, rng.choice(np.asarray(lags), (n, n)), 0)
    return adj, lag


def coupled_maps(n=20, T=1000, *, lags=(1,), density=0.1, coupling=0.2, seed=0,
                 transient=200):
    """Logistic maps x_i(t+1) = (1 - c) f_i(x_i(t)) + c mean_{j -> i} f_j(x_j(t + 1 - k_ji)),
    f_i(x) = r_i x (1 - x), r_i in (3.7, 3.9); each link's delay k_ji drawn from ``lags``."""
    rng = np.random.default_rng(seed)
    adj, lag = _graph(rng, n, density, lags)
    r = rng.uniform(3.7, 3.9, n)
    kmax = int(max(lags))
    total = T + transient + kmax
    F = np.empty((n, total))
    X = np.empty((n, total))
    X[:, :kmax] = rng.uniform(0.1, 0.9, (n, kmax))
    F[:, :kmax] = r[:, None] * X[:, :kmax] * (1 - X[:, :kmax])
    ii, jj = np.nonzero(adj)
    kk = lag[ii, jj]
    w = coupling / adj.sum(axis=1)
    for t in range(kmax, total):
        x = (1 - coupling) * F[:, t - 1]
        np.add.at(x, ii, w[ii] * F[jj, t - kk])
        X[:, t] = x
        F[:, t] = r * x * (1 - x)
    return X[:, -T:], adj, lag


def observed_with_noise(X, level, seed=0):
    """X plus independent Gaussian observation noise of ``level`` times each series' sd."""
    rng = np.random.default_rng(seed + 1000)
    return X + level * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)


def stochastic(n=10, T=1000, *, lags=(1, 2, 3), density=0.15, seed=0):
    """A nonlinear stochastic network (after Runge et al. 2019's test models):
    x_i(t) = a_i x_i(t-1) + sum_{j -> i} c_ji g_ji(x_j(t - k_ji)) + e_i(t), a_i in (0.3, 0.6),
    c = +-0.5 / sqrt(in-degree), g linear, x (1 + 5 exp(-x^2/20)) or a quadratic bump, e
    standard normal."""
    rng = np.random.default_rng(seed)
    adj, lag = _graph(rng, n, density, lags)
    a = rng.uniform(0.3, 0.6, n)
    kind = rng.integers(0, 3, (n, n))
    sign = rng.choice([-1.0, 1.0], (n, n))
    c = sign * 0.5 / np.sqrt(np.maximum(adj.sum(axis=1, keepdims=True), 1))
    kmax = int(max(lags))
    total = T + 200 + kmax
    X = np.zeros((n, total))
    E = rng.standard_normal((n, total))
    ii, jj = np.nonzero(adj)

    def g(kd, x):
        return np.where(kd == 0, x, np.where(kd == 1, x * (1 + 5 * np.exp(-x * x / 20)),
                                             np.exp(-x * x / 2) * 2 - 1))

    for t in range(kmax, total):
        x = a * X[:, t - 1] + E[:, t]
        src = X[jj, t - lag[ii, jj]]
        np.add.at(x, ii, c[ii, jj] * g(kind[ii, jj], src))
        X[:, t] = x
    return X[:, -T:], adj, lag


def lorenz96(xedm, N=20, F=10.0, T=2000):
    """xedm.datasets.lorenz96 (dt 0.01, every 5th step): node i driven by i-2, i-1, i+1."""
    X = xedm.datasets.lorenz96(T, N=N, F=F).values
    truth = np.zeros((N, N), bool)
    for i in range(N):
        for d in (-2, -1, 1):
            truth[i, (i + d) % N] = True
    return X, truth, truth.astype(np.int64)


def rossler_chain(n=4, T=2000, *, coupling=0.15, dt=0.02, every=10, seed=0):
    """A chain of Rössler oscillators 0 -> 1 -> ... -> n-1 (x-diffusive coupling of each to
    its predecessor), frequencies close enough that neighbours lock their phases:
    dx_i = -w_i y_i - z_i + K (x_{i-1} - x_i), dy_i = w_i x_i + 0.15 y_i,
    dz_i = 0.2 + z_i (x_i - 10); RK4, every ``every``-th step observed."""
    rng = np.random.default_rng(seed)
    w = 1.0 + rng.uniform(-0.02, 0.02, n)
    K = np.r_[0.0, np.full(n - 1, coupling)]
    s = rng.uniform(-1, 1, (3, n))

    def f(s):
        x, y, z = s
        drive = np.r_[0.0, x[:-1]] - x
        return np.stack([-w * y - z + K * drive, w * x + 0.15 * y, 0.2 + z * (x - 10.0)])

    out = np.empty((n, T))
    steps = (T + 200) * every
    for k in range(steps):
        k1 = f(s)
        k2 = f(s + dt / 2 * k1)
        k3 = f(s + dt / 2 * k2)
        k4 = f(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if k % every == 0 and k // every >= 200:
            out[:, k // every - 200] = s[0]
    truth = np.zeros((n, n), bool)
    for i in range(1, n):
        truth[i, i - 1] = True
    return out, truth, truth.astype(np.int64)


def seasonal(n=10, T=1000, period=12, strength=0.5, seed=0):
    """Independent logistic maps, every one pushed by the same seasonal cycle (no links):
    x_i(t+1) = (1 - s) f_i(x_i(t)) + s (0.5 + 0.4 sin(2 pi t / period + phi_i))."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(3.7, 3.9, n)
    phi = rng.uniform(0, 0.5, n)
    x = rng.uniform(0.1, 0.9, n)
    out = np.empty((n, T + 100))
    for t in range(T + 100):
        out[:, t] = x
        x = (1 - strength) * r * x * (1 - x) + strength * (
            0.5 + 0.4 * np.sin(2 * np.pi * t / period + phi))
    return out[:, 100:], np.zeros((n, n), bool), np.zeros((n, n), np.int64)


def hidden_driver(n=8, T=1000, coupling=0.3, seed=0):
    """One unobserved logistic map drives every observed one (no links among those
    observed)."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(3.7, 3.9, n)
    x = rng.uniform(0.1, 0.9, n)
    h = 0.4
    out = np.empty((n, T + 100))
    for t in range(T + 100):
        out[:, t] = x
        fh = 3.9 * h * (1 - h)
        x = (1 - coupling) * r * x * (1 - x) + coupling * fh
        h = fh
    return out[:, 100:], np.zeros((n, n), bool), np.zeros((n, n), np.int64)


def red_noise(xedm, n=20, T=400, phi=0.9, seed=0):
    """Independent AR(1) series (xedm.datasets.ar1): no links."""
    X = xedm.datasets.ar1(n, T, phi=phi, seed=seed).values
    return X, np.zeros((n, n), bool), np.zeros((n, n), np.int64)
