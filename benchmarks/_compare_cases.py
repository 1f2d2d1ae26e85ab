"""The cases of benchmarks/compare.py: one method per kind of row (simplex, S-map,
embed_dimension, xmap, CCM, the L=2^20 simplex in a child process), each timing xedm, kEDM and
pyEDM on the same data, and :meth:`Bench.plan`, the table of rows with their sizes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

from _compare_data import (
    as_dataarray,
    as_frame,
    ccm_dataset,
    coupled_logistic,
    lorenz_x,
    network_logistic,
)
from _compare_measure import (
    RETIME_S,
    Row,
    call,
    kedm_rho,
    maxabs,
    pyedm_rho,
    quiet,
    scalar,
    timed,
)
from _compare_pyedm_extras import plan_rows
from _compare_sweeps import exclusion_row

COMPARE = Path(__file__).resolve().parent / "compare.py"  # the big row's child runs it


class Bench:
    def __init__(self, args, tools, notes):
        self.args = args
        self.quick = args.quick
        self.xedm = tools["xedm"]
        self.kedm = tools["kedm"]
        self.pyedm = tools["pyEDM"]
        self.tool_notes = notes
        self.threads = args.threads or os.cpu_count() or 1
        self._cache = {}

    # sizes --------------------------------------------------------------
    def L(self, full, quick):
        return quick if self.quick else full

    def series(self, n):
        key = ("lorenz", n)
        if key not in self._cache:
            self._cache[key] = lorenz_x(n)
        return self._cache[key]

    def xfn(self, name):
        """xedm.<name> or None."""
        if self.xedm is None:
            return None
        try:
            return getattr(self.xedm, name)
        except AttributeError:
            return None

    def run_tool(self, row, tool, fn):
        """Time fn for one tool; errors become notes, never crashes.

        Short calls (< RETIME_S) are timed again after the row's other tools ran (see
        :func:`retime`): on a shared VM a slow spell then cannot land on one tool only.
        """
        try:
            best, out = timed(quiet(fn), self.args.repeat)
        except Exception as exc:
            row.notes.append(f"{tool} failed: {type(exc).__name__}: {str(exc)[:160]}")
            return None, None
        attr = {"xedm": "xedm_s", "kEDM": "kedm_s", "pyEDM": "pyedm_s"}.get(tool)
        if attr is not None and best < RETIME_S:
            row.__dict__.setdefault("_retime", []).append((attr, fn))
        return best, out

    # warm-up ------------------------------------------------------------
    def warm_up(self):
        """Run each xedm function once on tiny data; returns seconds (None if no xedm)."""
        if self.xedm is None:
            return None, []
        da = as_dataarray(self.series(80))
        done = []
        t0 = time.perf_counter()
        jobs = [
            ("simplex", lambda f: f(da, E=3)),
            ("simplex", lambda f: f(da, E=8)),  # the diagonal kNN kernel (E >= 7)
            ("smap", lambda f: f(da, E=3, theta=2.0)),
            ("simplex", lambda f: call(f, da, E=3, generate_steps=3)),
            ("smap", lambda f: call(f, da, E=3, theta=2.0, generate_steps=3)),
            ("multiview", lambda f: f(ccm_dataset(coupled_logistic(80)), ["x", "y"], "x", 2)),
            ("embed_dimension", lambda f: call(f, da, E_max=4)),
            ("predict_exclusion_radius", lambda f: call(f, da, E=3, exclusion_radius=[0, 5])),
            (
                "ccm",
                lambda f: call(
                    f,
                    ccm_dataset(coupled_logistic(80)),
                    columns=["x", "y"],
                    lib_sizes=[20, 40],
                    samples=3,
                    seed=1,
                    E=2,
                    progress=False,
                ),
            ),
            (
                "xmap",
                lambda f: call(
                    f, as_dataarray(network_logistic(3,
                                                     80)), series_dim="series", E=2, progress=False
                ),
            ),
            (
                "xmap",
                lambda f: call(
                    f,
                    as_dataarray(network_logistic(3, 80)),
                    series_dim="series",
                    E=None,
                    E_max=4,
                    progress=False,
                ),
            ),
        ]
        for name, job in jobs:
            fn = self.xfn(name)
            if fn is None:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    job(fn)
                done.append(name)
            except Exception as exc:
                print(f"  warm-up of xedm.{name} failed: {type(exc).__name__}: {exc}")
        # pyEDM's first call pays its own imports; keep that out of its timings too
        if self.pyedm is not None:
            try:
                quiet(
                    lambda: self.pyedm.Simplex(
                        as_frame({"x": self.series(80)}),
                        columns="x",
                        target="x",
                        lib="1 80",
                        pred="1 80",
                        E=2,
                    )
                )()
            except Exception:
                pass
        return time.perf_counter() - t0, done

    # simplex ------------------------------------------------------------
    def simplex_row(self, name, L, E, target=""):
        import numpy as np

        x = self.series(L)
        row = Row(name, f"simplex LOO L={L:,} E={E}", target=target)
        f = self.xfn("simplex")
        rx = rk = rp = None
        if f is None:
            row.notes.append("xedm.simplex missing")
        else:
            da = as_dataarray(x)
            row.xedm_s, res = self.run_tool(row, "xedm", lambda: f(da, E=E))
            if res is not None:
                rx = scalar(res["rho"])
                row.rho = rx
        if self.kedm is not None:
            x32 = x.astype(np.float32)
            row.kedm_s, pred = self.run_tool(row, "kEDM", lambda: self.kedm.simplex(x32, x32, E=E))
            if pred is not None:
                rk = kedm_rho(x, pred, E)
        if self.pyedm is not None:
            df = as_frame({"x": x})
            row.pyedm_s, out = self.run_tool(
                row,
                "pyEDM",
                lambda: self.pyedm.Simplex(
                    df,
                    columns="x",
                    target="x",
                    lib=f"1 {L}",
                    pred=f"1 {L}",
                    E=E,
                    Tp=1,
                    kdWorkers=self.threads,
                ),
            )
            if out is not None:
                rp = pyedm_rho(out)
        row.d_rho_pyedm = maxabs((rx, rp))
        row.d_rho_kedm = maxabs((rx, rk))
        return row

    # S-map --------------------------------------------------------------
    def smap_row(self, name, L, E=5, theta=2.0):
        import numpy as np

        x = self.series(L)
        row = Row(name, f"smap LOO L={L:,} E={E} theta={theta:g}")
        f = self.xfn("smap")
        rx = rk = rp = None
        if f is None:
            row.notes.append("xedm.smap missing")
        else:
            da = as_dataarray(x)
            row.xedm_s, res = self.run_tool(row, "xedm", lambda: f(da, E=E, theta=theta))
            if res is not None:
                rx = scalar(res["rho"])
                row.rho = rx
        if self.kedm is not None:
            x32 = x.astype(np.float32)
            row.kedm_s, pred = self.run_tool(
                row, "kEDM", lambda: self.kedm.smap(x32, x32, E=E, theta=theta)
            )
            if pred is not None:
                rk = kedm_rho(x, pred, E)
        if self.pyedm is not None:
            df = as_frame({"x": x})
            # leave-one-out with pyEDM's default knn (len(lib)-1) uses every other library
            # point: the same neighbour set as xedm's default
            row.pyedm_s, out = self.run_tool(
                row,
                "pyEDM",
                lambda: self.pyedm.SMap(
                    df,
                    columns="x",
                    target="x",
                    lib=f"1 {L}",
                    pred=f"1 {L}",
                    E=E,
                    Tp=1,
                    theta=theta,
                    kdWorkers=self.threads,
                ),
            )
            if out is not None:
                rp = pyedm_rho(out["predictions"])
        row.d_rho_pyedm = maxabs((rx, rp))
        row.d_rho_kedm = maxabs((rx, rk))
        row.notes.append("kEDM S-map is float32 (sgels) with mean(d) over n_lib incl. self")
        return row

    # embed_dimension ----------------------------------------------------
    def edim_row(self, name, L, E_max=20):
        import numpy as np

        x = self.series(L)
        half = L // 2
        row = Row(name, f"embed_dimension E=1..{E_max} L={L:,} (lib 1st half, pred 2nd)")
        f = self.xfn("embed_dimension")
        rho_x = rho_p = None
        best = {}
        if f is None:
            row.notes.append("xedm.embed_dimension missing")
        else:
            da = as_dataarray(x)
            row.xedm_s, res = self.run_tool(
                row, "xedm", lambda: f(da, E_max=E_max, lib=slice(1, half), pred=slice(half + 1, L))
            )
            if res is not None:
                rho_x = np.asarray(res["rho"].values, dtype=float).reshape(-1)
                row.rho = float(np.nanmax(rho_x))
                best["xedm"] = int(res.attrs.get("best_E", int(np.nanargmax(rho_x)) + 1))
        if self.kedm is not None:
            x32 = x.astype(np.float32)
            row.kedm_s, bk = self.run_tool(
                row, "kEDM", lambda: self.kedm.edim(x32, E_max=E_max, tau=1, Tp=1)
            )
            if bk is not None:
                best["kEDM"] = int(bk)
                # kEDM's rho per E, untimed, for the agreement column
                lib32, pred32 = x32[:half], x32[half:]
                rho_k = []
                for E in range(1, E_max + 1):
                    p = self.kedm.simplex(lib32, pred32, E=E, Tp=1)
                    rho_k.append(kedm_rho(x[half:], p, E))
                if rho_x is not None:
                    # xedm's pred windows may reach back into the first half (E-1 more
                    # points than kEDM): rho differs by O(E/L)
                    row.d_rho_kedm = maxabs((rho_x, np.array(rho_k)))
        if self.pyedm is not None:
            df = as_frame({"x": x})
            row.pyedm_s, out = self.run_tool(
                row,
                "pyEDM",
                lambda: self.pyedm.EmbedDimension(
                    df,
                    columns="x",
                    target="x",
                    maxE=E_max,
                    lib=f"1 {half}",
                    pred=f"{half + 1} {L}",
                    Tp=1,
                    numProcess=self.threads,
                    kdWorkers=1,
                    showPlot=False,
                ),
            )
            if out is not None:
                rho_p = out["rho"].to_numpy(dtype=float)  # rounded to 6 dp by pyEDM
                best["pyEDM"] = int(out["E"].to_numpy()[int(np.nanargmax(rho_p))])
                row.d_rho_pyedm = maxabs((rho_x, rho_p))
        row.extra["best_E"] = best
        if best:
            row.notes.append("best E " + ", ".join(f"{k}={v}" for k, v in best.items()))
        row.notes.append("pyEDM rho rounded to 6 dp")
        return row

    # big ------------------------------------------------------------------
    def big_row(self, name, L, E):
        row = Row(name, f"simplex LOO L={L:,} E={E} (xedm alone)", target="peak RSS < 4 GB")
        if self.xfn("simplex") is None:
            row.notes.append("xedm.simplex missing")
            return row
        cmd = [sys.executable, str(COMPARE), "--_child-big", str(L), str(E)]
        env = dict(os.environ)
        if self.args.threads:
            env["OMP_NUM_THREADS"] = env["NUMBA_NUM_THREADS"] = str(self.args.threads)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        line = [s for s in proc.stdout.splitlines() if s.startswith("{")]
        if proc.returncode != 0 or not line:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            row.notes.append(f"child failed (rc={proc.returncode}): {' | '.join(tail)[:300]}")
            return row
        info = json.loads(line[-1])
        row.xedm_s = info["seconds"]
        row.rho = info["rho"]
        row.extra.update(info)
        gb = info["peak_rss_bytes"] / 1e9
        row.notes.append(
            f"peak RSS {gb:.2f} GB ({'OK' if gb < 4 else 'OVER'} < 4 GB), "
            f"data+interpreter before the call {info['rss_before_bytes'] / 1e9:.2f} GB"
        )
        return row

    # xmap -----------------------------------------------------------------
    def xmap_row(self, name, N, L, E_max=20):
        import numpy as np

        data = network_logistic(N, L)
        row = Row(
            name,
            f"xmap N={N} L={L:,}, E per series (E_max={E_max}) + all pairs",
            target="<= 0.5x kEDM (edim+xmap)" if not self.quick else "",
        )
        f = self.xfn("xmap")
        if f is None:
            row.notes.append("skipped xedm column: xedm.xmap does not exist yet")
        else:
            da = as_dataarray(data)
            row.xedm_s, res = self.run_tool(
                row, "xedm", lambda: call(f, da, series_dim="series", E=None, E_max=E_max,
                                          progress=False)
            )
            if res is not None:
                rho = res["rho"] if hasattr(res, "data_vars") else res
                row.rho = float(np.nanmean(np.asarray(rho)))
        if self.kedm is not None:
            d32 = np.ascontiguousarray(data.T.astype(np.float32))  # (L, N): columns = series
            t_edim, edims = self.run_tool(
                row,
                "kEDM edim",
                lambda: [int(self.kedm.edim(d32[:, i].copy(), E_max=E_max)) for i in range(N)],
            )
            if edims is not None:
                t_xmap, _ = self.run_tool(row, "kEDM xmap", lambda: self.kedm.xmap(d32, edims))
                if t_xmap is not None:
                    row.kedm_s = t_edim + t_xmap
                    row.extra.update(kedm_edim_s=t_edim, kedm_xmap_s=t_xmap)
                    row.notes.append(f"kEDM edim {t_edim:.2f} s + xmap {t_xmap:.2f} s")
        # rho agreement, untimed: a few series, one common E (kEDM uses the target's E,
        # xedm the library's, so only a common E compares like with like)
        if f is not None and self.kedm is not None:
            n_sub, E_c = min(N, 6), 3
            sub = data[:n_sub]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rx = call(f, as_dataarray(sub), series_dim="series", E=E_c, progress=False)
                rx = rx["rho"] if hasattr(rx, "data_vars") else rx
                if {"library", "target"} <= set(getattr(rx, "dims", ())):
                    rx = rx.transpose("library", "target")  # kEDM's [i, j] = library i
                rx = np.asarray(rx, dtype=float)
                rk = self.kedm.xmap(np.ascontiguousarray(sub.T.astype(np.float32)), [E_c] * n_sub)
                row.d_rho_kedm = maxabs((rx, rk))
                row.notes.append(f"d_rho on {n_sub} series, E={E_c} for all")
            except Exception as exc:
                row.notes.append(f"xmap rho check failed: {type(exc).__name__}: {exc}")
        return row

    # ccm ------------------------------------------------------------------
    def ccm_row(self, name, L, n_sizes=10, samples=100, E=2):
        import numpy as np

        data = coupled_logistic(L)
        M = L - (E - 1)  # valid states at Tp=0: the full library
        sizes = [int(s) for s in np.linspace(M / n_sizes, M, n_sizes).round()]
        sizes[-1] = M
        row = Row(
            name,
            f"ccm x<->y L={L:,} {n_sizes} lib sizes x {samples} samples E={E}",
            target=">= 50x pyEDM" if not self.quick else "",
        )
        f = self.xfn("ccm")
        rx = None
        seed = 42
        if f is None:
            row.notes.append("skipped xedm column: xedm.ccm does not exist yet")
        else:
            ds = ccm_dataset(data)
            row.xedm_s, res = self.run_tool(
                row,
                "xedm",
                lambda: call(
                    f,
                    ds,
                    columns=["x", "y"],
                    lib_sizes=sizes,
                    samples=samples,
                    seed=seed,
                    E=E,
                    tau=1,
                    Tp=0,
                    progress=False,
                    _required=("samples", "seed"),
                ),
            )
            if res is not None:
                try:
                    rho = res["rho"] if hasattr(res, "data_vars") else res
                    rx = {
                        "x:y": np.asarray(rho.sel(library="x", target="y"), dtype=float),
                        "y:x": np.asarray(rho.sel(library="y", target="x"), dtype=float),
                    }
                    row.rho = float(rx["y:x"][-1])
                except Exception as exc:
                    row.notes.append(f"xedm ccm result not understood: {exc}")
        if self.kedm is not None:
            x32, y32 = (np.ascontiguousarray(v.astype(np.float32)) for v in data)
            # kEDM draws lib_size raw positions of the series (Floyd, without replacement),
            # (E-1)tau+Tp of which can never be library states; only lib_size >= len(series)
            # is its full library. So its last size is L, not M.
            k_sizes = sizes[:-1] + [L]

            def kedm_both():
                return {
                    "x:y": np.array(
                        self.kedm.ccm(
                            x32, y32, lib_sizes=k_sizes, sample=samples, E=E, tau=1, Tp=0, seed=seed
                        )
                    ),
                    "y:x": np.array(
                        self.kedm.ccm(
                            y32, x32, lib_sizes=k_sizes, sample=samples, E=E, tau=1, Tp=0, seed=seed
                        )
                    ),
                }

            row.kedm_s, rk = self.run_tool(row, "kEDM", kedm_both)
            if rx is not None and rk is not None:
                row.d_rho_kedm = maxabs(*((rx[k][-1], rk[k][-1]) for k in rx))
        if self.pyedm is not None:
            df = as_frame({"x": data[0], "y": data[1]})
            row.pyedm_s, out = self.run_tool(
                row,
                "pyEDM",
                lambda: self.pyedm.CCM(
                    df,
                    columns="x",
                    target="y",
                    libSizes=sizes,
                    sample=samples,
                    E=E,
                    Tp=0,
                    seed=seed,
                    parallel=self.threads,
                    showPlot=False,
                ),
            )
            if out is not None and rx is not None:
                rp = {"x:y": out["x:y"].to_numpy(float), "y:x": out["y:x"].to_numpy(float)}
                # only the full library size is deterministic: sampling RNGs differ
                row.d_rho_pyedm = maxabs(*((rx[k][-1], rp[k][-1]) for k in rx))
                row.extra["d_rho_pyedm_mean_over_sizes"] = maxabs(*((rx[k], rp[k]) for k in rx))
        row.notes.append("d_rho at the full library size only (sampling RNGs differ)")
        return row

    # table of rows --------------------------------------------------------
    def plan(self):
        q = self.quick
        L1k, L10k, L4k = (300, 600, 400) if q else (1_000, 10_000, 4_000)
        Ebig = 20
        rows = [
            ("simplex-1k-E3", lambda: self.simplex_row("simplex-1k-E3", L1k, 3)),
            ("simplex-1k-E20", lambda: self.simplex_row("simplex-1k-E20", L1k, 20 if not q else 8)),
            ("simplex-10k-E3", lambda: self.simplex_row("simplex-10k-E3", L10k, 3)),
            (
                "simplex-10k-E20",
                lambda: self.simplex_row("simplex-10k-E20", L10k, 20 if not q else 8),
            ),
            (
                "simplex-4k-E3",
                lambda: self.simplex_row(
                    "simplex-4k-E3", L4k, 3, target="" if q else ">= 100x pyEDM"
                ),
            ),
            (
                "simplex-4k-E20",
                lambda: self.simplex_row(
                    "simplex-4k-E20", L4k, 20 if not q else 8, target="" if q else ">= 100x pyEDM"
                ),
            ),
            ("smap-1k", lambda: self.smap_row("smap-1k", 200 if q else 1_000)),
            ("smap-4k", lambda: self.smap_row("smap-4k", 300 if q else 4_000)),
            (
                "edim-10k",
                lambda: self.edim_row("edim-10k", 600 if q else 10_000, E_max=6 if q else 20),
            ),
            (
                "xmap-100x1k",
                lambda: self.xmap_row(
                    "xmap-100x1k", *((4, 300) if q else (100, 1_000)), E_max=6 if q else 20
                ),
            ),
            (
                "xmap-20x10k",
                lambda: self.xmap_row(
                    "xmap-20x10k", *((3, 600) if q else (20, 10_000)), E_max=6 if q else 20
                ),
            ),
            (
                "ccm-2k",
                lambda: self.ccm_row(
                    "ccm-2k", 300 if q else 2_000, n_sizes=3 if q else 10, samples=5 if q else 100
                ),
            ),
            ("exclusion-2k", lambda: exclusion_row(self, "exclusion-2k", 300 if q else 2_000)),
            (
                "simplex-1M-E20",
                lambda: self.big_row("simplex-1M-E20", 2**14 if q else 2**20, Ebig if not q else 8),
            ),
        ]
        return rows + plan_rows(self)
