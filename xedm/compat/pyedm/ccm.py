"""pyEDM's CCM on xedm, with pyEDM's random libraries."""

from __future__ import annotations

import pandas as pd

from ...labeled import xmap as _cross
from ._args import _E, _Data, _plot, _refuse, _tau


def CCM(dataFrame=None, columns="", target="", libSizes="", sample=30, E=0, Tp=0, knn=0,
        tau=-1, exclusionRadius=0, seed=None, embedded=False, validLib=(), includeData=False,
        noTime=False, mpMethod=None, parallel=True, sharedMB=0.01, verbose=False,
        showPlot=False, returnObject=False, legacy=False) -> pd.DataFrame:
    """pyEDM's ``CCM`` (:func:`xedm.ccm`): ``LibSize, col:target, target:col`` (``x:y`` is
    the skill of x's manifold at recovering y: y causes x).  The random libraries are
    xedm's (numpy's PCG64 with ``seed``): rho agrees with pyEDM's where a library size uses
    every library point, and statistically elsewhere."""
    _refuse(returnObject=returnObject, includeData=includeData, legacy=legacy,
            embedded=embedded)
    d = _Data(dataFrame, columns, target, noTime)
    if len(validLib):
        raise ValueError("validLib is not supported by CCM here: select the rows first")
    col, tgt = d.cols[0], d.target
    if len(d.cols) != 1 or col == tgt:
        raise ValueError("CCM here takes one column and a different target, e.g. "
                         "columns='x', target='y'")
    sizes = [int(s) for s in (libSizes.split() if isinstance(libSizes, str) else libSizes)]
    if len(sizes) == 3 and sizes[2] < sizes[1]:  # pyEDM's "start stop increment"
        sizes = list(range(sizes[0], sizes[1] + 1, sizes[2]))
    if not sizes:
        raise ValueError("libSizes is required, e.g. libSizes='10 80 10'")
    res = _cross.ccm(d.ds, [col, tgt], lib_sizes=sizes, E=_E(E, False, d.cols), samples=sample,
                     seed=seed, tau=_tau(tau), Tp=Tp, exclusion_radius=exclusionRadius,
                     knn=knn or None, time_dim=d.tdim, progress=False)
    rho = res.rho
    out = pd.DataFrame({"LibSize": sizes,
                        f"{col}:{tgt}": rho.sel(library=col, target=tgt).values,
                        f"{tgt}:{col}": rho.sel(library=tgt, target=col).values})
    if showPlot:
        _plot(out, "LibSize", f"E = {E}", "Library Size", "CCM ρ")
    return out
