"""Compiled CUDA kernels looked up by their Python source, before the frontend runs.

The first call of a kernel in a new process should not pay for MLIR, the
frontend and the passes when the same kernel was compiled before. The key
hashes everything the frontend can read: the kernel function's source, the
values of its closure cells and of the globals its code names (compile-time
constants, dtypes, symbols; helper functions by their source), the jit
options, the prover's budget, and a fingerprint of the compiler's own files
and of the Z3 build its prover runs (what Z3 proves decides the CUDA). A value the key
cannot describe faithfully (an arbitrary object) makes the kernel
uncacheable at this level; the runtime's cache of generated CUDA still
applies after the frontend has run.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import json
import types
from pathlib import Path
from typing import Any

import tilemlir
from tilemlir.config import settings

_PACKAGE = Path(tilemlir.__file__).resolve().parent


class Uncacheable(Exception):
    """A value the kernel depends on has no faithful description."""


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """Changes whenever a file of the compiler or of the installed Z3 changes (names, sizes and
    modification times); Z3's files are found without importing it."""
    z3_package = Path(importlib.util.find_spec("z3").origin).parent
    digest = hashlib.sha256()
    for name, root, pattern in (("tilemlir", _PACKAGE, "*.py"), ("z3", z3_package, "*")):
        for path in sorted(p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts):
            stat = path.stat()
            digest.update(f"{name}/{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


def compiler_identity() -> dict[str, str]:
    """The compiler's part of every key: what the generated CUDA and its cubin depend on besides the kernel."""
    from tilemlir.runtime.cache import toolchain_identity

    return {"files": compiler_fingerprint(), **toolchain_identity()}


def _file_stamp(path: str | None) -> str:
    """A module's attributes are read through it at compile time: its file's size and time
    stand for them (the compiler's own files are in the fingerprint already)."""
    if not path:
        return ""
    stat = Path(path).stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _function_source(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        raise Uncacheable(f"no source for {fn!r}") from None


def _describe(value: Any, depth: int = 0) -> Any:
    """A JSON-able description that changes whenever `value` could change the generated kernel."""
    from tilemlir.language import DType, Symbolic

    if value is None or isinstance(value, (bool, int, float, str)):
        return [type(value).__name__, repr(value)]
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, [_describe(v, depth) for v in value]]
    if isinstance(value, dict):
        return ["dict", sorted((repr(k), _describe(v, depth)) for k, v in value.items())]
    if isinstance(value, (DType, Symbolic)):
        return [type(value).__name__, repr(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [(f.name, _describe(getattr(value, f.name), depth)) for f in dataclasses.fields(value)]
        return ["dataclass", type(value).__module__, type(value).__qualname__, fields]
    if isinstance(value, types.ModuleType):
        return ["module", value.__name__, _file_stamp(getattr(value, "__file__", None))]
    if type(value).__module__ == "tilemlir.language":  # T.Layout and other language objects
        return ["language", type(value).__qualname__, _describe(vars(value), depth)]
    if type(value).__module__ == "tilemlir.api" and type(value).__name__ == "JitFunction":
        value = value.fn  # a @tilemlir.jit function, by its Python function (the api imports this module)
    if isinstance(value, types.FunctionType):
        if depth > 2:
            raise Uncacheable(f"{value.__name__} nests too deep")
        return ["function", _function_source(value), _closure(value, depth + 1)]
    if isinstance(value, (types.BuiltinFunctionType, type)):
        return ["builtin", getattr(value, "__module__", ""), getattr(value, "__qualname__", repr(value))]
    raise Uncacheable(f"cannot describe a {type(value).__name__}")


def _closure(fn: types.FunctionType, depth: int) -> list:
    """Every value `fn` sees besides its source: closure cells, the globals its code names, and
    its annotations and defaults (evaluated where it was defined, so absent from the closure:
    `X: T.Tensor((M, N), dtype)` does not capture `dtype`)."""
    cells = zip(fn.__code__.co_freevars, fn.__closure__ or ())
    free = [(name, _describe(cell.cell_contents, depth)) for name, cell in cells]
    names = sorted(_code_names(fn.__code__) & fn.__globals__.keys())
    seen = [(name, _describe(fn.__globals__[name], depth)) for name in names]
    signature = [_describe(dict(fn.__annotations__), depth), _describe(fn.__defaults__, depth),
                 _describe(fn.__kwdefaults__, depth)]
    return [free, seen, signature]


def kernel_key(fn: types.FunctionType, target: str, options: dict, out_idx: Any) -> str | None:
    """The source-level cache key of kernel function `fn`, or None if it cannot have one."""
    from tilemlir.runtime.nvrtc import resolve_arch

    try:
        material = {
            "source": _function_source(fn),
            "file": fn.__code__.co_filename,
            "closure": _closure(fn, 0),
            "target": target,
            "options": sorted((k, repr(v)) for k, v in options.items()),
            "out_idx": repr(out_idx),
            "arch": resolve_arch(options.get("arch")),
            "compiler": compiler_identity(),
            "prover_rlimit": settings().prover_rlimit,
        }
    except Uncacheable:
        return None
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def lookup(key: str, options: dict):
    """The cached CompiledKernel stored under `key` for the jit `options`, or None (loading it imports no MLIR)."""
    from tilemlir.runtime import builder
    from tilemlir.runtime.nvrtc import resolve_arch

    arch = resolve_arch(options.get("arch"))
    return builder.cached(key, lambda found: None if found.options.arch == arch else
                          f"it is built for {found.options.arch}, not {arch}")


def store(key: str, kernel) -> None:
    """Store a runtime `CompiledKernel` under `key` (anything else is not stored)."""
    from tilemlir.runtime import cache
    from tilemlir.runtime.kernel import CompiledKernel

    if isinstance(kernel, CompiledKernel):
        cache.store(key, kernel.cuda_source(), kernel.cubin, kernel.signature, kernel.options)
