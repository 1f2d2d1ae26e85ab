"""The arguments and DataFrames of :mod:`xedm.compat.pyedm`: pyEDM's data, row ranges,
names and refusals, and its Projection frame."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.embed import library_selection
from ...core.validate import check_bool, check_int
from ...labeled.inputs import extended_labels, from_dataframe, lib_spec

#: pyEDM's default exclusion radii of PredictExclusionRadius
RADII = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30)


class _Data:
    """A pyEDM call's data: the Dataset (time dim ``tdim``), its time labels and columns."""

    def __init__(self, dataFrame, columns, target, noTime: bool):
        if not isinstance(dataFrame, pd.DataFrame):
            raise TypeError(f"dataFrame must be a pandas DataFrame, got "
                            f"{type(dataFrame).__name__}")
        df = dataFrame.copy(deep=False)
        df.columns = [str(c) for c in df.columns]
        if check_bool("noTime", noTime):  # pyEDM numbers the rows 1..N as time
            df.insert(0, "__time__", np.arange(1, len(df) + 1))
        elif df.shape[1] and not df.iloc[:, 0].is_unique:
            raise ValueError(f"dataFrame: its first column {df.columns[0]!r} (pyEDM's time) "
                             "repeats values, and xedm selects lib and pred rows by time; "
                             "make the times unique, or pass noTime=True (rows 1..N as time)")
        self.tdim = str(df.columns[0])  # pyEDM: the first column is time
        self.ds = from_dataframe(df, self.tdim)
        self.index = pd.Index(self.ds[self.tdim].values)
        self.cols = _names(columns, df.columns, "columns")
        self.target = _target(target, df.columns, self.cols)
        if not self.cols:
            raise ValueError("columns is required, e.g. columns='x' or columns=['x', 'y']")

    def rows(self, spec, name: str, one: bool = False):
        """pyEDM's 1-based inclusive row pairs as slices of time labels (:func:`row_slices`);
        None for all rows."""
        return _row_slices(self.index, spec, name, one)

    def lib(self, lib, validLib):
        sel = self.rows(lib, "lib")
        if validLib is None or len(validLib) == 0:
            return sel
        valid = np.asarray(validLib, dtype=bool)
        if valid.shape != (len(self.index),):
            raise ValueError(f"validLib must have one boolean per row ({len(self.index)}), got "
                             f"shape {valid.shape}")
        mask = np.zeros(len(self.index), bool)
        for s in [sel] if isinstance(sel, slice) else sel or [slice(None, None)]:
            mask[self.index.slice_indexer(s.start, s.stop)] = True
        return mask & valid


def _scalar(v):
    """numpy's int and float labels as Python's (slices print plainly); others as they are."""
    return v.item() if isinstance(v, np.integer | np.floating) else v


def _row_slices(index: pd.Index, spec, name: str, one: bool = False):
    if spec is None:  # pyEDM: a TypeError deep inside
        raise TypeError(f"{name}=None: give pyEDM's 1-based row pairs, e.g. {name}='1 100', "
                        f"or {name}='' for every row")
    if (not isinstance(spec, str) and len(spec) == 0) or spec == "":
        return None
    vals = spec.split() if isinstance(spec, str) else list(spec)
    try:
        rows = [check_int(name, int(v) if isinstance(v, str) else v, 1) for v in vals]
    except (ValueError, TypeError):
        raise ValueError(f"{name}={spec!r}: give pairs of 1-based row numbers, e.g. "
                         f"{name}='1 100'") from None
    N = len(index)
    if len(rows) % 2 or (one and len(rows) != 2):
        raise ValueError(f"{name}={spec!r}: give {'one pair' if one else 'pairs'} of "
                         f"row numbers (first last), e.g. {name}='1 100'")
    out = []
    for a, b in zip(rows[::2], rows[1::2], strict=True):
        if not a <= b <= N:
            raise ValueError(f"{name}={spec!r}: rows {a}..{b} are not within 1..{N} "
                             "(first <= last)")
        out.append(slice(_scalar(index[a - 1]), _scalar(index[b - 1])))
    return out[0] if len(out) == 1 else out


def row_slices(data, rows):
    """pyEDM's 1-based, inclusive row ranges (``lib="1 100"``, ``pred=[201, 500]``, several
    pairs ``"1 100 201 300"``) as xedm's ``lib=``/``pred=`` label slices.

    Parameters
    ----------
    data : pandas.DataFrame, xarray.DataArray or xarray.Dataset, or 1-D array of times
        A DataFrame in pyEDM's layout (time in its first column), an xarray object (its
        ``time`` coordinate, else its only or first dim), or the time labels themselves.
    rows : str or sequence of int
        Pairs ``first last`` of 1-based row numbers, as pyEDM's ``lib``/``pred``.

    Returns
    -------
    slice or list of slice
        ``slice(time[first - 1], time[last - 1])`` per pair (one pair: a slice).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"Time": [10.0, 10.5, 11.0, 11.5], "x": [1, 2, 3, 4]})
    >>> row_slices(df, "1 2")
    slice(10.0, 10.5, None)
    >>> row_slices(df, [1, 2, 4, 4])
    [slice(10.0, 10.5, None), slice(11.5, 11.5, None)]
    """
    if isinstance(data, pd.DataFrame):
        if data.shape[1] == 0:
            raise ValueError("data: the DataFrame has no columns (pyEDM's time is the first)")
        times = data.iloc[:, 0].to_numpy()
    elif hasattr(data, "dims") and hasattr(data, "coords"):  # xarray
        dim = "time" if "time" in data.dims else next(iter(data.dims), None)
        if dim is None:
            raise ValueError("data: a 0-d xarray object has no time dim")
        times = data[dim].values
    else:
        times = np.asarray(data)
        if times.ndim != 1:
            raise ValueError(f"data: time labels must be 1-D, got shape {times.shape}")
    if rows is None or (isinstance(rows, str) and not rows.strip()):
        raise ValueError("rows is required, e.g. rows='1 100'")
    if not isinstance(rows, str | list | tuple | np.ndarray | range):
        raise TypeError(f"rows must be a string such as '1 100' or a sequence of ints, got "
                        f"{type(rows).__name__}")
    return _row_slices(pd.Index(times), rows, "rows")


def _names(arg, available, name: str) -> list[str]:
    if isinstance(arg, str):
        names = [arg] if arg in available else arg.split()
    else:
        names = [str(a) for a in arg]
    missing = [n for n in names if n not in available]
    if missing:
        raise ValueError(f"{name}: {missing} not in the DataFrame (columns: {list(available)})")
    return names


def _target(target, available, cols) -> str:
    """pyEDM's one target column (default: the first of ``cols``); several names are refused
    (pyEDM 2.5.7 silently uses the first)."""
    names = _names(target, available, "target") if len(target) else cols[:1]
    if len(names) > 1:
        raise ValueError(f"target={target!r} names {len(names)} columns {names}; pyEDM's target "
                         f"is one column (pyEDM 2.5.7 silently uses the first), e.g. "
                         f"target={names[0]!r}")
    return names[0]


def _tau(tau) -> int:
    tau = check_int("tau", tau)
    if tau >= 0:
        raise ValueError(f"tau={tau}: pyEDM's tau > 0 embeds future values, which xedm does not "
                         "(xedm's tau=k is pyEDM's tau=-k); use tau < 0")
    return -tau


def _refuse(**given) -> None:
    """Arguments with no xedm counterpart, refused when not at pyEDM's default."""
    why = {
        "returnObject": "xedm has no pyEDM class instances; call xedm's function instead",
        "ignoreNan": "xedm always leaves states with NaN out (docs/from-pyedm.md)",
        "legacy": "xedm has one CCM",
        "embedded": "embedded columns are not a cross map (use xedm.ccm on the series)",
        "excludeTarget": "pyEDM 2.5.7's Multiview ignores it (its views keep the target's "
                         "lags); xedm.multiview(..., exclude_target=True) leaves them out",
    }
    for k, v in given.items():
        if v:
            raise ValueError(f"{k}={v!r} is not supported by xedm.compat.pyedm: {why[k]}")


def _E(E, embedded: bool, cols) -> int | None:
    if embedded:
        return None if not E else E
    if not E:
        raise ValueError("E is required (E >= 1), e.g. E=3")
    return E


def _smap_knn(d: _Data, lib, E: int | None, tau: int, Tp: int, embedded: bool) -> int:
    """pyEDM's default S-map knn: its library rows (after leaving out those with NaN) - 1."""
    return max(int(np.count_nonzero(_smap_rows(d, lib, E, tau, Tp, embedded))) - 1, 1)


def _smap_rows(d: _Data, lib, E: int | None, tau: int, Tp: int, embedded: bool,
               target: bool = False) -> np.ndarray:
    """(T,) the library rows whose states are complete (``target``: and whose target at
    t + Tp is finite, xedm's library points)."""
    T = len(d.index)
    E_ = len(d.cols) if embedded else E
    sel = library_selection(T, lib_spec(lib, d.index, d.tdim), E_, tau, Tp, embedded)
    ok = np.ones(T, bool)
    for c in d.cols:
        fin = np.isfinite(d.ds[c].values.astype(float))
        for k in range(1 if embedded else E_):
            ok[k * tau:] &= fin[: T - k * tau]
            ok[: k * tau] = False
    if target:
        y = d.ds[d.target].values.astype(float)
        t = np.arange(T) + Tp
        inside = (t >= 0) & (t < T)
        ok &= inside & np.isfinite(y[np.clip(t, 0, T - 1)])
    return sel & ok


def _projection(d: _Data, res, Tp: int) -> pd.DataFrame:
    """pyEDM's Projection of a simplex or S-map result (see :func:`_frame`)."""
    labels = res[d.tdim].values  # xedm's target times: one contiguous run of positions
    inside = np.flatnonzero(np.isin(labels, d.index.values))
    if len(inside):
        j = int(inside[0])
        pos = d.index.get_loc(labels[j]) - j + np.arange(len(labels))
    else:  # every target past the data's end (or before its start): the extended labels
        T, m = len(d.index), abs(Tp) + len(labels)
        ext = np.asarray(extended_labels(d.index, np.arange(-m, T + m)))
        j = int(np.flatnonzero(ext == labels[0])[0]) - m
        pos = j + np.arange(len(labels))
    var = res.pred_variance.values if "pred_variance" in res else None  # S-map has none
    return _frame(d, pos, res.prediction.values, var, Tp)


def _frame(d: _Data, pos: np.ndarray, prediction, variance, Tp: int,
           variance_column: bool = True) -> pd.DataFrame:
    """pyEDM's Projection: rows from the first prediction point to the last target (Tp > 0;
    from the first target to the last prediction point for Tp < 0), predictions at the
    target positions ``pos`` (contiguous), observations of the target.  Times past the data
    continue the time step (floats for integer times, as pyEDM's)."""
    T = len(d.index)
    lo, hi = min(pos[0] - Tp, pos[0]), max(pos[-1] - Tp, pos[-1])
    rows = np.arange(lo, hi + 1)
    y = d.ds[d.target].values.astype(float)
    obs = np.full(len(rows), np.nan)
    inside = (rows >= 0) & (rows < T)
    obs[inside] = y[rows[inside]]
    pred, var = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    pred[pos - lo] = prediction
    if variance is not None:
        var[pos - lo] = variance
    time = extended_labels(d.index, rows)
    if not inside.all() and np.asarray(time).dtype.kind in "iu":
        time = np.asarray(time, dtype=float)
    out = {"Time": time, "Observations": obs, "Predictions": pred}
    return pd.DataFrame({**out, "Pred_Variance": var} if variance_column else out)


def _plot(df: pd.DataFrame, x: str, title: str, xlabel: str, ylabel: str) -> None:
    import matplotlib.pyplot as plt

    ax = df.plot(x, [c for c in df.columns if c != x], title=title, linewidth=3)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    plt.show()


