"""A process that used xedm next to other native libraries and a process pool exits (issue 28).

Each cell of the matrix is a process with xedm's default threading layer that loads and uses a
peer library (kEDM, PyTorch, scikit-learn, faiss, pynndescent, pyEDM; or none; or none on a
process bound to one CPU, which is what ``import kedm`` does to the main thread), runs an xedm
kernel, then a pool of one kind (fork, forkserver or spawn ``multiprocessing.Pool``, dask's
processes scheduler), and must exit with status 0 within seconds.  Before the fix the process
with kEDM, or bound to one CPU, and a fork-based pool printed everything and never exited
(numba's TBB unload waited for a start-up task the fork had lost; see
xedm/kernels/_numba.py).

Most of a cell's cost is importing numpy, xarray and xedm, so one driver process imports
them (not numba, not the peers) and forks every cell from there, a few at a time; a cell
then runs as a script would, to the interpreter's normal exit.
``python tests/test_exit.py [PEER ...]`` prints the matrix with each cell's seconds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX only")

# peer -> the module it needs (None: nothing beyond xedm)
PEERS = {
    "none": None,
    "one-cpu": None,
    "kedm": "kedm",
    "torch": "torch",
    "sklearn": "sklearn",
    "faiss": "faiss",
    "pynndescent": "pynndescent",
    "pyedm": "pyEDM",
    "kedm+pyedm": "kedm+pyEDM",  # the comparison every user migrating from them runs
}
POOLS = ("fork", "forkserver", "spawn", "dask")
TIMEOUT_S = 120  # a hang: the whole cell (a cell takes a few seconds)
EXIT_S = 15  # from the script's last line to the process's exit
PARALLEL = 4

CELL = textwrap.dedent(
    """
    import os, sys, time
    peers, pool = sys.argv[1].split("+"), sys.argv[2]
    if "one-cpu" in peers:  # as in a one-core batch job, or after `import kedm`
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import numpy as np, xarray as xr
    import xedm

    v = np.empty(300)
    v[0] = 0.4
    for i in range(299):
        v[i + 1] = 3.9 * v[i] * (1 - v[i])
    X = np.column_stack([v[1:], v[:-1]])

    def use(peer):
        if peer == "kedm":
            import kedm
            kedm.eval_simplex(v[:100], v[100:], E=2, tau=1, Tp=1)
        elif peer == "torch":
            import torch
            float((torch.ones(64, 64) @ torch.ones(64, 64)).sum())
        elif peer == "sklearn":
            from sklearn.neighbors import NearestNeighbors
            NearestNeighbors(n_neighbors=3, algorithm="brute").fit(X).kneighbors(X)
        elif peer == "faiss":
            import faiss
            index = faiss.IndexFlatL2(2)
            index.add(X.astype("float32"))
            index.search(X.astype("float32"), 3)
        elif peer == "pynndescent":
            # an index build compiles for a minute in every process (its numba functions are
            # not all cached): import it (which loads its kernels) and call a distance kernel
            import pynndescent
            from pynndescent.distances import euclidean
            euclidean(X[0], X[1])
        elif peer == "pyedm":
            import pandas as pd, pyEDM
            df = pd.DataFrame({"time": np.arange(1, 301), "x": v})
            pyEDM.EmbedDimension(dataFrame=df, columns="x", target="x", maxE=3, lib=[1, 150],
                                 pred=[151, 290], numProcess=2, showPlot=False)  # a fork pool

    for peer in peers:
        use(peer)
    xedm.simplex(xr.DataArray(v, dims="time"), E=2)

    expected = [4, 3, 2, 1, 0, 1, 2, 3]
    if pool == "dask":
        import dask
        out = dask.compute(*[dask.delayed(abs)(i) for i in range(-4, 4)],
                           scheduler="processes", num_workers=2)
    else:
        import multiprocessing as mp
        with mp.get_context(pool).Pool(2) as p:
            out = p.map(abs, range(-4, 4))
    assert list(out) == expected, out
    print("done", time.time(), flush=True)
    """
)


def available(peer: str, pool: str) -> str | None:
    """Why the cell cannot run here (a module or a feature missing), or None."""
    for module in (PEERS[peer] or "").split("+"):
        if module and importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    if pool == "dask" and importlib.util.find_spec("dask") is None:
        return "dask is not installed"
    if "one-cpu" in peer and not hasattr(os, "sched_setaffinity"):
        return "os.sched_setaffinity is not available"
    return None


# Forks each cell from a process that has imported what every cell imports first; a cell's
# output goes to a file, and its exit is seen by waitpid (polled), so the time from its last
# line to its exit is measured.  One JSON line per cell.
DRIVER = textwrap.dedent(
    """
    import json, os, signal, sys, tempfile, time
    import numpy, xarray, xedm
    code, cells = compile(sys.argv[1], "<cell>", "exec"), json.loads(sys.argv[2])
    parallel, timeout = int(sys.argv[3]), float(sys.argv[4])
    running = {}
    while cells or running:
        while cells and len(running) < parallel:
            cell = cells.pop(0)
            out = tempfile.TemporaryFile("w+")
            start = time.time()
            pid = os.fork()
            if pid == 0:  # the cell, as a script: to the interpreter's exit
                os.setsid()  # its pool's processes are killed with it on a hang
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                sys.argv = ["-c", *cell]
                exec(code, {"__name__": "__main__"})
                sys.exit(0)
            running[pid] = (cell, start, out)
        time.sleep(0.005)
        for pid, (cell, start, out) in list(running.items()):
            hung = time.time() - start > timeout
            if hung:
                os.killpg(pid, signal.SIGKILL)
            done, status = os.waitpid(pid, 0 if hung else os.WNOHANG)
            if done == 0:
                continue
            end = time.time()
            del running[pid]
            out.seek(0)
            text = out.read()
            last = [ln for ln in text.splitlines() if ln.startswith("done ")]
            print(json.dumps({
                "cell": cell, "rc": os.waitstatus_to_exitcode(status), "hung": hung,
                "done": bool(last), "total_s": end - start,
                "exit_s": end - float(last[-1].split()[1]) if last else None,
                "output": text[-3000:]}), flush=True)
    """
)


def run_cells(cells: list[tuple[str, str]]) -> dict:
    """Run the cells (PARALLEL at a time): per cell its exit status, whether it hung, seconds
    in all and seconds from its last line to its exit."""
    if not cells:
        return {}
    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)  # xedm's default layer
    rounds = -(-len(cells) // PARALLEL)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, CELL, json.dumps(cells), str(PARALLEL), str(TIMEOUT_S)],
        env=env, capture_output=True, text=True, timeout=rounds * TIMEOUT_S + 60,
    )
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[tuple(r.pop("cell"))] = r
    assert proc.returncode == 0 and len(results) == len(cells), proc.stderr[-3000:]
    return results


ALL_CELLS = [(peer, pool) for peer in PEERS for pool in POOLS]
# What the test suite runs: every peer with a fork pool (the start method that hung: numba's
# fork handler finalises TBB), and every start method for no peer and for the issue's own
# kEDM + pyEDM process.  XEDM_FULL_EXIT_MATRIX=1 runs all 36 cells (so does
# `python tests/test_exit.py`); the cells left out never hung, before or after the fix.
CELLS = ALL_CELLS if os.environ.get("XEDM_FULL_EXIT_MATRIX") else [
    (peer, pool) for peer, pool in ALL_CELLS
    if pool == "fork" or peer in ("none", "kedm+pyedm")
]


@pytest.fixture(scope="module")
def matrix(request):
    """The runnable cells of the tests selected, run once for the module (which runs in one
    xdist worker: conftest.ONE_WORKER)."""
    chosen = [
        (item.callspec.params["peer"], item.callspec.params["pool"])
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_process_exits"
    ]
    return run_cells([c for c in chosen if available(*c) is None])


@pytest.mark.parametrize(("peer", "pool"), CELLS, ids=[f"{a}-{b}" for a, b in CELLS])
def test_process_exits(matrix, peer, pool):
    why = available(peer, pool)
    if why:
        pytest.skip(why)
    r = matrix[(peer, pool)]
    assert not r["hung"], (
        f"{peer} + {pool} pool: {'printed its last line, then ' if r['done'] else ''}"
        f"no exit within {TIMEOUT_S} s\n{r['output']}"
    )
    assert r["rc"] == 0, r["output"]
    assert r["exit_s"] is not None and r["exit_s"] < EXIT_S, r


def main(peers: list[str]) -> None:
    """Print the matrix (the rows of ``peers``, or all): seconds to exit per cell, or HANG."""
    cells = [c for c in ALL_CELLS if available(*c) is None and (not peers or c[0] in peers)]
    start = time.time()
    results = run_cells(cells)
    print(f"{'peer':<12}" + "".join(f"{p:>16}" for p in POOLS))
    for peer in peers or PEERS:
        row = []
        for pool in POOLS:
            r = results.get((peer, pool))
            if r is None:
                row.append("skipped")
            elif r["hung"]:
                row.append(f"HANG>{TIMEOUT_S}s" + (" (done)" if r["done"] else ""))
            elif r["rc"] != 0:
                row.append(f"rc={r['rc']}")
            else:
                row.append(f"{r['total_s']:.1f}s/{r['exit_s']:.2f}s")
        print(f"{peer:<12}" + "".join(f"{c:>16}" for c in row))
    print(f"cells run: {len(cells)}, wall {time.time() - start:.0f} s "
          "(each cell: total seconds / seconds from its last line to its exit)")
    for c, r in results.items():
        if r["rc"] != 0 and not r["hung"]:
            print(c, r["output"], file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
