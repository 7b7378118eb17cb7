"""A compiler worker process: reads compile tasks on stdin, answers each on its stdout pipe.

Started by `parallel.compile_many` as a fresh interpreter (never a fork of
one with MLIR loaded), with its own MLIR context. Protocol, pickles on the
pipes: first the parent's `sys.path`, then how to import its `__main__`
module (None unless the factory is defined there), then tasks
``(reference, config, options)``, each answered by a `Reply`. The process
ends at EOF. Anything the factory's module prints goes to stderr; stdout
carries only replies.
"""

from __future__ import annotations

import importlib
import os
import pickle
import runpy
import sys
import time
from dataclasses import dataclass
from typing import Any

Reference = tuple[str, str, str, int]  # module, qualname, file, first line of the factory function

ACTIVE = False  # True inside a worker: a compile_many there compiles in-process (no workers of workers)


@dataclass
class Artifact:
    source: str
    cubin: bytes
    signature: str  # KernelSignature JSON
    options: dict[str, Any]  # CompileOptions


@dataclass
class Reply:
    artifact: Artifact | None = None
    error: str | None = None
    seconds: float = 0.0
    pid: int = 0
    importable: bool = True  # False: the worker could not import the factory (no config's fault)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def resolve(reference: Reference) -> Any:
    """The @tilemlir.jit factory `reference` names (LookupError if that name holds another one)."""
    module_name, qualname, filename, line = reference
    found: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        found = getattr(found, part)
    found = getattr(found, "function", found)  # the factory under an @autotune
    code = getattr(getattr(found, "fn", None), "__code__", None)
    if code is None or (code.co_filename, code.co_firstlineno) != (filename, line):
        raise LookupError(f"{module_name}.{qualname} is not the factory defined at {filename}:{line}")
    return found


def main_module() -> tuple[str, str] | None:
    """How a worker imports this process's `__main__`: ("name", module) when run with -m, ("path", file)
    for a script, None for an interactive session."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        return "name", spec.name
    path = getattr(main, "__file__", None)
    return ("path", os.path.abspath(path)) if path else None


def _import_main(main: tuple[str, str] | None) -> None:
    """Make the parent's main module importable as `__main__` without running its main block."""
    if main is None:
        return
    kind, value = main
    if kind == "name":
        module = importlib.import_module(value)
    else:
        globals_ = runpy.run_path(value, run_name="__tilemlir_worker_main__")
        module = type(sys)("__tilemlir_worker_main__")
        module.__dict__.update(globals_)
    sys.modules["__main__"] = module


def compile_task(reference: Reference, config: dict, options: dict) -> Reply:
    start = time.perf_counter()
    try:
        function = resolve(reference)
    except Exception as exc:
        return Reply(error=describe(exc), pid=os.getpid(), importable=False)
    try:
        kernel = function.instantiate(**config).compile("cuda", **options)
        compiled = kernel.compiled
        artifact = Artifact(compiled.cuda_source(), compiled.cubin, compiled.signature.to_json(),
                            compiled.options.to_dict())
        return Reply(artifact, seconds=time.perf_counter() - start, pid=os.getpid())
    except Exception as exc:  # the config's failure, reported with it
        return Reply(error=describe(exc), seconds=time.perf_counter() - start, pid=os.getpid())


def serve() -> None:
    global ACTIVE
    ACTIVE = True
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints of the code compiled go to stderr
    sys.stdout = sys.stderr
    tasks = sys.stdin.buffer
    main = pickle.load(tasks)
    try:
        _import_main(main)
    except Exception as exc:  # the main module fails on import: only its own factories are affected
        print(f"tilemlir compiler worker: cannot import the main module {main[1]}: {describe(exc)}", file=sys.stderr)
    while True:
        try:
            reference, config, options = pickle.load(tasks)
        except EOFError:
            return
        pickle.dump(compile_task(reference, config, options), replies)
        replies.flush()
