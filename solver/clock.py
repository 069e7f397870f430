"""The time of one search: when it ends, the flag that stops its kernels,
and whether another depth should start.

Every kernel of a search reads control[STOP] every few microseconds of
search. The search's own end (a time limit) or stop() sets it to STOPPED
for good, a little before the end: the threads still have to notice the
flag, join and hand the result back. The kernels read the clock themselves
at each look at the flag (control[DEADLINE], intrinsics.monotonic_ns), since
a timer thread wakes late on a busy machine (17-33 ms at 0.2 s with a table
build on both cores); the timer stays, for a clock the kernels cannot read
and for the waits between kernels. A deadline before the end (the first half of a component search,
the share of deepening when bounds follow) sets it to EXPIRED, cleared when
the work it bounds ends.

At the search's own end a depth is started whatever the last ones predict:
the end cuts it short and the search keeps what it found (so a fixed move
time is used whole). Before an earlier deadline, after which more work
follows, no depth starts that the last two predict cannot finish.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import numpy as np

from .intrinsics import CLOCKS

STOP = 0  # control[STOP] != 0: every kernel of the search returns at its next check
DEADLINE = 1  # control[DEADLINE]: the kernels set STOPPED themselves once monotonic_ns() reaches it (0: never)
STOPPED, EXPIRED = 1, 2  # control[STOP]: the search is over; a deadline before its end passed
MAX_GROWTH = 4.0  # most an iteration is predicted to grow over the last (their ratio is noisy when short)
# The stop flag is set this much before the end (seconds, share of the time): the
# timer thread wakes late on a busy machine (7-19 ms at 0.2 s on a loaded 2-core one),
# and the search then still returns its result.
STOP_MARGIN, STOP_MARGIN_SHARE = 0.015, 0.05


def margin(started: float, end: float) -> float:
    """Seconds before `end` at which a search that started at `started` is stopped."""
    return min(STOP_MARGIN, STOP_MARGIN_SHARE * (end - started))


# Work after the search or instead of it (a table answer, the line of an exact
# value: ranking toward leaving a layer) looks at the clock only between steps
# of a few milliseconds, tens under load: it stops this share of the time, and
# at least ANSWER_MARGIN seconds, before the end (0.1 s a move: at 67 ms).
ANSWER_MARGIN, ANSWER_MARGIN_SHARE = 0.03, 0.1


def answer_deadline(started: float, end: float) -> float:
    """The time (time.perf_counter()) by which work besides the search of a
    search that started at `started` and must end at `end` stops."""
    return end - max(ANSWER_MARGIN, ANSWER_MARGIN_SHARE * (end - started))


def predicted(spent: list[float]) -> float:
    """Seconds the next iteration should take, from the last two: the last
    times their ratio (iterations grow by a roughly steady factor)."""
    last, before = spent[-1], spent[-2]
    growth = last / before if before > 0 else 1.0
    return last * min(max(growth, 1.0), MAX_GROWTH)


class Clock:
    """The stop flag of one search (`control`, read by its kernels) and the
    timers that set it. `started` and `end` are time.perf_counter() values
    (`end` None: no time limit)."""

    def __init__(self, started: float, end: float | None) -> None:
        self.control = np.zeros(2, dtype=np.int64)
        self.started, self.end = started, end
        self._timer: threading.Timer | None = None
        if end is not None:
            stop_at = end - margin(started, end)
            if CLOCKS is not None:
                now = time.perf_counter()
                self.control[DEADLINE] = max(1, time.clock_gettime_ns(CLOCKS) + int((stop_at - now) * 1e9))
            self._timer = threading.Timer(max(0.0, stop_at - time.perf_counter()), self.stop)
            self._timer.daemon = True
            self._timer.start()

    def stop(self) -> None:
        """Stop the search for good (from any thread)."""
        self.control[STOP] = STOPPED

    def running(self) -> bool:
        """Whether the kernels may go on (the end read from the clock, as they do)."""
        deadline = int(self.control[DEADLINE])
        if self.control[STOP] == 0 and deadline and CLOCKS is not None and time.clock_gettime_ns(CLOCKS) >= deadline:
            self.control[STOP] = STOPPED
        return bool(self.control[STOP] == 0)

    def ended(self) -> bool:
        """Whether the search's end (or stop()) stopped it, not an earlier deadline."""
        return bool(self.control[STOP] == STOPPED)

    def _expire(self) -> None:
        if self.control[STOP] == 0:
            self.control[STOP] = EXPIRED

    @contextlib.contextmanager
    def until(self, deadline: float | None) -> Iterator[bool]:
        """A block of work bounded by `deadline`: one before the end expires
        the kernels there (cleared when the block ends). Yields whether the
        block runs to the search's own end."""
        soft = None
        if deadline is not None and (self.end is None or deadline < self.end):
            soft = threading.Timer(max(0.0, deadline - time.perf_counter()), self._expire)
            soft.daemon = True
            soft.start()
        try:
            yield soft is None
        finally:
            if soft is not None:
                soft.cancel()
                soft.join()
                if self.control[STOP] == EXPIRED:
                    self.control[STOP] = 0

    def starts_another(self, spent: list[float], deadline: float | None, to_the_end: bool) -> bool:
        """Whether a deepening bounded by `deadline` starts its next depth,
        `spent` the seconds of its depths so far; `to_the_end`: the deadline
        is the search's own end (see the module's docstring)."""
        if deadline is None:
            return True
        now = time.perf_counter()
        if now >= deadline:
            return False
        return to_the_end or len(spent) < 2 or now + predicted(spent) <= deadline

    def close(self) -> None:
        """The search is over: its timer goes."""
        if self._timer is not None:
            self._timer.cancel()
