"""The lean stages (solver.lean): the same values as the in-memory stages, in half a byte a position."""

import errno
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import build, index, layer_state, lean, plan, retrograde, tables
from solver.errors import BuildError
from solver.layers import LayerStore

HASHES = {int(seeds): digest for seeds, digest in json.load(
    open(os.path.join(os.path.dirname(__file__), "data", "layer_sha256.json")))["sha256"].items()}
LAYERS = 14


def _digest(values):
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def reference():
    """Layers 0..14 by the in-memory stages."""
    return retrograde.solve_up_to(LAYERS, threads=1)


def _lean(seeds, reference, scratch, groups, **sizes):
    """Layer `seeds` by the lean stages, its smaller layers copied from `reference`: (values, histogram, stats)."""
    store = LayerStore(seeds)
    rows = index.RowTables(seeds).arrays
    layer = lean.LeanLayer(seeds, str(scratch), store, rows, groups, lambda m: store.put(m, reference.layer(m)),
                           tell_threads=1 + seeds % 2, **sizes)  # one thread, or two sharing the codes
    with layer_state.thread_count(2):
        stats = layer.solve()
    source, histogram = layer.values()
    values = source[0 : index.layer_size(seeds)]
    layer.clear()
    assert os.listdir(scratch) == []
    return values, histogram, stats


def _block(seeds, chunk, parts):
    """Blocks of whole chunks, about `parts` a few times over the layer (a pass records a step a block)."""
    share = -(-index.layer_size(seeds) // (4 * parts))
    return max(chunk, -(-share // chunk) * chunk)


def _groups(seeds, kind):
    layers = layer_state.exit_layers(seeds)
    if kind == "one":
        return [layers]
    if kind == "each":
        return [[m] for m in layers] or [[]]
    return [layers[0::2], layers[1::2]] if len(layers) > 1 else [layers]  # "two": interleaved


@pytest.mark.parametrize("seeds", range(LAYERS + 1))
def test_the_lean_stages_give_every_layer_the_in_memory_values(reference, tmp_path, seeds):
    # The smallest stack spills to the queue file at once; chunks and exit slices of a block or a few make
    # every layer past 2 cross their edges; the exit groups vary with the layer.
    kind = ("one", "each", "two")[seeds % 3]
    chunk = layer_state.BLOCK * (1 + seeds % 3)
    values, histogram, stats = _lean(seeds, reference, tmp_path, _groups(seeds, kind), stack=lean.MIN_STACK,
                                     chunk=chunk, block=_block(seeds, chunk, 1 + seeds % 2))
    assert np.array_equal(values, reference.layer(seeds))
    assert _digest(values) == HASHES[seeds]
    assert np.array_equal(histogram, tables.histogram(reference.layer(seeds), seeds))
    assert stats["exit_passes"] == len(_groups(seeds, kind))
    assert stats["working_bytes"] == ((index.layer_size(seeds) + 1) // 2 + 7) // 8 * 8  # whole words of codes
    if seeds >= 8:
        assert stats["queued_bytes"] > 0  # the queue file was used


def test_a_big_stack_and_chunks_give_the_same_values(reference, tmp_path):
    values, _, stats = _lean(LAYERS, reference, tmp_path, _groups(LAYERS, "one"))
    assert _digest(values) == HASHES[LAYERS] and stats["queued_bytes"] > 0  # the seeds of a chunk go through it


# Codes ------------------------------------------------------------------------------


def _naive_code(state):
    """The code of a naive state: ("unresolved", count, exit bit), ("earlier",), ("won",), ("lost",)."""
    if state[0] == "unresolved":
        count, bit = state[1], state[2]
        assert not (count == 0 and bit), "lost, not unresolved"
        return count | (lean.EXIT_BIT if bit else 0)
    return {"earlier": lean.EARLIER, "won": lean.WON, "lost": lean.LOST}[state[0]]


UNRESOLVED = [("unresolved", count, bit) for count in range(7) for bit in (False, True) if count or not bit]
STATES = UNRESOLVED + [("earlier",), ("won",), ("lost",)]


def test_the_sixteen_codes_are_the_states_a_stage_needs():
    codes = [_naive_code(state) for state in STATES]
    assert len(STATES) == 16 and sorted(codes) == list(range(16))
    assert all(lean.unresolved(code) == (state[0] == "unresolved") for code, state in zip(codes, STATES))


@settings(deadline=None)  # the kernels compile on the first example
@given(st.lists(st.integers(0, 15), min_size=1, max_size=64), st.data())
def test_codes_pack_two_a_byte_and_each_is_written_alone(values, data):
    codes = np.zeros((len(values) + 1) // 2, dtype=np.uint8)
    for rank, code in enumerate(values):
        lean.set_code(codes, rank, code)
    assert [lean.code_of(codes, rank) for rank in range(len(values))] == values
    rank = data.draw(st.integers(0, len(values) - 1))
    code = data.draw(st.integers(0, 15))
    lean.set_code(codes, rank, code)
    assert [lean.code_of(codes, r) for r in range(len(values))] == [code if r == rank else v
                                                                      for r, v in enumerate(values)]


@settings(deadline=None)
@given(st.sampled_from(UNRESOLVED), st.booleans())
def test_a_child_resolved_moves_an_unresolved_code_as_the_rule_says(state, child_lost):
    _, count, bit = state
    if child_lost:
        expected = ("won",)
    elif count == 0:
        return  # a child told of is counted: a count of 0 is never told of a won child
    elif count == 1 and bit:
        expected = ("lost",)
    else:
        expected = ("unresolved", count - 1, bit)
    assert lean.told(_naive_code(state), child_lost) == _naive_code(expected)


@settings(deadline=None)
@given(st.sampled_from(UNRESOLVED), st.integers(layer_state.NO_EXIT, 20), st.integers(1, 20))
def test_a_stage_reads_an_exit_as_the_rule_says(state, exit, stage):
    _, count, bit = state
    if bit and exit > -(stage + 1):
        return  # the bit was set at a stage above: the exit is at most minus that stage
    if exit == stage:
        expected = ("won",)
    elif exit <= -stage or bit:
        expected = ("lost",) if count == 0 else ("unresolved", count, True)
    else:
        expected = state
    assert lean.exit_seen(_naive_code(state), exit, stage) == _naive_code(expected)


# Through the build ------------------------------------------------------------------


def test_a_small_budget_builds_every_layer_in_the_lean_stages(tmp_path, monkeypatch):
    monkeypatch.setattr(lean, "STACK", lean.MIN_STACK)  # the queue file in use on every layer past 7
    budget = 400 << 20
    assert plan.budget_too_small(budget) is None and plan.mode(0, budget) == "lean"
    rows = []
    build.build(LAYERS, str(tmp_path), threads=2, memory=budget, report=rows.append)
    assert [row["mode"] for row in rows] == ["lean"] * (LAYERS + 1)
    assert all(row["disk_bytes_written"] > 0 and row["peak_bytes"] > 0 for row in rows)
    for seeds in range(LAYERS + 1):
        assert _digest(tables.load_values(str(tmp_path), seeds)) == HASHES[seeds], f"layer {seeds}"
    assert not os.path.exists(tmp_path / build.SCRATCH_NAME)  # the default scratch folder goes once empty


def test_the_plan_picks_the_lean_stages_only_where_nothing_faster_fits():
    budget = 22 << 30
    assert [plan.mode(n, budget) for n in (34, 35, 36, 37, 39, 40)] == [
        "memory", "disk", "disk", "lean", "lean", "too big"]
    layout = plan.lean_plan(38, budget)
    assert layout is not None and layout["memory_bytes"] <= budget
    assert layout["memory_bytes"] < plan.LEAN_BASE_BYTES + 0.6 * index.layer_size(38) + index.layer_size(36)
    assert plan.lean_plan(38, plan.lean_least_bytes(38)) is not None
    assert plan.lean_plan(38, plan.lean_least_bytes(38) - 1) is None


def test_a_full_scratch_disk_stops_a_lean_layer_in_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    def full(descriptor, view):
        raise OSError(errno.ENOSPC, "No space left on device")

    directory = str(tmp_path / "db")
    monkeypatch.setattr(lean, "write_piece", full)
    with pytest.raises(BuildError, match=r"the scratch folder .* is full \(layer 0, lean stages\)"):
        build.build(3, directory, memory=400 << 20)
    assert tables.built_layers(directory) == []
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    assert not os.path.exists(scratch) or os.listdir(scratch) == []  # the default folder goes once empty
    monkeypatch.undo()
    build.build(3, directory, memory=400 << 20)
    assert tables.built_layers(directory) == [0, 1, 2, 3]


@settings(deadline=None)
@given(st.binary(min_size=1, max_size=200), st.data())
def test_the_checksum_adds_up_over_pieces_and_sees_a_changed_byte(data, draw):
    whole = np.frombuffer(data, dtype=np.uint8)
    cut = draw.draw(st.integers(0, len(data) // 8)) * 8
    assert int(lean.checksum(whole, 0)) == (int(lean.checksum(whole[:cut], 0))
                                            + int(lean.checksum(whole[cut:], cut))) % 2**64
    at = draw.draw(st.integers(0, len(data) - 1))
    changed = whole.copy()
    changed[at] ^= draw.draw(st.integers(1, 255))
    assert lean.checksum(changed, 0) != lean.checksum(whole, 0)


def test_a_damaged_state_file_is_refused(tmp_path):
    path = str(tmp_path / "state")
    writer = lean.StreamWriter(path, str(tmp_path), 5)
    writer.write(np.arange(100, dtype=np.int8))
    crc = writer.close()
    with open(path, "r+b") as file:
        file.seek(50)
        file.write(b"\x7f")
    reader = lean.StreamReader(path, 100, crc)
    reader.read_into(np.empty(100, dtype=np.int8))
    with pytest.raises(BuildError, match="does not match its checksum"):
        reader.finish()
    with pytest.raises(BuildError, match="has 100 bytes, not 99"):
        lean.StreamReader(path, 99, crc)
    os.symlink(path, str(tmp_path / "link"))
    with pytest.raises(BuildError, match="cannot read"):
        lean.StreamReader(str(tmp_path / "link"), 100, crc)
    with pytest.raises(BuildError):
        lean.StreamWriter(path, str(tmp_path), 5)  # never over an existing file


@pytest.mark.parametrize("stage", [13, 6, 1])
def test_a_lean_layer_killed_in_its_stages_is_built_again_whole(tmp_path, stage):
    directory = str(tmp_path / "db")
    build.build(12, directory, memory=400 << 20)
    # A kill -9 as the pass at the start of `stage` of layer 13 begins: its scratch files are left behind.
    code = ("import os\nfrom solver import build, lean\n"
            "passing = lean.LeanLayer._pass\n"
            "def killing(self, stage, *args):\n"
            f"    if self.seeds == 13 and stage == {stage}:\n"
            "        os.kill(os.getpid(), 9)\n"
            "    return passing(self, stage, *args)\n"
            "lean.LeanLayer._pass = killing\n"
            f"build.build(13, {directory!r}, threads=1, memory={400 << 20})\n")
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert killed.returncode == -9, killed.stderr
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    assert lean.own_files(scratch, 13) and not os.path.exists(tables.table_path(directory, 13))
    rows = []
    build.build(13, directory, memory=400 << 20, report=rows.append)
    assert rows[-1]["mode"] == "lean" and rows[-1]["built"]
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert not os.path.exists(scratch)
