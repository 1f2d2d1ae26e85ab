"""RQA's plan: the parameter checks of :func:`~xedm.labeled.rqa.rqa`, its windows and
the sizes of the work, gathered in a :class:`Plan`, and the refusal of calls too big to run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import validate as v
from ...core.validate import check_bool
from ...memory import check_device_memory, check_memory, check_work
from ...recurrence.measures import MEASURES
from ...recurrence.times import BORDERS, TIMES
from ..inputs import time_index
from .inputs import VAR, too_short
from .thresholds import check_eps_method, threshold_specs


@dataclass
class Plan:
    """Every checked parameter of one :func:`rqa` call and the sizes derived from them.

    ``width_x`` / ``width_y`` are the widths of the matrices' rows and columns (swapped for
    cross recurrence: pyrqa's orientation); ``n_states`` the states of one window of the data;
    ``na`` the rows of a matrix; ``K`` the thresholds (every eps / recurrence_rate
    combination); ``nch`` the channels (2 for joint recurrence).
    """

    dim: str
    kind: str
    E: int
    tau: int
    norm: str
    theiler: int
    l_min: int
    v_min: int
    w_min: int
    xs: object
    ys: object
    eps_method: str
    tile: int | None
    backend: str
    index: object
    window: int | None
    step: int | None
    starts: list
    width_x: int
    width_y: int
    n_states: int
    histograms: bool
    batch_dims: list
    nbatch: int
    border: str = "keep"
    recurrence_times: bool = False
    neighbors_per_state: int | None = None
    convention: object = None  # a xedm.recurrence.conventions.Convention

    @property
    def measure_names(self) -> tuple:
        return MEASURES + (TIMES if self.recurrence_times else ())

    @property
    def na(self) -> int:
        return self.width_x - (self.E - 1) * self.tau

    @property
    def nb(self) -> int:
        return self.width_y - (self.E - 1) * self.tau

    @property
    def nwin(self) -> int:
        return len(self.starts)

    @property
    def K(self) -> int:
        return self.xs.size * (self.ys.size if self.ys is not None else 1)

    @property
    def nch(self) -> int:
        return 2 if self.kind == "joint" else 1


def make_plan(X, Y, dim, kind, E, tau, norm, *, theiler, l_min, v_min, w_min, eps,
              recurrence_rate, joint_eps, joint_recurrence_rate, eps_method, tile, backend,
              window, step, histograms, border="keep", recurrence_times=False,
              neighbors_per_state=None, convention=None) -> Plan:
    """Check the parameters of :func:`rqa` (after :func:`~.inputs.prepare`), in its order, and
    refuse a call too big to run."""
    from ...kernels import resolve_backend

    theiler = v.check_int("theiler", theiler, 0)
    for name, value in (("l_min", l_min), ("v_min", v_min), ("w_min", w_min)):
        v.check_int(name, value, 1)
    fan = _check_fan(neighbors_per_state, eps, recurrence_rate, kind, backend)
    xs, ys = threshold_specs(1.0 if fan else eps, recurrence_rate, joint_eps,
                             joint_recurrence_rate, kind)
    check_eps_method(eps_method)
    if tile is not None:
        tile = v.check_int("tile", tile, 1)
    if convention is None:
        from ...recurrence.conventions import get_convention

        convention = get_convention("xedm")
    crp = convention.vertical_band or convention.white_interior
    asked = backend
    backend = "cpu" if fan or crp else resolve_backend(backend)
    if border not in BORDERS:
        raise ValueError(f"border={border!r} is invalid; choose 'keep' (every line, as pyrqa "
                         "and pyunicorn) or 'drop' (leave out the lines touching the border)")
    recurrence_times = check_bool("recurrence_times", recurrence_times)
    _check_convention(convention, fan, asked, border, recurrence_times)
    if fan and (border != "keep" or recurrence_times):
        raise ValueError("neighbors_per_state= gives every state its own eps; border='drop' "
                         "and recurrence_times=True need one eps per matrix: use eps= or "
                         "recurrence_rate= for them")
    index = time_index(X, dim)
    T = X.sizes[dim]
    Ty = Y.sizes[Y.dims[-1]] if Y is not None else T
    window, step, starts, width_x, width_y = _windows(T, Ty, E, tau, kind, window, step)
    n_states = width_x - (E - 1) * tau
    if kind != "cross" and theiler >= n_states:
        where = f"window={window}" if window is not None else "the series"
        raise ValueError(f"theiler={theiler} leaves no diagonal line: {where} gives {n_states} "
                         f"states and the Theiler window drops every pair with |i - j| < "
                         f"theiler; use theiler < {n_states}")
    if fan is not None and fan >= n_states:
        raise ValueError(f"neighbors_per_state={fan} must be smaller than the number of "
                         f"states ({n_states}): each row holds that many recurrent points")
    histograms = window is None if histograms is None else check_bool("histograms", histograms)
    batch_dims = [d for d in X.dims if d not in (VAR, dim)]
    if kind == "cross":
        # pyrqa's orientation: rows are the states of `other`, columns those of `data`,
        # so a vertical line is a run of consecutive `other` states near one `data` state
        width_x, width_y = width_y, width_x
    p = Plan(dim, kind, E, tau, norm, theiler, l_min, v_min, w_min, xs, ys, eps_method, tile,
             backend, index, window, step, starts, width_x, width_y, n_states, histograms,
             batch_dims, int(np.prod([X.sizes[d] for d in batch_dims], dtype=np.int64)),
             border, recurrence_times, fan, convention)
    check_cost(p.nbatch, p.nwin, p.na, p.nb, p.K, p.nch, histograms, backend)
    return p


def _check_convention(conv, fan, backend, border, recurrence_times):
    """The CRP toolbox's convention changes the vertical lines, which only the CPU's
    histogram kernels follow, and has its own white lines and matrix for the times."""
    if not (conv.vertical_band or conv.white_interior):
        return
    clash = ("neighbors_per_state=" if fan is not None else
             "border='drop'" if border == "drop" else
             "recurrence_times=True" if recurrence_times else
             "backend='gpu'" if backend == "gpu" else None)
    if clash:
        raise ValueError(f"convention={conv.name!r} does not combine with {clash}: its "
                         "Theiler band and white lines are computed by the CPU histograms "
                         "only; leave that argument out or use convention='xedm'")


def _check_fan(k, eps, recurrence_rate, kind, backend):
    """neighbors_per_state checked (None when not given)."""
    if k is None:
        return None
    k = v.check_int("neighbors_per_state", k, 1)
    if eps is not None or recurrence_rate is not None:
        raise ValueError("neighbors_per_state= is the threshold (each state's own eps): give "
                         "it instead of eps= / recurrence_rate=, not with them")
    if kind != "self":
        raise ValueError("neighbors_per_state= is for self recurrence (no other=, joint=)")
    if backend == "gpu":
        raise ValueError("neighbors_per_state= runs on the CPU: use backend='cpu' or 'auto'")
    return k


def _windows(T, Ty, E, tau, kind, window, step):
    """(window, step, window starts, width_x, width_y), checked: one window of the whole
    series without ``window``."""
    if window is None:
        if step is not None:
            raise ValueError("step= needs window=")
        too_short(T - (E - 1) * tau, E, tau, f"the series of {T} points")
        too_short(Ty - (E - 1) * tau, E, tau, f"the {kind} series of {Ty} points")
        return window, step, [0], T, Ty
    window = v.check_int("window", window, 2)
    if kind == "cross" and Ty != T:
        raise ValueError("windowed cross recurrence needs two series of the same length")
    if window > T:
        raise ValueError(f"window={window} is longer than the series ({T} points)")
    too_short(window - (E - 1) * tau, E, tau, f"window={window}")
    step = v.check_int("step", step if step is not None else max(window // 10, 1), 1)
    return window, step, list(range(0, T - window + 1, step)), window, window


def check_cost(nbatch: int, nwin: int, na: int, nb: int, K: int, nch: int,
               histograms: bool, backend: str = "cpu") -> None:
    """Refuse a call whose histograms (three per threshold: one per matrix group, one per
    thread, the result's) or measures cannot fit in memory (the device's too on a GPU), or
    whose cells x thresholds take longer than the work limit on ``backend``; ``K``
    thresholds (every eps / recurrence_rate combination)."""
    import os

    copies = 3 + (os.cpu_count() or 1) + (nbatch if histograms else 0)
    need = 24.0 * K * (na + 1) * copies + 8.0 * (len(MEASURES) + nch) * nbatch * nwin * K
    nmat = nbatch * nwin
    what = f"rqa with {K} thresholds on {nmat} matri{'x' if nmat == 1 else 'ces'} of {na} x {nb}"
    what += " states"
    fix = "give fewer eps / recurrence_rate values (or use window= on shorter pieces)"
    check_memory(need, what, fix)
    if backend == "gpu":  # a group's histograms and the states on the device
        from ...kernels.device import memory_info

        try:
            info = memory_info()
        except Exception:  # noqa: BLE001  (no CuPy, no driver: no figure)
            info = None
        check_device_memory(24.0 * K * (na + 1) * (3 + nbatch) + 8.0 * nch * (na + nb) * nbatch,
                            what, fix, info)
    check_work(float(nbatch) * nwin * na * nb * (K * nch + E_DIST_OPS), what, fix,
               backend=backend)


E_DIST_OPS = 4  # a distance's few operations per cell besides its threshold comparisons
