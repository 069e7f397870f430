"""Shared fixtures: small tables built once per test session."""

import pytest

from solver import build

TEST_LAYERS = 12


@pytest.fixture(scope="session")
def table_dir(tmp_path_factory):
    """A folder with layers 0..12 built by the real builder."""
    directory = tmp_path_factory.mktemp("tables")
    build.build(TEST_LAYERS, str(directory))
    return str(directory)
