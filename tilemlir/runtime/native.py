"""The native launcher: a small CPython extension (`launch.c`) for the fast path.

`load()` compiles `launch.c` with the system C compiler against this
Python's headers, once per machine and Python ABI (the shared library is
kept in the cache directory, ``<cache dir>/native/<hash>/``), and imports
it; it returns None, and the fast path then calls the driver through ctypes,
when there is no compiler or no Python.h.

Why: a ctypes call of cuLaunchKernel converts eleven arguments and needs
the kernel parameters in ctypes objects owned by the calling thread; this
extension takes the values as Python ints and floats in one METH_FASTCALL
call and builds the parameter block on its stack. Its `CallPlan` goes
further and does a kernel's whole call in C (`native_call`): reading the
tensors through the DLPack exchange API, the checks, the output allocation
and the launch. Both hold the GIL through cuLaunchKernel, as PyTorch does
for its launches.

    current_context(get_context_address) -> int
        the current CUcontext, 0 without one or on error
    launch(launch_address, function, gx, gy, gz, bx, by, bz, shared, stream, kinds, *values) -> int
        the CUresult of cuLaunchKernel; `kinds` has one type code per value
        (see KIND), `stream` and `function` are handles as ints
    CallPlan(spec, ...)
        see `native_call.NativeCall`

The driver entry points are passed by address (the addresses of
`driver.raw()`'s ctypes functions), so the module links against no CUDA.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType

from tilemlir.config import settings

log = logging.getLogger("tilemlir.runtime")

MODULE_NAME = "_tilemlir_launch"  # as in PyInit_ below
MAX_PARAMS = 128  # as in the C source

# The type code of a kernel parameter in `launch`'s kinds, by the ctypes type the parameter has.
KIND = {ctypes.c_void_p: "p", ctypes.c_bool: "B", ctypes.c_int8: "b", ctypes.c_uint8: "B", ctypes.c_int16: "h",
        ctypes.c_uint16: "H", ctypes.c_int32: "i", ctypes.c_uint32: "I", ctypes.c_int64: "q", ctypes.c_uint64: "Q",
        ctypes.c_float: "f", ctypes.c_double: "d"}

HERE = Path(__file__).parent
SOURCE = (HERE / "launch.c").read_text()
HEADERS = (HERE / "dlpack_abi.h").read_text()  # included by launch.c; part of the cache key

_lock = threading.Lock()
_loaded: list[ModuleType | None] = []  # [] until load() has run once


def load() -> ModuleType | None:
    """The extension module, built on first use; None where it cannot be built."""
    with _lock:
        if not _loaded:
            _loaded.append(_build_and_import())
        return _loaded[0]


def _build_and_import() -> ModuleType | None:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    include = sysconfig.get_paths()["include"]
    key = hashlib.sha256(f"{SOURCE}\n{HEADERS}\n{sys.version}\n{suffix}\n{include}".encode()).hexdigest()[:24]
    library = settings().cache_dir / "native" / key / f"{MODULE_NAME}{suffix}"
    if not library.is_file():
        start = time.perf_counter()
        error = _compile(library, include)
        if error is not None:
            log.debug("no native launcher (%s); the fast path calls the driver through ctypes", error)
            return None
        log.debug("built the native launcher %s in %.2f s", library, time.perf_counter() - start)
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(library))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, library, loader=loader)
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as exc:
        log.debug("the native launcher %s does not import (%s); using ctypes", library, exc)
        return None
    return module


def _compile(library: Path, include: str, source_text: str = SOURCE) -> str | None:
    """Compile `source_text` (a CPython extension) into `library` (written aside, then renamed
    into place); why not, or None."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return "no C compiler (cc, gcc) on PATH"
    if not Path(include, "Python.h").is_file():
        return f"no Python.h in {include}"
    try:
        library.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=library.parent) as scratch:
            source = Path(scratch, "launch.c")
            source.write_text(source_text)
            built = Path(scratch, library.name)
            command = [compiler, "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{HERE}", str(source), "-o", str(built)]
            result = subprocess.run(command, capture_output=True, text=True, timeout=120)
            if result.returncode != 0:
                return f"{compiler} failed: {result.stderr.strip()[-2000:]}"
            os.replace(built, library)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot build in {library.parent}: {exc}"
    return None
