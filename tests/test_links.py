"""Every file a build writes (tables, their temporaries, the lock, checkpoint
states, manifests and their temporaries) is created exclusively and never
written through a link: links planted at every name leave their target as it
was, and the build either replaces the link or stops with one named error."""

import os

import pytest

from solver import build, distributed, tables
from solver.errors import BuildError, CorruptTableError, TableWriteError

TOP = 8


def _checkpoint_names(top, pid):
    names = []
    for seeds in range(top + 1):
        manifest = f"awele-{seeds:02d}.checkpoint.json"
        names += [manifest, f"{manifest}.tmp", f"{manifest}{tables.TEMPORARY_SUFFIX}-{pid}"]
        for stage in range(seeds + 2):
            state = f"awele-{seeds:02d}.stage-{stage:02d}.process-0-of-1.state"
            names += [state, f"{state}.tmp", f"{state}{tables.TEMPORARY_SUFFIX}-{pid}"]
    return names


def _plant(folder, names, victim):
    os.makedirs(folder, exist_ok=True)
    for name in names:
        os.symlink(victim, os.path.join(folder, name))


def _build(directory, checkpoints):
    build.build_distributed(TOP, directory, distributed.Exchange(), threads=1, checkpoint_dir=checkpoints,
                            checkpoint_interval=0.0)


def test_links_at_every_checkpoint_name_are_replaced_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    _plant(checkpoints, _checkpoint_names(TOP, os.getpid()), victim)
    _build(directory, checkpoints)
    assert victim.read_text() == "keep me"
    assert tables.built_layers(directory) == list(range(TOP + 1))
    for seeds in range(TOP + 1):
        assert tables.table_info(directory, seeds, full=True)["status"] == "ok"
    # What is left are links the build never needed (other processes' temporaries), still pointing at the victim.
    assert all(os.path.islink(os.path.join(checkpoints, name)) for name in os.listdir(checkpoints))


@pytest.mark.parametrize("where", ["table temporaries", "tables", "lock"])
def test_links_at_table_names_stop_the_build_with_a_named_error(tmp_path, where):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    directory = str(tmp_path / "tables")
    names = {
        "table temporaries": [f"awele-{n:02d}.h5{tables.TEMPORARY_SUFFIX}-{os.getpid()}" for n in range(TOP + 1)],
        "tables": [f"awele-{n:02d}.h5" for n in range(TOP + 1)],
        "lock": [build.LOCK_NAME],
    }[where]
    _plant(directory, names, victim)
    expected = {"table temporaries": TableWriteError, "tables": CorruptTableError, "lock": BuildError}[where]
    for run in (lambda: build.build(TOP, directory), lambda: _build(directory, str(tmp_path / "checkpoints"))):
        with pytest.raises((expected, build.CollectiveError)) as caught:  # the distributed build says it once
            run()
        assert names[0] in str(caught.value) or build.LOCK_NAME in str(caught.value)
        assert victim.read_text() == "keep me"
    assert all(os.path.islink(os.path.join(directory, name)) for name in names)
