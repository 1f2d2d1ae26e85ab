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
# ... and within it, these tests first: they compile pynndescent (minutes of CPU on a cold
# cache) with few of xedm's kernels, which meanwhile the other worker compiles and caches for
# the later tests here (simplex, S-map, CCM, xmap with every method)
ONE_WORKER_FIRST = "tests/test_neighbors.py::test_approximate_honour_exclusions"
# Test modules whose tests form a unit of their own (one worker, in their order): several of
# their tests need the same kernels that the install does not compile ahead (the FAN kernels
# of rqa(neighbors_per_state=...): about 14 s), which two workers running them at once would
# each compile.
UNIT_MODULES = ("tests/test_rqa_times.py",)


def _one_worker_rank(item):
    module = item.nodeid.split("::", 1)[0]
    return (ONE_WORKER.index(module), not item.nodeid.startswith(ONE_WORKER_FIRST))


def pytest_collection_modifyitems(session, config, items):
    """The ONE_WORKER modules' tests in ONE_WORKER's order, ONE_WORKER_FIRST's first (the
    rest keep their order)."""
    rank = {m: i for i, m in enumerate(ONE_WORKER)}
    group = sorted((it for it in items if it.nodeid.split("::", 1)[0] in rank),
                   key=_one_worker_rank)  # stable: the test order kept otherwise
    if group:
        first = next(i for i, it in enumerate(items) if it.nodeid.split("::", 1)[0] in rank)
        rest = [it for it in items if it.nodeid.split("::", 1)[0] not in rank]
        items[:] = rest[:first] + group + rest[first:]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`pytest -n N` (xdist's "load"): the same test-by-test load balancing, except that the
    tests of the ONE_WORKER modules form one unit of work, sent to one worker, and those of each
    UNIT_MODULES module another.  (xdist's own
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
            if module in ONE_WORKER:
                return "one-worker"
            return module if module in UNIT_MODULES else nodeid

    return OneWorkerModules(config, log)
