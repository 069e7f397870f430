"""The search's clock: the kernels read the time themselves, so a search ends
at its time limit even when no timer thread wakes to stop it."""

import threading
import time

import numpy as np
from numba import njit

from solver import clock
from solver.intrinsics import CLOCKS, monotonic_ns
from solver.position import Position
from solver.search import Searcher


@njit(cache=True)
def _read_clock():
    return monotonic_ns()


def test_the_kernels_clock_is_the_clock_of_perf_counter():
    assert CLOCKS is not None  # Linux and macOS have clock_gettime
    _read_clock()
    for _ in range(100):
        before = time.clock_gettime_ns(CLOCKS)
        inside = _read_clock()
        after = time.clock_gettime_ns(CLOCKS)
        assert before <= inside <= after
    assert abs(time.perf_counter_ns() - _read_clock()) < 10**9  # the same clock as perf_counter, not a second one


class _SleepingTimer:
    """A timer thread that never wakes (a machine too busy to run it)."""

    def __init__(self, interval, function):
        self.daemon = True

    def start(self):
        pass

    def cancel(self):
        pass

    def join(self, timeout=None):
        pass


def test_a_search_ends_at_its_time_when_no_timer_wakes(monkeypatch):
    searcher = Searcher(max_table_seeds=-1, threads=1)
    monkeypatch.setattr(clock.threading, "Timer", _SleepingTimer)
    found = []
    worker = threading.Thread(target=lambda: found.append(searcher.search(Position.initial(), time=0.3)))
    worker.start()
    worker.join(120)  # without the kernels' own clock it would search the opening until its value is exact
    ended_by_itself = not worker.is_alive()
    if not ended_by_itself:
        searcher.stop()
        worker.join()
    assert ended_by_itself
    assert found and not found[0].exact and found[0].depth > 0
    assert found[0].move in Position.initial().legal_moves()


def test_a_clock_without_a_limit_never_stops_by_itself():
    kept = clock.Clock(time.perf_counter(), None)
    assert kept.control[clock.DEADLINE] == 0 and kept.running()
    passed = clock.Clock(time.perf_counter() - 1.0, time.perf_counter() - 0.5)
    assert passed.control[clock.DEADLINE] > 0
    assert not passed.running() and passed.ended()  # read from the clock, before any timer woke
    passed.close()
    assert np.all(kept.control[clock.STOP] == 0)
