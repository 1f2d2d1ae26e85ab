"""RQA's result: the measures, histograms and thresholds found as one Dataset over the other
dims, the window times and the threshold sweeps, with the parameters in ``attrs``."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .compute import HIST

DOC_MEASURES = {
    "RR": "recurrence rate", "DET": "determinism", "L": "mean diagonal line length",
    "L_max": "longest diagonal line", "DIV": "divergence (1 / L_max)",
    "ENTR": "Shannon entropy of diagonal line lengths", "LAM": "laminarity",
    "TT": "trapping time", "V_max": "longest vertical line",
    "V_ENTR": "Shannon entropy of vertical line lengths",
    "W": "mean white vertical line length", "W_max": "longest white vertical line",
    "W_ENTR": "Shannon entropy of white vertical line lengths",
    "T1": "mean recurrence time of the first type (every recurrent point)",
    "T2": "mean recurrence time of the second type (first point of each vertical line)",
    "RTE": "recurrence time entropy (white vertical lines off the border)",
}


def assemble(X, p, meas, hists, eps_used, lazy, used_method):
    """The result Dataset of :func:`rqa` from the arrays of :func:`~.compute.measures` (or
    :func:`~.compute.lazy_measures`) for the :class:`~.plan.Plan` ``p``."""
    dim, index, batch_dims, starts, window = p.dim, p.index, p.batch_dims, p.starts, p.window
    width_x, xs, ys, kind = p.width_x, p.xs, p.ys, p.kind
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
        out[name] = xr.Variable(dims, _take(arr, 2), {"long_name": DOC_MEASURES[name]})
    if hists is not None:
        hdims = [d for d in dims if d != dim] + ["line_length"]
        for k, var in HIST.items():
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
    attrs = {"xedm_function": "rqa", "kind": kind, "E": p.E, "tau": p.tau,
             "norm": p.norm,
             "theiler": p.theiler if kind != "cross" else 0, "l_min": p.l_min,
             "v_min": p.v_min, "w_min": p.w_min, "backend": p.backend,
             "n_states": int(p.n_states), "border": p.border,
             "convention": p.convention.name}
    if p.neighbors_per_state is not None:
        attrs["neighbors_per_state"] = int(p.neighbors_per_state)
    elif not xs.is_list:
        attrs[xs.name] = float(xs.values[0])
        if xs.is_rate and "eps" in found and found["eps"][0].size == 1 and not lazy:
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
        if "joint_eps" in found and found["joint_eps"][0].size == 1 and not lazy:
            attrs["joint_eps"] = float(found["joint_eps"][0].ravel()[0])
    if used_method is not None:
        attrs["eps_method"] = used_method
    if window is not None:
        attrs.update(window=int(window), step=int(p.step))
    return xr.Dataset(out, coords=coords, attrs=attrs)
