"""Resumable batch jobs of the ``xedm`` command (``xedm xmap ... --out OUT.zarr``,
``xedm rqa ... --out OUT.zarr``): a Zarr store written block by block that cannot destroy or
mix data.

A job reads its input lazily (NetCDF or Zarr, chunked along the series), builds the lazy
result (:mod:`xedm.distributed` for xmap), creates the Zarr store with every variable's
metadata and the job's parameters in attrs, then computes and writes the result **block by
block**: each block is one Dask task that computes its piece, writes it into its own Zarr
chunks and only then leaves a marker ``OUT.zarr/.xedm-batch/done/<block>`` holding a checksum
of the values it wrote.  Running the same command again after an interruption (Ctrl-C, a
killed job, a lost node) re-reads every finished block, keeps those whose values match their
checksum and computes the others (no marker, missing or damaged chunks, changed values).
xmap's choice of E is saved too (``E.json``), so a resumed job does not choose again.

What a job refuses, with a one-line error and nothing touched:

* an ``--out`` that is, contains or lies inside the input (checked by :mod:`xedm.cli`);
* an existing ``--out`` that is not an xedm batch job (no ``.xedm-batch/job.json``), with or
  without ``--restart`` or ``--overwrite``: they remove only a store that a job wrote, and
  only when it holds nothing else;
* resuming with other parameters, or on an input whose fingerprint (variable, dims, shape,
  dtype, coordinates and a hash of the values, read blockwise) differs from the one the job
  started on: pass ``--restart`` (or ``--overwrite``, the same for a job) to start over.

An existing store of the same job (same parameters, same input) is not overwritten: it is
resumed, and a finished one is verified and left as it is; this needs no flag.  An ``--out``
that is a symbolic link is written through (the store is created or resumed at the link's
target, and the link is kept); a broken link is refused.
* job metadata that is damaged (not JSON, wrong types): the error names the file.

A new store is built under a temporary name beside ``--out`` and renamed into place, so a
store at ``--out`` always has its metadata; NetCDF and marker files are written under a
temporary name and renamed too.

The scheduler is Dask's: ``--scheduler ADDRESS`` connects a ``distributed.Client`` to a
running cluster (dask-jobqueue, dask-kubernetes, Coiled, ``dask scheduler``),
``--workers N`` starts a ``LocalCluster`` of N worker processes with one thread each
(``NUMBA_NUM_THREADS=1`` in each; with ``--backend gpu`` one worker per GPU,
:func:`xedm.distributed.gpu_cluster`: dask-cuda's ``LocalCUDACluster`` when installed),
``--scheduler threads|processes|synchronous`` picks one of Dask's local schedulers, and
neither uses Dask's default (threads).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import warnings

import numpy as np
import xarray as xr

from ._common import CLIError, open_input, variable
from ._outputs import netcdf_safe

META = ".xedm-batch"  # the job's directory inside the store; META/JOB marks an xedm job
JOB = "job.json"
FORMAT = 2  # of the job's metadata: 2 = input fingerprint and checksummed block markers
SLICE_BYTES = 1 << 25  # the input is read for its fingerprint in slices of about 32 MiB

ZARR_FILES = {".zgroup", ".zattrs", ".zmetadata", "zarr.json"}
ARRAY_FILES = {".zarray", ".zattrs", "zarr.json"}
CHUNK_FILE = re.compile(r"^\d+(\.\d+)*$|\.partial$")  # zarr's chunks and its temporary files


# ----------------------------------------------------------------------------- tasks
def run_tasks(tasks: list, client, desc: str, progress: bool, done: int = 0,
              total: int | None = None) -> list:
    """Compute ``tasks`` (dask collections) with one progress bar over them (a line a minute
    when stderr is not a terminal: :mod:`xedm._progress`); results in order."""
    import dask

    from .. import _progress

    total = len(tasks) + done if total is None else total
    bar = _progress.bar(total=total, initial=done, desc=desc, unit="block",
                        disable=not progress, delay=0.5)
    try:
        if client is not None:
            import distributed

            futures = client.compute(tasks)
            try:
                for f in distributed.as_completed(futures):
                    f.result()  # an error in a block stops the job here
                    bar.update(1)
            except BaseException:
                client.cancel(futures)
                raise
            return [f.result() for f in futures]
        from dask.callbacks import Callback

        names = {_key_name(t) for t in tasks}

        class Tick(Callback):
            def _posttask(self, key, result, dsk, state, worker_id):
                if _key_name(key) in names:
                    bar.update(1)

        with Tick():
            return list(dask.compute(*tasks))
    finally:
        bar.close()


def _key_name(obj) -> str:
    key = obj.key if hasattr(obj, "key") else obj
    if isinstance(key, tuple):
        key = key[0]
    return str(key)


def workers(client, args) -> int:
    """How many workers the job runs on (for the block sizes)."""
    if client is not None:
        return max(1, len(client.scheduler_info().get("workers", {})))
    return args.workers or os.cpu_count() or 1


# ----------------------------------------------------------------------------- the input
@contextlib.contextmanager
def open_lazy(path: str, var: str | None, dims: dict, series_dim: str | None = None,
              stack_one: bool = True):
    """One variable of a NetCDF file or Zarr store as a dask-backed DataArray, or a CSV
    table's columns as the series along ``series_dim`` (:func:`~xedm.cli._common.variable`);
    a dim of ``dims``, ``{option: dim}``, that it lacks is a clear error; the file is closed
    on leaving."""
    with open_input(path, lazy=True) as ds:
        da = variable(ds, var, series_dim=series_dim, stack_one=stack_one)
        for opt, d in dims.items():
            if d not in da.dims:
                raise CLIError(f"{opt} {d!r} is not a dim of {da.name!r} (dims: "
                               f"{list(da.dims)})")
        yield da


def scan_input(da: xr.DataArray, tdim: str, client, progress: bool) -> dict:
    """One pass over the input, in slices of about ``SLICE_BYTES`` (one task each):
    ``fingerprint`` (variable, dims, shape, dtype, a hash of the coordinates and one of the
    values), ``any_finite`` (per series: a finite value along ``tdim``; an array over the
    other dims, 0-d when there are none) and ``all_finite``."""
    import dask

    dims = list(da.dims)
    t_axis = dims.index(tdim)
    axis = next((i for i, d in enumerate(dims) if d != tdim), t_axis)  # sliced along
    n = da.shape[axis]
    per_index = da.dtype.itemsize * (da.size // n) if n else 1
    step = max(1, SLICE_BYTES // max(1, per_index))
    tasks = []
    for a in range(0, n, step):
        key = tuple(slice(a, min(a + step, n)) if i == axis else slice(None)
                    for i in range(da.ndim))
        tasks.append(dask.delayed(_scan_slice, pure=True)(da.data[key], t_axis))
    parts = run_tasks(tasks, client, "read input", progress) if tasks else []
    values = hashlib.blake2b(digest_size=16)
    for digest, _, _ in parts:
        values.update(digest.encode())
    if axis == t_axis:  # only a time dim: one series, cut along time
        any_finite = np.asarray(any(bool(p[1]) for p in parts))
    elif parts:
        any_finite = np.concatenate([p[1] for p in parts], axis=axis - (axis > t_axis))
    else:
        any_finite = np.zeros([s for i, s in enumerate(da.shape) if i != t_axis], bool)
    coords = hashlib.blake2b(digest_size=16)
    for name in sorted(map(str, da.coords)):
        c = da.coords[name]
        coords.update(f"{name}{c.dims}".encode())
        coords.update(_digest(np.asarray(c.values)).encode())
    fingerprint = {"variable": str(da.name), "dims": [str(d) for d in dims],
                   "shape": [int(s) for s in da.shape], "dtype": str(da.dtype),
                   "coords": coords.hexdigest(), "values": values.hexdigest()}
    return {"fingerprint": fingerprint, "any_finite": any_finite,
            "all_finite": all(p[2] for p in parts)}


def _scan_slice(block, t_axis: int):
    block = np.asarray(block)
    if block.dtype.kind in "fc":
        finite = np.isfinite(block)
    else:  # integers are finite; other kinds are left to the analysis to refuse
        finite = np.ones(block.shape, bool)
    return _digest(block), finite.any(axis=t_axis), bool(finite.all())


def _digest(values: np.ndarray) -> str:
    """A hash of an array's dtype, shape and values."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{values.dtype.str}{values.shape}".encode())
    if values.dtype.kind == "O":
        h.update(repr(values.tolist()).encode())
    else:
        h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()


# ----------------------------------------------------------------------------- the store
def is_job(path: str) -> bool:
    """Whether ``path`` carries the marker of an xedm batch job (``.xedm-batch/job.json``)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, META, JOB))


def foreign_files(path: str) -> list[str]:
    """The entries of a job's store that a job does not write (zarr's metadata and chunks and
    the job's own directory are its; anything else, a link included, is not)."""
    foreign = []
    with os.scandir(path) as entries:
        for e in entries:
            if e.is_symlink():
                foreign.append(e.name)
            elif e.is_file():
                if e.name not in ZARR_FILES:
                    foreign.append(e.name)
            elif e.name == META:
                continue
            elif any(os.path.isfile(os.path.join(e.path, f)) for f in (".zarray", "zarr.json")):
                with os.scandir(e.path) as inner:
                    foreign += [f"{e.name}/{f.name}" for f in inner
                                if not f.is_file(follow_symlinks=False)
                                or not (f.name in ARRAY_FILES or CHUNK_FILE.search(f.name))]
            else:
                foreign.append(f"{e.name}/")
    return sorted(foreign)


class Job:
    """The Zarr store of one batch job, its metadata and its block markers (module doc).

    ``Job(out, spec, restart, flag)`` checks ``--out`` and the saved parameters before any
    work (``flag``: the option that asked to start over, ``--restart`` or ``--overwrite``);
    :meth:`read_input` compares the input's fingerprint with the saved one; :meth:`run`
    creates the store (or checks the one it resumes) and writes the blocks.
    """

    def __init__(self, out: str, spec: dict, restart: bool = False, flag: str = "--restart"):
        self.arg = out
        self.out = os.path.realpath(out)
        self.meta = os.path.join(self.out, META)
        self.spec = {"format": FORMAT, **json.loads(json.dumps(spec, default=_plain))}
        self.resume = self.replace = False
        self.input = self.fingerprint = None
        if not os.path.lexists(out):
            return
        if not os.path.exists(out):
            raise CLIError(f"--out {out} is a broken symbolic link (to {os.readlink(out)}); "
                           "xedm writes through a link only to an existing target: create it, "
                           "or choose another --out")
        if not is_job(self.out):
            if restart:
                raise CLIError(f"--out {out} exists and is not an xedm batch job (it has no "
                               f"{META}/{JOB}); {flag} removes only xedm batch jobs: "
                               "nothing was deleted; choose another --out")
            raise CLIError(f"--out {out} exists and is not an xedm batch job; xedm does not "
                           "overwrite it (--restart and --overwrite remove only a store an "
                           "xedm batch job wrote): choose another --out")
        if restart:
            foreign = foreign_files(self.out)
            if foreign:
                raise CLIError(f"--out {out} holds files that no xedm batch job wrote "
                               f"({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}"
                               f"); {flag} removes only a job's own store: nothing was "
                               "deleted; move them out or choose another --out")
            self.replace = True
            return
        saved = self._load(JOB)
        if not isinstance(saved, dict):
            self._damaged(JOB, f"a JSON object was expected, got {type(saved).__name__}")
        fingerprint = saved.pop("input_fingerprint", None)
        if saved.get("format") != FORMAT:
            raise CLIError(f"--out {out} was written by another version of xedm's batch jobs "
                           f"(format {saved.get('format', 1)!r}, this one writes {FORMAT}); "
                           "pass --restart (or --overwrite) to start it over, or choose another "
                           "--out")
        if saved != self.spec:
            diff = sorted(k for k in set(saved) | set(self.spec)
                          if saved.get(k) != self.spec.get(k))
            raise CLIError(f"--out {out} holds a job with other parameters ({', '.join(diff)}"
                           "); pass --restart (or --overwrite) to start it over, or choose "
                           "another --out")
        if not isinstance(fingerprint, dict):
            self._damaged(JOB, "its input_fingerprint is missing or not a JSON object")
        self.input = fingerprint
        self.resume = True

    # ------------------------------------------------------------------ metadata
    def _damaged(self, name: str, why: str):
        raise CLIError(f"the batch job's metadata {os.path.join(self.arg, META, name)} is "
                       f"damaged ({why}); pass --restart to start the job over (its saved "
                       "blocks are lost), or choose another --out")

    def _load(self, name: str):
        try:
            with open(os.path.join(self.meta, name)) as f:
                return json.load(f)
        except FileNotFoundError:
            self._damaged(name, "missing")
        except (OSError, UnicodeDecodeError) as err:
            self._damaged(name, f"cannot be read: {err}")
        except ValueError as err:
            self._damaged(name, f"not JSON: {err}")

    def saved(self, name: str, check):
        """A value saved by this job (None when the job is new); ``check(value)`` returns
        what is wrong with it (a damaged file is an error naming it), or None."""
        if not self.resume:
            return None
        value = self._load(name)
        why = check(value)
        if why:
            self._damaged(name, why)
        return value

    def read_input(self, da: xr.DataArray, tdim: str, client, progress: bool,
                   source: str) -> dict:
        """:func:`scan_input`; refuse to resume on an input other than the one the job
        started on, and an input that is all NaN."""
        scan = scan_input(da, tdim, client, progress)
        self.fingerprint = json.loads(json.dumps(scan["fingerprint"], default=_plain))
        if self.resume and self.input != self.fingerprint:
            diff = sorted(k for k in set(self.input) | set(self.fingerprint)
                          if self.input.get(k) != self.fingerprint.get(k))
            raise CLIError(f"the input changed since the job in --out {self.arg} started (its "
                           f"{', '.join(diff)} differ): its saved blocks belong to the old "
                           "input; pass --restart to start over on this input, or choose "
                           "another --out")
        if not scan["any_finite"].any():
            raise CLIError(f"{self.spec['command']}: the variable {da.name!r} of {source} is "
                           "all NaN; there is nothing to analyse")
        return scan

    # ------------------------------------------------------------------ the blocks
    def run(self, result: xr.Dataset, client, progress: bool, extras: dict | None = None,
            desc: str = "blocks", what: str = "block(s)") -> str:
        """Write every block of ``result`` that is not written and verified yet; returns what
        was done, in words (``what``: the blocks; written now, already written)."""
        import dask
        from dask.base import tokenize

        lazy = [n for n, v in result.data_vars.items() if _is_dask(v.data)]
        if any(_is_dask(c.data) for c in result.coords.values()):
            raise ValueError("Job.run: compute the coordinates first")
        # the blocks: each dim's chunks from the largest variable that has it; the smaller
        # variables (e.g. E along target) follow them
        chunks: dict = {}
        for n in sorted(lazy, key=lambda n: -result[n].ndim):
            for d, c in zip(result[n].dims, result[n].data.chunks, strict=True):
                chunks.setdefault(d, c)
        result = result.copy()
        for n in lazy:
            want = {d: chunks[d] for d in result[n].dims}
            if result[n].chunksizes != want:
                result[n] = result[n].chunk(want)
        grid = {d: c for d, c in chunks.items() if len(c) > 1}
        bounds = {d: np.concatenate([[0], np.cumsum(c)]) for d, c in grid.items()}
        blocks = list(np.ndindex(*[len(c) for c in grid.values()])) if lazy else []

        def regions(b):  # {variable: [[start, stop] per dim]} of block b
            out = {}
            for n in lazy:
                v = result[n]
                if any(i and d not in v.dims for d, i in zip(grid, b, strict=True)):
                    continue  # a variable without this dim is written by the block at 0
                where = dict(zip(grid, b, strict=True))
                out[n] = [[int(bounds[d][where[d]]), int(bounds[d][where[d] + 1])]
                          if d in grid else [0, int(s)] for d, s in zip(v.dims, v.shape,
                                                                        strict=True)]
            return out

        if self.resume:
            self._check_store(result)
        else:
            self._create(result, extras or {})
        token = tokenize(self.out, self.spec, self.fingerprint)
        done = [b for b in blocks if os.path.isfile(self._marker(b))]
        checks = [dask.delayed(_verify_block, pure=False)(
            self.out, self._marker(b), regions(b),
            dask_key_name=f"xedm-verify-{_name(b)}-{token}") for b in done]
        good = run_tasks(checks, client, "verify", progress) if checks else []
        kept = {_name(b) for b, ok in zip(done, good, strict=True) if ok}
        redone = len(done) - len(kept)
        if redone:
            warnings.warn(f"{redone} finished block(s) of {self.arg} did not verify (chunks "
                          "missing or damaged, or values changed since they were written); "
                          "computing them again", UserWarning, stacklevel=2)
        todo = [b for b in blocks if _name(b) not in kept]
        tasks = []
        for b in todo:
            parts = {}
            for n, region in regions(b).items():
                parts[n] = (region, result[n].data[tuple(slice(a, z) for a, z in region)])
            tasks.append(dask.delayed(_write_block, pure=False)(
                self.out, parts, self._marker(b),
                dask_key_name=f"xedm-block-{_name(b)}-{token}"))
        try:
            run_tasks(tasks, client, desc, progress, done=len(blocks) - len(todo),
                      total=len(blocks))
        except (ValueError, TypeError) as err:  # the analysis refused the data of a block
            raise CLIError(str(err)) from err
        return (f"{len(blocks)} {what}, {len(todo)} computed now"
                + (f" ({redone} again: written before, they did not verify)" if redone else "")
                + (f", {len(blocks) - len(todo)} already written" if len(todo) < len(blocks)
                   else ""))

    def _marker(self, block: tuple) -> str:
        return os.path.join(self.meta, "done", _name(block))

    def _create(self, result: xr.Dataset, extras: dict) -> None:
        """A new store with metadata, coordinates and in-memory variables (no dask data yet),
        built under a temporary name and renamed to ``--out``; with ``--restart`` the old
        job's store is removed once the new one is in place."""

        def build(tmp):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                netcdf_safe(result).to_zarr(tmp, mode="w-", compute=False, zarr_format=2,
                                            consolidated=True)
            self.write_meta(tmp, extras)

        self.install(build, self.replace)

    def write_meta(self, store: str, extras: dict) -> None:
        """The job's metadata in a store being built: its parameters and input fingerprint,
        ``extras`` ({file name: JSON value}) and an empty folder of block markers."""
        os.makedirs(os.path.join(store, META, "done"))
        for name, value in extras.items():
            _write_json(os.path.join(store, META, name), value)
        _write_json(os.path.join(store, META, JOB),
                    {**self.spec, "input_fingerprint": self.fingerprint})

    def install(self, build, replace: bool) -> None:
        """A store written by ``build(tmp)`` under a temporary name beside ``--out``, then
        renamed to ``--out``.  With ``replace`` the store at ``--out`` (checked again, just
        before, to be an xedm job's with nothing else in it) is moved away first, removed
        once the new one is in place, and put back if anything fails."""
        parent, base = os.path.split(self.out)
        _sweep(parent, base)
        tmp = os.path.join(parent, f".{base}.xedm-new-{os.getpid()}")
        old = os.path.join(parent, f".{base}.xedm-old-{os.getpid()}")
        moved = False
        try:
            build(tmp)
            if replace:
                if not is_job(self.out) or foreign_files(self.out):
                    raise CLIError(f"--out {self.arg} changed while the job started; nothing "
                                   "was deleted")
                os.rename(self.out, old)
                moved = True
            os.rename(tmp, self.out)
        except BaseException as err:
            shutil.rmtree(tmp, ignore_errors=True)
            if moved and not os.path.exists(self.out):
                os.rename(old, self.out)
            if isinstance(err, CLIError) or not isinstance(err, Exception):
                raise
            raise CLIError(f"cannot write {self.arg}: {err}", status=1) from err
        if moved:
            shutil.rmtree(old, ignore_errors=True)

    def _check_store(self, result: xr.Dataset) -> None:
        """Before resuming: every variable is in the store with its shape, and the store's
        coordinates and in-memory variables are the ones this run computes."""
        import zarr

        try:
            group = zarr.open_group(self.out, mode="r", use_consolidated=False)
            for name, v in result.variables.items():
                shape = tuple(group[name].shape)
                if shape != v.shape:
                    raise ValueError(f"{name} has shape {shape}, this job writes {v.shape}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with xr.open_zarr(self.out, consolidated=True) as ds:
                    for name, v in result.variables.items():
                        if not _is_dask(v.data) and not _same(ds[name].values, v.values):
                            raise ValueError(f"the values of {name} differ")
        except Exception as err:  # zarr and its codecs raise many types
            raise CLIError(f"--out {self.arg}: the store is damaged ({type(err).__name__}: "
                           f"{err}); pass --restart to start the job over, or choose another "
                           "--out") from None


def _sweep(parent: str, base: str) -> None:
    """Remove what a killed job left while creating or replacing ``base``: the temporary
    stores beside it, when they hold only a job's files."""
    pattern = re.compile(rf"^\.{re.escape(base)}\.xedm-(new|old)-\d+$")
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        if (pattern.match(name) and os.path.isdir(path) and not os.path.islink(path)
                and not foreign_files(path)):
            shutil.rmtree(path, ignore_errors=True)


def _write_block(path: str, parts: dict, marker: str) -> int:
    """One block's pieces into their Zarr chunks, then the block's marker with a checksum of
    each piece as written (atomically: a temporary file renamed)."""
    import zarr

    group = zarr.open_group(path, mode="r+", use_consolidated=False)
    sums = {}
    for name, (region, values) in parts.items():
        array = group[name]
        values = np.asarray(values).astype(array.dtype, copy=False)
        array[tuple(slice(a, z) for a, z in region)] = values
        sums[name] = {"region": region, "blake2b": _digest(values)}
    _write_json(marker, {"blake2b": sums})
    return 1


def _verify_block(path: str, marker: str, regions: dict) -> bool:
    """Whether a finished block's values, read back from the store, match its marker."""
    import zarr

    try:
        with open(marker) as f:
            sums = json.load(f)["blake2b"]
        if set(sums) != set(regions):
            return False
        group = zarr.open_group(path, mode="r", use_consolidated=False)
        for name, region in regions.items():
            if sums[name]["region"] != region:
                return False
            values = np.asarray(group[name][tuple(slice(a, z) for a, z in region)])
            if _digest(values) != sums[name]["blake2b"]:
                return False
    except Exception:  # a damaged marker or chunk (zarr's codecs raise many types): redo it
        return False
    return True


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    except TypeError:  # equal_nan on strings
        return a.shape == b.shape and bool(np.array_equal(a, b))


def _name(block: tuple) -> str:
    return "_".join(map(str, block)) or "0"


def _is_dask(data) -> bool:
    return hasattr(data, "dask")


def _plain(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def _write_json(path: str, value) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(value, f, default=_plain)
    os.replace(tmp, path)


def E_list(N: int, E_max: int, allow_none: bool = False):
    """A check for :meth:`Job.saved`: a saved E per series, N integers in 1..E_max (or null,
    with ``allow_none``)."""

    def check(value):
        if value is None and allow_none:
            return None
        if (not isinstance(value, list) or len(value) != N
                or any(type(e) is not int or not 1 <= e <= E_max for e in value)):
            return (f"a list of {N} integers in 1..{E_max}"
                    f"{' (or null)' if allow_none else ''} was expected")
        return None

    return check


def positive_ints(*keys: str):
    """A check for :meth:`Job.saved`: a JSON object with these keys, positive integers."""

    def check(value):
        if not isinstance(value, dict) or set(value) != set(keys):
            return f"an object with the keys {list(keys)} was expected, got {value!r:.80}"
        bad = [k for k in keys if type(value[k]) is not int or value[k] < 1]
        return (f"{' and '.join(bad)} must be {'an integer' if len(bad) == 1 else 'integers'}"
                f" >= 1, got {value!r:.80}" if bad else None)

    return check


@contextlib.contextmanager
def ignoring(message: str):
    """Warnings whose text starts with ``message`` (a regular expression) are not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=message)
        yield
