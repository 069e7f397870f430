"""Rooms of one job: no function of the package over MAX_FUNCTION_LINES
lines, save the numba kernels (a kernel is one compiled loop: splitting it
costs a call per node)."""

import ast
import pathlib

import solver

PACKAGE = pathlib.Path(solver.__file__).parent
MAX_FUNCTION_LINES = 150


def _is_kernel(node):
    """Whether a function is compiled by numba (njit, jit, vectorize ... in its decorators)."""
    return any("jit" in ast.unparse(decorator) or "vectorize" in ast.unparse(decorator)
               for decorator in node.decorator_list)


def long_functions(source, name="<source>"):
    """[(where, function, lines)] of the functions of `source` longer than
    MAX_FUNCTION_LINES lines, numba kernels left out."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_kernel(node):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append((f"{name}:{node.lineno}", node.name, lines))
    return found


def test_no_function_of_the_package_is_over_150_lines():
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in long_functions(path.read_text(), str(path.relative_to(PACKAGE.parent)))]
    assert not found, found


def test_the_check_finds_a_long_function_and_spares_a_kernel():
    body = "".join(f"    x = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = f"def long():\n{body}\n@njit(cache=True)\ndef kernel():\n{body}\ndef short():\n    return 1\n"
    assert [(name, lines) for _, name, lines in long_functions(source)] == [("long", MAX_FUNCTION_LINES + 1)]
