"""RQA's :func:`recurrence_plot`: the recurrence matrix itself, dense, for plots."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ...core import validate as v
from ...recurrence.recurrence import NORMS, thresholds, unit_scale
from ..inputs import time_index
from .inputs import arrays, prepare, problem, too_short
from .thresholds import check_eps_method, eps_matrix, threshold_specs


@v.renamed("dim", "time_dim", "the time dimension")
def recurrence_plot(data, columns=None, *, E: int = 1, tau: int = 1, eps=None,
                    recurrence_rate=None, norm: str = "euclidean", other=None, joint=None,
                    joint_eps=None, joint_recurrence_rate=None, time_dim: str | None = None,
                    max_states: int = 10_000, eps_method: str = "auto") -> xr.DataArray:
    """The recurrence matrix as a boolean DataArray over ``(time_dim, time_dim + "_")``.

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
    X, Y, dim, kind, E, tau = prepare(data, columns, other, joint, E, tau, time_dim, norm)
    xs, ys = threshold_specs(eps, recurrence_rate, joint_eps, joint_recurrence_rate, kind)
    for t in (xs, ys):
        if t is not None and t.is_list:
            raise ValueError(f"{t.name}={t.values.tolist()!r}: recurrence_plot draws one "
                             f"matrix, so {t.name} must be one number; use rqa(...) for a "
                             "sweep")
    check_eps_method(eps_method)
    max_states = v.check_int("max_states", max_states, 2)
    index = time_index(X, dim)
    T = X.sizes[dim]
    Ty = Y.sizes[Y.dims[-1]] if Y is not None else T
    na, nb = T - (E - 1) * tau, Ty - (E - 1) * tau
    too_short(na, E, tau, f"the series of {T} points")
    too_short(nb, E, tau, f"the {kind} series of {Ty} points")
    if max(na, nb) > max_states:
        raise ValueError(f"the recurrence matrix would have {na} x {nb} points (max_states="
                         f"{max_states}); use xedm.rqa(...) for the measures of long series, "
                         "which never stores the matrix")
    batch_dims, xa, ya = arrays(X, Y, kind, dim)
    if xa.shape[0] == 0:
        empty = [d for d in batch_dims if X.sizes[d] == 0]
        raise ValueError(f"the data has no series: dim {empty[0]!r} has size 0; "
                         "recurrence_plot draws the matrix of at least one series")
    xa, ya, exps = unit_scale(xa, ya, 2 if kind == "joint" else 1)
    prob = problem(xa, ya, kind, E, tau, 0, [(b, 0) for b in range(xa.shape[0])], T, Ty)
    e, _ = eps_matrix(prob, xs, ys, norm, eps_method, exps)
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
