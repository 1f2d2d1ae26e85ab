"""Fuzz tests (issue 9, item 6): every public function and the ``xedm`` command on random,
valid and invalid, data and parameters.

Data: 1-D and (series, time) DataArrays (either axis order), Datasets of several variables,
numpy arrays and lists; lengths 0..300 (mostly 20..200); noise, logistic map, sine, constant
runs, integers and random walks scaled by factors from 1e-300 to 1e300; NaN patterns (none,
scattered, leading/trailing blocks, a gap, all-NaN, one all-NaN series, scattered inf); dtypes
float64/32/16, int64/32, bool, complex, object and str; time coordinates (none, integer,
offset, float, datetime64, strings, non-monotonic, duplicate labels); dask chunks along the
series or split along time.  Parameters: in-range values and wrong ones of every kind (0,
negative, huge, float, str, None, bool, numpy integers, unknown names, bad slices and masks...).

The property of every call:

* it returns an xarray object (sweeps: ``best_*`` present and, for every series with a finite
  rho, one of the swept values with the highest rho; finite rho, RR, DET and LAM in range),
* or it raises ValueError or TypeError whose message names a parameter of the function, the
  data, one of its variables or one of its dims,
* never any other exception, never a call of 30 s or more, never a changed input (data values,
  coords, attrs, parameter lists and masks) or changed global options,
* and never a result for a parameter that is invalid beyond doubt (E=0, tau=-1, a str E,
  backend="tpu", backend="gpu" without a GPU, an unknown variable or dim, str data, ...).

The CLI (``xedm.cli.main`` in-process): exit 0 with the output written, or a non-zero exit with
exactly one ``error:`` line on stderr (argparse's usage lines aside) and no traceback.

Examples per test (derandomized, so every run draws the same cases): simplex 80, smap 50,
embed_dimension 50, predict_interval 50, predict_nonlinear 50, ccm 60, xmap 60, rqa 80,
recurrence_plot 50, set_options 20, datasets 40, CLI xmap 40, CLI rqa 40, CLI demo 6, plus
51 fixed edge cases (test_edges: huge values of one parameter with the others in range,
degenerate lengths and contents): 727; and for issue 21 (item 5) plot keywords 60, option
names and values 40, huge counts 40 (under a work limit of 1e8 operations), scale extremes
40 (1e-300..1e300: the same rho, RR and DET), plus 28 zero-length cases (no time points, or
no series, for every function): 935 in total.  These also require that an all-NaN skill
never comes back without a warning.  The file runs in about a minute on two cores
once the numba kernels are compiled (the module fixture compiles them first).

``XEDM_FUZZ_SCALE=k`` multiplies every random count by k; ``XEDM_FUZZ_LOG=file.jsonl`` records
every failing case there (one JSON line each) instead of stopping at the first, to survey the
failure classes.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import json
import math
import os
import pickle
import re
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import xedm
from xedm import options as _options
from xedm.kernels import gpu_available

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")

GPU = gpu_available()
CALL_LIMIT_S = 30.0
SCALE = float(os.environ.get("XEDM_FUZZ_SCALE", "1"))
LOG = os.environ.get("XEDM_FUZZ_LOG")


def fuzz(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), derandomize=True, deadline=None,
                    database=None, print_blob=False, suppress_health_check=list(HealthCheck))


def _fail(func: str, case, msg: str) -> None:
    """A broken property: an AssertionError, or with XEDM_FUZZ_LOG one JSON line (the run goes
    on, so that one run surveys every failure class)."""
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps({"func": func, "msg": msg, "case": repr(case)[:3000]}) + "\n")
        return
    raise AssertionError(f"{func}: {msg}")


# ============================================================================ data
GENERATORS = ("noise", "logistic", "sine", "constant_runs", "integers", "random_walk")
SCALES = (1.0,) * 6 + (-1.0, 1e-300, 1e-150, 1e-8, 1e8, 1e150, 1e300)
NAN_PATTERNS = ("none",) * 12 + ("scattered", "leading", "trailing", "gap", "all", "one_series",
                                "inf")
DTYPES = ("float64",) * 16 + ("float32", "float16", "int64", "int32", "bool", "complex128",
                             "object", "str")
TIME_COORDS = ("none", "none", "int", "int", "offset", "float", "datetime", "string",
               "nonmonotonic", "duplicate")


def _values(rng, gen: str, shape) -> np.ndarray:
    rows, T = shape
    t = np.arange(T)
    if gen == "noise":
        return rng.standard_normal(shape)
    if gen == "logistic":
        out = np.empty(shape)
        x = rng.uniform(0.1, 0.9, rows)
        for i in range(T):
            out[:, i] = x
            x = 3.9 * x * (1 - x)
        return out
    if gen == "sine":
        return np.sin(0.3 * t[None, :] + rng.uniform(0, 6, (rows, 1)))
    if gen == "constant_runs":
        out = np.empty(shape)
        for r in range(rows):
            runs = np.repeat(rng.integers(0, 3, T + 1), rng.integers(1, 25, T + 1))
            out[r] = runs[:T]
        return out
    if gen == "integers":
        return rng.integers(-5, 6, shape).astype(float)
    return np.cumsum(rng.standard_normal(shape), axis=1)


def _nan_pattern(rng, a: np.ndarray, pattern: str) -> np.ndarray:
    rows, T = a.shape
    if T == 0 or pattern == "none":
        return a
    if pattern == "scattered":
        a[rng.random(a.shape) < 0.1] = np.nan
    elif pattern == "leading":
        a[:, : rng.integers(1, T + 1)] = np.nan
    elif pattern == "trailing":
        a[:, T - rng.integers(1, T + 1):] = np.nan
    elif pattern == "gap":
        s = int(rng.integers(0, T))
        a[:, s: s + int(rng.integers(1, 20))] = np.nan
    elif pattern == "all":
        a[:] = np.nan
    elif pattern == "one_series":
        a[int(rng.integers(0, rows))] = np.nan
    elif pattern == "inf":
        a[rng.random(a.shape) < 0.05] = np.inf
        a[rng.random(a.shape) < 0.05] = -np.inf
    return a


def _as_dtype(a: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dtype.startswith("float"):
            return a.astype(dtype)
        if dtype.startswith("int"):
            big = 2**30 if dtype == "int32" else 2**62
            return np.clip(np.nan_to_num(a, nan=0.0, posinf=big, neginf=-big), -big, big
                           ).astype(dtype)
        if dtype == "bool":
            return np.nan_to_num(a) > np.nanmedian(a) if np.isfinite(a).any() else a > 0
        if dtype == "complex128":
            return a + 1j * a[..., ::-1]
        if dtype == "object":
            return a.astype(object)
        return a.astype(str)


def _time_labels(kind: str, T: int, rng):
    if kind == "none":
        return None
    return {
        "int": lambda: np.arange(T),
        "offset": lambda: np.arange(T) + 1000,
        "float": lambda: np.arange(T) * 0.25,
        "datetime": lambda: pd.date_range("2000-01-01", periods=T, freq="D").values,
        "string": lambda: np.array([f"t{i:04d}" for i in range(T)]),
        "nonmonotonic": lambda: rng.permutation(T),
        "duplicate": lambda: np.arange(T) // 2,
    }[kind]()


@dataclass
class Data:
    """What the call gets (``obj``) and what the parameter strategies need to know of it."""

    spec: dict
    obj: Any = field(repr=False, default=None)
    T: int = 0
    tdim: str = "time"
    sdim: str | None = None
    labels: Any = field(repr=False, default=None)  # time labels (None: positions)
    names: list = field(default_factory=list)       # numeric variables (Dataset) / the name
    all_vars: list = field(default_factory=list)
    dims: list = field(default_factory=list)
    numeric: bool = True

    @property
    def xarray(self) -> bool:
        return isinstance(self.obj, (xr.DataArray, xr.Dataset))

    @property
    def is_ds(self) -> bool:
        return isinstance(self.obj, xr.Dataset)


def make_data(spec: dict) -> Data:
    """Deterministic data from a drawn spec (``make_data(spec)`` rebuilds a failing case)."""
    rng = np.random.default_rng(spec["seed"])
    T, layout = spec["T"], spec["layout"]
    rows = spec["n_series"] if layout != "ds" else spec["n_vars"]
    with np.errstate(all="ignore"):
        a = _values(rng, spec["gen"], (rows, T)) * spec["scale"]
    a = _as_dtype(_nan_pattern(rng, a, spec["nan"]), spec["dtype"])
    numeric = a.dtype.kind in "iuf"
    tdim, sdim = spec["tdim"], spec["sdim"]
    labels = _time_labels(spec["time"], T, rng) if layout not in ("numpy", "list") else None
    coords = {} if labels is None else {tdim: labels}
    d = Data(spec=spec, T=T, tdim=tdim, labels=labels, numeric=numeric)
    if layout in ("numpy", "list"):
        arr = a[0] if rows == 1 and spec["oned"] else a
        d.obj = arr if layout == "numpy" else arr.tolist()
        d.numeric = np.asarray(d.obj).dtype.kind in "iuf"  # a list of floats from objects
        d.tdim = "time"
        d.sdim = None if arr.ndim == 1 else "dim_0"
        d.names = ["x"]
        d.dims = ["time"] + ([] if arr.ndim == 1 else ["dim_0"])
    elif layout == "da1":
        d.obj = xr.DataArray(a[0], dims=[tdim], coords=coords, name=spec["name"],
                             attrs={"units": "m"})
        d.names = [spec["name"] or "x"]
        d.dims = [tdim]
    elif layout in ("da2", "da2t"):
        scoords = {sdim: spec["series_labels"][:rows]} if spec["series_labels"] else {}
        da = xr.DataArray(a, dims=[sdim, tdim], coords={**coords, **scoords},
                          name=spec["name"], attrs={"units": "m"})
        d.obj = da.transpose(tdim, sdim) if layout == "da2t" else da
        d.sdim, d.names, d.dims = sdim, [spec["name"] or "x"], [sdim, tdim]
    else:  # Dataset: x, y, z..., optionally a (series, time) variable and a str variable
        names = ["x", "y", "z", "w"][:rows]
        data_vars = {n: (tdim, a[i]) for i, n in enumerate(names)}
        if spec["wide"]:
            wide = _as_dtype(_values(rng, spec["gen"], (2, T)), spec["dtype"])
            data_vars["v"] = ((sdim, tdim), wide)
            names.append("v")
            d.sdim = sdim
        all_vars = list(names)
        if spec["str_var"]:
            data_vars["label"] = (tdim, np.array([f"s{i % 3}" for i in range(T)]))
            all_vars.append("label")
        d.obj = xr.Dataset(data_vars, coords=coords, attrs={"source": "fuzz"})
        d.names, d.all_vars, d.dims = names, all_vars, list(d.obj.dims)
    if layout not in ("ds",):
        d.all_vars = list(d.names)
    if d.xarray and spec["chunks"] != "none" and T > 0:
        if spec["chunks"] == "series" and d.sdim in d.dims:
            d.obj = d.obj.chunk({d.sdim: 1})
        elif spec["chunks"] == "time":
            d.obj = d.obj.chunk({tdim: max(1, -(-T // 3))})
    return d


@st.composite
def data_specs(draw, layouts=("da1", "da1", "da2", "da2t", "ds", "ds", "numpy", "list"),
               min_vars: int = 1):
    size = draw(st.sampled_from(["typical"] * 8 + ["short", "long"]))
    T = draw({"typical": st.integers(20, 200), "short": st.integers(0, 19),
              "long": st.integers(201, 300)}[size])
    layout = draw(st.sampled_from(layouts))
    return {
        "layout": layout,
        "T": T,
        "n_series": draw(st.integers(1, 3)) if layout != "da1" else 1,
        "n_vars": draw(st.integers(min_vars, 3)),
        "oned": draw(st.booleans()),
        "gen": draw(st.sampled_from(GENERATORS)),
        "scale": draw(st.sampled_from(SCALES)),
        "nan": draw(st.sampled_from(NAN_PATTERNS)),
        "dtype": draw(st.sampled_from(DTYPES)),
        "time": draw(st.sampled_from(TIME_COORDS)),
        "tdim": draw(st.sampled_from(["time"] * 5 + ["t"])),
        "sdim": draw(st.sampled_from(["series", "neuron"])),
        "series_labels": draw(st.sampled_from([None, ["a", "b", "c"], [10, 20, 30]])),
        "name": draw(st.sampled_from(["x", "x", None, "rho"])),
        "wide": draw(st.integers(0, 5)) == 0,
        "str_var": draw(st.integers(0, 5)) == 0,
        "chunks": draw(st.sampled_from(["none"] * 4 + ["series", "time"])),
        "seed": draw(st.integers(0, 2**16)),
    }


# ============================================================================ parameters
@dataclass
class Case:
    """One call: data, keyword arguments, and the reasons some argument is invalid beyond
    doubt (then the call must raise)."""

    func: str
    data: Data
    kwargs: dict
    bad: list
    accessor: bool = False


class Params:
    """Draws keyword arguments, noting those that are invalid beyond doubt."""

    HUGE = (2**62, 2**63 - 1, 2**64 + 1, 10**30)

    def __init__(self, draw, data: Data):
        self.draw, self.d, self.kw, self.bad = draw, data, {}, []
        # per case, the chance that a parameter takes a wrong value: a good share of the
        # cases has none (their calls must get past validation), others have many
        self.wild_pct = draw(st.sampled_from([0, 0, 15, 50]))

    def pick(self, *options):
        return self.draw(st.sampled_from(options))

    def kind(self, valid, wild=()):
        """A category: from ``wild`` with probability wild_pct %, else from ``valid``."""
        if wild and self.draw(st.integers(0, 99)) < self.wild_pct:
            return self.pick(*wild)
        return self.pick(*valid)

    def put(self, name, value, bad: str | None = None):
        self.kw[name] = value
        if bad:
            self.bad.append(f"{name}: {bad}")

    def integer(self, name, valid, lo=None, *, required=True, huge_bad=True, none_ok=False,
                optional=False):
        """An int parameter: usually ``valid`` (a strategy), else a wrong value of some kind."""
        if optional and self.draw(st.integers(0, 2)) == 0:
            return  # left at its default
        kind = self.kind(["valid"] * 4 + ["np"], ["zero", "neg", "huge", "float_int", "float",
                                                  "str", "none", "bool"])
        if kind == "valid":
            self.put(name, self.draw(valid))
        elif kind == "np":
            v = self.draw(valid)
            cast = self.pick(np.int64, np.int32, np.int16) if abs(v) < 2**15 else np.int64
            self.put(name, cast(v))
        elif kind == "zero":
            self.put(name, 0, "zero" if lo is not None and lo > 0 else None)
        elif kind == "neg":
            self.put(name, self.draw(st.integers(-10**6, -1)),
                     "negative" if lo is not None and lo >= 0 else None)
        elif kind == "huge":
            self.put(name, self.pick(*self.HUGE), "huge" if huge_bad else None)
        elif kind == "float_int":
            self.put(name, float(self.draw(valid)))  # 3.0: a TypeError or accepted
        elif kind == "float":
            self.put(name, self.pick(2.5, math.nan, math.inf), "not an integer")
        elif kind == "str":
            self.put(name, self.pick("3", "two"), "a str")
        elif kind == "none":  # None for a parameter with a default may mean the default
            self.put(name, None, None if (none_ok or not required or optional) else "None")
        else:
            self.put(name, self.pick(True, np.bool_(False)), "a bool")

    def int_list(self, name, valid, lo=None):
        kind = self.kind(["valid"] * 3 + ["array", "scalar"],
                         ["repeat", "empty", "below", "str", "float", "nested", "huge", "none"])
        v = sorted(set(self.draw(st.lists(valid, min_size=1, max_size=4))))
        if kind == "valid":
            self.put(name, list(self.draw(st.permutations(v))))
        elif kind == "array":
            self.put(name, np.array(v, dtype=self.pick(np.int64, np.int32)))
        elif kind == "scalar":
            self.put(name, v[0])
        elif kind == "repeat":
            self.put(name, v + v[:1])
        elif kind == "empty":
            self.put(name, [], "empty")
        elif kind == "below":
            self.put(name, v + [lo - 1 if lo is not None else -(10**6)],
                     "below the minimum" if lo is not None else None)
        elif kind == "str":
            self.put(name, self.pick("1 2 3", ["1", "2"]), "str")
        elif kind == "float":
            self.put(name, [x + 0.5 for x in v], "floats")
        elif kind == "nested":
            self.put(name, [v], "nested")
        elif kind == "huge":
            self.put(name, v + [2**62], "huge")
        else:
            self.put(name, None, None)

    def choice(self, name, valid, invalid=(), others=(), optional=True):
        """A str option: one of ``valid`` (or None), or an ``invalid`` one."""
        kind = self.kind(["default"] * (2 if optional else 0) + ["valid"] * 2,
                         ["invalid", "other"])
        if kind == "default":
            return
        if kind == "valid" or (kind == "invalid" and not invalid) or (kind == "other"
                                                                       and not others):
            self.put(name, self.pick(*valid))
        elif kind == "invalid":
            self.put(name, self.pick(*invalid), "unknown value")
        else:
            self.put(name, self.pick(*others))

    def backend(self):
        kind = self.kind(["default", "default", "cpu", "auto"], ["gpu", "gpu", "tpu", "GPU", 1])
        if kind == "default":
            return
        bad = None
        if kind == "gpu" and not GPU:
            bad = "gpu without a GPU"
        elif kind not in ("cpu", "auto", "gpu"):
            bad = "unknown backend"
        self.put("backend", kind, bad)

    def dim(self, name="dim"):
        needed = self.d.tdim != "time" and (len(self.d.dims) > 1 or self.d.is_ds)
        kind = self.kind(["time"] if needed else ["default"] * 3 + ["time"],
                         ["default", "series", "unknown", "int"] if needed
                         else ["series", "unknown", "int"])
        if needed and kind == "default":
            self.bad.append(f"{name}: the data has no 'time' dim")
        if kind == "default":
            return
        if kind == "time":
            self.put(name, self.d.tdim)
        elif kind == "series" and self.d.sdim:
            self.put(name, self.d.sdim)
        elif kind == "int":
            self.put(name, 0)
        else:  # (numpy data: dim names the time axis, whatever the name)
            self.put(name, "nope", "unknown dim" if self.d.xarray else None)

    def selection(self, name):
        """lib / pred: None, label slices, lists of slices, boolean masks, junk."""
        T = self.d.T
        labels = self.d.labels if self.d.labels is not None else np.arange(T)
        kind = self.kind(["none"] * 6 + ["slice", "slice", "open", "slices", "mask", "da_mask"],
                         ["reversed", "outside", "step", "badtype", "overlap", "empty_list",
                          "false", "wrong_len", "int_mask", "str", "int"])
        if kind == "none":
            return
        if T == 0 and kind in ("slice", "open", "reversed", "step", "slices", "overlap", "mask",
                               "false", "da_mask"):
            kind = "outside"

        def lab(i):
            v = labels[i]
            return v.item() if isinstance(v, np.generic) and v.dtype.kind in "iuf" else v

        ab = sorted(self.draw(st.lists(st.integers(0, max(T - 1, 0)), min_size=4, max_size=4)))
        a, b, c, e = ab
        if kind == "slice":
            self.put(name, slice(lab(a), lab(e)))
        elif kind == "open":
            self.put(name, self.pick(slice(lab(a), None), slice(None, lab(e))))
        elif kind == "reversed":
            self.put(name, slice(lab(e), lab(a)))
        elif kind == "outside":
            self.put(name, slice(10**6, 10**6 + 10) if labels.dtype.kind in "iuf"
                     else slice("zzz", "zzzz"))
        elif kind == "step":
            self.put(name, slice(lab(a), lab(e), 2))
        elif kind == "badtype":
            self.put(name, slice("a", "b") if labels.dtype.kind in "iufM" else slice(0, 10))
        elif kind == "slices":
            self.put(name, [slice(lab(a), lab(b)), slice(lab(c), lab(e))])
        elif kind == "overlap":
            self.put(name, [slice(lab(a), lab(c)), slice(lab(b), lab(e))])
        elif kind == "empty_list":
            self.put(name, [])
        elif kind in ("mask", "false", "da_mask"):
            m = self.draw(st.lists(st.booleans(), min_size=T, max_size=T))
            mask = np.array(m, dtype=bool) if kind != "false" else np.zeros(T, bool)
            if kind == "da_mask":
                mask = xr.DataArray(mask, dims=[self.d.tdim])
            self.put(name, mask, "selects nothing" if kind == "false" else None)
        elif kind == "wrong_len":
            self.put(name, np.ones(T + self.pick(1, 5), bool), "mask of the wrong length")
        elif kind == "int_mask":
            self.put(name, np.ones(T, np.int64))
        elif kind == "str":
            self.put(name, self.pick("1 20", "all"), "a str")
        else:
            self.put(name, 5)

    def variables(self, name, *, allow_list=True, required=False, min_list=1):
        """columns / target on a Dataset (and junk on a DataArray)."""
        d = self.d
        if not d.is_ds:
            if self.kind(["no"], ["no", "no", "yes"]) == "yes":
                self.put(name, "x", "variable names on a DataArray")
            return
        names = d.names
        kind = self.kind((["one"] * 2 if min_list == 1 else []) + (["list"] * 2 if allow_list
                                                                    else []),
                         ["one", "none", "unknown", "int", "empty", "list_unknown", "str_var",
                          "dup"])
        if kind == "none":
            if required:
                self.bad.append(f"{name}: missing on a Dataset")
            return
        if kind == "one":
            self.put(name, self.pick(*names))
        elif kind == "list":
            self.put(name, list(self.draw(st.permutations(names)))[: self.draw(
                st.integers(min(min_list, len(names)), len(names)))])
        elif kind == "unknown":
            self.put(name, "nope", "unknown variable")
        elif kind == "int":
            self.put(name, 0, "an int")
        elif kind == "empty":
            self.put(name, [], "empty" if required else None)
        elif kind == "list_unknown":
            self.put(name, [names[0], "nope"], "unknown variable")
        elif kind == "str_var":
            if "label" in d.all_vars:
                self.put(name, "label", "a str variable")
            else:
                self.put(name, names[0])
        else:
            self.put(name, [names[0], names[0]])

    def theta(self, sweep: bool):
        kind = self.kind(["valid"] * 3 + ["scalar", "default"],
                         ["repeat", "negative", "inf", "nan", "str", "empty", "nested"])
        vals = sorted(set(self.draw(st.lists(st.sampled_from(
            [0.0, 0.01, 0.5, 1.0, 2.0, 4.0, 8.0, 1e3]), min_size=1, max_size=4))))
        if kind == "default":
            return
        if kind == "valid":
            v = vals if sweep else vals[0]
            self.put("theta", v if sweep else v)
        elif kind == "scalar":
            self.put("theta", self.pick(vals[0], int(vals[0]), np.float32(vals[0])))
        elif kind == "repeat":
            self.put("theta", vals + vals[:1], None if sweep else "a list for smap")
        elif kind == "negative":
            self.put("theta", [-1.0] + vals if sweep else -1.0, "negative")
        elif kind == "inf":
            self.put("theta", vals + [math.inf] if sweep else math.inf, "inf")
        elif kind == "nan":
            self.put("theta", vals + [math.nan] if sweep else math.nan, "NaN")
        elif kind == "str":
            self.put("theta", "2", "a str")
        elif kind == "empty":
            self.put("theta", [], "empty")
        else:
            self.put("theta", [vals], "nested")
        if not sweep and isinstance(self.kw.get("theta"), list) and len(self.kw["theta"]) > 1:
            if "theta: a list for smap" not in self.bad:
                self.bad.append("theta: a list for smap")

    def solver(self):
        kind = self.kind(["default", "default", "lstsq", "ridge"], ["ridge0", "qr"])
        if kind == "default":
            return
        if kind == "lstsq":
            self.put("solver", "lstsq")
        elif kind == "ridge":
            self.put("solver", "ridge")
            self.put("alpha", self.pick(0.1, 1.0, 1e-12, 1e300))
        elif kind == "ridge0":
            self.put("solver", "ridge")
            self.put("alpha", self.pick(0.0, -1.0, math.nan, "a"), "alpha for ridge")
        else:
            self.put("solver", "qr", "unknown solver")

    def threshold(self, name, positive: bool, single: bool):
        """eps (positive=True) or a recurrence rate: scalars and lists, good and bad."""
        good = (st.sampled_from([0.05, 0.1, 0.5, 1.0, 3.0, 1e-300, 1e300]) if positive
                else st.sampled_from([0.01, 0.05, 0.1, 0.3, 0.9]))
        kind = self.kind(["scalar"] * 3 + ["list", "np"],
                         ["repeat", "zero", "negative", "nan", "inf", "str", "empty"])
        v = sorted(set(self.draw(st.lists(good, min_size=1, max_size=3))))
        if kind == "scalar":
            self.put(name, v[0])
        elif kind == "np":
            self.put(name, np.float32(v[0]) if positive else np.float64(v[0]))
        elif kind == "list":
            self.put(name, v, "a list for recurrence_plot" if single and len(v) > 1 else None)
        elif kind == "repeat":
            self.put(name, v + v[:1], "a list for recurrence_plot" if single else None)
        elif kind == "zero":
            self.put(name, 0.0, "zero")
        elif kind == "negative":
            self.put(name, -0.5, "negative")
        elif kind == "nan":
            self.put(name, math.nan, "NaN")
        elif kind == "inf":
            self.put(name, math.inf, None if positive else "inf")
        elif kind == "str":
            self.put(name, "0.1", "a str")
        else:
            self.put(name, [], "empty")
        if not positive and kind in ("scalar", "list") and self.kind(["no"], ["no", "yes"]
                                                                      ) == "yes":
            self.put(name, self.pick(1.0, 1.5), "rate outside (0, 1)")


def _small(lo=1, hi=6):
    return st.integers(lo, hi)


def _signature(func_name: str) -> dict:
    from xedm.labeled import edm, rqa, sweeps, xmap

    mod = {"ccm": xmap, "xmap": xmap, "rqa": rqa, "recurrence_plot": rqa,
           "embed_dimension": sweeps, "predict_interval": sweeps,
           "predict_nonlinear": sweeps}.get(func_name, edm)
    return dict(inspect.signature(getattr(mod, func_name)).parameters)


def _common_edm(p: Params, func: str, sig: dict):
    d = p.d
    if func != "embed_dimension":
        if d.is_ds and p.draw(st.integers(0, 4)) == 0:
            p.put("embedded", True)
            ncols = len(p.kw["columns"]) if isinstance(p.kw.get("columns"), list) else 1
            if p.draw(st.booleans()):
                p.put("E", ncols)
            else:
                p.integer("E", _small(1, 4), 1, none_ok=True)  # E may be left out
        else:
            p.integer("E", _small(1, 6), 1)
            if p.draw(st.integers(0, 9)) == 0:
                p.put("embedded", p.pick(False, 0, "yes"))
    p.integer("tau", _small(1, 4), 1, optional=True, huge_bad=False)
    if func not in ("predict_interval",):
        p.integer("Tp", st.integers(-5, 5), None, optional=True)
    p.integer("knn", _small(1, 12), 1, optional=True, required=False, huge_bad=False)
    p.integer("exclusion_radius", st.integers(0, 10), 0, optional=True, huge_bad=False,
              none_ok=True)
    p.selection("lib")
    p.selection("pred")
    p.dim()
    p.backend()
    p.choice("neighbors", ("exact", "auto"), ("magic", "EXACT"), ("kdtree", "hnsw"))


@st.composite
def edm_cases(draw, func: str):
    spec = draw(data_specs())
    d = make_data(spec)
    p = Params(draw, d)
    sig = _signature(func)
    p.variables("columns", required=True)
    if d.is_ds and draw(st.booleans()):
        p.variables("target", allow_list=False)
    if func == "embed_dimension":
        if draw(st.booleans()):
            p.integer("E_max", _small(1, 8), 1)
        else:
            p.int_list("E", _small(1, 8), 1)
    _common_edm(p, func, sig)
    if func == "smap":
        p.theta(sweep=False)
        p.solver()
        if draw(st.integers(0, 3)) == 0:
            p.put("singular_values", draw(st.booleans()))
    elif func == "predict_nonlinear":
        p.theta(sweep=True)
        p.solver()
    elif func == "predict_interval":
        if draw(st.booleans()):
            p.integer("Tp_max", _small(1, 8), 1)
        else:
            p.int_list("Tp", st.integers(-4, 6))
    if d.T == 0:
        p.bad.append("data: no time points")
    if not d.numeric and spec["dtype"] != "bool":
        p.bad.append(f"data: dtype {spec['dtype']}")
    return Case(func, d, p.kw, p.bad, accessor=d.xarray and draw(st.integers(0, 3)) == 0)


@st.composite
def cross_cases(draw, func: str):
    spec = draw(data_specs(layouts=("da2", "da2", "da2t", "ds", "ds", "da1", "numpy"),
                           min_vars=2))
    d = make_data(spec)
    p = Params(draw, d)
    if d.is_ds:
        p.variables("columns", required=True, min_list=2)
        if func == "xmap" and draw(st.integers(0, 5)) == 0:
            p.dim("dim")
    elif d.xarray:
        kind = p.kind(["series"], ["missing", "time", "unknown"])
        if kind == "series":
            p.put("dim", d.sdim) if d.sdim else p.put("dim", d.tdim, "no series dim")
        elif kind == "time":
            p.put("dim", d.tdim, "the time dim as series dim")
        elif kind == "unknown":
            p.put("dim", "nope", "unknown dim")
        else:
            p.bad.append("dim: missing on a DataArray")
        if p.kind(["no"], ["no", "no", "yes"]) == "yes":
            p.put("columns", ["x", "y"], "columns on a DataArray")
    else:
        p.put("dim", "dim_0")
    if d.tdim != "time" and d.xarray:
        if p.kind(["given"], ["missing"]) == "given":
            p.put("time_dim", d.tdim)
        else:
            p.bad.append("time_dim: data has no 'time' dim")
    elif draw(st.integers(0, 6)) == 0:
        p.dim("time_dim")
    if func == "ccm":
        if draw(st.integers(0, 5)) == 0:
            p.put("E", draw(st.lists(_small(1, 5), min_size=1, max_size=4)))
        else:
            p.integer("E", _small(1, 5), 1)
        p.int_list("lib_sizes", st.integers(2, 150), 1)
        if "lib_sizes" not in p.kw or p.kw["lib_sizes"] is None:
            p.bad.append("lib_sizes: missing")
        p.integer("samples", _small(1, 8), 1, huge_bad=False)
        p.integer("seed", st.integers(0, 2**32), 0, required=False, huge_bad=False,
                  optional=True)
        if draw(st.integers(0, 3)) == 0:
            p.put("keep_samples", draw(st.booleans()))
    else:
        kind = p.pick("none", "none", "int", "list")
        if kind == "int":
            p.integer("E", _small(1, 5), 1, required=False)
        elif kind == "list":
            Es = draw(st.lists(_small(0, 5), min_size=1, max_size=4))
            p.put("E", Es, "E = 0" if 0 in Es else None)
        p.integer("E_max", _small(1, 8), 1, optional=True)
    p.integer("tau", _small(1, 3), 1, optional=True, huge_bad=False)
    p.integer("Tp", st.integers(-3, 3), None, optional=True)
    p.integer("exclusion_radius", st.integers(0, 5), 0, optional=True, huge_bad=False,
              none_ok=True)
    p.integer("knn", _small(1, 8), 1, optional=True, required=False, huge_bad=False)
    p.backend()
    p.put("progress", False)
    if d.T == 0:
        p.bad.append("data: no time points")
    if not d.numeric and spec["dtype"] != "bool":
        p.bad.append(f"data: dtype {spec['dtype']}")
    return Case(func, d, p.kw, p.bad, accessor=d.xarray and draw(st.integers(0, 3)) == 0)


def _partner(draw, d: Data, spec: dict, what: str, p: Params):
    kind = p.kind(["none"] * 3 + ["same", "name"], ["shorter", "unknown_name", "numpy"])
    if kind == "none":
        return
    if kind == "name":
        if d.is_ds:
            cols = p.kw.get("columns")
            n = len(cols) if isinstance(cols, list) else 1
            p.put(what, list(d.names[:n]) if isinstance(cols, list) else d.names[-1])
        return
    if kind == "unknown_name":
        p.put(what, "nope", "unknown variable" if d.is_ds else "a str partner")
        return
    other = dict(spec, seed=spec["seed"] + 1, chunks="none")
    if kind == "shorter":
        other["T"] = max(spec["T"] - draw(st.integers(1, 10)), 0)
        if what == "joint":
            p.bad.append("joint: different length")
    if d.is_ds:
        other["layout"] = "da1"
    partner = make_data(other).obj
    if kind == "numpy" and isinstance(partner, xr.DataArray):
        partner = partner.values
    p.put(what, partner)


@st.composite
def rqa_cases(draw, func: str):
    spec = draw(data_specs(layouts=("da1", "da1", "da2", "ds", "numpy", "list")))
    spec["oned"] = spec["oned"] or draw(st.integers(0, 3)) > 0  # arrays: one series mostly
    d = make_data(spec)
    p = Params(draw, d)
    sig = _signature(func)
    if d.is_ds:
        p.variables("columns", required=True)
    elif p.kind(["no"], ["no", "no", "yes"]) == "yes":
        p.put("columns", "x", "columns on a DataArray")
    p.integer("E", _small(1, 4), 1, optional=True)
    p.integer("tau", _small(1, 4), 1, optional=True, huge_bad=False)
    single = func == "recurrence_plot"
    which = p.kind(["eps", "eps", "rate"], ["both", "neither"])
    if which in ("eps", "both"):
        p.threshold("eps", True, single)
    if which in ("rate", "both"):
        p.threshold("recurrence_rate", False, single)
    if which == "both":
        p.bad.append("eps and recurrence_rate together")
    if which == "neither":
        p.bad.append("neither eps nor recurrence_rate")
    norm = "metric" if "metric" in sig else "norm"
    p.choice(norm, ("euclidean", "maximum", "manhattan"), ("chebyshev", "L2", None))
    if "joint" in sig and draw(st.booleans()):
        _partner(draw, d, spec, "joint", p)
        if "joint_eps" in sig and "joint" in p.kw and draw(st.booleans()):
            name = p.pick("joint_eps", "joint_recurrence_rate")
            p.threshold(name, name == "joint_eps", single)
    elif "other" in sig:
        _partner(draw, d, spec, "other", p)
    if func == "rqa":
        p.integer("theiler", _small(0, 5), 0, optional=True, huge_bad=False)
        for name in ("l_min", "v_min", "w_min"):
            if name in sig:
                p.integer(name, _small(1, 5), 1, optional=True, huge_bad=False)
        if draw(st.integers(0, 4)) == 0:
            p.integer("window", st.integers(5, 120), 2, huge_bad=True)
            if draw(st.booleans()):
                p.integer("step", _small(1, 30), 1, huge_bad=False)
        if draw(st.integers(0, 4)) == 0:
            p.integer("tile", st.integers(1, 512), 1, required=False, huge_bad=False)
        if draw(st.integers(0, 4)) == 0:
            p.put("histograms", draw(st.booleans()))
        p.backend()
        p.put("progress", False)
    else:
        if draw(st.integers(0, 4)) == 0:
            p.integer("max_states", st.integers(1, 400), 1, huge_bad=False)
    p.choice("eps_method", ("auto", "exact", "sample"), ("magic",))
    p.dim()
    if d.T == 0:
        p.bad.append("data: no time points")
    if not d.numeric and spec["dtype"] != "bool":
        p.bad.append(f"data: dtype {spec['dtype']}")
    return Case(func, d, p.kw, p.bad, accessor=d.xarray and draw(st.integers(0, 3)) == 0)


# ============================================================================ the property
def _snapshot(obj):
    if isinstance(obj, (xr.DataArray, xr.Dataset)):
        return obj.copy(deep=True)
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, dict):
        return {k: _snapshot(v) for k, v in obj.items()}
    return copy.deepcopy(obj)


def _same(a, b) -> bool:
    if isinstance(a, (xr.DataArray, xr.Dataset)):
        try:
            xr.testing.assert_identical(a, b)
        except AssertionError:
            return False
        return True
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind == "O":
            return pickle.dumps(a) == pickle.dumps(b)
        return a.tobytes() == b.tobytes()  # NaN equal to NaN, -0.0 not equal to 0.0
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return repr(a) == repr(b)


def _allowed_names(case: Case) -> tuple[set[str], set[str]]:
    """(parameter names, names in the data) a message may name."""
    d = case.data
    params = set(_signature(case.func)) | set(case.kwargs) | {"data"}
    data_names = {str(n) for n in d.all_vars} | {str(x) for x in d.dims} | {d.tdim}
    if d.sdim:
        data_names.add(d.sdim)
    return params, data_names


def _names_something(msg: str, params: set[str], data_names: set[str] = frozenset()) -> bool:
    """Does ``msg`` name one of ``params`` (as a word; a one-letter one as ``a=`` or ``a must``
    ...) or one of ``data_names`` (variables, dims: as a word when 3+ letters, else quoted)?"""
    for n in params:
        w = rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])"
        if len(n) == 1 and n != "E":
            w += r"(?=\s*(=|must|is|has|should|needs|\(|:))"
        if re.search(w, msg) or f"'{n}'" in msg:
            return True
    for n in data_names:
        if len(n) >= 3 and re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", msg):
            return True
        if f"'{n}'" in msg or f'"{n}"' in msg:
            return True
    return False


def _check_range(res, case, names, lo, hi):
    for n in names:
        if n in res.variables:
            a = np.asarray(res[n].values, dtype=float)
            a = a[np.isfinite(a)]
            if a.size and (a.min() < lo - 1e-9 or a.max() > hi + 1e-9):
                _fail(case.func, case, f"{n} outside [{lo}, {hi}]: {a.min()}..{a.max()}")


def _check_sweep(res: xr.Dataset, case: Case, d: str):
    best = f"best_{d}"
    if best not in res.variables and best not in res.attrs:
        return _fail(case.func, case, f"no {best} in the result")
    rho = res["rho"].transpose(..., d)
    lazy = any(isinstance(o, (xr.DataArray, xr.Dataset)) and o.chunks
               for o in (case.data.obj,))
    if rho.ndim == 1 and not lazy and best not in res.attrs:  # dask: the variable only
        _fail(case.func, case, f"one in-memory series but no attrs[{best!r}]")
    labels = np.asarray(res[d].values, dtype=float)
    if best in res.variables:
        b = res[best].broadcast_like(rho.isel({d: 0}, drop=True)).transpose(*rho.dims[:-1])
    else:
        b = xr.DataArray(res.attrs[best])
    r = np.asarray(rho.values, dtype=float).reshape(-1, len(labels))
    bv = np.broadcast_to(np.asarray(b.values, dtype=float).reshape(-1), (r.shape[0],))
    for row, bval in zip(r, bv, strict=True):
        fin = np.isfinite(row)
        if not fin.any():
            continue
        if bval not in labels:
            return _fail(case.func, case, f"{best}={bval} is not one of the swept {labels}")
        if row[labels == bval][0] != row[fin].max():
            return _fail(case.func, case, f"{best}={bval} has rho {row[labels == bval][0]}, "
                                          f"not the highest ({row[fin].max()})")


def _check_result(res, case: Case):
    func = case.func
    if func == "recurrence_plot":
        if not isinstance(res, xr.DataArray) or res.dtype != bool:
            _fail(func, case, f"returned {type(res).__name__} (dtype "
                              f"{getattr(res, 'dtype', None)}), not a boolean DataArray")
        return
    if not isinstance(res, xr.Dataset):
        return _fail(func, case, f"returned {type(res).__name__}, not a Dataset")
    if func == "rqa":
        _check_range(res, case, ("RR", "DET", "LAM"), 0.0, 1.0)
        return
    if "rho" not in res.variables:
        return _fail(func, case, f"no rho in the result ({list(res.variables)})")
    _check_range(res, case, ("rho",), -1.0, 1.0)
    sweep = {"embed_dimension": "E", "predict_interval": "Tp", "predict_nonlinear": "theta"}
    if func in sweep:
        _check_sweep(res, case, sweep[func])


def _quiet(func, arg):
    """hypothesis.note/event, which only work inside a @given test (not in test_edges)."""
    with contextlib.suppress(InvalidArgument):
        func(arg)


def run_case(case: Case):
    """Call, then check every part of the property (module docstring)."""
    _quiet(note, f"case: {case!r}\nkwargs: {case.kwargs!r}\ndata: {case.data.obj!r}")
    obj = case.data.obj
    before_data, before_kw = _snapshot(obj), _snapshot(case.kwargs)
    before_opts = dict(_options.OPTIONS)
    outcome = None
    start = time.perf_counter()
    try:
        if case.accessor:
            res = getattr(obj.edm, case.func)(**case.kwargs)
        else:
            res = getattr(xedm, case.func)(obj, **case.kwargs)
        if isinstance(res, (xr.Dataset, xr.DataArray)):
            res = res.compute()
    except (ValueError, TypeError) as err:
        outcome = err
    except Exception as err:  # anything else breaks the property
        outcome = err
        _fail(case.func, case, f"{type(err).__name__} escaped: {err}\n"
                               f"{''.join(traceback.format_exception(err)[-3:])}")
    elapsed = time.perf_counter() - start
    if elapsed >= CALL_LIMIT_S:
        _fail(case.func, case, f"the call took {elapsed:.1f} s")
    if not _same(before_data, obj):
        _fail(case.func, case, "the input data changed")
    if not _same(before_kw, case.kwargs):
        _fail(case.func, case, "an argument (list, mask or partner) changed")
    if dict(_options.OPTIONS) != before_opts:
        _fail(case.func, case, f"global options changed: {_options.OPTIONS}")
    _quiet(event, "result" if outcome is None else f"{type(outcome).__name__}")
    if outcome is None:
        if case.bad:
            _fail(case.func, case, f"accepted invalid arguments: {case.bad}")
        _check_result(res, case)
    elif isinstance(outcome, (ValueError, TypeError)):
        msg = str(outcome)
        if not _names_something(msg, *_allowed_names(case)):
            _fail(case.func, case, f"{type(outcome).__name__} names no parameter: {msg}")
        elif re.search(r"'_[A-Za-z_]+'|__xedm", msg):  # a private name of the package leaked
            _fail(case.func, case, f"{type(outcome).__name__} shows an internal name: {msg}")


# ============================================================================ warm-up
@pytest.fixture(scope="module", autouse=True)
def _compiled():
    """Compile the numba kernels before the timed calls (the first compile takes minutes on
    two cores; numba caches it per user afterwards)."""
    x = xr.DataArray(np.sin(0.3 * np.arange(60.0)), dims="time", name="x")
    ds = xr.Dataset({"x": x, "y": np.cos(x), "z": x**2})
    calls = [
        lambda: xedm.simplex(x, E=2), lambda: xedm.simplex(x.chunk(), E=2),
        lambda: xedm.simplex(ds, E=2, columns=["x", "y"], embedded=True),
        lambda: xedm.smap(x, E=2, theta=1.0, singular_values=True),
        lambda: xedm.smap(x, E=2, theta=1.0, knn=5, solver="ridge", alpha=0.1),
        lambda: xedm.embed_dimension(x, E_max=4), lambda: xedm.embed_dimension(x, E=[2]),
        lambda: xedm.predict_interval(x, E=2, Tp_max=3),
        lambda: xedm.predict_nonlinear(x, E=2, theta=[0, 1]),
        lambda: xedm.ccm(ds, ["x", "y"], E=2, lib_sizes=[10, 40], samples=3, seed=0,
                         progress=False),
        lambda: xedm.xmap(ds, columns=["x", "y", "z"], progress=False),
        lambda: xedm.xmap(ds, columns=["x", "y", "z"], E=2, progress=False),
        lambda: xedm.recurrence_plot(x, E=2, eps=0.3),
    ]
    for norm in ("euclidean", "maximum", "manhattan"):
        calls += [lambda n=norm: xedm.rqa(x, E=2, eps=[0.2, 0.3], norm=n, progress=False),
                  lambda n=norm: xedm.rqa(x, E=2, recurrence_rate=0.1, norm=n, window=30,
                                          progress=False)]
    calls += [lambda: xedm.rqa(x, joint=x**2, eps=0.2, progress=False),
              lambda: xedm.rqa(x, other=x[:50], eps=0.2, progress=False)]
    for c in calls:
        with contextlib.suppress(Exception):
            c()


# ============================================================================ the tests
@fuzz(80)
@given(edm_cases("simplex"))
def test_simplex(case):
    run_case(case)


@fuzz(50)
@given(edm_cases("smap"))
def test_smap(case):
    run_case(case)


@fuzz(50)
@given(edm_cases("embed_dimension"))
def test_embed_dimension(case):
    run_case(case)


@fuzz(50)
@given(edm_cases("predict_interval"))
def test_predict_interval(case):
    run_case(case)


@fuzz(50)
@given(edm_cases("predict_nonlinear"))
def test_predict_nonlinear(case):
    run_case(case)


@fuzz(60)
@given(cross_cases("ccm"))
def test_ccm(case):
    run_case(case)


@fuzz(60)
@given(cross_cases("xmap"))
def test_xmap(case):
    run_case(case)


@fuzz(80)
@given(rqa_cases("rqa"))
def test_rqa(case):
    run_case(case)


@fuzz(50)
@given(rqa_cases("recurrence_plot"))
def test_recurrence_plot(case):
    run_case(case)


# ---------------------------------------------------------------------------- fixed edges
# Combinations the random draws reach rarely: huge values of one parameter with the others
# in range, degenerate lengths and contents.  Same property as the random cases.
SPEC0 = {"layout": "da1", "T": 60, "n_series": 2, "n_vars": 2, "oned": True, "gen": "sine",
         "scale": 1.0, "nan": "none", "dtype": "float64", "time": "none", "tdim": "time",
         "sdim": "series", "series_labels": None, "name": "x", "wide": False,
         "str_var": False, "chunks": "none", "seed": 0}
H = 2**62
EDGES = [
    ("simplex", {}, {"E": 1, "tau": H}, []),
    ("simplex", {}, {"E": 2, "tau": H}, ["tau: huge"]),
    ("simplex", {}, {"E": H}, ["E: huge"]),
    ("simplex", {}, {"E": 2, "knn": H}, []),
    ("simplex", {}, {"E": 2, "exclusion_radius": H}, []),
    ("simplex", {}, {"E": 2, "Tp": H}, ["Tp: huge"]),
    ("simplex", {}, {"E": 2, "Tp": -(2**63)}, ["Tp: huge"]),
    ("simplex", {"T": 1}, {"E": 1}, []),
    ("simplex", {"T": 3}, {"E": 1}, []),
    ("simplex", {"nan": "all"}, {"E": 2}, []),
    ("simplex", {"gen": "constant_runs", "seed": 1}, {"E": 2}, []),
    ("simplex", {"time": "string"}, {"E": 2, "Tp": 3}, []),
    ("simplex", {"time": "datetime"}, {"E": 2, "Tp": -3}, []),
    ("smap", {}, {"E": 2, "solver": "ridge", "alpha": "a"}, ["alpha: a str"]),
    ("smap", {}, {"E": 2, "theta": 1e308}, []),
    ("smap", {"T": 4}, {"E": 1, "theta": 2.0}, []),
    ("smap", {}, {"E": 1, "tau": H, "theta": 1.0}, []),
    ("embed_dimension", {}, {"E": [1, H]}, ["E: huge"]),
    ("embed_dimension", {}, {"E_max": H}, ["E_max: huge"]),
    ("embed_dimension", {"T": 5}, {"E_max": 10}, []),
    ("predict_interval", {}, {"E": 2, "Tp_max": H}, ["Tp_max: huge"]),
    ("predict_interval", {}, {"E": 2, "Tp": [-H, 1]}, ["Tp: huge"]),
    ("predict_nonlinear", {}, {"E": 2, "theta": [0, 1e308]}, []),
    ("predict_nonlinear", {"gen": "constant_runs", "seed": 1}, {"E": 2}, []),
    ("ccm", {"layout": "ds"}, {"columns": ["x", "y"], "E": 2, "lib_sizes": [10],
                               "samples": H, "seed": 0, "progress": False}, []),
    ("ccm", {"layout": "ds"}, {"columns": ["x", "y"], "E": 2, "lib_sizes": [10], "samples": 2,
                               "seed": 10**30, "progress": False}, []),
    ("ccm", {"layout": "ds"}, {"columns": ["x", "y"], "E": 2, "lib_sizes": [H], "samples": 2,
                               "seed": 1, "progress": False}, []),
    ("ccm", {"layout": "ds"}, {"columns": 0, "E": 2, "lib_sizes": [10], "progress": False},
     ["columns: an int"]),
    ("ccm", {"layout": "ds"}, {"columns": ["x", "y"], "E": 1, "tau": H, "lib_sizes": [10],
                               "progress": False}, []),
    ("xmap", {"layout": "ds"}, {"columns": ["x", "y"], "exclusion_radius": H,
                                "progress": False}, []),
    ("xmap", {"layout": "ds"}, {"columns": ["x", "y"], "knn": H, "progress": False}, []),
    ("xmap", {"layout": "ds"}, {"columns": ["x", "y"], "E_max": H, "progress": False},
     ["E_max: huge"]),
    ("xmap", {"layout": "ds"}, {"columns": ["x", "y"], "E": 1, "tau": H, "progress": False},
     []),
    ("xmap", {"layout": "ds"}, {"columns": 0, "progress": False}, ["columns: an int"]),
    ("xmap", {"layout": "da2", "n_series": 1}, {"dim": "series", "progress": False}, []),
    ("rqa", {}, {"eps": 0.1, "window": 10**20}, ["window: huge"]),
    ("rqa", {}, {"eps": 0.1, "tile": H}, []),
    ("rqa", {}, {"eps": 0.1, "theiler": H}, []),
    ("rqa", {}, {"eps": 0.1, "l_min": H, "v_min": H, "w_min": H}, []),
    ("rqa", {}, {"eps": 0.1, "E": H}, ["E: huge"]),
    ("rqa", {}, {"eps": 0.1, "E": 2, "tau": H}, ["tau: huge"]),
    ("rqa", {}, {"eps": 0.1, "E": 1, "tau": H}, []),
    ("rqa", {"layout": "ds"}, {"columns": 0, "eps": 0.1}, ["columns: an int"]),
    ("rqa", {"layout": "ds"}, {"columns": ["x", "y"], "other": "SERIES", "eps": 0.5}, []),
    ("rqa", {"layout": "ds"}, {"columns": ["x", "y"], "joint": "SERIES", "eps": 0.5}, []),
    ("rqa", {"T": 2}, {"eps": 0.1}, []),
    ("rqa", {"layout": "ds", "wide": True}, {"columns": "x", "eps": 0.5, "dim": "series"}, []),
    ("rqa", {"gen": "constant_runs", "seed": 1}, {"recurrence_rate": 0.1}, []),
    ("recurrence_plot", {}, {"eps": 0.1, "max_states": 2**70}, []),
    ("recurrence_plot", {"layout": "ds"}, {"columns": 0, "eps": 0.1}, ["columns: an int"]),
    ("recurrence_plot", {"layout": "ds"}, {"columns": ["x", "y"], "other": "SERIES",
                                           "eps": 0.5}, []),
]


@pytest.mark.parametrize("func, spec, kwargs, bad", EDGES,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(EDGES)])
def test_edges(func, spec, kwargs, bad):
    d = make_data({**SPEC0, **spec})
    kwargs = {k: (make_data(SPEC0).obj if v == "SERIES" else v) for k, v in kwargs.items()}
    run_case(Case(func, d, kwargs, list(bad)))


@fuzz(20)
@given(st.dictionaries(
    st.sampled_from(["backend", "neighbors", "progress", "bogus"]),
    st.sampled_from(["cpu", "auto", "gpu", "tpu", "exact", "kdtree", True, False, None, 1]),
    max_size=3))
def test_set_options(kwargs):
    before = dict(_options.OPTIONS)
    case = Case("set_options", Data(spec={}), kwargs, [])
    try:
        with xedm.set_options(**kwargs):
            for k, v in kwargs.items():
                if xedm.get_option(k) != v:
                    _fail("set_options", case, f"get_option({k!r}) is not {v!r} inside")
    except (ValueError, TypeError) as err:
        if not _names_something(str(err), set(kwargs)):
            _fail("set_options", case, f"{type(err).__name__} names no option: {err}")
    except Exception as err:
        _fail("set_options", case, f"{type(err).__name__} escaped: {err}")
    if dict(_options.OPTIONS) != before:
        _fail("set_options", case, f"options not restored: {_options.OPTIONS} != {before}")


DATASETS = sorted(xedm.datasets.__all__)


@st.composite
def dataset_calls(draw):
    name = draw(st.sampled_from(DATASETS))
    sig = inspect.signature(getattr(xedm.datasets, name)).parameters
    kw = {}
    ints = [50, 200, 0, -3, 10**15, 2**63 + 1, 3.0, 2.5, "100", None, True, np.int32(60)]
    floats = [0.5, 3.7, 0.0, -1.0, 1e308, math.nan, math.inf, "x", None, np.float32(0.3)]
    for pname, par in sig.items():
        required = par.default is inspect.Parameter.empty
        if not required and draw(st.integers(0, 2)):
            continue
        if pname in ("n", "n_series", "N"):
            kw[pname] = draw(st.sampled_from([50, 120, 8] * 3 + ints))
        elif pname in ("transient", "subsample"):
            kw[pname] = draw(st.sampled_from([0, 1, 10, -1, 2.0, "5", None]))
        elif pname == "seed":
            kw[pname] = draw(st.sampled_from([0, 7, None, -1, 2**70, "s"]))
        elif pname == "dim":
            kw[pname] = draw(st.sampled_from(["series", "node", 3, None]))
        elif pname in ("x0", "y0", "r"):
            kw[pname] = draw(st.sampled_from([0.3, 0.7, [0.1, 0.2, 0.3], (3.6, 3.8), 2.0,
                                              math.nan, "a", None]))
        else:
            kw[pname] = draw(st.sampled_from(floats))
    return name, kw


@fuzz(40)
@given(dataset_calls())
def test_datasets(call):
    name, kwargs = call
    case = Case(f"datasets.{name}", Data(spec={}), kwargs, [])
    before = _snapshot(kwargs)
    start = time.perf_counter()
    try:
        res = getattr(xedm.datasets, name)(**kwargs)
        if not isinstance(res, (xr.DataArray, xr.Dataset)):
            _fail(case.func, case, f"returned {type(res).__name__}")
    except (ValueError, TypeError) as err:
        names = set(inspect.signature(getattr(xedm.datasets, name)).parameters) | {name}
        if not _names_something(str(err), names):
            _fail(case.func, case, f"{type(err).__name__} names no parameter: {err}")
    except Exception as err:
        _fail(case.func, case, f"{type(err).__name__} escaped: {err}")
    if time.perf_counter() - start >= CALL_LIMIT_S:
        _fail(case.func, case, "the call took 30 s or more")
    if not _same(before, kwargs):
        _fail(case.func, case, "an argument changed")


# ============================================================================ the CLI
def _cli(argv: list[str], func: str, case) -> tuple[int | None, str, str]:
    from xedm.cli import main

    out, err = io.StringIO(), io.StringIO()
    rc = None
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends break it too
        _fail(func, case, f"main() raised {type(exc).__name__}: {exc}\n"
                          f"{''.join(traceback.format_exception(exc)[-3:])}")
        return None, out.getvalue(), err.getvalue()
    if time.perf_counter() - start >= 60:
        _fail(func, case, "the command took 60 s or more")
    return rc, out.getvalue(), err.getvalue()


def _check_cli(rc, out, err, output: str | None, func, case, expect_var=None):
    if rc is None:
        return
    if "Traceback" in err or "Traceback" in out:
        return _fail(func, case, f"a traceback was printed:\n{err[-1500:]}")
    if not isinstance(rc, int):
        return _fail(func, case, f"main returned {rc!r}, not an int")
    if rc == 0:
        if output is not None:
            if not os.path.exists(output):
                return _fail(func, case, f"exit 0 but {output} was not written; stderr: {err}")
            if expect_var:
                with xr.open_dataset(output) as res:
                    if expect_var not in res.variables:
                        _fail(func, case, f"{output} has no {expect_var}: {list(res.variables)}")
        return
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error:" in ln]
    if "usage:" in err:  # argparse: usage lines, then one error line
        if len(errors) != 1 or not lines[-1].startswith(errors[0]):
            _fail(func, case, f"exit {rc}: not one error line after the usage:\n{err}")
        return
    if len(lines) != 1 or len(errors) != 1 or not lines[0].startswith("xedm"):
        _fail(func, case, f"exit {rc}: stderr is not one `xedm...: error:` line:\n{err!r}")


@st.composite
def netcdf_specs(draw):
    spec = draw(data_specs(layouts=("da2",)))
    spec["dtype"] = draw(st.sampled_from(["float64"] * 4 + ["float32", "int32", "str"]))
    spec["time"] = draw(st.sampled_from(["none", "int", "float", "datetime", "duplicate"]))
    spec["chunks"] = "none"
    spec["str_var"] = draw(st.integers(0, 4)) == 0
    spec["second_var"] = draw(st.integers(0, 3)) == 0
    return spec


def _write_file(spec: dict, tmp: str) -> str:
    kind = spec.get("file", "netcdf")
    path = os.path.join(tmp, "in.nc")
    if kind == "missing":
        return os.path.join(tmp, "missing.nc")
    if kind == "garbage":
        with open(path, "w") as f:
            f.write("not a netcdf file\n")
        return path
    d = make_data(spec)
    ds = d.obj.rename("x").to_dataset()
    if spec["second_var"]:
        ds["y"] = d.obj.isel({d.sdim: 0}, drop=True)
    if spec["str_var"]:
        ds["label"] = (d.tdim, np.array([f"s{i}" for i in range(d.T)]))
    try:
        ds.to_netcdf(path)
    except Exception:  # a file netCDF cannot hold: not a case for the CLI
        assume(False)
    return path


def _opt(draw, argv, flag, values, p=2):
    if draw(st.integers(0, p)):
        return
    v = draw(st.sampled_from(values))
    argv += [flag] if v is None else [flag, v]


@st.composite
def cli_cases(draw, command: str):
    spec = draw(netcdf_specs())
    spec["file"] = draw(st.sampled_from(["netcdf"] * 8 + ["missing", "garbage"]))
    argv = [command, "FILE"]
    ints = ["1", "2", "3", "0", "-1", "abc", "2.5", "99999999999999999999"]
    _opt(draw, argv, "--var", ["x", "x", "y", "label", "nope"])
    if command == "xmap":
        if draw(st.integers(0, 6)):
            argv += ["--series-dim", draw(st.sampled_from([spec["sdim"]] * 4 + [spec["tdim"],
                                                                                "nope"]))]
        if spec["tdim"] != "time" or draw(st.integers(0, 5)) == 0:
            argv += ["--time-dim", draw(st.sampled_from([spec["tdim"]] * 3 + ["nope"]))]
        _opt(draw, argv, "--E", ints)
        _opt(draw, argv, "--E-max", ints)
        _opt(draw, argv, "--Tp", ["0", "1", "-2", "x", "10000"])
    else:
        if spec["tdim"] != "time" or draw(st.integers(0, 5)) == 0:
            argv += ["--time-dim", draw(st.sampled_from([spec["tdim"]] * 3 + ["nope"]))]
        _opt(draw, argv, "--E", ints, p=1)
        which = draw(st.sampled_from(["eps", "eps", "rr", "rr", "both", "neither"]))
        if which in ("eps", "both"):
            argv += ["--eps", draw(st.sampled_from(["0.1", "0.5", "2", "0", "-1", "nan", "inf",
                                                    "x"]))]
        if which in ("rr", "both"):
            argv += ["--rr", draw(st.sampled_from(["0.05", "0.2", "0", "1", "1.5", "x"]))]
        _opt(draw, argv, "--theiler", ["0", "1", "5", "-1", "100000"])
        _opt(draw, argv, "--metric", ["euclidean", "maximum", "manhattan", "chebyshev"])
    _opt(draw, argv, "--tau", ints)
    _opt(draw, argv, "--backend", ["cpu", "auto", "gpu", "tpu"])
    if draw(st.booleans()):
        argv.append("-q")
    out = draw(st.sampled_from(["out.nc"] * 6 + ["missing_dir/out.nc", "out.zarr"]))
    argv += ["--out", "OUT/" + out]
    return spec, argv


def _run_cli_case(spec, argv, command, expect_var):
    case = (spec, argv)
    note(f"argv: {argv}")
    with tempfile.TemporaryDirectory() as tmp:
        path = _write_file(spec, tmp)
        argv = [path if a == "FILE" else a.replace("OUT/", tmp + "/") for a in argv]
        output = argv[argv.index("--out") + 1] if "--out" in argv else None
        before = open(path, "rb").read() if os.path.exists(path) else None
        rc, out, err = _cli(argv, f"cli {command}", case)
        _check_cli(rc, out, err, output, f"cli {command}", case, expect_var)
        after = open(path, "rb").read() if os.path.exists(path) else None
        if after != before:
            _fail(f"cli {command}", case, "the input file changed")


@fuzz(40)
@given(cli_cases("xmap"))
def test_cli_xmap(c):
    _run_cli_case(*c, "xmap", "rho")


@fuzz(40)
@given(cli_cases("rqa"))
def test_cli_rqa(c):
    _run_cli_case(*c, "rqa", "RR")


@st.composite
def demo_cases(draw):
    argv = ["demo", "--n", draw(st.sampled_from(["100", "150", "99", "-5", "abc"])),
            "--samples", draw(st.sampled_from(["2", "3", "0", "-1"]))]
    _opt(draw, argv, "--E-max", ["2", "4", "0", "-1"], p=1)
    _opt(draw, argv, "--seed", ["0", "7", "-1"], p=1)
    _opt(draw, argv, "--var", ["x", "y", "z"], p=1)
    _opt(draw, argv, "--backend", ["cpu", "gpu"], p=2)
    argv += ["-q", "--out", "OUT/" + draw(st.sampled_from(["demo.png", "demo.png",
                                                          "missing_dir/demo.png"]))]
    return argv


@fuzz(6)
@given(demo_cases())
def test_cli_demo(argv):
    import matplotlib

    matplotlib.use("Agg")
    note(f"argv: {argv}")
    with tempfile.TemporaryDirectory() as tmp:
        argv = [a.replace("OUT/", tmp + "/") for a in argv]
        rc, out, err = _cli(argv, "cli demo", argv)
        _check_cli(rc, out, err, argv[argv.index("--out") + 1], "cli demo", argv)


# ============================================================================ issue 21
# The parameters the first fuzz did not reach (issue 21, item 5): plot keyword arguments,
# option names and values, zero-length dims, huge counts and scale extremes.  Same property;
# in addition a result whose skill is all NaN must come with a warning (never silent).
import warnings  # noqa: E402


def _outcome(name: str, call, params: set[str], case=None):
    """(result or None, error or None, warnings) of ``call()``; an exception other than
    ValueError/TypeError, or one naming none of ``params``, breaks the property."""
    case = case or Case(name, Data(spec={}), {}, [])
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            res = call()
            if isinstance(res, (xr.Dataset, xr.DataArray)):
                res = res.compute()
            err = None
        except (ValueError, TypeError) as e:
            res, err = None, e
            if not _names_something(str(e), params):
                _fail(name, case, f"{type(e).__name__} names none of {sorted(params)}: {e}")
        except Exception as e:  # noqa: BLE001
            res, err = None, e
            _fail(name, case, f"{type(e).__name__} escaped: {e}\n"
                              f"{''.join(traceback.format_exception(e)[-3:])}")
    if time.perf_counter() - start >= CALL_LIMIT_S:
        _fail(name, case, f"the call took {time.perf_counter() - start:.1f} s")
    _quiet(event, "result" if err is None else type(err).__name__)
    return res, err, [w for w in seen if issubclass(w.category, UserWarning)]


def _not_silent(name: str, res, seen, case=None):
    """An all-NaN rho (or RR) never comes back without a UserWarning."""
    if not isinstance(res, xr.Dataset):
        return
    for var in ("rho", "RR"):
        if var in res.variables and res[var].size and np.isnan(res[var].values).all() \
                and not seen:
            _fail(name, case or Case(name, Data(spec={}), {}, []),
                  f"all-NaN {var} without a warning")


@pytest.fixture(scope="module")
def results():
    """One small result of each xedm function (for the plot keywords)."""
    ds = xedm.datasets.coupled_logistic(120)
    x = ds.x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "simplex": xedm.simplex(x, E=2), "smap": xedm.smap(x, E=2, theta=1.0),
            "embed_dimension": xedm.embed_dimension(x, E_max=3),
            "ccm": xedm.ccm(ds, ["x", "y"], E=2, lib_sizes=[20, 60, 100], samples=3, seed=0,
                            progress=False),
            "ccm_lags": xedm.ccm(ds, ["x", "y"], E=2, Tp=[-1, 0], lib_sizes=[20, 60],
                                 samples=3, seed=0, progress=False),
            "xmap": xedm.xmap(ds, columns=["x", "y"], E=2, progress=False),
            "rqa": xedm.rqa(x, E=2, eps=[0.1, 0.2], progress=False),
            "rqa_window": xedm.rqa(x, E=2, eps=0.1, window=40, progress=False),
            "recurrence_plot": xedm.recurrence_plot(x, E=2, eps=0.1),
        }


PLOT_KEYS = ["ax", "fig", "var", "truth", "pairs", "dim", "bogus_kw", "mark_best", "order",
             "color", "cmap", "measures", "intercept", "include_self", "alpha", "null",
             "with_prediction", "colorbar", "mask_diagonal", "band"]
PLOT_VALUES = [3, "bogus", None, True, False, "rho", "E", [("q", "r")], [("x", "y")], 0.5,
               -1, "cluster", "red", ["RR", "DET"], ["bogus"], (0.1, 0.9), "AXES", "FIG"]


@fuzz(60)
@given(st.sampled_from(["simplex", "smap", "embed_dimension", "ccm", "ccm_lags", "xmap", "rqa",
                        "rqa_window", "recurrence_plot"]),
       st.dictionaries(st.sampled_from(PLOT_KEYS), st.sampled_from(PLOT_VALUES), max_size=3))
def test_plot_keywords(results, kind, kwargs):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    ax = fig.add_subplot()
    kw = {k: ax if v == "AXES" else fig if v == "FIG" else v for k, v in kwargs.items()}
    values = {str(v) for v in kwargs.values() if isinstance(v, str)}
    try:
        _outcome(f"{kind}.edm.plot", lambda: results[kind].edm.plot(**kw),
                 set(kwargs) | values | {"ax", "fig", "var", "pairs", "library", "target"},
                 Case(f"{kind}.edm.plot", Data(spec={}), kw, []))
    finally:
        plt.close("all")


OPTION_VALUES = ["cpu", "auto", "gpu", "tpu", "exact", "kdtree", True, False, np.True_, None, 1,
                 0, "no", "yes", 0.5, 1.5, -1, 1e12, 1e3, 8, 2**70, math.nan, [True]]


@fuzz(40)
@given(st.dictionaries(st.sampled_from(sorted(_options.OPTIONS) + ["bogus", "Progress", ""]),
                       st.sampled_from(OPTION_VALUES), max_size=3),
       st.sampled_from(sorted(_options.OPTIONS) + ["bogus", "", 3, None]))
def test_option_names_and_values(kwargs, name):
    before = dict(_options.OPTIONS)
    case = Case("set_options", Data(spec={}), kwargs, [])
    res, err, _ = _outcome("set_options", lambda: xedm.set_options(**kwargs), set(kwargs), case)
    if err is None:
        try:
            for k, v in kwargs.items():
                if isinstance(v, str) or isinstance(v, (bool, np.bool_)) or v is None:
                    ok = xedm.get_option(k) is v or xedm.get_option(k) == v
                    if not ok:
                        _fail("set_options", case, f"get_option({k!r}) is not {v!r}")
                if k == "progress" and not isinstance(v, (bool, np.bool_)):
                    _fail("set_options", case, f"progress={v!r} accepted (not a bool)")
        finally:
            _options.OPTIONS.clear()
            _options.OPTIONS.update(before)
    if dict(_options.OPTIONS) != before:
        _fail("set_options", case, "options changed by a refused call")
    _outcome("get_option", lambda: xedm.get_option(name), {str(name), "option"})


def _zero(shape, layout):
    a = np.zeros(shape)
    if layout == "ds":
        return xr.Dataset({"x": (("s", "time"), a), "y": (("s", "time"), a)})
    return xr.DataArray(a, dims=("s", "time")[-len(shape):], name="x")


ZERO_CALLS = {
    "simplex": lambda d: xedm.simplex(d, E=2),
    "smap": lambda d: xedm.smap(d, E=2),
    "embed_dimension": lambda d: xedm.embed_dimension(d, E_max=3),
    "predict_interval": lambda d: xedm.predict_interval(d, E=2),
    "predict_nonlinear": lambda d: xedm.predict_nonlinear(d, E=2, theta=[0, 1]),
    "surrogates": lambda d: xedm.surrogates(d, n=3),
    "rqa": lambda d: xedm.rqa(d, E=2, eps=0.1, progress=False),
    "recurrence_plot": lambda d: xedm.recurrence_plot(d, E=2, eps=0.1),
    "xmap": lambda d: xedm.xmap(d, series_dim="s", E=2, progress=False),
    "ccm": lambda d: xedm.ccm(d, series_dim="s", E=2, lib_sizes=[5], samples=2, progress=False),
}


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 50)], ids=["T0", "series-T0", "S0"])
@pytest.mark.parametrize("func", sorted(ZERO_CALLS))
def test_zero_length_dims(func, shape):
    if func in ("xmap", "ccm") and len(shape) == 1:
        pytest.skip("cross maps take a (series, time) array")
    data = _zero(shape, "da")
    res, err, seen = _outcome(func, lambda: ZERO_CALLS[func](data),
                              {"data", "dim", "time", "s", "series", "E", "E_max", "n"})
    if err is None and isinstance(res, xr.Dataset) and shape[-1] == 0:
        _fail(func, Case(func, Data(spec={}), {}, []), f"a result for 0 time points: {res}")


HUGE = [10**6, 10**9, 10**12, 2**62]
HUGE_CALLS = {
    "surrogates.n": lambda x, v: xedm.surrogates(x, n=v, seed=0),
    "surrogates.block_length": lambda x, v: xedm.surrogates(x, "block", n=3, seed=0,
                                                           block_length=v),
    "ccm.samples": lambda x, v: xedm.ccm(xr.concat([x, x[::-1]], "s"), dim="s", E=2,
                                         lib_sizes=[10, 30], samples=v, seed=0,
                                         progress=False),
    "ccm.n_boot": lambda x, v: xedm.ccm(xr.concat([x, x[::-1]], "s"), dim="s", E=2,
                                        lib_sizes=[10, 20, 30], samples=3, n_boot=v, seed=0,
                                        progress=False),
    "xmap.surrogates": lambda x, v: xedm.xmap(xr.concat([x, x[::-1]], "s"), dim="s", E=2,
                                              surrogates=v, seed=0, progress=False),
    "predict_nonlinear.theta": lambda x, v: xedm.predict_nonlinear(
        x, E=2, theta=np.linspace(0, 8, min(v, 10**7))),
    "rqa.eps": lambda x, v: xedm.rqa(x, E=2, eps=np.linspace(0.01, 1, min(v, 10**7)),
                                     progress=False),
    "datasets.transient": lambda x, v: xedm.datasets.logistic_map(50, transient=v),
    "datasets.n": lambda x, v: xedm.datasets.logistic_map(v),
}


@fuzz(40)
@given(st.sampled_from(sorted(HUGE_CALLS)), st.sampled_from(HUGE))
def test_huge_counts(call, value):
    """A huge count gives a result at once (block_length: the series' length), or is refused
    up front naming its parameter; under a low work limit (one second of estimated work)
    nothing runs for minutes, and no MemoryError escapes."""
    x = xr.DataArray(np.sin(0.3 * np.arange(60.0)), dims="time", name="x")
    func, param = call.split(".")
    params = {param, "work_limit", "samples", "theta", "eps", "n"}
    with xedm.set_options(work_limit=1):
        res, _, seen = _outcome(call, lambda: HUGE_CALLS[call](x, value), params,
                                Case(call, Data(spec={}), {param: value}, []))
    _not_silent(call, res, seen)


SCALE_CALLS = {
    "simplex": lambda x: xedm.simplex(x, E=2)["rho"],
    "smap": lambda x: xedm.smap(x, E=2, theta=2.0)["rho"],
    "embed_dimension": lambda x: xedm.embed_dimension(x, E_max=3)["rho"],
    "predict_nonlinear": lambda x: xedm.predict_nonlinear(x, E=2, theta=[0, 2])["rho"],
    "rqa.RR": lambda x: xedm.rqa(x, E=2, recurrence_rate=0.1, progress=False)["RR"],
    "rqa.DET": lambda x: xedm.rqa(x, E=2, recurrence_rate=0.1, progress=False)["DET"],
}


@fuzz(40)
@given(st.sampled_from(sorted(SCALE_CALLS)),
       st.sampled_from([1e-300, 1e-200, 2.0**-1000, 1e-8, 1e8, 2.0**1000, 1e200, 1e300]),
       st.sampled_from(["logistic", "sine", "walk"]))
def test_scale_extremes(func, scale, gen):
    """Every skill and RQA measure is the same for the data in any unit (1e-300..1e300)."""
    t = np.arange(120.0)
    x = {"logistic": np.asarray(xedm.datasets.logistic_map(120).values),
         "sine": np.sin(0.37 * t) + 0.1 * np.cos(1.3 * t),
         "walk": np.cumsum(np.random.default_rng(3).normal(size=120))}[gen]
    ref = SCALE_CALLS[func](xr.DataArray(x, dims="time"))
    case = Case(func, Data(spec={}), {"scale": scale, "gen": gen}, [])
    res, err, _ = _outcome(func, lambda: SCALE_CALLS[func](xr.DataArray(x * scale,
                                                                         dims="time")),
                           {"data"}, case)
    if err is not None:
        _fail(func, case, f"refused data scaled by {scale}: {err}")
    elif not np.allclose(res.values, ref.values, rtol=0, atol=5e-3, equal_nan=True):
        _fail(func, case, f"scale {scale}: {res.values} != {ref.values}")
