"""Recurrence quantification on plain arrays: exact line histograms and measures.

``recurrence`` (matrix-free histograms, CPU and GPU), ``measures`` (RQA measures from the
histograms), ``threshold`` (eps for a recurrence rate).  The xarray functions live in
:mod:`xedm.labeled.rqa`.

Importing this subpackage binds ``xedm.rqa`` to it, which would hide the public function
``xedm.rqa(...)``; the module is therefore callable and forwards to
:func:`xedm.labeled.rqa.rqa`, so ``xedm.rqa(data, E=..., eps=...)`` works whatever was
imported first.
"""

from __future__ import annotations

import sys
import types


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from ..labeled.rqa import rqa

        return rqa(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
