"""The work policy (xedm.memory): one estimate in seconds on the chosen backend, consulted by
every function and the compat module; refusals up front instead of minutes of work or a
MemoryError; Ctrl-C stops a long call within a batch (issue 43, items 1 and 2)."""

import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xedm
import xedm.memory as memory
from xedm.labeled.rqa.plan import check_cost

pair = xedm.datasets.coupled_logistic(500)
walk = xr.DataArray(np.random.default_rng(0).standard_normal(500).cumsum(), dims="time",
                    name="x")


@pytest.fixture
def two_cores(monkeypatch):
    """Estimates for a 2-core machine (the probe's), whatever this one has."""
    monkeypatch.setattr(memory, "cpu_cores", lambda: 2)


def quickly(call, match, seconds=10.0):
    """``call`` is refused with a ValueError matching ``match`` in under ``seconds``."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - t0 < seconds


# ---- the estimate -------------------------------------------------------------------------

def test_estimate_counts_the_backend_and_the_cores():
    assert memory.estimate_seconds(4e8, "cpu", cores=4) == pytest.approx(1.0)
    assert memory.estimate_seconds(4e8, "cpu", serial=True) == pytest.approx(4.0)
    assert memory.estimate_seconds(4e12, "gpu") == pytest.approx(4.0)
    assert memory.estimate_seconds(4e8, None, cores=1) == pytest.approx(4.0)  # unresolved: CPU


def test_gpu_rqa_of_a_million_points_is_not_refused_and_needs_no_cupy(monkeypatch, two_cores):
    """rqa(E=5, tau=3, recurrence_rate=0.05, backend="gpu") on 1,043,112 points ran in
    1.4-3.5 s on an H100/H200; it was refused as hours of computing.  The estimate needs no
    CuPy (an import of it fails here) and no device."""
    monkeypatch.setitem(sys.modules, "cupy", None)
    na = 1_043_112 - 4 * 3
    check_cost(1, 1, na, na, 1, 1, True, backend="gpu")  # nothing raised
    cells = float(na) * na * (1 + 4)
    assert memory.estimate_seconds(cells, "gpu") < 30
    with pytest.raises(ValueError, match=r"rqa .* 2 CPU cores .*work_limit"):
        check_cost(1, 1, na, na, 1, 1, True, backend="cpu")


def test_the_limit_is_seconds_and_none_lifts_it(two_cores):
    assert xedm.get_option("work_limit") == memory.WORK_LIMIT_SECONDS
    with pytest.raises(ValueError, match=r"about 14 hours on 2 CPU cores .*work limit of 10 "
                                         r"minutes; use less, or raise the limit"):
        memory.check_work(1e13, "a call", "use less")
    with xedm.set_options(work_limit=None):
        memory.check_work(1e13, "a call", "use less")
    with xedm.set_options(work_limit=1e5):
        with pytest.warns(UserWarning, match="about 14 hours"):
            memory.check_work(1e13, "a call", "use less")
    with pytest.warns(UserWarning, match="expect about 2 minutes"):
        memory.check_work(2.4e10, "a call", "use less")
    with pytest.warns(FutureWarning, match="read as seconds"):
        with xedm.set_options(work_limit=1e12):  # the old count of operations
            pass
    with pytest.raises(ValueError, match="seconds"):
        xedm.set_options(work_limit=0)


def test_device_memory_without_a_device_refuses_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    from xedm.kernels.device import memory_info

    try:
        info = memory_info()
    except Exception:  # noqa: BLE001
        info = None
    assert info is None
    memory.check_device_memory(1e18, "a call", "use less", info)
    with pytest.raises(ValueError, match="GPU memory"):  # with a device's figures
        memory.check_device_memory(1e18, "a call", "use less", (2**34, 2**36))
    memory.check_device_memory(1e9, "a call", "use less", (2**34, 2**36))


# ---- limits that disagreed ----------------------------------------------------------------

def test_ccm_samples_a_million_refused_like_ten_million(two_cores):
    for samples in (10**6, 10**7):
        quickly(lambda s=samples: xedm.ccm(pair, ["x", "y"], lib_sizes=[20, 100, 400], E=2,
                                           samples=s), rf"samples={samples}.*use fewer samples")


def test_iaaft_surrogates_refused_before_minutes():
    quickly(lambda: xedm.surrogates(walk, "iaaft", n=100_000),
            r"iaaft surrogates\(n=100000\).*minutes on 1 CPU core.*max_iter")
    assert xedm.surrogates(walk, "iaaft", n=20, seed=0).sizes["surrogate"] == 20


@pytest.mark.parametrize("with_solver", [False, True])
def test_compat_predict_nonlinear_refuses_what_predict_nonlinear_refuses(with_solver):
    from xedm.compat import pyedm

    solver = None
    if with_solver:
        solver = pytest.importorskip("sklearn.linear_model").Ridge()
    df = pd.DataFrame({"Time": np.arange(1, 501), "x": walk.values})
    thetas = np.linspace(0, 9, 10**6)
    quickly(lambda: pyedm.PredictNonlinear(df, "x", "x", theta=thetas, lib="1 250",
                                           pred="251 490", E=3, solver=solver,
                                           showPlot=False), "theta values", seconds=20)
    quickly(lambda: xedm.predict_nonlinear(walk, 3, theta=thetas), "theta values")


def test_compat_loops_consult_the_policy():
    from xedm.compat import pyedm

    df = pd.DataFrame({"Time": np.arange(1, 501), "x": walk.values})
    quickly(lambda: pyedm.PredictExclusionRadius(df, "x", "x", lib="1 250", pred="251 490",
                                                 E=3, exclusionRadius=list(range(10**6)),
                                                 showPlot=False), "radii")
    quickly(lambda: pyedm.Simplex(df, "x", "x", lib="1 250", pred="251 490", E=3,
                                  generateSteps=10**7), "generateSteps")


# ---- MemoryError never reaches the user ---------------------------------------------------

def _many(T, n):
    rng = np.random.default_rng(1)
    return xr.Dataset({f"x{i}": ("time", np.sin(0.1 * (i + 1) * np.arange(T))
                                 + 0.1 * rng.standard_normal(T)) for i in range(n)})


@pytest.mark.parametrize("case, match", [
    ("network", "surrogates=10000000"),
    ("simplex_gen", r"simplex\(generate_steps=1,000,000,000\)"),
    ("smap_gen", r"smap\(generate_steps=1,000,000,000\)"),
    ("smap_gen_work", r"generate_steps=10,000,000.*minutes"),
    ("multiview_E", r"E=1000000 .*\(E-1\)\*tau"),
    ("multiview_views", r"ranks 10,272,278,170 views .*smaller D or E"),
    ("pool", r"E=1000000000, tau=1, Tp=0 need"),
    ("pool_Tp", r"Tp=10000000000 need"),
    ("predict_tau", r"tau=1000000000000000000 needs"),
])
def test_memory_errors_are_refusals(case, match):
    calls = {
        "network": lambda: xedm.causal_network(_many(300, 3), columns=["x0", "x1", "x2"], E=2,
                                               surrogates=10**7),
        "simplex_gen": lambda: xedm.simplex(walk, 3, generate_steps=10**9),
        "smap_gen": lambda: xedm.smap(walk, 3, theta=1, generate_steps=10**9),
        "smap_gen_work": lambda: xedm.smap(walk, 3, theta=1, generate_steps=10**7),
        "multiview_E": lambda: xedm.multiview(_many(300, 3), ["x0", "x1", "x2"], "x0",
                                              E=10**6),
        "multiview_views": lambda: xedm.multiview(_many(1000, 10), [f"x{i}" for i in range(10)],
                                                  "x0", E=5, D=10),
        "pool": lambda: xedm.pool_replicates(xr.DataArray(np.ones((3, 100)),
                                                          dims=("replicate", "time")), E=10**9),
        "pool_Tp": lambda: xedm.pool_replicates(xr.DataArray(np.ones((3, 100)),
                                                             dims=("replicate", "time")),
                                                E=2, Tp=10**10),
        "predict_tau": lambda: xedm.predict_tau(walk, 3, tau_max=10**18),
    }
    quickly(calls[case], match)


def test_compat_multiview_views_refused():
    from xedm.compat import pyedm

    df = _many(1000, 10).to_dataframe().reset_index()
    quickly(lambda: pyedm.Multiview(df, [f"x{i}" for i in range(10)], "x0", E=5, D=10,
                                    lib="1 500", pred="501 990", showPlot=False), "views")


def test_small_multiview_and_generation_still_run():
    out = xedm.multiview(_many(200, 3), ["x0", "x1", "x2"], "x0", E=2, D=2)
    assert out.attrs["views"] == 15
    assert xedm.simplex(walk, 3, generate_steps=5).sizes["time"] == 5
    assert xedm.predict_tau(walk, 3, tau_max=3).sizes["tau"] == 3


# ---- Ctrl-C -------------------------------------------------------------------------------

def test_interruptible_holds_ctrl_c_to_the_end_of_a_kernel_call():
    """A SIGINT during a kernel call (here: raised by the call itself) is raised after the call
    returns: numba's boxing of the result never sees it (it left a NULL in the result tuple:
    a segmentation fault in xmap)."""
    import signal

    from xedm.kernels._numba import interruptible

    done = []

    def kernel(a):
        signal.raise_signal(signal.SIGINT)
        done.append(a)
        return a, a

    with pytest.raises(KeyboardInterrupt):
        interruptible(kernel)(1)
    assert done == [1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert interruptible(lambda a: (a, 2))(1) == (1, 2)


_SCRIPT = """
import signal, sys, threading, time, warnings
import numpy as np
import xedm
warnings.simplefilter("ignore")
xedm.set_options(progress=False, work_limit=None)
ms = lambda n, T: xedm.datasets.many_series(n, T, seed=1).x
calls = {
    "xmap": lambda n, T: xedm.xmap(ms(n, T), series_dim="series", E=3),
    "predict_nonlinear": lambda n, T: xedm.predict_nonlinear(
        xedm.datasets.logistic_map(T), 3, theta=np.linspace(0, 9, n)),
    "ccm": lambda n, T: xedm.ccm(xedm.datasets.coupled_logistic(T), ["x", "y"],
                                 lib_sizes=[20, 100, T - 10], E=2, samples=n),
    "embed_dimension": lambda n, T: xedm.embed_dimension(ms(n, T), E_max=10),
    "causal_network": lambda n, T: xedm.causal_network(ms(n, T), series_dim="series"),
    "multiview": lambda n, T: xedm.multiview(
        ms(n, T).to_dataset("series").rename({i: f"x{i}" for i in range(n)}),
        [f"x{i}" for i in range(n)], "x0", E=3, D=4),
}
func = calls[sys.argv[1]]
small, big = eval(sys.argv[2]), eval(sys.argv[3])
func(*small)  # compiled and warm: the interrupt lands in the work, not in a compilation
sent = []
threading.Timer(1.5, lambda: (sent.append(time.perf_counter()),
                              signal.raise_signal(signal.SIGINT))).start()
t0 = time.perf_counter()
try:
    func(*big)
    print("finished", round(time.perf_counter() - t0, 2))
except KeyboardInterrupt:
    print("interrupted", round(time.perf_counter() - sent[0], 2))
"""


@pytest.mark.parametrize("func, small, big", [
    ("xmap", (20, 300), (400, 3000)),
    ("predict_nonlinear", (5, 300), (300, 3000)),
    ("ccm", (100, 300), (200_000, 300)),
    ("embed_dimension", (5, 300), (400, 2000)),
    ("causal_network", (5, 200), (40, 800)),
    ("multiview", (3, 200), (8, 1000)),
])
def test_ctrl_c_stops_a_long_call_within_seconds(tmp_path, func, small, big):
    """Each big call runs for tens of seconds to minutes on a 2-core VM; a SIGINT after 1.5 s
    stops it within a few seconds, with a KeyboardInterrupt (no crash), in a fresh process."""
    script = tmp_path / "interrupt.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    out = subprocess.run([sys.executable, str(script), func, repr(small), repr(big)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    words = out.stdout.split()
    assert words[0] == "interrupted", out.stdout
    assert float(words[1]) < 5.0, out.stdout


# ---- progress on the paths that had none ---------------------------------------------------

class _Recorder:
    """Stands in for tqdm: records each bar's description and steps."""

    bars: list = []

    def __init__(self, iterable=None, total=None, desc=None, **kwargs):
        self.desc, self.total, self.steps = desc, total, []
        _Recorder.bars.append(self)

    def update(self, n=1):
        self.steps.append(n)

    def close(self):
        pass


def test_iaaft_generation_and_multiview_advance_a_bar(monkeypatch):
    import tqdm.auto

    import xedm._progress as progress_mod

    _Recorder.bars = []
    monkeypatch.setattr(tqdm.auto, "tqdm", _Recorder)
    monkeypatch.setattr(progress_mod, "interactive", lambda: True)
    xedm.surrogates(walk, "iaaft", n=5, seed=0)
    xedm.simplex(walk, 3, generate_steps=7)
    xedm.multiview(_many(200, 3), ["x0", "x1", "x2"], "x0", E=2, D=2)
    got = {b.desc: (b.total, sum(b.steps)) for b in _Recorder.bars}
    assert got["iaaft"][0] == 1000 and 1 <= got["iaaft"][1] <= 1000  # rounds until converged
    assert got["simplex generate_steps"] == (7, 7)
    assert got["multiview"] == (15, 15)
