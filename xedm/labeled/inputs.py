"""The inputs of the xarray layer, for every public function: the data container and its
variables, dims and their names (time and series), numeric checks, lib/pred selections,
extended time labels, chunks, progress bars and the result Datasets.  The parameter rules live
in :mod:`xedm.labeled.checks`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..core.embed import LibSpec
from ..core.validate import user_stacklevel
from .progress import counter_bar, progress_bar  # noqa: F401  (imported from here too)

Data = xr.DataArray | xr.Dataset
VAR = "__xedm_variable__"  # the columns' axis while X is built


def one_time_chunk(obj, dim: str, what: str, shown: str | None = None):
    """``obj`` with one chunk along the time dim ``dim``: a dask-backed input split along time
    is rechunked, with a warning that says what that costs (every series' chunks are gathered
    into one task, a copy of the whole array through the scheduler).  In-memory data and
    data already in one time chunk come back unchanged.  ``shown``: the dim's name in the
    user's data when it was renamed inside (rqa's ``other=``)."""
    chunks = obj.chunksizes.get(dim) if obj.chunks is not None else None
    if chunks is None or len(chunks) <= 1:
        return obj
    nbytes = obj.dtype.itemsize * int(np.prod([obj.sizes[d] for d in obj.dims]))
    name = dim if shown is None else shown
    import warnings

    warnings.warn(
        f"{what}: the time dim {name!r} is split into {len(chunks)} dask chunks; it is "
        f"rechunked into one ({obj.sizes[dim]} points per series), which gathers every "
        f"series' {len(chunks)} pieces into one task and copies the whole array "
        f"({nbytes / 2**20:,.1f} MiB) through the scheduler once more: chunk along the series "
        f"dims only, e.g. data.chunk({{{name!r}: -1}}) or xr.open_dataset(path, "
        f"chunks={{{name!r}: -1}}), to avoid this",
        UserWarning, stacklevel=user_stacklevel(),
    )
    return obj.chunk({dim: -1})


def resolve_dim(obj: xr.DataArray | xr.Dataset, dim: str | None) -> str:
    """The time dimension: ``dim`` (default "time"); a 1-D DataArray uses its only dim."""
    dims = list(obj.dims)
    if dim is None:
        dim = "time"
        if dim not in dims and isinstance(obj, xr.DataArray) and obj.ndim == 1:
            return dims[0]
    if dim not in dims:
        raise ValueError(
            f"time_dim={dim!r} is not a dimension of the data (dims: {dims}); "
            "pass time_dim='<your time dimension>'"
        )
    return dim


def time_index(obj, dim: str) -> pd.Index:
    """The labels along ``dim`` (positions 0..T-1 when there is no coordinate)."""
    if dim in obj.xindexes:
        return obj.xindexes[dim].to_pandas_index()
    if dim in obj.coords:
        return pd.Index(np.asarray(obj[dim]))
    return pd.RangeIndex(obj.sizes[dim])


def check_numeric(da: xr.DataArray, name: str) -> None:
    kind = da.dtype.kind
    if kind not in "iuf":
        raise TypeError(
            f"variable {name!r} has dtype {da.dtype}; EDM needs real numbers (int or float). "
            "Convert it with .astype(float)"
        )


def _slice_positions(sl: slice, index: pd.Index, name: str) -> tuple[int, int]:
    if sl.step is not None:
        raise ValueError(f"{name}: slices must not have a step, got {sl!r}")
    try:
        pos = index.slice_indexer(sl.start, sl.stop)
    except (KeyError, TypeError) as err:
        raise ValueError(f"{name}={sl!r} does not match the time labels: {err}") from None
    start, stop, _ = pos.indices(len(index))
    asked, hint = _coverage(sl, index, name)
    if stop <= start:
        raise ValueError(f"{name}={_show(sl)} selects no time points"
                         + (f": it asks for {asked}{hint}" if hint else ""))
    if hint:
        import warnings

        warnings.warn(f"{name}={_show(sl)} asks for {asked}, so it selects the {stop - start} "
                      f"points {_show(index[start])}..{_show(index[stop - 1])}{hint}", UserWarning,
                      stacklevel=user_stacklevel())
    return start, stop - 1


def _show(v) -> str:
    if isinstance(v, slice):
        return f"slice({_show(v.start)}, {_show(v.stop)})"
    return repr(v.item() if isinstance(v, np.generic) else v)


def _coverage(sl: slice, index: pd.Index, name: str) -> tuple[str, str]:
    """Why a slice of numbers that asks mostly for labels outside the time coordinate (e.g.
    pyEDM's rows 1..500 typed as labels on a time that runs 10..59.95) is suspect, in two
    parts (what it asks for and what to do); ('', '') when it is not."""
    ends = [e for e in (sl.start, sl.stop) if e is not None]
    if (index.dtype.kind not in "iuf" or len(index) < 2 or not ends
            or not all(isinstance(e, (int, float, np.integer, np.floating))
                       and not isinstance(e, bool) for e in ends)
            or not index.is_monotonic_increasing):
        return "", ""
    lo, hi = index[0], index[-1]
    a = lo if sl.start is None else sl.start
    b = hi if sl.stop is None else sl.stop
    asked, inside = b - a, min(b, hi) - max(a, lo)
    if asked <= 0 or inside >= 0.5 * asked:
        return "", ""
    rows = ""
    if all(isinstance(e, (int, np.integer)) for e in ends) and 1 <= a <= b <= len(index):
        rows = (f"; for rows {a}..{b} (1-based, pyEDM's {name}=\"{a} {b}\") pass "
                f"{name}=slice({_show(index[int(a) - 1])}, {_show(index[int(b) - 1])})")
    return (f"the labels {_show(a)}..{_show(b)}, but the time coordinate runs "
            f"{_show(lo)}..{_show(hi)} ({len(index)} points)",
            f": {name} selects time labels, like .sel, not rows{rows}")


def _mask(spec, index: pd.Index, dim: str, name: str) -> np.ndarray:
    if isinstance(spec, xr.DataArray):
        if spec.dims != (dim,):
            raise ValueError(f"{name}: a mask DataArray must have the single dim {dim!r}")
        spec = spec.values
    arr = np.asarray(spec)
    if arr.dtype != bool:
        raise TypeError(
            f"{name} must be None, a slice of time labels, a list of slices, or a boolean mask; "
            f"got {type(spec).__name__} of dtype {arr.dtype}"
        )
    if arr.shape != (len(index),):
        raise ValueError(f"{name}: boolean mask has shape {arr.shape}, expected ({len(index)},)")
    if not arr.any():
        raise ValueError(f"{name}: the boolean mask selects no time points")
    return arr


def _segments(spec, index: pd.Index, name: str) -> np.ndarray | None:
    if isinstance(spec, slice):
        spec = [spec]
    if isinstance(spec, (list, tuple)) and spec and all(isinstance(s, slice) for s in spec):
        segs = np.array(sorted(_slice_positions(s, index, name) for s in spec), dtype=np.int64)
        if np.any(segs[1:, 0] <= segs[:-1, 1]):
            raise ValueError(f"{name}: the slices overlap; give disjoint segments")
        return segs
    if isinstance(spec, str):
        raise TypeError(
            f"{name}={spec!r}: pyEDM-style strings are not used; pass slice(first, last) of time "
            "labels (inclusive), e.g. lib=slice(1, 100)"
        )
    return None


def lib_spec(spec, index: pd.Index, dim: str) -> LibSpec:
    if spec is None:
        return LibSpec.whole(len(index))
    segs = _segments(spec, index, "lib")
    if segs is not None:
        return LibSpec(segments=segs)
    return LibSpec(mask=_mask(spec, index, dim, "lib"))


def pred_mask(spec, index: pd.Index, dim: str) -> np.ndarray:
    T = len(index)
    if spec is None:
        return np.ones(T, dtype=bool)
    segs = _segments(spec, index, "pred")
    if segs is not None:
        mask = np.zeros(T, dtype=bool)
        for a, b in segs:
            mask[a : b + 1] = True
        return mask
    return _mask(spec, index, dim, "pred")


def extended_labels(index: pd.Index, positions: np.ndarray) -> pd.Index | np.ndarray:
    """Labels for positions that may lie before 0 or past T-1 (forecasts), spaced
    ``time[1] - time[0]`` beyond the data (datetimes too).

    Labels that cannot be extrapolated that way (strings and other labels without arithmetic,
    a NaN step, a single time point) give NaN labels (NaT for datetimes) beyond the data.
    """
    T = len(index)
    positions = np.asarray(positions, dtype=np.int64)
    inside = (positions >= 0) & (positions < T)
    if inside.all():
        return index.take(positions)
    values = np.asarray(index)
    before = positions < 0
    after = positions >= T
    try:
        step = values[1] - values[0]
        if step != step:  # NaN or NaT (pd.isna costs more than a small call's whole check)
            raise TypeError("NaN step")
        out = np.empty(len(positions), dtype=values.dtype)
        out[before] = values[0] + step * positions[before]
        out[after] = values[-1] + step * (positions[after] - (T - 1))
    except (TypeError, ValueError, IndexError):
        # no arithmetic on these labels: missing labels for the forecasts past the data
        kind = values.dtype.kind
        out = np.empty(len(positions), dtype=values.dtype if kind in "fmM" else object)
        out[~inside] = {"M": np.datetime64("NaT"), "m": np.timedelta64("NaT")}.get(kind, np.nan)
    out[inside] = values[positions[inside]]
    return out


def describe(spec) -> str:
    """A short, attrs-safe description of a lib/pred selection."""
    if spec is None:
        return "all"
    if isinstance(spec, slice):
        return f"slice({spec.start!r}, {spec.stop!r})"
    if isinstance(spec, (list, tuple)) and all(isinstance(s, slice) for s in spec):
        return "[" + ", ".join(describe(s) for s in spec) + "]"
    return f"mask ({int(np.asarray(getattr(spec, 'values', spec)).sum())} points)"


class _Fallback(Exception):
    """The fast Dataset construction does not cover this case."""


def _direct_dataset(data_vars: dict, coords: dict, attrs: dict) -> xr.Dataset:
    if any(name in coords for name in data_vars):
        raise _Fallback
    variables: dict = {}
    dims: dict = {}

    def add(name, var):
        for d, s in zip(var.dims, var.shape, strict=True):
            if dims.setdefault(d, s) != s:
                raise _Fallback
        variables[name] = var

    for name, (vdims, data) in data_vars.items():
        if not isinstance(data, np.ndarray | np.generic | float | int):
            raise _Fallback  # dask and other duck arrays: xarray's own checks
        data = np.asarray(data)
        if data.dtype.kind not in "biuf":
            raise _Fallback  # strings, datetimes, objects: xarray's own conversions
        add(name, xr.Variable(vdims, data, fastpath=True))
    indexes: dict = {}
    for name, c in coords.items():
        if isinstance(c, list | tuple):  # e.g. S-map's coefficient names (as xarray reads it)
            c = np.asarray(c)
        if not isinstance(c, xr.Variable | np.ndarray | pd.Index):
            raise _Fallback
        if isinstance(c, xr.Variable) and c.dims != (name,):
            add(name, c)  # a non-index coordinate
            continue
        dtype = None  # the coordinate keeps a NumPy array's dtype (e.g. <U6, not object)
        if isinstance(c, xr.Variable):
            var, labels, dtype = c, c.to_index(), c.dtype
        else:
            labels = c if isinstance(c, pd.Index) else pd.Index(np.asarray(c))
            dtype = None if isinstance(c, pd.Index) else np.asarray(c).dtype
            var = None
        if labels.ndim != 1 or isinstance(labels, pd.MultiIndex):
            raise _Fallback
        index = xr.indexes.PandasIndex(labels, name, coord_dtype=dtype)
        for vname, v in index.create_variables(None if var is None else {name: var}).items():
            add(vname, v)
        indexes[name] = index
    return xr.Dataset._construct_direct(variables, set(coords), dims, dict(attrs), indexes)


def build_dataset(data_vars: dict, coords: dict, attrs: dict) -> xr.Dataset:
    """``xr.Dataset(data_vars, coords=coords, attrs=attrs)`` for the simple results of this
    package, built without the general constructor's merge and alignment machinery (which
    costs more than the whole computation for a 1,000-point series).

    ``data_vars`` maps names to (dims, numpy array); ``coords`` maps names to a 1-D array or
    ``pandas.Index`` (a dimension coordinate) or an ``xarray.Variable``.  Anything unusual
    (dask data, multi-indexes, inconsistent sizes) goes through the public constructor; the
    two are checked to give identical Datasets in the tests.
    """
    if hasattr(xr.Dataset, "_construct_direct"):
        try:
            return _direct_dataset(data_vars, coords, attrs)
        except (_Fallback, TypeError, ValueError):
            pass
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


def variable_names(arg, name: str) -> list[str]:
    """The variable name(s) a user passed as ``name`` (e.g. columns=): one str or a list of
    distinct str; None gives [].  Anything else (an int, an empty list, non-str items) is a
    TypeError, repeated names a ValueError, each naming the parameter."""
    if arg is None:
        return []
    if isinstance(arg, str):
        names = [arg]
    else:
        try:
            names = list(arg)
        except TypeError:
            names = None
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{name} must be a variable name or a list of names, got {arg!r}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{name}={arg!r} names {repeated} more than once; give each variable "
                         "once")
    return names



def _time_column(df: pd.DataFrame, time_dim: str | None):
    """(the time labels, the column they came from or None) of a DataFrame; see
    :func:`from_dataframe`."""
    cols = [str(c) for c in df.columns]
    if time_dim is not None:
        if time_dim in cols:
            return df.iloc[:, cols.index(time_dim)], time_dim
        if df.index.name == time_dim:
            return df.index, None
        raise ValueError(f"time_dim={time_dim!r} is neither a column nor the index of the "
                         f"DataFrame (columns: {cols}); pass the name of its time column")
    for name in ("time", "Time"):
        if name in cols:
            return df.iloc[:, cols.index(name)], name
    if not isinstance(df.index, pd.RangeIndex):
        return df.index, None  # a pandas time index (dates, a named index)
    first = df.iloc[:, 0] if cols else None
    if (first is not None and first.dtype.kind in "iufM" and len(first) > 1
            and first.is_monotonic_increasing and first.is_unique and first.notna().all()):
        return first, cols[0]  # pyEDM's convention: the first column is time
    return df.index, None  # no time column: positions 0..T-1


def _unique_times(labels: pd.Index, where: str) -> None:
    """Refuse repeated time labels of a DataFrame or Series: lib= and pred= select by label,
    and a repeat usually means several series stacked in one column (a long table)."""
    if labels.is_unique:
        return
    rep = labels[labels.duplicated()].unique()
    shown = ", ".join(map(str, rep[:3].tolist())) + (", ..." if len(rep) > 3 else "")
    raise ValueError(
        f"data: {where} repeats time labels ({shown}: {len(labels) - len(labels.unique())} of "
        f"{len(labels)} rows); each time must appear once. Several series stacked in one "
        "column? Pivot them to one column per series (df.pivot(index='time', columns='site', "
        "values='x')); repeated rows? drop them (df.drop_duplicates('time')); or pass "
        "time_dim= naming the right time column"
    )


def from_dataframe(df: pd.DataFrame, time_dim: str | None = None) -> xr.Dataset:
    """A pandas DataFrame as a Dataset: one variable per column along the time dim.

    The time labels are the column ``time_dim`` (or the index of that name) when given; else
    a column called "time" or "Time"; else the index when it is not the default 0..n-1; else
    the first column when it is increasing numbers or dates (pyEDM's convention, e.g. "year"
    of pyEDM's sardine_anchovy_sst); else the positions 0..n-1.  The time dim is named
    ``time_dim`` (default "time"); column names become strings.  Repeated time labels are
    refused (a ValueError: lib and pred select by label).

    >>> df = pd.DataFrame({"Time": [1, 2, 3], "x": [0.1, 0.5, 0.2]})
    >>> ds = from_dataframe(df)
    >>> list(ds.data_vars), ds.time.values.tolist()
    (['x'], [1, 2, 3])
    """
    if isinstance(df.columns, pd.MultiIndex):
        raise TypeError("the DataFrame has MultiIndex columns; flatten them first, e.g. "
                        "df.columns = ['_'.join(map(str, c)) for c in df.columns]")
    cols = [str(c) for c in df.columns]
    repeated = sorted({c for c in cols if cols.count(c) > 1})
    if repeated:
        raise ValueError(f"the DataFrame has the columns {repeated} more than once; rename them")
    labels, used = _time_column(df, time_dim)
    _unique_times(pd.Index(labels), "its time column " + repr(used) if used else "its index")
    dim = time_dim or "time"
    variables = {c: (dim, df.iloc[:, i].to_numpy()) for i, c in enumerate(cols) if c != used}
    return xr.Dataset(variables, coords={dim: np.asarray(labels)})


def as_xarray(data, dim: str | None):
    """DataArrays and Datasets as they are; numpy arrays, lists and pandas Series as a DataArray;
    pandas DataFrames as a Dataset (:func:`from_dataframe`, its time column by name ``dim``).

    An array's time axis is its last one, named ``dim`` (default "time"); other axes are
    ``dim_0, dim_1, ...`` as xarray names them (so ``dim="dim_0"`` still picks the first).
    """
    if isinstance(data, (xr.DataArray, xr.Dataset)):
        return data
    if isinstance(data, pd.Series):
        _unique_times(data.index, "the Series' index")
        return xr.DataArray(data)
    if isinstance(data, pd.DataFrame):
        return from_dataframe(data, dim)
    if isinstance(data, (np.ndarray, list, tuple)):
        try:
            arr = np.asarray(data)
        except ValueError as err:
            raise TypeError(f"data could not be read as a rectangular array: {err}") from None
        if arr.ndim == 0:
            raise ValueError("data is a single number; pass a series (time on the last axis)")
        dims = [f"dim_{i}" for i in range(arr.ndim)]
        if dim is None or dim not in dims:
            dims[-1] = dim or "time"
        return xr.DataArray(arr, dims=dims)
    raise TypeError(
        "data must be an xarray DataArray or Dataset (or a numpy array, list, pandas Series or "
        "DataFrame), "
        f"got {type(data).__name__}"
    )



def select(data: Data, columns, target, dim: str | None):
    """(X with dims (..., VAR, dim), y with dims (..., dim), column names, target name, dim).

    A single series already in (..., dim) layout comes back as X itself (no VAR dim):
    :func:`_apply` treats it as one column.  A target with dims the columns lack broadcasts
    the columns (one result per target series).
    """
    data = as_xarray(data, dim)
    if isinstance(data, xr.DataArray):
        if columns is not None or target is not None:
            raise TypeError(
                "columns= and target= choose variables of a Dataset; for a DataArray leave them "
                "out, or make a Dataset first (e.g. da.to_dataset(dim=...))"
            )
        name = str(data.name) if data.name is not None else "x"
        dim = resolve_dim(data, dim)
        check_numeric(data, name)
        if data.dims[-1] == dim:
            # the common layout: X is the series itself, _apply adds the (single) column
            # axis; xarray's expand_dims/transpose cost more than a whole small call
            return data, data, [name], name, dim
        X = data.expand_dims({VAR: 1}).transpose(..., VAR, dim)
        return X, data, [name], name, dim
    cols = variable_names(columns, "columns")
    if not cols:
        raise ValueError(
            f"columns= is required on a Dataset: choose from {sorted(map(str, data.data_vars))}"
        )
    tgt = variable_names(target, "target") or cols[:1]
    if len(tgt) != 1:
        raise TypeError(f"target must be one variable name, got {target!r}")
    for n in cols + tgt:
        if n not in data.data_vars:
            raise ValueError(
                f"unknown variable {n!r}; the Dataset has {sorted(map(str, data.data_vars))}"
            )
        check_numeric(data[n], n)
    dim = resolve_dim(data, dim)
    for n in cols + tgt:
        if dim not in data[n].dims:
            raise ValueError(f"variable {n!r} has no dim {dim!r} (dims: {data[n].dims})")
    X = xr.concat([data[n].drop_vars(VAR, errors="ignore") for n in cols], dim=VAR,
                  coords="minimal", compat="override", join="outer")
    y = data[tgt[0]]
    if not set(y.dims) <= set(X.dims):
        X = X.broadcast_like(y)  # the target's extra dims: one result per target series
    X = X.transpose(..., VAR, dim)
    y = y.broadcast_like(X.isel({VAR: 0}, drop=True))
    return X, y, cols, tgt[0], dim



def _coord_names(obj):
    c = getattr(obj, "_coords", None)  # DataArray's own dict: .coords builds a view (~2 us)
    return obj.coords if c is None else c



def check_names(func: str, X, y, reserved: frozenset) -> None:
    """Dims and coords of the data must not take names the result gives its own variables."""
    if (reserved.isdisjoint(X.dims) and reserved.isdisjoint(_coord_names(X))
            and (y is X or reserved.isdisjoint(_coord_names(y)))):
        return
    names = set(X.dims).union(X.coords, y.coords)
    name = sorted(map(str, names.intersection(reserved)))[0]
    raise ValueError(
        f"{func}: the data has a dim or coordinate named {name!r}, a name the result uses "
        f"itself; rename it first, e.g. data.rename({{{name!r}: {name + '_'!r}}})"
    )



def is_lazy(X, y) -> bool:
    return not (isinstance(X.data, np.ndarray) and isinstance(y.data, np.ndarray))



SERIES_DIM = "__xedm_series__"



def series_dim_of(data: xr.DataArray, series_dim: str | None, tdim: str) -> str:
    """The series dim of a DataArray: ``series_dim``, else "series", else the only dim besides
    the time dim ``tdim``."""
    others = [d for d in data.dims if d != tdim]
    if series_dim is None:
        if "series" in others or len(others) == 1:
            return "series" if "series" in others else others[0]
        raise ValueError(
            f"series_dim is required: the DataArray has dims {list(data.dims)} besides "
            f"the time dim {tdim!r}; pass series_dim='<the dim that indexes the series>'"
        )
    if series_dim not in others:
        raise ValueError(
            f"series_dim={series_dim!r} must name the series dimension of the DataArray (dims: "
            f"{list(data.dims)}; time is {tdim!r}), e.g. series_dim={(others or ['neuron'])[0]!r}"
        )
    return series_dim


def cross_series(data, series_dim: str | None, columns, time_dim: str | None,
                 reserved: tuple[str, ...]):
    """(X with dims (..., SERIES_DIM, time) in float64, series labels, series dim name, time dim).

    Refuses what the cross maps cannot label or compute: an empty or duplicated set of series,
    dims named like the result's dims (``reserved``), non-numeric data.  Integer, float16 and
    float32 data are cast to float64 (a copy: the input is never modified).
    """
    data = as_xarray(data, time_dim)
    if isinstance(data, xr.Dataset):
        if series_dim is not None:
            hint = (f"; {series_dim!r} is a dim of the data: if it is the time dim, pass "
                    f"time_dim={series_dim!r}" if series_dim in data.dims else "")
            raise ValueError(
                f"series_dim={series_dim!r} names the series dim of a DataArray; the series of a "
                f"Dataset are its variables, chosen by columns={hint}"
            )
        if columns is None:
            raise ValueError(
                f"columns= is required on a Dataset: choose from {sorted(map(str, data.data_vars))}"
            )
        names = variable_names(columns, "columns")  # one name or a list of distinct names
        for n in names:
            if n not in data.data_vars:
                raise ValueError(
                    f"unknown variable {n!r}; the Dataset has {sorted(map(str, data.data_vars))}"
                )
            check_numeric(data[n], n)
        if len(names) < 2:
            raise ValueError("cross mapping needs at least two variables in columns=")
        tdim = resolve_dim(data, time_dim)
        for n in names:
            if tdim not in data[n].dims:
                raise ValueError(
                    f"variable {n!r} has no dim {tdim!r} (dims: {data[n].dims}); pass "
                    "time_dim='<your time dimension>'"
                )
        X = xr.concat([data[n] for n in names], dim=SERIES_DIM, coords="minimal", compat="override",
                      join="outer")
        X, labels, sdim = X.transpose(..., SERIES_DIM, tdim), names, "variable"
    else:
        if columns is not None:
            raise TypeError("columns= chooses Dataset variables; on a DataArray pass "
                            "series_dim=")
        check_numeric(data, "data" if data.name is None else str(data.name))
        tdim = resolve_dim(data, time_dim)
        dim = series_dim_of(data, series_dim, tdim)
        if data.sizes[dim] == 0:
            raise ValueError(f"series_dim={dim!r} has no series (size 0); cross mapping needs "
                             "series")
        if dim in data.coords:
            labels = list(np.asarray(data[dim]))
            repeated = pd.Index(labels)
            repeated = sorted(map(str, repeated[repeated.duplicated()].unique()))
            if repeated:
                raise ValueError(
                    f"the labels along series_dim={dim!r} repeat {repeated}: rho would be "
                    f"ambiguous; give each series its own label, e.g. "
                    f"data.assign_coords({dim}=range(n))"
                )
        else:
            labels = list(range(data.sizes[dim]))
        X, sdim = data.rename({dim: SERIES_DIM}).transpose(..., SERIES_DIM, tdim), dim
    if X.sizes[tdim] == 0:
        raise ValueError(f"the time dim {tdim!r} is empty: there is nothing to cross-map")
    for d in (tdim, *X.dims[:-2]):
        if d in reserved:
            raise ValueError(
                f"the data have a dim named {d!r}, which is a dim of the result "
                f"({', '.join(reserved)}); rename it first, e.g. data.rename({d}='{d}_')"
            )
    if X.dtype != np.float64:
        X = X.astype(np.float64)  # float16/float32/int: the kernels compute in float64
    return X, labels, sdim, tdim

