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
    # under pytest-xdist (``-n 2``): the tests of one xdist_group run in one worker (below),
    # the others are spread as with xdist's default ("load"); this runs before xdist's own
    # pytest_configure (trylast) reads the option; a worker is told by its workerinput
    if getattr(config.option, "dist", None) == "load":
        config.option.dist = "loadgroup"
    if getattr(config, "workerinput", {}).get("xedm_loadgroup"):
        config.option.loadgroup = True


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # pytest-xdist's controller, for each worker
    node.workerinput["xedm_loadgroup"] = node.config.getoption("dist") == "loadgroup"


#: test_neighbors tests that build an NN-descent index without "nndescent" in their id (a
#: loop over the approximate methods)
PYNNDESCENT_INSIDE = ("test_multi_column_embedded", "test_inputs_untouched")
#: tests that share one xdist worker (a costly start paid once, not in each worker): those
#: that build a pynndescent index (its first build in a process compiles nn_descent for 30
#: to 100 seconds, which numba cannot cache), and the exit matrix (its module fixture forks
#: every cell from one driver process)
GROUPS = {
    "pynndescent": lambda item: item.path.name == "test_neighbors.py" and (
        "nndescent" in item.nodeid or item.name in PYNNDESCENT_INSIDE),
    "exit": lambda item: item.path.name == "test_exit.py",
}


def pytest_collection_modifyitems(config, items):
    # a worker names each test's group after its id, as xdist's own hook does for
    # xdist_group marks (which sets an attribute that pytest 9 no longer reads)
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        for group, member in GROUPS.items():
            if "@" not in item.nodeid and member(item):
                _rename(item, f"{item.nodeid}@{group}")


def _rename(item, nodeid: str) -> None:
    if hasattr(item, "_id"):  # pytest >= 9 holds a structured id
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(nodeid)
    else:
        item._nodeid = nodeid


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

