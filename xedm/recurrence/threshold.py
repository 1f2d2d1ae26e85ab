"""The threshold eps that gives a recurrence rate.

For a matrix of ``P = rows x columns`` points and a rate ``rr``, eps is the distance of rank
``m = round(rr * P)`` (0-based) among all ``P`` pairwise distances, line of identity
included, so that exactly ``m`` distances are ``< eps`` when there are no ties.  Joint
recurrence picks one eps per channel, each for the same rate (as pyunicorn does).

* ``method="exact"`` (the default while the distances fit in ``exact_limit`` values):
  every distance is computed and the rank is selected with ``numpy.partition``.  A self
  recurrence needs only the upper triangle: its zeros on the diagonal and each upper
  distance twice make up the whole sorted list.
* ``method="sample"``: ``n_sample`` pairs drawn uniformly from the matrix with
  ``numpy.random.default_rng(seed)``; eps is the same rank in the sample.  The measured RR
  is then close to, not equal to, ``rr``; the result reports it.  With ``backend="gpu"`` the
  sampled distances are computed on the GPU (the same pairs, the same float64 sums in the
  same order, so the same eps to the last bit), which spares the CPU kernel (and its
  compilation on a machine where it is not cached).
"""

from __future__ import annotations

import numpy as np

from .recurrence import NORMS, RecurrenceProblem


def _rank(rr: float, P: int) -> int:
    return int(min(max(round(rr * P), 0), P - 1))


def eps_for_recurrence_rate(prob: RecurrenceProblem, rates, norm: str = "euclidean",
                            method: str = "auto", exact_limit: int = 20_000_000,
                            n_sample: int = 2_000_000, seed: int = 0, backend: str = "cpu"):
    """eps of shape ``(nmat, K, nch)`` reaching each rate in ``rates`` for every matrix.

    Parameters
    ----------
    prob : RecurrenceProblem
    rates : sequence of float in (0, 1)
    norm : {"euclidean", "maximum", "manhattan"}
    method : {"auto", "exact", "sample"}
        ``auto`` is exact while the distances of one matrix fit in ``exact_limit`` values.
    backend : {"cpu", "gpu"}
        Where the sampled distances are computed (the exact method always runs on the CPU).

    Returns
    -------
    eps : ndarray (nmat, K, nch)
    method : str
        The method used.

    Examples
    --------
    >>> import numpy as np
    >>> prob = RecurrenceProblem.single(np.sin(np.arange(300) * 0.1), E=2)
    >>> eps, how = eps_for_recurrence_rate(prob, [0.1])
    >>> how, eps.shape
    ('exact', (1, 1, 1))
    """
    from ..kernels import get_kernel

    rates = np.atleast_1d(np.asarray(rates, np.float64))
    if rates.ndim != 1 or not np.all((rates > 0) & (rates < 1)):
        raise ValueError(f"recurrence_rate={rates.tolist()} is invalid; each must lie in (0, 1)")
    code = NORMS.index(norm)
    nmat = prob.matrices.shape[0]
    out = np.empty((nmat, rates.size, prob.nch))
    X = np.ascontiguousarray(prob.X, np.float64)
    Y = X if prob.Y is prob.X else np.ascontiguousarray(prob.Y, np.float64)
    used = method
    for m in range(nmat):
        row = np.zeros((1, 8), np.int64)
        row[0, :6] = prob.matrices[m]
        na, nb = int(row[0, 2]), int(row[0, 5])
        P = na * nb
        n_dist = na * (na - 1) // 2 if prob.symmetric else P
        how = method
        if how == "auto":
            how = "exact" if n_dist <= exact_limit else "sample"
        if how not in ("exact", "sample"):
            raise ValueError(f"method={method!r} is invalid; choose 'auto', 'exact' or 'sample'")
        used = how
        if how == "exact" and prob.symmetric:
            d = np.empty((prob.nch, n_dist))
            get_kernel("rqa_upper_distances", "cpu")(X, prob.cvar, prob.coff, prob.cchan,
                                                     prob.nch, code, row, d)
            for k, rr in enumerate(rates):
                idx = max((_rank(rr, P) - na) // 2, 0)
                for ch in range(prob.nch):
                    out[m, k, ch] = np.partition(d[ch], idx)[idx] if n_dist else 0.0
            continue
        if how == "exact":
            pi, pj = np.divmod(np.arange(P, dtype=np.int64), nb)
        else:
            rng = np.random.default_rng(seed)
            pi = rng.integers(0, na, n_sample, dtype=np.int64)
            pj = rng.integers(0, nb, n_sample, dtype=np.int64)
        if how == "sample" and backend == "gpu":
            from ..kernels.rqa.gpu_sample import pair_distances

            d = pair_distances(X, Y, prob.cvar, prob.coff, prob.cchan, prob.nch, code, row,
                               pi, pj)
        else:
            d = np.empty((pi.size, prob.nch))
            get_kernel("rqa_pair_distances", "cpu")(X, Y, prob.cvar, prob.coff, prob.cchan,
                                                    prob.nch, code, row, pi, pj, d)
        for k, rr in enumerate(rates):
            idx = _rank(rr, pi.size)
            for ch in range(prob.nch):
                out[m, k, ch] = np.partition(d[:, ch], idx)[idx]
    # eps = 0 would make nothing recurrent; the smallest positive float keeps exact zeros
    out = np.where(out > 0, out, np.finfo(np.float64).tiny)
    return out, used
