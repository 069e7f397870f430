"""Shared fixtures: small tables built once per test session."""

import os
import shutil

import pytest

from solver import build
from solver.probe import Tablebase

TEST_LAYERS = 12
LARGER_LAYERS = 16


@pytest.fixture(scope="session")
def table_dir(tmp_path_factory):
    """A folder with layers 0..12 built by the real builder."""
    directory = tmp_path_factory.mktemp("tables")
    build.build(TEST_LAYERS, str(directory))
    return str(directory)


@pytest.fixture(scope="session")
def tables16(table_dir, tmp_path_factory):
    """A folder `databases` with layers 0..16: table_dir's layers copied, 13..16 built on them
    by the real builder on two threads. Built once for every file that reads layers above 12
    (the builds, the documents' examples, the UCI engine's first go, the table files' integrity);
    read only: a test that changes a table works on its own copy."""
    directory = tmp_path_factory.mktemp("tables16") / "databases"
    directory.mkdir()
    for name in os.listdir(table_dir):
        if name.endswith(".h5"):
            shutil.copyfile(os.path.join(table_dir, name), directory / name)
    build.build(LARGER_LAYERS, str(directory), threads=2)
    return str(directory)


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
