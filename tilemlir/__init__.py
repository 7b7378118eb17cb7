"""tilemlir: tile-level GPU kernels in Python, compiled through MLIR to readable CUDA C++.

The package root stays light (no MLIR import) so `tilemlir.runtime` loads
fast on machines without the bindings; the compiler API loads on first use.
"""

from __future__ import annotations

from tilemlir.diagnostics import CompileError, DeviceAssertionError, LaunchError, TilemlirError

__version__ = "0.1.0"

_LAZY = {
    "jit": "tilemlir.api",
    "compile": "tilemlir.api",
    "lower": "tilemlir.api",
    "language": "tilemlir.language",
    "autotune": "tilemlir.autotuner",
    "compile_many": "tilemlir.autotuner",
    "testing": "tilemlir.testing",
    "PassConfigKey": "tilemlir.pass_configs",
    "transform": "tilemlir.transform",
    "cdiv": "tilemlir.language",
    "next_power_of_2": "tilemlir.language",
}


def __getattr__(name: str):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tilemlir' has no attribute '{name}'")
    import importlib

    module = importlib.import_module(module_name)
    value = module if module_name.endswith(name) else getattr(module, name)
    globals()[name] = value
    return value


__all__ = ["CompileError", "DeviceAssertionError", "LaunchError", "TilemlirError",
           "jit", "compile", "lower", "language", "autotune",
           "compile_many", "testing", "PassConfigKey", "transform", "cdiv", "next_power_of_2", "__version__"]
