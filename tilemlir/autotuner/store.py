"""The best configs on disk, next to the kernel cache.

    <cache dir>/autotune/v1/<tuning id[:2]>/<tuning id>/inputs.json   the kernel's arguments
    <cache dir>/autotune/v1/<tuning id[:2]>/<tuning id>/<key id>.json  one tuning's choice

The tuning id hashes what the choice depends on besides the key: the
factory (its source and everything it reads, as the source-level kernel
cache sees it, which includes the compiler's own files), its fixed
arguments, the config space, the key's names, the compile options, the GPU
(name and arch) and the NVRTC and tilemlir versions. `inputs.json` holds
the kernel's argument list (names, kinds, shapes with symbol names), so a
new process computes a call's key without compiling anything. A key id
hashes the key's values. Files are written to a temporary name and renamed,
so a reader never sees half of one; an unreadable file counts as absent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from tilemlir.config import settings

log = logging.getLogger("tilemlir.autotuner")
LAYOUT_VERSION = "v1"
INPUTS_FILE = "inputs.json"


def as_json(value: Any) -> Any:
    """`value` as it reads back from JSON (tuples become lists; anything else JSON lacks, its repr)."""
    return json.loads(json.dumps(value, default=repr))


def digest(material: Any) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=repr).encode()).hexdigest()


class Store:
    def __init__(self, tuning_id: str):
        self.directory = settings().cache_dir / "autotune" / LAYOUT_VERSION / tuning_id[:2] / tuning_id

    def inputs(self) -> dict | None:
        found = self._read(self.directory / INPUTS_FILE)
        return found if isinstance(found, dict) and isinstance(found.get("inputs"), list) else None

    def save_inputs(self, inputs: dict) -> None:
        self._write(self.directory / INPUTS_FILE, inputs)

    def choice(self, key: list) -> dict | None:
        found = self._read(self._key_file(key))
        if not isinstance(found, dict) or found.get("key") != key or not isinstance(found.get("config"), dict):
            return None
        return found

    def save_choice(self, key: list, record: dict) -> Path:
        path = self._key_file(key)
        self._write(path, {**record, "key": key})
        return path

    def _key_file(self, key: list) -> Path:
        return self.directory / f"{digest(key)[:32]}.json"

    @staticmethod
    def _read(path: Path) -> Any:
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable autotune record %s: %s", path, exc)
            return None

    @staticmethod
    def _write(path: Path, data: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, staging = tempfile.mkstemp(prefix=f".{path.stem}-", dir=path.parent)
        try:
            with os.fdopen(handle, "w") as file:
                json.dump(data, file, indent=2, sort_keys=True, default=repr)
                file.write("\n")
            os.replace(staging, path)
        except BaseException:
            Path(staging).unlink(missing_ok=True)
            raise
