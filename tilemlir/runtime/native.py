"""The native launcher: a small CPython extension (`launch.c`) for the fast path.

`load()` compiles `launch.c` with the system C compiler against this
Python's headers, once per machine and Python ABI (the shared library is
kept in the cache directory, ``<cache dir>/native/<hash>/``), and imports
it; it returns None, and the fast path then calls the driver through ctypes,
when there is no compiler or no Python.h.

Importing a library runs its code, so `load()` imports only a library this
process built, or one whose SHA-256 matches the one recorded when this
installation built it. The record is kept outside the cache, under
``$XDG_STATE_HOME/tilemlir/native/`` (default ``~/.local/state``), so a
library that reached the cache any other way (planted, or restored with a
CI cache or a copied home, with or without a record beside it) is rebuilt
instead. The library's directory must also be private (private_dir.py:
owned by this user or root and writable by no one else, up to /). Where it
is not, the launcher is built in a private temporary directory and imported
from there, once per process (about half a second), with a warning naming
the directory and why: refusing to run a correct kernel for a cache
problem, or falling back silently to the slower ctypes launches, would
hide the misconfiguration a user should fix.

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
        (see KIND, MAP_KIND), `stream` and `function` are handles as ints
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
import json
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
from tilemlir.runtime.private_dir import private_dir, private_file, unsafe_reason

log = logging.getLogger("tilemlir.runtime")

MODULE_NAME = "_tilemlir_launch"  # as in PyInit_ below
MAX_PARAMS = 128  # as in the C source

# The type code of a kernel parameter in `launch`'s kinds, by the ctypes type the parameter has.
KIND = {ctypes.c_void_p: "p", ctypes.c_bool: "B", ctypes.c_int8: "b", ctypes.c_uint8: "B", ctypes.c_int16: "h",
        ctypes.c_uint16: "H", ctypes.c_int32: "i", ctypes.c_uint32: "I", ctypes.c_int64: "q", ctypes.c_uint64: "Q",
        ctypes.c_float: "f", ctypes.c_double: "d"}
MAP_KIND = "m"  # a tensor map: its value is the address of its 128 bytes (tensor_map.EncodedMap.address)

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
    directory = private_dir(settings().cache_dir / "native" / key,
                            "building the native launcher in a private temporary directory, in every process")
    if directory is None:
        return _build_privately(suffix, include)
    library = directory / f"{MODULE_NAME}{suffix}"
    records = private_dir(settings().state_dir / "native",
                          "the native launcher cannot be checked against a record: every process builds it again")
    if records is None or not _matches_record(library, _record_file(records, library)):
        if not _build(library, include):
            return None
        if records is not None:
            _record(library, _record_file(records, library))
    return _import(library)


def _build(library: Path, include: str) -> bool:
    start = time.perf_counter()
    error = _compile(library, include)
    if error is not None:
        log.debug("no native launcher (%s); the fast path calls the driver through ctypes", error)
        return False
    log.debug("built the native launcher %s in %.2f s", library, time.perf_counter() - start)
    return True


def _build_privately(suffix: str, include: str) -> ModuleType | None:
    with tempfile.TemporaryDirectory(prefix="tilemlir-native-") as scratch:
        reason = unsafe_reason(Path(scratch))
        if reason is not None:
            log.warning("no private directory to build the native launcher in (%s); using ctypes", reason)
            return None
        library = Path(scratch, f"{MODULE_NAME}{suffix}")
        return _import(library) if _build(library, include) else None  # imported, it outlives its file


def _record_file(records: Path, library: Path) -> Path:
    return records / f"{hashlib.sha256(str(library).encode()).hexdigest()[:32]}.json"


def _matches_record(library: Path, record: Path) -> bool:
    """Whether `library` is the one this installation built: a private file with the SHA-256 in `record`."""
    if not library.exists():
        return False
    try:
        recorded = json.loads(record.read_text())["sha256"] if private_file(record) else None
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    if recorded is None:
        log.debug("no record of building the native launcher %s here; building it again", library)
        return False
    if not private_file(library) or hashlib.sha256(library.read_bytes()).hexdigest() != recorded:
        log.warning("the native launcher %s is not the one built here (its SHA-256 is not the one recorded in %s); "
                    "building it again", library, record)
        return False
    return True


def _record(library: Path, record: Path) -> None:
    """Write `library`'s SHA-256 to `record` (atomic replace); a failure only costs a rebuild."""
    entry = {"library": str(library), "sha256": hashlib.sha256(library.read_bytes()).hexdigest()}
    staging = None
    try:
        handle, staging = tempfile.mkstemp(prefix=".record-", dir=record.parent)
        with os.fdopen(handle, "w") as out:
            json.dump(entry, out)
        os.replace(staging, record)
    except OSError as exc:
        log.warning("could not record the native launcher's hash in %s: %s", record, exc)
        if staging is not None and os.path.exists(staging):
            os.unlink(staging)


def _import(library: Path) -> ModuleType | None:
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
            # Relative names in the scratch directory: the library holds no random path, so every
            # build of one source is byte-identical and concurrent builds record one SHA-256.
            command = [compiler, "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{HERE}", source.name, "-o", built.name]
            result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=scratch)
            if result.returncode != 0:
                return f"{compiler} failed: {result.stderr.strip()[-2000:]}"
            os.replace(built, library)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot build in {library.parent}: {exc}"
    return None
