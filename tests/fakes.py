"""Stand-ins shared by the tests (imported as ``fakes``, like ``naive``)."""

from __future__ import annotations


class Clock:
    """A clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t
