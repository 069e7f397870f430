"""A layer counts as built only in the layout awele writes, every chunk's
CRC-32 checked: values rewritten in place (the CRCs left as they were) and
crafted files whose values live elsewhere (external raw storage, a virtual
dataset, an external or soft link) are refused by build, info, verify and
probes, never answered from."""

import json
import os
import shutil
import threading
import zlib

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from solver import tables
from solver.cli import cli
from solver.errors import CorruptTableError
from solver.probe import Tablebase

SEEDS = 7  # 31,824 positions: one chunk


@pytest.fixture
def folder(table_dir, tmp_path):
    """Layers 0..SEEDS copied from the session's tables."""
    for seeds in range(SEEDS + 1):
        shutil.copyfile(tables.table_path(table_dir, seeds), tables.table_path(str(tmp_path), seeds))
    return str(tmp_path)


def _rewrite(path, ranks, value=None):
    """Values at `ranks` changed through HDF5 (its own checksums redone, ours left)."""
    with h5py.File(path, "r+") as handle:
        dataset = handle[tables.DATASET]
        for rank in ranks:
            old = int(dataset[rank])
            dataset[rank] = value if value is not None else (old + 2 if old <= 0 else old - 2)


def _refused_everywhere(directory, seeds=SEEDS):
    """build, info, verify and a probe each refuse layer `seeds` in one line naming it."""
    runner = CliRunner()
    name = os.path.basename(tables.table_path(directory, seeds))
    for command in (["build", "--max-seeds", str(seeds), "--quiet"], ["verify", "--seeds", str(seeds)]):
        # A budget of its own: the default (the available memory less 1 GiB) refused it for memory beside a big build.
        result = runner.invoke(cli, [*command, "--dir", directory, "--memory", "2G"])
        assert result.exit_code == 2, (command, result.output)
        assert name in result.output and "Traceback" not in result.output, result.output
    info = runner.invoke(cli, ["info", "--dir", directory, "--json"])
    rows = {row["seeds"]: row for row in json.loads(info.output)["layers"]}
    assert rows[seeds]["status"] == "corrupt", rows[seeds]
    with Tablebase(directory) as tablebase, pytest.raises(CorruptTableError, match=name):
        tablebase.load(seeds)


@pytest.mark.parametrize("fill", [False, True], ids=["ten changed values", "five fill values"])
def test_values_rewritten_in_place_are_refused_by_build_info_verify_and_probes(folder, fill):
    path = tables.table_path(folder, SEEDS)
    ranks = range(3, 3 + (5 if fill else 10) * 997, 997)
    _rewrite(path, ranks, tables.FILL_VALUE if fill else None)
    _refused_everywhere(folder)


def _craft(directory, seeds, how, elsewhere):
    """A file of layer `seeds` with the right attributes and CRCs whose values are
    stored `how`: in an external raw file, as a virtual dataset or behind a link,
    all pointing into `elsewhere` (a folder outside the tables)."""
    path = tables.table_path(directory, seeds)
    values = tables.load_values(directory, seeds)
    with h5py.File(path, "r") as handle:
        attributes = {key: handle.attrs[key] for key in handle.attrs}
        crcs = handle[tables.CRC_DATASET][...]
    os.remove(path)
    raw = os.path.join(elsewhere, "raw.bin")
    values.tofile(raw)
    holder = os.path.join(elsewhere, "holder.h5")
    with h5py.File(holder, "w") as other:
        other.create_dataset(tables.DATASET, data=values)
    with h5py.File(path, "w", libver=tables.LIBVER) as handle:
        if how == "external storage":
            handle.create_dataset(tables.DATASET, shape=values.shape, dtype=np.int8, external=[(raw, 0, values.size)])
        elif how == "virtual dataset":
            layout = h5py.VirtualLayout(shape=values.shape, dtype=np.int8)
            layout[:] = h5py.VirtualSource(holder, tables.DATASET, shape=values.shape)
            handle.create_virtual_dataset(tables.DATASET, layout, fillvalue=tables.FILL_VALUE)
        elif how == "external link":
            handle[tables.DATASET] = h5py.ExternalLink(holder, tables.DATASET)
        elif how == "soft link":
            handle.create_dataset("elsewhere", data=values, chunks=(values.size,), compression="gzip",
                                  fletcher32=True)
            handle[tables.DATASET] = h5py.SoftLink("/elsewhere")
        elif how == "contiguous":
            handle.create_dataset(tables.DATASET, data=values)
        handle.create_dataset(tables.CRC_DATASET, data=crcs)
        for key, value in attributes.items():
            handle.attrs[key] = value
    assert zlib.crc32(crcs.astype("<u4").tobytes()) == int(attributes[tables.CRC_ATTRIBUTE])


@pytest.mark.parametrize("how", ["external storage", "virtual dataset", "external link", "soft link", "contiguous"])
def test_crafted_layouts_are_refused_by_build_info_verify_and_probes(folder, tmp_path_factory, how):
    _craft(folder, SEEDS, how, str(tmp_path_factory.mktemp("elsewhere")))
    _refused_everywhere(folder)


def test_external_storage_on_a_named_pipe_is_refused_without_reading_it(folder, tmp_path_factory):
    elsewhere = str(tmp_path_factory.mktemp("elsewhere"))
    _craft(folder, SEEDS, "external storage", elsewhere)
    raw = os.path.join(elsewhere, "raw.bin")
    os.remove(raw)
    os.mkfifo(raw)  # a reader of it would wait for a writer forever
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(tables.table_info(folder, SEEDS, full=True)), daemon=True)
    reader.start()
    reader.join(60)
    if reader.is_alive():
        with open(raw, "wb"):  # let the reader go before failing
            pass
        pytest.fail("the reader blocked on the named pipe")
    assert outcome[0]["status"] == "corrupt"
