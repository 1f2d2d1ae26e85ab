# Root conftest: modules that need CuPy are not collected for doctests on machines without it.
import importlib.util

import pytest

collect_ignore_glob = [] if importlib.util.find_spec("cupy") else ["xedm/kernels/*/gpu*.py"]

# Test modules whose tests all run in one xdist worker, one after the other in this order (one
# unit of work): pynndescent compiles its numba functions in every process that builds an index
# (25 s with a warm numba cache, 80 s cold on a 2-core VM), so one worker pays for it, not each;
# tests/test_exit.py runs its subprocess matrix once, after tests/test_neighbors.py has filled
# the numba caches its cells load (xedm's simplex kernels, pynndescent's import-time kernels):
# run first, in a cold cache, its parallel cells each compiled them again.
ONE_WORKER = ("tests/test_neighbors.py", "tests/test_exit.py")


def pytest_collection_modifyitems(session, config, items):
    """The ONE_WORKER modules' tests in ONE_WORKER's order (the rest keep theirs)."""
    rank = {m: i for i, m in enumerate(ONE_WORKER)}
    group = sorted((it for it in items if it.nodeid.split("::", 1)[0] in rank),
                   key=lambda it: rank[it.nodeid.split("::", 1)[0]])  # stable: test order kept
    if group:
        first = next(i for i, it in enumerate(items) if it.nodeid.split("::", 1)[0] in rank)
        rest = [it for it in items if it.nodeid.split("::", 1)[0] not in rank]
        items[:] = rest[:first] + group + rest[first:]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`pytest -n N` (xdist's "load"): the same test-by-test load balancing, except that the
    tests of the ONE_WORKER modules form one unit of work, sent to one worker.  (xdist's own
    ``--dist loadgroup`` relies on renaming test ids, which pytest 9 no longer allows.)"""
    if config.getvalue("dist") != "load":
        return None
    try:
        from xdist.scheduler import LoadScopeScheduling
    except ImportError:  # another xdist layout: its default scheduler
        return None

    class OneWorkerModules(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            return "one-worker" if module in ONE_WORKER else nodeid

    return OneWorkerModules(config, log)
