"""The xarray layer of recurrence quantification: :func:`rqa` and :func:`recurrence_plot`.

Three kinds of recurrence, chosen by the arguments:

* **self** (``rqa(x)``): ``R[i, j] = d(x_i, x_j) < eps``, symmetric, Theiler window applies;
* **cross** (``rqa(x, other=y)``): ``d(x_i, y_j) < eps``, the lengths may differ, no line of
  identity and no Theiler window; as in pyrqa, vertical lines run along y: a vertical line
  is a run of consecutive states of y all close to one state of x (``recurrence_plot``
  shows ``R[x_i, y_j]`` over ``(time, time_)``, so these are runs along ``time_``);
* **joint** (``rqa(x, joint=y)``): ``R = R^x AND R^y``, x and y of the same length (and the
  same time labels), each with its own distance and its own threshold: ``eps`` or
  ``recurrence_rate`` for x, ``joint_eps`` or ``joint_recurrence_rate`` for y (pyunicorn's
  ``JointRecurrencePlot(threshold=(eps_x, eps_y))``).  Without either, y follows x: the same
  ``eps``, or, with ``recurrence_rate``, its own eps reaching that rate alone (as pyunicorn
  does); symmetric, Theiler window applies.

On a Dataset, ``columns`` (the first positional argument) names the variable(s) and
``other``/``joint`` name variables too: ``ds.edm.rqa("x", other="y")``.  Several names in
``columns`` make one multivariate state (each variable contributes E lags); ``other`` and
``joint`` then take as many names.  On a DataArray, ``other``/``joint`` are DataArrays.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.validate import check_bool
from ..memory import check_memory, check_work
from ..recurrence.measures import MEASURES, rqa_measures
from ..recurrence.recurrence import (
    NORMS,
    RecurrenceProblem,
    embedding_coords,
    eps_in_unit,
    line_histograms,
    thresholds,
    unit_scale,
)
from ..recurrence.threshold import eps_for_recurrence_rate
from .checks import as_xarray, variable_names
from .common import check_numeric, counter_bar, one_time_chunk, resolve_dim, time_index

_VAR = "_rqa_variable"
_HIST = {"diagonal": "diagonal_lines", "vertical": "vertical_lines",
         "white": "white_vertical_lines"}
_DOC_MEASURES = {
    "RR": "recurrence rate", "DET": "determinism", "L": "mean diagonal line length",
    "L_max": "longest diagonal line", "DIV": "divergence (1 / L_max)",
    "ENTR": "Shannon entropy of diagonal line lengths", "LAM": "laminarity",
    "TT": "trapping time", "V_max": "longest vertical line",
    "V_ENTR": "Shannon entropy of vertical line lengths",
    "W": "mean white vertical line length", "W_max": "longest white vertical line",
    "W_ENTR": "Shannon entropy of white vertical line lengths",
}


# ----------------------------------------------------------------------------- inputs
def _resolve_dim(data, dim, what):
    """resolve_dim, with a message naming the partner (other=, joint=) when it lacks ``dim``."""
    try:
        return resolve_dim(data, dim)
    except ValueError:
        if what == "data":
            raise
        raise ValueError(f"{what}=: the series has no dim {dim!r}, the data's time dim (its "
                         f"dims: {list(data.dims)}); rename its time dim to {dim!r} first, "
                         f"e.g. {what}=y.rename({{'<its time dim>': {dim!r}}})") from None


def _stack(data, names, dim, what):
    """DataArray (..., _VAR, dim) of the chosen variables."""
    if isinstance(data, np.ndarray):
        data = as_xarray(data, dim)  # time on the last axis, as in the EDM functions
    if isinstance(data, xr.DataArray):
        if names is not None:
            raise TypeError(f"{what}: variable names choose variables of a Dataset; "
                            "with a DataArray pass DataArrays")
        dim = _resolve_dim(data, dim, what)
        check_numeric(data, str(data.name or what))
        return data.expand_dims({_VAR: 1}, axis=-1).transpose(..., _VAR, dim), dim
    if not isinstance(data, xr.Dataset):
        raise TypeError(f"{what} must be an xarray DataArray or Dataset, got {type(data).__name__}")
    if names is None:
        raise ValueError(f"{what}: name the variable(s), e.g. ds.edm.rqa('x'); the Dataset has "
                         f"{sorted(map(str, data.data_vars))}")
    names = variable_names(names, "columns" if what == "data" else what)
    for n in names:
        if n not in data.data_vars:
            raise ValueError(f"{what}: unknown variable {n!r}; the Dataset has "
                             f"{sorted(map(str, data.data_vars))}")
        check_numeric(data[n], n)
    dim = resolve_dim(data, dim)
    for n in names:  # the Dataset has dim, but each chosen variable needs it
        if dim not in data[n].dims:
            raise ValueError(f"dim={dim!r}: variable {n!r} has no dim {dim!r} (its dims: "
                             f"{list(data[n].dims)}); pass dim='<the time dimension of {n}>'")
    X = xr.concat([data[n] for n in names], dim=_VAR, coords="minimal", compat="override",
                  join="outer")
    return X.transpose(..., _VAR, dim), dim


def _partner(data, arg, ncols, dim, what):
    """The other= / joint= series as (..., _VAR, dim): as many variables as the data (columns=),
    since cross distances and the joint matrix pair the state coordinates one to one."""
    if arg is None:
        return None
    series = isinstance(arg, (xr.DataArray, xr.Dataset)) or (
        isinstance(arg, np.ndarray) and arg.dtype.kind not in "OUS")  # values, not names
    if isinstance(data, xr.Dataset) and not series:
        names = variable_names(arg, what)
        if len(names) != ncols:
            raise ValueError(f"{what}= names {len(names)} variable(s); columns has {ncols}: "
                             f"give {what}= as many variables as columns=")
        return _stack(data, names, dim, what)[0]
    Y, _ = _stack(arg, None, dim, what)
    if ncols != 1:
        raise ValueError(f"{what}= is one series, but columns= names {ncols} variables (one "
                         f"multivariate state), and {what}= needs as many: pass {what}= as a "
                         f"list of {ncols} variable names of the Dataset")
    return Y


def _check_int(value, name, lo):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}={value!r} is invalid; it must be an integer >= {lo}")
    if value < lo:
        raise ValueError(f"{name}={value!r} is invalid; it must be an integer >= {lo}")
    return int(value)


class _Thresholds:
    """One channel's threshold request: a parameter (``eps``, ``recurrence_rate``,
    ``joint_eps`` or ``joint_recurrence_rate``), its values and whether it is a list (then it
    gives a dim of that name)."""

    def __init__(self, name, value):
        self.name = name
        self.is_rate = name.endswith("recurrence_rate")
        self.values, self.is_list = _sweep(value, name)
        v = self.values
        if self.is_rate:
            if not np.all((v > 0) & (v < 1)):
                raise ValueError(f"{name}={value!r} is invalid; a recurrence rate must lie in "
                                 "(0, 1) (for a matrix where every pair recurs, give an eps "
                                 "larger than the largest distance instead)")
        elif not np.all(np.isfinite(v) & (v > 0)):
            raise ValueError(f"{name}={value!r} is invalid; every eps must be finite and > 0")
        if np.unique(v).size != v.size:
            repeated = sorted({float(a) for a in v if np.count_nonzero(v == a) > 1})
            raise ValueError(f"{name}={value!r} repeats {repeated}; each value labels one "
                             f"point of the {name!r} dim: give each value once")

    @property
    def size(self):
        return self.values.size


def _sweep(value, name):
    kind = np.asarray(value).dtype.kind if not isinstance(value, (str, bytes)) else "U"
    if kind not in "iuf":
        raise TypeError(f"{name}={value!r} is invalid; give a number or a list of numbers")
    arr = np.asarray(value, np.float64)
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(f"{name}={value!r} is invalid; give a number or a list of numbers")
    return arr.reshape(-1), arr.ndim == 1


def _threshold_specs(eps, recurrence_rate, joint_eps, joint_recurrence_rate, kind):
    """(thresholds of the data, thresholds of the joint series or None: it follows the data)."""
    if (eps is None) == (recurrence_rate is None):
        raise ValueError("give exactly one of eps= and recurrence_rate= (got "
                         f"eps={eps!r}, recurrence_rate={recurrence_rate!r})")
    xs = (_Thresholds("eps", eps) if eps is not None
          else _Thresholds("recurrence_rate", recurrence_rate))
    if joint_eps is not None and joint_recurrence_rate is not None:
        raise ValueError("joint_eps= and joint_recurrence_rate= exclude each other: give the "
                         "joint series either a threshold or a recurrence rate (or neither: it "
                         "then follows eps= / recurrence_rate=)")
    if kind != "joint":
        for name, v in (("joint_eps", joint_eps), ("joint_recurrence_rate",
                                                    joint_recurrence_rate)):
            if v is not None:
                raise ValueError(f"{name}= is the threshold of the joint= series; it needs "
                                 "joint=... (joint recurrence)")
        return xs, None
    if joint_eps is not None:
        return xs, _Thresholds("joint_eps", joint_eps)
    if joint_recurrence_rate is not None:
        return xs, _Thresholds("joint_recurrence_rate", joint_recurrence_rate)
    return xs, None


def _eps_matrix(prob, xs, ys, norm, eps_method, exps):
    """eps ``(nmat, K, nch)`` for every matrix of ``prob`` (series scaled by ``unit_scale``,
    exponents ``exps`` (nmat, nch)), in the scaled unit: ``K = Kx`` when the joint series
    follows the data (``ys is None``), else ``Kx * Ky`` (x-major, the outer product)."""
    nmat = prob.matrices.shape[0]
    rates = [t.values for t in (xs, ys) if t is not None and t.is_rate]
    r, method = (None, None)
    if rates:
        r, method = eps_for_recurrence_rate(prob, np.concatenate(rates), norm, eps_method)
    Kx = xs.size

    def given(t, ch):  # a user's eps, in channel ch's scaled unit
        return eps_in_unit(np.broadcast_to(t.values, (nmat, t.size)), exps[:, ch])

    ex = r[:, :Kx, 0] if xs.is_rate else given(xs, 0)
    if prob.nch == 1:
        return np.ascontiguousarray(ex[..., None]), method
    if ys is None:
        ey = r[:, :Kx, 1] if xs.is_rate else given(xs, 1)
        return np.stack([ex, ey], axis=-1), method
    Ky = ys.size
    off = Kx if xs.is_rate else 0
    ey = r[:, off:off + Ky, 1] if ys.is_rate else given(ys, 1)
    e = np.empty((nmat, Kx, Ky, 2))
    e[..., 0] = ex[:, :, None]
    e[..., 1] = ey[:, None, :]
    return e.reshape(nmat, Kx * Ky, 2), method


def _finite(values: np.ndarray, what: str):
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} contains NaN or infinite values; RQA needs finite data: "
                         "drop or fill them first (e.g. .dropna(dim) or .interpolate_na(dim))")


def _prepare(data, columns, other, joint, E, tau, dim, norm):
    E = _check_int(E, "E", 1)
    tau = _check_int(tau, "tau", 1)
    if norm not in NORMS:
        raise ValueError(f"norm={norm!r} is invalid; choose one of {NORMS}")
    if other is not None and joint is not None:
        raise ValueError("other= (cross recurrence) and joint= (joint recurrence) exclude "
                         "each other; give one of them")
    X, dim = _stack(data, columns, dim, "data")
    ncols = X.sizes[_VAR]
    Y = _partner(data, other if other is not None else joint, ncols, dim, "other" if
                 other is not None else "joint")
    kind = "self" if Y is None else ("cross" if other is not None else "joint")
    if Y is not None:
        ydim = f"{dim}_" if kind == "cross" else dim
        Y = Y.rename({dim: ydim}) if kind == "cross" else Y
        if kind == "joint" and Y.sizes[dim] != X.sizes[dim]:
            raise ValueError(f"joint= needs a series of the same length along {dim!r}: "
                             f"{X.sizes[dim]} and {Y.sizes[dim]}")
        if (kind == "joint" and dim in X.indexes and dim in Y.indexes
                and not X.indexes[dim].equals(Y.indexes[dim])):
            raise ValueError(f"joint=: the two series have different {dim!r} labels, and joint "
                             "recurrence pairs them time by time; align them first (e.g. "
                             "xr.align(x, y, join='inner')) or drop one coordinate")
        # broadcast the other dims only (time and the variable axis stay each one's own)
        tx = X.isel({dim: 0, _VAR: 0}, drop=True)
        ty = Y.isel({ydim: 0, _VAR: 0}, drop=True)
        tx, ty = xr.broadcast(tx, ty)
        X = X.broadcast_like(tx).transpose(*tx.dims, _VAR, dim)
        Y = Y.broadcast_like(tx).transpose(*tx.dims, _VAR, ydim)
    return X, Y, dim, kind, E, tau


def _arrays(X, Y, kind, dim):
    batch_dims = [d for d in X.dims if d not in (_VAR, dim)]
    xa = np.asarray(X.values, np.float64)
    ya = None if Y is None else np.asarray(Y.values, np.float64)
    return (batch_dims, *_checked(xa, ya, kind))


def _checked(xa, ya, kind):
    """(B, nvar, T) arrays of finite float64 values; joint: one array of both channels."""
    xa = np.asarray(xa, np.float64)
    _finite(xa, "data")
    nvar, T = xa.shape[-2], xa.shape[-1]
    xa = xa.reshape(-1, nvar, T)
    if ya is not None:
        ya = np.asarray(ya, np.float64)
        _finite(ya, "other" if kind == "cross" else "joint")
        ya = ya.reshape(-1, nvar, ya.shape[-1])
        if kind == "joint":
            xa = np.concatenate([xa, ya], axis=1)
            ya = None
    return xa, ya


def _problem(xa, ya, kind, E, tau, theiler, pairs, width_x, width_y):
    """One matrix per (series b, window start s) in ``pairs``."""
    nbatch, rows_per, _ = xa.shape
    nch = 2 if kind == "joint" else 1
    cvar, coff, cchan = embedding_coords(rows_per // nch, E, tau, nch)
    X = np.ascontiguousarray(xa.reshape(nbatch * rows_per, -1))
    Y = X if ya is None else np.ascontiguousarray(ya.reshape(nbatch * ya.shape[1], -1))
    na, nb = width_x - (E - 1) * tau, width_y - (E - 1) * tau
    yrows = rows_per if ya is None else ya.shape[1]
    mats = [(b * rows_per, s, na, b * yrows, s, nb) for b, s in pairs]
    return RecurrenceProblem(X, Y, cvar, coff, cchan, np.array(mats, np.int64).reshape(-1, 6),
                             kind != "cross", int(theiler) if kind != "cross" else 0)


def _too_short(n_states, E, tau, where):
    if n_states < 2:
        raise ValueError(f"series too short: {where} leaves {n_states} state(s) with E={E}, "
                         f"tau={tau} (N - (E-1)*tau must be >= 2)")


# ----------------------------------------------------------------------------- rqa
def rqa(
    data,
    columns=None,
    *,
    E: int = 1,
    tau: int = 1,
    eps=None,
    recurrence_rate=None,
    norm: str = "euclidean",
    theiler: int = 1,
    l_min: int = 2,
    v_min: int = 2,
    w_min: int = 2,
    other=None,
    joint=None,
    joint_eps=None,
    joint_recurrence_rate=None,
    window: int | None = None,
    step: int | None = None,
    dim: str | None = None,
    backend: str | None = None,
    tile: int | None = None,
    histograms: bool | None = None,
    eps_method: str = "auto",
    progress: bool | None = None,
) -> xr.Dataset:
    """Recurrence quantification analysis, exact and matrix-free.

    Parameters
    ----------
    data : DataArray or Dataset
        Time on ``dim``; every other dim broadcasts (one analysis per series).
    columns : str or list of str, optional
        On a Dataset, the variable(s) whose lags make the state (required there).
    E, tau : int
        Embedding dimension (RQA's "m") and delay; ``N' = N - (E-1)*tau`` states, each
        labelled by the time of its most recent value.
    eps : float or list of float
        Threshold: ``R[i, j] = d(v_i, v_j) < eps``.  A list gives an ``eps`` dim, all values
        counted in the same pass over the distances.
    recurrence_rate : float or list of float
        Instead of ``eps``: eps is the distance quantile giving this rate (exact while the
        distances fit in memory, else from a 2e6-pair sample; ``eps_method`` forces one);
        the eps used is returned as the variable ``eps``.
    norm : {"euclidean", "maximum", "manhattan"}
    theiler : int, default 1
        Pairs with ``|i - j| < theiler`` are left out of diagonal lines (self and joint).
    l_min, v_min, w_min : int, default 2
        Shortest diagonal, vertical, white vertical line.
    other, joint : str, list of str or DataArray, optional
        Cross recurrence with ``other`` or joint recurrence with ``joint`` (module docstring).
    joint_eps, joint_recurrence_rate : float or list of float, optional
        Joint recurrence only: the threshold of the ``joint`` series, as ``eps`` /
        ``recurrence_rate`` are that of ``data`` (give at most one; ``joint_recurrence_rate``
        picks the eps giving ``joint`` that rate alone).  Without either, ``joint`` follows
        ``data``: the same ``eps``, or its own eps for the same ``recurrence_rate``.  A list
        gives a ``joint_eps`` (``joint_recurrence_rate``) dim, every combination with the
        data's thresholds counted in the same pass.
    window, step : int, optional
        Windowed RQA: every ``step`` time steps (default ``window // 10``, at least 1), the
        measures of the ``window`` points ending there, as time series on ``dim`` labelled
        by each window's last time.
    dim : str, optional
        Time dimension (default ``"time"``; a 1-D DataArray uses its only dim).
    backend : {"auto", "cpu", "gpu"}, optional
        Default from :func:`xedm.set_options`; "auto" is "gpu" when CuPy sees a device.
    tile : int, optional
        Work granularity (CPU: diagonals/columns per block; GPU: rows per launch).  The
        counts do not depend on it.
    histograms : bool, optional
        Return the three line-length histograms (default: True without ``window``).
    progress : bool, optional
        Show a progress bar when the work comes in several batches.

    Returns
    -------
    Dataset
        ``RR, DET, L, L_max, DIV, ENTR, LAM, TT, V_max, V_ENTR, W, W_max, W_ENTR`` (float64,
        NaN over an empty histogram); with ``histograms``, ``diagonal_lines``,
        ``vertical_lines`` and ``white_vertical_lines`` (uint64) over ``line_length``;
        ``eps`` (``joint_eps``) when a recurrence rate set the threshold of ``data``
        (``joint``); parameters in ``attrs``, with ``eps`` and ``joint_eps`` when each is one
        number.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> import xedm
    >>> x = xr.DataArray(np.sin(np.arange(500) * 0.2), dims="time")
    >>> res = x.edm.rqa(E=2, tau=3, eps=0.1, backend="cpu")
    >>> round(float(res.DET), 3) > 0.9
    True
    >>> res = x.edm.rqa(E=2, tau=3, eps=[0.05, 0.1, 0.2], backend="cpu")
    >>> res.RR.dims
    ('eps',)

    Joint recurrence with a threshold for each series (y has ten times x's amplitude):

    >>> y = xr.DataArray(10 * np.cos(np.arange(500) * 0.3), dims="time")
    >>> res = x.edm.rqa(joint=y, E=2, tau=3, eps=0.1, joint_eps=1.0, backend="cpu")
    >>> res.attrs["eps"], res.attrs["joint_eps"]
    (0.1, 1.0)
    >>> res = x.edm.rqa(joint=y, E=2, tau=3, eps=0.1, joint_recurrence_rate=0.05,
    ...                 backend="cpu")
    >>> round(float(res.joint_eps), 2)  # the eps giving y a recurrence rate of 5 %
    1.44
    """
    from ..kernels import resolve_backend
    from ..options import get_option

    X, Y, dim, kind, E, tau = _prepare(data, columns, other, joint, E, tau, dim, norm)
    theiler = _check_int(theiler, "theiler", 0)
    for name, v in (("l_min", l_min), ("v_min", v_min), ("w_min", w_min)):
        _check_int(v, name, 1)
    xs, ys = _threshold_specs(eps, recurrence_rate, joint_eps, joint_recurrence_rate, kind)
    _check_eps_method(eps_method)
    if tile is not None:
        tile = _check_int(tile, "tile", 1)
    backend = resolve_backend(backend)
    index = time_index(X, dim)
    T = X.sizes[dim]
    Ty = Y.sizes[Y.dims[-1]] if Y is not None else T
    if window is None:
        if step is not None:
            raise ValueError("step= needs window=")
        starts, width_x, width_y = [0], T, Ty
        _too_short(T - (E - 1) * tau, E, tau, f"the series of {T} points")
        _too_short(Ty - (E - 1) * tau, E, tau, f"the {kind} series of {Ty} points")
    else:
        window = _check_int(window, "window", 2)
        if kind == "cross" and Ty != T:
            raise ValueError("windowed cross recurrence needs two series of the same length")
        if window > T:
            raise ValueError(f"window={window} is longer than the series ({T} points)")
        _too_short(window - (E - 1) * tau, E, tau, f"window={window}")
        step = _check_int(step if step is not None else max(window // 10, 1), "step", 1)
        starts = list(range(0, T - window + 1, step))
        width_x = width_y = window
    n_states = width_x - (E - 1) * tau
    if kind != "cross" and theiler >= n_states:
        where = f"window={window}" if window is not None else "the series"
        raise ValueError(f"theiler={theiler} leaves no diagonal line: {where} gives {n_states} "
                         f"states and the Theiler window drops every pair with |i - j| < "
                         f"theiler; use theiler < {n_states}")
    histograms = window is None if histograms is None else check_bool("histograms", histograms)
    batch_dims = [d for d in X.dims if d not in (_VAR, dim)]
    show = get_option("progress") if progress is None else progress
    if kind == "cross":
        # pyrqa's orientation: rows are the states of `other`, columns those of `data`,
        # so a vertical line is a run of consecutive `other` states near one `data` state
        width_x, width_y = width_y, width_x
    na = width_x - (E - 1) * tau
    nwin = len(starts)
    K = xs.size * (ys.size if ys is not None else 1)
    nch = 2 if kind == "joint" else 1
    _check_cost(int(np.prod([X.sizes[d] for d in batch_dims], dtype=np.int64)), len(starts),
                na, width_y - (E - 1) * tau, K, nch, histograms)

    def compute(xa, ya, show):
        """(measures, histograms, eps used, eps method) of the series of xa (and ya)."""
        xa, ya = _checked(xa, ya, kind)
        if kind == "cross":
            xa, ya = ya, xa
        xa, ya, exps = unit_scale(xa, ya, nch)  # exact powers of 2: RQA is unit-free
        nbatch = xa.shape[0]
        # group matrices so that the per-thread histograms stay small (about 1e6 counters)
        per_group = max(1, int(1e6 // (K * (na + 1))))
        pairs = [(b, s) for b in range(nbatch) for s in range(nwin)]
        groups = [pairs[i:i + per_group] for i in range(0, len(pairs), per_group)]
        meas = {m: np.empty((nbatch, nwin, K)) for m in MEASURES}
        hists = ({k: np.zeros((nbatch, K, na + 1), np.uint64) for k in _HIST} if histograms
                 else None)
        eps_used = np.empty((nbatch, nwin, K, nch))
        used_method = None
        # one bar over every matrix cell of every group, advanced within a group as the
        # kernel's rounds finish (a single long series too), shown after two seconds
        cells = [len(g) * na * (width_y - (E - 1) * tau) * K for g in groups]
        bar = counter_bar(show, "rqa", sum(cells), unit="cell", unit_scale=True)
        for group, group_cells in zip(groups, cells, strict=True):
            prob = _problem(xa, ya, kind, E, tau, theiler, [(b, starts[w]) for b, w in group],
                            width_x, width_y)
            e, used_method = _eps_matrix(prob, xs, ys, norm, eps_method,
                                         exps[[b for b, _ in group]])
            advance = _advance(bar, group_cells)
            h = line_histograms(prob, e, norm, backend, tile, progress=advance)
            advance(1.0)
            n_points = (prob.matrices[:, 2] * prob.matrices[:, 5])[:, None]
            m = rqa_measures(h["diagonal"], h["vertical"], h["white"], n_points, l_min, v_min,
                             w_min)
            for i, (b, w) in enumerate(group):
                for name in MEASURES:
                    meas[name][b, w] = m[name][i]
                eps_used[b, w] = np.ldexp(e[i], exps[b])  # in the data's unit
                if histograms:
                    for k in _HIST:
                        hists[k][b] = h[k][i][:, : na + 1]
        bar.close()
        return meas, hists, eps_used, used_method

    lazy = X.chunks is not None or (Y is not None and Y.chunks is not None)
    if lazy:  # one task per chunk of the other dims; the value checks run in the tasks
        meas, hists, eps_used = _lazy_measures(compute, X, Y, dim, batch_dims, nwin, K, nch,
                                               na, histograms)
        used_method = None
    else:
        xa = np.asarray(X.values, np.float64)
        ya = None if Y is None else np.asarray(Y.values, np.float64)
        meas, hists, eps_used, used_method = compute(xa, ya, show)
    return _assemble(X, dim, index, batch_dims, meas, hists, eps_used, starts, window, width_x,
                     xs, ys, kind, locals())


def _lazy_measures(compute, X, Y, dim, batch_dims, nwin, K, nch, na, histograms):
    """``compute`` over the chunks of the other dims of dask-backed X (and Y): dask arrays
    shaped as the in-memory ones (series flattened first)."""
    X = one_time_chunk(X, dim, "rqa").chunk({_VAR: -1})
    args, core = [X], [[_VAR, dim]]
    if Y is not None:
        ydim = Y.dims[-1]
        args.append(one_time_chunk(Y, ydim, "rqa", shown=dim).chunk({_VAR: -1}))
        core.append([_VAR, ydim])
    hist_names = list(_HIST) if histograms else []

    def block(xa, ya=None):
        lead = xa.shape[:-2]
        meas, hists, eps_used, _ = compute(xa, ya, False)
        outs = ([meas[m] for m in MEASURES] + [hists[k] for k in hist_names] + [eps_used])
        return tuple(o.reshape(lead + o.shape[1:]) for o in outs)

    w, k, ln, c = "__rqa_window", "__rqa_k", "__rqa_length", "__rqa_channel"
    out_dims = [[w, k]] * len(MEASURES) + [[k, ln]] * len(hist_names) + [[w, k, c]]
    res = xr.apply_ufunc(
        block, *args, input_core_dims=core, output_core_dims=out_dims, dask="parallelized",
        output_dtypes=[np.float64] * len(MEASURES) + [np.uint64] * len(hist_names)
        + [np.float64], dask_gufunc_kwargs={"output_sizes": {w: nwin, k: K, c: nch} | (
            {ln: na + 1} if histograms else {})})
    nbatch = int(np.prod([X.sizes[d] for d in batch_dims], dtype=np.int64))
    flat = [r.transpose(*batch_dims, *dims).data.reshape((nbatch,) + r.shape[len(batch_dims):])
            for r, dims in zip(res, out_dims, strict=True)]
    meas = dict(zip(MEASURES, flat[:len(MEASURES)], strict=True))
    hists = (dict(zip(hist_names, flat[len(MEASURES):-1], strict=True)) if histograms
             else None)
    return meas, hists, flat[-1]


def _check_cost(nbatch: int, nwin: int, na: int, nb: int, K: int, nch: int,
                histograms: bool) -> None:
    """Refuse a call whose histograms (three per threshold: one per matrix group, one per
    thread, the result's) or measures cannot fit in memory, or whose cells x thresholds
    take hours; ``K`` thresholds (every eps / recurrence_rate combination)."""
    import os

    copies = 3 + (os.cpu_count() or 1) + (nbatch if histograms else 0)
    need = 24.0 * K * (na + 1) * copies + 8.0 * (len(MEASURES) + nch) * nbatch * nwin * K
    nmat = nbatch * nwin
    what = f"rqa with {K} thresholds on {nmat} matri{'x' if nmat == 1 else 'ces'} of {na} x {nb}"
    what += " states"
    fix = "give fewer eps / recurrence_rate values (or use window= on shorter pieces)"
    check_memory(need, what, fix)
    check_work(float(nbatch) * nwin * na * nb * (K * nch + E_DIST_OPS), what, fix)


E_DIST_OPS = 4  # a distance's few operations per cell besides its threshold comparisons


def _advance(bar, cells: int):
    """A callback moving ``bar`` to ``fraction`` of ``cells`` (monotone, never past it)."""
    state = {"done": 0}

    def step(fraction: float):
        now = int(round(min(max(fraction, 0.0), 1.0) * cells))
        if now > state["done"]:
            bar.update(now - state["done"])
            state["done"] = now

    return step


def _check_eps_method(eps_method):
    if eps_method not in ("auto", "exact", "sample"):
        raise ValueError(f"eps_method={eps_method!r} is invalid; choose 'auto', 'exact' or "
                         "'sample'")


def _assemble(X, dim, index, batch_dims, meas, hists, eps_used, starts, window, width_x,
              xs, ys, kind, p):
    shape = [X.sizes[d] for d in batch_dims]
    coords = {d: X.coords[d] for d in batch_dims if d in X.coords}
    dims = list(batch_dims)
    sel_win = slice(None) if window is not None else 0
    if window is not None:
        dims.append(dim)
        coords[dim] = np.asarray(index)[[s + width_x - 1 for s in starts]]
    # the threshold axis K is x-major over (data thresholds, joint thresholds when given)
    specs = [xs] if ys is None else [xs, ys]
    ksh = [t.size for t in specs]
    sel_k = tuple(slice(None) if t.is_list else 0 for t in specs)
    for t in specs:
        if t.is_list:
            dims.append(t.name)
            coords[t.name] = t.values
    if kind == "joint" and ys is None and not xs.is_rate and xs.is_list:
        coords["joint_eps"] = (xs.name, xs.values)  # the joint series uses the same eps

    def _take(arr, lead, trail=()):
        """(nbatch, [nwin,] K, ...) -> batch dims + kept window / threshold dims + trail."""
        a = arr.reshape(arr.shape[:lead] + tuple(ksh) + arr.shape[lead + 1:])
        a = a[(slice(None),) + ((sel_win,) if lead == 2 else ()) + sel_k + tuple(trail)]
        return a.reshape(shape + list(a.shape[1:]))

    out = {}
    for name, arr in meas.items():
        out[name] = xr.Variable(dims, _take(arr, 2), {"long_name": _DOC_MEASURES[name]})
    if hists is not None:
        hdims = [d for d in dims if d != dim] + ["line_length"]
        for k, var in _HIST.items():
            out[var] = xr.Variable(hdims, _take(hists[k], 1, (slice(1, None),)),
                                   {"long_name": f"histogram of {var.replace('_', ' ')}"})
        coords["line_length"] = np.arange(1, hists["vertical"].shape[-1])
    # thresholds set by a recurrence rate vary with the series (and window): variables
    nbw = eps_used.shape[:2]
    e4 = eps_used.reshape(nbw + tuple(ksh) + eps_used.shape[-1:])
    win = [dim] if window is not None else []
    found = {}
    if xs.is_rate:
        ex = e4[(slice(None), sel_win, sel_k[0]) + ((0,) if ys is not None else ()) + (0,)]
        found["eps"] = (ex, [xs.name] if xs.is_list else [])
    if kind == "joint" and (ys.is_rate if ys is not None else xs.is_rate):
        if ys is None:
            ey = e4[:, sel_win, sel_k[0], 1]
            found["joint_eps"] = (ey, [xs.name] if xs.is_list else [])
        else:
            ey = e4[:, sel_win, 0, sel_k[1], 1]
            found["joint_eps"] = (ey, [ys.name] if ys.is_list else [])
    for var, (e, kd) in found.items():
        series = "joint" if var == "joint_eps" else "data"
        out[var] = xr.Variable(list(batch_dims) + win + kd, e.reshape(shape + list(e.shape[1:])),
                               {"long_name": f"threshold of {series} reaching its recurrence "
                                             "rate"})
    attrs = {"xedm_function": "rqa", "kind": kind, "E": p["E"], "tau": p["tau"],
             "norm": p["norm"],
             "theiler": p["theiler"] if kind != "cross" else 0, "l_min": p["l_min"],
             "v_min": p["v_min"], "w_min": p["w_min"], "backend": p["backend"],
             "n_states": int(p["n_states"])}
    if not xs.is_list:
        attrs[xs.name] = float(xs.values[0])
        if xs.is_rate and "eps" in found and found["eps"][0].size == 1 and not p["lazy"]:
            attrs["eps"] = float(found["eps"][0].ravel()[0])
    if kind == "joint":
        if ys is None:
            attrs["joint_threshold"] = "eps" if not xs.is_rate else "recurrence_rate"
            if not xs.is_list:
                attrs["joint_" + xs.name] = float(xs.values[0])
        else:
            attrs["joint_threshold"] = ys.name
            if not ys.is_list:
                attrs[ys.name] = float(ys.values[0])
        if "joint_eps" in found and found["joint_eps"][0].size == 1 and not p["lazy"]:
            attrs["joint_eps"] = float(found["joint_eps"][0].ravel()[0])
    if p["used_method"] is not None:
        attrs["eps_method"] = p["used_method"]
    if window is not None:
        attrs.update(window=int(window), step=int(p["step"]))
    return xr.Dataset(out, coords=coords, attrs=attrs)


# ----------------------------------------------------------------------------- plot
def recurrence_plot(data, columns=None, *, E: int = 1, tau: int = 1, eps=None,
                    recurrence_rate=None, norm: str = "euclidean", other=None, joint=None,
                    joint_eps=None, joint_recurrence_rate=None, dim: str | None = None,
                    max_states: int = 10_000, eps_method: str = "auto") -> xr.DataArray:
    """The recurrence matrix as a boolean DataArray over ``(dim, dim + "_")``.

    Same arguments as :func:`rqa`, each threshold one number (``eps`` or
    ``recurrence_rate``; for ``joint``, ``joint_eps`` or ``joint_recurrence_rate`` or
    neither).  The thresholds used are in ``attrs["eps"]`` (and ``attrs["joint_eps"]``): a
    number, or a list with one per series when a recurrence rate gave each its own.  Meant for
    plots of up to ``max_states`` states a side (the matrix is dense); beyond that use
    :func:`rqa`, which never stores it.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> import xedm
    >>> x = xr.DataArray(np.sin(np.arange(100) * 0.3), dims="time")
    >>> R = x.edm.recurrence_plot(E=2, eps=0.2)
    >>> R.dims, R.shape, bool(R[5, 5])
    (('time', 'time_'), (99, 99), True)
    """
    X, Y, dim, kind, E, tau = _prepare(data, columns, other, joint, E, tau, dim, norm)
    xs, ys = _threshold_specs(eps, recurrence_rate, joint_eps, joint_recurrence_rate, kind)
    for t in (xs, ys):
        if t is not None and t.is_list:
            raise ValueError(f"{t.name}={t.values.tolist()!r}: recurrence_plot draws one "
                             f"matrix, so {t.name} must be one number; use rqa(...) for a "
                             "sweep")
    _check_eps_method(eps_method)
    max_states = _check_int(max_states, "max_states", 2)
    index = time_index(X, dim)
    T = X.sizes[dim]
    Ty = Y.sizes[Y.dims[-1]] if Y is not None else T
    na, nb = T - (E - 1) * tau, Ty - (E - 1) * tau
    _too_short(na, E, tau, f"the series of {T} points")
    _too_short(nb, E, tau, f"the {kind} series of {Ty} points")
    if max(na, nb) > max_states:
        raise ValueError(f"the recurrence matrix would have {na} x {nb} points (max_states="
                         f"{max_states}); use xedm.rqa(...) for the measures of long series, "
                         "which never stores the matrix")
    batch_dims, xa, ya = _arrays(X, Y, kind, dim)
    if xa.shape[0] == 0:
        empty = [d for d in batch_dims if X.sizes[d] == 0]
        raise ValueError(f"the data has no series: dim {empty[0]!r} has size 0; "
                         "recurrence_plot draws the matrix of at least one series")
    xa, ya, exps = unit_scale(xa, ya, 2 if kind == "joint" else 1)
    prob = _problem(xa, ya, kind, E, tau, 0, [(b, 0) for b in range(xa.shape[0])], T, Ty)
    e, _ = _eps_matrix(prob, xs, ys, norm, eps_method, exps)
    thr = thresholds(e, norm, prob.nch, prob.matrices.shape[0])[:, 0]
    code = NORMS.index(norm)
    R = np.ones((prob.matrices.shape[0], na, nb), bool)
    for m, (ar, _, _, br, _, _) in enumerate(prob.matrices):
        acc = np.zeros((prob.nch, na, nb))
        for c in range(prob.cvar.size):
            a = prob.X[ar + prob.cvar[c], prob.coff[c]:prob.coff[c] + na]
            b = prob.Y[br + prob.cvar[c], prob.coff[c]:prob.coff[c] + nb]
            d = a[:, None] - b[None, :]
            ch = prob.cchan[c]
            if code == 0:
                acc[ch] = acc[ch] + d * d
            elif code == 1:
                acc[ch] = np.maximum(acc[ch], np.abs(d))
            else:
                acc[ch] = acc[ch] + np.abs(d)
        for ch in range(prob.nch):
            R[m] &= acc[ch] < thr[m, ch]
    shape = [X.sizes[d] for d in batch_dims]
    ydim = f"{dim}_"
    yindex = time_index(Y, Y.dims[-1]) if kind == "cross" else index
    coords = {d: X.coords[d] for d in batch_dims if d in X.coords}
    coords[dim] = np.asarray(index)[(E - 1) * tau:]
    coords[ydim] = np.asarray(yindex)[(E - 1) * tau:]
    attrs = {"xedm_function": "recurrence_plot", "kind": kind, "E": E, "tau": tau,
             "norm": norm}
    for ch, name in enumerate(["eps", "joint_eps"][:prob.nch]):
        vals = np.ldexp(e[:, 0, ch], exps[:, ch])  # in the data's unit
        attrs[name] = float(vals[0]) if np.all(vals == vals[0]) else vals.tolist()
    for t in (xs, ys):
        if t is not None and t.is_rate:
            attrs[t.name] = float(t.values[0])
    if kind == "joint" and ys is None and xs.is_rate:
        attrs["joint_recurrence_rate"] = float(xs.values[0])
    return xr.DataArray(R.reshape(shape + [na, nb]), dims=batch_dims + [dim, ydim],
                        coords=coords, attrs=attrs, name="recurrence")
