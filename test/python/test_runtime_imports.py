"""The runtime's modules import each other as a tree: no cycles, none hidden in a function,
the kernel a leaf that launches, the artifact format below everything that makes kernels."""

import ast
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "tilemlir" / "runtime"
PACKAGE = "tilemlir.runtime"
MODULES = sorted(p.stem for p in RUNTIME.glob("*.py") if p.stem != "__init__")
# what the runtime may import from the rest of tilemlir: nothing that needs MLIR
# The MLIR-free base modules the runtime may use (none of them imports MLIR or the compiler).
OUTSIDE = {"tilemlir", "tilemlir.diagnostics", "tilemlir.config", "tilemlir.hardware", "tilemlir.python_ast"}


def _imports(module: str) -> list[tuple[str, bool]]:
    """(imported tilemlir module, whether the import is inside a function) of runtime module `module`."""
    tree = ast.parse((RUNTIME / f"{module}.py").read_text())
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, nested) for alias in child.names if alias.name.startswith("tilemlir"))
            elif isinstance(child, ast.ImportFrom) and (child.module or "").startswith("tilemlir"):
                if child.module == PACKAGE:  # from tilemlir.runtime import cache, driver
                    found.extend((f"{PACKAGE}.{alias.name}", nested) for alias in child.names)
                else:
                    found.append((child.module, nested))
            visit(child, nested)

    visit(tree, False)
    return found


def _graph() -> dict[str, set[str]]:
    prefix = f"{PACKAGE}."
    return {module: {name[len(prefix):] for name, _ in _imports(module) if name[len(prefix):] in MODULES}
            for module in MODULES}


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_the_graph_reads_the_imports_it_should():
    graph = _graph()
    assert {"cache", "kernel", "cuda_decl", "nvrtc"} <= graph["builder"]
    assert "private_dir" in graph["cache"] and "driver" in graph["kernel"]


def test_no_runtime_module_imports_another_inside_a_function():
    hidden = [(module, name) for module in MODULES for name, nested in _imports(module)
              if nested and name.startswith(PACKAGE)]
    assert hidden == []


def test_the_runtime_imports_no_cycle():
    graph = _graph()
    cycles = sorted(module for module in MODULES if module in _reach(graph, module))
    assert cycles == []


@pytest.mark.parametrize("module, above", [
    ("kernel", {"builder", "cache", "artifact"}),
    ("artifact", {"builder", "cache", "kernel"}),
    ("cache", {"builder", "kernel"}),
])
def test_a_module_reaches_nothing_above_it(module, above):
    assert _reach(_graph(), module) & above == set()


def test_the_runtime_imports_nothing_of_the_compiler():
    outside = sorted({name for module in MODULES for name, _ in _imports(module) if not name.startswith(PACKAGE)})
    assert set(outside) <= OUTSIDE, outside
