import numpy as np
import pytest
import xarray as xr

#: the markers of the test suite, registered here as well as in pyproject.toml: the tests also
#: run from a copy of this folder outside the source tree (CI's run against the built wheel)
MARKERS = (
    "quick: the quick run (pytest -m quick): every public function against its reference at "
    "least once, in minutes on 2 cores with only the quick extra's packages",
    "gpu: needs an NVIDIA GPU with CuPy (skipped without one)",
    "slow: long-running tests",
    "distributed: needs dask.distributed",
    "parity: compares against pyEDM / kEDM when installed",
    "browser: end to end in JupyterLab + headless Chromium (own CI step: pytest -m browser)",
)


def pytest_configure(config):
    for line in MARKERS:
        config.addinivalue_line("markers", line)


def make_dataset(X, y=None, names=None):
    """Dataset with variables from the rows of X (C, T) and optional target y, time = 0..T-1."""
    C, T = X.shape
    names = names or [f"v{i}" for i in range(C)]
    data = {n: ("time", X[i]) for i, n in enumerate(names)}
    if y is not None:
        data["target"] = ("time", y)
    return xr.Dataset(data, coords={"time": np.arange(T)})


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def logistic(T, r=3.9, x0=0.4):
    x = np.empty(T)
    x[0] = x0
    for t in range(1, T):
        x[t] = r * x[t - 1] * (1 - x[t - 1])
    return x
