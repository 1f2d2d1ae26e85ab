"""The sorted kNN kernel's keys and row order (:mod:`xedm.kernels.knn.gpu`), on NumPy or
CuPy arrays: the tests' NumPy twin of the kernel (tests/test_knn_sorted.py) computes them
with the same code.

Each state gets two keys, weighted sums of its first lags along the two directions in which
the series' states spread most; any weights bound the distance (Cauchy-Schwarz), so how
well they are chosen changes the work, never the tables.
"""

from __future__ import annotations

import numpy as np

from ..device import array_module


def sorted_keys(X, pad: int, m: int, tau: int):
    """The sorted kernel's two keys of every state of ``X`` (B, C, W) (NumPy or CuPy, padded
    by ``pad``): ``key_t = sum_e w_e x_0[t - e tau]`` over the first ``m`` lags of column 0,
    with ``w`` (per series, unit length) the leading eigenvector of the lags' autocovariance
    (Toeplitz) matrix: the direction in which the states spread most, so that the keys of
    near states are near and those of far states far; the second key the same with the
    second eigenvector (zero for m = 1).  The plain lag sum, the former key,
    pruned nothing on a series whose sum over m lags is nearly constant (an oscillation of
    period m: E = 4 and 8 took 0.13 and 0.50 s against 0.04 s for E = 3 at N = 1,000, L =
    10,000 on an H200).

    Returns (keyt, keyt2 (B, W - pad), m_lags, m2, delta, delta2): any weights give a
    rigorous bound,
    ``|key_p - key_q| <= ||w|| * ||v_p - v_q|| <= sqrt(m_lags * d2(p, q))`` (Cauchy-Schwarz,
    m_lags >= max ||w||^2), and ``delta`` bounds each key's rounding (m products and
    additions of terms at most |w_e| * maxabs: ``m * ||w||_1 * maxabs * 2^-52``).
    """
    xp = array_module(X)
    B, C, W = X.shape
    T = W - pad
    xs = X[:, 0, pad:]
    if m <= 1 or T <= 1:
        w1 = xp.zeros((B, max(m, 1)))
        w1[:, 0] = 1.0
        w2 = xp.zeros_like(w1)
    else:
        xc = xs - xs.mean(axis=1, keepdims=True)
        lags = min(m, T)
        ac = xp.stack([(xc[:, lag:] * xc[:, :T - lag]).sum(axis=1) for lag in range(lags)]
                      + [xp.zeros(B)] * (m - lags), axis=1)
        i = xp.arange(m)
        toeplitz = ac[:, xp.abs(i[:, None] - i[None, :])]  # (B, m, m)
        w1, w2 = _leading_pair(toeplitz, xp)
    # the five scalars of the bound (from the device in one copy)
    maxabs, s1, s2, a1, a2 = xp.stack(
        [xp.abs(X[:, 0]).max() if X.size else xp.zeros(()),
         *((w ** 2).sum(axis=1).max() for w in (w1, w2)),
         *(xp.abs(w).sum(axis=1).max() for w in (w1, w2))]).tolist() if B else [0.0] * 5
    if xp is not np and B and T:  # both keys in one kernel, the same operations in order
        out = _lag_keys_device(X, pad, m, tau, w1, w2)
    else:
        out = []
        for w in (w1, w2):
            key = xs * w[:, :1]
            for e in range(1, m):
                key = key + w[:, e:e + 1] * X[:, 0, pad - e * tau:W - e * tau]
            out.append(xp.ascontiguousarray(key))
    # unit weights: ||w||^2 is 1 but for rounding; at least 1 (a zero second key, m = 1, then
    # passes every candidate: 0 * inf would make the reach of an empty list NaN)
    m_lags, m2 = (max(1.0, v) if B else 1.0 for v in (s1, s2))
    delta, delta2 = (m * v * maxabs * 2.0**-52 if B else 0.0 for v in (a1, a2))
    return out[0], out[1], m_lags, m2, delta, delta2


def _leading_pair(A, xp, iters: int = 24):
    """The leading two eigenvectors (unit; zero where none) of a stack of symmetric
    positive semi-definite matrices A (B, m, m) (NumPy or CuPy, the module ``xp``), by
    power iteration from the flat and the linear vectors (the two first of an
    autocovariance's Toeplitz matrix, centrosymmetric and skew-symmetric), where A is:
    numpy's eigh took 50 ms for 10,000 5 x 5 matrices.  Only how well the keys prune
    depends on how close they come.  On the device one kernel does every step
    (:data:`_PAIR_SOURCE`); CuPy's array calls were some 400 launches, 13 ms of an 0.18 s
    cross map at N = 1,000, L = 10,000 on an H200."""
    B, m, _ = A.shape
    if xp is not np and m <= _PAIR_MAX_M:
        return _leading_pair_device(A, iters)
    out = []
    for start in (np.ones(m), np.linspace(-1.0, 1.0, m)):
        v = xp.asarray(np.broadcast_to(start / np.linalg.norm(start), (B, m)).copy())
        for _ in range(iters):
            if out:  # the second: kept orthogonal to the first
                v = v - (v * out[0]).sum(axis=1, keepdims=True) * out[0]
            v = xp.matmul(A, v[:, :, None])[:, :, 0]
            n = xp.sqrt((v * v).sum(axis=1, keepdims=True))
            v = xp.where(n > 0, v / xp.where(n > 0, n, 1.0), 0.0)
        out.append(v)
    w1 = xp.where(xp.abs(out[0]).sum(axis=1, keepdims=True) > 0, out[0], 1.0 / np.sqrt(m))
    w1 = w1 * xp.where(w1.sum(axis=1, keepdims=True) < 0, -1.0, 1.0)  # one sign: determinism
    return w1, out[1]


def row_group(P: int) -> int:
    """Rows per run of :func:`row_order`: about sqrt(32 P), 32 times a power of two, so that a
    warp's rows take as small a share of the first key's range (group / P) as of the
    second's within their run (32 / group)."""
    runs = np.sqrt(max(P, 1) / 32.0)  # a power of two: whole bitonic sorts on the device
    return 32 * 2 ** max(0, int(round(np.log2(max(runs, 1.0)))))


def row_order(k1, k2, group: int | None = None):
    """The sorted kernel's order of the prediction rows (B, P) of keys ``k1``, ``k2``: by
    ``k1``, then within each run of ``group`` rows (:func:`row_group`) by ``k2``, so that a
    warp's 32 rows are near in both keys (NumPy or CuPy; int32)."""
    xp = array_module(k1)
    p1 = _argsort_rows(k1, xp)
    return runs_order(p1, xp.take_along_axis(k2, p1, axis=1), group)


def runs_order(p1, k2s, group: int | None = None):
    """:func:`row_order` from the rows' order by the first key, ``p1`` (B, P), and their
    second keys in that order, ``k2s`` (B, P)."""
    xp = array_module(k2s)
    B, P = k2s.shape
    group = row_group(P) if group is None else int(group)
    nb = -(-P // group)
    extra = nb * group - P
    if extra:  # the last run padded with rows of key +inf, which sort last and are cut
        k2s = xp.concatenate([k2s, xp.full((B, extra), xp.inf)], axis=1)
        p1 = xp.concatenate([p1, xp.zeros((B, extra), p1.dtype)], axis=1)
    o = _argsort_rows(k2s.reshape(B * nb, group), xp).reshape(B, nb, group)
    perm = xp.take_along_axis(p1.reshape(B, nb, group), o, axis=2).reshape(B, nb * group)
    return xp.ascontiguousarray(perm[:, :P].astype(xp.int32))


def _argsort_rows(a, xp):
    """Each row of ``a`` (R, n) in ascending order (NaN last): on the device sorted in
    shared memory (:func:`xedm.kernels.knn.gpu_sort.argsort_rows`)."""
    if xp is np:
        return np.argsort(a, axis=1)
    from .gpu_sort import argsort_rows

    return argsort_rows(a)


_PAIR_MAX_M = 64  # the device kernel's largest matrix: two rows of it per lane of a warp

# _leading_pair's steps for one matrix per warp (lane i holds rows i and i + 32): the same
# starts, orthogonalisation, products and normalisation, sums in another order (warp
# shuffles), so the vectors agree with the array code's to rounding
_PAIR_SOURCE = r"""
__device__ double warp_sum(double x)
{
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

extern "C" __global__ void leading_pair(const double* __restrict__ A, const long long B,
                                        const int m, const int iters,
                                        double* __restrict__ w1, double* __restrict__ w2)
{
    __shared__ double v[64];
    const long long b = blockIdx.x;
    const int lane = threadIdx.x;
    const double* Ab = A + b * m * m;
    double r1[2] = {0.0, 0.0}, s[2];
    for (int pass = 0; pass < 2; ++pass) {
        for (int h = 0; h < 2; ++h) {
            const int i = lane + 32 * h;
            s[h] = i >= m ? 0.0 : pass == 0 ? 1.0
                 : (m > 1 ? -1.0 + 2.0 * (double)i / (double)(m - 1) : -1.0);
        }
        double n = sqrt(warp_sum(s[0] * s[0] + s[1] * s[1]));
        s[0] = s[0] / n; s[1] = s[1] / n;
        for (int it = 0; it < iters; ++it) {
            if (pass == 1) {
                const double d = warp_sum(s[0] * r1[0] + s[1] * r1[1]);
                s[0] = s[0] - d * r1[0]; s[1] = s[1] - d * r1[1];
            }
            v[lane] = s[0]; v[lane + 32] = s[1];
            __syncwarp();
            double t[2] = {0.0, 0.0};
            for (int h = 0; h < 2; ++h) {
                const int i = lane + 32 * h;
                if (i < m)
                    for (int j = 0; j < m; ++j) t[h] = t[h] + Ab[i * m + j] * v[j];
            }
            __syncwarp();
            n = sqrt(warp_sum(t[0] * t[0] + t[1] * t[1]));
            s[0] = n > 0.0 ? t[0] / n : 0.0; s[1] = n > 0.0 ? t[1] / n : 0.0;
        }
        if (pass == 0) { r1[0] = s[0]; r1[1] = s[1]; }
    }
    // the first: 1 / sqrt(m) each where none; one sign (determinism)
    double a1[2] = {r1[0], r1[1]};
    if (warp_sum(fabs(r1[0]) + fabs(r1[1])) == 0.0)
        for (int h = 0; h < 2; ++h) a1[h] = (lane + 32 * h) < m ? 1.0 / sqrt((double)m) : 0.0;
    const double sg = warp_sum(a1[0] + a1[1]) < 0.0 ? -1.0 : 1.0;
    for (int h = 0; h < 2; ++h) {
        const int i = lane + 32 * h;
        if (i < m) { w1[b * m + i] = a1[h] * sg; w2[b * m + i] = s[h]; }
    }
}
"""


def _leading_pair_device(A, iters: int):
    """:func:`_leading_pair` of a CuPy stack A (B, m <= 64, m): one warp per matrix."""
    import cupy as cp

    from .gpu_compile import _module

    B, m, _ = A.shape
    A = cp.ascontiguousarray(A, dtype=cp.float64)
    w1 = cp.empty((B, m))
    w2 = cp.empty((B, m))
    if B:
        kern = _module(("leading_pair",), _PAIR_SOURCE).get_function("leading_pair")
        kern((B,), (32,), (A, np.int64(B), np.int32(m), np.int32(iters), w1, w2))
    return w1, w2


_KEYS_SOURCE = r"""
// sorted_keys' two keys of every state: w_0 x[t] + w_1 x[t - tau] + ... in that order,
// products and sums rounded one by one (no fused multiply-add), as CuPy's array calls
extern "C" __global__ void lag_keys(const double* __restrict__ X, const long long B,
                                    const long long CW, const long long pad,
                                    const long long T, const int m, const long long tau,
                                    const double* __restrict__ w1,
                                    const double* __restrict__ w2, double* __restrict__ k1,
                                    double* __restrict__ k2)
{
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= B * T) return;
    const long long b = e / T, t = e % T;
    const double* x = X + b * CW + pad + t;
    const double v = x[0];
    double a1 = v * w1[b * m], a2 = v * w2[b * m];
    for (int l = 1; l < m; ++l) {
        const double u = x[-(long long)l * tau];
        a1 = a1 + w1[b * m + l] * u;
        a2 = a2 + w2[b * m + l] * u;
    }
    k1[e] = a1;
    k2[e] = a2;
}
"""


def _lag_keys_device(X, pad: int, m: int, tau: int, w1, w2):
    """:func:`sorted_keys`' two keys of the CuPy array X (B, C, W), column 0: one kernel."""
    import cupy as cp

    from .gpu_compile import _module

    X = cp.ascontiguousarray(X, dtype=cp.float64)
    B, C, W = X.shape
    T = W - pad
    k1 = cp.empty((B, T))
    k2 = cp.empty((B, T))
    kern = _module(("lag_keys",), _KEYS_SOURCE).get_function("lag_keys")
    n = B * T
    kern((-(-n // 256),), (256,),
         (X, np.int64(B), np.int64(C * W), np.int64(pad), np.int64(T), np.int32(m),
          np.int64(tau), cp.ascontiguousarray(w1, dtype=cp.float64),
          cp.ascontiguousarray(w2, dtype=cp.float64), k1, k2))
    return [k1, k2]
