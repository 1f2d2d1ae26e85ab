"""``xedm ccm FILE``: convergent cross mapping of the series of a file (both directions of
every pair), written as NetCDF."""

from __future__ import annotations

import numpy as np

from ._common import (
    CLIError,
    add_common,
    add_neighbours,
    add_surrogates,
    call,
    examples,
    int_at_least,
    int_range_list,
    open_input,
    options,
    public,
    spelling,
    surrogate_options,
    variable,
)
from ._outputs import write_netcdf
from .edm import add_out


def add_parser(sub) -> None:
    """The ``ccm`` subcommand."""
    c = sub.add_parser("ccm", help="convergent cross mapping of series in a file",
                       description="Convergent cross mapping: rho(library, target, lib_size) "
                       "over random libraries of each size, both directions of every pair; "
                       "with --surrogates, p_value and the null band.",
                       **examples("xedm ccm sardine_anchovy_sst.csv --columns anchovy,np_sst "
                                  "--lib-sizes 10:70:5 --E 3",
                                  "xedm ccm thrips.csv --columns Thrips_imaginis,maxT_degC "
                                  "--lib-sizes 10:70:10 --E 4 --surrogates 99 "
                                  "--surrogate-method seasonal --period 12 --seed 1",
                                  "xedm ccm data.nc --var x --series-dim neuron "
                                  "--lib-sizes 20,50,100 --E 2"))
    c.add_argument("file", help="NetCDF file, Zarr store or CSV table (a header row, a time "
                   "column, one column per series)")
    c.add_argument("--columns", type=lambda t: [v.strip() for v in t.split(",") if v.strip()],
                   default=None, help="the variables (columns) cross-mapped, comma-separated "
                   "(default: every variable over the time dim alone: a CSV's every column)")
    c.add_argument("--var", help="one variable whose --series-dim indexes the series")
    c.add_argument("--series-dim", dest="series_dim", default=None,
                   help="the dim of --var that indexes the series")
    c.add_argument("--time-dim", dest="time_dim", default=None,
                   help="time dim (default time; a CSV's time column is read as time)")
    c.add_argument("--lib-sizes", dest="lib_sizes", type=int_range_list, required=True,
                   help="library sizes: 10,20,40 or start:stop:step (stop included)")
    c.add_argument("--E", type=lambda t: [int(v) for v in t.split(",")] if "," in t
                   else int_at_least(1)(t), required=True,
                   help="embedding dimension, or one per series (comma list)")
    c.add_argument("--tau", type=int_at_least(1), default=None, help="lag (default 1)")
    c.add_argument("--Tp", type=int, default=None, help="cross-map horizon (default 0)")
    c.add_argument("--samples", type=int_at_least(1), default=None,
                   help="random libraries per size (default 100)")
    c.add_argument("--knn", type=int_at_least(1), default=None, help="neighbours (default E+1)")
    c.add_argument("--exclusion-radius", dest="exclusion_radius", type=int_at_least(0),
                   default=None, help="neighbours closer in time are excluded (default 0)")
    add_surrogates(c, "p_value")
    add_out(c, "ccm.nc")
    add_common(c)
    add_neighbours(c)
    c.set_defaults(func=command)


def command(args) -> int:
    """``xedm ccm``: the cross maps into NetCDF."""
    ccm = public("ccm")
    user = {"lib_sizes": args.lib_sizes, "E": args.E, "tau": args.tau, "Tp": args.Tp,
            "samples": args.samples, "knn": args.knn,
            "exclusion_radius": args.exclusion_radius, "seed": args.seed,
            "surrogates": args.surrogates, "surrogate_method": args.surrogate_method,
            "surrogate_options": surrogate_options(args),
            spelling(ccm, "time_dim"): args.time_dim}
    with open_input(args.file) as ds:
        if args.var is not None:
            if args.columns:
                raise CLIError("give --var with --series-dim (one variable) or --columns "
                               "(variables of the file), not both")
            if args.series_dim is None:
                raise CLIError("--var needs --series-dim: the dim that indexes its series")
            data = variable(ds, args.var)
            if args.series_dim not in data.dims:
                raise CLIError(f"--series-dim {args.series_dim!r} is not a dim of {args.var!r} "
                               f"(dims: {data.dims})")
            user[spelling(ccm, "series_dim", "dim")] = args.series_dim
        else:
            data = ds
            names, tdim = [str(v) for v in ds.data_vars], args.time_dim or "time"
            user["columns"] = args.columns or [v for v in names if ds[v].dims == (tdim,)]
            if len(user["columns"]) < 2:
                which = ("--columns gives" if args.columns else
                         f"the variables over {tdim!r} alone are")
                raise CLIError(f"ccm needs two or more series: {which} {user['columns']} (the "
                               f"file has {names}); choose them with --columns, or one "
                               "variable with --var and its --series-dim")
        with options(args):
            result = call(ccm, data, user=user, optional={"progress": not args.quiet})
    write_netcdf(result, args.out, args.overwrite)
    top = result.rho.isel(lib_size=-1)
    L = int(result.lib_size[-1])
    print(f"ccm of {result.sizes['library']} series, lib_size {int(result.lib_size[0])}..{L} "
          f"-> {args.out}")
    for lib in top.library.values:
        for tgt in top.target.values:
            if lib == tgt:
                continue
            p = ""
            if "p_value" in result:
                pv = result.p_value.sel(library=lib, target=tgt)
                pv = pv.isel(lib_size=-1) if "lib_size" in pv.dims else pv
                p = f", p = {float(pv):.3g}" if pv.ndim == 0 else ""
            rho = top.sel(library=lib, target=tgt)
            if rho.ndim == 0 and np.isfinite(float(rho)):
                print(f"  {tgt} -> {lib}: rho(L={L}) = {float(rho):.4f}{p}")
    return 0
