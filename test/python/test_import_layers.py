"""tilemlir's modules import downward only, floor by floor, and without a cycle (issue 15; docs/layout.md).

Every import counts: at a module's top level, under `if TYPE_CHECKING:`, and inside a function (a
function's import is a dependency as much as any other). Inside `tilemlir.runtime` and
`tilemlir.emit_cuda` the modules' order among themselves is their packages' own tests' business.
"""

import ast
from pathlib import Path

import pytest

import tilemlir

ROOT = Path(tilemlir.__file__).parent

# Lowest first. A module is on the floor of the longest prefix that names it; it may import its own
# floor and the floors below.
FLOORS = [
    ("base", ["tilemlir.diagnostics", "tilemlir.config", "tilemlir.hardware", "tilemlir.python_ast",
              "tilemlir.language", "tilemlir.options", "tilemlir.pass_configs",
              "tilemlir.transform"]),
    ("runtime", ["tilemlir.runtime", "tilemlir.testing"]),
    ("bindings", ["tilemlir.mlir"]),
    ("ir", ["tilemlir.diagnostics.reporting", "tilemlir.ir_util", "tilemlir.dialects", "tilemlir.context"]),
    ("analysis", ["tilemlir.analysis"]),
    ("rewriting", ["tilemlir.rewriting"]),
    # The pipelines are lists of pass names (they import nothing): the driver and the CPU backend read them.
    ("pass infrastructure", ["tilemlir.pass_infra", "tilemlir.pipeline"]),
    ("passes", ["tilemlir.passes"]),
    ("frontend, emitters, backends", ["tilemlir.frontend", "tilemlir.emit_cuda", "tilemlir.backends"]),
    ("driver", ["tilemlir.driver", "tilemlir.tools"]),
    ("api", ["tilemlir.api", "tilemlir.source_cache"]),
    # Programs on top of the api: `python -m tilemlir.frontend FILE` finds a file's jit functions.
    ("api users", ["tilemlir.kernels", "tilemlir.autotuner", "tilemlir.tools.demo", "tilemlir.tools.api_reference",
                   "tilemlir.frontend.__main__"]),
]
OWN_ORDER = ("tilemlir.runtime", "tilemlir.emit_cuda")


def module_names() -> dict[str, Path]:
    names = {}
    for path in ROOT.rglob("*.py"):
        parts = ("tilemlir",) + path.relative_to(ROOT).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported(node: ast.AST, package: str, modules: set[str]) -> set[str]:
    """The tilemlir modules an import statement names (a `from M import N` names M.N where that is a module)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
        targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    else:
        return set()
    found = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target:
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    names = module_names()
    graph = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        graph[name] = set().union(*(imported(n, package, set(names)) for n in ast.walk(tree))) - {name}
    return graph


def floor_of(module: str) -> int:
    if module == "tilemlir":  # the package face
        return 0
    best = max(((len(prefix), index) for index, (_, prefixes) in enumerate(FLOORS) for prefix in prefixes
                if module == prefix or module.startswith(prefix + ".")), default=None)
    assert best is not None, f"{module} is on no floor: add it to FLOORS and docs/layout.md"
    return best[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} ({FLOORS[floor_of(a)][0]}) imports {b} ({FLOORS[floor_of(b)][0]})"
                  for a, targets in graph.items() for b in targets if floor_of(b) > floor_of(a))


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as [a, b, ..., a], or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def _same_package(a: str, b: str, package: str) -> bool:
    return all(m == package or m.startswith(package + ".") for m in (a, b))


def test_every_import_runs_down_the_floors():
    assert upward_imports(import_graph()) == []


def test_no_import_cycle():
    graph = {a: {b for b in targets if not any(_same_package(a, b, p) for p in OWN_ORDER)}
             for a, targets in import_graph().items()}
    assert find_cycle(graph) is None


def test_the_runtime_imports_only_the_base_and_the_diagnostics_only_the_bindings():
    graph = import_graph()
    allowed = {m for m in graph if floor_of(m) == 0}
    for module in (m for m in graph if m.startswith("tilemlir.runtime")):
        assert graph[module] - allowed - {m for m in graph if m.startswith("tilemlir.runtime")} == set(), module
    assert graph["tilemlir.diagnostics"] == set()
    assert graph["tilemlir.diagnostics.reporting"] == {"tilemlir.diagnostics", "tilemlir.mlir"}


def test_the_reader_and_the_checks_on_small_inputs():
    modules = {"tilemlir.passes", "tilemlir.passes.vectorize", "tilemlir.ir_util"}
    tree = ast.parse("from tilemlir.passes import vectorize\nfrom tilemlir.ir_util import operation\n"
                     "def f():\n    from . import vectorize\n")
    assert set().union(*(imported(n, "tilemlir.passes", modules) for n in ast.walk(tree))) == \
        {"tilemlir.passes.vectorize", "tilemlir.ir_util"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert upward_imports({"tilemlir.ir_util": {"tilemlir.passes.vectorize"}}) == \
        ["tilemlir.ir_util (ir) imports tilemlir.passes.vectorize (passes)"]
    with pytest.raises(AssertionError, match="tilemlir.extra is on no floor"):
        floor_of("tilemlir.extra")
