"""Every TILEMLIR_* environment knob, typed, in one place.

Read the environment through `settings()`; nothing else in tilemlir looks at
`os.environ` for these names.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from tilemlir.diagnostics import ConfigError


@dataclass(frozen=True)
class Knob:
    name: str
    help: str


# Every query of the benchmark kernels and the examples needs under 1,000 units (the most: 959).
# A query that needs more than this runs out in about 40 ms on an idle machine.
DEFAULT_PROVER_RLIMIT = 500_000
_RETIRED = {"TILEMLIR_PROVER_TIMEOUT_MS": "TILEMLIR_PROVER_RLIMIT"}

KNOBS = (
    Knob("TILEMLIR_CACHE_DIR", "directory of the compiled-kernel disk cache (default: ~/.cache/tilemlir)"),
    Knob("TILEMLIR_DUMP_DIR", "if set, dump the IR after every pass and every kernel's CUDA source "
                              "(as <kernel>-<hash>.cu) here"),
    Knob("TILEMLIR_CUDA_OVERRIDE", "directory of hand-edited <kernel>-<hash>.cu files (kernel.override_file) used "
                                   "instead of the generated source"),
    Knob("TILEMLIR_DISABLE_CACHE", "1 disables the disk cache"),
    Knob("TILEMLIR_PROVER_RLIMIT", f"per-query Z3 resource limit (rlimit), a deterministic work budget (default {DEFAULT_PROVER_RLIMIT})"),
    Knob("TILEMLIR_LOG_COMPILES", "1 logs one INFO line per compile on the 'tilemlir.compile' logger (kernel, target "
                                  "and arch, cache hit or miss, seconds per stage), to stderr unless logging is "
                                  "configured"),
    Knob("TILEMLIR_TRACEBACK", "1 adds the Python traceback to internal compiler errors (tile-opt, pass pipelines)"),
    Knob("TILEMLIR_AUTOTUNE", "on (default): @tilemlir.autotune reuses the best config stored on disk; force: tune "
                              "again and store the new choice; off: no tuning, the first config that compiles"),
    Knob("TILEMLIR_INTERPRET", "1 (or tile) runs every @tilemlir.jit kernel on the CPU target whatever target it "
                               "asks for, taking numpy arrays or torch CPU tensors; thread: the CPU target's "
                               "thread level (the GPU lowering, simulated)"),
    Knob("TILEMLIR_COMPILE_WORKERS", "worker processes of a parallel compile (default: the CPUs this process may "
                                     "use, at most one per config); 1 compiles in-process"),
)

AUTOTUNE_MODES = ("on", "off", "force")
_INTERPRET_LEVELS = {"1": "tile", "true": "tile", "yes": "tile", "on": "tile", "tile": "tile", "thread": "thread",
                     "0": None, "false": None, "no": None, "off": None, "": None}


@dataclass(frozen=True)
class Settings:
    cache_dir: Path
    state_dir: Path  # $XDG_STATE_HOME/tilemlir: what must not live in the cache (native.py)
    dump_dir: Path | None
    cuda_override: Path | None
    disable_cache: bool
    prover_rlimit_text: str | None
    traceback: bool = False
    log_compiles: bool = False
    autotune_text: str | None = None
    compile_workers_text: str | None = None
    interpret_text: str | None = None

    @property
    def prover_rlimit(self) -> int:
        """The prover's per-query budget; a ConfigError only for whoever needs it, when it is not a
        count Z3 takes (an unsigned 32-bit one)."""
        return _count("TILEMLIR_PROVER_RLIMIT", self.prover_rlimit_text, DEFAULT_PROVER_RLIMIT, most=2**32 - 1)

    @property
    def autotune(self) -> str:
        """on, off or force; a ConfigError for whoever tunes, when it is none of them."""
        mode = (self.autotune_text or "on").strip().lower()
        if mode not in AUTOTUNE_MODES:
            raise ConfigError(f"TILEMLIR_AUTOTUNE must be one of {', '.join(AUTOTUNE_MODES)}, "
                              f"got {self.autotune_text!r}")
        return mode

    @property
    def interpret(self) -> str | None:
        """The CPU target's level every kernel compiles for (TILEMLIR_INTERPRET), None when it is off; a
        ConfigError for whoever compiles, when it is no level or flag."""
        text = (self.interpret_text or "").strip().lower()
        if text not in _INTERPRET_LEVELS:
            raise ConfigError(f"TILEMLIR_INTERPRET must be 1 (or tile), thread, or 0, got {self.interpret_text!r}")
        return _INTERPRET_LEVELS[text]

    @property
    def compile_workers(self) -> int | None:
        """Worker processes of a parallel compile (None: the default); a ConfigError when not a count."""
        if not (self.compile_workers_text or "").strip():
            return None
        return _count("TILEMLIR_COMPILE_WORKERS", self.compile_workers_text, 0, most=2**16)


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _count(name: str, value: str | None, default: int, most: int) -> int:
    """A whole number from 1 to `most` (`_` may group digits), or `default` when unset."""
    if not value:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if not 1 <= number <= most:
        raise ConfigError(f"{name} must be an integer from 1 to {most}, got {value!r}")
    return number


def _warn_retired(env) -> None:
    for old, new in _RETIRED.items():
        if old in env:
            warnings.warn(f"{old} is no longer read: the prover's budget is {new}, a deterministic "
                          "resource limit (a wall-clock timeout made builds depend on the machine's load)")


def settings() -> Settings:
    env = os.environ
    _warn_retired(env)
    default_cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tilemlir"
    return Settings(
        cache_dir=_path(env.get("TILEMLIR_CACHE_DIR")) or default_cache,
        state_dir=Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "tilemlir",
        dump_dir=_path(env.get("TILEMLIR_DUMP_DIR")),
        cuda_override=_path(env.get("TILEMLIR_CUDA_OVERRIDE")),
        disable_cache=_flag(env.get("TILEMLIR_DISABLE_CACHE")),
        prover_rlimit_text=env.get("TILEMLIR_PROVER_RLIMIT"),
        traceback=_flag(env.get("TILEMLIR_TRACEBACK")),
        log_compiles=_flag(env.get("TILEMLIR_LOG_COMPILES")),
        autotune_text=env.get("TILEMLIR_AUTOTUNE"),
        compile_workers_text=env.get("TILEMLIR_COMPILE_WORKERS"),
        interpret_text=env.get("TILEMLIR_INTERPRET"),
    )

