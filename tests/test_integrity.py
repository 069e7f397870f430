"""No value from unchecked data: random bit flips anywhere in a table file
(superblock, object headers, chunk index, checksums, data) give either the
right values or a named table error, never a wrong value or another error."""

import os
import shutil

import h5py
import numpy as np
import pytest

from solver import tables
from solver.errors import TableError
from solver.probe import Tablebase

SEEDS = 13  # 2,464,320 positions: ten chunks, read a chunk at a time by probes


def _regions(path):
    """(metadata byte offsets, data byte offsets) of a table file."""
    with h5py.File(path, "r") as handle:
        dataset = handle[tables.DATASET]
        spans = [dataset.id.get_chunk_info(i) for i in range(dataset.id.get_num_chunks())]
    size = os.path.getsize(path)
    data = np.zeros(size, dtype=bool)
    for info in spans:
        data[info.byte_offset : info.byte_offset + info.size] = True
    return np.flatnonzero(~data), np.flatnonzero(data)


def _check_copy(source, directory, offset, bit, truth, ranks):
    path = tables.table_path(directory, SEEDS)
    shutil.copyfile(source, path)
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ (1 << bit)]))
    outcomes = []
    try:
        reader = tables.ChunkReader(directory, SEEDS)
        try:
            for rank in ranks:
                assert reader.value(rank) == truth[rank], f"wrong probe at rank {rank} (byte {offset}, bit {bit})"
        finally:
            reader.close()
        outcomes.append("probe ok")
    except TableError:
        outcomes.append("probe refused")
    try:
        values = tables.load_values(directory, SEEDS)
        assert np.array_equal(values, truth), f"wrong layer read whole (byte {offset}, bit {bit})"
        outcomes.append("load ok")
    except TableError:
        outcomes.append("load refused")
    return outcomes


@pytest.fixture(scope="module")
def layer13(tables16):
    """Layer 13 of the session's tables (conftest.py), built by the real builder; read only."""
    return tables.table_path(tables16, SEEDS), tables.load_values(tables16, SEEDS)


def test_the_writer_stores_each_chunk_as_the_datasets_own_filters_would(layer13, tmp_path):
    """write_table deflates and checksums the chunks itself, on every core;
    what it stores is byte for byte what HDF5's gzip and Fletcher-32 filters
    store for the same values (the partial last chunk padded with the fill
    value), so any HDF5 reader checks and reads it as before."""
    path, truth = layer13
    with h5py.File(path, "r") as handle:
        dataset = handle[tables.DATASET]
        chunks = [dataset.id.read_direct_chunk(dataset.id.get_chunk_info(i).chunk_offset)
                  for i in range(dataset.id.get_num_chunks())]
        layout = dataset.chunks, dataset.compression, dataset.compression_opts, dataset.fletcher32, dataset.fillvalue
    assert len(chunks) == 10 and truth.shape[0] % tables.CHUNK != 0
    with h5py.File(tmp_path / "filtered.h5", "w") as handle:
        reference = handle.create_dataset("values", data=truth, chunks=layout[0], compression="gzip",
                                          compression_opts=layout[2], fletcher32=True, fillvalue=layout[4])
        assert layout[1:4] == ("gzip", tables.GZIP_LEVEL, True)
        for i, chunk in enumerate(chunks):
            assert reference.id.read_direct_chunk(reference.id.get_chunk_info(i).chunk_offset) == chunk, f"chunk {i}"


@pytest.mark.parametrize("length", [1, 5, 6, 719, 720, 721, 100_001])
def test_fletcher32_is_hdf5s(length):
    """tables.fletcher32 against the checksum HDF5's own filter appends to a
    chunk (big-endian 16-bit words; an odd last byte is a word's high half;
    sums folded every 360 words)."""
    data = (np.arange(length, dtype=np.int64) * 37 % 251).astype(np.uint8)
    with h5py.File("fletcher.h5", "w", driver="core", backing_store=False) as handle:
        dataset = handle.create_dataset("v", data=data, chunks=(length,), fletcher32=True)
        stored = dataset.id.read_direct_chunk((0,))[1]
    assert stored[:-4] == data.tobytes() and int.from_bytes(stored[-4:], "little") == tables.fletcher32(data)


# Metadata flips: 80 (a draw of their own) in the default run, the 250 of before on CI's slow line (.ci/run).
@pytest.mark.parametrize("region, flips", [("metadata", 80), pytest.param("metadata", 250, marks=pytest.mark.slow),
                                           ("data", 60)])
def test_random_bit_flips_never_give_a_wrong_value(layer13, tmp_path, region, flips):
    source, truth = layer13
    metadata, data = _regions(source)
    rng = np.random.default_rng({("metadata", 80): 93, ("metadata", 250): 13, ("data", 60): 31}[region, flips])
    offsets = metadata if region == "metadata" else data
    picks = rng.choice(offsets, size=min(len(offsets), flips), replace=False)
    chunk_ranks = np.arange(0, truth.shape[0], tables.CHUNK // 3)
    refused = 0
    for offset in picks:
        outcomes = _check_copy(source, str(tmp_path), int(offset), int(rng.integers(8)), truth, chunk_ranks)
        refused += "load refused" in outcomes
    if region == "data":
        assert refused == len(picks)  # every data byte is guarded


def test_a_damaged_chunk_index_entry_is_refused_not_read_as_zeros(layer13, tmp_path):
    """The case a hostile test found: a chunk address pointing elsewhere made
    HDF5 return fill values (or another chunk) silently."""
    source, _truth = layer13
    path = tables.table_path(str(tmp_path), SEEDS)
    shutil.copyfile(source, path)
    with h5py.File(path, "r") as handle:
        dataset = handle[tables.DATASET]
        first = dataset.id.get_chunk_info(3).byte_offset
    raw = bytearray(open(path, "rb").read())
    address = first.to_bytes(8, "little")
    where = raw.find(address)
    assert where > 0, "chunk address not found in the index"
    other = h5py.File(source, "r")[tables.DATASET].id.get_chunk_info(4).byte_offset
    raw[where : where + 8] = other.to_bytes(8, "little")
    open(path, "wb").write(bytes(raw))
    with pytest.raises(TableError):
        reader = tables.ChunkReader(str(tmp_path), SEEDS)
        reader.value(3 * tables.CHUNK + 5)
    with pytest.raises(TableError):
        tables.load_values(str(tmp_path), SEEDS)
    with Tablebase(str(tmp_path)) as tablebase, pytest.raises(TableError):
        tablebase._lookup(SEEDS, 3 * tables.CHUNK + 5)


@pytest.mark.parametrize("damage", ["seeds as an array", "histogram missing", "histogram a string",
                                    "histogram wrong size", "checksums damaged"])
def test_malformed_attributes_are_named_errors(layer13, tmp_path, damage):
    source, _ = layer13
    path = tables.table_path(str(tmp_path), SEEDS)
    shutil.copyfile(source, path)
    with h5py.File(path, "r+") as handle:
        if damage == "seeds as an array":
            handle.attrs["seeds"] = np.array([SEEDS, SEEDS])
        elif damage == "histogram missing":
            del handle.attrs["histogram"]
        elif damage == "histogram a string":
            handle.attrs["histogram"] = "many"
        elif damage == "histogram wrong size":
            handle.attrs["histogram"] = np.zeros(3, dtype=np.int64)
        else:
            handle.attrs[tables.CRC_ATTRIBUTE] = np.uint32(1)
    with pytest.raises(TableError, match="awele-13.h5"):
        tables.load_values(str(tmp_path), SEEDS)
    assert tables.table_info(str(tmp_path), SEEDS)["status"] in ("corrupt", "mismatch")


def test_stray_and_oddly_named_files_are_not_layers(tmp_path):
    for name in ("awele-99.h5", "awele-012.h5", "awele-1.h5", "notes.txt", "awele-07.h5.tmp-12"):
        (tmp_path / name).write_text("x")
    (tmp_path / "awele-05.h5").write_text("not hdf5")
    assert tables.built_layers(str(tmp_path)) == [5]
    assert tables.table_info(str(tmp_path), 5)["status"] == "corrupt"


FULL_DISK = """
import errno, os, sys
import numpy as np
from solver import index, tables
from solver.errors import TableWriteError
written = []
real_pwrite = os.pwrite
def pwrite(descriptor, data, offset):
    if len(written) >= 3:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    written.append(offset)
    return real_pwrite(descriptor, data, offset)
os.pwrite = pwrite
values = np.random.default_rng(0).integers(-9, 10, index.layer_size(9)).astype(np.int8)
try:
    tables.write_table(sys.argv[1], 9, values)
except TableWriteError as error:
    print(error)
"""


def test_a_full_disk_is_one_error_that_leaves_nothing(tmp_path):
    """HDF5 2.0 crashed the process at exit after a write failed on a full
    disk; the writes now go through a file object that keeps the error."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == f"cannot write {tables.table_path(str(tmp_path), 9)}: No space left on device"
    assert os.listdir(tmp_path) == []


def test_a_folder_under_a_layer_name_is_a_named_error(tmp_path):
    from click.testing import CliRunner

    from solver import build
    from solver.cli import cli

    build.build(6, str(tmp_path))
    os.remove(tables.table_path(str(tmp_path), 6))
    os.mkdir(tables.table_path(str(tmp_path), 6))
    with Tablebase(str(tmp_path)) as tablebase, pytest.raises(TableError, match="awele-06.h5 is not a table file"):
        tablebase.value("0-1-0-2-0-1/1-0-0-1-0-0 S 0:0")
    assert tables.table_info(str(tmp_path), 6)["status"] == "corrupt"
    for command in (["best", "0-1-0-2-0-1/1-0-0-1-0-0 S 0:0"], ["build", "--max-seeds", "6"]):
        result = CliRunner().invoke(cli, command + ["--dir", str(tmp_path)])
        assert result.exit_code == 2, result.output
        assert "awele-06.h5 is not a table file" in result.output
