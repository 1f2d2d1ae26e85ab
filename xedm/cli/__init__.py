"""The ``xedm`` command: ``xedm demo``, ``xedm simplex|smap|embed-dimension|ccm|xmap|rqa FILE``,
``xedm warmup``.

``xedm demo`` runs the main EDM workflow on built-in data (coupled logistic maps), prints a
labeled summary and writes a PNG.  The other commands read a NetCDF file, Zarr store or CSV
table (a header row, a time column and one column per series, as pyEDM's), run the analysis
and write the result as NetCDF; ``xedm xmap`` and ``xedm rqa`` run as a resumable batch job on
Dask (:mod:`xedm.cli.jobs`) when ``--out`` ends in ``.zarr``.  An ``--out`` that is, contains
or lies inside the input is refused before any work, and so is an existing output unless
``--overwrite`` is given (a ``.zarr`` batch job with the same parameters and input resumes
instead); an ``--out`` that is a symbolic link is written through, to the file it points to
(``xedm.cli._outputs``).  Progress is a bar on a terminal and a plain line a minute in
logs (``xedm._progress``).  ``xedm COMMAND --help`` shows examples.

The package: this module parses the arguments and runs a command; one module per command
(``xedm.cli.demo``, ``xedm.cli.edm`` for simplex, smap and embed-dimension, ``xedm.cli.ccm``,
``xedm.cli.xmap``, ``xedm.cli.rqa``), the batch jobs
(:mod:`~xedm.cli.jobs`), the outputs (``xedm.cli._outputs``) and what they share
(``xedm.cli._common``), imported in that order only.

Examples
--------
>>> from xedm.cli import main
>>> main(["--version"])  # doctest: +ELLIPSIS
xedm ...
0
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from . import ccm, demo, edm, network, rqa, warmup, xmap
from ._common import CLIError, one_line
from ._outputs import check_apart, check_output

__all__ = ["main"]


class _UsageError(Exception):
    """An argparse error, raised instead of printing the usage and exiting."""

    def __init__(self, message: str, prog: str):
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse, with errors as one line (``xedm: error: ...``) printed by :func:`main`."""

    def error(self, message: str):  # noqa: D102 (argparse API)
        raise _UsageError(message, self.prog)


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = _Parser(
        prog="xedm",
        description="Empirical Dynamic Modeling and recurrence analysis on labeled data.",
    )
    p.add_argument("--version", action="version", version=f"xedm {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for command in (demo, edm, ccm, xmap, network, rqa, warmup):
        command.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``xedm`` console script; returns the exit status.

    Every error is one line on stderr, ``xedm: error: ...``, without a traceback (set the
    environment variable ``XEDM_DEBUG=1`` to see one); warnings are one line each,
    ``xedm: warning: ...``.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success; 2 on a usage or input error (a bad option value, a missing file,
        variable or dim, an output that cannot be created, data the analysis refuses);
        1 when the command fails while running (the output cannot be written, an
        unexpected error); 130 when interrupted.
    """
    import os

    parser = _parser()
    given, argv = list(sys.argv[1:] if argv is None else argv), []
    while given:  # "--Tp -2,-1" would read as an option to argparse: join it
        a = given.pop(0)
        if a == "--Tp" and given and given[0].startswith("-"):
            a = f"--Tp={given.pop(0)}"
        argv.append(a)
    try:
        args = parser.parse_args(argv)
    except _UsageError as err:
        print(f"xedm: error: {one_line(err)} (see '{err.prog} --help')", file=sys.stderr)
        return 2
    except SystemExit as exit_:  # --help, --version
        return int(exit_.code or 0)
    if args.command is None:
        parser.print_help()
        return 0

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"xedm: warning: {one_line(message)}", file=sys.stderr)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = show
            if getattr(args, "out", None) is not None:
                if getattr(args, "file", None) is not None:  # first: the gravest refusal
                    check_apart(args.file, args.out)
                check_output(args.out, data=args.command != "demo",
                             overwrite=getattr(args, "overwrite", False))
            return args.func(args)
    except CLIError as err:
        print(f"xedm: error: {one_line(err)}", file=sys.stderr)
        return err.status
    except BrokenPipeError:  # e.g. `xedm demo | head`
        return 0
    except KeyboardInterrupt:
        print("xedm: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if os.environ.get("XEDM_DEBUG"):
            raise
        print(f"xedm: error: {args.command} failed: {type(err).__name__}: {one_line(err)} "
              "(set XEDM_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
