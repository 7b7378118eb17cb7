"""NVRTC's version and supported archs, without loading NVRTC on a warm start.

Loading libnvrtc costs tens of milliseconds, more than everything else a
process does to launch a cached kernel. Cache keys need NVRTC's version,
so it is memoized in ``<cache dir>/toolchain.json`` under a fingerprint of
every NVRTC library the loader could pick (path, size, mtime in the pip
wheels, conda, CUDA_HOME/CUDA_PATH, /usr/local/cuda and the system library
dirs) plus the cuda-bindings version. Installing, upgrading or removing an
NVRTC in any of those places changes the fingerprint, and the next process
asks NVRTC itself. A memo entry of the wrong shape is asked again; a memo in
a cache directory others may write (private_dir.py) is not used.

This module also loads NVRTC's bindings (`bindings`) and checks their
results (`check`) for nvrtc.py, which compiles with them.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from tilemlir.config import settings
from tilemlir.diagnostics import CompileError
from tilemlir.runtime.private_dir import private_dir, private_file

log = logging.getLogger("tilemlir.runtime")

MEMO_FILE = "toolchain.json"
_SYSTEM_LIB_DIRS = ("/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")


def library_candidates() -> list[str]:
    """Every libnvrtc the dynamic-library search could load, sorted."""
    dirs: list[str] = []
    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            dirs += glob.glob(os.path.join(entry, "nvidia", "*", "lib"))
    for variable in ("CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(variable)
        if root:
            dirs += [os.path.join(root, "lib"), os.path.join(root, "lib64")]
    dirs += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    dirs += _SYSTEM_LIB_DIRS
    found = set()
    for directory in dirs:
        found.update(glob.glob(os.path.join(directory, "libnvrtc.so*")))
    return sorted(found)


def fingerprint() -> str:
    parts = [_bindings_version()]
    for path in library_candidates():
        try:
            stat = os.stat(path)
        except OSError:
            continue
        parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _bindings_version() -> str:
    try:
        from cuda.bindings._version import __version__
    except ImportError:
        return "cuda-bindings unknown"
    return f"cuda-bindings {__version__}"


@functools.cache
def nvrtc_facts() -> tuple[str, tuple[int, ...]]:
    """(NVRTC version "major.minor", supported sm numbers), from the memo or from NVRTC."""
    key = fingerprint()
    directory = private_dir(settings().cache_dir, "not memoizing NVRTC's version there: every process asks NVRTC")
    memo = directory / MEMO_FILE if directory is not None else None
    entry = _read_memo(memo).get(key) if memo is not None else None
    if _well_formed(entry):
        return entry["version"], tuple(entry["archs"])
    version, archs = query_version(), query_archs()
    if memo is not None:
        _write_memo(memo, key, {"version": version, "archs": list(archs)})
        log.debug("asked NVRTC for its version (%s) and archs; memoized in %s", version, memo)
    return version, archs


def bindings() -> Any:
    """The `cuda.bindings.nvrtc` module, imported (and libnvrtc loaded) on the first call."""
    from cuda.bindings import nvrtc

    return nvrtc


def check(result: tuple, what: str) -> Any:
    """The value(s) of an NVRTC call's `result` tuple; CompileError with NVRTC's message when `what` failed."""
    err = result[0]
    if int(err) != 0:
        message = bindings().nvrtcGetErrorString(err)[1]
        raise CompileError(f"NVRTC {what} failed: {message.decode() if isinstance(message, bytes) else message}")
    return result[1] if len(result) == 2 else result[1:]


def query_version() -> str:
    """NVRTC's version "major.minor", asked of NVRTC itself."""
    major, minor = check(bindings().nvrtcVersion(), "version query")
    return f"{major}.{minor}"


def query_archs() -> tuple[int, ...]:
    """The sm numbers NVRTC can compile for, asked of NVRTC itself."""
    return tuple(check(bindings().nvrtcGetSupportedArchs(), "arch query"))


def _well_formed(entry: object) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("version"), str)
            and isinstance(entry.get("archs"), list) and all(type(a) is int for a in entry["archs"]))


def _read_memo(memo: Path) -> dict:
    if not private_file(memo):
        return {}
    try:
        data = json.loads(memo.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_memo(memo: Path, key: str, entry: dict) -> None:
    """Atomic replace; a failure (read-only cache dir) only costs the next process a query."""
    staging = None
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        data = _read_memo(memo)
        data[key] = entry
        handle, staging = tempfile.mkstemp(prefix=".toolchain-", dir=memo.parent)
        with os.fdopen(handle, "w") as out:
            json.dump(data, out, indent=1)
        os.replace(staging, memo)
    except OSError as exc:
        log.debug("could not memoize the NVRTC facts in %s: %s", memo, exc)
        if staging is not None and os.path.exists(staging):
            os.unlink(staging)
