"""Recurrence quantification on plain arrays: exact line histograms and measures.

``recurrence`` (matrix-free histograms, CPU and GPU), ``measures`` (RQA measures from the
histograms), ``threshold`` (eps for a recurrence rate).  The xarray functions live in
:mod:`xedm.labeled.rqa`; the public entry point is :func:`xedm.rqa`.  (The subpackage is not
named ``rqa`` so that importing it never shadows that function.)
"""
