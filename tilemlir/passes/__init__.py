"""The pass registry: every tilemlir pass, by name, with typed options.

A pass is a function `run(module: ir.Operation, options) -> None` that
rewrites the module in place, plus a frozen dataclass of options whose
fields round-trip through the pipeline syntax `name{opt=value other=3}`.
Register it once with `@register_pass(...)` in its own module and list that
module in `_PASS_MODULES`. Upstream MLIR pass names (canonicalize, cse, ...)
are accepted by the pipeline parser too and run as upstream passes.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Callable

from tilemlir.errors import CompileError, Diagnostic
from tilemlir.passes import diag


@dataclass(frozen=True)
class NoOptions:
    """Options of a pass that takes none."""


@dataclass(frozen=True)
class PassInfo:
    name: str
    description: str
    run: Callable[[Any, Any], None]
    options: type = NoOptions

    def parse_options(self, text_options: dict[str, str]) -> Any:
        """Options from `key=value` strings; unknown keys and bad values raise ValueError."""
        fields = {f.name: f for f in dataclasses.fields(self.options)}
        values = {}
        for key, raw in text_options.items():
            py_key = key.replace("-", "_")
            if py_key not in fields:
                known = ", ".join(f.replace("_", "-") for f in fields) or "none"
                raise ValueError(f"pass '{self.name}' has no option '{key}' (options: {known})")
            values[py_key] = _convert(fields[py_key].type, raw, f"{self.name}{{{key}}}")
        return self.options(**values)

    def format_options(self, options: Any) -> str:
        """The `name{k=v}` text of `options` (the inverse of `parse_options`)."""
        items = [f"{f.name.replace('_', '-')}={_format(getattr(options, f.name))}" for f in dataclasses.fields(options)]
        return self.name + ("{" + " ".join(items) + "}" if items else "")


def _convert(type_name: Any, raw: str, what: str) -> Any:
    type_name = type_name if isinstance(type_name, str) else getattr(type_name, "__name__", str(type_name))
    if type_name == "bool":
        if raw.lower() in ("1", "true"):
            return True
        if raw.lower() in ("0", "false"):
            return False
        raise ValueError(f"{what} expects true or false, got '{raw}'")
    if type_name == "int":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{what} expects an integer, got '{raw}'") from None
    if type_name == "float":
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"{what} expects a number, got '{raw}'") from None
    return raw


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


REGISTRY: dict[str, PassInfo] = {}

# Modules that register passes; importing them fills REGISTRY.
_PASS_MODULES: list[str] = [
    "tilemlir.passes.test_diagnostics",
    "tilemlir.passes.insert_guards",
    "tilemlir.passes.eliminate_guards",
    "tilemlir.passes.vectorize",
    "tilemlir.passes.cpu_expand_narrow_floats",
    "tilemlir.passes.cpu_fuse_fma",
    "tilemlir.passes.cpu_lower_tile_to_loops",
    "tilemlir.passes.cpu_simulate_threads",
    "tilemlir.passes.lower_gemm_simt",
    "tilemlir.passes.infer_layouts",
    "tilemlir.passes.lower_tile_ops",
    "tilemlir.passes.partition_threads",
    "tilemlir.passes.test_print_layouts",
]


def register_pass(name: str, description: str, options: type = NoOptions):
    """Decorator registering `run(module, options)` as pass `name`."""

    def decorate(run: Callable[[Any, Any], None]):
        if name in REGISTRY:
            raise RuntimeError(f"pass '{name}' registered twice")
        REGISTRY[name] = PassInfo(name, description, run, options)
        return run

    return decorate


def load_passes() -> dict[str, PassInfo]:
    for module in _PASS_MODULES:
        importlib.import_module(module)
    return REGISTRY


def lookup(name: str) -> PassInfo | None:
    return load_passes().get(name)


def as_mlir_pass(info: PassInfo, options: Any) -> Callable:
    """The callable `PassManager.add` takes: runs the pass and turns CompileError into pass failure.

    Any other exception is a bug in the pass; inside a diagnostic scope it is
    reported as an internal compiler error instead of escaping (no traceback
    for the user unless TILEMLIR_TRACEBACK is set).
    """

    def run(op, pass_):
        sink = diag.active_sink()
        try:
            info.run(op, options)
        except CompileError as err:
            if sink is None:
                raise
            for d in err.diagnostics:
                sink.add(d)
            pass_.signal_pass_failure()
        except Exception as exc:
            if sink is None:
                raise
            sink.add(diag.internal_error(info.name, exc, op))
            pass_.signal_pass_failure()

    return run


__all__ = [
    "NoOptions",
    "PassInfo",
    "REGISTRY",
    "register_pass",
    "load_passes",
    "lookup",
    "as_mlir_pass",
    "Diagnostic",
]
