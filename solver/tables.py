"""Endgame tables on disk: one HDF5 file per seed count (the file format).

File ``awele-NN.h5`` holds layer NN: an int8 dataset ``values`` in index order
(see solver.index), chunked, gzip-compressed and guarded by HDF5's Fletcher-32
checksum filter, with attributes naming the rules, the index, the value
convention and the format, so that a file built for something else is refused
instead of misread.

HDF5's checksums guard the bytes of a chunk, not where the chunk is: a
damaged chunk index makes HDF5 hand back fill values, or another chunk,
silently. So every chunk's values also have a CRC-32 of their own, taken
over the chunk's number and its values, in the dataset ``chunk_crc32``
(itself guarded by the attribute ``chunk_crc32_crc32``), and no value is
returned from a chunk whose CRC has not been checked: a layer read whole
checks every chunk, a single probe checks the chunk it reads. docs/FORMAT.md
describes the format for other tools.

Files are written under a temporary name, created exclusively, in the same
folder and renamed when complete: a crash never leaves a file that looks
finished. The build driver (which layers, in what memory) is solver.build.
"""

import concurrent.futures
import contextlib
import errno
import os
import re
import stat
import struct
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from itertools import repeat
from typing import Any

import h5py
import numba
import numpy as np
from numba import njit

from . import index
from .errors import (
    CorruptTableError,
    MissingTableError,
    TablebaseClosedError,
    TableError,
    TableMismatchError,
    TableWriteError,
)
from .layers import byte_histogram
from .places import DEFAULT_DIRECTORY, ENVIRONMENT_VARIABLE, default_directory  # noqa: F401 (their home was here)
from .version import __version__

RULES = "awele-abapa"
RULES_VERSION = 1
VALUE_CONVENTION = "mover seeds minus opponent seeds from now on; endless play 0 (Romein-Bal)"
FORMAT = "awele-table"
FORMAT_VERSION = 2  # 2: per-chunk CRC-32 beside the values
DATASET = "values"
CRC_DATASET = "chunk_crc32"
CRC_ATTRIBUTE = "chunk_crc32_crc32"
LIBVER = ("v110", "v110")  # HDF5 1.10 structures: every piece of metadata carries a checksum
SIGNATURE = b"\x89HDF\r\n\x1a\n"
FILL_VALUE = -128  # never a value: what HDF5 returns for a chunk it cannot find
CHUNK = 1 << 18  # positions per HDF5 chunk: a single probe inflates 256 KiB (0.8 ms)
SLICE = 1 << 24  # positions per read or write call on a whole layer (a multiple of CHUNK)
TEMPORARY_SUFFIX = ".tmp"
SMALL_LAYER = 1 << 24  # histograms of layers up to this size use numpy (no kernel to load)
FILE_NAME = re.compile(r"awele-([0-9]{2})\.h5")  # ASCII digits: int() reads any Unicode digit
# The distances to conversion (solver.distance), optional beside the values: a byte a position chunked and
# checked as the values are, and the exact distances at the cap or beyond as (rank, distance) rows.
DISTANCE_DATASET = "distance"
DISTANCE_CRC_DATASET = "distance_crc32"
DISTANCE_CRC_ATTRIBUTE = "distance_crc32_crc32"
OVERFLOW_DATASET = "distance_overflow"
OVERFLOW_CRC_ATTRIBUTE = "distance_overflow_crc32"
DISTANCE_FILL = 255  # never a stored distance byte
DISTANCE_NAMES = (DISTANCE_DATASET, DISTANCE_CRC_DATASET, OVERFLOW_DATASET)


def table_path(directory: str | os.PathLike, seeds: int) -> str:
    """Path of the file of layer `seeds` in `directory`."""
    return os.path.join(directory, f"awele-{seeds:02d}.h5")


def build_command(seeds: int, directory: str | os.PathLike | None = None) -> str:
    """The command line that builds every layer up to `seeds`."""
    where = "" if directory in (None, default_directory()) else f" --dir {directory}"
    return f"awele build --max-seeds {seeds}{where}"


def chunk_crc(chunk: int, values: np.ndarray) -> int:
    """CRC-32 of chunk number `chunk` (8 bytes, little-endian) followed by its values."""
    # numpy's stubs give ndarray the buffer protocol only from Python 3.12 on.
    return zlib.crc32(values, zlib.crc32(struct.pack("<Q", chunk)))  # type: ignore[arg-type]


def expected_attributes(seeds: int) -> dict[str, str | int]:
    """The attributes a valid file of layer `seeds` must carry."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "rules": RULES,
        "rules_version": RULES_VERSION,
        "index_scheme": index.INDEX_SCHEME,
        "index_version": index.INDEX_VERSION,
        "seeds": seeds,
        "positions": index.layer_size(seeds),
    }


def histogram(values: np.ndarray, seeds: int) -> np.ndarray:
    """Counts of each value d = -seeds..seeds (index d + seeds)."""
    if values.shape[0] <= SMALL_LAYER:
        counts = np.bincount(values.view(np.uint8), minlength=256)
    else:
        # np.bincount would make an 8-bytes-a-position temporary.
        counts = byte_histogram(values)
    return np.array([counts[d & 0xFF] for d in range(-seeds, seeds + 1)], dtype=np.int64)


class _TemporaryFile:
    """The temporary file as HDF5 writes it, through h5py's file-object
    driver: positioned reads and writes on a descriptor. A write that fails
    (a full disk) is kept in `error` and the writes after it are dropped, so
    that HDF5 still closes the file cleanly; write_table then raises and
    removes the file. (Given the failure itself, HDF5 2.0 keeps a file whose
    close failed and crashes the process when it exits.)"""

    def __init__(self, descriptor):
        self.descriptor = descriptor
        self.position = 0
        self.error = None

    def seek(self, offset, whence=os.SEEK_SET):
        if whence == os.SEEK_CUR:
            offset += self.position
        elif whence == os.SEEK_END:
            offset += os.fstat(self.descriptor).st_size
        self.position = offset
        return offset

    def tell(self):
        return self.position

    def readinto(self, buffer):
        view = memoryview(buffer).cast("B")
        data = os.pread(self.descriptor, len(view), self.position)
        view[: len(data)] = data
        view[len(data) :] = bytes(len(view) - len(data))  # past the end reads as zeros
        self.position += len(view)
        return len(view)

    def read(self, size=-1):
        if size < 0:
            size = max(0, os.fstat(self.descriptor).st_size - self.position)
        buffer = bytearray(size)
        self.readinto(buffer)
        return bytes(buffer)

    def write(self, data):
        view = memoryview(data).cast("B")
        if self.error is None:
            try:
                done = 0
                while done < len(view):
                    done += os.pwrite(self.descriptor, view[done:], self.position + done)
            except OSError as error:
                self.error = error
        self.position += len(view)
        return len(view)

    def truncate(self, size=None):
        if self.error is None:
            try:
                os.ftruncate(self.descriptor, self.position if size is None else size)
            except OSError as error:
                self.error = error

    def flush(self):
        pass


def write_table(directory: str, seeds: int, values: Any, build_seconds: float = 0.0,
                extra: dict[str, Any] | None = None, counts: np.ndarray | None = None,
                distances: tuple[np.ndarray, np.ndarray] | None = None) -> str:
    """Write layer `seeds` atomically: an exclusively created temporary file,
    written a slice at a time straight from `values`, then a rename. Its
    chunks are deflated on as many threads as numba has (filtered_chunk).

    `values` is an int8 array, or anything with that shape and dtype whose
    slices ``values[start:stop]`` give arrays (a distributed build gathers
    each slice from its processes); `counts`, the value histogram, is then
    given rather than computed. `distances`, a layer's distance bytes and
    overflow rows (solver.distance), are written beside the values.
    Raises TableWriteError (naming the file) when the folder cannot take
    it; nothing is left behind.
    """
    size = index.layer_size(seeds)
    if tuple(values.shape) != (size,) or values.dtype != np.int8:
        raise ValueError(f"layer {seeds} has {size} int8 values, got {values.shape} {values.dtype}")
    path = table_path(directory, seeds)
    temporary = f"{path}{TEMPORARY_SUFFIX}-{os.getpid()}"
    refused = False
    try:
        # Created exclusively (O_EXCL): an existing name, or a link planted
        # at it, makes this fail instead of being followed.
        try:
            descriptor = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except OSError:
            refused = True
            raise
        target = _TemporaryFile(descriptor)
        try:
            _write_layer(target, seeds, size, values, build_seconds, extra, counts, distances)
        finally:
            os.close(descriptor)
        if target.error is not None:
            raise target.error
        os.replace(temporary, path)
    except (OSError, RuntimeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else " ".join(str(error).split())
        if refused and isinstance(error, FileExistsError):
            reason = f"{os.path.basename(temporary)} is already there (a link?), refusing to write through it"
        raise TableWriteError(f"cannot write {path}: {reason}") from None
    finally:
        # Whatever stopped the write, the temporary is ours unless the open
        # refused it: a signal can land right after the open returns, before
        # any flag could say so (Python runs its handlers between calls).
        if not refused and os.path.lexists(temporary):
            os.remove(temporary)
    return path


def write_file_exclusively(path: str, parts: Iterable[bytes | np.ndarray], sync: bool = True) -> int:
    """Write the byte buffers `parts` to `path` atomically and never through a
    link: a temporary name created exclusively (O_EXCL | O_NOFOLLOW; a stale
    one of this process removed first, a link there is removed, not
    followed), synced (unless not `sync`), then renamed over `path` (a rename
    replaces a link at `path` itself, never its target). Returns the CRC-32
    of what was written."""
    temporary = f"{path}{TEMPORARY_SUFFIX}-{os.getpid()}"
    if os.path.lexists(temporary):
        os.remove(temporary)
    crc = 0
    refused = False
    try:
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError:
            refused = True
            raise
        try:
            for part in parts:
                view = memoryview(part).cast("B")  # type: ignore[arg-type]  # an ndarray is a buffer (stubs: 3.12 on)
                done = 0
                while done < len(view):
                    done += os.write(descriptor, view[done:])
                crc = zlib.crc32(view, crc)
            if sync:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    finally:
        # Ours unless the open refused it, even if a signal landed right after the open returned (as write_table).
        if not refused and os.path.lexists(temporary):
            os.remove(temporary)
    return crc


def read_file_nofollow(path: str, limit: int) -> bytes:
    """Up to `limit` bytes of `path`, refusing (OSError) a link planted at the name."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        chunks = []
        left = limit
        while left > 0:
            data = os.read(descriptor, min(left, 1 << 24))
            if not data:
                break
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


GZIP_LEVEL = 4  # the values dataset's deflate level


def filtered_chunk(chunk: int, piece: np.ndarray, offset: int, fill: int = FILL_VALUE) -> tuple[bytes, int]:
    """(chunk `chunk` as HDF5 stores it: its CHUNK values, the last one
    padded with FILL_VALUE, deflated at GZIP_LEVEL, then its Fletcher-32 in
    4 little-endian bytes; the CRC-32 of its values, chunk_crc) for the
    values piece[offset:offset + CHUNK]. Byte for byte what the dataset's
    own filters write (a test holds it to that); zlib lets go of the GIL,
    so the chunks of a slice are filtered on every core at once."""
    values = piece[offset : offset + CHUNK]
    crc = chunk_crc(chunk, values)
    if values.shape[0] < CHUNK and chunk > 0:
        values = np.concatenate([values, np.full(CHUNK - values.shape[0], fill, dtype=values.dtype)])
    data = zlib.compress(values, GZIP_LEVEL)  # type: ignore[arg-type]  # an ndarray is a buffer (stubs: 3.12 on)
    return data + struct.pack("<I", fletcher32(np.frombuffer(data, dtype=np.uint8))), crc


@njit(cache=True, nogil=True)
def fletcher32(data: np.ndarray) -> int:
    """HDF5's Fletcher-32 of a byte array (H5_checksum_fletcher32): 16-bit
    big-endian words, both sums folded every 360 words and at the end."""
    words = data.shape[0] // 2
    first = np.uint32(0)
    second = np.uint32(0)
    at = 0
    while words:
        run = min(words, 360)
        words -= run
        for _ in range(run):
            first += np.uint32((np.uint32(data[at]) << np.uint32(8)) | np.uint32(data[at + 1]))
            second += first
            at += 2
        first = (first & np.uint32(0xFFFF)) + (first >> np.uint32(16))
        second = (second & np.uint32(0xFFFF)) + (second >> np.uint32(16))
    if data.shape[0] % 2:
        first += np.uint32(data[at]) << np.uint32(8)
        second += first
        first = (first & np.uint32(0xFFFF)) + (first >> np.uint32(16))
        second = (second & np.uint32(0xFFFF)) + (second >> np.uint32(16))
    first = (first & np.uint32(0xFFFF)) + (first >> np.uint32(16))
    second = (second & np.uint32(0xFFFF)) + (second >> np.uint32(16))
    return (np.int64(second) << 16) | np.int64(first)


def _write_layer(target, seeds, size, values, build_seconds, extra, counts, distances=None):
    """The HDF5 file of layer `seeds` into `target` (a file object)."""
    with h5py.File(target, "w", libver=LIBVER) as handle:
        chunks = (size + CHUNK - 1) // CHUNK
        dataset = handle.create_dataset(
            DATASET,
            shape=(size,),
            dtype=np.int8,
            chunks=(min(CHUNK, max(size, 1)),),
            compression="gzip",
            compression_opts=GZIP_LEVEL,
            fletcher32=True,
            fillvalue=FILL_VALUE,
        )
        crcs = np.zeros(chunks, dtype="<u4")
        # A source that filters its chunks itself (a distributed build's, on
        # every process) hands them over a slice at a time.
        filtered = getattr(values, "filtered_chunks", None)
        with concurrent.futures.ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
            for start in range(0, size, SLICE):
                if target.error is not None:
                    raise target.error  # the disk is full: stop here (h5py still closes the file)
                numbers = range(start // CHUNK, (min(size, start + SLICE) + CHUNK - 1) // CHUNK)
                if filtered is not None:
                    done = filtered(start, min(size, start + SLICE))
                else:
                    piece = np.ascontiguousarray(values[start : start + SLICE])
                    done = pool.map(filtered_chunk, numbers, repeat(piece), range(0, piece.shape[0], CHUNK))
                for number, (data, crc) in zip(numbers, done):
                    dataset.id.write_direct_chunk((number * CHUNK,), data)
                    crcs[number] = crc
        handle.create_dataset(CRC_DATASET, data=crcs)
        if distances is not None:
            _write_distances(handle, target, size, *distances)
        attributes = handle.attrs
        fields: dict[str, Any] = dict(expected_attributes(seeds))
        fields.update(
            {
                CRC_ATTRIBUTE: np.uint32(zlib.crc32(crcs.tobytes())),
                "value_convention": VALUE_CONVENTION,
                "histogram": histogram(values, seeds) if counts is None else np.asarray(counts, np.int64),
                "build_seconds": float(build_seconds),
                "package_version": __version__,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        )
        fields.update(extra or {})
        fields["complete"] = True
        for key, value in fields.items():
            # Text as fixed-length bytes: it then lives in the checksummed
            # object header, not in HDF5's unchecked global heap.
            attributes[key] = np.bytes_(value.encode()) if isinstance(value, str) else value


def _write_distances(handle, target, size, distance, overflow):
    """The distance datasets and attributes of a layer (docs/FORMAT.md)."""
    from .distance import DERIVED, DISTANCE_CAP, DISTANCE_METRIC, DISTANCE_VERSION, distance_histogram

    overflow = np.ascontiguousarray(overflow, dtype="<i8").reshape(-1, 2)
    if distance.shape != (size,) or distance.dtype != np.uint8:
        raise ValueError(f"a layer of {size} positions has as many uint8 distances, got {distance.shape} "
                         f"{distance.dtype}")
    dataset = handle.create_dataset(DISTANCE_DATASET, shape=(size,), dtype=np.uint8,
                                    chunks=(min(CHUNK, max(size, 1)),), compression="gzip",
                                    compression_opts=GZIP_LEVEL, fletcher32=True, fillvalue=DISTANCE_FILL)
    chunks = (size + CHUNK - 1) // CHUNK
    crcs = np.zeros(chunks, dtype="<u4")
    with concurrent.futures.ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
        for start in range(0, size, SLICE):
            if target.error is not None:
                raise target.error
            numbers = range(start // CHUNK, (min(size, start + SLICE) + CHUNK - 1) // CHUNK)
            piece = np.ascontiguousarray(distance[start : start + SLICE])
            done = pool.map(filtered_chunk, numbers, repeat(piece), range(0, piece.shape[0], CHUNK),
                            repeat(DISTANCE_FILL))
            for number, (data, crc) in zip(numbers, done):
                dataset.id.write_direct_chunk((number * CHUNK,), data)
                crcs[number] = crc
    handle.create_dataset(DISTANCE_CRC_DATASET, data=crcs)
    handle.create_dataset(OVERFLOW_DATASET, data=overflow)
    attributes = handle.attrs
    attributes[DISTANCE_CRC_ATTRIBUTE] = np.uint32(zlib.crc32(crcs.tobytes()))
    attributes[OVERFLOW_CRC_ATTRIBUTE] = np.uint32(zlib.crc32(overflow.tobytes()))
    attributes["distance_version"] = DISTANCE_VERSION
    attributes["distance_metric"] = np.bytes_(DISTANCE_METRIC.encode())
    attributes["distance_cap"] = DISTANCE_CAP
    attributes["distance_derived"] = DERIVED
    attributes["distance_histogram"] = distance_histogram(distance)


# What HDF5 (through h5py) raises when it meets damaged metadata: any of these
# coming out of a read is the file's fault, and is reported as such.
_HDF5_FAILURES = (OSError, KeyError, RuntimeError, ValueError, TypeError, IndexError, AttributeError, SystemError)


@contextlib.contextmanager
def damage_guard(path: str) -> Iterator[None]:
    """Turn whatever a damaged file makes HDF5 raise into CorruptTableError naming `path`."""
    try:
        yield
    except TableError:
        raise
    except _HDF5_FAILURES as error:
        raise CorruptTableError(f"{path} is damaged: {error}") from None


def open_table(directory: str | os.PathLike, seeds: int, cache_bytes: int | None = None) -> h5py.File:
    """Open the file of layer `seeds` for reading after checking its attributes.

    Raises MissingTableError, CorruptTableError or TableMismatchError, each
    naming the file and what is wrong. The caller closes the returned
    h5py.File (it is a context manager). Every reader of a layer comes
    here: a layer is read only from a regular file at its own name in the
    folder, never through a symbolic link (_open_regular).
    """
    path = table_path(directory, seeds)
    descriptor = _open_regular(path, directory, seeds)
    try:
        checked = os.fstat(descriptor)
        _check_superblock(path, os.pread(descriptor, len(SIGNATURE) + 1, 0))
        options = {}
        if cache_bytes is not None:
            options = {"rdcc_nbytes": int(cache_bytes), "rdcc_nslots": 10007}
        try:
            handle = h5py.File(path, "r", **options)
        except _HDF5_FAILURES as error:
            raise CorruptTableError(f"{path} cannot be read as HDF5 (truncated or damaged?): {error}") from None
    except OSError as error:
        if isinstance(error, TableError):
            raise
        raise CorruptTableError(f"{path} cannot be read: {error.strerror}") from None
    finally:
        os.close(descriptor)
    try:
        # HDF5 opens the name again: what it opened must be the file checked
        # above, not a link or another file swapped in at the name meanwhile.
        opened = os.fstat(handle.id.get_vfd_handle())
        if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
            raise CorruptTableError(f"{path} was replaced while it was opened (a link swapped in?); not read")
        with damage_guard(path):
            _check_file(handle, path, seeds)
    except BaseException:
        handle.close()
        raise
    return handle


def _open_regular(path: str, directory: str | os.PathLike, seeds: int) -> int:
    """A read-only descriptor on `path`, which must be a regular file and not
    a symbolic link (to anywhere, even to a valid table: awele reads a layer
    only from its own folder's layout, as it writes it). O_NOFOLLOW refuses
    a link at the name itself and O_NONBLOCK keeps a pipe there from
    blocking the open; fstat then looks at what was opened, so nothing
    swapped in between a check and the open is followed."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise MissingTableError(
            f"no table for {seeds} seeds in {directory}: build it with `{build_command(seeds, directory)}`"
        ) from None
    except OSError as error:
        if error.errno == errno.ELOOP or os.path.islink(path):
            raise CorruptTableError(f"{path} is a symbolic link: awele reads a layer only from a file of its own "
                                    "in the tables folder, never through a link") from None
        raise CorruptTableError(f"{path} cannot be read: {error.strerror}") from None
    try:
        kind = os.fstat(descriptor).st_mode
    except OSError as error:
        os.close(descriptor)
        raise CorruptTableError(f"{path} cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(kind):
        os.close(descriptor)
        what = "a folder" if stat.S_ISDIR(kind) else "a pipe" if stat.S_ISFIFO(kind) else "not a regular file"
        raise CorruptTableError(f"{path} is not a table file ({what})")
    return descriptor


def _check_superblock(path, head):
    """Refuse, before HDF5 parses anything, a file whose metadata has no checksums
    (superblock version below 2): damage there can make HDF5 misread or hang.
    `head` is the file's first bytes."""
    if len(head) < len(SIGNATURE) + 1 or head[: len(SIGNATURE)] != SIGNATURE:
        raise CorruptTableError(f"{path} is not an HDF5 file (truncated or damaged?)")
    if head[-1] < 2:
        raise TableMismatchError(
            f"{path} was written without metadata checksums (an older awele format): delete it and build it again"
        )


def _check_file(handle, path, seeds):
    attributes = handle.attrs
    for key, wanted in expected_attributes(seeds).items():
        if key not in attributes:
            raise CorruptTableError(f"{path} lacks the attribute {key!r}: not a finished awele table")
        found = attributes[key]
        found = found.decode() if isinstance(found, bytes) else found
        if isinstance(found, np.ndarray) or found != wanted:
            raise TableMismatchError(f"{path} has {key} = {found!r}, this awele needs {wanted!r}")
    if not attributes.get("complete", False):
        raise CorruptTableError(f"{path} was not finished")
    for name in (DATASET, CRC_DATASET):
        if name not in handle:
            raise CorruptTableError(f"{path} has no {name!r} dataset")
    _check_layout(handle, path, seeds)
    dataset = handle[DATASET]
    if dataset.shape != (index.layer_size(seeds),) or dataset.dtype != np.int8:
        raise CorruptTableError(f"{path}: dataset has shape {dataset.shape} and type {dataset.dtype}")
    histogram_found = attributes.get("histogram")
    if not isinstance(histogram_found, np.ndarray) or histogram_found.shape != (2 * seeds + 1,):
        raise CorruptTableError(f"{path}: the value histogram is missing or malformed")
    if int(histogram_found.sum()) != index.layer_size(seeds):
        raise CorruptTableError(f"{path}: the value histogram does not add up to the layer's size")
    _check_records(attributes, path)
    if DISTANCE_DATASET in handle:
        _check_distance_attributes(handle, path, seeds, histogram_found)


DISTANCE_CHECKSUMS = (DISTANCE_DATASET, DISTANCE_CRC_DATASET, DISTANCE_CRC_ATTRIBUTE)  # chunk_checksums' names


def _check_distance_attributes(handle, path, seeds, values_histogram):
    """The distance attributes of a file that has distances: the version and
    the byte meanings this package reads, a histogram of the bytes that adds
    up and agrees with the values' (a byte DERIVED at least for each value 0) and
    with the overflow rows (one for each byte at the cap)."""
    from .distance import DERIVED, DISTANCE_CAP, DISTANCE_VERSION, NO_DISTANCE

    attributes = handle.attrs
    for key, wanted in (("distance_version", DISTANCE_VERSION), ("distance_cap", DISTANCE_CAP),
                        ("distance_derived", DERIVED)):
        found = attributes.get(key)
        if found is None:
            raise CorruptTableError(f"{path} has distances but no attribute {key!r}")
        if np.asarray(found).shape != () or found != wanted:
            raise TableMismatchError(f"{path} has {key} = {found!r}, this awele reads {wanted!r}: "
                                     f"build it again to rewrite its distances")
    counts = attributes.get("distance_histogram")
    if (not isinstance(counts, np.ndarray) or counts.shape != (256,) or counts.dtype.kind not in "iu"
            or int(counts.sum()) != index.layer_size(seeds) or counts[DISTANCE_CAP + 1 : DERIVED].any()
            or counts[DERIVED] < values_histogram[seeds] or counts[1] or counts[NO_DISTANCE] or counts[DISTANCE_FILL]
            or counts[DISTANCE_CAP] != handle[OVERFLOW_DATASET].shape[0]):
        raise CorruptTableError(f"{path}: the distance histogram is missing or does not agree with the values")


# What write_table writes afresh; add_distances keeps every other attribute (the build's records).
_REWRITTEN = {"format", "format_version", "rules", "rules_version", "index_scheme", "index_version", "seeds",
              "positions", CRC_ATTRIBUTE, "value_convention", "histogram", "build_seconds", "package_version",
              "created", "complete", DISTANCE_CRC_ATTRIBUTE, OVERFLOW_CRC_ATTRIBUTE, "distance_version",
              "distance_metric", "distance_cap", "distance_derived", "distance_histogram"}


def add_distances(directory: str, seeds: int, values: Any, distance: np.ndarray, overflow: np.ndarray,
                  extra: dict[str, Any] | None = None) -> str:
    """Write layer `seeds`' file again, atomically, with distances beside its
    values: `values` are the file's (read and checked: load_values), or a
    reader of them that write_table takes (lean_distance.FileValues: its
    slices read from this file, each chunk checked), its build records are
    kept, `extra` added."""
    path = table_path(directory, seeds)
    with open_table(directory, seeds) as handle, damage_guard(path):
        kept = {key: handle.attrs[key] for key in handle.attrs if key not in _REWRITTEN}
        build_seconds = recorded(handle.attrs, path, "build_seconds") or 0.0
        counts = np.asarray(handle.attrs["histogram"], dtype=np.int64)
    if isinstance(values, np.ndarray) and (histogram(values, seeds) != counts).any():
        raise ValueError(f"layer {seeds}: the values given are not those of {path}")
    return write_table(directory, seeds, values, build_seconds, extra={**kept, **(extra or {})}, counts=counts,
                       distances=(distance, overflow))


def has_distances(directory: str | os.PathLike, seeds: int) -> bool:
    """Whether the file of layer `seeds` holds distances (its header checked)."""
    path = table_path(directory, seeds)
    with open_table(directory, seeds) as handle, damage_guard(path):
        return DISTANCE_DATASET in handle


def _overflow_rows(handle, path):
    """The checked overflow rows (rank, distance) of an open table with distances."""
    rows = np.ascontiguousarray(handle[OVERFLOW_DATASET][...], dtype="<i8").reshape(-1, 2)
    stored = np.asarray(handle.attrs.get(OVERFLOW_CRC_ATTRIBUTE, b""))
    if stored.shape != () or stored.dtype.kind not in "ui" or zlib.crc32(rows.tobytes()) != int(stored):
        raise CorruptTableError(f"{path}: the distance overflow rows are damaged")
    from .distance import DISTANCE_CAP

    if rows.shape[0] and ((np.diff(rows[:, 0]) <= 0).any() or rows[:, 0].min() < 0
                          or rows[:, 0].max() >= handle[DATASET].shape[0] or rows[:, 1].min() < DISTANCE_CAP):
        raise CorruptTableError(f"{path}: the distance overflow rows are not sorted ranks at the cap or beyond")
    return rows


def load_distances(directory: str | os.PathLike, seeds: int, out: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Layer `seeds`' distance bytes read whole (into `out`, uint8, if given)
    and its overflow rows, every chunk's checksum verified and the bytes
    matched against their stored histogram. Raises MissingDistanceError
    when the file has no distances, CorruptTableError when they are damaged."""
    from .distance import distance_histogram
    from .errors import MissingDistanceError

    path = table_path(directory, seeds)
    with open_table(directory, seeds) as handle, damage_guard(path):
        if DISTANCE_DATASET not in handle:
            raise MissingDistanceError(f"{path} has no distances: add them with `{build_command(seeds, directory)}`")
        dataset = handle[DISTANCE_DATASET]
        size = dataset.shape[0]
        distance = np.empty(size, dtype=np.uint8) if out is None else out
        crcs = chunk_checksums(handle, path, DISTANCE_CHECKSUMS)
        with _reading_pool() as pool:
            _read_checked(dataset, path, crcs, 0, distance[:size].view(np.int8), pool)
        expected = np.asarray(handle.attrs["distance_histogram"])
        rows = _overflow_rows(handle, path)
    if (distance_histogram(distance[:size]) != expected).any():
        raise CorruptTableError(f"{path}: the distances do not match their stored histogram")
    return distance, rows


def check_distances(directory: str | os.PathLike, seeds: int) -> bool:
    """Whether the file of layer `seeds` holds distances, checked as
    load_distances checks them, a slice at a time, keeping nothing (False
    when it has none). Raises as load_distances does for damaged ones."""
    from .distance import distance_histogram

    path = table_path(directory, seeds)
    with open_table(directory, seeds) as handle, damage_guard(path):
        if DISTANCE_DATASET not in handle:
            return False
        dataset = handle[DISTANCE_DATASET]
        size = dataset.shape[0]
        crcs = chunk_checksums(handle, path, DISTANCE_CHECKSUMS)
        buffer = np.empty(min(size, SLICE), dtype=np.uint8)
        found = np.zeros(256, dtype=np.int64)
        with _reading_pool() as pool:
            for start in range(0, size, SLICE):
                piece = buffer[: min(size, start + SLICE) - start]
                _read_checked(dataset, path, crcs, start, piece.view(np.int8), pool)
                found += distance_histogram(piece)
        expected = np.asarray(handle.attrs["distance_histogram"])
        _overflow_rows(handle, path)
    if (found != expected).any():
        raise CorruptTableError(f"{path}: the distances do not match their stored histogram")
    return True


# What a build records of itself and `awele info` or `awele plan` read back: the
# attribute, whether it is a count (else any real number), its least value.
RECORDS = {"build_seconds": (False, 0), "processes": (True, 1), "bytes_exchanged": (True, 0)}


def recorded(attributes: Any, path: str, name: str) -> int | float | None:
    """The build record `name` (RECORDS) of an open table, None when the file
    has none (older builds do not record every one). A record that is not
    one finite number of its kind in its range raises CorruptTableError
    naming the file and the attribute: text, NaN or a negative count is not
    what awele writes, and must not reach a plan's arithmetic."""
    if name not in attributes:
        return None
    whole, least = RECORDS[name]
    found = np.asarray(attributes[name])
    kinds = "iu" if whole else "iuf"
    if found.shape != () or found.dtype.kind not in kinds or not np.isfinite(found) or found < least:
        shown = found.item() if found.shape == () else found.tolist() if found.size <= 4 else f"an array {found.shape}"
        if isinstance(shown, bytes):
            shown = shown.decode(errors="replace")
        what = "a whole number" if whole else "a number"
        raise CorruptTableError(f"{path} has a damaged {name!r} attribute ({shown!r}, not {what} of at least {least})")
    return int(found) if whole else float(found)


def _check_records(attributes, path):
    for name in RECORDS:
        recorded(attributes, path, name)


def _check_layout(handle, path, seeds):
    """Refuse any layout but the one write_table makes, before a value is read:
    the two datasets themselves (no soft or external link, nothing else in
    the file), `values` chunked as written with gzip then Fletcher-32 and
    `chunk_crc32` contiguous or compact, both stored in this file (no
    external raw-data file, no virtual dataset over other files). Anything
    else could make the reader answer from another file, or block on one."""
    names = sorted(handle.keys())
    if names not in (sorted((DATASET, CRC_DATASET)), sorted((DATASET, CRC_DATASET, *DISTANCE_NAMES))):
        raise CorruptTableError(f"{path} holds {names}, not the datasets of an awele table")
    for name in names:
        link = handle.get(name, getlink=True)
        if not isinstance(link, h5py.HardLink):
            raise CorruptTableError(f"{path}: {name!r} is a {type(link).__name__}, not data stored in the table")
        if not isinstance(handle.get(name), h5py.Dataset):
            raise CorruptTableError(f"{path}: {name!r} is not a dataset")
    size = index.layer_size(seeds)
    values = handle[DATASET].id.get_create_plist()
    crcs = handle[CRC_DATASET].id.get_create_plist()
    filters = [values.get_filter(i)[0] for i in range(values.get_nfilters())]
    if values.get_layout() != h5py.h5d.CHUNKED or values.get_external_count() or crcs.get_external_count():
        raise CorruptTableError(f"{path} is not stored as awele writes it (external or virtual storage?)")
    if crcs.get_layout() not in (h5py.h5d.CONTIGUOUS, h5py.h5d.COMPACT) or crcs.get_nfilters():
        raise CorruptTableError(f"{path}: the chunk checksums are not stored as awele writes them")
    if filters != [h5py.h5z.FILTER_DEFLATE, h5py.h5z.FILTER_FLETCHER32]:
        raise CorruptTableError(f"{path}: the values have filters {filters}, not gzip and Fletcher-32")
    if handle[DATASET].chunks != (min(CHUNK, max(size, 1)),):
        raise CorruptTableError(f"{path}: the values are chunked as {handle[DATASET].chunks}, not as awele writes them")
    if DISTANCE_DATASET in names:
        _check_distance_layout(handle, path, size)


def _check_distance_layout(handle, path, size):
    """_check_layout for the distance datasets: `distance` stored as `values`
    is, its checksums and the overflow rows contiguous or compact, unfiltered."""
    distance = handle[DISTANCE_DATASET]
    plist = distance.id.get_create_plist()
    filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    if plist.get_layout() != h5py.h5d.CHUNKED or plist.get_external_count():
        raise CorruptTableError(f"{path}: the distances are not stored as awele writes them (external or virtual?)")
    if filters != [h5py.h5z.FILTER_DEFLATE, h5py.h5z.FILTER_FLETCHER32]:
        raise CorruptTableError(f"{path}: the distances have filters {filters}, not gzip and Fletcher-32")
    if distance.chunks != (min(CHUNK, max(size, 1)),) or distance.shape != (size,) or distance.dtype != np.uint8:
        raise CorruptTableError(f"{path}: the distances are not a uint8 dataset chunked as awele writes it")
    for name in (DISTANCE_CRC_DATASET, OVERFLOW_DATASET):
        plist = handle[name].id.get_create_plist()
        if plist.get_layout() not in (h5py.h5d.CONTIGUOUS, h5py.h5d.COMPACT) or plist.get_nfilters() or (
                plist.get_external_count()):
            raise CorruptTableError(f"{path}: {name!r} is not stored as awele writes it")
    overflow = handle[OVERFLOW_DATASET]
    if overflow.ndim != 2 or overflow.shape[1] != 2 or overflow.dtype != np.dtype("<i8"):
        raise CorruptTableError(f"{path}: the distance overflow rows are not (rank, distance) int64 pairs")


def chunk_checksums(handle: h5py.File, path: str, names: tuple[str, str, str] = (DATASET, CRC_DATASET, CRC_ATTRIBUTE)
                    ) -> np.ndarray:
    """The verified per-chunk CRC-32 array of an open table (of its values,
    or with `names` of another chunked dataset: its name, its CRCs' dataset
    and their CRC's attribute)."""
    dataset, crc_dataset, crc_attribute = names
    chunks = (handle[dataset].shape[0] + CHUNK - 1) // CHUNK
    crcs = np.asarray(handle[crc_dataset][...])
    stored = np.asarray(handle.attrs.get(crc_attribute, b""))
    if (crcs.shape != (chunks,) or crcs.dtype.kind != "u" or crcs.dtype.itemsize != 4 or stored.shape != ()
            or stored.dtype.kind not in "ui" or zlib.crc32(crcs.astype("<u4").tobytes()) != int(stored)):
        raise CorruptTableError(f"{path}: the chunk checksums are damaged")
    return crcs


def _check_chunks(path, crcs, first_chunk, values):
    for offset in range(0, values.shape[0], CHUNK):
        chunk = first_chunk + offset // CHUNK
        if chunk_crc(chunk, values[offset : offset + CHUNK]) != int(crcs[chunk]):
            raise CorruptTableError(f"{path} is damaged: chunk {chunk} fails its CRC-32")


def _unfiltered_chunk(path: str, chunk: int, stored: bytes, length: int, crc: int, out: np.ndarray) -> None:
    """Values of chunk `chunk` from the bytes HDF5 stores for it into `out`
    (its first out.shape[0] values), checked as HDF5's filters check them
    (Fletcher-32, one whole deflate stream of `length` values) and then
    against the chunk's CRC-32: nothing of a chunk is used before both
    pass. Runs on a worker thread: zlib and fletcher32 let go of the GIL."""
    body = memoryview(stored)[:-4]
    if len(stored) < 4 or fletcher32(np.frombuffer(body, dtype=np.uint8)) != struct.unpack("<I", stored[-4:])[0]:
        raise CorruptTableError(f"{path} is damaged: chunk {chunk} fails its Fletcher-32")
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(body, length)
    except zlib.error as error:
        raise CorruptTableError(f"{path} is damaged: chunk {chunk} does not inflate ({error})") from None
    if len(data) != length or not inflater.eof or inflater.unused_data or inflater.unconsumed_tail:
        raise CorruptTableError(f"{path} is damaged: chunk {chunk} does not inflate to {length} values")
    values = np.frombuffer(data, dtype=np.int8, count=out.shape[0])
    if chunk_crc(chunk, values) != crc:
        raise CorruptTableError(f"{path} is damaged: chunk {chunk} fails its CRC-32")
    out[:] = values


def _read_checked(dataset: h5py.Dataset, path: str, crcs: np.ndarray, first: int, out: np.ndarray,
                  pool: concurrent.futures.Executor) -> None:
    """Ranks first..first + out.shape[0] - 1 (first a multiple of CHUNK) into
    `out`, every chunk checked (_unfiltered_chunk). The stored bytes of a
    chunk are read here, in order; they are checked and inflated on the
    pool's threads, several chunks at once."""
    length = dataset.chunks[0]
    pending = []
    for begin in range(first, first + out.shape[0], CHUNK):
        chunk = begin // CHUNK
        mask, stored = dataset.id.read_direct_chunk((begin,))
        if mask:
            raise CorruptTableError(f"{path} is damaged: chunk {chunk} says its filters were skipped")
        target = out[begin - first : begin - first + min(CHUNK, first + out.shape[0] - begin)]
        pending.append(pool.submit(_unfiltered_chunk, path, chunk, stored, length, int(crcs[chunk]), target))
        if len(pending) >= 2 * SLICE // CHUNK:  # bounds the stored bytes held
            pending.pop(0).result()
    for future in pending:
        future.result()


def _reading_pool() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(max_workers=numba.get_num_threads())


def load_values(directory: str | os.PathLike, seeds: int, out: np.ndarray | None = None) -> np.ndarray:
    """Layer `seeds` read whole into an int8 array (into `out` if given).

    Every chunk's checksum is verified on the way, and the values must match
    the stored histogram; a damaged file raises CorruptTableError.
    """
    path = table_path(directory, seeds)
    with open_table(directory, seeds) as handle, damage_guard(path):
        dataset = handle[DATASET]
        size = dataset.shape[0]
        values = np.empty(size, dtype=np.int8) if out is None else out
        crcs = chunk_checksums(handle, path)
        with _reading_pool() as pool:
            _read_checked(dataset, path, crcs, 0, values[:size], pool)
        expected = np.asarray(handle.attrs["histogram"])
    found = histogram(values, seeds)
    if len(expected) != len(found) or (expected != found).any():
        raise CorruptTableError(f"{path}: values do not match the stored histogram")
    return values


def check_values(directory: str | os.PathLike, seeds: int) -> None:
    """Check the file of layer `seeds` as load_values does (layout, every
    chunk's CRC-32, the stored histogram) a slice at a time, keeping nothing:
    a layer counts as built only once this passes. Raises MissingTableError,
    CorruptTableError or TableMismatchError naming the file."""
    path = table_path(directory, seeds)
    with open_table(directory, seeds) as handle, damage_guard(path):
        dataset = handle[DATASET]
        size = dataset.shape[0]
        crcs = chunk_checksums(handle, path)
        buffer = np.empty(min(size, SLICE), dtype=np.int8)
        found = np.zeros(2 * seeds + 1, dtype=np.int64)
        with _reading_pool() as pool:
            for start in range(0, size, SLICE):
                piece = buffer[: min(size, start + SLICE) - start]
                _read_checked(dataset, path, crcs, start, piece, pool)
                found += histogram(piece, seeds)
        expected = np.asarray(handle.attrs["histogram"])
    if expected.shape != found.shape or (expected != found).any():
        raise CorruptTableError(f"{path}: values do not match the stored histogram")


def load_slice(directory: str | os.PathLike, seeds: int, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Ranks start..stop-1 of layer `seeds` (int8), every chunk they touch
    checked against its CRC-32, and the file's stored histogram (a caller
    holding every slice checks the sum of theirs against it)."""
    path = table_path(directory, seeds)
    with open_table(directory, seeds) as handle, damage_guard(path):
        dataset = handle[DATASET]
        crcs = chunk_checksums(handle, path)
        first = start // CHUNK * CHUNK
        last = min(dataset.shape[0], (stop + CHUNK - 1) // CHUNK * CHUNK) if stop > start else first
        values = np.empty(last - first, dtype=np.int8)
        with _reading_pool() as pool:
            _read_checked(dataset, path, crcs, first, values, pool)
        stored = np.asarray(handle.attrs["histogram"], dtype=np.int64)
    if stored.shape != (2 * seeds + 1,):
        raise CorruptTableError(f"{path}: the stored histogram is damaged")
    return values[start - first : stop - first], stored


class ChunkReader:
    """Single probes into one layer's file: a chunk at a time, each chunk's CRC
    checked before any of its values is used, the last `cache_chunks` kept.

    Safe to share between threads: a lock covers the cache and the HDF5
    handle; a probe after close() raises TablebaseClosedError."""

    def __init__(self, directory: str | os.PathLike, seeds: int, cache_chunks: int = 64, distances: bool = False
                 ) -> None:
        self.path = table_path(directory, seeds)
        self.seeds = seeds
        # HDF5's own chunk cache would only duplicate ours.
        self.handle = open_table(directory, seeds, cache_bytes=0)
        try:
            with damage_guard(self.path):
                if distances and DISTANCE_DATASET not in self.handle:
                    from .errors import MissingDistanceError

                    raise MissingDistanceError(f"{self.path} has no distances: add them with "
                                               f"`{build_command(seeds, directory)}`")
                # With `distances`, the reader reads the distance bytes (value() gives a byte) and the overflow rows.
                self.dataset = self.handle[DISTANCE_DATASET if distances else DATASET]
                self.size = self.dataset.shape[0]
                self.crcs = chunk_checksums(self.handle, self.path, DISTANCE_CHECKSUMS if distances else (
                    DATASET, CRC_DATASET, CRC_ATTRIBUTE))
                self.overflow = _overflow_rows(self.handle, self.path) if distances else None
        except BaseException:
            self.handle.close()
            raise
        self.cache: dict[int, np.ndarray] = {}
        self.cache_chunks = cache_chunks
        self.lock = threading.Lock()
        self.closed = False

    def chunk(self, number: int) -> np.ndarray:
        with self.lock:
            return self._chunk(number)

    def _chunk(self, number):
        if self.closed:
            raise TablebaseClosedError(f"the reader of {self.path} is closed")
        values = self.cache.get(number)
        if values is None:
            start = number * CHUNK
            stop = min(self.size, start + CHUNK)
            values = np.empty(stop - start, dtype=self.dataset.dtype)
            with damage_guard(self.path):
                self.dataset.read_direct(values, np.s_[start:stop])
            _check_chunks(self.path, self.crcs, number, values)
            if len(self.cache) >= self.cache_chunks:
                self.cache.pop(next(iter(self.cache)))
            self.cache[number] = values
        return values

    def value(self, rank: int) -> int:
        return int(self.chunk(rank // CHUNK)[rank % CHUNK])

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.cache.clear()
            self.handle.close()


def table_info(directory: str | os.PathLike, seeds: int, full: bool = False) -> dict[str, Any]:
    """A dict describing the file of layer `seeds`: status 'ok', 'missing',
    'corrupt' or 'mismatch', and for a valid file its attributes and size.
    'ok' needs full=True, which reads every value back (check_values: every
    chunk's CRC and the histogram); with full=False a file whose header,
    layout and checksum table check out is 'header ok'."""
    path = table_path(directory, seeds)
    info: dict[str, Any] = {"seeds": seeds, "file": path, "positions": index.layer_size(seeds)}
    try:
        with open_table(directory, seeds) as handle, damage_guard(path):
            attributes = handle.attrs
            info["histogram"] = [int(c) for c in attributes["histogram"]]
            info["build_seconds"] = recorded(attributes, path, "build_seconds") or 0.0
            info["processes"] = recorded(attributes, path, "processes") or 1
            info["bytes_exchanged"] = recorded(attributes, path, "bytes_exchanged")
            version = attributes.get("package_version", b"")
            info["package_version"] = version.decode(errors="replace") if isinstance(version, bytes) else str(version)
            chunk_checksums(handle, path)
            # The values' and the distances' compressed bytes apart (the file's
            # whole size adds HDF5's index and the checksum tables).
            info["value_bytes"] = int(handle[DATASET].id.get_storage_size())
            info["distance_bytes"] = (int(handle[DISTANCE_DATASET].id.get_storage_size())
                                      if DISTANCE_DATASET in handle else None)
        info["bytes"] = os.path.getsize(path)
        info["bytes_per_position"] = info["bytes"] / max(1, info["positions"])
        if full:
            check_values(directory, seeds)
        info["status"] = "ok" if full else "header ok"
    except MissingTableError:
        info["status"] = "missing"
    except TableMismatchError as error:
        info["status"] = "mismatch"
        info["error"] = str(error)
    except CorruptTableError as error:
        info["status"] = "corrupt"
        info["error"] = str(error)
    return info


def built_layers(directory: str | os.PathLike) -> list[int]:
    """Seed counts that have a file (valid or not) named awele-NN.h5 in `directory`, sorted.
    Other names (awele-012.h5, awele-99.h5) are not layers and are ignored."""
    found = []
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    for name in names:
        match = FILE_NAME.fullmatch(name)
        if match and int(match.group(1)) <= index.MAX_SEEDS:
            found.append(int(match.group(1)))
    return sorted(found)


def remove_stale_temporaries(directory: str) -> list[str]:
    """Delete the temporary files of layers (``awele-NN.h5.tmp-PID``) that a
    build stopped without cleaning up (SIGKILL, a power cut) left in
    `directory`, and return their names. Call it holding the folder's build
    lock: a temporary is left alone if the process that made it still runs
    (another writer, say one whose lock file was deleted under it), and so
    is anything at such a name that is not a regular file."""
    pattern = re.compile(r"awele-\d{2}\.h5" + re.escape(TEMPORARY_SUFFIX) + r"-(\d+)")
    removed = []
    for name in sorted(os.listdir(directory)):
        match = pattern.fullmatch(name)
        path = os.path.join(directory, name)
        if (match and not os.path.islink(path) and os.path.isfile(path)
                and (int(match.group(1)) == os.getpid() or not _running(int(match.group(1))))):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
                removed.append(name)
    return removed


def _running(pid: int) -> bool:
    """Whether a process `pid` runs on this machine."""
    if not 0 < pid < 1 << 22:  # Linux's largest PID: the name cannot be a live process's
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
