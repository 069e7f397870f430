"""The Python examples of README.md and docs/FORMAT.md run as written."""

import os
import re
import subprocess
import sys

import pytest

from solver import build, tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python_blocks(name):
    text = open(os.path.join(ROOT, name)).read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.fixture(scope="module")
def tables16(tmp_path_factory):
    folder = tmp_path_factory.mktemp("readme")
    build.build(16, str(folder / "databases"))
    return folder


@pytest.mark.parametrize("number", range(len(_python_blocks("README.md"))))
def test_every_readme_python_block_runs_on_its_own(tables16, number):
    # A fresh interpreter in a folder holding databases/ (tables to 16 seeds), as a reader would run it.
    block = _python_blocks("README.md")[number]
    environment = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    environment.pop("AWELE_DATABASES", None)
    done = subprocess.run([sys.executable, "-c", block], cwd=tables16, env=environment, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"README block {number + 1}:\n{block}\n{done.stderr[-2000:]}"


def test_the_readme_python_example_runs_as_written(tables16, monkeypatch):
    monkeypatch.chdir(tables16)
    block = _python_blocks("README.md")[0]
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["p"].legal_moves() == ["A", "B", "C", "D", "E", "F"]
    assert namespace["perft"](namespace["p"], 6) == 27332


def test_the_format_reader_example_reads_a_checked_chunk(tables16):
    namespace = {}
    exec(compile(_python_blocks("docs/FORMAT.md")[0], "docs/FORMAT.md", "exec"), namespace)
    directory = str(tables16 / "databases")
    path = tables.table_path(directory, 16)
    values = tables.load_values(directory, 16)
    chunk = namespace["read_chunk"](path, 2)
    assert (chunk == values[2 * tables.CHUNK : 3 * tables.CHUNK]).all()
