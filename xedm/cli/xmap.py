"""``xedm xmap FILE --series-dim DIM``: the all-pairs cross map of the series of one
variable, written as NetCDF, or, with ``--out OUT.zarr``, as a resumable batch job
(:mod:`xedm.cli.jobs`)."""

from __future__ import annotations

import contextlib
import os
import warnings

import numpy as np

from ._common import (
    add_batch,
    add_common,
    add_input,
    add_neighbours,
    add_series,
    add_surrogates,
    call,
    data_path,
    examples,
    int_at_least,
    int_list,
    open_input,
    options,
    public,
    renamed_option,
    run_scheduler,
    series_dim_of,
    spelling,
    suffix,
    surrogate_options,
    variable,
)
from ._outputs import write_netcdf
from .jobs import E_list, Job, ignoring, open_lazy, positive_ints, run_tasks, workers


def add_parser(sub) -> None:
    """The ``xmap`` subcommand of the parser."""
    x = sub.add_parser("xmap", help="all-pairs cross-map skill of many series in a file",
                       description="Cross-map every ordered pair of series along --series-dim; "
                       "writes rho(library, target).  A CSV table's columns are the series "
                       "(--series-dim names their dim), in memory and in a .zarr batch job.",
                       **examples("xedm xmap data.nc --series-dim neuron --E-max 8 --out map.nc",
                                  "xedm xmap thrips.nc --series-dim series --surrogates 99 "
                                  "--surrogate-method seasonal --period 12 --seed 1",
                                  "xedm xmap table.csv --series-dim series --Tp -4,-3,-2,-1,0",
                                  "xedm xmap big.zarr --series-dim neuron --out map.zarr "
                                  "--workers 4"))
    add_input(x)
    add_series(x, legacy_dim=True)
    x.add_argument("--tau", type=int_at_least(1), default=None, help="lag (default 1)")
    x.add_argument("--Tp", type=int_list, default=None,
                   help="cross-map horizon: the library at t maps the target at t + Tp "
                   "(default 0); a comma list (e.g. -4,-3,-2,-1,0) gives time-lagged maps "
                   "and best_Tp")
    add_surrogates(x, "p_value and q_value")
    x.add_argument("--out", type=data_path, default="xmap.nc",
                   help="output: NetCDF (.nc), or Zarr (.zarr): a batch job written block by "
                   "block that resumes when run again (default xmap.nc); an existing NetCDF "
                   "file is replaced only with --overwrite")
    add_common(x, batch=True)
    add_batch(x, "library series")
    add_neighbours(x)
    x.set_defaults(func=command)


def _user(xmap, args) -> dict:
    return {spelling(xmap, "series_dim", "dim"): args.dim, "tau": args.tau, "Tp": args.Tp,
            "E_max": args.E_max,
            spelling(xmap, "time_dim", "time"): args.time_dim, "surrogates": args.surrogates,
            "surrogate_method": args.surrogate_method, "seed": args.seed,
            "surrogate_options": surrogate_options(args)}


def command(args) -> int:
    """``xedm xmap``: in memory into NetCDF, or a batch job into Zarr."""
    args.dim = renamed_option(args, "dim", "series_dim")  # the series dim, below
    series_dim_of(args.dim)
    if suffix(args.out) == ".zarr":  # a batch job: block by block, resumable
        return batch(args)
    xmap = public("xmap")
    with open_input(args.file) as ds:
        return _in_memory(args, xmap, variable(ds, args.var, series_dim=args.dim))


def _in_memory(args, xmap, da) -> int:
    series_dim_of(args.dim, da)
    with options(args), run_scheduler(args):
        result = call(xmap, da, user={**_user(xmap, args), "E": args.E},
                      optional={"progress": not args.quiet})
    write_netcdf(result, args.out, args.overwrite)
    print(f"xmap of {da.name!r} over {args.dim!r} ({da.sizes[args.dim]} series) -> {args.out}")
    if "q_value" in result:
        q = result.q_value.values
        n_sig = int((q <= 0.05).sum())
        print(f"{n_sig} of {int(np.isfinite(q).sum())} links with q_value <= 0.05 "
              f"({args.surrogates} {result.attrs['surrogate_method']} surrogates, "
              f"seed {result.attrs['surrogate_seed']})")
    return 0


def batch(args) -> int:
    """``xedm xmap INPUT ... --out OUT.zarr``: the blocked map, written block by block."""
    tdim = args.time_dim or "time"
    with open_lazy(args.file, args.var, {"--series-dim": args.dim, "--time-dim": tdim},
                   series_dim=args.dim) as da:
        return _batch(args, public("xmap"), da, tdim)


def _batch(args, xmap, da, tdim: str) -> int:
    from ..distributed import block_sizes

    N, T = da.sizes[args.dim], da.sizes[tdim]
    E_max = 10 if args.E_max is None else args.E_max
    user = _user(xmap, args)
    spec = {"command": "xmap", "input": os.path.abspath(args.file), "var": str(da.name),
            "E": args.E, "backend": args.backend, "neighbors": getattr(args, "neighbors", None),
            **{k: v for k, v in user.items() if k != "dim"}, "series_dim": args.dim}
    job = Job(args.out, spec, restart=args.restart or args.overwrite,
              flag="--restart" if args.restart else "--overwrite")
    progress = not args.quiet
    with run_scheduler(args) as client, options(args), ignoring(
            r"xmap \(one dask chunk of the data\): series"):  # said once, below
        live = job.read_input(da, tdim, client, progress, args.file)["any_finite"]
        if live.ndim == 1 and not live.all():
            names = [v.item() if isinstance(v, np.generic) else v
                     for v in np.asarray(da[args.dim].values)[~live]]
            warnings.warn(f"xmap: series {names} along {args.dim!r} are all NaN; their rows "
                          "(library) and columns (target) of rho are NaN", UserWarning,
                          stacklevel=2)
        blocks = job.saved("blocks.json", positive_ints("library", "target"))
        if blocks is None:
            lib, tgt = block_sizes(N, T, E_max=args.E or E_max,
                                   n_Tp=len(np.atleast_1d(args.Tp or 0)),
                                   workers=workers(client, args),
                                   backend="gpu" if args.backend == "gpu" else None)
            blocks = {"library": args.block or lib, "target": tgt}
        lazy = da.chunk({args.dim: blocks["library"], tdim: -1})
        E = args.E
        with _target_block(blocks["target"]):
            if E is None:
                E = job.saved("E.json", E_list(N, E_max, allow_none=True))
            # (with surrogates the map is one task that chooses E itself: no first stage)
            if E is None and not args.surrogates:  # the first stage: E per series
                first = call(xmap, lazy, user={**user, "E": None},
                             optional={"progress": False}, load=False)
                E = np.asarray(run_tasks([first.E.data], client, "choose E", progress)[0])
            result = call(xmap, lazy, user={**user, "E": E}, optional={"progress": False},
                          load=False)
        if args.E is None and E is not None:
            result.attrs.update(E_chosen=1, E_max=E_max)
        lazy_coords = [c for c in result.coords if hasattr(result[c].data, "dask")]
        result = result.reset_coords(lazy_coords)  # (E chosen inside) written as variables
        result.attrs.update(input=os.path.abspath(args.file), variable=str(da.name))
        done = job.run(result, client, progress, desc="xmap blocks",
                       what="block(s) (library x target)",
                       extras={"blocks.json": blocks, "E.json": None if args.E is not None
                               or E is None else np.asarray(E).tolist()})
    print(f"xmap of {da.name!r} over {args.dim!r} ({N} series, {T} time points) -> {args.out}: "
          f"{done}")
    return 0


@contextlib.contextmanager
def _target_block(size: int):
    from ..options import set_options

    with set_options(xmap_target_block=int(size)):
        yield
