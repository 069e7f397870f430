"""The import graph between solver's modules: data flows one way, nothing
reaches back up, and no module reads another's private names.

Every import counts, at the top of a module or inside a function (an import
made late is still a dependency), except those only type checkers see
(under `if TYPE_CHECKING:`); the package's lazy names (solver._LAZY, loaded
by importlib) count as imports of the package."""

import ast
import pathlib

import solver

PACKAGE = pathlib.Path(solver.__file__).parent


def _modules():
    """{dotted name: path} of every module of the package."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _type_checking_nodes(tree):
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(sub) for sub in ast.walk(node))
    return skipped


def import_graph():
    """({module: {modules it imports}}, [(module, imported module, private name)])."""
    modules = _modules()
    edges, private = {}, []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        skipped = _type_checking_nodes(tree)
        imported = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    if submodule in modules:
                        imported.add(submodule)
                    elif target in modules:
                        imported.add(target)
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            private.append((name, target, alias.name))
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names if alias.name in modules)
        edges[name] = imported - {name}
    lazy = ast.literal_eval(next(
        node.value for node in ast.parse((PACKAGE / "__init__.py").read_text()).body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "_LAZY"))
    edges["solver"] |= {f"solver.{module}" for module in lazy.values()}
    return edges, private


def cycles(edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in edges[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_the_import_graph_has_no_cycle():
    """No cycle, so every import goes down the layers (the longest path
    below a module): none reaches back up. The package itself, whose lazy
    names load the classes, sits on top: no module imports from it."""
    edges, _ = import_graph()
    assert cycles(edges) == []
    assert [module for module, imported in edges.items() if "solver" in imported] == []


def test_no_module_imports_another_s_private_name():
    _, private = import_graph()
    assert private == []


def test_the_check_finds_a_cycle_and_a_private_name():
    """The checks themselves: a made-up cycle is found."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
