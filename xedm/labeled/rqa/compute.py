"""RQA's compute: the line histograms and measures of every matrix, in memory (grouped so that
the per-thread histograms stay small, with a progress bar) or one dask task per chunk of the
other dims."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ...recurrence.conventions import band_points
from ...recurrence.fan import neighbor_line_histograms
from ...recurrence.measures import rqa_measures
from ...recurrence.recurrence import line_histograms, unit_scale
from ...recurrence.times import corrected
from ..inputs import counter_bar, one_time_chunk
from .inputs import VAR, checked, problem
from .thresholds import eps_matrix

HIST = {"diagonal": "diagonal_lines", "vertical": "vertical_lines",
        "white": "white_vertical_lines"}


def measures(xa, ya, p, show):
    """(measures, histograms, eps used, eps method) of the series of xa (and ya), for the
    :class:`~.plan.Plan` ``p``."""
    kind, E, tau, nch, K, na, nwin = p.kind, p.E, p.tau, p.nch, p.K, p.na, p.nwin
    conv = p.convention
    xa, ya = checked(xa, ya, kind)
    if kind == "cross":
        xa, ya = ya, xa
    xa, ya, exps = unit_scale(xa, ya, nch)  # exact powers of 2: RQA is unit-free
    nbatch = xa.shape[0]
    # group matrices so that the per-thread histograms stay small (about 1e6 counters)
    # (a GPU runs every matrix of a group in one launch of each kernel: bigger groups)
    counters = 4e6 if p.backend == "gpu" else 1e6
    per_group = max(1, int(counters // (K * (na + 1))))
    pairs = [(b, s) for b in range(nbatch) for s in range(nwin)]
    groups = [pairs[i:i + per_group] for i in range(0, len(pairs), per_group)]
    names = p.measure_names
    meas = {m: np.empty((nbatch, nwin, K)) for m in names}
    hists = ({k: np.zeros((nbatch, K, na + 1), np.uint64) for k in HIST} if p.histograms
             else None)
    eps_used = np.empty((nbatch, nwin, K, nch))
    used_method = None
    # one bar over every matrix cell of every group, advanced within a group as the
    # kernel's rounds finish (a single long series too), shown after two seconds
    cells = [len(g) * na * (p.width_y - (E - 1) * tau) * K for g in groups]
    bar = counter_bar(show, "rqa", sum(cells), unit="cell", unit_scale=True)
    for group, group_cells in zip(groups, cells, strict=True):
        prob = problem(xa, ya, kind, E, tau, p.theiler, [(b, p.starts[w]) for b, w in group],
                       p.width_x, p.width_y)
        advance = _advance(bar, group_cells)
        if p.neighbors_per_state is not None:  # every row its own eps: one kernel
            h = neighbor_line_histograms(prob, p.neighbors_per_state, p.norm, p.theiler)
            e, times = np.full((len(group), 1, 1), np.nan), None
        else:
            e, used_method = eps_matrix(prob, p.xs, p.ys, p.norm, p.eps_method,
                                        exps[[b for b, _ in group]], backend=p.backend)
            h = line_histograms(prob, e, p.norm, p.backend, p.tile, progress=advance,
                                vertical_band=conv.vertical_band,
                                white_interior=conv.white_interior)
            h, times = corrected(prob, e, p.norm, h, p.border, p.recurrence_times)
        advance(1.0)
        n_points = (prob.matrices[:, 2] * prob.matrices[:, 5])[:, None]
        if conv.vertical_band and prob.symmetric:  # RR over the points outside the band
            n_points = n_points - np.array([[band_points(int(na_), prob.theiler)]
                                            for na_ in prob.matrices[:, 2]])
        m = rqa_measures(h["diagonal"], h["vertical"], h["white"], n_points, p.l_min, p.v_min,
                         p.w_min, recurrent=h["recurrent"], empty=conv.empty)
        m.update(times or {})
        for i, (b, w) in enumerate(group):
            for name in names:
                meas[name][b, w] = m[name][i]
            eps_used[b, w] = np.ldexp(e[i], exps[b])  # in the data's unit
            if p.histograms:
                for k in HIST:
                    hists[k][b] = h[k][i][:, : na + 1]
    bar.close()
    return meas, hists, eps_used, used_method


def lazy_measures(X, Y, p):
    """:func:`measures` over the chunks of the other dims of dask-backed X (and Y): dask arrays
    shaped as the in-memory ones (series flattened first)."""
    dim, batch_dims, nwin, K, nch, na = p.dim, p.batch_dims, p.nwin, p.K, p.nch, p.na
    histograms = p.histograms
    X = one_time_chunk(X, dim, "rqa").chunk({VAR: -1})
    args, core = [X], [[VAR, dim]]
    if Y is not None:
        ydim = Y.dims[-1]
        args.append(one_time_chunk(Y, ydim, "rqa", shown=dim).chunk({VAR: -1}))
        core.append([VAR, ydim])
    hist_names = list(HIST) if histograms else []
    names = p.measure_names

    def block(xa, ya=None):
        lead = xa.shape[:-2]
        meas, hists, eps_used, _ = measures(xa, ya, p, False)
        outs = ([meas[m] for m in names] + [hists[k] for k in hist_names] + [eps_used])
        return tuple(o.reshape(lead + o.shape[1:]) for o in outs)

    w, k, ln, c = "__rqa_window", "__rqa_k", "__rqa_length", "__rqa_channel"
    out_dims = [[w, k]] * len(names) + [[k, ln]] * len(hist_names) + [[w, k, c]]
    res = xr.apply_ufunc(
        block, *args, input_core_dims=core, output_core_dims=out_dims, dask="parallelized",
        output_dtypes=[np.float64] * len(names) + [np.uint64] * len(hist_names)
        + [np.float64], dask_gufunc_kwargs={"output_sizes": {w: nwin, k: K, c: nch} | (
            {ln: na + 1} if histograms else {})})
    nbatch = int(np.prod([X.sizes[d] for d in batch_dims], dtype=np.int64))
    flat = [r.transpose(*batch_dims, *dims).data.reshape((nbatch,) + r.shape[len(batch_dims):])
            for r, dims in zip(res, out_dims, strict=True)]
    meas = dict(zip(names, flat[:len(names)], strict=True))
    hists = (dict(zip(hist_names, flat[len(names):-1], strict=True)) if histograms
             else None)
    return meas, hists, flat[-1]


def _advance(bar, cells: int):
    """A callback moving ``bar`` to ``fraction`` of ``cells`` (monotone, never past it)."""
    state = {"done": 0}

    def step(fraction: float):
        now = int(round(min(max(fraction, 0.0), 1.0) * cells))
        if now > state["done"]:
            bar.update(now - state["done"])
            state["done"] = now

    return step
