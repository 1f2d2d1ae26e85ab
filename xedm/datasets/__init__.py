"""Deterministic example systems for EDM, CCM and RQA: no network, no files.

Every generator returns labeled data with a ``time`` coordinate and its parameters in
``attrs``; the same arguments always give the same numbers. Iterated maps (logistic, tent,
Henon, coupled logistic, :func:`many_series`) use integer time steps; flows (Lorenz-63,
Lorenz-96, Rossler) are integrated with fixed-step fourth-order Runge-Kutta and use model
time (``dt * subsample`` per sample). The loops are numba-compiled (``cache=True``), so a
million points take well under a second once compiled.

Every argument is checked before anything is computed: numbers must be real and finite (a
TypeError or ValueError naming the parameter otherwise; bools are refused), integers
integral, and each within its documented range. One call may generate at most 2**31 float64
values (16 GiB: ``n`` times the number of variables or nodes; see :func:`many_series` and
:func:`sparse_network` for their counts); larger requests are a ValueError naming ``n``, not
an attempt to allocate them.

================================  =====================================================
:func:`logistic_map`              1-D DataArray ``x``
:func:`tent_map`                  1-D DataArray ``x``
:func:`henon`                     Dataset ``x``, ``y``
:func:`coupled_logistic`          Dataset ``x``, ``y`` with known driving strengths
:func:`lorenz63`                  Dataset ``x``, ``y``, ``z``
:func:`rossler`                   Dataset ``x``, ``y``, ``z``
:func:`lorenz96`                  DataArray ``(node, time)``
:func:`many_series`               Dataset: ``x`` ``(series, time)`` and the ground-truth
                                  ``adjacency`` / ``coupling`` ``(driver, driven)``
:func:`sparse_network`            Dataset: ``x`` ``(series, time)`` and the ground-truth
                                  edge list ``driver``, ``driven``, ``weight``, ``lag``
                                  (delays per link; 100,000 series)
:func:`ar1`                       DataArray ``(series, time)``: independent AR(1), the null
                                  case of significance tests
:func:`whole_brain`               Dataset: ``x`` ``(series, time)`` mixed sparsely from
                                  coupled Lorenz-63 sources (scaling runs; 100,000 series)
================================  =====================================================
"""

from __future__ import annotations

from .brain import whole_brain
from .flows import lorenz63, lorenz96, rossler
from .maps import coupled_logistic, henon, logistic_map, tent_map
from .network import many_series
from .noise import ar1
from .sparse import sparse_network

__all__ = [
    "ar1",
    "coupled_logistic",
    "henon",
    "logistic_map",
    "lorenz63",
    "lorenz96",
    "many_series",
    "rossler",
    "sparse_network",
    "tent_map",
    "whole_brain",
]
