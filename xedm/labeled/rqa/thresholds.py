"""RQA's thresholds: each channel's eps or recurrence-rate request (one number or a sweep) and
the eps of every matrix in the scaled unit."""

from __future__ import annotations

import numpy as np

from ...recurrence.recurrence import eps_in_unit
from ...recurrence.threshold import eps_for_recurrence_rate


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


def threshold_specs(eps, recurrence_rate, joint_eps, joint_recurrence_rate, kind):
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


def eps_matrix(prob, xs, ys, norm, eps_method, exps, backend="cpu"):
    """eps ``(nmat, K, nch)`` for every matrix of ``prob`` (series scaled by ``unit_scale``,
    exponents ``exps`` (nmat, nch)), in the scaled unit: ``K = Kx`` when the joint series
    follows the data (``ys is None``), else ``Kx * Ky`` (x-major, the outer product);
    ``backend="gpu"``: sampled distances computed on the GPU (the same eps)."""
    nmat = prob.matrices.shape[0]
    rates = [t.values for t in (xs, ys) if t is not None and t.is_rate]
    r, method = (None, None)
    if rates:
        r, method = eps_for_recurrence_rate(prob, np.concatenate(rates), norm, eps_method,
                                            backend=backend)
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



def check_eps_method(eps_method):
    if eps_method not in ("auto", "exact", "sample"):
        raise ValueError(f"eps_method={eps_method!r} is invalid; choose 'auto', 'exact' or "
                         "'sample'")

