"""The pass registry: every tilemlir pass by name, the module that defines it, and its typed options.

A pass is a function `run(module: ir.Operation, options) -> None` that
rewrites the module in place, plus a frozen dataclass of options whose
fields round-trip through the pipeline syntax `name{opt=value other=3}`.
Register it once with `@register_pass(...)` in its own module and map its
name to that module in `PASS_MODULES`: `lookup(name)` imports that module
alone, `load_passes()` all of them (for `--list-passes`). Upstream MLIR pass
names (canonicalize, cse, ...) are accepted by the pipeline parser too and
run as upstream passes.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Callable


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


# Every pass name and the module whose `@register_pass` defines it.
PASS_MODULES: dict[str, str] = {
    "async-copies": "tilemlir.passes.async_copies",
    "carry-ring-slots": "tilemlir.passes.carry_ring_slots",
    "eliminate-guards": "tilemlir.passes.eliminate_guards",
    "epilogue-slabs": "tilemlir.passes.epilogue_slabs",
    "expand-isinf": "tilemlir.backends.cpu.expand_isinf",
    "expand-narrow-floats": "tilemlir.backends.cpu.expand_narrow_floats",
    "fuse-fma": "tilemlir.backends.cpu.fuse_fma",
    "infer-layouts": "tilemlir.passes.infer_layouts",
    "insert-guards": "tilemlir.passes.insert_guards",
    "keep-min-max-loops-scalar": "tilemlir.backends.cpu.keep_min_max_loops_scalar",
    "keep-out-of-line": "tilemlir.backends.cpu.keep_out_of_line",
    "lower-gemm-simt": "tilemlir.passes.lower_gemm_simt",
    "lower-tile-ops": "tilemlir.passes.lower_tile_ops",
    "lower-gemm-mma": "tilemlir.passes.lower_gemm_mma",
    "lower-tile-to-loops": "tilemlir.backends.cpu.lower_tile_to_loops",
    "materialize-shared-layouts": "tilemlir.passes.materialize_shared_layouts",
    "opaque-float-constants": "tilemlir.backends.cpu.opaque_float_constants",
    "partition-threads": "tilemlir.passes.partition_threads",
    "plan-shared-memory": "tilemlir.passes.plan_shared_memory",
    "plan-pipeline": "tilemlir.passes.plan_pipeline",
    "scalarize-bool-vectors": "tilemlir.backends.cpu.scalarize_bool_vectors",
    "select-mma": "tilemlir.passes.select_mma",
    "select-shared-layouts": "tilemlir.passes.select_shared_layouts",
    "select-stmatrix": "tilemlir.passes.select_stmatrix",
    "select-tma-stores": "tilemlir.passes.select_tma_stores",
    "simulate-threads": "tilemlir.backends.cpu.simulate_threads",
    "strip-tile-attributes": "tilemlir.backends.cpu.strip_tile_attributes",
    "test-diagnostics": "tilemlir.passes.testing.diagnostics",
    "tma-copies": "tilemlir.passes.tma_copies",
    "tma-stores": "tilemlir.passes.tma_stores",
    "test-print-layouts": "tilemlir.passes.testing.print_layouts",
    "test-plan-barriers": "tilemlir.passes.testing.plan_barriers",
    "vectorize": "tilemlir.passes.vectorize",
    "warp-specialize": "tilemlir.passes.warp_specialize",
}

# The passes whose modules have been imported, by name.
REGISTRY: dict[str, PassInfo] = {}


def register_pass(name: str, description: str, options: type = NoOptions):
    """Decorator registering `run(module, options)` as pass `name`, which PASS_MODULES maps to this module."""

    def decorate(run: Callable[[Any, Any], None]):
        if PASS_MODULES.get(name) != run.__module__:
            raise RuntimeError(f"pass '{name}' is defined in {run.__module__}, but PASS_MODULES maps it to "
                               f"{PASS_MODULES.get(name, 'nothing')}")
        if name in REGISTRY:
            raise RuntimeError(f"pass '{name}' registered twice")
        REGISTRY[name] = PassInfo(name, description, run, options)
        return run

    return decorate


def is_pass(name: str) -> bool:
    """Whether `name` is one of our passes (not an upstream one); imports nothing."""
    return name in PASS_MODULES


def lookup(name: str) -> PassInfo | None:
    """Our pass `name`, importing the module that defines it (no other pass module of the map), or None
    for any other name."""
    module = PASS_MODULES.get(name)
    if module is None:
        return None
    importlib.import_module(module)
    if name not in REGISTRY:
        raise RuntimeError(f"{module} does not register pass '{name}' that PASS_MODULES maps to it")
    return REGISTRY[name]


def load_passes() -> dict[str, PassInfo]:
    """Every pass, by name (imports every pass module)."""
    return {name: lookup(name) for name in PASS_MODULES}


__all__ = [
    "NoOptions",
    "PassInfo",
    "PASS_MODULES",
    "REGISTRY",
    "register_pass",
    "is_pass",
    "lookup",
    "load_passes",
]
