"""List the public functions, methods and classes of solver/ that lack type hints.

A function counts as typed when every parameter but a method's self/cls carries an
annotation and it has a return annotation. A class is checked through its methods,
its constructor (`__init__`, `__new__`) and other dunder methods included, so a class
is typed when all of them are. Public means no leading underscore on the name (dunder
names aside) nor on any enclosing class; functions nested in functions are not API.

    python scripts/untyped.py [PATH ...]     # default: the solver package

Prints one line per untyped name (path:line: kind qualified.name: what is missing) and
a count; exits 1 when any remain, 0 when none, 2 on a path that does not exist.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Untyped:
    """One public function or method that lacks annotations."""

    path: Path
    line: int
    kind: str
    name: str
    missing: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} {self.name}: missing {', '.join(self.missing)}"


def _missing(function: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> list[str]:
    """The parameters (and 'return') of `function` that carry no annotation."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    decorators = {d.id for d in function.decorator_list if isinstance(d, ast.Name)}
    if is_method and positional and "staticmethod" not in decorators:
        positional = positional[1:]  # self, or cls for a classmethod
    parameters = [*positional, *arguments.kwonlyargs]
    missing = [argument.arg for argument in parameters if argument.annotation is None]
    for star, prefix in ((arguments.vararg, "*"), (arguments.kwarg, "**")):
        if star is not None and star.annotation is None:
            missing.append(prefix + star.arg)
    if function.returns is None:
        missing.append("return")
    return missing


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def untyped_in(path: Path, shown: Path) -> Iterator[Untyped]:
    """Every untyped public function and method defined in the file at `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def walk(body: list[ast.stmt], prefix: str, in_class: bool) -> Iterator[Untyped]:
        for node in body:
            if isinstance(node, ast.ClassDef):
                if not node.name.startswith("_"):
                    yield from walk(node.body, f"{prefix}{node.name}.", in_class=True)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                # Dunder methods are public API (the constructor above all); a module-level
                # dunder function (__getattr__, __dir__) is too.
                if not _public(node.name):
                    continue
                missing = _missing(node, is_method=in_class)
                if missing:
                    kind = "method" if in_class else "function"
                    yield Untyped(shown, node.lineno, kind, prefix + node.name, tuple(missing))
            elif isinstance(node, ast.If | ast.Try):
                # Definitions under `if TYPE_CHECKING:` or a guarded import still count.
                blocks = [node.body, node.orelse]
                if isinstance(node, ast.Try):
                    blocks += [handler.body for handler in node.handlers] + [node.finalbody]
                for block in blocks:
                    yield from walk(block, prefix, in_class)

    yield from walk(tree.body, "", in_class=False)


def python_files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(path.rglob("*.py"))
        else:
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: solver/)")
    options = parser.parse_args(argv)
    paths = options.paths or [ROOT / "solver"]
    for path in paths:
        if not path.exists():
            print(f"untyped: no such file or folder: {path}", file=sys.stderr)
            return 2
    found: list[Untyped] = []
    for path in python_files(paths):
        try:
            shown = path.resolve().relative_to(ROOT)
        except ValueError:
            shown = path
        found.extend(untyped_in(path, shown))
    for item in found:
        print(item)
    print(f"{len(found)} untyped public function(s) and method(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
