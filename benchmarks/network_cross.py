#!/usr/bin/env python
"""The cross-map stage of xedm.causal_network at large N, timed (issue 23, item 6).

    python benchmarks/network_cross.py                       # N = 300, L = 1000, CPU
    python benchmarks/network_cross.py --n 1000 --backend gpu
    python benchmarks/network_cross.py --profile             # cProfile of causal_network

Times, warm (the second call in the process): ``library_E_xmap`` at the driver lags with
the surrogates and at the positive lags without (as ``network`` calls it), the surrogates
(``make_surrogates``), and the whole ``causal_network`` with the predictive conditioning
replaced by a cheap stub (so the cross-map stage dominates).
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
    return np.ones((N, N)), np.zeros((N, N)), np.zeros((N, N), bool), np.zeros(N, np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--length", type=int, default=1000)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--surrogates", type=int, default=29)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
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
        pstats.Stats(pr).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
