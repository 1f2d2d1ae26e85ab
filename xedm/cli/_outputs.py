"""The outputs of ``xedm``'s commands: the checks before any work (a known suffix, a
writable place, never the input, never an existing output without ``--overwrite``) and the
atomic writes (a temporary file beside the output, renamed into place).

An ``--out`` that is a symbolic link is written through: the file it points to is written
(created beside it and renamed over it) and the link stays a link; a broken link is refused.
The ``.zarr`` batch jobs' stores are checked by :class:`xedm.cli.jobs.Job` (which resumes a
store of the same job), their writes are the jobs' own.
"""

from __future__ import annotations

import argparse
import contextlib
import os

import numpy as np
import xarray as xr

from ._common import CLIError, data_path, suffix


def output_target(path: str) -> str:
    """Where ``--out`` is written: the path itself, or, for a symbolic link, the file it points
    to (xedm writes through a link and keeps it; it never replaces a link by a file)."""
    return os.path.realpath(path.rstrip("/") or path)


def check_output(path: str, data: bool, overwrite: bool = False) -> None:
    """Before any work: the output has a known suffix, can be created where it is asked, and
    does not exist unless ``overwrite`` (``--overwrite``).  A ``.zarr`` batch job's existing
    store is checked by :class:`xedm.cli.jobs.Job`, which resumes it when it is this job's."""
    if data:
        try:
            data_path(path)
        except argparse.ArgumentTypeError as err:
            raise CLIError(f"--out: {err}") from None
    target = path.rstrip("/") or path
    if os.path.islink(target) and not os.path.exists(target):
        raise CLIError(f"--out {path} is a broken symbolic link (to {os.readlink(target)}); "
                       "xedm writes through a link only to an existing file: create its "
                       "target, or choose another --out")
    real = output_target(path)
    via = f" (a symbolic link to {real})" if os.path.islink(target) else ""
    parent = os.path.dirname(real)
    if not os.path.isdir(parent):
        raise CLIError(f"--out {path}{via}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise CLIError(f"--out {path}{via}: the directory {parent} is not writable")
    if os.path.isdir(real) and suffix(target) != ".zarr":
        raise CLIError(f"--out {path}{via} is a directory; give a file name")
    if os.path.exists(real) and not os.access(real, os.W_OK):
        raise CLIError(f"--out {path}{via} exists and is not writable")
    if os.path.exists(real) and suffix(target) != ".zarr" and not overwrite:
        raise CLIError(f"--out {path}{via} exists; xedm does not overwrite an output: pass "
                       "--overwrite to replace it, or choose another --out")


def check_apart(source: str, out: str) -> None:
    """Refuse an output that is, contains or lies inside the input (symbolic links resolved,
    hard links compared), before anything is read or written."""
    src, dst = os.path.realpath(source), os.path.realpath(out)
    same = src == dst
    if not same and os.path.exists(source) and os.path.exists(out):
        with contextlib.suppress(OSError):
            same = os.path.samefile(source, out)
    if same:
        why = "is the input"
    elif dst.startswith(src.rstrip(os.sep) + os.sep):
        why = "lies inside the input"
    elif src.startswith(dst.rstrip(os.sep) + os.sep):
        why = "contains the input"
    else:
        return
    raise CLIError(f"--out {out} {why} {source}; writing it would destroy the input: choose an "
                   "--out outside the input")


def netcdf_safe(obj: xr.Dataset) -> xr.Dataset:
    """NetCDF attributes hold only str, numbers and lists of them."""

    def clean(attrs: dict) -> dict:
        out = {}
        for k, v in attrs.items():
            if isinstance(v, (bool, np.bool_)):
                v = int(v)
            elif v is None or isinstance(v, (dict, tuple, set)):
                v = str(v)
            out[k] = v
        return out

    obj = obj.copy()
    obj.attrs = clean(obj.attrs)
    for name in obj.variables:
        obj[name].attrs = clean(obj[name].attrs)
    return obj


def write_output(out: str, write, overwrite: bool = False) -> None:
    """``write(tmp)`` writes the output into a temporary file beside ``--out`` (beside its
    target when ``out`` is a symbolic link: written through, the link kept), which is then
    renamed into place: a failure leaves ``out`` as it was.  Without ``overwrite`` an output
    that appeared while the command ran is not replaced (a hard link, which fails on an
    existing name, puts the file in place)."""
    real = output_target(out)
    head, tail = os.path.split(real)
    tmp = os.path.join(head, f".{tail}.xedm-tmp-{os.getpid()}{suffix(out)}")
    try:
        write(tmp)
        if overwrite:
            os.replace(tmp, real)
        else:
            try:
                os.link(tmp, real)
            except FileExistsError:
                raise CLIError(f"--out {out} appeared while xedm ran; xedm does not overwrite "
                               "an output: pass --overwrite to replace it, or choose another "
                               "--out", status=1) from None
            except OSError:  # no hard links on this file system: check, then rename
                if os.path.lexists(real):
                    raise CLIError(f"--out {out} appeared while xedm ran; xedm does not "
                                   "overwrite an output: pass --overwrite to replace it, or "
                                   "choose another --out", status=1) from None
                os.replace(tmp, real)
            with contextlib.suppress(OSError):
                os.remove(tmp)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(err, CLIError) or not isinstance(err, Exception):
            raise
        raise CLIError(f"cannot write {out}: {err}", status=1) from err


def write_netcdf(result: xr.Dataset | xr.DataArray, out: str, overwrite: bool = False) -> None:
    """``result`` into the NetCDF file ``out`` with :func:`write_output` (atomically, through
    a symbolic link, never over an existing file unless ``overwrite``)."""
    if isinstance(result, xr.DataArray):
        result = result.to_dataset(name=result.name or "result")
    result = netcdf_safe(result)
    check_output(out, data=True, overwrite=overwrite)
    write_output(out, result.to_netcdf, overwrite)
