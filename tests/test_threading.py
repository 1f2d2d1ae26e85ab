"""Processes, threads and the kernel cache (xedm/kernels/_numba.py).

Each scenario runs in a fresh interpreter: numba's threading layer is chosen once per process,
at the first parallel launch, so only a new process shows what a user's session does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import xedm

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX only")

# A script that runs xedm in the parent, then the same calls in a fork-based Pool and in
# threads; prints what each computed.  Before the fix the Pool never returned (GNU OpenMP).
SCRIPT = textwrap.dedent(
    """
    import json, multiprocessing as mp, sys
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np, numba, xedm

    def work(i):
        ds = xedm.datasets.coupled_logistic(400 + 50 * i)
        s = xedm.simplex(ds.x, 3)
        c = ds.edm.ccm(["x", "y"], lib_sizes=[20, 100], E=2, samples=5, seed=i)
        e = xedm.embed_dimension(ds.x, E_max=6)
        return [float(s.rho), c.rho.values.ravel().tolist(), e.rho.values.tolist()]

    parent = [work(i) for i in range(4)]
    with mp.get_context("fork").Pool(2) as pool:
        forked = pool.map(work, range(4))
    with ThreadPoolExecutor(4) as ex:
        threaded = list(ex.map(work, [0, 1, 2, 3] * 3))
    print(json.dumps({"layer": numba.threading_layer(), "parent": parent,
                      "forked": forked, "threaded": threaded}))
    """
)


def _run(env_extra: dict) -> dict:
    env = dict(os.environ)  # the user's kernel cache: compiled once for the whole test run
    env.pop("NUMBA_THREADING_LAYER", None)
    env.update(env_extra)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _edm_results() -> dict:
    ds = xedm.datasets.coupled_logistic(600)
    ds["z"] = ds.x * ds.y
    out = {
        "ccm": xedm.ccm(ds, columns=["x", "y"], E=3, lib_sizes=[20, 100, 400], samples=20,
                        seed=1),
        "xmap": xedm.xmap(ds, E=2, columns=["x", "y", "z"]),
        "simplex": xedm.simplex(ds.x, 3),
        "smap": xedm.smap(ds.x, 3, theta=2.0),
        "embed_dimension": xedm.embed_dimension(ds.y, E_max=6),
    }
    return {f"{name}.{v}": r[v].values for name, r in out.items() for v in r.data_vars}


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
def test_results_do_not_depend_on_the_thread_count():
    """Bit for bit the same with 1 and 2 threads: every sum over rows runs in an order fixed
    by the data, not by the threads' share of the rows (ccm's partial sums were per thread and
    differed at the last bit)."""
    before = numba.get_num_threads()
    runs = []
    try:
        for n in (1, 2):
            numba.set_num_threads(n)
            runs.append(_edm_results())
    finally:
        numba.set_num_threads(before)
    one, two = runs
    assert one.keys() == two.keys()
    differ = [k for k in one if not np.array_equal(one[k], two[k], equal_nan=True)]
    assert not differ, differ


def _tbb_loads() -> bool:
    code = "import xedm.kernels._numba as n; print(n.threading_layer())"
    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return out.stdout.strip() == "tbb"


@pytest.mark.slow
@pytest.mark.parametrize("layer", ["default", "workqueue", "tbb"])
def test_fork_pool_and_threads_after_xedm_ran(layer):
    """A fork-based Pool returns after xedm ran in the parent (no hang), and concurrent calls
    from threads give bitwise the parent's results, with xedm's layer and with workqueue
    (the fallback where TBB is missing, which xedm serialises)."""
    extra = {} if layer == "default" else {"NUMBA_THREADING_LAYER": layer}
    out = _run(extra)
    if layer == "tbb" and not _tbb_loads():
        pytest.skip("TBB cannot be loaded on this machine")
    if layer == "default":
        if _tbb_loads():
            assert out["layer"] == "tbb"
        else:
            assert out["layer"] == "workqueue"
    else:
        assert out["layer"] == layer
    assert out["forked"] == out["parent"]
    assert out["threaded"] == out["parent"] * 3


def test_omp_would_hang_is_not_our_default():
    """The layer xedm asks for is fork-safe (tbb, or workqueue when TBB cannot load)."""
    code = "import xedm.kernels._numba as n; print(n.threading_layer())"
    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in ("tbb", "workqueue")


def test_kernel_cache_outside_the_package(tmp_path):
    """Compiled kernels are cached under XEDM_CACHE_DIR, and nothing is written into the
    package (a leftover __pycache__ there shadowed xedm after `pip uninstall`)."""
    pkg = os.path.dirname(xedm.__file__)

    def numba_files():  # the kernels compiled ahead (xedm/_precompiled) are the build's
        return {
            os.path.join(r, f)
            for r, _, fs in os.walk(pkg)
            for f in fs
            if f.endswith((".nbi", ".nbc")) and "_precompiled" not in r
        }

    before = numba_files()
    cache = tmp_path / "kernels-cache"
    code = textwrap.dedent(
        """
        import xedm
        from xedm.core.skill import skill
        from xedm.kernels.knn.cpu import knn_sweep
        ds = xedm.datasets.coupled_logistic(200)
        # compiles kernels of xedm/datasets and xedm/kernels (skill_rows: about 1 s cold,
        # where a simplex call compiled the kNN kernels, 8 s)
        skill(ds.x.values, ds.y.values)
        print(knn_sweep._cache._cache_path)
        """
    )
    # compiled here, not loaded from the kernels compiled ahead
    env = dict(os.environ, XEDM_CACHE_DIR=str(cache), XEDM_PRECOMPILED="0")
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(cache))
    written = [f for _, _, fs in os.walk(cache) for f in fs if f.endswith(".nbi")]
    assert any("skill_rows" in f for f in written), f"not cached in XEDM_CACHE_DIR: {written}"
    assert numba_files() - before == set()


def test_user_numba_cache_dir_wins(tmp_path):
    code = "from xedm.kernels.knn.cpu import knn_sweep; print(knn_sweep._cache._cache_path)"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), XEDM_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(tmp_path / "numba"))


# --- the kernel cache must be private: numba unpickles its index files -------------------


@pytest.fixture
def fresh_cache_choice(monkeypatch, tmp_path):
    """cache_dir() resolved anew for this test's environment (the default under tmp_path),
    and the process's own choice restored afterwards."""
    from xedm.kernels import _numba

    monkeypatch.setattr(_numba, "_CACHE_DIRS", {})
    monkeypatch.setattr(_numba, "_NUMBA_DIRS", {})
    monkeypatch.delenv("XEDM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return _numba


def _mode(path) -> int:
    return os.stat(path).st_mode & 0o777


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")
def test_cache_dir_is_created_private(fresh_cache_choice, tmp_path, monkeypatch):
    n = fresh_cache_choice
    assert n.cache_dir() == str(tmp_path / "xdg" / "xedm" / "numba")
    assert _mode(tmp_path / "xdg" / "xedm") == _mode(tmp_path / "xdg" / "xedm" / "numba") == 0o700
    n._CACHE_DIRS.clear()
    mine = tmp_path / "a" / "b" / "c"
    monkeypatch.setenv("XEDM_CACHE_DIR", str(mine))
    assert n.cache_dir() == str(mine)
    assert [_mode(p) for p in (mine.parent.parent, mine.parent, mine)] == [0o700] * 3


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_cache_dir_others_may_write_is_refused(fresh_cache_choice, tmp_path, monkeypatch, mode):
    """An XEDM_CACHE_DIR the group or others may write into is passed over, with a warning
    naming it; the kernels go to the (private) default directory."""
    n = fresh_cache_choice
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    monkeypatch.setenv("XEDM_CACHE_DIR", str(shared))
    with pytest.warns(UserWarning, match=f"{shared}.*may write into it.*XEDM_CACHE_DIR"):
        path = n.cache_dir()
    assert path == str(tmp_path / "xdg" / "xedm" / "numba")
    assert _mode(shared) == mode  # the user's directory is left as it is


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")
def test_default_cache_parent_others_may_write_is_refused(fresh_cache_choice, tmp_path):
    """The default's ``xedm`` parent is checked too: whoever may write there can swap in
    their own ``numba`` directory.  With nothing safe left: a private temporary directory,
    new, and removed at exit."""
    n = fresh_cache_choice
    parent = tmp_path / "xdg" / "xedm"
    parent.mkdir(parents=True)
    parent.chmod(0o777)
    with pytest.warns(UserWarning, match="xedm-numba-") as record:
        path = n.cache_dir()
    assert [str(parent) in str(w.message) for w in record] == [True]
    assert os.path.basename(path).startswith("xedm-numba-") and _mode(path) == 0o700
    assert os.listdir(path) == []


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")
def test_cache_dir_owned_by_another_user_is_refused(fresh_cache_choice, tmp_path, monkeypatch):
    n = fresh_cache_choice
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    monkeypatch.setenv("XEDM_CACHE_DIR", str(theirs))
    real = os.stat

    def stat_as_if_theirs(path, *args, **kwargs):  # the directory belongs to uid + 1
        st = real(path, *args, **kwargs)
        if os.fspath(path) == str(theirs):
            fields = list(st)
            fields[4] = os.getuid() + 1
            return os.stat_result(fields)
        return st

    monkeypatch.setattr(n.os, "stat", stat_as_if_theirs)
    with pytest.warns(UserWarning, match=f"{theirs}.*owned by uid {os.getuid() + 1}"):
        assert n.cache_dir() == str(tmp_path / "xdg" / "xedm" / "numba")


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")
def test_unsafe_dirs_end_to_end(tmp_path):
    """In a fresh process: a world-writable NUMBA_CACHE_DIR, XEDM_CACHE_DIR and default
    (its ``xedm`` parent) are all passed over (three warnings); the kernels are cached in a
    private temporary directory, which is gone after the process exits."""
    dirs = {k: tmp_path / k for k in ("numba", "xedm", "xdg/xedm")}
    for d in dirs.values():
        d.mkdir(parents=True)
        d.chmod(0o777)
    code = textwrap.dedent(
        """
        import warnings
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as w:
            from xedm.kernels.knn.cpu import knn_sweep
        print(knn_sweep._cache._cache_path)
        print(len([x for x in w if "does not cache" in str(x.message)]))
        """
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(dirs["numba"]), XEDM_CACHE_DIR=str(dirs["xedm"]),
               XDG_CACHE_HOME=str(tmp_path / "xdg"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    path, warned = out.stdout.split()
    assert "xedm-numba-" in path and not any(str(d) in path for d in dirs.values())
    assert warned == "3"
    assert not os.path.exists(os.path.dirname(path))  # removed at exit
    assert all(os.listdir(d) == [] for d in dirs.values())  # nothing written there
