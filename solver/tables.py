"""Endgame tables on disk: one HDF5 file per seed count, and the build driver.

File ``awele-NN.h5`` holds layer NN: an int8 dataset ``values`` in index order
(see solver.index), chunked, gzip-compressed and guarded by HDF5's Fletcher-32
checksum filter, with attributes naming the rules, the index, the value
convention and the format, so that a file built for something else is refused
instead of misread. Files are written under a temporary name in the same
folder and renamed when complete: a crash never leaves a file that looks
finished.
"""

import glob
import os
import resource
import time

import h5py
import numpy as np

from . import __version__, index
from .errors import CorruptTableError, MissingTableError, TableMismatchError

RULES = "awele-abapa"
RULES_VERSION = 1
VALUE_CONVENTION = "mover seeds minus opponent seeds from now on; endless play 0 (Romein-Bal)"
FORMAT = "awele-table"
FORMAT_VERSION = 1
DATASET = "values"
CHUNK = 1 << 18  # positions per HDF5 chunk: a single probe inflates 256 KiB (0.8 ms)
SLICE = 1 << 24  # positions per read or write call on a whole layer
DEFAULT_DIRECTORY = "databases"
ENVIRONMENT_VARIABLE = "AWELE_DATABASES"
TEMPORARY_SUFFIX = ".tmp"
SMALL_LAYER = 1 << 24  # histograms of layers up to this size use numpy (no kernel to load)


def default_directory():
    """The tables folder: $AWELE_DATABASES, else ./databases."""
    return os.environ.get(ENVIRONMENT_VARIABLE) or DEFAULT_DIRECTORY


def table_path(directory, seeds):
    """Path of the file of layer `seeds` in `directory`."""
    return os.path.join(directory, f"awele-{seeds:02d}.h5")


def build_command(seeds, directory=None):
    """The command line that builds every layer up to `seeds`."""
    where = "" if directory in (None, default_directory()) else f" --dir {directory}"
    return f"awele build --max-seeds {seeds}{where}"


def build_advice(seeds, directory=None):
    """'build it with `awele build ...`', with the memory it takes when that is large."""
    advice = f"build it with `{build_command(seeds, directory)}`"
    need = build_memory_bytes(seeds)
    if need > 4 << 30:
        advice += f" (about {need / 2**30:,.0f} GiB of memory)"
    return advice


def build_memory_bytes(seeds):
    """Working memory of building layer `seeds`: 3 bytes a position of it and 1
    byte a position of every smaller layer (see solver.retrograde)."""
    return 3 * index.layer_size(seeds) + sum(index.layer_size(n) for n in range(seeds))


def expected_attributes(seeds):
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


def histogram(values, seeds):
    """Counts of each value d = -seeds..seeds (index d + seeds)."""
    if values.shape[0] <= SMALL_LAYER:
        counts = np.bincount(values.view(np.uint8), minlength=256)
    else:
        # np.bincount would make an 8-bytes-a-position temporary.
        from .retrograde import byte_histogram

        counts = byte_histogram(values)
    return np.array([counts[d & 0xFF] for d in range(-seeds, seeds + 1)], dtype=np.int64)


def write_table(directory, seeds, values, build_seconds=0.0, extra=None):
    """Write layer `seeds` atomically: a temporary file, then a rename."""
    size = index.layer_size(seeds)
    if values.shape != (size,):
        raise ValueError(f"layer {seeds} has {size} positions, got {values.shape}")
    os.makedirs(directory, exist_ok=True)
    path = table_path(directory, seeds)
    temporary = f"{path}{TEMPORARY_SUFFIX}-{os.getpid()}"
    try:
        with h5py.File(temporary, "w") as handle:
            dataset = handle.create_dataset(
                DATASET,
                shape=(size,),
                dtype=np.int8,
                chunks=(min(CHUNK, max(size, 1)),),
                compression="gzip",
                compression_opts=4,
                fletcher32=True,
            )
            for start in range(0, size, SLICE):
                dataset[start : start + SLICE] = np.ascontiguousarray(values[start : start + SLICE])
            attributes = handle.attrs
            for key, value in expected_attributes(seeds).items():
                attributes[key] = value
            attributes["value_convention"] = VALUE_CONVENTION
            attributes["histogram"] = histogram(values, seeds)
            attributes["build_seconds"] = float(build_seconds)
            attributes["package_version"] = __version__
            attributes["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            for key, value in (extra or {}).items():
                attributes[key] = value
            attributes["complete"] = True
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return path


def _describe(path):
    return os.path.basename(path)


def open_table(directory, seeds, cache_bytes=None):
    """Open the file of layer `seeds` for reading after checking its attributes.

    Raises MissingTableError, CorruptTableError or TableMismatchError, each
    naming the file and what is wrong. The caller closes the returned
    h5py.File (it is a context manager).
    """
    path = table_path(directory, seeds)
    if not os.path.exists(path):
        raise MissingTableError(
            f"no table for {seeds} seeds in {directory}: {build_advice(seeds, directory)}"
        )
    options = {}
    if cache_bytes:
        # HDF5 keeps decompressed chunks in a per-file cache: probes that come
        # back to the same chunks (lines, move values) then skip the inflate.
        options = {"rdcc_nbytes": int(cache_bytes), "rdcc_nslots": 10007}
    try:
        handle = h5py.File(path, "r", **options)
    except OSError as error:
        raise CorruptTableError(f"{path} cannot be read as HDF5 (truncated or damaged?): {error}") from None
    try:
        attributes = handle.attrs
        for key, wanted in expected_attributes(seeds).items():
            if key not in attributes:
                raise CorruptTableError(f"{path} lacks the attribute {key!r}: not a finished awele table")
            found = attributes[key]
            found = found.decode() if isinstance(found, bytes) else found
            if found != wanted:
                raise TableMismatchError(f"{path} has {key} = {found!r}, this awele needs {wanted!r}")
        if not attributes.get("complete", False):
            raise CorruptTableError(f"{path} was not finished")
        if DATASET not in handle:
            raise CorruptTableError(f"{path} has no {DATASET!r} dataset")
        dataset = handle[DATASET]
        if dataset.shape != (index.layer_size(seeds),) or dataset.dtype != np.int8:
            raise CorruptTableError(f"{path}: dataset has shape {dataset.shape} and type {dataset.dtype}")
    except Exception:
        handle.close()
        raise
    return handle


def load_values(directory, seeds, out=None):
    """Layer `seeds` read whole into an int8 array (into `out` if given).

    Every chunk's checksum is verified on the way; a damaged file raises
    CorruptTableError.
    """
    with open_table(directory, seeds) as handle:
        dataset = handle[DATASET]
        size = dataset.shape[0]
        values = np.empty(size, dtype=np.int8) if out is None else out
        try:
            for start in range(0, size, SLICE):
                stop = min(size, start + SLICE)
                dataset.read_direct(values, np.s_[start:stop], np.s_[start:stop])
        except OSError as error:
            raise CorruptTableError(f"{table_path(directory, seeds)} is damaged: {error}") from None
        expected = handle.attrs["histogram"]
    found = histogram(values, seeds)
    if len(expected) != len(found) or (expected != found).any():
        raise CorruptTableError(f"{table_path(directory, seeds)}: values do not match the stored histogram")
    return values


def read_value(directory, seeds, rank):
    """One value of layer `seeds` (reads one chunk, not the layer)."""
    with open_table(directory, seeds) as handle:
        try:
            return int(handle[DATASET][rank])
        except OSError as error:
            raise CorruptTableError(f"{table_path(directory, seeds)} is damaged: {error}") from None


def table_info(directory, seeds, full=False):
    """A dict describing the file of layer `seeds`: status 'ok', 'missing',
    'corrupt' or 'mismatch', and for a valid file its attributes and size.
    With full=True every value is read back (checksums and histogram)."""
    path = table_path(directory, seeds)
    info = {"seeds": seeds, "file": path, "positions": index.layer_size(seeds)}
    try:
        with open_table(directory, seeds) as handle:
            attributes = handle.attrs
            info["histogram"] = [int(c) for c in attributes["histogram"]]
            info["build_seconds"] = float(attributes.get("build_seconds", 0.0))
            info["package_version"] = str(attributes.get("package_version", ""))
        info["bytes"] = os.path.getsize(path)
        info["bytes_per_position"] = info["bytes"] / max(1, info["positions"])
        if full:
            load_values(directory, seeds)
        info["status"] = "ok"
    except MissingTableError:
        info["status"] = "missing"
    except TableMismatchError as error:
        info["status"] = "mismatch"
        info["error"] = str(error)
    except CorruptTableError as error:
        info["status"] = "corrupt"
        info["error"] = str(error)
    return info


def built_layers(directory):
    """Seed counts that have a file (valid or not) in `directory`, sorted."""
    found = []
    for path in glob.glob(os.path.join(directory, "awele-*.h5")):
        stem = os.path.basename(path)[len("awele-") : -len(".h5")]
        if stem.isdigit():
            found.append(int(stem))
    return sorted(found)


def remove_stale_temporaries(directory):
    """Delete temporary files left by a build that was killed."""
    for path in glob.glob(os.path.join(directory, f"awele-*.h5{TEMPORARY_SUFFIX}-*")):
        os.remove(path)


def peak_memory_bytes():
    """Peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build(max_seeds, directory=None, threads=None, report=None, progress=None, lower=None):
    """Build every missing layer 0..max_seeds in order; reuse the valid ones.

    A layer whose file exists and checks out is loaded (its values are needed
    by the layers above); a missing one is solved and written. A corrupt or
    mismatched file raises, naming it: delete it to rebuild.

    report(dict) is called after each layer with: seeds, positions, seconds,
    positions_per_second, peak_bytes, built (False when loaded). progress is
    passed to retrograde.solve_layer. Returns the LowerLayers holding every
    layer's values.
    """
    directory = directory or default_directory()
    os.makedirs(directory, exist_ok=True)
    remove_stale_temporaries(directory)
    from . import retrograde

    lower = lower or retrograde.LowerLayers(max_seeds)
    rows = index.RowTables(max_seeds).arrays
    for seeds in range(max_seeds + 1):
        started = time.perf_counter()
        built = False
        if seeds in lower.loaded:
            pass
        elif os.path.exists(table_path(directory, seeds)):
            try:
                load_values(directory, seeds, out=lower.layer(seeds))
            except (CorruptTableError, TableMismatchError) as error:
                raise type(error)(f"{error}; delete that file and build again to rebuild it") from None
            lower.loaded.add(seeds)
        else:
            values, stats = retrograde.solve_layer(
                seeds, lower, threads=threads, rows=rows, progress=progress and (lambda s, f, n=seeds: progress(n, s, f))
            )
            write_table(
                directory,
                seeds,
                values,
                build_seconds=stats["seconds"],
                extra={"threads": int(threads or 0), "peak_bytes": peak_memory_bytes()},
            )
            lower.put(seeds, values)
            del values
            built = True
        seconds = time.perf_counter() - started
        if report:
            size = index.layer_size(seeds)
            report(
                {
                    "seeds": seeds,
                    "positions": size,
                    "seconds": seconds,
                    "positions_per_second": size / seconds if seconds > 0 else None,
                    "peak_bytes": peak_memory_bytes(),
                    "built": built,
                }
            )
    return lower


def load_layers(directory, max_seeds, lower=None):
    """Every layer 0..max_seeds loaded from `directory` into a LowerLayers."""
    from . import retrograde

    lower = lower or retrograde.LowerLayers(max_seeds)
    for seeds in range(max_seeds + 1):
        if seeds not in lower.loaded:
            load_values(directory, seeds, out=lower.layer(seeds))
            lower.loaded.add(seeds)
    return lower


def verify(directory, seeds, lower=None, limit=10):
    """Re-check every position of layer `seeds` against its moves.

    d(s) must be the best over moves of captured - d(child) (children in the
    smaller tables) or -d(child) (children in this layer), or the terminal
    value. Returns (mismatch count, up to `limit` mismatching boards with
    stored value).
    """
    from . import retrograde

    lower = load_layers(directory, seeds, lower)
    values = lower.layer(seeds)
    rows = index.RowTables(seeds).arrays
    count, ranks = retrograde.bellman_mismatches(seeds, values, lower.flat, lower.starts, rows, limit)
    examples = [(index.unrank(seeds, int(r)).tolist(), int(values[r])) for r in ranks]
    return int(count), examples
