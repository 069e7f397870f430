"""One Tablebase shared by many threads gives exactly what one thread gets.

Each round opens a fresh Tablebase (nothing loaded yet), so the threads race
on the lazy loads of whole layers, on the growth of the layer store and on
the chunk readers of the layers read a chunk at a time, while they probe.
"""

import random
import sys
import threading

import numpy as np
import pytest

from solver import Position, probe
from solver.errors import TablebaseClosedError
from solver.probe import Tablebase

THREADS = 4
ROUNDS = 16  # fresh tablebases: the races are in the first loads
PROBES = 24  # positions each thread asks about in a round


def _positions(count, rng, top=12):
    found = []
    while len(found) < count:
        seeds = rng.randint(1, top)
        cuts = sorted(rng.randint(0, seeds) for _ in range(11))
        houses = [b - a for a, b in zip([0] + cuts, cuts + [seeds])]
        position = Position(houses, rng.choice("SN"), (0, 0))
        if not position.is_over():
            found.append(position)
    return found


def _answers(tablebase, positions, boards, which):
    """What one worker asks about positions `which`: values, moves, some lines and batches."""
    out = {}
    for i in which:
        position = positions[i]
        out["value", i] = tablebase.value(position)
        out["moves", i] = [(m.move, m.captured, m.value) for m in tablebase.moves(position)]
        if i % 9 == 0:
            out["line", i] = tuple(tablebase.line(position, max_plies=8).moves)
        if i % 4 == 0:
            out["values", i] = tablebase.values(boards[i : i + 30]).tolist()
    return out


@pytest.fixture
def switching():
    """Threads switch every few microseconds, so that the races show."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_threads_sharing_a_tablebase_get_single_thread_values(table_dir, monkeypatch, switching):
    # Layers above 9 are read a chunk at a time, the others whole: both paths race.
    monkeypatch.setattr(probe, "WHOLE_LAYER_LIMIT", 200_000)
    monkeypatch.setattr(probe, "CACHE_CHUNKS", 2)
    rng = random.Random(19)
    positions = _positions(240, rng)
    boards = np.array([p.mover_board() for p in positions], dtype=np.uint8)
    with Tablebase(table_dir) as alone:
        expected = _answers(alone, positions, boards, range(len(positions)))
    for _ in range(ROUNDS):
        shared = Tablebase(table_dir)
        asked = [rng.sample(range(len(positions)), PROBES) for _ in range(THREADS)]
        start = threading.Barrier(THREADS)
        got = [None] * THREADS
        failures = []

        def work(worker):
            try:
                start.wait(60)
                got[worker] = _answers(shared, positions, boards, asked[worker])
            except BaseException as error:  # reported below, with the worker's number
                failures.append((worker, repr(error)))

        workers = [threading.Thread(target=work, args=(w,)) for w in range(THREADS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        assert not any(worker.is_alive() for worker in workers)
        shared.close()
        assert not failures
        for answers in got:
            wrong = [(key, value, expected[key]) for key, value in answers.items() if value != expected[key]]
            assert not wrong, wrong[:5]


def test_close_during_probes_raises_a_named_error_in_the_prober(table_dir, monkeypatch, switching):
    monkeypatch.setattr(probe, "WHOLE_LAYER_LIMIT", 200_000)
    rng = random.Random(5)
    positions = _positions(400, rng)
    boards = np.array([p.mover_board() for p in positions], dtype=np.uint8)
    with Tablebase(table_dir) as alone:
        truth = {i: alone.value(p) for i, p in enumerate(positions)}
        batch = alone.values(boards).tolist()
    for _ in range(4):
        shared = Tablebase(table_dir)
        started = threading.Event()
        outcomes = []

        def probe_until_closed():
            try:
                while True:
                    for i, position in enumerate(positions):
                        outcomes.append(shared.value(position) == truth[i])
                        started.set()
                    outcomes.append(shared.values(boards).tolist() == batch)
            except TablebaseClosedError:
                outcomes.append("closed")
            except BaseException as error:
                outcomes.append(repr(error))

        prober = threading.Thread(target=probe_until_closed)
        prober.start()
        started.wait(60)
        shared.close()
        prober.join(60)
        assert not prober.is_alive()
        assert outcomes[-1] == "closed", outcomes[-1]
        assert all(o is True for o in outcomes[:-1])
        with pytest.raises(TablebaseClosedError):
            shared.value(positions[0])
