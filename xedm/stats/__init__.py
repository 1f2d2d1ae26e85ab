"""Significance of cross maps: surrogate series, p-values with FDR control, convergence.

Plain arrays only (the labeled entry points are :func:`xedm.surrogates` and the
``surrogates=`` option of :func:`xedm.ccm` and :func:`xedm.xmap`).
"""
