"""Kernels compiled ahead (xedm.ahead, xedm.kernels._shipped): a build loads in a fresh process
without compiling, gives the numbers of a kernel compiled here, is refused where it does not
fit, and a slow first compile says so once."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from xedm import ahead
from xedm.kernels import _shipped

pytestmark = pytest.mark.skipif(not _shipped.host_targets(),
                                reason="no portable target this machine runs")

# run in a fresh process: the datasets' kernels (numba), how many xedm kernels were compiled
# there (numba:compile events), how many came from the shipped build, and the numbers
CHILD = r"""
import json, sys
import numpy as np
from numba.core import event
n = [0]
class L(event.Listener):
    def on_start(self, ev):
        d = (ev.data or {}).get("dispatcher")
        if d is not None and "xedm" in d.py_func.__code__.co_filename:
            n[0] += 1
    def on_end(self, ev):
        pass
event.register("numba:compile", L())
import xedm
from xedm.kernels import _shipped
x = xedm.datasets.logistic_map(500).values
y = xedm.datasets.coupled_logistic(300).y.values
print("RESULT " + json.dumps({"compiled": n[0], "hits": _shipped._state.get("hits", 0),
                               "usable": _shipped.usable(), "x": x.tolist(), "y": y.tolist()}))
"""


def _child(tmp_path, name, **env):
    cache = tmp_path / f"cache-{name}"
    cache.mkdir()
    full = dict(os.environ, XEDM_CACHE_DIR=str(cache), XEDM_COMPILE_NOTICE="0", **env)
    full.pop("NUMBA_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                       env=full, timeout=600)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, p.stderr[-2000:]
    return json.loads(line[0][7:])


HOST = _shipped.host_targets()[0][0] if _shipped.host_targets() else None


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """The datasets' kernels for this CPU's best target: root/<target>/..."""
    root = tmp_path_factory.mktemp("ahead") / "precompiled"
    mans = ahead.build(str(root), workers=1, names=["datasets"], quiet=True, targets="host")
    assert list(mans) == [HOST]
    return root, mans[HOST]


def test_build_writes_a_manifest_of_this_numba_and_python(build):
    import numba

    root, man = build
    out = root / HOST
    assert json.loads((out / "manifest.json").read_text()) == man
    assert man["numba"] == numba.__version__
    assert man["python"] == "{}.{}".format(*sys.version_info[:2])
    assert man["cpu_name"] == HOST and man["entries"] > 0
    assert list((out / "datasets").glob("*.nbi")), "the datasets' kernels are not shipped"
    assert not list(root.rglob("*.py")), "a build ships object code only"


def test_targets_best_first_and_by_name():
    every = [t[0] for t in _shipped.targets()]
    assert [t[0] for t in ahead.resolve_targets()] == every
    assert [t[0] for t in ahead.resolve_targets("host")] == [HOST]
    assert [t[0] for t in ahead.resolve_targets(every[-1])] == every[-1:]
    with pytest.raises(ValueError, match="targets: unknown"):
        ahead.resolve_targets("pentium")
    # the portable baseline runs wherever a better target does
    assert set(_shipped.targets()[-1][2]) <= set(_shipped.targets()[0][2])


def test_shipped_kernels_load_without_compiling_and_match(build, tmp_path):
    out, _ = build
    shipped = _child(tmp_path, "shipped", XEDM_PRECOMPILED_DIR=str(out))
    assert shipped["usable"] == [True, ""]
    assert shipped["compiled"] == 0, "a shipped kernel was compiled again"
    assert shipped["hits"] >= 2
    jit = _child(tmp_path, "jit", XEDM_PRECOMPILED_DIR=str(out), XEDM_PRECOMPILED="0")
    assert jit["usable"][0] is False and "XEDM_PRECOMPILED=0" in jit["usable"][1]
    assert jit["compiled"] >= 2 and jit["hits"] == 0
    # the same numbers from the portable build and from this CPU's own compile
    np.testing.assert_array_equal(shipped["x"], jit["x"])
    np.testing.assert_array_equal(shipped["y"], jit["y"])


def test_a_build_for_another_numba_is_not_used(build, tmp_path):
    out, man = build
    other = tmp_path / "other"
    import shutil

    shutil.copytree(out, other)
    (other / HOST / "manifest.json").write_text(json.dumps(dict(man, numba="0.0.1")))
    res = _child(tmp_path, "other", XEDM_PRECOMPILED_DIR=str(other))
    assert res["usable"][0] is False and "numba 0.0.1" in res["usable"][1]
    assert res["compiled"] >= 2 and res["hits"] == 0


def test_current_tells_a_build_of_these_sources(build, tmp_path):
    out, man = build
    assert ahead.current(str(out / HOST)) is (man["steps"] == list(ahead.STEPS))
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "manifest.json").write_text(json.dumps(dict(man, sources="0" * 64)))
    assert not ahead.current(str(stale))
    assert not ahead.current(str(tmp_path / "missing"))


def test_steps_split_evenly_and_whole():
    names = list(ahead.STEPS)
    for n in (1, 2, 3, 4):
        groups = ahead._groups(names, n)
        assert sorted(sum(groups, [])) == sorted(names)
        loads = [sum(ahead.STEPS[m][0] for m in g) for g in groups]
        assert max(loads) - min(loads) <= max(w for w, _ in ahead.STEPS.values())


NOTICE = r"""
import sys
from xedm.kernels import _shipped
_shipped.NOTICE_AFTER = 0.05
import xedm
xedm.datasets.logistic_map(100)
xedm.datasets.coupled_logistic(100)
"""


def test_a_slow_first_compile_says_so_once(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, XEDM_CACHE_DIR=str(cache), XEDM_PRECOMPILED="0")
    env.pop("XEDM_COMPILE_NOTICE", None)
    env.pop("NUMBA_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", NOTICE], capture_output=True, text=True,
                       env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("xedm: compiling")]
    assert len(lines) == 1, p.stderr
    assert str(cache) in lines[0] and "xedm warmup --backend cpu" in lines[0]
    # cached now: the same calls compile nothing and say nothing
    p = subprocess.run([sys.executable, "-c", NOTICE], capture_output=True, text=True,
                       env=env, timeout=600)
    assert "xedm: compiling" not in p.stderr
