"""Prediction and skill kernels on the GPU (CuPy): twins of :mod:`xedm.kernels.predict.cpu`
and :mod:`xedm.kernels.predict.cpu_skill`.

Imported only for ``backend="gpu"``.  Same signatures as the CPU kernels; NumPy (or CuPy)
arrays in, NumPy arrays out::

    simplex_predict(idx, dist, ok, y, k_list, Tp) -> (B, P) predictions
    simplex_predict_var(idx, dist, ok, y, k_list, Tp) -> (B, P) predictions, (B, P) variances
    simplex_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi,
                  y, Tp) -> (nE, B, P) predictions
    skill_rows(observed (R, N), predicted (R, N)) -> rho, mae, rmse (R,) float64, n (R,) int64

``simplex_sweep`` is the exact kNN pass of :mod:`xedm.kernels.knn.gpu` over every E (the
tables stay on the device) followed by ``simplex_predict`` per E: the same neighbours in the
same order as the CPU's fused sweep.  Predictions and skills are sums of the same terms in
the same order as on the CPU (no fused multiply-add); they differ from the CPU's by the
rounding of ``exp`` only (CUDA's double ``exp`` is within 1 ulp), i.e. to about 1e-15
relative.
"""

from __future__ import annotations

import numpy as np

from ..knn.gpu import _module, knn_device
from .constants import D_MIN, SWEEP_MAX_E

_PREDICT = r"""
// one row's simplex sums over its first k usable neighbours (exp(-d/dmin) weights):
// m neighbours used, the last table entry read, dmin, the weight sum and the weighted sum
__device__ __forceinline__ void simplex_row(
    const long long* __restrict__ idx, const double* __restrict__ dist,
    const unsigned char* __restrict__ ok, const double* __restrict__ y, const long long r,
    const long long b, const long long k, const long long depth, const long long T,
    const long long Tp, long long& m, long long& last, double& dmin, double& wsum,
    double& acc)
{
    m = 0; last = -1; dmin = 1.0; wsum = 0.0; acc = 0.0;
    for (long long j = 0; j < depth; ++j) {
        const long long q = idx[r * depth + j];
        if (q < 0) break;
        if (!ok[b * T + q]) continue;
        const double d = dist[r * depth + j];
        if (m == 0) dmin = fmax(d, """ + repr(D_MIN) + r""");
        const double w = exp(-d / dmin);
        wsum = wsum + w;
        acc = acc + w * y[b * T + q + Tp];
        m += 1;
        last = j;
        if (m == k) break;
    }
}

extern "C" __global__ void simplex_predict(
    const long long* __restrict__ idx, const double* __restrict__ dist,
    const unsigned char* __restrict__ ok, const double* __restrict__ y,
    const long long* __restrict__ k_list, const long long B, const long long P,
    const long long depth, const long long T, const long long Tp, double* __restrict__ pred)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= B * P) return;
    const long long b = r / P;
    long long m, last;
    double dmin, wsum, acc;
    simplex_row(idx, dist, ok, y, r, b, k_list[b], depth, T, Tp, m, last, dmin, wsum, acc);
    pred[r] = m > 0 ? acc / wsum : CUDART_NAN;
}

// simplex_predict plus the weighted variance of the targets about the prediction
// (pyEDM's Pred_Variance): a second pass over the same entries
extern "C" __global__ void simplex_predict_var(
    const long long* __restrict__ idx, const double* __restrict__ dist,
    const unsigned char* __restrict__ ok, const double* __restrict__ y,
    const long long* __restrict__ k_list, const long long B, const long long P,
    const long long depth, const long long T, const long long Tp, double* __restrict__ pred,
    double* __restrict__ var)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= B * P) return;
    const long long b = r / P;
    long long m, last;
    double dmin, wsum, acc;
    simplex_row(idx, dist, ok, y, r, b, k_list[b], depth, T, Tp, m, last, dmin, wsum, acc);
    if (m == 0) { pred[r] = CUDART_NAN; var[r] = CUDART_NAN; return; }
    const double p = acc / wsum;
    double sq = 0.0;
    for (long long j = 0; j <= last; ++j) {
        const long long q = idx[r * depth + j];
        if (!ok[b * T + q]) continue;
        const double w = exp(-dist[r * depth + j] / dmin);
        const double e = y[b * T + q + Tp] - p;
        sq = sq + w * (e * e);
    }
    pred[r] = p;
    var[r] = sq / wsum;
}

__device__ __forceinline__ int pow2_exponent(double m) {
    if (m > 0.0 && m < CUDART_INF) { int e; frexp(m, &e); return e > -1021 ? e : -1021; }
    return 0;
}

__device__ __forceinline__ bool fin(double v) { return isfinite(v); }

extern "C" __global__ void skill_rows(
    const double* __restrict__ o, const double* __restrict__ p, const long long R,
    const long long N, double* __restrict__ rho, double* __restrict__ mae,
    double* __restrict__ rmse, long long* __restrict__ n_out)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const double* a_ = o + r * N;
    const double* b_ = p + r * N;
    long long n = 0;
    double mo = 0.0, mp = 0.0;
    for (long long j = 0; j < N; ++j) {
        const double a = a_[j], b = b_[j];
        if (fin(a) && fin(b)) { n += 1; mo = fmax(mo, fabs(a)); mp = fmax(mp, fabs(b)); }
    }
    n_out[r] = n;
    rho[r] = CUDART_NAN; mae[r] = CUDART_NAN; rmse[r] = CUDART_NAN;
    if (n == 0) return;
    const int ea = pow2_exponent(mo), eb = pow2_exponent(mp);
    const int ee = ea > eb ? ea : eb;
    const double fa = ldexp(1.0, -ea), fb = ldexp(1.0, -eb), fe = ldexp(1.0, -ee);
    double so = 0.0, sp = 0.0;
    for (long long j = 0; j < N; ++j) {
        const double a = a_[j], b = b_[j];
        if (fin(a) && fin(b)) { so = so + a * fa; sp = sp + b * fb; }
    }
    const double mo2 = so / n, mp2 = sp / n;
    double sxy = 0.0, sxx = 0.0, syy = 0.0, sae = 0.0, sse = 0.0;
    for (long long j = 0; j < N; ++j) {
        const double a = a_[j], b = b_[j];
        if (fin(a) && fin(b)) {
            const double da = a * fa - mo2, db = b * fb - mp2;
            sxy = sxy + da * db; sxx = sxx + da * da; syy = syy + db * db;
            const double e = b * fe - a * fe;
            sae = sae + fabs(e); sse = sse + e * e;
        }
    }
    mae[r] = ldexp(sae / n, ee);
    rmse[r] = ldexp(sqrt(sse / n), ee);
    const double denom = sqrt(sxx) * sqrt(syy);
    if (n >= 3 && denom > 0) rho[r] = sxy / denom;
}
"""


def _kernel(name):
    return _module(("predict",), "#include <math_constants.h>\n" + _PREDICT).get_function(name)


def _launch(name, idx, dist, ok, y, k_list, Tp, n_out):
    """Run table kernel ``name`` (simplex_predict or simplex_predict_var): ``n_out`` CuPy
    (B, P) outputs."""
    import cupy as cp

    idx = cp.ascontiguousarray(cp.asarray(idx, dtype=cp.int64))
    dist = cp.ascontiguousarray(cp.asarray(dist, dtype=cp.float64))
    ok = cp.ascontiguousarray(cp.asarray(ok).astype(cp.uint8, copy=False))
    y = cp.ascontiguousarray(cp.asarray(y, dtype=cp.float64))
    k_list = cp.ascontiguousarray(cp.asarray(k_list, dtype=cp.int64))
    B, P, depth = idx.shape
    T = y.shape[-1]
    outs = tuple(cp.empty((B, P), cp.float64) for _ in range(n_out))
    if B * P:
        i64 = np.int64
        _kernel(name)(((B * P + 255) // 256,), (256,),
                      (idx, dist, ok, y, k_list, i64(B), i64(P), i64(depth), i64(T), i64(Tp),
                       *outs))
    return outs


def predict_device(idx, dist, ok, y, k_list, Tp):
    """:func:`simplex_predict` on the device: a CuPy (B, P) array."""
    return _launch("simplex_predict", idx, dist, ok, y, k_list, Tp, 1)[0]


def simplex_predict_var(idx, dist, ok, y, k_list, Tp):
    """Simplex predictions and their variances (see :func:`xedm.kernels.predict.cpu.
    simplex_predict_var`): idx/dist (B, P, depth), ok/y (B, T), k_list (B,) -> two (B, P)."""
    pred, var = _launch("simplex_predict_var", idx, dist, ok, y, k_list, Tp, 2)
    return pred.get(), var.get()


def simplex_predict(idx, dist, ok, y, k_list, Tp):
    """Simplex projection from neighbour tables (see :func:`xedm.kernels.predict.cpu.
    simplex_predict`): idx/dist (B, P, depth), ok/y (B, T), k_list (B,) -> (B, P)."""
    return predict_device(idx, dist, ok, y, k_list, Tp).get()


def simplex_sweep(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl, q_lo, q_hi,
                  y, Tp):
    """Simplex predictions (nE, B, P) for every E of an ascending list: the kNN tables of
    every E in one pass on the device, then the simplex weights per E (see
    :func:`xedm.kernels.predict.cpu.simplex_sweep`).  NaN where ``pred_ok`` is False or no
    neighbour exists."""
    import cupy as cp

    E_list = np.asarray(E_list, np.int64)
    k_list = np.asarray(k_list, np.int64)
    if len(E_list) > SWEEP_MAX_E:
        raise ValueError("simplex_sweep takes at most 64 values of E per call")
    idx, dist = knn_device(Xpad, pad, lib_ok, pred_t, pred_ok, E_list, k_list, tau, excl,
                           q_lo, q_hi)
    lib = cp.asarray(lib_ok)
    yd = cp.asarray(y, dtype=cp.float64)
    B = idx.shape[1]
    pred = cp.empty(idx.shape[:3], cp.float64)
    for ie in range(len(E_list)):
        pred[ie] = predict_device(idx[ie], dist[ie], lib[ie], yd,
                                  cp.full(B, int(k_list[ie]), cp.int64), Tp)
    return pred.get()


def skill_rows(o, p):
    """Skill per row (see :mod:`xedm.kernels.predict.cpu_skill`): rho, mae, rmse, n of (R, N)
    rows."""
    return tuple(a.get() for a in skill_rows_device(o, p))


def skill_rows_device(o, p):
    """:func:`skill_rows` on the device: CuPy arrays, no wait for the result."""
    import cupy as cp

    o = cp.ascontiguousarray(cp.asarray(o, dtype=cp.float64))
    p = cp.ascontiguousarray(cp.asarray(p, dtype=cp.float64))
    R, N = o.shape
    rho = cp.empty(R, cp.float64)
    mae = cp.empty(R, cp.float64)
    rmse = cp.empty(R, cp.float64)
    n = cp.empty(R, cp.int64)
    if R:
        _kernel("skill_rows")(((R + 127) // 128,), (128,),
                              (o, p, np.int64(R), np.int64(N), rho, mae, rmse, n))
    return rho, mae, rmse, n
