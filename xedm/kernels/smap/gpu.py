"""S-map on the GPU (CuPy): the twin of :func:`xedm.kernels.cpu_predict.smap_predict`.

Imported only for ``backend="gpu"``.  Same signature and semantics::

    smap_predict(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
                 idx, dist, use_table, alpha, want_sv, xexp, yexp)
        -> pred (nth, B, P), coef (nth, B, P, D+1), sv (nth, B, P, D+1)

Every problem (series, prediction row, theta) goes to the QR solver of
:mod:`xedm.kernels.gpu_smap_qr`: a tall-skinny Householder QR, one warp per problem, and the
minimum-norm SVD solve from the triangular factor, batched on the device.  The
normal-equation solver of :mod:`xedm.kernels.smap_normal` (the CPU's first stage,
:mod:`xedm.kernels.cpu_smap`) can run first on CuPy arrays (``NORMAL_FIRST``), but it is off:
on an H100 the QR solver alone took 74 ms against 188 ms with it at L = 10,000, E = 20,
theta = 2 on smooth Lorenz-63 (every problem rejected by the normal equations), and 50 ms
against 63 ms on the same data with noise (every problem accepted).
"""

from __future__ import annotations

import numpy as np

from .gpu_knn import _module
from .gpu_smap_qr import smap_qr

_DIST = r"""
#include <math_constants.h>

extern "C" __global__ void smap_dist(
    const double* __restrict__ X, const long long C, const long long W, const long long pad,
    const long long b, const long long E, const long long tau,
    const long long* __restrict__ pt, const long long* __restrict__ libq,
    const long long rows, const long long n, const long long excl, double* __restrict__ D)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= rows * n) return;
    const long long i = t / n, j = t - i * n;
    const long long p = pt[i], q = libq[j];
    if (q - p <= excl && p - q <= excl) { D[t] = CUDART_INF; return; }
    const double* xb = X + b * C * W + pad;
    double s = 0.0;
    for (long long c = 0; c < C; ++c)
        for (long long e = 0; e < E; ++e) {
            const double diff = xb[c * W + p - e * tau] - xb[c * W + q - e * tau];
            s = s + diff * diff;
        }
    D[t] = sqrt(s);
}
"""


NORMAL_FIRST = False  # the normal-equation solver before the QR solver (measured slower)


def smap_predict(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
                 idx, dist, use_table, alpha, want_sv, xexp, yexp):
    """S-map predictions, coefficients and singular values for every theta (see
    :func:`xedm.kernels.cpu_predict.smap_predict`); NumPy arrays out.

    The QR solver (:func:`xedm.kernels.gpu_smap_qr.smap_qr`) for every problem; with
    ``NORMAL_FIRST`` and every library point a neighbour, the normal-equation solver of
    :mod:`xedm.kernels.smap_normal` on CuPy arrays first (distances by a CUDA kernel, the
    normal equations of a block of rows as one cuBLAS product, batched Cholesky and
    refinement), the QR solver for the problems it rejects."""
    if use_table or want_sv or not NORMAL_FIRST:
        return smap_qr(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo,
                       q_hi, idx, dist, use_table, alpha, want_sv, xexp, yexp)
    import cupy as cp

    from .smap_normal import predict

    Xpad = np.ascontiguousarray(Xpad, np.float64)
    B, C, W = Xpad.shape
    P = len(pred_t)
    thetas = np.asarray(thetas, np.float64)
    i64 = np.int64
    dX = cp.asarray(Xpad)
    kern = _module(("smap_dist",), _DIST).get_function("smap_dist")

    def distances(b, pt, libq, dev):
        rows, n = len(pt), len(libq)
        D = cp.empty((rows, n), cp.float64)
        kern(((rows * n + 255) // 256,), (256,),
             (dX, i64(C), i64(W), i64(pad), i64(b), i64(E), i64(tau),
              cp.asarray(np.asarray(pt, np.int64)), dev["libq"], i64(rows), i64(n), i64(excl),
              D))
        return D

    pred, coef, bad = predict(cp, distances, Xpad, pad, lib_ok, np.asarray(pred_t, np.int64),
                              np.asarray(pred_ok, bool), y, int(E), int(tau), int(Tp), thetas,
                              int(excl), np.asarray(q_lo, np.int64), np.asarray(q_hi, np.int64),
                              float(alpha), np.asarray(xexp, np.int64),
                              np.asarray(yexp, np.int64))
    sv = np.full((len(thetas), B, P, 0), np.nan)
    if bad.any():
        p2, c2, _ = smap_qr(Xpad, pad, lib_ok, pred_t, bad, y, E, tau, Tp, thetas, excl, q_lo,
                            q_hi, idx, dist, use_table, alpha, want_sv, xexp, yexp)
        pred[:, bad] = p2[:, bad]
        coef[:, bad] = c2[:, bad]
    return pred, coef, sv
