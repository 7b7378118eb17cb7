"""`compile_many`: one `@tilemlir.jit` factory compiled for many argument sets, in worker processes.

Each worker is a fresh interpreter (`worker.py`; never a fork of a process
with MLIR loaded) with its own MLIR context, driven by one thread of a
`concurrent.futures` thread pool over pipes. It compiles one argument set at
a time through the normal API (frontend, passes, CUDA emitter, NVRTC, the
disk caches) and sends back the artifact: CUDA source, cubin, signature
and NVRTC options. The parent wraps it in a `tilemlir.Kernel` without
importing MLIR. A failure comes back with its argument set and message and
does not stop the others; a worker that dies (a crash in native code) fails
only the config it was compiling, and a fresh one takes the rest.
`multiprocessing`'s pools are not used: under "spawn" they run the caller's
main script again in every worker (a script without an
``if __name__ == "__main__":`` guard recurses), and one crashed worker
breaks the whole pool.

A worker starts in about 1.3 s (the interpreter and the compiler's imports)
and its first compile pays MLIR's and Z3's warm-up, so for a few cheap
kernels compiling in-process is faster; `workers=1` does that. Workers must
be able to import the factory: one defined inside a function, or in an
interactive session, is compiled in-process; one in the script being run
is found by running that script's top level (its main block, under the
usual guard, does not run). CPU kernels live in the memory of the process
that JIT-compiled them, so target "cpu" always compiles in-process.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tilemlir.autotuner import worker as worker_process
from tilemlir.autotuner.progress import Progress
from tilemlir.autotuner.worker import Artifact, Reference, Reply, describe, main_module, resolve

log = logging.getLogger("tilemlir.autotuner")


@dataclass
class CompileResult:
    """One argument set's compile: `kernel` (a tilemlir.Kernel) or `error` (the message)."""

    config: dict[str, Any]
    kernel: Any = None
    error: str | None = None
    seconds: float = 0.0
    pid: int = 0  # the process that compiled it

    @property
    def ok(self) -> bool:
        return self.error is None


def compile_many(factory: Any, configs: Sequence[Mapping[str, Any]], *, target: str | None = None,
                 workers: int | None = None, progress: bool | None = None, **options: Any) -> list[CompileResult]:
    """Compile `factory` (a `@tilemlir.jit` factory) with each dict of `configs` as its keyword
    arguments, for `target` with compile `options` (e.g. arch="sm_90a"); results in `configs` order.

    `workers`: processes to use (default TILEMLIR_COMPILE_WORKERS, else the CPUs this process may
    use, at most one per config; 1 compiles in-process). `progress`: a status line on stderr
    (default: when stderr is a terminal)."""
    from tilemlir.config import settings

    function = _jit_function(factory)
    target = "cpu" if settings().interpret else target or function.target or "cuda"  # CPU kernels: in-process
    configs = [dict(c) for c in configs]
    count = 1 if worker_process.ACTIVE else _worker_count(workers, len(configs))
    reference = _reference(function) if target == "cuda" and count > 1 else None
    meter = Progress(f"compiling {function.fn.__name__}", len(configs), progress)
    try:
        if reference is None:
            return [_compile_here(function, config, target, options, meter) for config in configs]
        return _compile_in_workers(function, reference, configs, options, count, meter)
    finally:
        meter.close()


def _jit_function(factory: Any) -> Any:
    from tilemlir.api import JitFunction

    factory = getattr(factory, "function", factory)  # an @autotune-decorated factory
    if not isinstance(factory, JitFunction) or factory.kind != "factory":
        raise TypeError(f"compile_many compiles a @tilemlir.jit factory, got {factory!r}")
    return factory


def _worker_count(workers: int | None, configs: int) -> int:
    from tilemlir.config import settings

    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    affinity = getattr(os, "sched_getaffinity", None)
    wanted = workers or settings().compile_workers or (len(affinity(0)) if affinity else os.cpu_count() or 1)
    return max(1, min(wanted, configs))


def _compile_here(function: Any, config: dict, target: str, options: dict, meter: Progress) -> CompileResult:
    start = time.perf_counter()
    try:
        kernel = function.instantiate(**config).compile(target, **options)
        result = CompileResult(config, kernel=kernel)
    except Exception as exc:  # every failure is this config's, reported with it
        result = CompileResult(config, error=describe(exc))
    result.seconds, result.pid = time.perf_counter() - start, os.getpid()
    meter.step(result.ok)
    return result


# -- worker processes ------------------------------------------------------------------------------------
def _reference(function: Any) -> Reference | None:
    """(module, qualname, file, first line) by which a worker imports `function`, or None if it cannot."""
    fn = function.fn
    if "<locals>" in fn.__qualname__ or fn.__module__ not in sys.modules:
        return None
    if fn.__module__ == "__main__" and main_module() is None:
        return None  # an interactive session: a worker cannot import it
    reference = (fn.__module__, fn.__qualname__, fn.__code__.co_filename, fn.__code__.co_firstlineno)
    try:
        found = resolve(reference)
    except (AttributeError, ImportError, LookupError):
        found = None
    if found is not function:
        log.debug("factory %s is not importable as %s.%s: compiling in-process", fn.__name__, *reference[:2])
        return None
    return reference


class _Worker:
    """One compiler process (see worker.py); `compile` answers a task or raises EOFError if it died."""

    def __init__(self, main: tuple[str, str] | None):
        bootstrap = ("import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
                     "from tilemlir.autotuner.worker import serve; serve()")
        self.process = subprocess.Popen([sys.executable, "-c", bootstrap], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)
        self._send(list(sys.path))
        self._send(main)

    def _send(self, message: Any) -> None:
        self.process.stdin.write(message if isinstance(message, bytes) else pickle.dumps(message))
        self.process.stdin.flush()

    def compile(self, task: bytes) -> Reply:
        """The reply to a pickled (reference, config, options)."""
        try:
            self._send(task)
            return pickle.load(self.process.stdout)
        except (BrokenPipeError, EOFError, pickle.UnpicklingError):
            raise EOFError(f"exit status {self.process.wait()}") from None

    def close(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def _compile_in_workers(function: Any, reference: Reference, configs: list[dict], options: dict, count: int,
                        meter: Progress) -> list[CompileResult]:
    results: list[CompileResult | None] = [None] * len(configs)
    pending = iter(range(len(configs)))
    lock = threading.Lock()
    unimportable: list[dict] = []

    def drive() -> None:
        worker = None
        try:
            while not unimportable:
                with lock:
                    index = next(pending, None)
                if index is None:
                    return
                try:
                    task = pickle.dumps((reference, configs[index], options))
                except Exception:  # a value that cannot cross a pipe: that config compiles in-process
                    continue
                worker = worker or _Worker(main_module() if reference[0] == "__main__" else None)
                result = _compile_one(worker, task, configs[index], options, function)
                if result is None:  # the worker could not import the factory: no config can compile there
                    unimportable.append(configs[index])
                    return
                if result.error is not None and result.error.startswith(_DIED):
                    worker = None  # that one is gone; the next config gets a fresh process
                with lock:
                    results[index] = result
                    meter.step(result.ok)
        finally:
            if worker is not None:
                worker.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as threads:
        for future in [threads.submit(drive) for _ in range(count)]:
            future.result()
    if unimportable:
        log.warning("compiler workers cannot import factory %s: compiling in-process", function.fn.__name__)
    # what no worker compiled (a factory they cannot import, config values that do not pickle) compiles here
    return [r or _compile_here(function, configs[i], "cuda", options, meter) for i, r in enumerate(results)]


_DIED = "the compiler process died"


def _compile_one(worker: _Worker, task: bytes, config: dict, options: dict, function: Any) -> CompileResult | None:
    """The worker's result for `config`; None when the worker cannot import the factory."""
    start = time.perf_counter()
    try:
        reply = worker.compile(task)
    except EOFError as exc:
        return CompileResult(config, error=f"{_DIED} while compiling this config ({exc}; a crash in native code)",
                             seconds=time.perf_counter() - start, pid=worker.process.pid)
    if not reply.importable:
        return None
    result = CompileResult(config, error=reply.error, seconds=reply.seconds, pid=reply.pid)
    if reply.artifact is not None:
        result.kernel = _adopt(function, config, reply.artifact, options)
    return result


def _adopt(function: Any, config: dict, artifact: Artifact, options: dict) -> Any:
    """The tilemlir.Kernel, in this process, of an artifact a worker compiled."""
    from tilemlir.api import Kernel
    from tilemlir.options import options_for
    from tilemlir.runtime.builder import build, export
    from tilemlir.runtime.kernel import CompiledKernel
    from tilemlir.runtime.nvrtc import CompileOptions
    from tilemlir.runtime.signature import KernelSignature

    # the runtime's builder, as for a kernel compiled here: it exports and takes edited CUDA like one
    compiled = CompiledKernel(KernelSignature.from_json(artifact.signature), artifact.source, artifact.cubin,
                              CompileOptions(**artifact.options), build=build, export=export)
    return Kernel(function.instantiate(**config), options_for("cuda", {**function.options, **options}), compiled)
