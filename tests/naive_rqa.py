"""Slow, obviously correct dense references for recurrence quantification.

Everything here builds the full recurrence matrix with numpy and walks it with plain Python
loops.  Only for small series.  The conventions are those of CONVENTIONS.md (pyrqa's).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "naive_embed",
    "naive_distance_matrix",
    "naive_recurrence_matrix",
    "naive_eps_for_recurrence_rate",
    "naive_runs",
    "naive_line_histograms",
    "naive_measures",
    "naive_recurrence_network",
    "naive_border_lines",
    "naive_recurrence_times",
    "naive_crqa",
    "gap_eps",
]


def naive_embed(x, E, tau):
    """States as rows: row i = (x[i+(E-1)tau], x[i+(E-2)tau], ..., x[i]) for each variable."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    n = x.shape[1] - (E - 1) * tau
    cols = []
    for v in range(x.shape[0]):
        for lag in range(E):
            off = (E - 1 - lag) * tau
            cols.append(x[v, off:off + n])
    return np.stack(cols, axis=1)


def naive_distance_matrix(a, b, norm="euclidean"):
    """Dense distances between the rows of a and b, coordinates summed in order."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    acc = np.zeros((a.shape[0], b.shape[0]))
    for c in range(a.shape[1]):
        d = a[:, c][:, None] - b[:, c][None, :]
        if norm == "euclidean":
            acc = acc + d * d
        elif norm == "maximum":
            acc = np.maximum(acc, np.abs(d))
        elif norm == "manhattan":
            acc = acc + np.abs(d)
        else:
            raise ValueError(norm)
    return np.sqrt(acc) if norm == "euclidean" else acc


def naive_recurrence_matrix(x, y=None, *, E=1, tau=1, eps, norm="euclidean", joint=None,
                            joint_eps=None):
    """R[i, j] = d(x_i, y_j) < eps (y defaults to x); with joint=z also d(z_i, z_j) < joint_eps
    (z's own threshold, as pyunicorn's threshold=(eps, joint_eps); default: eps)."""
    a = naive_embed(x, E, tau)
    b = a if y is None else naive_embed(y, E, tau)
    R = naive_distance_matrix(a, b, norm) < eps
    if joint is not None:
        c = naive_embed(joint, E, tau)
        R = R & (naive_distance_matrix(c, c, norm) < (eps if joint_eps is None else joint_eps))
    return R


def naive_eps_for_recurrence_rate(x, rr, *, E=1, tau=1, norm="euclidean"):
    """eps for a recurrence rate of x alone: the distance of rank round(rr * N'^2) (0-based)
    among all N'^2 distances of the states (line of identity included), sorted; an eps of 0
    becomes the smallest positive float64 (so exact repeats still recur)."""
    a = naive_embed(x, E, tau)
    d = np.sort(naive_distance_matrix(a, a, norm).ravel())
    eps = d[min(int(round(rr * d.size)), d.size - 1)]
    return float(eps) if eps > 0 else float(np.finfo(np.float64).tiny)


def naive_runs(values):
    """Lengths of the runs of True in a 1-D boolean sequence."""
    runs, n = [], 0
    for v in values:
        if v:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    if n:
        runs.append(n)
    return runs


def naive_line_histograms(R, theiler=1, symmetric=True):
    """Diagonal (band |i-j| < theiler left out when symmetric), vertical, white histograms.

    Index = line length, length ``R.shape[0] + 1`` (lines longer than that cannot exist in
    the columns; diagonal lines are at most min(shape) long).
    """
    R = np.asarray(R, bool)
    na, nb = R.shape
    L = na + 1
    hd = np.zeros(max(L, min(na, nb) + 1), np.uint64)
    hv = np.zeros(L, np.uint64)
    hw = np.zeros(L, np.uint64)
    for k in range(-(na - 1), nb):
        if symmetric and abs(k) < theiler:
            continue
        for r in naive_runs(np.diagonal(R, offset=k)):
            hd[r] += 1
    for j in range(nb):
        for r in naive_runs(R[:, j]):
            hv[r] += 1
        for r in naive_runs(~R[:, j]):
            hw[r] += 1
    return hd[:L], hv, hw


def _block(h, lmin):
    h = np.asarray(h, np.float64)
    lengths = np.arange(h.size, dtype=np.float64)
    total_points = float((lengths * h)[1:].sum())
    sel = h[lmin:]
    ls = lengths[lmin:]
    n_lines = float(sel.sum())
    points = float((ls * sel).sum())
    nz = np.nonzero(h[1:])[0]
    lmax = float(nz[-1] + 1) if nz.size else np.nan
    ratio = points / total_points if total_points > 0 else np.nan
    mean = points / n_lines if n_lines > 0 else np.nan
    if n_lines > 0:
        p = sel[sel > 0] / n_lines
        entr = float(-(p * np.log(p)).sum())
    else:
        entr = np.nan
    return ratio, mean, lmax, entr


def naive_measures(R, theiler=1, l_min=2, v_min=2, w_min=2, symmetric=True):
    """Every measure of CONVENTIONS.md from the dense matrix, by the textbook formulas."""
    R = np.asarray(R, bool)
    hd, hv, hw = naive_line_histograms(R, theiler, symmetric)
    det, L, lmax, entr = _block(hd, l_min)
    lam, tt, vmax, ventr = _block(hv, v_min)
    _, W, wmax, wentr = _block(hw, w_min)
    return {
        "RR": R.sum() / R.size,
        "DET": det, "L": L, "L_max": lmax, "DIV": 1.0 / lmax if lmax == lmax else np.nan,
        "ENTR": entr,
        "LAM": lam, "TT": tt, "V_max": vmax, "V_ENTR": ventr,
        "W": W, "W_max": wmax, "W_ENTR": wentr,
    }


def naive_recurrence_network(R):
    """Network measures of the dense recurrence matrix R (diagonal dropped): textbook
    definitions with plain loops (triangles by triple loops, path lengths by a queue)."""
    A = np.asarray(R, bool).copy()
    n = A.shape[0]
    np.fill_diagonal(A, False)
    nbrs = [list(np.nonzero(A[i])[0]) for i in range(n)]
    k = np.array([len(v) for v in nbrs], np.int64)
    tri = np.zeros(n, np.int64)
    for i in range(n):
        for a in range(len(nbrs[i])):
            for b in range(a + 1, len(nbrs[i])):
                tri[i] += A[nbrs[i][a], nbrs[i][b]]
    pairs = k * (k - 1) // 2
    local = np.array([tri[i] / pairs[i] if pairs[i] else 0.0 for i in range(n)])
    total, count = 0, 0
    for s in range(n):
        dist = {s: 0}
        queue = [s]
        for u in queue:
            for w in nbrs[u]:
                if w not in dist:
                    dist[w] = dist[u] + 1
                    queue.append(w)
        total += sum(dist.values())
        count += len(dist) - 1
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if A[i, j]]
    if edges:
        m = len(edges)
        num1 = sum(int(k[i]) * int(k[j]) for i, j in edges) / m
        num2 = (sum(int(k[i]) + int(k[j]) for i, j in edges) / (2 * m)) ** 2
        den1 = sum(int(k[i]) ** 2 + int(k[j]) ** 2 for i, j in edges) / (2 * m)
        assort = (num1 - num2) / (den1 - num2) if den1 != num2 else np.nan
    else:
        assort = np.nan
    return {"degree": k, "local_clustering": local, "global_clustering": local.mean(),
            "transitivity": tri.sum() / pairs.sum() if pairs.sum() else np.nan,
            "average_path_length": total / count if count else np.nan,
            "assortativity": assort, "link_density": k.sum() / (n * (n - 1))}


def _runs_at(values):
    """(start, length) of each run of True in a 1-D boolean sequence."""
    out, start = [], None
    for i, v in enumerate(list(values) + [False]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i - start))
            start = None
    return out


def naive_border_lines(R, theiler=1, symmetric=True):
    """Histograms (as naive_line_histograms) of the lines that touch the matrix border: a
    diagonal line containing its diagonal's first or last point, a vertical (white) line
    containing its column's first or last row."""
    R = np.asarray(R, bool)
    na, nb = R.shape
    L = na + 1
    hd, hv, hw = (np.zeros(L, np.uint64) for _ in range(3))
    for k in range(-(na - 1), nb):
        if symmetric and abs(k) < theiler:
            continue
        dg = np.diagonal(R, offset=k)
        for s, n in _runs_at(dg):
            if s == 0 or s + n == dg.size:
                hd[n] += 1
    for j in range(nb):
        for col, h in ((R[:, j], hv), (~R[:, j], hw)):
            for s, n in _runs_at(col):
                if s == 0 or s + n == na:
                    h[n] += 1
    return hd, hv, hw


def naive_recurrence_times(R):
    """T1 (mean gap between consecutive recurrent points of a column), T2 (mean gap between
    the starts of consecutive vertical lines of a column), RTE (entropy of the white vertical
    lines not touching the border), pooled over the columns."""
    R = np.asarray(R, bool)
    na = R.shape[0]
    g1, g2, white = [], [], []
    for j in range(R.shape[1]):
        rows = np.nonzero(R[:, j])[0]
        g1 += list(np.diff(rows))
        g2 += list(np.diff([s for s, _ in _runs_at(R[:, j])]))
        white += [n for s, n in _runs_at(~R[:, j]) if s > 0 and s + n < na]
    t1 = float(np.mean(g1)) if g1 else np.nan
    t2 = float(np.mean(g2)) if g2 else np.nan
    if white:
        _, counts = np.unique(white, return_counts=True)
        p = counts / counts.sum()
        rte = float(-(p * np.log(p)).sum())
    else:
        rte = np.nan
    return {"T1": t1, "T2": t2, "RTE": rte}


def gap_eps(x, q, E, tau, norm):
    """A threshold near the q-quantile of the distances, in the middle of the widest gap
    between neighbouring distances there: float32 rounding (pyunicorn) cannot move a point
    across it."""
    a = naive_embed(x, E, tau)
    d = np.unique(naive_distance_matrix(a, a, norm))
    k = int(q * d.size)
    lo, hi = max(k - d.size // 50, 1), min(k + d.size // 50, d.size - 1)
    g = lo + int(np.argmax(d[lo:hi] - d[lo - 1:hi - 1]))
    return float(0.5 * (d[g - 1] + d[g]))


def naive_crqa(R, theiler=1, l_min=2, v_min=2, symmetric=True):
    """The CRP toolbox's ``crqa.m`` measures of a recurrence matrix, step by step as its
    documented code does (Marwan; crqa.m, dl.m, tt.m, entropy.m), on lists of line lengths:

    * ``Xt``: R with ``|i - j| < theiler`` set to 0 (self recurrence; none for cross);
    * RR = sum(Xt) / (number of points outside the band);
    * diagonal lines ``b`` of Xt over every diagonal; ``b >= l_min`` kept: DET = sum(b) /
      sum(Xt), L = mean(b), L_max = max(b), ENTR = entropy of their length histogram
      (natural log); with no such line b = [0]: L = L_max = ENTR = 0;
    * vertical lines ``d`` of the columns of Xt, ``d >= v_min`` kept: LAM = sum(d) /
      sum(Xt), TT = mean(d) (NaN without any), V_max = max(d) (0 without any), V_ENTR as ENTR;
    * white vertical lines ``dw``: per column, the rows down to the first recurrent point and
      from the last one on are filled, so only runs between two recurrent points remain; a
      column without recurrence is one run of its length: W = mean(dw), W_max = max(dw),
      W_ENTR = entropy of their histogram (all lengths).
    """
    R = np.asarray(R, bool)
    N1, N2 = R.shape
    Xt = R.copy()
    n_all = N1 * N2
    if symmetric and theiler > 0:
        i, j = np.indices(R.shape)
        Xt[np.abs(i - j) < theiler] = False
        n_all = N1 * N2 - N1 - 2 * ((theiler - 1) * N1 - sum(range(1, theiler)))
    total = int(Xt.sum())
    b = [r for k in range(-(N1 - 1), N2) for r in naive_runs(np.diagonal(Xt, offset=k))]
    d = [r for j in range(N2) for r in naive_runs(Xt[:, j])]
    dw = []
    for j in range(N2):
        col = Xt[:, j].copy()
        rec = np.nonzero(col)[0]
        if rec.size:
            col[:rec[0] + 1] = True
            col[rec[-1]:] = True
        dw += naive_runs(~col)

    def entropy(lengths):
        counts = np.bincount(np.asarray(lengths, np.int64))
        p = counts[counts > 0] / counts.sum()
        return float(-(p * np.log(p)).sum())

    b = [v for v in b if v >= l_min] or [0]
    d_all, d = d, [v for v in d if v >= v_min]
    out = {"RR": total / n_all,
           "DET": sum(b) / total if total else np.nan,
           "L": float(np.mean(b)), "L_max": float(max(b)), "ENTR": entropy(b),
           "LAM": sum(d) / total if total else np.nan,
           "TT": float(np.mean(d)) if d else np.nan,
           "V_max": float(max(d)) if d else 0.0,
           "V_ENTR": entropy(d) if d else 0.0,
           "W": float(np.mean(dw)) if dw else np.nan,
           "W_max": float(max(dw)) if dw else np.nan,
           "W_ENTR": entropy(dw) if dw else np.nan}
    out["DIV"] = 1.0 / out["L_max"] if out["L_max"] > 0 else np.nan
    assert sum(d_all) == total
    return out
