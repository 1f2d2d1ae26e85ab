#!/usr/bin/env python
"""The cross-map stage of xedm.causal_network at large N, timed (issue 23, item 6).

    python benchmarks/network_cross.py                       # N = 300, L = 1000, CPU
    python benchmarks/network_cross.py --n 1000 --backend gpu
    python benchmarks/network_cross.py --profile             # cProfile of causal_network
    python benchmarks/network_cross.py --n 1000 --host-only  # the host's share alone

Times, warm (the second call in the process): ``library_E_xmap`` at the driver lags with
the surrogates and at the positive lags without (as ``network`` calls it), the surrogates
(``make_surrogates``), and the whole ``causal_network`` with the predictive conditioning
replaced by a cheap stub (so the cross-map stage dominates).

``--host-only``: the kernels that run on the GPU there (the choice of E, the neighbour
tables, the cross-map lookups) replaced by stubs that return arrays of the right shapes at
once, E set to 1..10 in turn; what is left is the host's Python and NumPy work around them,
which on an H100 took most of causal_network's time (the kernels about 0.1 s).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import xedm
import xedm.core.predictive as _pred
from xedm.core import ccm as _ccm
from xedm.core.network import library_E_xmap
from xedm.stats.surrogates import make_surrogates


def _stub(X, E, **kw):
    N = len(X)
    return (np.ones((N, N)), np.zeros((N, N)), np.zeros((N, N), bool), np.zeros(N, np.int64),
            np.zeros((N, N), np.int64))


def _stub_kernels():
    """Stubs for the device work (see the module doc), installed in the kernel registry."""
    from xedm import kernels

    r = np.random.default_rng(0)
    cache = {}

    def lookups(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok, out=None, order=None):
        key = (len(pred_ok[0]), np.shape(Yt)[1])  # (libraries, columns)
        if key not in cache:
            cache.clear()
            cache[key] = np.tanh(r.standard_normal(key) * 0.3)
        if out is not None:
            np.copyto(out, cache[key])
            return out
        return cache[key]

    def tables(X, fin, libs, E_set, tau, lib_mask, knn, excl, tgt_sets, backend,
               method="exact", res=None, key_order=False):
        nb, T = len(range(X.shape[0])[libs]), X.shape[1]
        z = np.zeros((len(E_set), nb, 1, 1), np.int64)
        return z, z.astype(float), np.arange(T), np.ones((len(E_set), nb, T), bool), None

    for name in ("xmap_skill_groups", "xmap_skill_groups_device"):
        kernels._LOADED[(name, "cpu")] = lookups
    _ccm._cross_tables = tables
    _ccm.choose_E = lambda X, **kw: 1 + np.arange(len(X)) % 10


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--length", type=int, default=1000)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--surrogates", type=int, default=29)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--host-only", action="store_true")
    a = ap.parse_args()
    if a.host_only:
        _stub_kernels()
    x = xedm.datasets.many_series(a.n, a.length, seed=0).x
    X = np.asarray(x.values, np.float64)
    E = _ccm.choose_E(X, E_tab=np.arange(1, 11), tau=1, knn=None, excl=0, backend=a.backend)
    S, _ = make_surrogates(X, "ebisuzaki", a.surrogates, 0)
    kw = dict(tau=1, knn=None, excl=0, backend=a.backend)
    _pred.predictive_tests = _stub
    for _rep in range(2):
        t0 = time.perf_counter()
        make_surrogates(X, "ebisuzaki", a.surrogates, 0)
        t1 = time.perf_counter()
        library_E_xmap(X, E=E, Tp=np.array([-2, -1, 0]), S=S, **kw)
        t2 = time.perf_counter()
        library_E_xmap(X, E=E, Tp=np.array([1, 2]), **kw)
        t3 = time.perf_counter()
        xedm.causal_network(x, seed=0, backend=a.backend, surrogates=a.surrogates)
        t4 = time.perf_counter()
    print(f"N={a.n} L={a.length} backend={a.backend} surrogates={a.surrogates} "
          f"distinct E={len(np.unique(E))}")
    print(f"make_surrogates {t1 - t0:.3f} s  library_E_xmap(neg, S) {t2 - t1:.3f} s  "
          f"library_E_xmap(pos) {t3 - t2:.3f} s  causal_network (stub) {t4 - t3:.3f} s")
    if a.profile:
        import cProfile
        import pstats

        pr = cProfile.Profile()
        pr.enable()
        xedm.causal_network(x, seed=0, backend=a.backend, surrogates=a.surrogates)
        pr.disable()
        pstats.Stats(pr).sort_stats("cumulative").print_stats(
            r"library_E_xmap|ccm.py.*xmap|null|_target_columns|_target_ok|unit_exponents|"
            r"make_surrogates|bh_qvalues|normal_p|lag_summary|xmap_skill_groups|knn_single|"
            r"choose_E|\(get\)")


if __name__ == "__main__":
    main()
