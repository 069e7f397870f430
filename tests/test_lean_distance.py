"""Distances to conversion holding a byte a position (solver.lean_distance):
byte for byte those of the in-memory pass (solver.distance) and of the naive
reference, as recorded, on 1 and 2 threads, its start in groups and slices;
the build's fallback to it, and a kill in the middle of it."""

import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from naive_distance import naive_distances

from solver import build, distance, index, lean_distance, plan, retrograde, tables
from solver.distance import distance_at, layer_distances
from solver.errors import BuildError

LAYERS = 12
HASHES = json.load(open(os.path.join(os.path.dirname(__file__), "data", "distance_sha256.json")))["sha256"]


@pytest.fixture(scope="module")
def store():
    return retrograde.solve_up_to(LAYERS)


def digest(bytes_, rows):
    return hashlib.sha256(np.ascontiguousarray(bytes_, np.uint8).tobytes()
                          + np.ascontiguousarray(rows, "<i8").tobytes()).hexdigest()


def lean(store, seeds, **options):
    values = store.layer(seeds).copy()
    return lean_distance.lean_distances(seeds, store, lambda lo, hi: values[lo:hi].copy(),
                                        tables.histogram(values, seeds), **options)


@pytest.mark.parametrize("threads", [1, 2])
def test_every_layer_s_distances_are_those_recorded_and_the_in_memory_pass_s(store, threads):
    # Values streamed in slices of 1,000 ranks, so every class pass crosses many slices.
    for seeds in range(LAYERS + 1) if threads == 2 else (LAYERS - 1, LAYERS):
        found = lean(store, seeds, threads=threads, slice_ranks=1000)
        assert digest(found.distance, found.overflow) == HASHES[str(seeds)]["pass"], seeds
        assert found.stats["distance_lean"]


@pytest.mark.parametrize("cap", [2, 7])
def test_a_low_cap_gives_the_in_memory_pass_s_overflow_rows(store, cap):
    for seeds in (9, LAYERS):
        expected = layer_distances(seeds, store, cap=cap)
        found = lean(store, seeds, cap=cap)
        assert found.overflow.shape[0] > 0
        assert np.array_equal(found.distance, expected.distance) and np.array_equal(found.overflow, expected.overflow)


@pytest.mark.parametrize("seeds", range(9))
def test_every_distance_matches_the_naive_reference(store, seeds):
    check_naive(store, seeds)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [9, 10])
def test_every_distance_matches_the_naive_reference_to_layer_10(store, seeds):
    check_naive(store, seeds)


def check_naive(store, seeds):
    boards = [index.layer_boards(m, 0, index.layer_size(m)) for m in range(seeds + 1)]
    layers = [dict(zip((tuple(int(x) for x in b) for b in boards[m]), (int(v) for v in store.layer(m))))
              for m in range(seeds + 1)]
    reference = naive_distances(seeds, layers)
    found = lean(store, seeds)
    got = [distance_at(found.distance, found.overflow, rank) for rank in range(index.layer_size(seeds))]
    wrong = [(board, d) for board, d in zip((tuple(int(x) for x in b) for b in boards[seeds]), got)
             if reference[board] != d]
    assert wrong[:5] == []


def test_a_start_in_groups_and_slices_gives_the_same_distances(store):
    seeds = LAYERS
    size = index.layer_size(seeds)
    layers = lean_distance.exit_layers(seeds)
    bounds = [0, size // 3, 2 * size // 3, size]
    found = lean(store, seeds, bounds=bounds, groups=[layers[::2], layers[1::2]])
    assert digest(found.distance, found.overflow) == HASHES[str(seeds)]["pass"]
    with pytest.raises(ValueError, match="groups"):
        lean(store, seeds, groups=[layers[1:]])


@pytest.mark.parametrize("told", ["scanned", "few rows"])
def test_frontiers_told_from_carried_rows_or_from_their_blocks_agree(store, monkeypatch, told):
    # Every frontier found again in its blocks, or most: a handful of rows carried.
    if told == "scanned":
        monkeypatch.setattr(lean_distance, "CARRIED_TOLD", 0)
    else:
        monkeypatch.setattr(lean_distance, "carried_rows", lambda size: 7)
    for seeds in (10, LAYERS):
        found = lean(store, seeds)
        assert digest(found.distance, found.overflow) == HASHES[str(seeds)]["pass"], seeds


def test_values_that_are_not_the_fixed_point_are_refused(store):
    seeds = 8
    values = store.layer(seeds).copy()
    values[np.flatnonzero(values > 0)[:50]] += 1  # no longer what the moves give: some class cannot settle
    with pytest.raises(BuildError, match="fixed point"):
        lean_distance.lean_distances(seeds, store, lambda lo, hi: values[lo:hi].copy(),
                                     tables.histogram(values, seeds))


def test_the_plan_holds_the_distance_bytes_and_not_the_values():
    seeds = 20
    size = index.layer_size(seeds)
    need = lean_distance.BASE_BYTES + lean_distance.working_bytes(size)
    big = index.layer_size(30)  # the frontiers' carried rows and a slice of values: 64 MiB beside the bytes
    assert big < lean_distance.working_bytes(big) < big * 1.04
    assert lean_distance.plan(seeds, need - 1) is None
    largest = index.layer_size(seeds - 2)
    bounds, groups, spilled = lean_distance.plan(seeds, need + largest + size)
    assert bounds == [0, size] and sorted(m for g in groups for m in g) == lean_distance.exit_layers(seeds)
    assert not spilled
    bounds, groups, spilled = lean_distance.plan(seeds, need + largest + size // 4)
    assert len(bounds) > 2 and max(b - a for a, b in itertools.pairwise(bounds)) <= size // 4 and not spilled
    # Layer 37 on a 24 GiB machine (22 GiB): its bytes do not fit beside layer 35, so its start spills them.
    layout = lean_distance.plan(37, 22 << 30)
    assert layout.spilled and plan.distance_plan(37, 22 << 30)[0] == "lean"
    assert plan.distance_plan(37, 22 << 30)[1] <= 22 << 30 and plan.distance_plan(38, 22 << 30)[0] == "none"
    assert [plan.distance_plan(n, 22 << 30)[0] for n in (34, 35, 36)] == ["memory", "sliced", "lean"]


def test_a_spilled_start_and_a_raw_copy_of_the_values_give_the_same_distances_and_leave_no_file(store, tmp_path):
    seeds = LAYERS
    size = index.layer_size(seeds)
    layers = lean_distance.exit_layers(seeds)
    spill = str(tmp_path / "start")
    os.symlink(str(tmp_path / "target"), spill)  # a link planted at the name is removed, not written through
    found = lean(store, seeds, bounds=[0, size // 2, size], groups=[layers[::2], layers[1::2]], spill=spill,
                 raw=str(tmp_path / "values"), slice_ranks=10_000)
    assert digest(found.distance, found.overflow) == HASHES[str(seeds)]["pass"]
    assert os.listdir(tmp_path) == []


def force_lean(monkeypatch):
    """The 2-byte pass made to need more than any budget: the build takes this one."""
    monkeypatch.setattr(distance, "working_bytes", lambda size: 1 << 60)


def file_digest(directory, seeds):
    stored, rows = tables.load_distances(directory, seeds)
    return digest(stored[: index.layer_size(seeds)], rows)


def test_a_folder_of_values_alone_gains_the_recorded_distances_through_it(tmp_path, monkeypatch):
    directory = str(tmp_path)
    build.build(10, directory, distances=False)
    before = {n: tables.load_values(directory, n).copy() for n in (9, 10)}
    force_lean(monkeypatch)
    rows = []
    build.build(10, directory, report=rows.append)
    assert all(row["distances"] and row.get("distance_lean") for row in rows if row["positions"] > 1)
    for seeds in range(11):
        assert file_digest(directory, seeds) == HASHES[str(seeds)]["file"], seeds
    for seeds, values in before.items():
        assert np.array_equal(tables.load_values(directory, seeds), values)


KILLED = """
import os, signal, sys
from solver import build, distance, lean_distance, tables
distance.working_bytes = lambda size: 1 << 60
where = sys.argv[2]
if where == "classes":
    solve = lean_distance._count
    def dying(*args):
        if args[0] == 10:  # layer 10's fourth class
            dying.calls += 1
            if dying.calls == 4:
                os.kill(os.getpid(), signal.SIGKILL)
        return solve(*args)
    dying.calls = 0
    lean_distance._count = dying
else:
    read = lean_distance.FileValues.__getitem__
    def dying(self, where):
        if self.shape[0] > 300000:  # layer 10's, read as its file is written again: the temporary is there
            os.kill(os.getpid(), signal.SIGKILL)
        return read(self, where)
    lean_distance.FileValues.__getitem__ = dying
build.build(10, sys.argv[1], threads=1)
"""


@pytest.mark.parametrize("where", ["classes", "write"])
def test_a_kill_in_the_middle_leaves_the_values_and_the_same_command_completes_them(tmp_path, monkeypatch, where):
    directory = str(tmp_path)
    build.build(10, directory, distances=False)
    values = tables.load_values(directory, 10).copy()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [os.getcwd(), os.environ.get("PYTHONPATH")] if p)}
    done = subprocess.run([sys.executable, "-c", KILLED, directory, where], env=env, capture_output=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    tables.check_values(directory, 10)
    assert np.array_equal(tables.load_values(directory, 10), values)
    assert not tables.has_distances(directory, 10) and tables.has_distances(directory, 9)
    if where == "classes":  # the values' uncompressed copy for the classes, left by the kill
        assert os.path.exists(tables.table_path(directory, 10) + ".distance-values")
    force_lean(monkeypatch)
    rows = []
    build.build(10, directory, report=rows.append)
    assert [r["seeds"] for r in rows if r.get("distances_added")] == [10]
    assert file_digest(directory, 10) == HASHES["10"]["file"]
    assert not [name for name in os.listdir(directory) if ".tmp" in name or "distance-" in name]
