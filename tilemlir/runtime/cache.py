"""The disk cache of compiled kernels.

Entries are artifact directories (see artifact.py) under
``<cache dir>/v1/<key[:2]>/<key>``, where the cache dir is
`tilemlir.config.settings().cache_dir` (``TILEMLIR_CACHE_DIR``, default
``~/.cache/tilemlir``). A key hashes the text the kernel was made from
(CUDA source, or IR for callers that look up before generating source),
the compile options including the arch, the NVRTC version and the tilemlir
version. An entry is written in a private temporary directory and renamed
into place, so readers never see half an entry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from tilemlir.config import settings
from tilemlir.runtime.artifact import SIGNATURE_FILE, tilemlir_version, write_artifact
from tilemlir.runtime.nvrtc import CompileOptions, nvrtc_version
from tilemlir.runtime.signature import KernelSignature

log = logging.getLogger("tilemlir.runtime")
LAYOUT_VERSION = "v1"


def root() -> Path:
    return settings().cache_dir / LAYOUT_VERSION


def make_key(text: str, options: CompileOptions, extra: str = "") -> str:
    """The cache key of a kernel made from `text` with `options`; `extra` adds
    anything else the result depends on (e.g. the signature's JSON)."""
    material = json.dumps({
        "text": text,
        "extra": extra,
        "options": options.to_dict(),
        "nvrtc": nvrtc_version(),
        "tilemlir": tilemlir_version(),
    }, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def entry_dir(key: str) -> Path:
    return root() / key[:2] / key


def lookup(key: str) -> Path | None:
    """The artifact directory stored under `key`, or None."""
    directory = entry_dir(key)
    return directory if (directory / SIGNATURE_FILE).is_file() else None


def store(key: str, source: str, cubin: bytes, signature: KernelSignature, options: CompileOptions) -> Path:
    """Write an entry atomically; when another process stored the key first, its entry wins."""
    final = entry_dir(key)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=final.parent))
    try:
        write_artifact(staging, signature, source, cubin, options)
        os.rename(staging, final)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if lookup(key) is None:
            raise
        log.debug("cache entry %s was stored concurrently; keeping that one", key[:16])
    return final
