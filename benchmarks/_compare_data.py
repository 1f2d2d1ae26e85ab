"""Data of benchmarks/compare.py: deterministic series (pure Python) and their xarray/pandas forms.

Lorenz-63, the logistic map, the coupled logistic pair of Sugihara et al. (2012) and a ring
of logistic maps, generated without xedm so that every tool gets the very same numbers.
"""

from __future__ import annotations


def lorenz_x(n, dt=0.01, subsample=5, transient=1000):
    """x of Lorenz-63 (sigma=10, rho=28, beta=8/3), RK4 with step dt, every `subsample` steps.

    Pure Python on floats: deterministic, no dependency, ~0.1 s per 10,000 samples.
    """
    import numpy as np

    s, r, b = 10.0, 28.0, 8.0 / 3.0
    x, y, z = 1.0, 1.0, 1.0
    h = dt
    out = np.empty(n)

    def step(x, y, z):
        k1x, k1y, k1z = s * (y - x), x * (r - z) - y, x * y - b * z
        x2, y2, z2 = x + 0.5 * h * k1x, y + 0.5 * h * k1y, z + 0.5 * h * k1z
        k2x, k2y, k2z = s * (y2 - x2), x2 * (r - z2) - y2, x2 * y2 - b * z2
        x3, y3, z3 = x + 0.5 * h * k2x, y + 0.5 * h * k2y, z + 0.5 * h * k2z
        k3x, k3y, k3z = s * (y3 - x3), x3 * (r - z3) - y3, x3 * y3 - b * z3
        x4, y4, z4 = x + h * k3x, y + h * k3y, z + h * k3z
        k4x, k4y, k4z = s * (y4 - x4), x4 * (r - z4) - y4, x4 * y4 - b * z4
        return (
            x + h / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x),
            y + h / 6.0 * (k1y + 2 * k2y + 2 * k3y + k4y),
            z + h / 6.0 * (k1z + 2 * k2z + 2 * k3z + k4z),
        )

    for _ in range(transient):
        x, y, z = step(x, y, z)
    for i in range(n):
        out[i] = x
        for _ in range(subsample):
            x, y, z = step(x, y, z)
    return out


def logistic(n, r=3.9, x0=0.4, transient=100):
    """Logistic map x[t+1] = r x[t] (1 - x[t]); pure Python, ~0.3 s per million points."""
    import numpy as np

    out = np.empty(n)
    x = x0
    for _ in range(transient):
        x = r * x * (1.0 - x)
    for i in range(n):
        out[i] = x
        x = r * x * (1.0 - x)
    return out


def coupled_logistic(n, transient=100):
    """Sugihara et al. (2012) pair: x drives y (beta_yx = 0.1), y barely drives x (0.02)."""
    import numpy as np

    x, y = 0.4, 0.2
    out = np.empty((2, n))
    for t in range(transient + n):
        if t >= transient:
            out[0, t - transient] = x
            out[1, t - transient] = y
        x, y = x * (3.8 - 3.8 * x - 0.02 * y), y * (3.5 - 3.5 * y - 0.1 * x)
    return out


def network_logistic(n_series, n, beta=0.05, transient=100):
    """n_series logistic maps (r in 3.6..3.9) on a ring, series i driven by series i-1."""
    import numpy as np

    r = np.linspace(3.6, 3.9, n_series)
    x = np.linspace(0.2, 0.7, n_series)
    out = np.empty((n_series, n))
    for t in range(transient + n):
        if t >= transient:
            out[:, t - transient] = x
        x = x * (r - r * x - beta * np.roll(x, 1))
    return out


def as_dataarray(values, dim="time", series_dim="series"):
    import numpy as np
    import xarray as xr

    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        return xr.DataArray(values, dims=(dim,), coords={dim: np.arange(1, values.size + 1)})
    return xr.DataArray(
        values,
        dims=(series_dim, dim),
        coords={series_dim: np.arange(values.shape[0]), dim: np.arange(1, values.shape[1] + 1)},
    )


def as_frame(columns: dict):
    import numpy as np
    import pandas as pd

    n = len(next(iter(columns.values())))
    return pd.DataFrame({"Time": np.arange(1, n + 1), **columns})


def ccm_dataset(data):
    """The (2, L) coupled pair as a Dataset with variables x and y over time."""
    import xarray as xr

    da_x = as_dataarray(data[0])
    return xr.Dataset({"x": da_x, "y": as_dataarray(data[1])})
