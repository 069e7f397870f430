"""The lean stages (solver.lean): the same values as the in-memory stages, in half a byte a position."""

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import build, disk, exits, index, layer_state, lean, plan, retrograde, tables
from solver.errors import BuildError, ScratchError
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


def _state_bytes(seeds, reference, scratch, threads):
    """Layer `seeds` solved with `threads` (tell, settle) threads, small blocks: the state file's bytes after
    each stage's pass, its checksum and the stages' report."""
    scratch.mkdir()
    store = LayerStore(seeds)
    layer = lean.LeanLayer(seeds, str(scratch), store, index.RowTables(seeds).arrays, _groups(seeds, "two"),
                           lambda m: store.put(m, reference.layer(m)), stack=lean.MIN_STACK, chunk=CHUNK,
                           block=_block(seeds, CHUNK, 8), tell_threads=threads[0], settle_threads=threads[1])
    after = []
    rewrite = layer._rewrite

    def kept(work, stage, workers=1):
        rewrite(work, stage, workers)
        after.append(lean.read_window(os.path.join(str(scratch), lean.state_name(seeds)), 0, layer.size).tobytes())

    layer._rewrite = kept
    with layer_state.thread_count(2):
        stats = layer.solve()
    layer.clear()
    return after, layer.state_sum, stats["stages"]


@pytest.mark.parametrize("threads", [(2, 2), (1, 2), (2, 4)])
def test_one_thread_and_several_write_the_same_state_file_bytes(reference, tmp_path, threads):
    # Blocks of a few chunks, each pass about 32 of them: the threads of a pass take blocks out of order.
    seeds = LAYERS
    one = _state_bytes(seeds, reference, tmp_path / "one", (1, 1))
    several = _state_bytes(seeds, reference, tmp_path / "several", threads)
    assert len(one[0]) == len(several[0]) > seeds  # every exit pass past the first, every stage's pass
    assert [a == b for a, b in zip(one[0], several[0])] == [True] * len(one[0])
    assert one[1:] == several[1:]  # the checksum, and each stage's seeds and predecessors told
    assert hashlib.sha256(several[0][-1]).hexdigest() == HASHES[seeds]


def test_a_pass_runs_its_work_on_as_many_threads_as_the_caller_has(reference, tmp_path, monkeypatch):
    # A pass's blocks are worked on by threads of its own; numba's thread count is each thread's own, so
    # theirs is set to the caller's (here 1, as `--threads 1` sets it): the later exit passes use no more.
    seeds = 13
    counts = []
    exit_pass = exits.exit_pass

    def counted(*args):
        counts.append(numba.get_num_threads())
        return exit_pass(*args)

    monkeypatch.setattr(exits, "exit_pass", counted)
    store = LayerStore(seeds)
    layer = lean.LeanLayer(seeds, str(tmp_path), store, index.RowTables(seeds).arrays, _groups(seeds, "each"),
                           lambda m: store.put(m, reference.layer(m)))
    assert index.layer_size(seeds) >= layer_state.SERIAL_SIZE  # one block, worked on with the threads it may have
    with layer_state.thread_count(1):
        layer.solve()
    assert _digest(layer.values()[0][0 : index.layer_size(seeds)]) == HASHES[seeds]
    layer.clear()
    assert len(counts) == len(_groups(seeds, "each")) and set(counts) == {1}


def test_a_failed_write_in_a_pass_of_several_threads_stops_in_one_line_and_resumes(reference, tmp_path, monkeypatch):
    # The recording thread fails to write a block back (a full disk) while the other threads read ahead:
    # the layer stops at that block's step, and a rerun resumes there with the values as recorded.
    seeds, scratch = LAYERS, tmp_path / "scratch"
    scratch.mkdir()
    writes = [0]
    write_at = lean.write_at

    def full_later(descriptor, data, offset):
        writes[0] += 1
        if writes[0] > 25:
            raise OSError(errno.ENOSPC, "No space left on device")
        write_at(descriptor, data, offset)

    def solve():
        store = LayerStore(seeds)
        layer = lean.LeanLayer(seeds, str(scratch), store, index.RowTables(seeds).arrays, _groups(seeds, "one"),
                               lambda m: store.put(m, reference.layer(m)), stack=lean.MIN_STACK, chunk=CHUNK,
                               block=_block(seeds, CHUNK, 8), settle_threads=2)
        with layer_state.thread_count(2):
            layer.solve()
        return layer

    monkeypatch.setattr(lean, "write_at", full_later)
    with pytest.raises(BuildError, match=r"the scratch folder .* is full \(layer 14, lean stages\)"):
        solve()
    journal = disk.read_journal(lean.journal_path(str(scratch), seeds))
    assert journal["stage"] is not None and journal["pass"] is not None  # stopped with a block in flight
    monkeypatch.undo()
    layer = solve()
    assert layer.resumed
    assert _digest(layer.values()[0][0 : index.layer_size(seeds)]) == HASHES[seeds]
    layer.clear()


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
        "memory", "disk", "disk", "lean", "lean", "lean"]  # 40: its exits streamed (test_lean_exits.py)
    layout = plan.lean_plan(38, budget)
    assert layout is not None and layout["memory_bytes"] <= budget
    assert layout["memory_bytes"] < plan.LEAN_BASE_BYTES + 0.6 * index.layer_size(38) + index.layer_size(36)
    assert plan.lean_plan(38, plan.lean_least_bytes(38)) is not None
    assert plan.lean_plan(38, plan.lean_least_bytes(38) - 1) is None


def test_the_lean_plan_counts_the_row_tables_and_the_blocks_an_exit_pass_holds(tmp_path):
    """The process's allowance holds its row tables (a build to 37 holds 79 MB of them), and the
    exits' buffers the two blocks a later exit pass rewrites with (the one raised, the one written back)."""
    for seeds in (0, 1, 8, 16, 24, 30):
        held = sum(array.nbytes for array in index.RowTables(seeds).arrays)
        assert held <= plan.lean_base_bytes(seeds) - plan.LEAN_BASE_BYTES <= 2 * held + 64, seeds
    for seeds in (4, 12):
        size = index.layer_size(seeds)
        layer = lean.LeanLayer(seeds, str(tmp_path), LayerStore(seeds), index.RowTables(seeds).arrays,
                               [layer_state.exit_layers(seeds)], lambda m: None)
        layer._make_buffers()
        assert lean.EXIT_BUFFERS + sum(buffer.nbytes for buffer in layer.buffers[:2]) <= lean.exit_buffer_bytes(size)
    size = index.layer_size(37)  # a block of 18 MB: two of them, not the block and a half planned before
    assert lean.exit_buffer_bytes(size) - lean.EXIT_BUFFERS == 2 * lean.block_ranks(size)


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


# Killed at any moment, resumed ------------------------------------------------------

RESUMED = 13  # the layer killed and resumed: exits in 11 passes (one smaller layer each), several blocks a pass
CHUNK = layer_state.BLOCK * 2
CHILD = """
import sys, time
from solver import index, lean, layer_state, retrograde
from solver.layers import LayerStore
seeds, scratch, block, kill = {seeds}, {scratch!r}, {block}, {kill}
reference = retrograde.solve_up_to(seeds - 1, threads=1)
store = LayerStore(seeds)
layer = lean.LeanLayer(seeds, scratch, store, index.RowTables(seeds).arrays, {groups!r},
                       lambda m: store.put(m, reference.layer(m)), stack=lean.MIN_STACK, chunk={chunk}, block=block,
                       kill_after=kill, tell_threads=2, settle_threads=2,  # a pass's blocks read out of order
                       codes_every={codes_every})
print("go", flush=True)
started = time.perf_counter()
with layer_state.thread_count(2):
    layer.solve()
print("done", time.perf_counter() - started, layer.steps, flush=True)
"""


def _child(scratch, kill=None, codes_every=lean.CODES_EVERY):
    """A process solving layer RESUMED in the lean stages in `scratch` (killed after `kill` steps, if given;
    saving its codes as a stage begins once `codes_every` seconds have gone by)."""
    code = CHILD.format(seeds=RESUMED, scratch=str(scratch), block=_block(RESUMED, CHUNK, 2), kill=kill,
                        groups=_groups(RESUMED, "each"), chunk=CHUNK, codes_every=codes_every)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _resumed(reference, scratch):
    """Layer RESUMED solved from what `scratch` holds: (values, whether it resumed, stats); its files then removed."""
    store = LayerStore(RESUMED)
    layer = lean.LeanLayer(RESUMED, str(scratch), store, index.RowTables(RESUMED).arrays, _groups(RESUMED, "each"),
                           lambda m: store.put(m, reference.layer(m)), stack=lean.MIN_STACK, chunk=CHUNK,
                           block=_block(RESUMED, CHUNK, 2))
    with layer_state.thread_count(2):
        stats = layer.solve()
    values = layer.values()[0][0 : index.layer_size(RESUMED)]
    resumed = layer.resumed
    layer.clear()
    assert lean.own_files(str(scratch), RESUMED) == []
    return values, resumed, stats


@pytest.fixture(scope="module")
def unkilled(tmp_path_factory):
    """(seconds, steps) of a run of layer RESUMED never killed."""
    child = _child(tmp_path_factory.mktemp("unkilled"))
    out, err = child.communicate(timeout=600)
    assert child.returncode == 0, err
    _, seconds, steps = out.split()[-3:]
    return float(seconds), int(steps)


def _killed_after_steps(reference, tmp_path, kills):
    for kill in kills:
        scratch = tmp_path / f"kill-{kill}"
        scratch.mkdir()
        child = _child(scratch, kill)
        _, err = child.communicate(timeout=600)
        assert child.returncode == -9, err
        values, resumed, _ = _resumed(reference, scratch)
        assert resumed, f"killed after step {kill}"
        assert _digest(values) == HASHES[RESUMED], f"killed after step {kill}"


def test_a_lean_layer_killed_after_a_few_steps_resumes_with_the_same_values(reference, tmp_path, unkilled):
    # By default one kill of each kind of step (the first exit pass, the last, the stages begun, a block in flight
    # late in the stages: each kill a process of its own, 5-25 s under load); more in the slow run below.
    _, steps = unkilled
    assert steps > 40  # exits in place, stages begun, blocks in flight: many kinds of step
    _killed_after_steps(reference, tmp_path, [1, 11, 12, steps - 1])


@pytest.mark.slow
def test_a_lean_layer_killed_after_any_step_resumes_with_the_same_values(reference, tmp_path, unkilled):
    _, steps = unkilled
    rng = np.random.default_rng(50)
    _killed_after_steps(reference, tmp_path, sorted({2, 10, *rng.integers(2, steps, 8).tolist()}))


def _killed_at_moments(reference, tmp_path, unkilled, attempts, seed):
    seconds, _ = unkilled
    rng = np.random.default_rng(seed)
    for attempt in range(attempts):
        scratch = tmp_path / f"moment-{attempt}"
        scratch.mkdir()
        child = _child(scratch)
        assert child.stdout.readline().strip() == "go"
        time.sleep(rng.uniform(0, seconds))
        child.kill()
        child.communicate(timeout=600)
        values, _, _ = _resumed(reference, scratch)
        assert _digest(values) == HASHES[RESUMED], f"attempt {attempt}"


def test_a_lean_layer_killed_at_random_moments_resumes_with_the_same_values(reference, tmp_path, unkilled):
    _killed_at_moments(reference, tmp_path, unkilled, 2, 5050)  # more in the slow run below


@pytest.mark.slow
def test_a_lean_layer_killed_at_more_random_moments_resumes_with_the_same_values(reference, tmp_path, unkilled):
    _killed_at_moments(reference, tmp_path, unkilled, 6, 505)


def _codes_steps(reference, scratch):
    """The steps after which a run of the child's (codes_every 0) has a codes file recorded, counted as kill_after
    counts them: a run in this process, each commit looked at."""
    store = LayerStore(RESUMED)
    layer = lean.LeanLayer(RESUMED, str(scratch), store, index.RowTables(RESUMED).arrays, _groups(RESUMED, "each"),
                           lambda m: store.put(m, reference.layer(m)), stack=lean.MIN_STACK, chunk=CHUNK,
                           block=_block(RESUMED, CHUNK, 2), tell_threads=2, settle_threads=2, codes_every=0)
    recorded = []
    commit = layer._commit

    def looked_at(sync=True):
        recorded.append(layer.journal.get("codes") is not None)
        commit(sync)

    layer._commit = looked_at
    with layer_state.thread_count(2):
        stats = layer.solve()
    layer.clear()
    assert stats["codes_files_saved"] == sum(recorded) == RESUMED  # every stage, 13..1, saves as it begins
    return [step + 1 for step, saved in enumerate(recorded) if saved]


def test_a_lean_layer_killed_after_saving_its_codes_reads_them_back(reference, tmp_path, capsys):
    # Codes saved as every stage begins (codes_every 0): a kill in a stage's telling reads them back (no count of
    # every pending position's children); one before its codes file is saved (the stage just begun), as the next
    # pass drops it or in that pass counts them. The values are the same after each.
    (tmp_path / "looked-at").mkdir()
    saved = _codes_steps(reference, tmp_path / "looked-at")
    step = saved[len(saved) * 2 // 3]
    how = []
    damaged = tmp_path / "damaged"
    for kill in (step - 1, step, step + 1, step + 2):
        scratch = tmp_path / f"kill-{kill}"
        scratch.mkdir()
        child = _child(scratch, kill, codes_every=0)
        _, err = child.communicate(timeout=600)
        assert child.returncode == -9, err
        journal = disk.read_journal(lean.journal_path(str(scratch), RESUMED))
        assert (journal.get("codes") is not None) == (kill == step), kill
        if kill == step:
            shutil.copytree(scratch, damaged)
        values, resumed, stats = _resumed(reference, scratch)
        assert resumed and _digest(values) == HASHES[RESUMED], f"killed after step {kill}"
        how.append(stats["resumed_codes_from"])
    assert how == ["count", "codes", "count", "count"], how
    # A codes file damaged since: its codes are counted again, in one line, with the same values.
    scratch = damaged
    path = scratch / lean.codes_name(RESUMED)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x11
    path.write_bytes(bytes(data))
    capsys.readouterr()
    values, _, stats = _resumed(reference, scratch)
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "does not match its checksum" in said and "counted again" in said, said
    assert stats["resumed_codes_from"] == "count" and _digest(values) == HASHES[RESUMED]


@pytest.fixture(scope="module")
def killed_scratch(tmp_path_factory, unkilled):
    """A scratch folder as a kill in the middle of the stages left it (a block in flight)."""
    scratch = tmp_path_factory.mktemp("killed")
    child = _child(scratch, unkilled[1] * 2 // 3)
    _, err = child.communicate(timeout=600)
    assert child.returncode == -9, err
    journal = disk.read_journal(lean.journal_path(str(scratch), RESUMED))
    assert journal["stage"] is not None and 0 < journal["stage"] < RESUMED, journal
    return scratch


def _edited(source, target, edit):
    shutil.copytree(source, target)
    path = lean.journal_path(str(target), RESUMED)
    body = disk.read_journal(path)
    edit(body)
    with open(path, "wb") as handle:
        handle.write(disk.encode_journal(body))  # its CRC-32 made right again


EDITS = {
    "stage 500": (lambda body: body.update(stage=500), "stage is 500"),
    "stage as text": (lambda body: body.update(stage="9"), "stage is"),
    "stage a float": (lambda body: body.update(stage=9.0), "stage is"),
    "stage true": (lambda body: body.update(stage=True), "stage is"),
    "a counts file ../awele-12.h5": (lambda body: body.update(counts=["../awele-12.h5", 0], stage=None),
                                     "not a name this layer's files have"),
    "a counts file beside a stage": (lambda body: body.update(counts=[lean.counts_name(RESUMED), 0]),
                                     "beside the counts file"),
    "a block out of range": (lambda body: body.update(**{"pass": [10**6, 0, 0, 0, 0]}), "the pass's block"),
    "a checksum below 0": (lambda body: body.update(sum=-1), "sum is -1"),
    "an unknown field": (lambda body: body.update(extra=1), "unknown field 'extra'"),
    "a field missing": (lambda body: body.pop("exits_done"), "lacks 'exits_done'"),
    "other groups": (lambda body: body.update(groups=[[0]]), "another layout"),
    "other blocks": (lambda body: body.update(block=body["block"] * 2), "another layout"),
    "a codes file ../awele-12.h5": (lambda body: body.update(codes=["../awele-12.h5", 0, body["stage"]],
                                                          **{"pass": None}), "not a name this layer's files have"),
    "a codes file of another stage": (lambda body: body.update(codes=[lean.codes_name(RESUMED), 0, 1],
                                                               stage=2, **{"pass": None}), "another stage"),
    "a codes file in a pass": (lambda body: body.update(codes=[lean.codes_name(RESUMED), 0, body["stage"]],
                                                        **{"pass": [0, 0, 0, 0, 0]}), "in a pass"),
    "the stage lowered": (lambda body: body.update(stage=body["stage"] - 1, **{"pass": None}), "damaged"),
    "the checksum changed": (lambda body: body.update(sum=(body["sum"] + 1) % 2**64, **{"pass": None}), "damaged"),
}


# Each case that starts the layer over solves layer 13 again (5-15 s): by default one of each kind of
# answer (a field out of its range, a path where a name belongs, another layout, and the two a journal
# that reads right but does not match its state file gives); the others on CI's slow line (.ci/run).
BY_DEFAULT = {"stage 500", "a counts file ../awele-12.h5", "other groups", "the stage lowered", "the checksum changed"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=() if name in BY_DEFAULT else pytest.mark.slow)
                                  for name in EDITS])
def test_an_edited_lean_journal_starts_the_layer_over_in_one_line(reference, tmp_path, killed_scratch, capsys, name):
    edit, why = EDITS[name]
    scratch = tmp_path / "scratch"
    _edited(killed_scratch, scratch, edit)
    store = LayerStore(RESUMED)
    layer = lean.LeanLayer(RESUMED, str(scratch), store, index.RowTables(RESUMED).arrays, _groups(RESUMED, "each"),
                           lambda m: store.put(m, reference.layer(m)), stack=lean.MIN_STACK, chunk=CHUNK,
                           block=_block(RESUMED, CHUNK, 2))
    try:
        layer.resume()
        said = capsys.readouterr().err
        if layer.resumed:  # the schema holds: what the journal says is checked against the state file
            assert "damaged" in why
            with pytest.raises(ScratchError, match="damaged"):
                layer.solve()
            return
        assert said.count("\n") == 1 and why in said and "starts over" in said, said
        assert lean.own_files(str(scratch), RESUMED) == []
        with layer_state.thread_count(2):
            layer.solve()
        assert _digest(layer.values()[0][0 : index.layer_size(RESUMED)]) == HASHES[RESUMED]
    finally:
        layer.clear()


def test_a_link_planted_for_the_state_file_is_removed_not_followed(reference, tmp_path, killed_scratch, capsys):
    scratch = tmp_path / "scratch"
    shutil.copytree(killed_scratch, scratch)
    target = tmp_path / "precious"
    target.write_bytes(b"keep me")
    os.remove(scratch / lean.state_name(RESUMED))
    os.symlink(target, scratch / lean.state_name(RESUMED))
    values, resumed, _ = _resumed(reference, scratch)
    assert not resumed and "is not a regular file" in capsys.readouterr().err
    assert target.read_bytes() == b"keep me" and _digest(values) == HASHES[RESUMED]


def _build_killed(directory, seeds, steps):
    """A build of layers ..seeds under 400M (every layer lean), killed after `steps` steps of layer `seeds`."""
    code = f"from solver import build\nbuild.build({seeds}, {directory!r}, threads=1, memory={400 << 20})\n"
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                            env={**os.environ, lean.KILL_VARIABLE: f"{seeds}:{steps}"})
    assert killed.returncode == -9, killed.stderr


def test_a_lean_build_killed_in_its_stages_resumes_there(tmp_path):
    directory = str(tmp_path / "db")
    build.build(12, directory, memory=400 << 20)
    _build_killed(directory, 13, 4)  # the exits (1), the stages begun (2), a stage or two
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    journal = disk.read_journal(lean.journal_path(scratch, 13))
    assert journal["stage"] is not None and not os.path.exists(tables.table_path(directory, 13))
    rows = []
    build.build(13, directory, memory=400 << 20, report=rows.append)
    assert rows[-1]["mode"] == "lean" and rows[-1]["resumed_at_stage"] == journal["stage"]
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert not os.path.exists(scratch)


def test_a_damaged_state_file_of_a_killed_build_starts_the_layer_over(tmp_path, capsys):
    directory = str(tmp_path / "db")
    build.build(12, directory, memory=400 << 20)
    _build_killed(directory, 13, 5)
    path = os.path.join(directory, build.SCRATCH_NAME, lean.state_name(13))
    with open(path, "r+b") as handle:
        handle.seek(os.path.getsize(path) // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x40]))
    capsys.readouterr()
    rows = []
    build.build(13, directory, memory=400 << 20, report=rows.append)
    said = capsys.readouterr().err
    assert "damaged" in said and "layer 13 starts over" in said, said
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
