"""The all-pairs cross map on the GPU (CuPy): lookups of many targets through the neighbour
tables of many library series (the choice of E that keeps its tables for them:
:mod:`xedm.kernels.cross.gpu_choose`).

Imported only for ``backend="gpu"``::

    xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok) -> rho (nL, nT)
    xmap_skill_groups(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok, out=None,
                      order=None, rows=None) -> rho (nL, nT)
    key_order(T, k_list) -> whether the tables' rows should come in the states' key order
    to_device(a) -> a C-contiguous CuPy array

``xmap_skill`` is the twin of :func:`xedm.kernels.cross.cpu_xmap.xmap_skill`; ``xmap_skill_groups``
serves targets of several E in one launch: the columns of ``Yt`` are grouped (``col_group``,
non-decreasing), group g looked up through ``tables[g]`` (idx/dist (nL, P, depth_g)) with k =
``k_list[g]`` and rows ``pred_ok[g]`` (nL, P); on the CPU it is one ``xmap_skill`` per group
(:func:`xedm.kernels.cross.cpu_xmap.xmap_skill_groups`).  One launch over every (library, target)
pair keeps the device busy whatever the groups' sizes (one launch per group of a few targets
left most of an H100 idle: 7.9 s of 17.8 s at N = 1,000, L = 10,000 with E chosen).

Per row and target the first k table entries whose target value is finite are used; Pearson
is accumulated on the fly (no prediction matrix is stored).  A first kernel finds, per
(group, library, row), the first k entries whose target index is inside the data and their
simplex weights (shared by every target of the group); a second gives one thread to each
(library, target) pair: a pass over the rows for the target's mean, then one for the shifted
Pearson sums.  A thread reads the same row entries as the other threads of its block
(broadcast) and its own target column (coalesced across the block).  A target with a
non-finite value among a row's shared entries scans that row's table itself, as the CPU
does.  The sums are those of the CPU in the same order, without fused multiply-adds; rho
differs from the CPU's by the rounding of ``exp`` only (about 1e-15).  Tables whose rows come
in the states' key order (``rows``: the sorted kNN kernel leaves them so where one pass of one
slice makes them, :func:`xedm.kernels.knn.gpu.knn_device`) are looked up in that order:
neighbouring rows then share most of their entries, which the L1 cache serves (at
N = 1,000, L = 10,000, E = 5 on an H200 a block of 32 rows has 79 distinct entries against
187 in time order, and the tiled lookups take 51.6 ms against 65.2 ms); the sums over rows
then run in that order, and rho differs from the CPU's by about 1e-14.
"""

from __future__ import annotations

import numpy as np

from ..device import download, prefault, upload
from ..knn.gpu import _module
from ..predict.constants import D_MIN
from .gpu_ytile import _PEARSON, ytile, ytile_fits

_SOURCE = _PEARSON + r"""

// per (library, row) of one group: the first k entries whose target index q + Tp lies inside
// the data, as q + Tp and their simplex weights; their count and the weights' sum
extern "C" __global__ void xmap_rows(
    const int* __restrict__ idx, const double* __restrict__ dist, const long long R,
    const long long depth, const long long k, const long long T, const long long Tp,
    int* __restrict__ qk, double* __restrict__ wk, int* __restrict__ mk,
    double* __restrict__ wsk)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    long long m = 0;
    double dmin = """ + repr(D_MIN) + r""";
    for (long long j = 0; j < depth; ++j) {
        const long long q = idx[r * depth + j];
        if (q < 0) break;
        if (q + Tp < 0 || q + Tp >= T) continue;
        const double d = dist[r * depth + j];
        if (m == 0) dmin = fmax(d, """ + repr(D_MIN) + r""");
        qk[r * k + m] = (int)(q + Tp);
        wk[r * k + m] = exp(-d / dmin);
        m += 1;
        if (m == k) break;
    }
    double s = 0.0;
    for (long long j = 0; j < m; ++j) s = s + wk[r * k + j];
    mk[r] = (int)m;
    wsk[r] = m > 0 ? s : 1.0;
}

// one thread per (library li, target column t); the column's group g picks the table, k,
// the rows' entries (qk/wk from qoff[g], mk/wsk from g * nL * P) and the rows' pred_ok;
// the columns Y0 (T, nT) are every library's (y_stride 0) or each its own (y_stride T nT:
// gpu_pairs' candidates)
extern "C" __global__ void xmap_sums(
    const unsigned long long* __restrict__ tab_idx,
    const unsigned long long* __restrict__ tab_dist, const long long* __restrict__ depths,
    const long long* __restrict__ ks, const long long* __restrict__ qoff,
    const int* __restrict__ col_group, const double* __restrict__ Y0, const long long y_stride,
    const long long T,
    const long long nT, const long long P, const long long nL, const long long Tp,
    const long long* __restrict__ pred_t_all, const long long pt_stride,
    const unsigned char* __restrict__ pred_ok,
    const int* __restrict__ qk, const double* __restrict__ wk, const int* __restrict__ mk,
    const double* __restrict__ wsk, const unsigned char* __restrict__ clean,
    double* __restrict__ rho)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long li = blockIdx.y;
    if (t >= nT) return;
    const long long* pred_t = pred_t_all + li * pt_stride;  // this library's rows' times
    const double* Yt = Y0 + li * y_stride;  // this library's columns (0: every library's)
    const int g = col_group[t];
    const long long k = ks[g], depth = depths[g];
    const int* idx = (const int*)tab_idx[g];
    const double* dist = (const double*)tab_dist[g];
    const unsigned char* okl = pred_ok + ((long long)g * nL + li) * P;
    const int* qkg = qk + qoff[g];
    const double* wkg = wk + qoff[g];
    const int* mkg = mk + (long long)g * nL * P;
    const double* wsg = wsk + (long long)g * nL * P;
    double mean = 0.0, cnt = 0.0;
    for (long long pi = 0; pi < P; ++pi) {
        const long long q = pred_t[pi] + Tp;
        if (okl[pi] && q >= 0 && q < T) {
            const double yv = Yt[q * nT + t];
            if (isfinite(yv)) { mean = mean + yv; cnt = cnt + 1.0; }
        }
    }
    if (cnt > 0) mean = mean / cnt;
    const bool is_clean = clean[t] != 0;
    double n = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0;
    for (long long pi = 0; pi < P; ++pi) {
        const long long r = li * P + pi;
        const long long qo = pred_t[pi] + Tp;
        const int m = mkg[r];
        if (!okl[pi] || qo < 0 || qo >= T || m == 0) continue;
        double acc = wkg[r * k] * Yt[(long long)qkg[r * k] * nT + t];
        for (int j = 1; j < m; ++j)
            acc = acc + wkg[r * k + j] * Yt[(long long)qkg[r * k + j] * nT + t];
        const double yo = Yt[qo * nT + t];
        double pred;
        if (is_clean) {
            pred = acc * (1.0 / wsg[r]);
        } else {
            if (!isfinite(yo)) continue;
            if (isfinite(acc)) {
                pred = acc * (1.0 / wsg[r]);
            } else {  // a missing value among the shared entries: scan the row's table
                long long mm = 0;
                double dmin = """ + repr(D_MIN) + r""", a = 0.0, ws = 0.0;
                for (long long j = 0; j < depth; ++j) {
                    const long long q = idx[r * depth + j];
                    if (q < 0) break;
                    if (q + Tp < 0 || q + Tp >= T) continue;
                    const double yq = Yt[(q + Tp) * nT + t];
                    if (!isfinite(yq)) continue;
                    const double d = dist[r * depth + j];
                    if (mm == 0) dmin = fmax(d, """ + repr(D_MIN) + r""");
                    const double w = exp(-d / dmin);
                    a = a + w * yq;
                    ws = ws + w;
                    mm += 1;
                    if (mm == k) break;
                }
                if (mm == 0) continue;
                pred = a / ws;
            }
        }
        const double x = pred - mean, yv = yo - mean;
        n = n + 1.0; s1 = s1 + x; s2 = s2 + yv; s3 = s3 + x * x; s4 = s4 + yv * yv;
        s5 = s5 + x * yv;
    }
    rho[li * nT + t] = cnt > 0 ? xmap_rho(n, s1, s2, s3, s4, s5) : CUDART_NAN;
}
"""

_TILE_SOURCE = _PEARSON + r"""
#define BT 256  // threads per block
#define TP 1    // column pairs per thread: a tile is 2 * BT * TP target columns
#define RC 32   // rows staged in shared memory at a time

// NaN-free targets, tiled: a block serves one library li (blockIdx.x) and one tile of
// target columns of one group (blockIdx.y); Yc (T rows of ldy columns, ldy even) is shifted
// by each target's mean.  A tile loads from column tile_c0 (even) and writes the columns
// tile_a .. tile_c1 (a group may start at an odd column).  The library's entries (qk, wk)
// and row flags are staged in shared memory RC rows at a time (read once per block, not once
// per target), each thread loads two adjacent columns at once (16 bytes) and keeps their
// sums in registers, and the grid runs libraries fastest, so the blocks in flight share one
// tile of Yc, which stays in L2 while every library reads it.  pred_t + li * pt_stride: the
// rows' times (pt_stride = P where each library's rows come in an order of their own).
extern "C" __global__ void xmap_tile(
    const int* __restrict__ qk, const double* __restrict__ wk, const int* __restrict__ mk,
    const double* __restrict__ wsk, const long long* __restrict__ ks,
    const long long* __restrict__ qoff, const int* __restrict__ tile_group,
    const long long* __restrict__ tile_c0, const long long* __restrict__ tile_a,
    const long long* __restrict__ tile_c1, const double* __restrict__ Yc, const long long T,
    const long long ldy, const long long nC, const long long P, const long long nL,
    const long long Tp, const long long* __restrict__ pred_t, const long long pt_stride,
    const unsigned char* __restrict__ pred_ok, double* __restrict__ rho)
{
    extern __shared__ double smem[];
    const long long li = blockIdx.x, tile = blockIdx.y;
    const int g = tile_group[tile];
    const long long k = ks[g], c0 = tile_c0[tile], ca = tile_a[tile], c1 = tile_c1[tile];
    const int* qkl = qk + qoff[g] + li * P * k;
    const double* wkl = wk + qoff[g] + li * P * k;
    const long long rb = ((long long)g * nL + li) * P;
    const long long* ptl = pred_t + li * pt_stride;
    double* s_w = smem;                       // RC * k weights
    double* s_iw = s_w + RC * k;              // RC inverse weight sums
    int* s_q = (int*)(s_iw + RC);             // RC * k rows of Yc
    int* s_qo = s_q + RC * k;                 // RC observed rows
    int* s_m = s_qo + RC;                     // RC entry counts (0: row not used)
    const double2* Y2 = (const double2*)(Yc + c0);
    const long long ld2 = ldy / 2;
    int tc[TP];  // this thread's column pairs from c0 (pair 0 for those past the tile's end)
    for (int u = 0; u < TP; ++u) {
        const int v = threadIdx.x + u * BT;
        tc[u] = c0 + 2 * v < c1 ? v : 0;
    }
    double n = 0.0, s1[2 * TP], s2[2 * TP], s3[2 * TP], s4[2 * TP], s5[2 * TP];
    for (int u = 0; u < 2 * TP; ++u) {
        s1[u] = 0.0; s2[u] = 0.0; s3[u] = 0.0; s4[u] = 0.0; s5[u] = 0.0;
    }
    for (long long r0 = 0; r0 < P; r0 += RC) {
        const int nr = (int)(P - r0 < RC ? P - r0 : RC);
        __syncthreads();
        for (long long e = threadIdx.x; e < nr * k; e += BT) {
            s_w[e] = wkl[r0 * k + e];
            s_q[e] = qkl[r0 * k + e];
        }
        for (int rr = threadIdx.x; rr < nr; rr += BT) {
            const long long pi = r0 + rr, qo = ptl[pi] + Tp;
            const int m = mk[rb + pi];
            const bool ok = pred_ok[rb + pi] && qo >= 0 && qo < T && m > 0;
            s_m[rr] = ok ? m : 0;
            s_qo[rr] = ok ? (int)qo : 0;
            s_iw[rr] = 1.0 / wsk[rb + pi];
        }
        __syncthreads();
        for (int rr = 0; rr < nr; ++rr) {
            const int m = s_m[rr];
            if (m == 0) continue;
            const int* q = s_q + rr * k;
            const double* w = s_w + rr * k;
            double acc[2 * TP];
            {
                const double2* y0 = Y2 + (long long)q[0] * ld2;
                for (int u = 0; u < TP; ++u) {
                    const double2 v = y0[tc[u]];
                    acc[2 * u] = w[0] * v.x; acc[2 * u + 1] = w[0] * v.y;
                }
            }
            int j = 1;
            for (; j + 1 < m; j += 2) {  // two entries' loads in flight per column pair
                const double2* ya = Y2 + (long long)q[j] * ld2;
                const double2* yb = Y2 + (long long)q[j + 1] * ld2;
                double2 va[TP], vb[TP];
                for (int u = 0; u < TP; ++u) { va[u] = ya[tc[u]]; vb[u] = yb[tc[u]]; }
                for (int u = 0; u < TP; ++u) {
                    acc[2 * u] = acc[2 * u] + w[j] * va[u].x;
                    acc[2 * u] = acc[2 * u] + w[j + 1] * vb[u].x;
                    acc[2 * u + 1] = acc[2 * u + 1] + w[j] * va[u].y;
                    acc[2 * u + 1] = acc[2 * u + 1] + w[j + 1] * vb[u].y;
                }
            }
            if (j < m) {
                const double2* ya = Y2 + (long long)q[j] * ld2;
                for (int u = 0; u < TP; ++u) {
                    const double2 v = ya[tc[u]];
                    acc[2 * u] = acc[2 * u] + w[j] * v.x;
                    acc[2 * u + 1] = acc[2 * u + 1] + w[j] * v.y;
                }
            }
            const double2* yo = Y2 + (long long)s_qo[rr] * ld2;
            const double iw = s_iw[rr];
            n = n + 1.0;
            for (int u = 0; u < TP; ++u) {
                const double2 ov = yo[tc[u]];
                const double xa = acc[2 * u] * iw, xb = acc[2 * u + 1] * iw;
                s1[2 * u] = s1[2 * u] + xa; s2[2 * u] = s2[2 * u] + ov.x;
                s3[2 * u] = s3[2 * u] + xa * xa; s4[2 * u] = s4[2 * u] + ov.x * ov.x;
                s5[2 * u] = s5[2 * u] + xa * ov.x;
                s1[2 * u + 1] = s1[2 * u + 1] + xb; s2[2 * u + 1] = s2[2 * u + 1] + ov.y;
                s3[2 * u + 1] = s3[2 * u + 1] + xb * xb;
                s4[2 * u + 1] = s4[2 * u + 1] + ov.y * ov.y;
                s5[2 * u + 1] = s5[2 * u + 1] + xb * ov.y;
            }
        }
    }
    for (int u = 0; u < 2 * TP; ++u) {
        const long long c = c0 + 2 * (threadIdx.x + (long long)(u / 2) * BT) + (u % 2);
        if (c < ca || c >= c1) continue;
        rho[li * nC + c] = xmap_rho(n, s1[u], s2[u], s3[u], s4[u], s5[u]);
    }
}
"""

_TB = 128  # targets per block (the general kernel)
# the tiled kernel: threads per block (one of TILE_BTS per group of targets), column pairs
# per thread (a tile is 2 * threads * TILE_PAIRS columns) and rows staged at a time (RC).
# On an H200 at N = 1,000, L = 10,000, E = 5 with the rows in key order: 51.6 ms at 256
# threads, 56.2 ms at 128, 60.4 ms at 64, 70.7 ms at 128 threads of two pairs (the former
# kernel, one column per load, 128 threads of 2 columns: 58.8 ms; 65.1 ms with the rows in
# time order).  A group takes the block size that minimises its tiles' columns plus
# TILE_COST columns per tile (the staging of the library's entries, about 40 columns' worth
# by those times): wide tiles for many targets, narrow ones for a group of a few (E chosen:
# a group per E, tiles never straddle groups)
TILE_BTS = (256, 128, 64)
TILE_PAIRS = 1
TILE_COST = 48
_TILE_RC = 32
TILED = True  # NaN-free targets through xmap_tile (False: every target through xmap_sums)
YTILE = True  # NaN-free targets through gpu_ytile where a tile of them fits shared memory


def _kernel(name):
    return _module(("xmap",), _SOURCE).get_function(name)


def to_device(a):
    """``a`` as a C-contiguous CuPy array (float64 kept as it is); a transposed NumPy array
    (F-contiguous, as xmap's target columns) travels as it lies and is transposed on the
    device (NumPy's transposing copy of 20,000 x 1,450 took longer than the lookups)."""
    import cupy as cp

    if isinstance(a, np.ndarray) and a.ndim == 2 and not a.flags.c_contiguous \
            and a.flags.f_contiguous:
        return cp.ascontiguousarray(upload(a.T).T)
    return upload(a)


def xmap_skill_groups(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok, out=None,
                      order=None, rows=None):
    """Cross-map skill of nL library series for targets of several groups (see the module
    docstring): rho (nL, nT), a NumPy array; with ``order`` its columns ``order`` (gathered
    on the device); copied into ``out`` (a C-contiguous (nL, nT) float64 array) when given,
    with no host copy in between.  ``rows`` (nL, P): the tables' rows in an order of their
    own (:func:`xmap_skill_groups_device`)."""
    import cupy as cp

    nL = int(tables[0][0].shape[0]) if len(tables) else 0
    nT = int(np.shape(Yt)[1])
    order_d = None if order is None else cp.asarray(order)
    pinned = out is not None and out.flags.c_contiguous and out.nbytes >= DOWNLOAD_MIN_BYTES
    if pinned:
        prefault(out)  # while the device computes the tables queued before
    if out is None or nL * nT * 8 < 2 * PIPE_BYTES:
        rho = xmap_skill_groups_device(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok,
                                       rows)
        if order_d is not None:
            rho = cp.ascontiguousarray(rho[:, order_d])
        if out is None:
            return rho.get()
        if pinned:
            download(cp.ascontiguousarray(rho), out)  # through pinned buffers, by threads
            return out
        return rho.get(out=out)
    # a large map in pieces of libraries: each piece's copy to the host (on a stream of its
    # own) runs while the device computes the next piece (800 MB at N = 10,000)
    step = max(1, PIPE_BYTES // (nT * 8))
    copies = cp.cuda.Stream(non_blocking=True)
    pending = None
    for a in range(0, nL, step):
        b = min(nL, a + step)
        rho = xmap_skill_groups_device([(i[a:b], d[a:b]) for i, d in tables], Yt, col_group,
                                       k_list, Tp, pred_t, [o[a:b] for o in pred_ok],
                                       None if rows is None else rows[a:b])
        if order_d is not None:
            rho = cp.ascontiguousarray(rho[:, order_d])
        done = cp.cuda.Event()
        done.record()
        if pending is not None:
            _copy_back(*pending, copies, out)
        pending = (rho, done, a, b)
    _copy_back(*pending, copies, out)
    return out


PIPE_BYTES = 128 * 2**20  # a piece of the map copied back while the next is computed
DOWNLOAD_MIN_BYTES = 2**20  # a map from this size comes back through pinned buffers


def key_order(T: int, k_list) -> bool:
    """Whether the cross map's tables should come with their rows in the states' key order
    (:func:`xedm.kernels.knn.gpu.knn_device`'s ``key_order``) for lookups of series of T
    steps at these k: yes where some group goes through ``xmap_tile`` (its targets read from
    L2, where neighbouring rows' shared entries hit the L1 cache: 0.113 s against 0.128 s for
    the whole map at N = 1,000, L = 10,000, E = 5 on an H200), no where every group's tile of
    targets fits shared memory (``gpu_ytile``: the rows' own times, shared by every library,
    cost less than each library's reordered ones: 0.730 s against 0.749 s at N = 10,000,
    L = 1,450)."""
    return not (YTILE and all(ytile_fits(int(T), int(k)) for k in k_list))


def _copy_back(rho, done, a, b, stream, out):
    """``rho`` into ``out[a:b]`` once the event ``done`` has passed, on ``stream``."""
    stream.wait_event(done)
    rho.get(stream=stream, out=out[a:b])


def xmap_skill_groups_device(tables, Yt, col_group, k_list, Tp, pred_t, pred_ok, rows=None):
    """:func:`xmap_skill_groups`, rho left on the device (a CuPy array).

    ``rows`` (nL, P) int: the tables' rows in an order of their own, the same for every
    group: table row j of library l is the prediction row ``rows[l, j]`` (``pred_t`` and
    ``pred_ok`` stay in the rows' own order).  Rows in the states' key order
    (:func:`xedm.kernels.knn.gpu.knn_device`'s ``key_order``) make the lookups of nearby rows
    read the same target values; rho is the same up to the order of the sums over rows."""
    import cupy as cp

    Y = cp.ascontiguousarray(cp.asarray(Yt, dtype=cp.float64))
    T, nT = Y.shape
    nG = len(tables)
    idxs = [cp.ascontiguousarray(cp.asarray(i).astype(cp.int32, copy=False)) for i, _ in tables]
    dists = [cp.ascontiguousarray(cp.asarray(d, dtype=cp.float64)) for _, d in tables]
    nL, P = (idxs[0].shape[:2]) if nG else (0, 0)
    ks = [int(k) for k in k_list]
    if nL == 0 or nT == 0 or P == 0 or nG == 0 or min(ks) < 1:
        return cp.full((nL, nT), cp.nan, cp.float64)
    pt = cp.ascontiguousarray(cp.asarray(pred_t, dtype=cp.int64))
    pok = cp.ascontiguousarray(cp.stack([upload(o, cp.uint8) for o in pred_ok]))
    pt_stride = 0
    if rows is not None:  # every library's rows' times and flags in its tables' order
        r = cp.asarray(rows, dtype=cp.int64)
        pt = cp.ascontiguousarray(pt[r])
        pok = cp.ascontiguousarray(cp.take_along_axis(pok, cp.broadcast_to(r, pok.shape), axis=2))
        pt_stride = P
    i64 = np.int64
    R = nL * P
    qoff = np.concatenate([[0], np.cumsum([R * k for k in ks])]).astype(np.int64)
    qk = cp.zeros(int(qoff[-1]), cp.int32)
    wk = cp.zeros(int(qoff[-1]), cp.float64)
    mk = cp.zeros(nG * R, cp.int32)
    wsk = cp.ones(nG * R, cp.float64)
    entries = _kernel("xmap_rows")
    for g in range(nG):
        depth = idxs[g].shape[2]
        entries(((R + 255) // 256,), (256,),
             (idxs[g], dists[g], i64(R), i64(depth), i64(ks[g]), i64(T), i64(Tp),
              qk[qoff[g]:qoff[g + 1]], wk[qoff[g]:qoff[g + 1]], mk[g * R:(g + 1) * R],
              wsk[g * R:(g + 1) * R]))
    # a target whose every value is finite takes the branch-free path (as the CPU's blocks)
    clean_d = cp.isfinite(Y).all(axis=0)
    clean_h = clean_d.get()
    grp_h = np.asarray(col_group, np.int32)
    ks_d = cp.asarray(np.asarray(ks, np.int64))
    if TILED and clean_h.any():
        cols = np.flatnonzero(clean_h)
        rho_c = _tiled(Y, cols, grp_h[cols], ks, ks_d, qoff, qk, wk, mk, wsk, T, P, nL, Tp,
                       pt, pt_stride, pok)
        if len(cols) == nT:
            return rho_c
        rho = cp.full((nL, nT), cp.nan, cp.float64)
        rho[:, cp.asarray(cols)] = rho_c
        rest = np.flatnonzero(~clean_h)
    else:
        rho = None
        rest = np.arange(nT)
    Yr = Y if len(rest) == nT else cp.ascontiguousarray(Y[:, cp.asarray(rest)])
    nR = len(rest)
    clean = cp.ascontiguousarray(clean_d[cp.asarray(rest)].astype(cp.uint8))
    ptrs = cp.asarray(np.array([a.data.ptr for a in idxs], np.uint64))
    dptrs = cp.asarray(np.array([a.data.ptr for a in dists], np.uint64))
    depths = cp.asarray(np.array([a.shape[2] for a in idxs], np.int64))
    grp = cp.ascontiguousarray(cp.asarray(grp_h[rest]))
    rho_r = cp.full((nL, nR), cp.nan, cp.float64)
    _kernel("xmap_sums")(((nR + _TB - 1) // _TB, nL), (_TB,),
                         (ptrs, dptrs, depths, ks_d, cp.asarray(qoff[:-1]), grp, Yr, i64(0),
                          i64(T),
                          i64(nR), i64(P), i64(nL), i64(Tp), pt, i64(pt_stride), pok, qk, wk,
                          mk, wsk, clean, rho_r))
    if nR == nT:
        return rho_r
    rho[:, cp.asarray(rest)] = rho_r
    return rho


def _tiled(Y, cols, grp, ks, ks_d, qoff, qk, wk, mk, wsk, T, P, nL, Tp, pt, pt_stride, pok):
    """rho (nL, len(cols)) of the NaN-free target columns ``cols`` (groups ``grp``,
    non-decreasing): the columns gathered and shifted by their means over the whole series
    (rows of an even length, for the kernel's 16-byte loads), cut into tiles of
    2 * threads * TILE_PAIRS columns (the threads per block chosen per group among
    TILE_BTS) that never straddle a group (a tile starts at an even column, a group's first
    tile one column early where the group starts at an odd one), through ``xmap_tile``; a
    group whose tile of targets fits in shared memory through ``gpu_ytile``."""
    import cupy as cp

    i64 = np.int64
    nC = len(cols)
    ldy = nC + nC % 2
    Yc = cp.empty((T, ldy), cp.float64)
    Yg = Y[:, cp.asarray(cols)]
    cp.subtract(Yg, Yg.mean(axis=0, keepdims=True), out=Yc[:, :nC])
    if ldy > nC:
        Yc[:, nC] = 0.0
    del Yg
    bounds = np.flatnonzero(np.diff(grp)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [nC]])
    out = cp.empty((nL, nC), cp.float64)
    tiles = {}  # threads per block -> tiles (group, c0, a, c1)
    for a, b in zip(starts, ends, strict=True):
        g = int(grp[a])
        C = ytile_fits(T, ks[g]) if YTILE else 0
        if C:  # the tile's targets in shared memory (gpu_ytile)
            R = nL * P
            ytile(qk[qoff[g]:qoff[g + 1]], wk[qoff[g]:qoff[g + 1]], mk[g * R:(g + 1) * R],
                  wsk[g * R:(g + 1) * R], ks[g], C, Yc, nC, int(a), int(b), P, nL, Tp, pt,
                  pt_stride, pok[g], out)
            continue
        c_a = int(a) - int(a) % 2
        bt = min(TILE_BTS, key=lambda t: (_tile_cost(int(b) - c_a, 2 * t * TILE_PAIRS), -t))
        width = 2 * bt * TILE_PAIRS
        tiles.setdefault(bt, []).extend(
            (int(g), c, max(c, int(a)), min(int(b), c + width))
            for c in range(c_a, int(b), width))
    for bt, tl in tiles.items():
        tg, t0, ta, t1 = (np.asarray(v, np.int64) for v in zip(*tl, strict=True))
        args = (qk, wk, mk, wsk, ks_d, cp.asarray(qoff[:-1]), cp.asarray(tg.astype(np.int32)),
                cp.asarray(t0), cp.asarray(ta), cp.asarray(t1), Yc, i64(T), i64(ldy), i64(nC),
                i64(P), i64(nL), i64(Tp), pt, i64(pt_stride), pok, out)
        _tile_kernel(bt)((nL, len(tl)), (bt,), args, shared_mem=_TILE_RC * (max(ks) * 12 + 16))
    return out


def _tile_cost(n: int, width: int) -> int:
    """The tiled kernel's cost of n columns in tiles of ``width``, in columns."""
    tiles = -(-n // width)
    return tiles * (width + TILE_COST)


def _tile_kernel(bt: int):
    bt, tp = int(bt), int(TILE_PAIRS)
    src = _TILE_SOURCE.replace("#define BT 256", f"#define BT {bt}").replace(
        "#define TP 1", f"#define TP {tp}")
    return _module(("xmap_tile2", bt, tp), src).get_function("xmap_tile")


def compile_variants(E_list, knn=None) -> list:
    """Compile (or load from CuPy's disk cache) the kernels of a map of long series that the
    warm-up's small maps do not reach (:func:`xedm.warmup`): the sorted kNN kernel leaving
    its tables in key order at each E of ``E_list`` (k = E + 1, or ``knn``: NaN-free
    series), and the L2-tiled lookups at every block size of ``TILE_BTS``.  Returns the
    kernel functions."""
    from ..knn.gpu import sorted_kernel

    out = [sorted_kernel([int(e)], [int(e) + 1 if knn is None else int(knn)], 1, True)
           for e in E_list]
    return out + [_tile_kernel(bt) for bt in TILE_BTS]


def xmap_skill(idx, dist, Yt, k, Tp, pred_t, pred_ok):
    """Cross-map skill of a batch of library tables for every target (see
    :func:`xedm.kernels.cross.cpu_xmap.xmap_skill`): rho (nL, nT), a NumPy array."""
    nT = np.shape(Yt)[1]
    return xmap_skill_groups([(idx, dist)], Yt, np.zeros(nT, np.int32), [k], Tp, pred_t,
                             [pred_ok])
