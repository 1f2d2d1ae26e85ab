"""``xedm network FILE --series-dim DIM --out OUT.zarr``: the direct causal network as a
resumable batch job (:mod:`xedm.cli.jobs`).

A large network (more than 129 series, the predictive conditioning, ``E_from="library"``:
:func:`xedm.core.network.large_network`) is computed library block by library block: each
block's per-library values (its cross maps, its 32 candidates, their conditioning and
surrogate null: :func:`xedm.core.network_rows.large_rows`) are written into the store with a
checksummed marker, so an interrupted job resumes at the first block not written.  Every
series' E is chosen once and saved (``E.json``), and so is the seed of the surrogates when
none was given (``seed.json``): a resumed job computes the same values.  Once every block is
written, the steps that read every pair at once (:func:`xedm.core.network.finish_rows`) make
the edge list, which replaces the blocks in the store (built beside it, then renamed): the
finished store opens with ``xr.open_zarr`` as the Dataset ``xedm.causal_network`` returns.
Running the finished job again leaves it as it is.

A smaller network is computed in one step and written the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil

import numpy as np
import xarray as xr

from ._common import CLIError, call, options, public, run_scheduler, series_dim_of
from .jobs import META, E_list, Job, _digest, _write_json, open_lazy

FINISHED = "finished.json"  # META/FINISHED: the edge list is written; its variables' digests
#: libraries per block by default (each block cross-maps them against every series)
BLOCK = 2000


def batch(args, user: dict) -> int:
    """``xedm network INPUT ... --out OUT.zarr`` (module docstring); ``user``: the options of
    :func:`xedm.causal_network` the user gave."""
    tdim = args.time_dim or "time"
    with open_lazy(args.file, args.var, {"--series-dim": args.series_dim,
                                          "--time-dim": tdim},
                   series_dim=args.series_dim) as da:
        series_dim_of(args.series_dim, da)
        return _batch(args, user, da, tdim)


def _batch(args, user: dict, da: xr.DataArray, tdim: str) -> int:
    from ..core.network import large_network
    from ..labeled.network import network_plan

    N = da.sizes[args.series_dim]
    spec = {"command": "network", "input": os.path.abspath(args.file), "var": str(da.name),
            "backend": args.backend, "neighbors": getattr(args, "neighbors", None),
            "block": args.block, **user}
    job = Job(args.out, spec, restart=args.restart or args.overwrite,
              flag="--restart" if args.restart else "--overwrite")
    progress = not args.quiet
    from ..options import set_options

    # a batch job runs for as long as it takes (block by block, resumable): the time limit
    # of an interactive call (work_limit, 10 minutes by default) would refuse any network
    # worth a job, and the command line has no way to raise it; memory is still checked
    with _scheduler(args) as client, options(args), set_options(work_limit=None):
        job.read_input(da, tdim, client, progress, args.file)
        if job.resume and os.path.isfile(os.path.join(job.meta, FINISHED)):
            _verify_finished(job)
            print(f"causal network of {da.name!r} over {args.series_dim!r} ({N} series) -> "
                  f"{args.out}: finished before (verified), left as it is")
            return 0
        seed = user.get("seed")
        if seed is None:
            seed = job.saved("seed.json", _check_seed)
        kwargs = {k: v for k, v in {**user, "seed": seed}.items() if v is not None}
        data = da.load()
        try:
            plan = network_plan(data, **kwargs)
        except (ValueError, TypeError) as err:
            raise CLIError(str(err)) from err
        core = plan["core"]
        _, large = large_network(N, core["conditioning"], core["E_from"])
        blocks = large and not (plan["form"] == "dense" and user.get("result") == "dense")
        if blocks:
            result = _blocks(args, job, plan, client, progress)
        else:  # one step: causal_network itself (a small network, or dense matrices asked for)
            result = call(public("causal_network"), data,
                          user={**kwargs, "seed": plan["sig"]["seed"]},
                          optional={"progress": progress})
    _finish(job, result, {"seed.json": plan["sig"]["seed"]}, blocks)
    how = "library block by library block" if blocks else "in one step"
    links = int(result.link.values.sum())
    form = result.attrs.get("result", "dense")
    print(f"causal network of {da.name!r} over {args.series_dim!r} ({N} series, {how}): "
          f"{links} links -> {args.out} ({form})")
    return 0


@contextlib.contextmanager
def _scheduler(args):
    """:func:`~xedm.cli._common.run_scheduler`; without ``--scheduler`` or ``--workers`` the
    blocks run one after the other (each runs xedm's parallel kernels: threads side by side
    would only compete)."""
    if args.scheduler or args.workers:
        with run_scheduler(args) as client:
            yield client
        return
    import dask

    with dask.config.set(scheduler="synchronous"):
        yield None


def _check_seed(value):
    return None if type(value) is int and value >= 0 else (
        f"a non-negative integer was expected, got {value!r:.80}")


def _blocks(args, job: Job, plan: dict, client, progress: bool) -> xr.Dataset:
    """The per-library values block by block into the store (resumable), then the edge
    list from them."""
    import dask
    import dask.array as dsa

    from ..core import ccm as _ccm
    from ..core.network import finish_rows
    from ..core.network_rows import DTYPES, PAIR_KEYS, ROW_KEYS
    from ..core.predictive import SCREEN
    from ..labeled.inputs import progress_bar
    from ..labeled.network import draw_surrogates, network_dataset

    core = plan["core"]
    X = plan["x"]
    N = len(X)
    chosen = core["E"] is None  # chosen here, once: saved for a resumed job
    E = job.saved("E.json", E_list(N, int(core["E_max"]))) if chosen else core["E"]
    if E is None:
        E = _ccm.choose_E(X, E_tab=np.arange(1, int(core["E_max"]) + 1), tau=core["tau"],
                          knn=core["knn"], excl=core["excl"], backend=core["backend"],
                          progress=progress_bar(progress, "choose E", N))
    E = np.asarray(E, np.int64)
    lags = core["lags"]
    block = int(args.block or min(N, BLOCK))
    starts = list(range(0, N, block))
    kw = dict(E=E, lags=lags, tau=core["tau"], knn=core["knn"], excl=core["excl"],
              backend=core["backend"], method=core["method"], max_lag=core["max_lag"])
    from dask.base import tokenize

    token = tokenize(job.out, job.spec)
    # the standardised series and their Theiler windows, made once for every block (each
    # block's conditioning would make them again, in each of its selections: 23 s each at
    # N = 100,000, L = 1,450 on a 2-core VM)
    from ..core.predictive import prepare

    prepared = prepare(X)
    Xs, Ps = (client.scatter([X, prepared], broadcast=True) if client is not None
              else (X, prepared))
    # the surrogates: a task of their own, which the blocks take, so that they are drawn
    # only when a block is computed (a job resumed after its last block draws none: N x n x
    # T values, minutes at N = 100,000); on a cluster drawn by one worker, sent to the others
    Ss = dask.delayed(draw_surrogates, pure=True)(
        {"sig": plan["sig"], "n_sur": plan["n_sur"]}, Xs,
        dask_key_name=f"xedm-network-surrogates-{token}")
    data: dict = {k: [] for k in PAIR_KEYS + ROW_KEYS}
    for s in starts:
        rows = np.arange(s, min(s + block, N))
        part = dask.delayed(_rows, pure=False)(Xs, Ss, Ps, rows, SCREEN, kw,
                                               dask_key_name=f"xedm-network-{s}-{token}")
        for k in PAIR_KEYS + ROW_KEYS:
            shape = ((len(rows), SCREEN, len(lags)) if k == "rho_lag" else
                     (len(rows), SCREEN) if k in PAIR_KEYS else (len(rows),))
            item = dask.delayed(_item, pure=True)(part, k)
            data[k].append(dsa.from_delayed(item, shape=shape, dtype=DTYPES[k]))
    sdim = "series"
    dims = {k: (sdim, "slot", "Tp") if k == "rho_lag" else (sdim, "slot") if k in PAIR_KEYS
            else (sdim,) for k in data}
    rows_ds = xr.Dataset({k: (dims[k], dsa.concatenate(v)) for k, v in data.items()},
                         coords={"Tp": lags})
    rows_ds["E"] = (sdim, E)
    rows_ds.attrs.update(xedm_stage="the per-library values of xedm network's blocks; "
                         "replaced by the edge list when every block is written")
    extras = {"blocks.json": {"library": block}, "seed.json": plan["sig"]["seed"]}
    if chosen:
        extras["E.json"] = E.tolist()
    job.run(rows_ds, client, progress, extras=extras, desc="network blocks",
            what="block(s) of libraries")
    with xr.open_zarr(job.out, consolidated=True) as stored:
        raw = {k: stored[k].values.astype(DTYPES[k], copy=False) for k in PAIR_KEYS + ROW_KEYS}
    out = finish_rows(X, raw, E=E, lags=lags, alpha=core["alpha"], p_method=core["p_method"],
                      max_lag=core["max_lag"])
    return network_dataset({**plan, "form": "edges"}, out)


def _rows(X, S, prepared, rows, m: int, kw: dict) -> dict:
    from ..core.network_rows import large_rows, pad_rows

    return pad_rows(large_rows(X, rows, S=S, prepared=prepared, **kw), m)


def _item(part: dict, key: str):
    return part[key]


def _finish(job: Job, result: xr.Dataset, extras: dict, blocks: bool) -> None:
    """The result into ``--out``, replacing the blocks (``blocks``: the store holds them,
    with the job's metadata; else the job's metadata is written new): a new store built
    beside it with that metadata and the digests of its variables (``FINISHED``), then
    renamed into place (:meth:`~xedm.cli.jobs.Job.install`)."""
    from ._outputs import netcdf_safe

    safe = netcdf_safe(result)

    def build(tmp):
        safe.to_zarr(tmp, mode="w-", zarr_format=2, consolidated=True)
        if blocks:  # the metadata Job.run wrote with the blocks (its markers, E, ...)
            shutil.copytree(job.meta, os.path.join(tmp, META))
            for name, value in extras.items():
                _write_json(os.path.join(tmp, META, name), value)
        else:  # one step: this job's own (not an old store's, which --restart replaces)
            job.write_meta(tmp, extras)
        _write_json(os.path.join(tmp, META, FINISHED), _digests(safe))

    job.install(build, replace=os.path.lexists(job.out))


def _digests(ds: xr.Dataset) -> dict:
    return {str(n): _digest(np.asarray(v.values)) for n, v in ds.variables.items()}


def _verify_finished(job: Job) -> None:
    """A finished job's store holds the variables it wrote, unchanged."""
    try:
        with open(os.path.join(job.meta, FINISHED)) as f:
            saved = json.load(f)
        with xr.open_zarr(job.out, consolidated=True) as ds:
            now = _digests(ds.load())
    except Exception as err:  # zarr, json and their codecs raise many types
        raise CLIError(f"--out {job.arg}: the finished network cannot be read ({err}); pass "
                       "--restart to compute it again") from None
    if now != saved:
        bad = sorted(k for k in set(now) | set(saved) if now.get(k) != saved.get(k))
        raise CLIError(f"--out {job.arg}: the finished network changed since it was written "
                       f"({', '.join(bad[:5])}); pass --restart to compute it again")
