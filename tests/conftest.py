"""Shared fixtures: small tables built once per test session."""

import pytest

from solver import build
from solver.probe import Tablebase

TEST_LAYERS = 12


@pytest.fixture(scope="session")
def table_dir(tmp_path_factory):
    """A folder with layers 0..12 built by the real builder."""
    directory = tmp_path_factory.mktemp("tables")
    build.build(TEST_LAYERS, str(directory))
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
