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
    Knob("TILEMLIR_DUMP_DIR", "if set, dump the IR after every pass and every kernel's CUDA source here"),
    Knob("TILEMLIR_CUDA_OVERRIDE", "directory of hand-edited <kernel>.cu files used instead of the generated source"),
    Knob("TILEMLIR_DISABLE_CACHE", "1 disables the disk cache"),
    Knob("TILEMLIR_PROVER_TIMEOUT_MS", "per-query Z3 timeout in milliseconds (default 50)"),
    Knob("TILEMLIR_TRACEBACK", "1 adds the Python traceback to internal compiler errors (tile-opt, pass pipelines)"),
    Knob("TILEMLIR_AUTOTUNE", "on (default): @tilemlir.autotune reuses the best config stored on disk; force: tune "
                              "again and store the new choice; off: no tuning, the first config that compiles"),
    Knob("TILEMLIR_COMPILE_WORKERS", "worker processes of a parallel compile (default: the CPUs this process may "
                                     "use, at most one per config); 1 compiles in-process"),
)

AUTOTUNE_MODES = ("on", "off", "force")


@dataclass(frozen=True)
class Settings:
    cache_dir: Path
    dump_dir: Path | None
    cuda_override: Path | None
    disable_cache: bool
    prover_timeout_ms: int
    traceback: bool = False
    autotune: str = "on"
    compile_workers: int | None = None


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def settings() -> Settings:
    env = os.environ
    default_cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tilemlir"
    return Settings(
        cache_dir=_path(env.get("TILEMLIR_CACHE_DIR")) or default_cache,
        dump_dir=_path(env.get("TILEMLIR_DUMP_DIR")),
        cuda_override=_path(env.get("TILEMLIR_CUDA_OVERRIDE")),
        disable_cache=_flag(env.get("TILEMLIR_DISABLE_CACHE")),
        prover_timeout_ms=int(env.get("TILEMLIR_PROVER_TIMEOUT_MS") or 50),
        traceback=_flag(env.get("TILEMLIR_TRACEBACK")),
        autotune=_autotune_mode(env.get("TILEMLIR_AUTOTUNE")),
        compile_workers=_positive_int("TILEMLIR_COMPILE_WORKERS", env.get("TILEMLIR_COMPILE_WORKERS")),
    )


def _autotune_mode(value: str | None) -> str:
    mode = (value or "on").strip().lower()
    if mode not in AUTOTUNE_MODES:
        raise ValueError(f"TILEMLIR_AUTOTUNE must be one of {', '.join(AUTOTUNE_MODES)}, got {value!r}")
    return mode


def _positive_int(name: str, value: str | None) -> int | None:
    if not (value or "").strip():
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return number
