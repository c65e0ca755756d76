"""Every module of the package imports on its own, whichever is imported first (an import cycle
hides until some entry point — a benchmark, a script — happens to start from the wrong module).

Which module comes first matters only inside an import cycle: a module in no cycle runs its
imports to completion before its own body, whatever was loaded before it. So the package's import
graph is read from the source (every ``import`` of an ``openbot`` module, in functions too, outside
``if TYPE_CHECKING:``; a module also imports its parent packages), each module of a cycle is
imported first in a fresh state, and then every module is imported once. Re-importing all 185
modules each from a fresh state cost two minutes of CI on a two-core machine; this costs seconds.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import openbot

_CHECK = """
import importlib, pkgutil, sys
import openbot
first = sys.argv[1:]
names = sorted(m.name for m in pkgutil.walk_packages(openbot.__path__, "openbot."))
failed = []

def load(name):
    try:
        importlib.import_module(name)
    except Exception as error:
        failed.append(f"{name}: {type(error).__name__}: {error}")

for name in first:
    for loaded in [k for k in sys.modules if k == "openbot" or k.startswith("openbot.")]:
        del sys.modules[loaded]
    load(name)
for name in names:
    load(name)
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def _modules() -> set[str]:
    return {m.name for m in pkgutil.walk_packages(openbot.__path__, "openbot.")} | {"openbot"}


def _source(name: str) -> Path:
    path = Path(openbot.__file__).parent.parent.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _imports(body: Iterable[ast.AST]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _imports(node.orelse)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        else:
            yield from _imports(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    """Each module → the package's modules it imports (its parent packages included)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name in modules:
        parts = name.split(".")
        found = {".".join(parts[:i]) for i in range(1, len(parts))}
        for node in _imports(ast.parse(_source(name).read_text()).body):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_finds_a_cycle_through_a_package_that_imports_its_modules() -> None:
    graph = import_graph()
    assert "openbot.store.models" in graph["openbot.store.models.work"]  # a parent package
    assert "openbot.store.models.work" in graph["openbot.store.models"]  # its __init__ imports it
    assert any({"openbot.store.models", "openbot.store.models.work"} <= cycle for cycle in cycles(graph))
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_every_module_imports_first() -> None:
    in_cycles = sorted(set().union(*cycles(import_graph())))
    done = subprocess.run(
        [sys.executable, "-c", _CHECK, *in_cycles], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
