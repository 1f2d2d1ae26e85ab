"""``xedm simplex``, ``xedm smap`` and ``xedm embed-dimension``: forecasts and the choice of E
of the series in a NetCDF file, Zarr store or CSV table, written as NetCDF."""

from __future__ import annotations

import numpy as np

from ._common import (
    CLIError,
    add_common,
    add_neighbours,
    call,
    examples,
    int_at_least,
    label_ranges,
    open_input,
    options,
    public,
    spelling,
    variable,
)
from ._outputs import write_netcdf


def add_data(sp) -> None:
    """The input and how its series are chosen: ``--var`` (a variable; other dims
    broadcast) or ``--columns`` / ``--target`` (variables, such as a CSV's columns)."""
    sp.add_argument("file", help="NetCDF file, Zarr store or CSV table (a header row, a "
                    "time column, one column per series)")
    sp.add_argument("--var", help="variable to analyse (other dims broadcast: one result per "
                    "series; default: the only variable, else give --var or --columns)")
    sp.add_argument("--columns", type=lambda t: [c.strip() for c in t.split(",") if c.strip()],
                    default=None, help="variables (columns) forming the state, comma-separated "
                    "(default: --target alone)")
    sp.add_argument("--target", default=None, help="variable predicted (default: the first "
                    "of --columns)")
    sp.add_argument("--time-dim", dest="time_dim", default=None,
                    help="time dim (default time; a CSV's time column is read as time)")


def add_embedding(sp, E: bool = True) -> None:
    """``--E``, ``--tau``, ``--Tp``, ``--knn``, ``--exclusion-radius``, ``--lib``,
    ``--pred``."""
    if E:
        sp.add_argument("--E", type=int_at_least(1), required=True,
                        help="embedding dimension")
    sp.add_argument("--tau", type=int_at_least(1), default=None, help="lag (default 1)")
    sp.add_argument("--Tp", type=int, default=None, help="prediction horizon (default 1)")
    sp.add_argument("--knn", type=int_at_least(1), default=None,
                    help="neighbours (default: E + 1 for simplex, every library point for "
                    "smap)")
    sp.add_argument("--exclusion-radius", dest="exclusion_radius", type=int_at_least(0),
                    default=None, help="neighbours closer in time than this are excluded "
                    "(default 0)")
    sp.add_argument("--lib", type=label_ranges, default=None,
                    help="library rows by time label, both ends included: '1 100' or 1:100 "
                    "(several: 1:100,201:300; default: every row)")
    sp.add_argument("--pred", type=label_ranges, default=None,
                    help="predicted rows by time label, as --lib (default: every row, "
                    "leave-one-out)")


def add_out(sp, default: str) -> None:
    from ._common import netcdf_path

    sp.add_argument("--out", type=netcdf_path, default=default,
                    help=f"output NetCDF file (default {default}); an existing one is "
                    "replaced only with --overwrite")


#: command -> (function, help, description, examples)
COMMANDS = {
    "simplex": ("simplex", "simplex forecast of a series",
                "Simplex projection: forecast by the nearest states; writes observed, "
                "prediction and rho, mae, rmse.",
                ("xedm simplex TentMap.csv --E 2 --lib 1:100 --pred 201:500",
                 "xedm simplex block_3sp.csv --columns x_t,y_t,z_t --target x_t --E 3",
                 "xedm simplex data.nc --var x --E 3 --Tp 2 --out fc.nc")),
    "smap": ("smap", "S-map forecast and coefficients of a series",
             "S-map: locally weighted linear maps (theta sets the nonlinearity); writes the "
             "forecast, its skill and the coefficients.",
             ("xedm smap Lorenz5D.csv --columns V1 --E 4 --theta 3 --lib 10:35 "
              "--pred 35.05:59.95",
              "xedm smap data.nc --var x --E 2 --theta 2 --out smap.nc")),
    "embed-dimension": ("embed_dimension", "simplex skill against E; the best E",
                        "Simplex skill for E = 1..E_max; writes rho, mae, rmse over E and "
                        "best_E.",
                        ("xedm embed-dimension TentMap.csv --E-max 10 --lib 1:100 "
                         "--pred 201:500",
                         "xedm embed-dimension data.nc --var x --E-max 8")),
}


def add_parser(sub) -> None:
    """The ``simplex``, ``smap`` and ``embed-dimension`` subcommands."""
    for name, (function, short, description, lines) in COMMANDS.items():
        sp = sub.add_parser(name, help=short, description=description, **examples(*lines))
        add_data(sp)
        if function == "embed_dimension":
            sp.add_argument("--E-max", dest="E_max", type=int_at_least(1), default=None,
                            help="largest E tried (default 10)")
        add_embedding(sp, E=function != "embed_dimension")
        if function == "smap":
            sp.add_argument("--theta", type=float, default=None,
                            help="nonlinearity, >= 0 (default 0: a global linear map)")
        add_out(sp, f"{function}.nc")
        add_common(sp)
        add_neighbours(sp)
        sp.set_defaults(func=command, function=function)


def data_of(args, ds):
    """The data of the call: ``--var``'s variable, else the Dataset (``--columns``)."""
    if args.var is not None and (args.columns or args.target):
        raise CLIError("give --var (one variable; other dims broadcast) or --columns/--target "
                       "(variables of the file), not both")
    if args.var is not None or (not args.columns and not args.target
                                and len(ds.data_vars) == 1):
        return variable(ds, args.var)
    if not args.columns and not args.target:
        names = list(map(str, ds.data_vars))
        raise CLIError(f"the file has several variables {names}; choose the state with "
                       "--columns (and the predicted one with --target), or one variable "
                       "with --var")
    return ds


def command(args) -> int:
    """Run simplex, smap or embed_dimension on the file; write the result."""
    func = public(args.function)
    user = {"tau": args.tau, "Tp": args.Tp, "knn": args.knn,
            "exclusion_radius": args.exclusion_radius, "lib": args.lib, "pred": args.pred,
            spelling(func, "time_dim", "dim"): args.time_dim}
    if args.function == "embed_dimension":
        user["E_max"] = args.E_max
    else:
        user["E"] = args.E
    if args.function == "smap":
        user["theta"] = args.theta
    with open_input(args.file) as ds:
        data = data_of(args, ds)
        if args.columns or args.target:  # --target alone: predicted from its own lags
            user.update(columns=args.columns or [args.target], target=args.target)
        with options(args):
            result = call(func, data, user=user, optional={"progress": not args.quiet})
    write_netcdf(result, args.out, args.overwrite)
    what = result.attrs.get("target") or getattr(data, "name", None) or "the series"
    if args.function == "embed_dimension":
        best = result.get("best_E")
        shown = (f"best E = {int(best)}" if best is not None and best.ndim == 0
                 else "best_E per series")
        print(f"embed_dimension of {what!s}: {shown} -> {args.out}")
    else:
        rho = result["rho"]
        skill = (f"rho = {float(rho):.4f}" if rho.ndim == 0
                 else f"rho from {np.nanmin(rho.values):.4f} to {np.nanmax(rho.values):.4f}")
        print(f"{args.function} of {what!s}: {skill} -> {args.out}")
    return 0
