"""``xedm rqa FILE``: recurrence quantification of one variable (other dims broadcast),
written as NetCDF, or, with ``--out OUT.zarr``, as a resumable batch job
(:mod:`xedm.cli.jobs`)."""

from __future__ import annotations

import argparse
import os

import numpy as np
import xarray as xr

from ._common import (
    CLIError,
    add_batch,
    add_common,
    add_input,
    call,
    data_path,
    examples,
    open_input,
    options,
    public,
    renamed_option,
    run_scheduler,
    spelling,
    suffix,
    variable,
)
from ._outputs import write_netcdf
from .jobs import Job, open_lazy, positive_ints, workers

# the dim of a CSV table's columns, when --var does not pick one (a table of one column is
# that series alone, as before)
TABLE_SERIES = "series"


def add_parser(sub) -> None:
    """The ``rqa`` subcommand of the parser."""
    r = sub.add_parser("rqa", help="recurrence quantification of a series in a file",
                       description="Recurrence quantification analysis of one variable; other "
                       "dims broadcast.  A CSV table's columns are the series (along the dim "
                       "'series'), unless --var picks one.",
                       **examples("xedm rqa data.nc --var x --E 3 --rr 0.05",
                                  "xedm rqa table.csv --var anchovy --E 2 --eps 0.1",
                                  "xedm rqa table.csv --E 2 --rr 0.05 --out every_column.nc",
                                  "xedm rqa big.zarr --var x --E 3 --rr 0.05 --out q.zarr"))
    add_input(r)
    r.add_argument("--time-dim", dest="time_dim", default=None, help="time dim (default time)")
    r.add_argument("--dim", default=None, help=argparse.SUPPRESS)  # the old --time-dim
    r.add_argument("--E", type=int, default=1, help="embedding dimension (default 1)")
    r.add_argument("--tau", type=int, default=1, help="lag (default 1)")
    group = r.add_mutually_exclusive_group()
    group.add_argument("--eps", type=float, default=None, help="recurrence threshold")
    group.add_argument("--rr", type=float, default=None, help="target recurrence rate")
    r.add_argument("--theiler", type=int, default=None, help="Theiler window (default 1)")
    r.add_argument("--metric", choices=["euclidean", "maximum", "manhattan"], default=None)
    r.add_argument("--out", type=data_path, default="rqa.nc",
                   help="output: NetCDF (.nc), or Zarr (.zarr): a batch job written block by "
                   "block that resumes when run again (default rqa.nc); an existing NetCDF "
                   "file is replaced only with --overwrite")
    add_common(r, batch=True)
    add_batch(r, "series")
    r.set_defaults(func=command)


def command(args) -> int:
    """``xedm rqa``: in memory into NetCDF, or a batch job into Zarr."""
    public("rqa")
    args.dim = renamed_option(args, "dim", "time_dim")  # the time dim, below
    try:
        # the public xedm.rqa forwards *args/**kwargs; the real signature lives here
        from ..labeled.rqa import rqa
    except ImportError as err:
        raise CLIError(f"RQA is not available in this version of xedm: {err}") from err
    if (args.eps is None) == (args.rr is None):
        raise CLIError("give exactly one of --eps (threshold) or --rr (recurrence rate)")
    user = {
        "E": args.E, "tau": args.tau, "eps": args.eps, "theiler": args.theiler,
        spelling(rqa, "time_dim", "dim"): args.dim,
        spelling(rqa, "rr", "recurrence_rate"): args.rr,
        spelling(rqa, "metric", "norm"): args.metric,
    }
    if suffix(args.out) == ".zarr":  # a batch job: block by block, resumable
        return batch(args, rqa, user)
    with open_input(args.file) as ds:
        return _in_memory(args, rqa, user, variable(ds, args.var, series_dim=TABLE_SERIES,
                                                      stack_one=False))


def _in_memory(args, rqa, user: dict, da) -> int:
    if (args.dim or "time") not in da.dims and not (args.dim is None and da.ndim == 1):
        raise CLIError(f"--time-dim {args.dim or 'time'!r} is not a dim of {da.name!r} (dims: "
                       f"{da.dims}); give the time dim with --time-dim")
    with options(args), run_scheduler(args):
        result = call(rqa, da, user=user, optional={"progress": not args.quiet})
    write_netcdf(result, args.out, args.overwrite)
    print(f"RQA of {da.name!r} (E = {args.E}, tau = {args.tau}) -> {args.out}")
    print_measures(result)
    return 0


def batch(args, rqa, user: dict) -> int:
    """``xedm rqa INPUT ... --out OUT.zarr``: RQA of every series, block by block."""
    tdim = args.dim or "time"
    with open_lazy(args.file, args.var, {"--time-dim": tdim}, series_dim=TABLE_SERIES,
                   stack_one=False) as da:
        return _batch(args, rqa, user, da, tdim)


def _batch(args, rqa, user: dict, da, tdim: str) -> int:
    series = [d for d in da.dims if d != tdim]
    n = int(np.prod([da.sizes[d] for d in series])) if series else 1
    spec = {"command": "rqa", "input": os.path.abspath(args.file), "var": str(da.name),
            "backend": args.backend, **user}
    job = Job(args.out, spec, restart=args.restart or args.overwrite,
              flag="--restart" if args.restart else "--overwrite")
    progress = not args.quiet
    with run_scheduler(args) as client, options(args):
        scan = job.read_input(da, tdim, client, progress, args.file)
        if not scan["all_finite"]:  # as in memory: RQA needs finite data
            raise CLIError(f"rqa: the variable {da.name!r} of {args.file} contains NaN or "
                           "infinite values; RQA needs finite data: drop or fill them first")
        blocks = job.saved("blocks.json", positive_ints("series"))
        if blocks is None:
            per = args.block or max(1, -(-n // (4 * workers(client, args))))
            blocks = {"series": per}
        # blocks of about blocks["series"] series: the first series dim is cut, the others
        # (if any) stay whole
        chunks = {tdim: -1}
        if series:
            inner = int(np.prod([da.sizes[d] for d in series[1:]]))
            chunks[series[0]] = max(1, blocks["series"] // max(1, inner))
        result = call(rqa, da.chunk(chunks), user=user, optional={"progress": False},
                      load=False)
        result.attrs.update(input=os.path.abspath(args.file), variable=str(da.name))
        done = job.run(result, client, progress, desc="rqa blocks", what="blocks",
                       extras={"blocks.json": blocks})
    print(f"RQA of {da.name!r} ({n} series, E = {args.E}, tau = {args.tau}) -> {args.out}: "
          f"{done}")
    with xr.open_zarr(args.out) as res:
        print_measures(res)
    return 0


def print_measures(res: xr.Dataset) -> None:
    """The RQA measures: the value of one series, or mean [min, max] over many."""
    from ..recurrence.measures import MEASURES

    rows = []
    for m in MEASURES:
        if m not in res:
            continue
        v = np.asarray(res[m].values, np.float64)
        fin = v[np.isfinite(v)]
        if v.size == 1:
            rows.append(f"  {m:<7} {v.ravel()[0]:.6g}")
        elif fin.size:
            rows.append(f"  {m:<7} mean {fin.mean():.6g}  [min {fin.min():.6g}, max "
                        f"{fin.max():.6g}] over {v.size} values"
                        + (f" ({v.size - fin.size} NaN)" if fin.size < v.size else ""))
        else:
            rows.append(f"  {m:<7} NaN (empty histogram) for all {v.size} values")
    print("\n".join(rows))
