"""The disk cache of compiled kernels.

Entries are artifact directories (see artifact.py) with a manifest, under
``<cache dir>/v2/<key[:2]>/<key>``, where the cache dir is
`tilemlir.config.settings().cache_dir` (``TILEMLIR_CACHE_DIR``, default
``~/.cache/tilemlir``). A key hashes the text the kernel was made from
(CUDA source, or IR for callers that look up before generating source),
the compile options including the arch, and `toolchain_identity()` (the
NVRTC and tilemlir versions).

The cache is used only while its directory is private (private_dir.py:
owned by this user or root and writable by no one else, up to /): in one
others may write, they could plant a cubin under a key. Otherwise nothing
is read or stored there, after a warning, and kernels compile every time.

Writing: an entry is written in a private temporary directory, its
``manifest.json`` (the key and each file's SHA-256) last, and renamed into
place, so readers see a whole entry or none; when two processes store one
key, the first rename wins.

Reading: every file is read once through one open handle of the entry
directory (so all of them come from one entry even while another process
replaces it), checked against the manifest, and the artifact is read from
those bytes; the builder makes the kernel of it. An entry that fails (a
torn, edited or missing file, a manifest that is not this key's, a cubin
that is no whole ELF image, a kernel other than the caller expects) is
discarded with a warning and the caller compiles again: a damaged entry
never fails a compile and is never used.
That also covers a crash before the data reached the disk, so nothing is
fsynced.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from tilemlir.config import settings
from tilemlir.diagnostics import LaunchError
from tilemlir.runtime.artifact import Artifact, tilemlir_version
from tilemlir.runtime.nvrtc import CompileOptions, nvrtc_version
from tilemlir.runtime.private_dir import private_dir
from tilemlir.runtime.signature import KernelSignature

log = logging.getLogger("tilemlir.runtime")
LAYOUT_VERSION = "v2"
MANIFEST_FILE = "manifest.json"
MANIFEST_VERSION = 1
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class _Damaged(Exception):
    """Why a cache entry cannot be used."""


def root() -> Path:
    return settings().cache_dir / LAYOUT_VERSION


def _private_root() -> Path | None:
    return private_dir(root(), "not using the disk cache there: every process compiles its kernels")


def toolchain_identity() -> dict[str, str]:
    """What every cached kernel depends on besides its own inputs (part of every key)."""
    return {"nvrtc": nvrtc_version(), "tilemlir": tilemlir_version()}


def make_key(text: str, options: CompileOptions, extra: str = "") -> str:
    """The cache key of a kernel made from `text` with `options`; `extra` adds
    anything else the result depends on (e.g. the signature's JSON)."""
    material = json.dumps({"text": text, "extra": extra, "options": options.to_dict(), **toolchain_identity()},
                          sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def entry_dir(key: str) -> Path:
    return root() / key[:2] / key


def lookup(key: str, expect: Callable[[Artifact], str | None] | None = None) -> Artifact | None:
    """The artifact stored under `key`, or None. `expect(artifact)` says what is wrong
    with an entry read whole that is still not the one the caller asked for (None: nothing)."""
    if _private_root() is None:
        return None
    directory = entry_dir(key)
    try:
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read the cache entry %s (%s); compiling the kernel", directory, exc)
        return None
    try:
        artifact = _read(handle, key)
        problem = expect(artifact) if expect is not None else None
        if problem is not None:
            raise _Damaged(problem)
        return artifact
    except _Damaged as exc:
        _discard(directory, os.fstat(handle).st_ino, str(exc))
        return None
    finally:
        os.close(handle)


def store(key: str, source: str, cubin: bytes, signature: KernelSignature, options: CompileOptions) -> Path | None:
    """Write an entry atomically (when another process stored the key first, its entry wins);
    the entry's directory, or None when it could not be written (logged: it costs only a compile)."""
    if _private_root() is None:
        return None
    final = entry_dir(key)
    files = Artifact(signature, source, cubin, options).files()
    staging = None
    try:
        final.parent.mkdir(mode=0o700, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=final.parent))
        _write_entry(staging, key, files)
        try:
            os.rename(staging, final)
        except OSError:
            if lookup(key) is not None:
                log.debug("cache entry %s was stored concurrently; keeping that one", key[:16])
                return final
            os.rename(staging, final)  # the entry there was damaged and is discarded now
    except OSError as exc:
        log.warning("could not store the cache entry %s: %s", final, exc)
        return None
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return final


def _write_entry(directory: Path, key: str, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (directory / name).write_bytes(data)
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    manifest = {"version": MANIFEST_VERSION, "key": key, "files": digests}
    (directory / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n")


def _read(handle: int, key: str) -> Artifact:
    files = {}
    for name, digest in _manifest(_read_at(handle, MANIFEST_FILE), key).items():
        data = _read_at(handle, name)
        if hashlib.sha256(data).hexdigest() != digest:
            raise _Damaged(f"{name} does not match its hash in the manifest")
        files[name] = data
    try:
        return Artifact.from_files(files, "it")
    except LaunchError as exc:
        raise _Damaged(str(exc)) from None


def _read_at(handle: int, name: str) -> bytes:
    try:
        descriptor = os.open(name, os.O_RDONLY, dir_fd=handle)
    except OSError as exc:
        raise _Damaged(f"cannot open {name}: {exc.strerror}") from None
    with os.fdopen(descriptor, "rb") as file:
        return file.read()


def _manifest(data: bytes, key: str) -> dict[str, str]:
    """The manifest's file name -> SHA-256 table, checked to be this key's."""
    try:
        manifest = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _Damaged(f"{MANIFEST_FILE} is not JSON text") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if (not isinstance(files, dict) or manifest.get("version") != MANIFEST_VERSION or manifest.get("key") != key
            or not all(isinstance(n, str) and _PLAIN_NAME.match(n) and isinstance(d, str) for n, d in files.items())):
        raise _Damaged(f"{MANIFEST_FILE} is not a version-{MANIFEST_VERSION} manifest of this key")
    return files


def _discard(directory: Path, inode: int, reason: str) -> None:
    log.warning("discarding the damaged cache entry %s (%s); compiling the kernel again", directory, reason)
    try:
        trash = tempfile.mkdtemp(prefix=".discarded-", dir=directory.parent)
    except OSError as exc:
        log.warning("could not remove the damaged cache entry %s: %s", directory, exc)
        return
    try:
        if os.stat(directory).st_ino == inode:  # not an entry another process has stored since
            os.rename(directory, os.path.join(trash, "entry"))
    except FileNotFoundError:
        pass  # another process discarded it first
    except OSError as exc:
        log.warning("could not remove the damaged cache entry %s: %s", directory, exc)
    finally:
        shutil.rmtree(trash, ignore_errors=True)
