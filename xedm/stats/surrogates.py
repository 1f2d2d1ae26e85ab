"""Surrogate series on plain arrays: the null models of the significance tests.

``make_surrogates(X, method, n, seed)`` returns ``(B, n, T)`` for ``X`` of shape ``(B, T)``.
Series ``b`` draws from its own stream, ``Generator(PCG64(SeedSequence(seed,
spawn_key=(b,))))``, so a series' surrogates depend only on its values, the method, ``n`` and
the seed (not on the other series or their order).

Methods (every one keeps the NaN positions of its series, so the surrogates have the same
valid library points as the original):

``"ebisuzaki"``
    Random phases (Ebisuzaki 1997): the Fourier amplitudes of the series are kept exactly,
    the phase of every frequency but zero and Nyquist is drawn uniformly in [0, 2 pi), the
    Nyquist term (even length) gets a random sign.  Same mean, variance and amplitude
    spectrum (hence the same autocorrelation, circularly); any coupling is destroyed.
``"shuffle"``
    A random permutation of the finite values (Theiler et al. 1992): the same multiset of
    values, no temporal structure at all (the weakest null for autocorrelated data).
``"seasonal"``
    The seasonal cycle plus shuffled residuals: the cycle is the mean of each phase
    ``t % period`` over the finite values, smoothed to its first ``harmonics`` Fourier
    harmonics; the residuals (series minus cycle) are permuted among the finite positions.
``"block"``
    Circular block bootstrap: blocks of ``block_length`` consecutive finite values, starting
    uniformly at random on the circle of the finite values, concatenated and cut to length.
``"twin"``
    Twin surrogates (Thiel et al. 2006) with the recurrence conventions of :func:`xedm.rqa`:
    states are delay vectors (E, tau), two states are recurrent when their distance (``norm``)
    is ``< eps``, with eps reaching ``recurrence_rate`` by the rule of
    ``xedm.recurrence.threshold`` unless given.  Twins are states with identical rows of
    the recurrence matrix.  A walk starts at a random state; each step jumps to a random twin
    of the current state (itself included) and moves to its successor, restarting at a
    random state when there is none.  The surrogate is the newest coordinate of the visited
    states, so it is built from pieces of the original trajectory.
``"iaaft"``
    Iterative amplitude-adjusted Fourier transform (Schreiber & Schmitz 1996): start from a
    random permutation of the values, then alternate (a) imposing the Fourier amplitudes of
    the series (keeping the current phases) and (b) imposing its values (each value replaced
    by the one of the same rank among the sorted original values), until the ranks stop
    changing or ``max_iter`` rounds have run.  The last step is (b), so the amplitude
    distribution (the multiset of values) is the original's exactly; the Fourier amplitudes
    are matched approximately: the relative error ``||A_s - A|| / ||A||`` of the amplitude
    spectrum is returned per surrogate (``iaaft_spectrum_error``, with the rounds run,
    ``iaaft_iterations``).  It is typically a few per cent or less: ``IAAFT_SPECTRUM_TOL``
    (0.1) is the bound the tests hold on autocorrelated, periodic and chaotic series; strongly
    skewed or heavy-tailed values (e.g. the exponential of an AR(1) process) can leave 0.2 or
    more, as Schreiber & Schmitz note: check ``iaaft_spectrum_error``.  Same null as
    ``ebisuzaki`` (a linear Gaussian process), observed through a static monotone transform.

Gaps: ``shuffle`` and ``block`` use the finite values wherever they are (the NaN positions
stay NaN).  ``ebisuzaki``, ``seasonal`` and ``twin`` need consecutive values: leading and
trailing NaN are kept, a NaN inside the series is refused with a clear error.
"""

from __future__ import annotations

import os

import numpy as np

from ..kernels import get_kernel

METHODS = ("ebisuzaki", "shuffle", "seasonal", "block", "twin", "iaaft")
_CONTIGUOUS = ("ebisuzaki", "seasonal", "twin", "iaaft")
IAAFT_SPECTRUM_TOL = 0.1  # relative amplitude-spectrum error the tests hold (module doc)
TWIN_MAX_STATES = 20_000  # the recurrence rows are kept as bits: P^2 / 8 bytes


def series_rng(seed: int, b: int) -> np.random.Generator:
    """The random stream of series ``b`` (see the module doc)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(b,))))


# the parameters each method takes (any other is refused, not silently ignored)
METHOD_PARAMS = {"ebisuzaki": (), "shuffle": (), "seasonal": ("period", "harmonics"),
                 "block": ("block_length",),
                 "twin": ("E", "tau", "recurrence_rate", "eps", "norm"),
                 "iaaft": ("max_iter",)}


def check_options(method: str, given, where: str = "") -> None:
    """Refuse parameters in ``given`` (names) that ``method`` does not take, naming the
    method(s) they belong to; ``where`` is how the user passed them (e.g. "surrogate_options")."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"surrogate method={method!r} is invalid; choose one of {list(METHODS)}")
    for key in given:
        if key in METHOD_PARAMS.get(method, ()):
            continue
        owners = [m for m, names in METHOD_PARAMS.items() if key in names]
        what = f"{where}[{key!r}]" if where else key
        if owners:
            raise ValueError(f"{what} is a parameter of surrogate method "
                             f"{' and '.join(map(repr, owners))}, not of {method!r}, which "
                             f"takes {list(METHOD_PARAMS[method]) or 'no parameters'}; "
                             "leave it out or choose that method")
        known = sorted({n for names in METHOD_PARAMS.values() for n in names})
        raise ValueError(f"{what} is not a surrogate parameter; method {method!r} takes "
                         f"{list(METHOD_PARAMS[method]) or 'no parameters'} (all methods: "
                         f"{known})")


def check_method(method, *, period=None, block_length=None, E=2, tau=1, recurrence_rate=0.1,
                 eps=None, harmonics=3, norm="euclidean", max_iter=1000) -> dict:
    """Validate the method and its parameters; returns the parameters the method uses.

    Returns
    -------
    dict
        The method's parameters, checked (``{}`` for ebisuzaki and shuffle; ``period`` and
        ``harmonics`` for seasonal; ``block_length`` for block; ``E``, ``tau``, ``norm`` and
        ``recurrence_rate`` or ``eps`` for twin; ``max_iter`` for iaaft).
    """
    from ..core import validate as v

    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"surrogate method={method!r} is invalid; choose one of {list(METHODS)}")
    if method == "seasonal":
        if period is None:
            raise ValueError("method='seasonal' needs period= (the length of the seasonal "
                             "cycle in time steps, an integer >= 2)")
        period = v.check_int("period", period, 2)
        harmonics = v.check_int("harmonics", harmonics, 1)
        return {"period": period, "harmonics": harmonics}
    if method == "iaaft":
        return {"max_iter": v.check_int("max_iter", max_iter, 1, " (the most IAAFT rounds)")}
    if method == "block":
        if block_length is None:
            raise ValueError("method='block' needs block_length= (time steps per block, an "
                             "integer >= 1; about the decorrelation time of the series)")
        return {"block_length": v.check_int("block_length", block_length, 1)}
    if method == "twin":
        from ..recurrence.recurrence import NORMS

        E = v.check_int("E", E, 1)
        tau = v.check_int("tau", tau, 1)
        if norm not in NORMS:
            raise ValueError(f"norm={norm!r} is invalid; choose one of {list(NORMS)}")
        if eps is not None:
            eps = v.check_number("eps", eps, "0.5 (a distance; or use recurrence_rate=)")
            if eps <= 0:
                raise ValueError(f"eps={eps!r} is invalid; give a positive distance or use "
                                 "recurrence_rate=")
            return {"E": E, "tau": tau, "eps": eps, "norm": norm}
        rr = v.check_fraction("recurrence_rate", recurrence_rate,
                              "0.1 (0.05 to 0.2 is usual for twin surrogates)")
        return {"E": E, "tau": tau, "recurrence_rate": rr, "norm": norm}
    return {}


def _span(x: np.ndarray, method: str, label) -> slice:
    """The run of consecutive finite values of x (leading/trailing NaN allowed)."""
    fin = np.flatnonzero(np.isfinite(x))
    if len(fin) == 0:
        return slice(0, 0)
    span = slice(int(fin[0]), int(fin[-1]) + 1)
    if len(fin) != span.stop - span.start:
        raise ValueError(
            f"surrogate method={method!r} needs consecutive values, but series {label} has NaN "
            "inside it; fill the gaps first (e.g. .interpolate_na('time')) or use "
            "method='shuffle' or 'block', which keep the gaps where they are"
        )
    return span


def _ebisuzaki(segs, n, rngs, out=None):
    """Ebisuzaki surrogates (B, n, m) of the rows of ``segs`` (B, m), row b drawing from
    ``rngs[b]`` (its phases (n, K), then its Nyquist signs): the FFTs and spectra of every
    row at once (the same values as one row at a time: numpy's FFTs transform each row
    alone); written into ``out`` when given."""
    B, m = segs.shape
    F = np.fft.rfft(segs, axis=-1)
    K = F.shape[1]
    nyquist = m % 2 == 0 and K > 1  # real, so only its sign is free
    phase = np.empty((B, n, K))
    sign = np.empty((B, n))
    for b, rng in enumerate(rngs):
        # rng.uniform(0, 2 pi, (n, K)) is 0 + 2 pi * rng.random(): the same doubles, drawn
        # in place
        rng.random(out=phase[b])
        if nyquist:
            sign[b] = rng.choice([-1.0, 1.0], n)
    phase *= 2.0 * np.pi
    A = np.abs(F)
    G = get_kernel("phase_spectra", "cpu")(A, phase)  # A * exp(1j * phase)
    G[:, :, 0] = F[:, 0, None]
    if nyquist:
        G[:, :, -1] = A[:, -1, None] * sign
    return np.fft.irfft(G, n=m, axis=-1, out=out)


EBISUZAKI_BYTES = 2**26  # the spectra of this many bytes at a time (series of one span)


def _ebisuzaki_all(X, out, n, seed, streams, labels):
    """Ebisuzaki surrogates of every row of X into ``out`` (B, n, T) (its positions outside
    each series' span set to NaN): series of the same span batched, each on its own stream."""
    B, T = X.shape
    spans: dict[tuple[int, int], list[int]] = {}
    for b in range(B):
        sl = _span(X[b], "ebisuzaki", b if labels is None else labels[b])
        spans.setdefault((sl.start, sl.stop), []).append(b)
    step = max(1, EBISUZAKI_BYTES // (16 * max(n, 1) * max(T, 1)))
    tasks = []
    for (a, z), rows in spans.items():
        # runs of consecutive series (every series, when all share a span), at most step
        cuts = np.flatnonzero(np.diff(rows) != 1) + 1
        for run in np.split(np.asarray(rows, np.int64), cuts):
            for c in range(0, len(run), step):
                sl = slice(int(run[c]), int(run[min(c + step, len(run)) - 1]) + 1)
                out[sl, :, :a] = np.nan
                out[sl, :, z:] = np.nan
                if z > a:
                    tasks.append((sl, a, z))

    def one(task):
        sl, a, z = task
        rngs = [series_rng(seed, b if streams is None else int(streams[b]))
                for b in range(sl.start, sl.stop)]
        _ebisuzaki(X[sl, a:z], n, rngs, out=out[sl, :, a:z])

    if len(tasks) > 1:  # batches in threads (numpy's FFTs release the GIL): the same values
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(len(tasks), os.cpu_count() or 1)) as pool:
            list(pool.map(one, tasks))
    else:
        for task in tasks:
            one(task)


def _seasonal_cycle(x, period, harmonics):
    t = np.arange(len(x))
    phase = t % period
    fin = np.isfinite(x)
    sums = np.bincount(phase[fin], x[fin], minlength=period)
    counts = np.bincount(phase[fin], minlength=period)
    if np.any(counts == 0):
        raise ValueError(f"period={period} is too long for this series: some phases of the "
                         "cycle have no finite value (a period of at most half the finite "
                         "span gives each phase two values or more)")
    c = sums / counts
    C = np.fft.rfft(c)
    C[harmonics + 1:] = 0.0
    return np.fft.irfft(C, n=period)[phase]


def _block(vals, n, L, rng):
    m = len(vals)
    # a block longer than the series is the series from its start, cut to length: the same
    # draw as a block of length m (and no (n, L) index array of a huge L)
    L = min(L, m)
    nb = -(-m // L)
    starts = rng.integers(0, m, (n, nb))
    pos = (starts[:, :, None] + np.arange(L)) % m
    return vals[pos.reshape(n, -1)[:, :m]]


def _twin_classes(x, E, tau, norm, eps=None, recurrence_rate=None):
    """Twin class of every state (newest coordinate at x[(E-1)tau + i]) and the eps used."""
    P = len(x) - (E - 1) * tau
    if P > TWIN_MAX_STATES:
        raise ValueError(f"twin surrogates keep the recurrence matrix of the series in memory; "
                         f"{P} states exceed the limit of {TWIN_MAX_STATES}: use a shorter "
                         "series or method='ebisuzaki'")
    from ..recurrence.recurrence import eps_in_unit, unit_scale

    # distances on x times a power of 2 (exact), as rqa: the twins do not depend on the unit
    xs, _, ex = unit_scale(np.asarray(x, np.float64)[None, None])
    x = xs[0, 0]
    V = np.stack([x[(E - 1 - e) * tau:(E - 1 - e) * tau + P] for e in range(E)], axis=1)
    if eps is None:
        from ..recurrence.recurrence import RecurrenceProblem
        from ..recurrence.threshold import eps_for_recurrence_rate

        prob = RecurrenceProblem.single(x, E=E, tau=tau)
        eps = float(eps_for_recurrence_rate(prob, [recurrence_rate], norm=norm)[0][0, 0, 0])
    else:
        eps = float(eps_in_unit([eps], ex[0])[0])
    keys: dict[bytes, int] = {}
    cls = np.empty(P, np.int64)
    step = max(1, 2**22 // max(P, 1))
    for r0 in range(0, P, step):
        D = V[r0:r0 + step, None, :] - V[None, :, :]
        if norm == "euclidean":
            d = np.sqrt(np.einsum("ijk,ijk->ij", D, D))
        elif norm == "maximum":
            d = np.abs(D).max(axis=-1)
        else:
            d = np.abs(D).sum(axis=-1)
        bits = np.packbits(d < eps, axis=1)
        for i, row in enumerate(bits):
            cls[r0 + i] = keys.setdefault(row.tobytes(), len(keys))
    return cls, float(np.ldexp(eps, int(ex[0, 0])))  # in the data's unit


def _twin(x, n, rng, E, tau, norm, eps=None, recurrence_rate=None):
    cls, eps_used = _twin_classes(x, E, tau, norm, eps, recurrence_rate)
    order = np.argsort(cls, kind="stable")
    counts = np.bincount(cls)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    m = len(x)
    u = rng.random((n, m))
    r = rng.random((n, m))
    states = get_kernel("twin_walk", "cpu")(cls, order, offsets, u, r)
    share = float((counts[cls] > 1).mean())  # states that have a twin other than themselves
    return x[(E - 1) * tau + states], eps_used, share


def _iaaft(x, n, rng, max_iter, progress=None):
    """IAAFT surrogates (n, m) of x, the rounds each ran and their spectrum errors
    (``progress(1)`` after each round, when given)."""
    m = len(x)
    xs = np.sort(x)
    amp = np.abs(np.fft.rfft(x))
    s = rng.permuted(np.broadcast_to(x, (n, m)), axis=1)
    order = np.argsort(s, axis=1, kind="stable")  # the positions of the values, by rank
    iters = np.zeros(n, np.int64)
    active = np.arange(n)
    for _ in range(max_iter):
        if active.size == 0:
            break
        F = np.fft.rfft(s[active], axis=1)
        mag = np.abs(F)
        # impose the amplitudes, keep the phases (a zero coefficient takes phase 0)
        F = np.where(mag > 0, F * (amp / np.where(mag > 0, mag, 1.0)), amp)
        o = np.argsort(np.fft.irfft(F, n=m, axis=1), axis=1, kind="stable")
        iters[active] += 1
        same = (o == order[active]).all(axis=1)
        order[active] = o
        new = np.empty((active.size, m))
        np.put_along_axis(new, o, xs[None], axis=1)  # the value of rank r where rank r is
        s[active] = new
        active = active[~same]
        if progress is not None:
            progress(1)
    norm = np.linalg.norm(amp)
    err = np.linalg.norm(np.abs(np.fft.rfft(s, axis=1)) - amp, axis=1) / (norm if norm > 0
                                                                         else 1.0)
    return s, iters, err


def make_surrogates(X, method: str, n: int, seed: int, labels=None, streams=None,
                    progress=None, **params):
    """``(B, n, T)`` surrogates of the rows of ``X`` ``(B, T)``; see the module doc.

    Row b draws from random stream ``streams[b]`` (default b): a chunk of a larger set of
    series passes its rows' positions in the set, and gets the same surrogates.

    Returns the array and a dict of diagnostics (``twin``: eps and share of states with a
    twin, per series; ``iaaft``: rounds run and spectrum error, (n,) arrays per series).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.sin(np.arange(200) * 0.3)[None]
    >>> s, _ = make_surrogates(x, "shuffle", 5, seed=0)
    >>> s.shape, bool(np.allclose(np.sort(s[0, 2]), np.sort(x[0])))
    ((1, 5, 200), True)
    """
    X = np.asarray(X, np.float64)
    B, T = X.shape
    info: dict[str, list] = {"eps": [], "twin_share": [], "iaaft_iterations": [],
                             "iaaft_spectrum_error": []}
    if method == "ebisuzaki":  # every position written (NaN outside the spans)
        out = np.empty((B, n, T))
        _ebisuzaki_all(X, out, n, seed, streams, labels)
        return out, info
    out = np.full((B, n, T), np.nan)
    for b in range(B):
        x = X[b]
        rng = series_rng(seed, b if streams is None else int(streams[b]))
        label = b if labels is None else labels[b]
        if method in _CONTIGUOUS:
            sl = _span(x, method, label)
            seg = x[sl]
            if len(seg) == 0:
                continue
            if method == "iaaft":
                out[b, :, sl], its, err = _iaaft(seg, n, rng, params.get("max_iter", 1000),
                                                 progress)
                info["iaaft_iterations"].append(its)
                info["iaaft_spectrum_error"].append(err)
            elif method == "seasonal":
                cyc = _seasonal_cycle(seg, params["period"], params["harmonics"])
                res = seg - cyc
                out[b, :, sl] = cyc + rng.permuted(np.broadcast_to(res, (n, len(res))), axis=1)
            else:
                need = (params["E"] - 1) * params["tau"] + 2
                if len(seg) < need:
                    raise ValueError(f"series {label} has {len(seg)} consecutive values; twin "
                                     f"surrogates with E={params['E']}, tau={params['tau']} "
                                     f"need at least {need}")
                s, eps_used, share = _twin(seg, n, rng, params["E"], params["tau"],
                                           params["norm"], params.get("eps"),
                                           params.get("recurrence_rate"))
                out[b, :, sl] = s
                info["eps"].append(eps_used)
                info["twin_share"].append(share)
            continue
        fin = np.flatnonzero(np.isfinite(x))
        vals = x[fin]
        if len(vals) == 0:
            continue
        if method == "shuffle":
            out[b][:, fin] = rng.permuted(np.broadcast_to(vals, (n, len(vals))), axis=1)
        else:
            out[b][:, fin] = _block(vals, n, params["block_length"], rng)
    return out, info
