"""The GPU QR solver's algorithm on NumPy (runs without a GPU): the chunked ("tall-skinny")
Householder reflections of xedm/kernels/smap/gpu.py's ``smap_tsqr`` kernel, written out
slowly here (``tsqr_reference``), and the batched finishing ``_finish`` (NumPy form of the
code the GPU runs on CuPy), against the CPU's QR solver (xedm/kernels/smap/cpu_qr.py).

Tolerances: the factor is backward stable (R^T R = A^T A to 1e-13 of |A|^2); predictions
within 1e-9 of the largest |prediction| of the CPU's, also on smooth Lorenz-63 at E = 20,
where every local fit is numerically rank deficient.  There the coefficients along the
directions of the smallest kept singular values (about 1e-12 of the largest, just above
the cut eps * rows * s_max) are fixed by rounding only: any other summation order, even a
whole-matrix Householder QR in NumPy, moves them by about 1e-6 of the largest coefficient,
so coefficients are compared in the well-determined subspace (singular values above 1e-6 of
the largest) to 1e-9, and everywhere to 1e-3.  tests/test_edm_gpu.py compares the CUDA
kernel with ``tsqr_reference`` and the CPU on the same cases.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from test_smap_normal import kernel_args
from test_ties import runs_series

import xedm
from xedm.kernels.smap.cpu_qr import smap_qr as cpu_qr
from xedm.kernels.smap.gpu import _finish


def tsqr_reference(A, chunk):
    """The kernel's factor of A (rows, nc + 1) (the target last): chunks of ``chunk`` rows,
    each merged into R (nc, nc + 1) by nc Householder reflections of the stacked [R; chunk]
    (reflection j: row j of R and the chunk; the dot products as x . column - al R_jc)."""
    rows, ncol = A.shape
    nc = ncol - 1
    R = np.zeros((nc, ncol))
    for s in range(0, rows, chunk):
        X = A[s:s + chunk].copy()
        for j in range(nc):
            Rjj = R[j, j]
            D = X[:, j] @ X[:, j:] + Rjj * R[j, j:]
            nrm2 = D[0]
            if nrm2 == 0.0:
                assert not X[:, j].any() and Rjj == 0.0
                continue
            assert 2.0**-900 < nrm2 < 2.0**900  # else the kernel flags the problem
            norm = np.sqrt(nrm2)
            al = -norm if Rjj >= 0 else norm
            v0 = Rjj - al
            vnorm2 = v0 * v0 + (nrm2 - Rjj * Rjj)
            if not vnorm2 > 0.0:
                R[j, j] = al
                continue
            f = 2.0 * (D - al * R[j, j:]) / vnorm2
            R[j, j + 1:] -= f[1:] * v0
            R[j, j] = al
            X[:, j + 1:] -= np.outer(X[:, j], f[1:])
    return R


def design(args, b, pi, it, zero_rows=False):
    """Problem (b, pi, theta it) of S-map kernel arguments (every library point a neighbour):
    the weighted rows [w, w x, w y] (scaled units), the prediction point's [1, x].  With
    ``zero_rows``, a row for every candidate time (zero where it is no neighbour), as the
    kernel's chunks see them."""
    (Xpad, pad, lib_ok, pred_t, _ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi, *_r) = args
    p = pred_t[pi]
    C = Xpad.shape[1]
    cand = np.arange(q_lo[b], q_hi[b])
    valid = lib_ok[b, cand] & (np.abs(cand - p) > excl)
    qs = cand[valid]

    def state(t):
        return np.concatenate([Xpad[b, c, pad + t - np.arange(E) * tau] for c in range(C)])

    Xq = np.stack([state(q) for q in qs])
    xp = state(p)
    d = np.sqrt(((Xq - xp) ** 2).sum(axis=1))
    w = np.exp(-thetas[it] * (d - d.min()) / d.mean()) if thetas[it] else np.ones(len(d))
    A = np.column_stack([w, w[:, None] * Xq, w * y[b, qs + Tp]])
    if zero_rows:
        Z = np.zeros((len(cand), A.shape[1]))
        Z[valid] = A
        A = Z
    return A, np.r_[1.0, xp]


def solve_sample(args, pis, chunk):
    """Predictions and coefficients (caller's units) of rows ``pis`` of series 0, theta 0, by
    tsqr_reference and _finish; also the right singular vectors and values of each
    column-scaled design (for the subspace comparison)."""
    xexp, yexp = int(args[18][0]), int(args[19][0])
    Rs, rhs, rows, xps, Vs = [], [], [], [], []
    for pi in pis:
        A, xp = design(args, 0, pi, 0)
        R = tsqr_reference(A, chunk)
        # backward stable: R^T R = A^T A to rounding
        G = A[:, :-1].T @ A[:, :-1]
        assert np.abs(R[:, :-1].T @ R[:, :-1] - G).max() <= 1e-13 * np.abs(A).max() ** 2 * len(A)
        Rs.append(R[:, :-1])
        rhs.append(R[:, -1])
        rows.append(len(A))
        xps.append(xp)
        cn = np.linalg.norm(A[:, :-1], axis=0)
        _, s, Vt = np.linalg.svd(A[:, :-1] / cn, full_matrices=False)
        Vs.append((s, Vt, cn))
    nc = len(xps[0])
    sol = _finish(np, np.array(Rs), np.array(rhs), np.array(rows), nc)
    pred = np.ldexp((sol * np.array(xps)).sum(axis=1), yexp)
    coef = np.ldexp(sol, yexp - np.where(np.arange(nc) > 0, xexp, 0))
    return pred, coef, Vs


def close_in_subspace(coef, ref, Vs, xexp, yexp, rtol=1e-9, s_rel=1e-6):
    """In the solver's column-scaled coordinates z = cn * sol: |V_k^T (z - z_ref)| within
    rtol of |z_ref|'s largest entry, for the right singular vectors with s_k >= s_rel s_max."""
    nc = coef.shape[1]
    shift = yexp - np.where(np.arange(nc) > 0, xexp, 0)
    for c, r, (s, Vt, cn) in zip(coef, ref, Vs, strict=True):
        dz = np.ldexp(c - r, -shift) * cn
        zr = np.ldexp(r, -shift) * cn
        k = s >= s_rel * s[0]
        assert k.sum() >= 3
        np.testing.assert_array_less(np.abs(Vt[k] @ dz), rtol * np.abs(zr).max())


def lorenz_args(L, E, **kw):
    return kernel_args(xedm.datasets.lorenz63(L).x, E=E, **kw)


@pytest.mark.parametrize("chunk", [32, 64, 96])
def test_tsqr_reference_rank_deficient_lorenz(chunk):
    args = lorenz_args(400, 20, theta=2.0)
    pc, cc, _ = cpu_qr(*args)
    pis = np.flatnonzero(args[4][0])[::57]
    pred, coef, Vs = solve_sample(args, pis, chunk)
    s = np.array([v[0] for v in Vs])
    assert (s[:, -1] < 1e-12 * s[:, 0]).all()  # numerically rank deficient, every one
    scale = np.nanmax(np.abs(pc))
    np.testing.assert_allclose(pred, pc[0, 0, pis], rtol=0, atol=1e-9 * scale)
    cscale = np.nanmax(np.abs(cc))
    np.testing.assert_allclose(coef, cc[0, 0, pis], rtol=0, atol=1e-3 * cscale)
    close_in_subspace(coef, cc[0, 0, pis], Vs, int(args[18][0]), int(args[19][0]))


def test_tsqr_reference_ties_and_gaps():
    # constant runs: exactly rank-deficient designs (zero columns after reflections)
    x = runs_series(3, 260, 10, 1, 3)[0]
    for kw in (dict(E=3, theta=2.0), dict(E=5, theta=0.0)):
        args = kernel_args(xr.DataArray(x, dims="time"), **kw)
        pc, cc, _ = cpu_qr(*args)
        pis = np.flatnonzero(args[4][0])[::23]
        pred, coef, _ = solve_sample(args, pis, 32)
        np.testing.assert_allclose(pred, pc[0, 0, pis], rtol=0,
                                   atol=1e-9 * np.nanmax(np.abs(pc)))
        np.testing.assert_allclose(coef, cc[0, 0, pis], rtol=0,
                                   atol=1e-9 * np.nanmax(np.abs(cc)))


def test_finish_can_fail():
    # the comparison above is not vacuous: dropping a reflection's update breaks it
    args = lorenz_args(300, 4, theta=2.0)
    pc, _, _ = cpu_qr(*args)
    pi = np.flatnonzero(args[4][0])[10]
    A, xp = design(args, 0, pi, 0)
    R = tsqr_reference(A, 32)
    R[1, 3] *= 1 + 1e-6
    sol = _finish(np, R[None, :, :-1], R[None, :, -1], np.array([len(A)]), len(xp))
    got = np.ldexp(sol[0] @ xp, int(args[19][0]))
    assert abs(got - pc[0, 0, pi]) > 1e-9 * np.nanmax(np.abs(pc))
