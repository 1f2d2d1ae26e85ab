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

from ...core import validate as v
from .assemble import assemble
from .compute import lazy_measures, measures
from .inputs import prepare
from .network import recurrence_network
from .plan import make_plan
from .plot import recurrence_plot

__all__ = ["recurrence_network", "recurrence_plot", "rqa"]


@v.renamed("dim", "time_dim", "the time dimension")
def rqa(data, columns=None, *, E: int = 1, tau: int = 1, eps=None, recurrence_rate=None,
        norm: str | None = None, theiler: int | None = None, l_min: int = 2,
        v_min: int = 2, w_min: int | None = None, other=None, joint=None, joint_eps=None,
        joint_recurrence_rate=None,
        window: int | None = None, step: int | None = None, time_dim: str | None = None,
        backend: str | None = None, tile: int | None = None, histograms: bool | None = None,
        eps_method: str = "auto", progress: bool | None = None, border: str = "keep",
        recurrence_times: bool = False, neighbors_per_state: int | None = None,
        convention: str = "xedm") -> xr.Dataset:
    """Recurrence quantification analysis, exact and matrix-free.

    Parameters
    ----------
    data : DataArray, Dataset or pandas DataFrame (time column as in :func:`xedm.simplex`)
        Time on ``time_dim``; every other dim broadcasts (one analysis per series).
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
    norm : {"euclidean", "maximum", "manhattan"}, optional
        Default from ``convention`` (``"euclidean"``; ``"maximum"`` for pyunicorn and crp).
    theiler : int, default 1
        Pairs with ``|i - j| < theiler`` are left out of diagonal lines (self and joint;
        with ``convention="crp"`` of the whole matrix).
    l_min, v_min, w_min : int
        Shortest diagonal, vertical, white vertical line (2, 2 and, from ``convention``, 2;
        1 for pyunicorn and crp).
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
        measures of the ``window`` points ending there, as time series on ``time_dim`` labelled
        by each window's last time.
    time_dim : str, optional
        Time dimension (default ``"time"``; a 1-D DataArray uses its only dim).  Its old
        name ``dim`` still works, with a FutureWarning, until the next release.
    backend : {"auto", "cpu", "gpu"}, optional
        Default from :func:`xedm.set_options`; "auto" is "gpu" when CuPy sees a device.
    tile : int, optional
        Work granularity (CPU: diagonals/columns per block; GPU: rows per launch).  The
        counts do not depend on it.
    histograms : bool, optional
        Return the three line-length histograms (default: True without ``window``).
    progress : bool, optional
        Show a progress bar when the work comes in several batches.
    border : {"keep", "drop"}, default "keep"
        ``"drop"``: leave the lines touching the border of the matrix (censored lines) out
        of the three histograms and every measure made of them (the CRP toolbox's border
        correction, Kraemer & Marwan 2019, "dibo"); RR still counts every point.
    recurrence_times : bool, default False
        Also return ``T1`` and ``T2`` (mean recurrence times of the first and second type,
        Gao & Cai 2000) and ``RTE`` (recurrence time entropy); see docs/rqa.md.
    neighbors_per_state : int, optional
        Instead of ``eps`` / ``recurrence_rate``, the fixed-amount-of-neighbours threshold:
        ``R[i, j] = d(v_i, v_j) < eps_i`` with ``eps_i`` the distance of rank ``k``
        (0-based, state i itself at 0) of row i, so each row holds k recurrent points (no
        ties).  The matrix is not symmetric (both triangles' diagonals counted); self
        recurrence, one threshold, CPU only.
    convention : {"xedm", "pyunicorn", "crp"}, default "xedm"
        Whose RQA numbers to reproduce (docs/rqa.md, "Conventions", has the table):
        ``"xedm"`` (= pyrqa), ``"pyunicorn"`` (``RecurrencePlot``: supremum norm,
        ``w_min=1``, ratios ``x / (n + 1e-8)``, so 0 over an empty histogram) or ``"crp"``
        (the CRP toolbox's ``crqa.m``: maximum norm, the Theiler band out of the whole
        matrix and RR's denominator, white lines only between two recurrences, 0 for
        ``L``, ``L_max``, ``ENTR`` without a line; CPU only, without ``border="drop"``,
        ``recurrence_times`` or ``neighbors_per_state``).  ``norm``, ``theiler`` and
        ``w_min`` given explicitly override the convention's.  Recorded in
        ``attrs["convention"]``.

    Returns
    -------
    Dataset
        ``RR, DET, L, L_max, DIV, ENTR, LAM, TT, V_max, V_ENTR, W, W_max, W_ENTR`` (float64,
        NaN over an empty histogram), ``T1, T2, RTE`` with ``recurrence_times``; with
        ``histograms``, ``diagonal_lines``,
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
    from ...options import get_option
    from ...recurrence.conventions import get_convention

    conv = get_convention(convention)
    norm = conv.norm if norm is None else norm
    theiler = conv.theiler if theiler is None else theiler
    w_min = conv.w_min if w_min is None else w_min
    X, Y, dim, kind, E, tau = prepare(data, columns, other, joint, E, tau, time_dim, norm)
    p = make_plan(X, Y, dim, kind, E, tau, norm, theiler=theiler, l_min=l_min, v_min=v_min,
                  w_min=w_min, eps=eps, recurrence_rate=recurrence_rate, joint_eps=joint_eps,
                  joint_recurrence_rate=joint_recurrence_rate, eps_method=eps_method,
                  tile=tile, backend=backend, window=window, step=step, histograms=histograms,
                  border=border, recurrence_times=recurrence_times,
                  neighbors_per_state=neighbors_per_state, convention=conv)
    lazy = X.chunks is not None or (Y is not None and Y.chunks is not None)
    if lazy:  # one task per chunk of the other dims; the value checks run in the tasks
        meas, hists, eps_used = lazy_measures(X, Y, p)
        used_method = None
    else:
        show = get_option("progress") if progress is None else progress
        xa = np.asarray(X.values, np.float64)
        ya = None if Y is None else np.asarray(Y.values, np.float64)
        meas, hists, eps_used, used_method = measures(xa, ya, p, show)
    return assemble(X, p, meas, hists, eps_used, lazy, used_method)
