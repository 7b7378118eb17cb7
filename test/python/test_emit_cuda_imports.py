"""The CUDA emitter's modules import each other without a cycle (issue 15): a statement module gets a
`StatementContext` instead of importing the emitter, a conversion a `ConversionContext` instead of ScalarOps.

Imports at a module's top level count, `if TYPE_CHECKING:` ones too (a cycle for the type checker is
one for the reader); a function's own import, run when it is called, does not: `emit()` imports
translation_unit so that `import tilemlir.emit_cuda` loads no MLIR."""

import ast
from pathlib import Path

import pytest

import tilemlir.emit_cuda

PACKAGE = "tilemlir.emit_cuda"
PACKAGE_DIR = Path(tilemlir.emit_cuda.__file__).parent
MODULES = {path.stem for path in PACKAGE_DIR.glob("*.py")}


def top_level_imports(tree: ast.Module, modules: set[str]) -> set[str]:
    """The package's modules that `tree` imports outside its functions and classes ('__init__' for the package)."""
    found: set[str] = set()
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.If, ast.Try, ast.ExceptHandler)):  # `if TYPE_CHECKING:`, `try: import`
            for field in ("body", "orelse", "handlers", "finalbody"):
                pending.extend(getattr(node, field, []))
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"relative import of {node.module} (the package imports absolutely)"
            if node.module == PACKAGE:
                found |= {a.name if a.name in modules else "__init__" for a in node.names}
            elif node.module and node.module.startswith(PACKAGE + "."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith(PACKAGE + ".")}
    return found


def import_graph() -> dict[str, set[str]]:
    return {path.stem: top_level_imports(ast.parse(path.read_text()), MODULES) for path in PACKAGE_DIR.glob("*.py")}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (module -> the modules it imports) as [a, b, ..., a], or None."""
    state: dict[str, str] = {}  # "open" while on the path being walked, "done" after
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == "open":
                return path[path.index(imported):] + [imported]
            if imported not in state:
                cycle = visit(imported)
                if cycle:
                    return cycle
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_the_emitter_modules_import_each_other_without_a_cycle():
    graph = import_graph()
    assert {"vectors", "scalar", "memory"} <= graph["emitter"] and "conversions" in graph["scalar"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_type_checking_import_back_is_a_cycle():
    source = ("from typing import TYPE_CHECKING\nfrom tilemlir.emit_cuda import cexpr as C\n"
              "if TYPE_CHECKING:\n    from tilemlir.emit_cuda.emitter import KernelEmitter\n"
              "try:\n    pass\nexcept ImportError:\n    import tilemlir.emit_cuda.vectors\n"
              "def later():\n    from tilemlir.emit_cuda.plan import InlinePlan\n")
    modules = {"cexpr", "emitter", "plan", "vectors"}
    assert top_level_imports(ast.parse(source), modules) == {"cexpr", "emitter", "vectors"}
    graph = {"emitter": {"vectors", "cexpr"}, "vectors": {"cexpr", "emitter"}, "cexpr": set()}
    assert find_cycle(graph) == ["emitter", "vectors", "emitter"]


@pytest.mark.parametrize("source, imported", [
    ("from tilemlir.emit_cuda import EmittedKernel, irutil", {"__init__", "irutil"}),
    ("import tilemlir.emit_cuda.ctype", {"ctype"}),
    ("from tilemlir.emit_cuda.scalar import ScalarOps\nfrom tilemlir.mlir import ir", {"scalar"}),
])
def test_the_package_modules_an_import_names(source, imported):
    assert top_level_imports(ast.parse(source), {"irutil", "ctype", "scalar"}) == imported


def test_a_graph_without_a_cycle():
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
