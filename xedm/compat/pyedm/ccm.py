"""pyEDM's CCM on xedm, with pyEDM's random libraries."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.validate import check_int
from ...labeled import xmap as _cross
from ._args import _E, _Data, _plot, _refuse, _tau


def CCM(dataFrame=None, columns="", target="", libSizes="", sample=30, E=0, Tp=0, knn=0,
        tau=-1, exclusionRadius=0, seed=None, embedded=False, validLib=(), includeData=False,
        noTime=False, mpMethod=None, parallel=True, sharedMB=0.01, verbose=False,
        showPlot=False, returnObject=False, legacy=False) -> pd.DataFrame:
    """pyEDM's ``CCM`` (:func:`xedm.ccm` with ``sampling="pyedm"``): ``LibSize, col:target,
    target:col`` (``x:y`` is the skill of x's manifold at recovering y: y causes x), with
    ``includeData`` also each one's variance over the samples (``x:y_var``, ``y:x_var``).

    The random libraries are pyEDM's for the same ``seed`` (``numpy.random.default_rng(seed)``
    for each size and direction), so the numbers equal pyEDM's; without a seed both draw
    one at random.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> t = np.arange(1, 201)
    >>> df = pd.DataFrame({"Time": t, "x": np.sin(0.3 * t), "y": np.cos(0.21 * t)})
    >>> CCM(df, columns="x", target="y", libSizes="20 100 40", sample=10, E=2,
    ...     seed=1).columns.tolist()
    ['LibSize', 'x:y', 'y:x']
    """
    _refuse(returnObject=returnObject, legacy=legacy, embedded=embedded)
    d = _Data(dataFrame, columns, target, noTime)
    if len(validLib):
        raise ValueError("validLib is not supported by CCM here: select the rows first")
    col, tgt = d.cols[0], d.target
    if len(d.cols) != 1 or col == tgt:
        raise ValueError("CCM here takes one column and a different target, e.g. "
                         "columns='x', target='y'")
    try:
        sizes = [check_int("libSizes", int(s) if isinstance(s, str) else s, 1)
                 for s in (libSizes.split() if isinstance(libSizes, str) else libSizes)]
    except (ValueError, TypeError):
        raise ValueError(f"libSizes={libSizes!r}: give library sizes >= 1, e.g. "
                         "libSizes='10 80 10' (start stop increment) or [20, 50, 100]") from None
    if len(sizes) == 3 and sizes[2] < sizes[1]:  # pyEDM's "start stop increment"
        sizes = list(range(sizes[0], sizes[1] + 1, sizes[2]))
    if not sizes:
        raise ValueError("libSizes is required, e.g. libSizes='10 80 10'")
    if max(sizes) > len(d.index):  # as pyEDM's CCM Validate()
        raise ValueError(f"libSizes={libSizes!r}: the largest size, {max(sizes)}, exceeds the "
                         f"data's {len(d.index)} rows; use sizes up to {len(d.index)}")
    res = _cross.ccm(d.ds, [col, tgt], lib_sizes=sizes, E=_E(E, False, d.cols), samples=sample,
                     seed=seed, tau=_tau(tau), Tp=Tp, exclusion_radius=exclusionRadius,
                     knn=knn or None, time_dim=d.tdim, progress=False, sampling="pyedm",
                     keep_samples=bool(includeData))
    pairs = {f"{col}:{tgt}": (col, tgt), f"{tgt}:{col}": (tgt, col)}
    out = pd.DataFrame({"LibSize": sizes, **{k: res.rho.sel(library=a, target=b).values
                                             for k, (a, b) in pairs.items()}})
    if includeData:  # pyEDM's variance of the samples' rho about their mean
        for k, (a, b) in pairs.items():
            r = res.rho_sample.sel(library=a, target=b).transpose("lib_size", "sample").values
            out[f"{k}_var"] = np.nanvar(r, axis=1)
    if showPlot:
        _plot(out, "LibSize", f"E = {E}", "Library Size", "CCM ρ")
    return out
