"""Every TILEMLIR_* environment knob, typed, in one place.

Read the environment through `settings()`; nothing else in tilemlir looks at
`os.environ` for these names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Knob:
    name: str
    help: str


KNOBS = (
    Knob("TILEMLIR_CACHE_DIR", "directory of the compiled-kernel disk cache (default: ~/.cache/tilemlir)"),
    Knob("TILEMLIR_DUMP_DIR", "if set, dump the IR after every pass and every kernel's CUDA source "
                              "(as <kernel>-<hash>.cu) here"),
    Knob("TILEMLIR_CUDA_OVERRIDE", "directory of hand-edited <kernel>-<hash>.cu files (kernel.override_file) used "
                                   "instead of the generated source"),
    Knob("TILEMLIR_DISABLE_CACHE", "1 disables the disk cache"),
    Knob("TILEMLIR_PROVER_TIMEOUT_MS", "per-query Z3 timeout in milliseconds (default 50)"),
    Knob("TILEMLIR_TRACEBACK", "1 adds the Python traceback to internal compiler errors (tile-opt, pass pipelines)"),
)


@dataclass(frozen=True)
class Settings:
    cache_dir: Path
    state_dir: Path  # $XDG_STATE_HOME/tilemlir: what must not live in the cache (native.py)
    dump_dir: Path | None
    cuda_override: Path | None
    disable_cache: bool
    prover_timeout_ms: int
    traceback: bool = False


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def settings() -> Settings:
    env = os.environ
    default_cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tilemlir"
    return Settings(
        cache_dir=_path(env.get("TILEMLIR_CACHE_DIR")) or default_cache,
        state_dir=Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "tilemlir",
        dump_dir=_path(env.get("TILEMLIR_DUMP_DIR")),
        cuda_override=_path(env.get("TILEMLIR_CUDA_OVERRIDE")),
        disable_cache=_flag(env.get("TILEMLIR_DISABLE_CACHE")),
        prover_timeout_ms=int(env.get("TILEMLIR_PROVER_TIMEOUT_MS") or 50),
        traceback=_flag(env.get("TILEMLIR_TRACEBACK")),
    )
