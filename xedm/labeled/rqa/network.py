"""RQA's :func:`recurrence_network`: the recurrence matrix read as an undirected graph."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ...recurrence.network import NETWORK_MEASURES, network_measures
from ...recurrence.recurrence import NORMS, thresholds, unit_scale
from ..inputs import one_time_chunk, time_index
from .inputs import VAR, checked, prepare, problem, too_short
from .thresholds import check_eps_method, eps_matrix, threshold_specs

_LONG = {
    "degree": "number of links of each state (recurrences, itself not counted)",
    "local_clustering": "links among a state's neighbours / pairs of its neighbours",
    "global_clustering": "mean local clustering",
    "transitivity": "3 x triangles / connected triples",
    "average_path_length": "mean shortest path length over connected pairs",
    "assortativity": "degree correlation over the links (Newman)",
    "link_density": "links / (N (N - 1))",
}


PER_STATE = ("degree", "local_clustering")


def _which(measures):
    if measures is None:
        return NETWORK_MEASURES
    if not isinstance(measures, str) and not np.iterable(measures):
        raise TypeError(f"measures={measures!r} is invalid; give a measure's name or a list of "
                        f"them, among {NETWORK_MEASURES}")
    names = [measures] if isinstance(measures, str) else list(measures)
    bad = [m for m in names if m not in NETWORK_MEASURES]
    if bad or not names:
        raise ValueError(f"measures={measures!r} is invalid; choose among {NETWORK_MEASURES}")
    repeated = sorted({m for m in names if names.count(m) > 1})
    if repeated:
        raise ValueError(f"measures={measures!r} names {repeated} more than once; give each "
                         "measure once")
    return tuple(m for m in NETWORK_MEASURES if m in names)


def recurrence_network(data, columns=None, *, E: int = 1, tau: int = 1, eps=None,
                       recurrence_rate=None, norm: str = "euclidean", measures=None,
                       time_dim: str | None = None, eps_method: str = "auto") -> xr.Dataset:
    """Recurrence network measures: ``R[i, j] = d(v_i, v_j) < eps`` (i != j) as the adjacency
    matrix of an undirected graph, as pyunicorn's ``RecurrenceNetwork``.

    Degree, link density and assortativity are matrix-free (O(N) memory, any N); the
    clustering coefficients, transitivity and the average path length use adjacency lists
    of 4 bytes per recurrent pair, and the path length costs O(N * (N + links)) (see
    docs/rqa.md, "Recurrence networks", for the limits of N).  CPU only.

    Parameters
    ----------
    data : DataArray or Dataset
        Time on ``time_dim``; every other dim broadcasts (one network per series).
    columns : str or list of str, optional
        On a Dataset, the variable(s) whose lags make the state.
    E, tau : int
        Embedding dimension and delay, as in :func:`rqa`.
    eps, recurrence_rate : float
        The threshold (one number), or the recurrence rate that sets it (as in :func:`rqa`:
        the rate counts the line of identity; the eps used is the variable ``eps``).
    norm : {"euclidean", "maximum", "manhattan"}
        pyunicorn calls the maximum norm "supremum".
    measures : list of str, optional
        Which of ``degree``, ``local_clustering``, ``global_clustering``, ``transitivity``,
        ``average_path_length``, ``assortativity``, ``link_density`` (default: all).
    time_dim : str, optional
        Time dimension (default ``"time"``; a 1-D DataArray uses its only dim).
    eps_method : {"auto", "exact", "sample"}
        How a recurrence rate is turned into eps (as in :func:`rqa`).

    Returns
    -------
    Dataset
        ``degree`` (int64) and ``local_clustering`` over ``time_dim`` (each state labelled by
        the time of its most recent value), the other measures one number per series;
        parameters in ``attrs``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> import xedm
    >>> x = xr.DataArray(np.sin(np.arange(300) * 0.2), dims="time")
    >>> net = x.edm.recurrence_network(E=2, tau=3, eps=0.1)
    >>> net.degree.dims, 0 < float(net.transitivity) <= 1
    (('time',), True)
    """
    X, _, dim, kind, E, tau = prepare(data, columns, None, None, E, tau, time_dim, norm)
    xs, _ = threshold_specs(eps, recurrence_rate, None, None, kind)
    if xs.is_list:
        raise ValueError(f"{xs.name}={xs.values.tolist()!r}: recurrence_network builds one "
                         f"network per series, so {xs.name} must be one number")
    check_eps_method(eps_method)
    which = _which(measures)
    index = time_index(X, dim)
    T = X.sizes[dim]
    n = T - (E - 1) * tau
    too_short(n, E, tau, f"the series of {T} points")
    batch_dims = [d for d in X.dims if d not in (VAR, dim)]
    shape = [X.sizes[d] for d in batch_dims]

    def block(xa):  # (..., VAR, time) -> one array per measure, then eps
        lead = xa.shape[:-2]
        got = _networks(xa, kind, E, tau, xs, norm, eps_method, which)[:-1]
        return tuple(g.reshape(lead + g.shape[1:]) for g in got)

    lazy = X.chunks is not None
    if lazy:
        X = one_time_chunk(X, dim, "recurrence_network").chunk({VAR: -1})
        node = "__rn_node"
        out_dims = [[node] if m in PER_STATE else [] for m in which] + [[]]
        res = xr.apply_ufunc(
            block, X,
            input_core_dims=[[VAR, dim]], output_core_dims=out_dims, dask="parallelized",
            output_dtypes=[np.int64 if m == "degree" else np.float64 for m in which]
            + [np.float64], dask_gufunc_kwargs={"output_sizes": {node: n}})
        arrays_out = [r.transpose(*batch_dims, ...).data for r in res]
        used = None
    else:
        xa = np.asarray(X.values, np.float64)
        got = _networks(xa, kind, E, tau, xs, norm, eps_method, which)
        used = got[-1]
        arrays_out = [g.reshape(shape + list(g.shape[1:])) for g in got[:-2]]
        arrays_out.append(got[-2].reshape(shape))
    coords = {d: X.coords[d] for d in batch_dims if d in X.coords}
    coords[dim] = np.asarray(index)[(E - 1) * tau:]
    out = {}
    for name, vals in zip(which, arrays_out[:-1], strict=True):
        vdims = batch_dims + ([dim] if name in PER_STATE else [])
        out[name] = xr.Variable(vdims, vals, {"long_name": _LONG[name]})
    attrs = {"xedm_function": "recurrence_network", "E": E, "tau": tau, "norm": norm,
             "n_states": int(n), xs.name: float(xs.values[0])}
    if xs.is_rate:
        eps_data = arrays_out[-1]
        out["eps"] = xr.Variable(batch_dims, eps_data,
                                 {"long_name": "threshold reaching the recurrence rate"})
        if used is not None:
            attrs["eps_method"] = used
            if eps_data.size == 1:
                attrs["eps"] = float(np.asarray(eps_data).ravel()[0])
    return xr.Dataset(out, coords=coords, attrs=attrs)


def _networks(xa, kind, E, tau, xs, norm, eps_method, which):
    """The measures ``which`` of every series of ``xa`` (..., VAR, time) as arrays (B, ...),
    then eps (B,) in the data's unit, then the eps method used."""
    T = xa.shape[-1]
    xa, _ = checked(xa, None, kind)
    xa, _, exps = unit_scale(xa, None, 1)
    prob = problem(xa, None, kind, E, tau, 0, [(b, 0) for b in range(xa.shape[0])], T, T)
    e, used = eps_matrix(prob, xs, None, norm, eps_method, exps)
    thr = thresholds(e, norm, 1, prob.matrices.shape[0])
    per = [network_measures(prob, m, thr[m, 0], NORMS.index(norm), which)
           for m in range(prob.matrices.shape[0])]
    n = T - (E - 1) * tau
    res = []
    for name in which:
        tail = [n] if name in PER_STATE else []
        dtype = np.int64 if name == "degree" else np.float64
        res.append(np.array([p[name] for p in per], dtype).reshape([len(per)] + tail))
    res.append(np.ldexp(e[:, 0, 0], exps[:, 0]))  # in the data's unit
    res.append(used)
    return res
