"""What the commands of ``xedm`` share: the one-line error, argument types, reading the input,
calling xedm with the user's options, the Dask scheduler of ``--scheduler`` / ``--workers``
and the shared options.  The outputs (their checks and atomic writes) are
:mod:`xedm.cli._outputs`.  Every module of :mod:`xedm.cli` imports from here; this module
imports none of them.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import warnings

import xarray as xr


class CLIError(Exception):
    """A problem the user can fix; printed as one line without a traceback.

    ``status`` is the exit code: 2 for a usage or input error (the default), 1 when the
    command fails while running (e.g. the output cannot be written).
    """

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def one_line(text: str, limit: int = 1000) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- argument types
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")
DATA_SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf", ".zarr")  # NetCDF, or Zarr for .zarr


def int_at_least(minimum: int):
    """An argparse type: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def recall(text: str) -> float:
    """An argparse type: a recall in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


recall.__name__ = "recall in (0, 1]"


def int_list(text: str):
    """An int, or a comma-separated list of ints (a list is returned as a list)."""
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an integer or a comma-separated list of integers") from None
    if not vals:
        raise argparse.ArgumentTypeError("give an integer or a comma-separated list")
    return vals[0] if len(vals) == 1 and "," not in text else vals


def label_ranges(text: str):
    """An argparse type: rows by time label, pyEDM's ``"1 100"`` or ``1:100`` (both ends
    included), several ranges as ``"1 100 201 300"`` / ``1:100,201:300``; a slice or a list
    of slices."""
    parts = text.replace(",", " ").replace(":", " ").split()

    def number(v: str):
        try:
            return int(v)
        except ValueError:
            try:
                return float(v)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{text!r}: {v!r} is not a number; give 'first last' (e.g. '1 100') or "
                    "first:last") from None

    if not parts or len(parts) % 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give pairs of first and last time "
                                         "labels, e.g. '1 100' or 1:100,201:300")
    vals = [number(v) for v in parts]
    out = [slice(a, b) for a, b in zip(vals[::2], vals[1::2], strict=True)]
    for r in out:
        if r.start > r.stop:
            raise argparse.ArgumentTypeError(f"{text!r}: first {r.start} > last {r.stop}")
    return out[0] if len(out) == 1 else out


def int_range_list(text: str) -> list[int]:
    """An argparse type: integers as a comma list (``10,20,40``) or ``start:stop:step``
    (stop included: ``10:70:5``)."""
    try:
        if ":" in text:
            a, b, *c = (int(v) for v in text.split(":"))
            vals = list(range(a, b + 1, c[0] if c else 1))
        else:
            vals = [int(v) for v in text.split(",") if v.strip()]
    except (ValueError, TypeError):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give integers as 10,20,40 or start:stop:step (e.g. 10:70:5)") from None
    if not vals:
        raise argparse.ArgumentTypeError(f"{text!r}: no integers")
    return vals


def suffix(path: str) -> str:
    """The lower-case suffix of ``path`` (a trailing slash ignored)."""
    return os.path.splitext(path.rstrip("/"))[1].lower()


def figure_path(text: str) -> str:
    """An argparse type: a figure file name."""
    if suffix(text) not in FIGURE_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"the figure must be one of {', '.join(FIGURE_SUFFIXES)}, got {text!r}"
        )
    return text


def netcdf_path(text: str) -> str:
    """An argparse type: a NetCDF output (the commands that write in memory)."""
    if suffix(text) not in DATA_SUFFIXES[:-1]:
        raise argparse.ArgumentTypeError(
            f"the output must be NetCDF ({', '.join(DATA_SUFFIXES[:-1])}), got {text!r}"
            + ("; .zarr outputs are the batch jobs of xedm xmap and xedm rqa"
               if suffix(text) == ".zarr" else ""))
    return text


def data_path(text: str) -> str:
    """An argparse type: a NetCDF or Zarr output."""
    if suffix(text) not in DATA_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"the output must be NetCDF ({', '.join(DATA_SUFFIXES[:-1])}) or Zarr (.zarr), "
            f"got {text!r}"
        )
    return text


# ----------------------------------------------------------------------------- calling xedm
def xedm():
    """The xedm package (imported when first needed)."""
    import xedm

    return xedm


def public(name: str):
    """``xedm.<name>``, or a clear error when this version does not have it yet."""
    try:
        func = getattr(xedm(), name, None)
    except ImportError:  # xedm.rqa is imported on first use; its module may fail to import
        func = None
    if func is None:
        raise CLIError(
            f"xedm.{name} is not available in this version of xedm "
            f"({getattr(xedm(), '__version__', '?')}); `xedm {name}` needs it"
        )
    return func


def call(func, *args, user: dict | None = None, optional: dict | None = None,
         load: bool = True):
    """Call ``func`` with the options the user gave (``user``: an option the function does not
    take is an error) and extras it may ignore (``optional``: dropped when not taken).
    Values left as None are not passed; a dask-backed result is computed (``load``)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {}
    for key, value in (user or {}).items():
        if value is None:
            continue
        if not (takes_any or key in params):
            raise CLIError(f"this version of xedm.{func.__name__} has no option {key!r}")
        kwargs[key] = value
    for key, value in (optional or {}).items():
        if value is not None and (takes_any or key in params):
            kwargs[key] = value
    try:
        result = func(*args, **kwargs)
        if load and hasattr(result, "load"):  # dask: compute here, where errors are mapped
            result = result.load()
        return result
    except (ValueError, TypeError) as err:
        raise CLIError(str(err)) from err


def spelling(func, *names: str) -> str:
    """The first of ``names`` that ``func`` accepts (keyword spellings differ between APIs)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return names[0]
    return next((n for n in names if n in params), names[0])


def renamed_option(args, old: str, new: str):
    """The value of option ``--new``, or of ``--old``, its old spelling (one release more, with
    a FutureWarning); both with different values is an error.  ``old`` and ``new`` are the
    options' dests (``dim``, ``series_dim``); the parser hides ``--old`` from ``--help``."""
    value, legacy = getattr(args, new), getattr(args, old)
    flag = "--" + new.replace("_", "-")
    if legacy is not None:
        if value is not None and value != legacy:
            raise CLIError(f"--{old} {legacy!r} and {flag} {value!r}: --{old} is the old name "
                           f"of {flag}; give only {flag}")
        warnings.warn(f"--{old} is renamed {flag} (xedm calls the time dimension time_dim and "
                      f"the series dimension series_dim everywhere); --{old} stops working in "
                      f"the next release", FutureWarning, stacklevel=2)
        value = legacy
    return value


def options(args):
    """xedm's options of ``--backend``, ``--neighbors`` and ``--neighbors-recall``."""
    opts = {"backend": args.backend} if args.backend else {}
    if getattr(args, "neighbors", None):
        opts["neighbors"] = args.neighbors
    if getattr(args, "neighbors_recall", None) is not None:
        opts["neighbors_recall"] = args.neighbors_recall
    return xedm().set_options(**opts)


# ----------------------------------------------------------------------------- input, output
TABLE_SUFFIXES = (".csv", ".tsv")
# a column of these names (any case) is the time column of a CSV; else its first column
TIME_COLUMNS = ("time", "date", "datetime", "year", "t")


def read_table(path: str) -> xr.Dataset:
    """A CSV table (a header row, a time column and one numeric column per series; pyEDM's
    and cppEDM's layout) as a Dataset of one variable per column over ``time``.

    The time column is the one named time, Time, date, year or t (any case), else the first
    column; its name is kept in ``attrs["time_column"]``."""
    import pandas as pd

    sep = "\t" if suffix(path) == ".tsv" else ","
    try:
        df = pd.read_csv(path, sep=sep)
    except Exception as err:  # pandas raises many types; the user needs the message
        raise CLIError(f"cannot read the table {path}: {one_line(err, 300)}; a CSV needs a "
                       "header row, a time column and one numeric column per series") from None
    if df.shape[1] < 2 or len(df) < 2:
        raise CLIError(f"{path}: a table needs a time column and at least one series column "
                       f"over two or more rows (read {df.shape[0]} rows, columns "
                       f"{list(map(str, df.columns))}); is the separator a comma?")
    names = [str(c) for c in df.columns]
    time = next((c for c in names if c.strip().lower() in TIME_COLUMNS), names[0])
    bad = [c for c in names if c != time and df[c].dtype.kind not in "iufb"]
    if bad:
        raise CLIError(f"{path}: columns {bad} are not numbers; every column but the time "
                       f"column {time!r} must be a series of numbers (empty cells are NaN)")
    if df[time].duplicated().any():
        raise CLIError(f"{path}: the time column {time!r} repeats values (first: "
                       f"{df[time][df[time].duplicated()].iloc[0]!r}); each row must be one "
                       "time")
    ds = df.set_index(time).to_xarray().rename({time: "time"})
    ds.attrs["time_column"] = time
    ds.attrs["source"] = os.path.abspath(path)
    return ds


def open_input(path: str, lazy: bool = False) -> xr.Dataset:
    """A NetCDF file, Zarr store (dask-backed with ``lazy``; Zarr always is) or CSV table
    (:func:`read_table`)."""
    if not os.path.exists(path):
        raise CLIError(f"no such file or directory: {path}")
    if suffix(path) in TABLE_SUFFIXES:
        return read_table(path)
    try:
        if path.rstrip("/").endswith(".zarr") or os.path.isdir(path):
            return xr.open_zarr(path)
        return xr.open_dataset(path, chunks={}) if lazy else xr.open_dataset(path)
    except Exception as err:  # backends raise many types; the user needs the message
        raise CLIError(f"cannot open {path}: {one_line(err, 300)} (xedm reads NetCDF, Zarr "
                       "and CSV tables: a .csv with a header row, a time column and one "
                       "column per series)") from err


def variable(ds: xr.Dataset, var: str | None, series_dim: str | None = None,
             stack_one: bool = True) -> xr.DataArray:
    """The variable ``--var`` (or the only one); of a CSV table without ``--var``, every
    column as one series along ``series_dim`` (a table of one column too, unless not
    ``stack_one``: then that column alone)."""
    names = sorted(map(str, ds.data_vars))
    if (var is None and series_dim is not None and "time_column" in ds.attrs
            and (stack_one or len(names) > 1)):
        cols = list(map(str, ds.data_vars))
        da = ds[cols].to_dataarray(dim=series_dim).transpose(series_dim, "time")
        return da.rename(os.path.splitext(os.path.basename(ds.attrs.get("source", "table")))[0])
    if var is None:
        if len(names) != 1:
            raise CLIError(f"the file has several variables {names}; choose one with --var")
        var = names[0]
    if var not in ds.data_vars:
        raise CLIError(f"variable {var!r} not in the file; it has {names}")
    return ds[var]


# ----------------------------------------------------------------------------- scheduler
LOCAL_SCHEDULERS = ("threads", "processes", "synchronous", "sync", "single-threaded")


@contextlib.contextmanager
def scheduler(address: str | None, workers: int | None, backend: str | None = None):
    """The Dask scheduler of ``--scheduler`` / ``--workers``: yields a ``distributed.Client``
    or None (a local scheduler)."""
    if address and workers:
        raise CLIError("give --scheduler ADDRESS (a running cluster) or --workers N (a local "
                       "one), not both")
    if address in LOCAL_SCHEDULERS:
        import dask

        with dask.config.set(scheduler=address):
            yield None
        return
    if not address and not workers:
        yield None
        return
    try:
        import distributed
    except ImportError:
        raise CLIError("--scheduler/--workers need dask.distributed: pip install "
                       "'xedm[dask]'") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. "port 8787 is already in use"
        if address:
            try:
                client = distributed.Client(address, timeout="30s")
            except (OSError, TimeoutError, ValueError) as err:
                raise CLIError(f"--scheduler {address}: cannot connect: {err}") from None
            cluster = None
        else:
            cluster = None
            if backend == "gpu":  # one worker per GPU (dask-cuda, else CUDA_VISIBLE_DEVICES)
                from ..distributed import gpu_cluster

                try:
                    cluster = gpu_cluster(workers)
                except ValueError as err:
                    raise CLIError(f"--workers {workers} --backend gpu: {err}") from None
            if cluster is None:
                cluster = distributed.LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    dashboard_address=None,
                    env={"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
            client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_scheduler(args):
    """:func:`scheduler` of a command's arguments."""
    return scheduler(args.scheduler, args.workers, args.backend)


# ----------------------------------------------------------------------------- shared options
def add_common(sp, batch: bool = False) -> None:
    """``--backend``, ``--quiet`` and ``--overwrite``, which every command with ``--out``
    takes (``batch``: the command also runs ``.zarr`` batch jobs)."""
    sp.add_argument("--backend", choices=["auto", "cpu", "gpu"], default=None,
                    help="where kernels run (default: xedm's option, 'auto')")
    sp.add_argument("-q", "--quiet", action="store_true",
                    help="no progress (shown as a bar on a terminal, else as a line a minute "
                    "on stderr once the work outlasts a minute)")
    sp.add_argument("--overwrite", action="store_true",
                    help="replace an existing --out (without it an existing output is "
                    "refused before any work); an --out that is a symbolic link is written "
                    "through, to the file it points to, and stays a link"
                    + (". With a .zarr --out: start the batch job over, as --restart (a job "
                       "with the same parameters and input resumes without it)" if batch
                       else ""))


def add_input(sp) -> None:
    """The input file and ``--var``."""
    sp.add_argument("file", help="NetCDF file, Zarr store or CSV table (a time column, one "
                    "column per series)")
    sp.add_argument("--var", help="variable to analyse (default: the only one; of a CSV "
                    "table, every column as one series)")


def add_series(sp, legacy_dim: bool = False) -> None:
    """``--series-dim``, ``--time-dim`` and ``--E`` / ``--E-max`` of the commands on many
    series (``legacy_dim``: also the hidden old spelling ``--dim``)."""
    sp.add_argument("--series-dim", dest="series_dim", default=None,
                    help="dim that indexes the series, e.g. neuron (required)")
    if legacy_dim:
        sp.add_argument("--dim", default=None, help=argparse.SUPPRESS)  # the old --series-dim
    sp.add_argument("--time-dim", dest="time_dim", default=None, help="time dim (default time)")
    which_E = sp.add_mutually_exclusive_group()
    which_E.add_argument("--E", type=int_at_least(1), default=None,
                         help="embedding dimension (default: chosen per series)")
    which_E.add_argument("--E-max", dest="E_max", type=int_at_least(1), default=None,
                         help="largest E when choosing E per series (default 10)")


def series_dim_of(dim, da=None) -> str:
    """``--series-dim``'s value, required, and a dim of the variable ``da`` when given."""
    if dim is None:
        raise CLIError("--series-dim is required: the dim that indexes the series, e.g. "
                       "--series-dim neuron")
    if da is not None and dim not in da.dims:
        raise CLIError(f"--series-dim {dim!r} is not a dim of {da.name!r} (dims: {da.dims})")
    return dim


def add_batch(sp, what: str) -> None:
    """The options of a resumable batch job (``--out OUT.zarr``)."""
    sp.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="Dask scheduler: the address of a running cluster "
                    "(tcp://host:8786), or threads, processes or synchronous (default: "
                    "Dask's threads)")
    sp.add_argument("--workers", type=int_at_least(1), default=None,
                    help="start a local Dask cluster of this many worker processes, one "
                    "thread each (one GPU each with --backend gpu)")
    sp.add_argument("--block", type=int_at_least(1), default=None,
                    help=f"{what} per block of a .zarr batch job (default: the block rule "
                    "of docs/scaling.md)")
    sp.add_argument("--restart", action="store_true",
                    help="start a .zarr batch job over instead of resuming it (removes only "
                    "a store that an xedm batch job wrote)")


def add_neighbours(sp) -> None:
    """``--neighbors`` and ``--neighbors-recall``."""
    sp.add_argument("--neighbors", default=None,
                    choices=["auto", "exact", "kdtree", "sorted1d", "nndescent", "hnsw",
                             "ivf"],
                    help="how neighbours are found (default: xedm's option, 'auto')")
    sp.add_argument("--neighbors-recall", dest="neighbors_recall", type=recall,
                    default=None,
                    help="target recall of approximate neighbours, in (0, 1] "
                    "(default 0.99)")


def add_surrogates(sp, what: str) -> None:
    """``--surrogates``, ``--surrogate-method`` and the methods' parameters (``--period``,
    ``--block-length``), and ``--seed``."""
    sp.add_argument("--surrogates", type=int_at_least(0), default=None,
                    help=f"surrogates per target for {what} (e.g. 99; default 0)")
    sp.add_argument("--surrogate-method", dest="surrogate_method", default=None,
                    choices=["ebisuzaki", "shuffle", "seasonal", "block", "twin"],
                    help="null model of the surrogates (default ebisuzaki); seasonal needs "
                    "--period, block needs --block-length")
    sp.add_argument("--period", type=int_at_least(2), default=None,
                    help="period of the seasonal surrogates, in time steps (e.g. 12)")
    sp.add_argument("--block-length", dest="block_length", type=int_at_least(1),
                    default=None, help="block length of the block surrogates, in time steps")
    sp.add_argument("--seed", type=int_at_least(0), default=None,
                    help="seed of the random draws (default: drawn, recorded in the output)")


def surrogate_options(args) -> dict | None:
    """``surrogate_options`` of ``--period`` / ``--block-length``, checked against
    ``--surrogate-method`` before any work."""
    method = args.surrogate_method or "ebisuzaki"
    need = {"seasonal": ("period", "--period"), "block": ("block_length", "--block-length")}
    for key, flag in (("period", "--period"), ("block_length", "--block-length")):
        if getattr(args, key, None) is not None and need.get(method, (None,))[0] != key:
            raise CLIError(f"{flag} is a parameter of the "
                           f"{'seasonal' if key == 'period' else 'block'} surrogates; "
                           f"--surrogate-method is {method}")
    if method in need and args.surrogates:
        key, flag = need[method]
        if getattr(args, key, None) is None:
            raise CLIError(f"--surrogate-method {method} needs {flag} (e.g. {flag} 12)")
    opts = {k: getattr(args, k) for k in ("period", "block_length")
            if getattr(args, k, None) is not None}
    return opts or None


def examples(*lines: str) -> dict:
    """The ``epilog`` of a subcommand: its examples, printed by ``--help`` as written."""
    return {"epilog": "examples:\n" + "\n".join(f"  {line}" for line in lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}
