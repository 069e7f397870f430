"""scripts/untyped.py: which public names count as lacking type hints."""

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "untyped.py"

SOURCE = textwrap.dedent('''
    from typing import TYPE_CHECKING

    def typed(a: int, *rest: int, key: str = "", **options: int) -> int: ...
    def no_return(a: int): ...
    def no_argument(a, b: int) -> None: ...
    def _private(a, b): ...
    def __getattr__(name): ...
    async def fetch(url) -> bytes: ...
    def stars(*rest, **options) -> None: ...

    def outer() -> None:
        def inner(a): ...

    class Public:
        def __init__(self, size): ...
        def method(self) -> int: ...
        def _helper(self, a): ...
        @classmethod
        def make(cls, size: int) -> "Public": ...
        @staticmethod
        def static(size) -> int: ...
        def __eq__(self, other: object) -> bool: ...

        class Inner:
            def deep(self): ...

    class _Hidden:
        def method(self, a): ...

    if TYPE_CHECKING:
        def guarded(a): ...
''')

EXPECTED = [
    "function no_return: missing return",
    "function no_argument: missing a",
    "function __getattr__: missing name, return",
    "function fetch: missing url",
    "function stars: missing *rest, **options",
    "method Public.__init__: missing size, return",
    "method Public.static: missing size",
    "method Public.Inner.deep: missing return",
    "function guarded: missing a, return",
]


def run(*paths):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, paths)], capture_output=True, text=True)


def test_lists_each_untyped_public_name_and_counts_them(tmp_path):
    source = tmp_path / "module.py"
    source.write_text(SOURCE)
    result = run(source)
    lines = result.stdout.splitlines()
    assert [line.split(": ", 1)[1] for line in lines[:-1]] == EXPECTED
    assert lines[-1] == f"{len(EXPECTED)} untyped public function(s) and method(s)"
    assert result.returncode == 1


def test_a_typed_tree_passes(tmp_path):
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "module.py").write_text("class A:\n    def f(self, x: int) -> int:\n        return x\n")
    result = run(tmp_path / "package")
    assert result.stdout.splitlines() == ["0 untyped public function(s) and method(s)"]
    assert result.returncode == 0


def test_a_missing_path_is_one_line_and_exit_2(tmp_path):
    result = run(tmp_path / "nowhere")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
