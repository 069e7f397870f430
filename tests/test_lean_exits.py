"""The streamed exits (solver.lean_exits): the resident exits' values with no smaller layer resident,
through the lean stages and the build; and the plan that uses them for the opening."""

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from solver import build, disk, exits, index, layer_state, lean, lean_exits, lean_files, plan, retrograde, tables
from solver.cli import cli
from solver.errors import BuildError, ScratchError
from solver.layers import LayerStore

HASHES = {int(seeds): digest for seeds, digest in json.load(
    open(os.path.join(os.path.dirname(__file__), "data", "layer_sha256.json")))["sha256"].items()}
LAYERS = 14


@pytest.fixture(scope="module")
def reference():
    """Layers 0..14 by the in-memory stages."""
    return retrograde.solve_up_to(LAYERS, threads=1)


def _resident(seeds, reference):
    """The first resident exit pass over every smaller layer: (values, counts)."""
    size = index.layer_size(seeds)
    values = np.zeros(size, dtype=np.int8)
    counts = np.zeros((size + 1) // 2, dtype=np.uint8)
    use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
    use[layer_state.exit_layers(seeds)] = True
    exits.exit_pass(seeds, size, values, counts, reference.flat, reference.starts, use, True,
                    index.RowTables(seeds).arrays, False)
    return values, counts


def _streamed(seeds, reference, scratch, slices, window, batch=lean_exits.BATCH):
    size = index.layer_size(seeds)
    values = np.zeros(size, dtype=np.int8)
    counts = np.zeros((size + 1) // 2, dtype=np.uint8)
    step = -(-size // slices // layer_state.BLOCK) * layer_state.BLOCK
    rows = index.RowTables(seeds).arrays
    read = []
    lookups = 0
    for lo in range(0, size, step):
        hi = min(size, lo + step)
        found = lean_exits.slice_exits(seeds, lo, values[lo:hi], counts[lo // 2 : (hi + 1) // 2], rows, str(scratch),
                                       lambda m, a, b: read.append((m, a, b)) or reference.layer(m)[a:b], window,
                                       batch=batch, piece=1000)
        lookups += found["lookups"]
        assert os.listdir(scratch) == []  # every bucket file read and removed
    return values, counts, read, lookups


@pytest.mark.parametrize("seeds", range(2, LAYERS + 1))
def test_the_streamed_exits_give_the_resident_exits_values_and_counts(reference, tmp_path, seeds):
    # 1 to 5 slices, windows from a few hundred ranks to the largest smaller layer, batches of one block or many.
    slices = 1 + seeds % 5
    largest = max(index.layer_size(m) for m in layer_state.exit_layers(seeds))
    window = max(1, largest // (1 + 3 * (seeds % 4)))
    batch = layer_state.BLOCK * (1 if seeds % 2 else 64)
    values, counts = _resident(seeds, reference)
    got_values, got_counts, read, lookups = _streamed(seeds, reference, tmp_path, slices, window, batch)
    assert np.array_equal(got_values, values) and np.array_equal(got_counts, counts)
    assert lookups > 0 or seeds < 4  # the smallest layers capture nothing
    # Each slice reads each child window at most once, in rank order: sequential.
    for m in layer_state.exit_layers(seeds):
        starts = [a for child, a, _ in read if child == m]
        assert len(starts) <= slices * -(-index.layer_size(m) // window)
        assert all(stop - start <= window for child, start, stop in read if child == m)


def test_a_request_holds_the_child_s_offset_and_its_parent(reference):
    keys = np.array([(12 << exits.RANK_BITS) | 7, (5 << exits.RANK_BITS) | 3, (12 << exits.RANK_BITS) | 2],
                    dtype=np.int64)
    owners = np.array([11, 22, 33], dtype=np.int64)
    first = lean_exits.buckets(14, window=5)
    out = np.empty(3, dtype=np.int64)
    offsets = np.zeros(first[-1] + 1, dtype=np.int64)
    lean_exits.distribute(keys, owners, np.array([3]), 3, first, 5, out, offsets)
    # Layer 5's bucket comes first; layer 12's ranks 2 and 7 fall in its windows 0 and 1.
    assert list(out) == [(3 << lean_exits.OWNER_BITS) | 22, (2 << lean_exits.OWNER_BITS) | 33,
                         (2 << lean_exits.OWNER_BITS) | 11]
    assert list(np.flatnonzero(np.diff(offsets))) == [first[5], first[12], first[12] + 1]


@pytest.mark.parametrize("seeds", [9, 12, LAYERS])
def test_the_lean_stages_with_streamed_exits_give_the_recorded_values(reference, tmp_path, seeds):
    size = index.layer_size(seeds)
    step = -(-size // 3 // layer_state.BLOCK) * layer_state.BLOCK
    layer = lean.LeanLayer(seeds, str(tmp_path), LayerStore(seeds), index.RowTables(seeds).arrays,
                           [layer_state.exit_layers(seeds)], lambda m: pytest.fail("no smaller layer is loaded"),
                           stack=lean.MIN_STACK, streamed={"slice": step, "window": 4096},
                           read=lambda m, a, b: reference.layer(m)[a:b])
    stats = layer.solve()
    values = layer.values()[0][0:size]
    layer.clear()
    assert hashlib.sha256(values.tobytes()).hexdigest() == HASHES[seeds]
    assert stats["exit_slices"] == 3 and stats["exit_passes"] == 1 and stats["requests_peak_bytes"] > 0


# Layers 13 and 14 through the build on the slow line: they take most of its time (their streamed exits
# are checked against the resident ones above, and the lean stages over them too).
@pytest.mark.parametrize("top", [12, pytest.param(LAYERS, marks=pytest.mark.slow)])
def test_a_build_forced_through_the_streamed_exits_hashes_as_recorded(tmp_path, top):
    rows = []
    build.build(top, str(tmp_path), threads=2, memory=400 << 20, report=rows.append, streamed_exits=True)
    assert [row["mode"] for row in rows] == ["lean"] * (top + 1)
    assert [row["exit_slices"] > 0 for row in rows] == [False, False] + [True] * (top - 1)
    for seeds in range(top + 1):
        values = tables.load_values(str(tmp_path), seeds)
        assert hashlib.sha256(values.tobytes()).hexdigest() == HASHES[seeds], f"layer {seeds}"


# Recorded steps: killed, resumed ----------------------------------------------------

JOURNALED = 12  # the layer killed and resumed: 2 slices, windows of 16 Ki ranks (several buckets a smaller layer)


class Killed(BaseException):
    """What the tests raise for a kill -9 right after a step (or half way through a write): nothing cleans up."""


def _journaled(reference, scratch, read=None):
    size = index.layer_size(JOURNALED)
    step = -(-size // 2 // layer_state.BLOCK) * layer_state.BLOCK
    return lean.LeanLayer(JOURNALED, str(scratch), LayerStore(JOURNALED), index.RowTables(JOURNALED).arrays,
                          [layer_state.exit_layers(JOURNALED)], lambda m: pytest.fail("no smaller layer is loaded"),
                          stack=lean.MIN_STACK, streamed={"slice": step, "window": 1 << 14},
                          read=read or (lambda m, a, b: reference.layer(m)[a:b]))


def _exits_of(reference, scratch):
    """Layer JOURNALED's streamed exits run on from what `scratch` holds, up to the exits done:
    (the state file's bytes, the counts file's, whether it resumed)."""
    layer = _journaled(reference, scratch)
    journal = layer.resume()
    if journal["exits_done"] >= 0:
        layer._check_state(None)
    layer._exits()
    name, total = journal["counts"]
    values = np.fromfile(scratch / lean.state_name(JOURNALED), dtype=np.int8)
    counts = np.fromfile(scratch / name, dtype=np.uint8)
    assert int(lean.checksum(counts, 0)) == total and int(lean.checksum(values, 0)) == journal["sum"]
    assert [name for name in lean.own_files(str(scratch), JOURNALED) if ".lean-asks-" in name] == []
    return values, counts, layer.resumed


@pytest.fixture(scope="module")
def recorded_steps(reference, tmp_path_factory):
    """The journal's `streamed` record at each step of layer JOURNALED's streamed exits, never killed."""
    scratch = tmp_path_factory.mktemp("steps")
    layer = _journaled(reference, scratch)
    steps = []
    commit = layer._commit
    layer._commit = lambda: (steps.append(json.loads(json.dumps(layer.journal["streamed"]))), commit())
    layer.resume()
    started = time.perf_counter()
    layer._exits()
    recorded_seconds.append(time.perf_counter() - started)
    return steps


recorded_seconds = []  # how long recorded_steps' exits took


def _killed_after(reference, scratch, step):
    """Layer JOURNALED's streamed exits killed right after step `step` is recorded."""
    layer = _journaled(reference, scratch)
    commit = layer._commit

    def killing():
        commit()
        if layer.steps >= step:
            raise Killed
    layer._commit = killing
    with pytest.raises(Killed):
        layer.resume()
        layer._exits()


def _kinds(steps):
    """Each step's kind: "asked", "answered" (a smaller layer's answers) or "done" (a slice), and its slice."""
    return [("exits done", None) if record is None else ("done", record["done"] - 1) if record["slice"] is None else
            ("asked" if record["slice"]["answered"] < 0 else "answered", record["done"]) for record in steps]


def _sweep(reference, tmp_path, chosen):
    resident = _resident(JOURNALED, reference)
    for step in chosen:
        scratch = tmp_path / f"step-{step}"
        scratch.mkdir()
        _killed_after(reference, scratch, step)
        values, counts, resumed = _exits_of(reference, scratch)
        assert resumed, f"killed after step {step}"
        assert np.array_equal(values, resident[0]) and np.array_equal(counts, resident[1]), f"step {step}"


def test_the_streamed_exits_record_a_step_a_slice_asked_a_layer_answered_and_a_slice_done(recorded_steps):
    kinds = _kinds(recorded_steps)
    assert kinds[0] == ("asked", 0) and kinds[-2:] == [("done", 1), ("exits done", None)]
    assert kinds.count(("done", 0)) == 1
    assert kinds.count(("asked", 1)) == 1 and kinds.count(("answered", 0)) >= 5 and kinds.count(("answered", 1)) >= 5


def test_streamed_exits_killed_after_a_few_steps_resume_to_the_resident_exits(reference, tmp_path, recorded_steps):
    # One of each kind by default (the first ask, a layer answered in each slice, the first slice done);
    # every step in the slow sweep below.
    kinds = _kinds(recorded_steps)
    chosen = [1, kinds.index(("answered", 0)) + 3, kinds.index(("done", 0)) + 1,
              len(kinds) - 1 - kinds[::-1].index(("answered", 1)) + 1]
    _sweep(reference, tmp_path, chosen)


@pytest.mark.slow
def test_streamed_exits_killed_after_every_step_resume_to_the_resident_exits(reference, tmp_path, recorded_steps):
    _sweep(reference, tmp_path, range(1, len(recorded_steps)))


def test_a_slice_killed_half_way_through_writing_its_answers_resumes_to_the_resident_exits(reference, tmp_path,
                                                                                          monkeypatch):
    # The bytes of the slice part old, part new: the layer's answers raised again give the recorded checksum.
    writes = []

    def half(descriptor, data, offset):
        writes.append(offset)
        if len(writes) == 6:  # the fourth layer answered in the first slice (the ask wrote values and counts)
            lean_files.write_at(descriptor, data[: data.shape[0] // 2], offset)
            raise Killed
        lean_files.write_at(descriptor, data, offset)

    monkeypatch.setattr(lean_exits, "write_at", half)
    layer = _journaled(reference, tmp_path)
    with pytest.raises(Killed):
        layer.resume()
        layer._exits()
    monkeypatch.undo()
    assert layer.journal["streamed"]["slice"]["answered"] >= 1
    values, counts, resumed = _exits_of(reference, tmp_path)
    resident = _resident(JOURNALED, reference)
    assert resumed and np.array_equal(values, resident[0]) and np.array_equal(counts, resident[1])


# A real kill -9 of a process in its streamed exits, on the slow line (a process each, 5 s and more): the
# default run kills them after chosen steps and half way through a write in this process (above), where
# nothing runs after the kill but the closing of the files, as after a kill -9.
@pytest.mark.slow
def test_streamed_exits_killed_at_random_moments_resume_with_the_recorded_values(reference, tmp_path,
                                                                                recorded_steps):
    _killed_at_random(reference, tmp_path, attempts=6)


KILLED_CHILD = """
import sys, time
from solver import index, lean, layer_state, retrograde
from solver.layers import LayerStore
seeds, scratch, step = {seeds}, {scratch!r}, {step}
reference = retrograde.solve_up_to(seeds - 1, threads=1)
layer = lean.LeanLayer(seeds, scratch, LayerStore(seeds), index.RowTables(seeds).arrays,
                       [layer_state.exit_layers(seeds)], None, stack=lean.MIN_STACK,
                       streamed={{"slice": step, "window": 1 << 14}}, read=lambda m, a, b: reference.layer(m)[a:b])
print("go", flush=True)
started = time.perf_counter()
layer.resume()
layer._exits()
print("done", time.perf_counter() - started, flush=True)
"""


def _killed_at_random(reference, tmp_path, attempts):
    size = index.layer_size(JOURNALED)
    step = -(-size // 2 // layer_state.BLOCK) * layer_state.BLOCK
    rng = np.random.default_rng(4850)
    resident = _resident(JOURNALED, reference)
    for attempt in range(attempts):
        scratch = tmp_path / f"moment-{attempt}"
        scratch.mkdir()
        child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD.format(seeds=JOURNALED, scratch=str(scratch),
                                                                              step=step)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "go"
        time.sleep(rng.uniform(0, 1.5 * recorded_seconds[0]))  # the exits as timed here, and their kernels' loading
        child.kill()
        child.communicate(timeout=600)
        values, counts, _ = _exits_of(reference, scratch)
        assert np.array_equal(values, resident[0]) and np.array_equal(counts, resident[1]), f"attempt {attempt}"


def test_streamed_exits_run_to_their_end_read_back_as_done(reference, tmp_path):
    # A kill that comes after the exits ended (a random moment past them) leaves them done: a new run checks the
    # state file before anything else (no pass yet has made its buffers) and finds the resident pass's bytes.
    layer = _journaled(reference, tmp_path)
    layer.resume()
    layer._exits()
    values, counts, resumed = _exits_of(reference, tmp_path)
    resident = _resident(JOURNALED, reference)
    assert resumed and np.array_equal(values, resident[0]) and np.array_equal(counts, resident[1])


def test_an_interrupted_streamed_exit_keeps_its_steps_and_the_next_run_goes_on(reference, tmp_path):
    calls = []

    def read(m, a, b):
        calls.append(m)
        if len(calls) == 5:
            raise KeyboardInterrupt  # stopped half way through the first slice's answers
        return reference.layer(m)[a:b]

    with pytest.raises(KeyboardInterrupt):
        _journaled(reference, tmp_path, read).solve()
    names = lean.own_files(str(tmp_path), JOURNALED)
    assert lean.state_name(JOURNALED) in names and any(".lean-asks-" in name for name in names)
    # What a kill -9 in an ask leaves (a bucket no journal names): the next run removes it and goes on.
    (tmp_path / lean_exits.bucket_name(JOURNALED, 10**6)).write_bytes(b"left by a kill")
    again = _journaled(reference, tmp_path)
    again.solve()
    assert again.resumed
    assert hashlib.sha256(again.values()[0][0 : index.layer_size(JOURNALED)].tobytes()).hexdigest() == HASHES[
        JOURNALED]
    again.clear()


@pytest.fixture(scope="module")
def answered_scratch(reference, tmp_path_factory, recorded_steps):
    """A scratch folder as a kill after a smaller layer's answers in the second slice left it."""
    scratch = tmp_path_factory.mktemp("answered")
    kinds = _kinds(recorded_steps)
    _killed_after(reference, scratch, kinds.index(("answered", 1)) + 2)
    return scratch


def _damaged_then_resumed(reference, source, target, damage, capsys):
    shutil.copytree(source, target)
    damage(target)
    capsys.readouterr()
    layer = _journaled(reference, target)
    layer.resume()
    return layer, capsys.readouterr().err


STREAMED_EDITS = {
    "another layout": (lambda record: record.update(layout=[record["layout"][0] // 2, record["layout"][1]]),
                       "another layout"),
    "a slice done beyond the layer": (lambda record: record.update(done=9), "the slices done is 9"),
    "a bucket out of order": (lambda record: record["slice"]["buckets"].reverse(), "a bucket is"),
    "a bucket of a layer answered": (lambda record: record["slice"].update(answered=len(
        layer_state.exit_layers(JOURNALED)) - 1), "a bucket is"),
    "a bucket's bytes not whole requests": (lambda record: record["slice"]["buckets"][0].__setitem__(1, 12),
                                            "not whole requests"),
    "a bucket named ../x": (lambda record: record["slice"]["buckets"][0].__setitem__(0, "../x"), "a bucket is"),
}


@pytest.mark.parametrize("name", STREAMED_EDITS)
def test_an_edited_streamed_record_starts_the_layer_over_in_one_line(reference, tmp_path, answered_scratch, capsys,
                                                                      name):
    edit, why = STREAMED_EDITS[name]

    def damage(scratch):
        path = lean.journal_path(str(scratch), JOURNALED)
        body = disk.read_journal(path)
        edit(body["streamed"])
        with open(path, "wb") as handle:
            handle.write(disk.encode_journal(body))  # its CRC-32 made right again

    layer, said = _damaged_then_resumed(reference, answered_scratch, tmp_path / "scratch", damage, capsys)
    assert not layer.resumed and said.count("\n") == 1 and why in said and "starts over" in said, said
    assert lean.own_files(str(tmp_path / "scratch"), JOURNALED) == []


def _flip(path, at):
    with open(path, "r+b") as handle:
        handle.seek(at)
        byte = handle.read(1)
        handle.seek(at)
        handle.write(bytes([byte[0] ^ 0x40]))


DAMAGES = {
    "a byte of the slice in progress": (lambda scratch: _flip(scratch / lean.state_name(JOURNALED),
                                                              index.layer_size(JOURNALED) - 100),
                                        re.escape("does not match its journal (the slice from")),
    "a byte of a slice done": (lambda scratch: _flip(scratch / lean.state_name(JOURNALED), 100),
                               re.escape("does not match its journal (the slices done)")),
    "a byte of the counts": (lambda scratch: _flip(scratch / lean.counts_name(JOURNALED), 50),
                             "does not match its journal"),
    "a byte of a bucket file": (lambda scratch: _flip(max(scratch.glob("*.asks"), key=os.path.getsize), 20),
                                "does not match its checksum"),
    "a bucket file cut short": (lambda scratch: os.truncate(max(scratch.glob("*.asks"), key=os.path.getsize), 8),
                                "has 8 bytes"),
}


@pytest.mark.parametrize("name", DAMAGES)
def test_a_damaged_recorded_step_is_refused(reference, tmp_path, answered_scratch, capsys, name):
    damage, why = DAMAGES[name]
    layer, _ = _damaged_then_resumed(reference, answered_scratch, tmp_path / "scratch", damage, capsys)
    assert layer.resumed
    with pytest.raises(ScratchError, match=why):
        layer._exits()
    layer.start_over("damaged")  # as the build does: the layer built again from the start
    values, counts, resumed = _exits_of(reference, tmp_path / "scratch")
    resident = _resident(JOURNALED, reference)
    assert not resumed and np.array_equal(values, resident[0]) and np.array_equal(counts, resident[1])


def test_a_link_planted_for_a_bucket_file_is_removed_not_followed(reference, tmp_path, answered_scratch, capsys):
    target = tmp_path / "precious"
    target.write_bytes(b"keep me")

    def plant(scratch):
        bucket = max(scratch.glob("*.asks"))
        os.remove(bucket)
        os.symlink(target, bucket)

    layer, said = _damaged_then_resumed(reference, answered_scratch, tmp_path / "scratch", plant, capsys)
    assert not layer.resumed and "is not a regular file" in said and target.read_bytes() == b"keep me"


def test_a_full_disk_in_the_streamed_exits_stops_in_one_line_and_keeps_the_steps(reference, tmp_path, monkeypatch):
    writes = []

    def full(descriptor, data, offset):
        writes.append(offset)
        if len(writes) == 8:
            raise OSError(errno.ENOSPC, "No space left on device")
        lean_files.write_at(descriptor, data, offset)

    monkeypatch.setattr(lean_exits, "write_at", full)
    with pytest.raises(BuildError, match=r"the scratch folder .* is full \(layer 12, lean stages\)"):
        _journaled(reference, tmp_path).solve()
    monkeypatch.undo()
    recorded = disk.read_journal(lean.journal_path(str(tmp_path), JOURNALED))["streamed"]
    assert recorded["slice"]["answered"] >= 0  # the steps before it kept: the next run goes on from there
    values, counts, resumed = _exits_of(reference, tmp_path)
    resident = _resident(JOURNALED, reference)
    assert resumed and np.array_equal(values, resident[0]) and np.array_equal(counts, resident[1])


@pytest.mark.slow
def test_a_build_killed_in_its_streamed_exits_resumes_there(tmp_path):
    directory = str(tmp_path / "db")
    build.build(12, directory, memory=400 << 20, streamed_exits=True)
    code = (f"from solver import build\nbuild.build(13, {directory!r}, threads=1, memory={400 << 20}, "
            f"streamed_exits=True)\n")
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                            env={**os.environ, lean.KILL_VARIABLE: "13:4"})
    assert killed.returncode == -9, killed.stderr
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    assert disk.read_journal(lean.journal_path(scratch, 13))["streamed"]["slice"] is not None
    rows = []
    build.build(13, directory, memory=400 << 20, report=rows.append, streamed_exits=True)
    assert rows[-1]["mode"] == "lean" and rows[-1]["exit_slices"] > 0
    assert hashlib.sha256(tables.load_values(directory, 13).tobytes()).hexdigest() == HASHES[13]


# The plan --------------------------------------------------------------------------

GIB = 1 << 30


def test_streamed_exits_plan_every_layer_whose_stages_fit():
    budget = 22 * GIB
    assert [plan.mode(n, budget) for n in (37, 39, 40, 41)] == ["lean", "lean", "lean", "too big"]
    layout = plan.lean_plan(40, budget)
    assert layout is not None and layout["streamed"] is not None and layout["memory_bytes"] <= budget
    assert layout["memory_bytes"] >= plan.LEAN_BASE_BYTES + (index.layer_size(40) + 1) // 2  # the stages' half byte
    assert layout["streamed"]["slices"] > 1 and layout["table_read_bytes"] == layout["streamed"]["slices"] * sum(
        index.layer_size(m) for m in layer_state.exit_layers(40))  # the smaller layers read once a slice
    assert plan.lean_plan(38, budget)["streamed"] is None  # its smaller layers fit: resident exits, faster
    assert plan.lean_plan(38, budget, streamed=True)["streamed"] is not None


@pytest.mark.parametrize("seeds", [20, 30, 46, 48])
def test_the_streamed_layout_fits_its_budget_and_scratch(seeds):
    size = index.layer_size(seeds)
    for budget in (600 << 20, 8 * GIB, 120 * GIB):
        for room in (None, int(2.2 * size), 10 * size):
            layout = plan.streamed_layout(seeds, budget, room)
            if layout is None:
                continue
            assert layout["slice"] % layer_state.BLOCK == 0 and layout["slice"] <= lean_exits.MAX_SLICE
            assert layout["slices"] == -(-size // layout["slice"])
            assert 0 < layout["window"] <= lean_exits.MAX_WINDOW
            assert plan.LEAN_BASE_BYTES + plan.streamed_exit_bytes(layout["slice"], layout["window"]) <= budget
            if room is not None:
                assert size + (size + 1) // 2 + plan.request_bytes(layout["slice"]) + plan.JOURNAL_ROOM <= room


def test_the_opening_plans_on_one_workstation(tmp_path):
    """`awele plan --max-seeds 48 --memory 120G --disk 1T --threads 16 --leave-out-47`: every layer built,
    within the memory and the disk, in under 7 days."""
    result = plan.plan(48, 120 * GIB, str(tmp_path), leave_out=(47,), disk=1 << 40, threads=16)
    rows = result["layers"]
    assert all(row["fits"] and row["fits_disk"] for row in rows)
    assert rows[47]["mode"] == "left out"
    assert all(row["peak_bytes"] <= 120 * GIB for row in rows if row["mode"] != "left out")
    assert all(row["disk_peak_bytes"] <= 1 << 40 for row in rows)
    assert [row["seeds"] for row in rows if row.get("streamed_exits")] == [48]  # 46 (137 GB) fits no 120 GiB
    assert [row["mode"] for row in rows[43:47]] == ["disk", "lean", "lean", "lean"]  # none in slices
    assert rows[48]["mode"] == "lean" and rows[48]["exit_slices"] > 1
    assert sum(row["seconds"] for row in rows) < 7 * 86400
    text = CliRunner().invoke(cli, ["plan", "--max-seeds", "48", "--memory", "120G", "--disk", "1T", "--threads", "16",
                                    "--leave-out-47", "--dir", str(tmp_path)])
    assert text.exit_code == 0, text.output
    assert "do not fit" not in text.output and "streamed" in text.output


def test_a_disk_too_small_is_marked_and_slices_the_streamed_exits_finer(tmp_path):
    wide = plan.plan(48, 120 * GIB, str(tmp_path), leave_out=(47,), disk=1 << 40)["layers"][48]
    narrow = plan.plan(48, 120 * GIB, str(tmp_path), leave_out=(47,), disk=931 * GIB)["layers"][48]
    assert narrow["fits_disk"] and narrow["exit_slices"] > wide["exit_slices"]  # fewer requests a slice on disk
    assert narrow["scratch_bytes"] < wide["scratch_bytes"] and narrow["seconds"] > wide["seconds"]
    short = plan.plan(48, 120 * GIB, str(tmp_path), leave_out=(47,), disk=500 * GIB)["layers"]
    assert not short[48]["fits_disk"]
    text = CliRunner().invoke(cli, ["plan", "--max-seeds", "48", "--memory", "120G", "--disk", "500G", "--dir",
                                    str(tmp_path), "--leave-out-47"])
    assert text.exit_code == 0 and "do not fit the disk" in text.output
    assert CliRunner().invoke(cli, ["plan", "--disk", "lots"]).exit_code == 2
    assert CliRunner().invoke(cli, ["plan", "--disk", "1T", "--processes", "2"]).exit_code == 2


def test_the_cluster_plan_models_the_lean_state_beside_the_in_memory_one(tmp_path):
    """`awele plan --processes 4 --memory-per-process 64G --max-seeds 48`."""
    result = plan.cluster_plan(48, 4, 64 * GIB, str(tmp_path), threads=16)
    row = result["layers"][48]
    assert not row["fits"] and row["lean_fits"]  # 1.5 bytes a position and the smaller layers, against half a byte
    share = plan.slice_share(48, 4)  # the codes, beside a group of the smaller layers' slices in the exits
    assert share // 2 + plan.slice_share(46, 4) < row["lean_process_bytes"] <= 64 * GIB
    assert row["lean_seconds"] > row["seconds"]
    assert result["smallest_lean_cluster"]["48"] <= 4 < result["smallest_cluster"]["48"]
    least = result["smallest_lean_cluster"]["48"]
    assert plan.lean_process_bytes(48, least, 16) <= 64 * GIB < plan.lean_process_bytes(48, least - 1, 16)
    text = CliRunner().invoke(cli, ["plan", "--processes", "4", "--memory-per-process", "64G", "--max-seeds", "48",
                                    "--dir", str(tmp_path)])
    assert text.exit_code == 0, text.output
    assert f"layer 48 in the lean state needs at least {least} processes of 64.0 GiB" in text.output


def test_a_request_outside_its_slice_or_window_is_passed_over_not_followed():
    # A damaged bucket file is refused by its checksum once read: its answers until then must stay in the slice.
    memory = np.zeros(16, dtype=np.int8)
    values, window = memory[:8], np.full(4, -3, dtype=np.int8)
    requests = np.array([(1 << lean_exits.OWNER_BITS) | 2, (1 << lean_exits.OWNER_BITS) | 12,
                         (9 << lean_exits.OWNER_BITS) | 3], dtype=np.int64)
    lean_exits.answer(requests, window, 2, values)
    assert values[2] == layer_state.pending(5) and not memory[3:].any()


def test_a_bucket_file_is_read_back_as_appended_and_a_damaged_one_refused(tmp_path):
    files = lean_exits.Buckets(str(tmp_path), 12, 3)
    files.append(1, np.arange(10, dtype=np.int64))
    files.append(1, np.arange(100, 105, dtype=np.int64))  # reopened to append, its checksum added up
    got = []
    files.read(1, lambda piece: got.extend(piece.tolist()), np.empty(4, dtype=np.int64))
    assert got == [*range(10), *range(100, 105)] and os.listdir(tmp_path) == []
    files.append(2, np.arange(10, dtype=np.int64))
    with open(files.path(2), "r+b") as file:
        file.seek(17)
        file.write(b"\x7f")
    with pytest.raises(ScratchError, match="does not match its checksum"):
        files.read(2, lambda piece: None, np.empty(4, dtype=np.int64))
    files.remove()
    assert os.listdir(tmp_path) == []
    os.symlink(tmp_path / "elsewhere", tmp_path / lean_exits.bucket_name(12, 0))
    with pytest.raises(BuildError):
        files.append(0, np.arange(3, dtype=np.int64))  # never through a link
