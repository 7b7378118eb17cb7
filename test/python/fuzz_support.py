"""Shared helpers of the CI-sized fuzzers (test_fuzz_*.py, issue 14).

Every fuzz case is a function of one integer seed: `fuzz_seeds(name, count)`
derives the seeds of a test from the base seed (`FUZZ_SEED`, default 14) and
the test's name, and each case draws from `random.Random(seed)` (or numpy's
generator of the same seed) only. A failing case's pytest id names its seed
(`[seed=1234567]`; `-k 1234567` selects it), so it reproduces on its own:

    FUZZ_SEED=14 .venv/bin/python -m pytest -q -p no:cacheprovider test/python/test_fuzz_x.py -k 1234567

`FUZZ_SEED=<other>` runs a different, equally deterministic, campaign of the
same size; the sizes are fixed, so the time a fuzzer takes is bounded.
`FUZZ_SCALE=<factor>` multiplies every size (a longer campaign off CI).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import itertools
import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

import tilemlir
from tilemlir.diagnostics import CompileError

HERE = Path(__file__).resolve().parent
BASE_SEED = int(os.environ.get("FUZZ_SEED", "14"))
SCALE = float(os.environ.get("FUZZ_SCALE", "1"))  # a longer campaign: FUZZ_SCALE=20
KERNEL_HEADER = "import tilemlir\nimport tilemlir.language as T\n\nM = T.symbolic('M')\n"
_modules = itertools.count()


def fuzz_seeds(name: str, count: int) -> list:
    """`count` pytest params, one seed each, fixed by `name` and the base seed; ids `seed=<n>`."""
    digest = hashlib.sha256(f"{BASE_SEED}:{name}".encode()).digest()
    first = int.from_bytes(digest[:4], "little")
    return [pytest.param(first + i, id=f"seed={first + i}") for i in range(max(1, round(count * SCALE)))]


def write_kernel_file(directory: Path, source: str, header: str = KERNEL_HEADER) -> Path:
    """Write `header + source` to a new .py file: the frontend reads kernels from their source files."""
    path = directory / f"fuzz_kernel_{os.getpid()}_{next(_modules)}.py"
    path.write_text(header + textwrap.dedent(source).lstrip("\n"))
    return path


def import_kernel_file(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(path.stem, None)
    return module


def assert_located_in(err: CompileError, path: Path, context: str) -> None:
    """`err` is a deliberate error located at a line of the kernel file `path`, not an internal one."""
    text = str(err)
    where = f"{context}\nerror was:\n{text[:3000]}"
    assert "internal compiler error" not in text and "internal verifier error" not in text, where
    loc = err.location
    assert loc is not None, f"the error has no location\n{where}"
    assert Path(loc.file).resolve() == path.resolve(), f"located in {loc.file}, not in the kernel's file\n{where}"
    assert 1 <= loc.line <= len(path.read_text().splitlines()), f"line {loc.line} is not in the file\n{where}"


def unexpected(exc: BaseException, context: str) -> str:
    """A failure message for an exception of the wrong type: the case and the traceback."""
    return f"{type(exc).__name__} instead of a located CompileError\n{context}\n" + "".join(
        traceback.format_exception(exc))[-4000:]


def compile_to_cuda_source(fn) -> str:
    """The CUDA source of kernel `fn` through every pass and the emitter (where the shared-memory limit of
    the arch is checked), without NVRTC: the DSL fuzzer compiles hundreds of kernels."""
    from tilemlir.driver import run_stages
    from tilemlir.emit_cuda import emit

    fn = fn if isinstance(fn, tilemlir.api.JitFunction) else tilemlir.api.JitFunction(fn)
    module = fn.frontend().module()
    with module.context:
        run_stages(module, "final")
        return emit(module, fast_math=False, index_bits=None, arch="sm_90a").source


def poisoned(shape, dtype) -> np.ndarray:
    """An output array full of a value no kernel computes here: NaN for floats, a sentinel for ints."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name in ("bfloat16", "float8_e4m3fn"):
        return np.full(shape, np.nan, dtype)
    return np.full(shape, 0x5A, dtype) if dtype.itemsize == 1 else np.full(shape, -12345, dtype)




class Worker:
    """A process running `<module>.serve()` (a loop answering one JSON case a line with one JSON reply a line),
    restarted after it dies: a fuzz case that crashes the process fails with its seed, the next case gets a
    fresh worker."""

    def __init__(self, module: str):
        self.module = module
        self.process = None

    def start(self):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"import {self.module}; {self.module}.serve()"], env=env, cwd=HERE,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ask(self, case: dict) -> dict:
        if self.process is None or self.process.poll() is not None:
            self.start()
        self.process.stdin.write(json.dumps(case) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            status = self.process.wait(timeout=60)
            stderr = self.process.stderr.read()[-4000:]
            self.process = None
            return {"outcome": f"worker died with status {status}", "stderr": stderr, "applied": []}
        return json.loads(line)

    def close(self):
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)
