"""``xedm network FILE --series-dim DIM``: the direct causal network of the series of one
variable (:func:`xedm.causal_network`), written as NetCDF: an edge list past 1,000 series
(``--result``), the (library, target) matrices below."""

from __future__ import annotations

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
    run_scheduler,
    series_dim_of,
    suffix,
    surrogate_options,
    variable,
)
from ._outputs import write_netcdf


def add_parser(sub) -> None:
    """The ``network`` subcommand of the parser."""
    c = sub.add_parser("network", help="direct causal network of many series in a file",
                       description="Cross maps, surrogate significance, false-discovery "
                       "control and the predictive conditioning of every ordered pair of "
                       "series along --series-dim (xedm.causal_network); writes the links, "
                       "their lag, rho, p, q and gain, and the three-way decision. A CSV "
                       "table's columns are the series.",
                       **examples("xedm network data.nc --series-dim neuron --out net.nc",
                                  "xedm network table.csv --series-dim series --seed 1 "
                                  "--max-lag 3 --out net.nc",
                                  "xedm network brain.nc --series-dim neuron --backend gpu "
                                  "--result edges --out edges.nc",
                                  "xedm network brain.nc --series-dim neuron --backend gpu "
                                  "--out brain-network.zarr  # resumes when run again"))
    add_input(c)
    add_series(c)
    c.add_argument("--lags", type=int_list, default=None,
                   help="the cross maps' lags Tp, a comma list with at least one <= 0 "
                   "(default -2,-1,0,1,2)")
    c.add_argument("--max-lag", dest="max_lag", type=int_at_least(1), default=None,
                   help="longest driver delay the conditioning tests, in steps (default 5)")
    c.add_argument("--alpha", type=float, default=None,
                   help="false-discovery level of the tests (default 0.05)")
    c.add_argument("--conditioning", choices=["predictive", "partial"], default=None,
                   help="how direct links are told from indirect ones (default predictive)")
    c.add_argument("--result", choices=["auto", "dense", "edges"], default=None,
                   help="the output's form: (library, target) matrices (dense) or the "
                   "tested pairs as an edge list (edges); default auto: edges past 1,000 "
                   "series")
    add_surrogates(c, "the cross maps' significance (default 29)")
    c.add_argument("--out", type=data_path, default="network.nc",
                   help="output: NetCDF (.nc), or Zarr (.zarr): a batch job that writes a "
                   "large network library block by library block and resumes when run "
                   "again, then replaces the blocks by the edge list (default network.nc); "
                   "an existing NetCDF file is replaced only with --overwrite")
    add_common(c, batch=True)
    add_batch(c, "library series")
    add_neighbours(c)
    c.set_defaults(func=command)


def command(args) -> int:
    """``xedm network``: in memory into NetCDF."""
    series_dim_of(args.series_dim)
    net = public("causal_network")
    user = {"series_dim": args.series_dim, "time_dim": args.time_dim, "E": args.E,
            "E_max": args.E_max, "lags": args.lags, "max_lag": args.max_lag,
            "alpha": args.alpha, "conditioning": args.conditioning, "result": args.result,
            "surrogates": args.surrogates, "surrogate_method": args.surrogate_method,
            "seed": args.seed, "surrogate_options": surrogate_options(args)}
    if suffix(args.out) == ".zarr":  # a batch job: block by block, resumable
        from .network_job import batch

        return batch(args, user)
    with open_input(args.file) as ds:
        da = variable(ds, args.var, series_dim=args.series_dim)
        series_dim_of(args.series_dim, da)
        with options(args), run_scheduler(args):
            result = call(net, da, user=user, optional={"progress": not args.quiet})
    write_netcdf(result, args.out, args.overwrite)
    n = da.sizes[args.series_dim]
    links = int(result.link.values.sum())
    undetermined = int(result.undetermined.values.sum())
    form = result.attrs.get("result", "dense")
    print(f"causal network of {da.name!r} over {args.series_dim!r} ({n} series): {links} "
          f"links, {undetermined} listed pairs undetermined -> {args.out} ({form})")
    return 0
