"""Shared fixtures: small tables built once per test run.

The default run goes on two processes (pytest-xdist, `-n 2` in pyproject.toml). A folder of
tables that several test files read is built once for the whole run, not once a process: the
first process to ask builds it under a lock in the run's common temporary folder, the other
waits for it and reads the same files. Tests only read these folders; a test that changes a
table works on its own copy."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from solver import build
from solver.probe import Tablebase

try:
    import fcntl
except ImportError:  # not on Windows: each process builds its own folder there
    fcntl = None  # type: ignore[assignment]

TEST_LAYERS = 12
LARGER_LAYERS = 16


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (made if missing)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def built_shared(common: Path, name: str, make: Callable[[Path], None]) -> Path:
    """The folder common/name, filled by make(folder) once: the first process to ask builds
    it, the others wait on the lock and read it."""
    folder, done = common / name, common / f"{name}.done"
    with _locked(common / f"{name}.lock"):
        if not done.exists():
            if folder.exists():  # a build that failed half way
                shutil.rmtree(folder)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


def _built_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by make(folder) once for the whole run: in the run's common
    temporary folder when pytest-xdist's workers share it, else in this process's own."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None or fcntl is None:
        folder = tmp_path_factory.mktemp(name)
        make(folder)
        return folder
    return built_shared(tmp_path_factory.getbasetemp().parent, name, make)


# Before xdist starts its workers: two processes at once, one building the shared tables (the
# builder's kernels compiled on the way), the other compiling the search's kernels on a folder
# with no table (the same kernels: numba's cache serves them to every later process). Without
# it both workers compiled the same kernels as they first met them, one waiting on the tables'
# lock meanwhile; compiling was 330 s of a fresh clone's 850 s of CPU.
WARM_TABLES = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from conftest import TEST_LAYERS, built_shared
from solver import build
built_shared(Path({common!r}), "tables", lambda folder: build.build(TEST_LAYERS, str(folder)))
"""
WARM_SEARCH = """
from solver import evaluation, fitting
from solver.position import Position
from solver.search import Searcher
searcher = Searcher({empty!r}, max_table_seeds=0, hash_mb=1)
searcher.search(Position.initial(), depth=4)
searcher.wait_for_tables()
searcher.close()
evaluation.board_features(fitting.game_positions(2))
"""


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """On xdist's controller of two workers or more, warm numba's cache before they start (above);
    a warm-up that fails costs only its time: the workers compile what it did not."""
    config = session.config
    workers = getattr(config.option, "numprocesses", None) or 0
    if (os.environ.get("PYTEST_XDIST_WORKER") is not None or fcntl is None or not isinstance(workers, int)
            or workers < 2 or config.option.collectonly):
        return
    common = config._tmp_path_factory.getbasetemp()  # the workers' basetemps are folders in it
    empty = common / "no-tables"
    empty.mkdir(exist_ok=True)
    tests = str(Path(__file__).parent)
    codes = (WARM_TABLES.format(tests=tests, common=str(common)), WARM_SEARCH.format(empty=str(empty)))
    warming = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for code in codes]
    for process in warming:
        process.wait()


@pytest.fixture(scope="session")
def table_dir(tmp_path_factory):
    """A folder with layers 0..12 built by the real builder."""
    return str(_built_once(tmp_path_factory, "tables", lambda folder: build.build(TEST_LAYERS, str(folder))))


@pytest.fixture(scope="session")
def tables16(table_dir, tmp_path_factory):
    """A folder `databases` with layers 0..16: table_dir's layers copied, 13..16 built on them
    by the real builder on two threads. Built once for every file that reads layers above 12
    (the builds, the documents' examples, the UCI engine's first go, the table files' integrity);
    read only: a test that changes a table works on its own copy."""

    def make(folder: Path) -> None:
        directory = folder / "databases"
        directory.mkdir()
        for name in os.listdir(table_dir):
            if name.endswith(".h5"):
                shutil.copyfile(os.path.join(table_dir, name), directory / name)
        build.build(LARGER_LAYERS, str(directory), threads=2)

    return str(_built_once(tmp_path_factory, "tables16", make) / "databases")


@pytest.fixture(scope="session")
def tablebase(table_dir):
    """The Tablebase of table_dir, open for the session."""
    with Tablebase(table_dir) as opened:
        yield opened


@pytest.fixture(scope="session")
def searcher(table_dir):
    """A one-thread Searcher holding every layer of table_dir, made once."""
    from solver.search import Searcher

    made = Searcher(table_dir, max_table_seeds=12, hash_mb=8, threads=1)
    yield made
    made.close()
