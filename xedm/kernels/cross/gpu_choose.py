"""The choice of E of the GPU's all-pairs cross map (CuPy), which keeps its neighbour tables
for the cross map's lookups (:mod:`xedm.kernels.cross.gpu_xmap`).

Imported only for ``backend="gpu"``::

    choose_tables(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, depth_list, k_list, tau, excl,
                  q_lo, q_hi, self_ok, y, obs) -> rho (nE, B), tables [(idx, dist)] per E
    KeptTables(E_tab, depth, N, P): the device memory in which they are kept

``choose_tables`` is one batch of the choice of E with its tables kept
(:func:`xedm.core.ccm.xmap` on the GPU): the exact kNN pass of every E
(:func:`xedm.kernels.knn.gpu.knn_device`) over a library that serves both the choice and the
cross map, the leave-one-out simplex skill (Tp = 1) of every E from those tables (library
points where ``self_ok``, the first ``k_list[ie]`` of them), and the tables cut to
``depth_list`` entries, indices as int32, still on the device.
"""

from __future__ import annotations

import numpy as np

from ..device import upload
from ..knn.gpu import knn_device


def choose_tables(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, depth_list, k_list, tau, excl,
                  q_lo, q_hi, self_ok, y, obs, tables=True):
    """One batch of the choice of E with its tables (see the module docstring).

    ``lib_ok`` (nE, B, T): the tables' library; ``self_ok`` (B, T): the library points of the
    choice (t + 1 inside the data, target finite); ``y`` (B, T) the series (NaN as 0),
    ``obs`` (B, P) the observed value at each row's t + 1.  Returns rho (nE, B) and, per E,
    (idx int32, dist) (B, P, depth_list[ie]) (None with ``tables=False``: the skill only),
    all CuPy arrays: nothing waits for the device, so the host prepares the next batch while
    this one runs.
    """
    import cupy as cp

    from ..predict.gpu import predict_device, skill_rows_device

    E_list = np.asarray(E_list)
    idx, dist = knn_device(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, depth_list, tau, excl,
                           q_lo, q_hi)  # one sorted pass per run of E (knn.gpu.E_SPLIT)
    parts = [(idx[i], dist[i]) for i in range(len(E_list))]
    nE = len(E_list)
    B, P = parts[0][0].shape[:2]
    ok = upload(lib_ok) & upload(self_ok)[None]
    yd = cp.asarray(y, dtype=cp.float64)
    pred = cp.empty((nE, B, P), cp.float64)
    for ie in range(nE):
        pred[ie] = predict_device(parts[ie][0], parts[ie][1], ok[ie], yd,
                                  cp.full(B, int(k_list[ie]), cp.int64), 1)
    o = cp.broadcast_to(cp.asarray(obs, dtype=cp.float64)[None], pred.shape)
    rho = skill_rows_device(o.reshape(nE * B, P), pred.reshape(nE * B, P))[0].reshape(nE, B)
    if not tables:
        return rho, None
    tabs = [(parts[ie][0][:, :, :int(d)].astype(cp.int32),
             cp.ascontiguousarray(parts[ie][1][:, :, :int(d)]))
            for ie, d in enumerate(depth_list)]
    return rho, tabs


class KeptTables:
    """The device memory in which xmap's choice of E keeps its tables for the cross map
    (``xedm.core.ccm._choose_E_kept``): per E of ``E_tab`` (idx int32, dist) (N, P, depth),
    ``pred_ok`` (nE, N, P) uint8, and each batch's rho (nE, B) until :meth:`rho` reads them
    back once.  ``free_bytes()`` is the device's free memory, for the caller's budget."""

    def __init__(self, E_tab, depth, N: int, P: int):
        import cupy as cp

        self.tables = {int(e): (cp.empty((N, P, int(d)), cp.int32), cp.empty((N, P, int(d))))
                       for e, d in zip(E_tab, depth, strict=True)}
        self.pred_ok = cp.empty((len(E_tab), N, P), cp.uint8)
        self._rhos = []

    @staticmethod
    def free_bytes() -> int:
        import cupy as cp

        return cp.cuda.Device().mem_info[0]

    def put(self, sl: slice, E_tab, tabs, pred_ok, rho) -> None:
        """One batch of series ``sl`` from :func:`choose_tables`: its tables (one per E of
        ``E_tab``), its prediction points (host) and its rho (device, kept there)."""

        self._rhos.append(rho)
        for e, (i, d) in zip(E_tab, tabs, strict=True):
            self.tables[int(e)][0][sl] = i
            self.tables[int(e)][1][sl] = d
        self.pred_ok[:, sl] = upload(pred_ok)

    def rho(self):
        """rho (nE, N) of every batch, read back from the device (NumPy)."""
        import cupy as cp

        return cp.concatenate(self._rhos, axis=1).get()

    def keep(self, E_used) -> None:
        """Free the tables of every E not in ``E_used``."""
        for e in list(self.tables):
            if e not in E_used:
                del self.tables[e]
