"""Progress bars: one bar per long call, advancing in real steps, off with set_options; on a
terminal only: elsewhere (stderr captured or redirected) a plain line a minute."""

from __future__ import annotations

import numpy as np
import pytest
import tqdm.auto
import xarray as xr
from fakes import Clock

import xedm
import xedm._progress as progress_mod
import xedm.labeled.edm as edm
import xedm.recurrence.recurrence as rec


class Recorder:
    """Stands in for tqdm: records the totals and every step."""

    bars: list = []

    def __init__(self, iterable=None, total=None, desc=None, **kwargs):
        self.iterable, self.total, self.desc, self.steps = iterable, total, desc, []
        Recorder.bars.append(self)

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.steps.append(1)

    def update(self, n=1):
        self.steps.append(n)

    def close(self):
        pass


@pytest.fixture
def bars(monkeypatch):
    """tqdm replaced by a Recorder, on a terminal (as if stderr were one)."""
    Recorder.bars = []
    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    monkeypatch.setattr(progress_mod, "interactive", lambda: True)
    return Recorder.bars


@pytest.fixture
def many():
    return xedm.datasets.many_series(12, 200, seed=1).x


@pytest.mark.parametrize("func,kw", [
    ("embed_dimension", {"E_max": 4}),
    ("predict_interval", {"E": 2, "Tp_max": 3}),
    ("predict_nonlinear", {"E": 2, "theta": [0, 1, 3]}),
    ("simplex", {"E": 2}),
])
def test_sweeps_over_many_series_advance_series_by_series(bars, many, monkeypatch, func, kw):
    with xedm.set_options(progress=False):
        want = getattr(many.edm, func)(**kw)
    assert bars == []
    monkeypatch.setattr(edm, "_PROGRESS_MIN_WORK", 0)
    monkeypatch.setattr(edm, "_PROGRESS_CHUNKS", 5)
    got = getattr(many.edm, func)(**kw)
    (bar,) = bars
    assert bar.desc == func and bar.total == 12
    assert bar.steps == [3, 3, 3, 3]  # 12 series in chunks of ceil(12 / 5)
    xr.testing.assert_identical(got, want)


def test_small_calls_and_one_series_are_not_split(bars, many):
    many.edm.embed_dimension(E_max=3)  # 12 x 200 points: below _PROGRESS_MIN_WORK
    many.isel(series=0).edm.embed_dimension(E_max=3)
    assert bars == []


def test_simplex_splits_one_series_only_for_long_work():
    # below T² = _SIMPLEX_SPLIT_WORK a split only costs (50 small kernel calls on one core)
    short, long = np.zeros((1, 1, 4_000)), np.zeros((1, 1, 40_000))
    simplex = {"min_work": edm._SIMPLEX_SPLIT_WORK}
    assert edm._row_progress(short, "simplex", None, **simplex)[0] == 1
    for args, kw in [((short, "smap"), {}), ((long, "simplex", None), simplex)]:
        chunks, _, close = edm._row_progress(*args, **kw)  # S-map's rule unchanged
        close()
        assert chunks == edm._PROGRESS_CHUNKS


def test_rqa_one_long_series_advances_in_rounds(bars, monkeypatch):
    x = xedm.datasets.logistic_map(700)
    with xedm.set_options(progress=False):
        want = x.edm.rqa(E=2, eps=0.05)
    assert bars == []
    monkeypatch.setattr(rec, "PROGRESS_MIN_CELLS", 0)
    # one diagonal per block: enough blocks for every round to keep 4 per thread (rounds
    # are capped at len(blocks) // (4 * threads)) on machines of up to 17 threads
    got = x.edm.rqa(E=2, eps=0.05, tile=1)
    (bar,) = bars
    n = 700 - 1
    assert bar.total == n * n
    assert len(bar.steps) >= 10 and sum(bar.steps) == bar.total
    xr.testing.assert_identical(got, want)  # the rounds do not change the counts
    # progress=False on the call turns it off too
    bars.clear()
    x.edm.rqa(E=2, eps=0.05, progress=False)
    assert bars == []


def test_rqa_many_windows_one_bar(bars, monkeypatch):
    monkeypatch.setattr(rec, "PROGRESS_MIN_CELLS", 0)
    x = xedm.datasets.logistic_map(600)
    q = x.edm.rqa(E=2, recurrence_rate=0.05, window=200, step=50)
    (bar,) = bars
    assert bar.total == len(q.time) * 199 * 199 and sum(bar.steps) == bar.total
    assert len(bar.steps) > 1


def test_xmap_has_one_bar_and_it_turns_off(bars):
    ds = xedm.datasets.many_series(5, 200, seed=0)
    ds.x.edm.xmap(series_dim="series", E=2)
    assert [b.desc for b in bars] == ["xmap"]
    assert len(bars[0].steps) >= 1
    bars.clear()
    with xedm.set_options(progress=False):
        ds.x.edm.xmap(series_dim="series", E=2)
    assert bars == []


def test_progress_bar_helpers_off():
    from xedm.labeled.inputs import counter_bar, progress_bar

    assert progress_bar(False, "x", 3) is iter
    bar = counter_bar(False, "x", 10)
    bar.update(3)
    bar.close()
    np.testing.assert_equal(type(bar).__name__, "_NoBar")


@pytest.mark.parametrize("func,kw", [
    ("embed_dimension", {"E_max": 4}),
    ("predict_nonlinear", {"E": 2, "theta": [0, 1, 3]}),
    ("predict_nonlinear", {"E": 2, "theta": [0, 2], "knn": 8}),
    ("smap", {"E": 3, "theta": 2.0}),
    ("simplex", {"E": 3}),
    ("simplex", {"E": 3, "exclusion_radius": 2, "lib": slice(0, 250), "pred": slice(200, 399)}),
    ("predict_interval", {"E": 2, "Tp_max": 4}),
])
def test_one_long_series_advances_over_prediction_rows(bars, monkeypatch, func, kw):
    """A single series (no batch to split) runs its prediction rows in chunks, one bar step
    each, with the same results as in one piece."""
    x = xedm.datasets.logistic_map(400)
    with xedm.set_options(progress=False):
        want = getattr(x.edm, func)(**kw)
    assert bars == []
    monkeypatch.setattr(edm, "_PROGRESS_MIN_WORK", 0)
    monkeypatch.setattr(edm, "_SIMPLEX_SPLIT_WORK", 0)
    monkeypatch.setattr(edm, "_PROGRESS_CHUNKS", 7)
    got = getattr(x.edm, func)(**kw)
    xr.testing.assert_identical(got, want)
    assert len(bars) == 1 and bars[0].total == 7 and bars[0].steps == [1] * 7


# ----------------------------------------------------------------------------- not a terminal
def log_lines(err: str) -> list[str]:
    assert "\r" not in err and "\x1b" not in err  # no bar redrawn in the log
    return [line for line in err.splitlines() if line.strip()]


def elapsed(line: str) -> int:
    import re

    m = re.search(r", (?:(\d+)h)?(\d+)m(\d+)?s? elapsed$", line)
    assert m, line
    h, mnt, s = (int(v or 0) for v in m.groups())
    return 3600 * h + 60 * mnt + s


@pytest.fixture
def log(monkeypatch):
    """Records any tqdm bar made; stderr is captured (not a terminal); the clock moves 25 s
    per reading, so each minute passes within a few steps."""
    Recorder.bars = []
    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    clock = Clock(25.0)
    monkeypatch.setattr(progress_mod, "clock", clock)
    return clock


def test_not_a_terminal_means_no_bar(capsys):
    assert not progress_mod.interactive()  # pytest captures stderr
    assert isinstance(progress_mod.bar(range(3), desc="x"), progress_mod.LogProgress)


def test_a_terminal_gets_tqdm(monkeypatch, capsys):
    class TTY:
        def isatty(self):
            return True

        def write(self, text):
            pass

        def flush(self):
            pass

    monkeypatch.setattr("sys.stderr", TTY())
    assert progress_mod.interactive()
    Recorder.bars = []
    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    progress_mod.bar(desc="x", total=3).update(1)
    assert [b.desc for b in Recorder.bars] == ["x"]


def test_log_lines_at_most_one_a_minute(monkeypatch, capsys):
    clock = Clock(7.0)
    monkeypatch.setattr(progress_mod, "clock", clock)
    bar = progress_mod.bar(desc="xmap", total=1000, unit="series")
    for _ in range(100):
        bar.update(10)
    bar.close()
    lines = log_lines(capsys.readouterr().err)
    # 100 updates of 7 s each: 700 s, so 11 lines, the first at 63 s
    assert len(lines) == 11
    assert lines[0] == "xmap: 90/1000 series (9%), 1m03s elapsed"
    times = [elapsed(line) for line in lines]
    assert (np.diff(times) >= 60).all()


def test_log_short_work_writes_nothing(capsys):
    with progress_mod.bar(range(5), desc="quick") as bar:
        assert list(bar) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""


def test_api_call_logs_lines_not_bars(log, monkeypatch, capsys):
    monkeypatch.setattr(rec, "PROGRESS_MIN_CELLS", 0)
    x = xedm.datasets.logistic_map(700)
    x.edm.rqa(E=2, eps=0.05, tile=1)
    assert Recorder.bars == []  # no tqdm bar where stderr is not a terminal
    lines = log_lines(capsys.readouterr().err)
    assert lines and all(line.startswith("rqa: ") and " cell (" in line for line in lines)
    times = [elapsed(line) for line in lines]
    assert times[0] >= 60 and (np.diff(times) >= 60).all()


@pytest.mark.parametrize("off", ["call", "option"])
def test_log_off_with_progress_false(log, monkeypatch, capsys, off):
    monkeypatch.setattr(rec, "PROGRESS_MIN_CELLS", 0)
    x = xedm.datasets.logistic_map(700)
    if off == "call":
        x.edm.rqa(E=2, eps=0.05, tile=1, progress=False)
    else:
        with xedm.set_options(progress=False):
            x.edm.rqa(E=2, eps=0.05, tile=1)
    assert Recorder.bars == [] and capsys.readouterr().err == ""


def test_xmap_over_many_series_logs(log, capsys):
    log.step = 61.0  # a minute passes at every step: one line per step
    ds = xedm.datasets.many_series(6, 150, seed=0)
    ds.x.edm.xmap(series_dim="series", E=2)
    assert Recorder.bars == []
    lines = log_lines(capsys.readouterr().err)
    assert lines and all(line.startswith("xmap: ") for line in lines)
    assert lines[-1].split(",")[0].endswith(("/6 series (100%)", "(100%)"))


def test_a_jupyter_kernel_gets_bars(monkeypatch):
    """Jupyter's stderr is no terminal but draws tqdm's widgets (Colab's shell subclasses it)."""
    import sys
    import types

    class ZMQInteractiveShell:
        pass

    class Shell(ZMQInteractiveShell):
        pass

    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: Shell()
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert progress_mod.interactive()
    fake.get_ipython = lambda: None  # IPython imported, no kernel
    assert not progress_mod.interactive()
