"""CUDA C++ source -> cubin with NVRTC (cuda.bindings.nvrtc). Needs no GPU.

Flags: ``-arch=sm_XX`` (a real arch, so NVRTC emits a cubin), ``-std=c++17``,
``-default-device``, ``--fmad=true|false``, ``-use_fast_math`` only when asked,
``-lineinfo``, and include dirs: the `nvidia-cuda-runtime` wheel's headers
first (they match the pip NVRTC), then the CUDA toolkit's when one is installed.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from tilemlir.diagnostics import CompileError, Diagnostic
from tilemlir.runtime import driver, toolchain

log = logging.getLogger("tilemlir.runtime")

DEFAULT_ARCH = "sm_90a"
_ARCH = re.compile(r"^(?:sm_|compute_)?(\d+)([af]?)$")


@dataclass(frozen=True)
class CompileOptions:
    """What NVRTC is asked to do; part of the cache key."""

    arch: str = DEFAULT_ARCH
    fmad: bool = True
    fast_math: bool = False
    lineinfo: bool = True

    def flags(self) -> list[str]:
        flags = [f"-arch={self.arch}", "-std=c++17", "-default-device", f"--fmad={'true' if self.fmad else 'false'}"]
        if self.fast_math:
            flags.append("-use_fast_math")
        if self.lineinfo:
            flags.append("-lineinfo")
        flags += [f"-I{d}" for d in include_dirs()]
        return flags

    def to_dict(self) -> dict[str, object]:
        return {"arch": self.arch, "fmad": self.fmad, "fast_math": self.fast_math, "lineinfo": self.lineinfo}


def normalize_arch(arch: str) -> str:
    """'90a', 'sm_90a', 'compute_90a' -> 'sm_90a'; CompileError for archs NVRTC cannot target."""
    match = _ARCH.match(arch.strip()) if isinstance(arch, str) else None
    if not match:
        raise CompileError(f"arch {arch!r} is not of the form sm_XX (e.g. sm_90a)")
    number, suffix = int(match.group(1)), match.group(2)
    supported = supported_archs()
    if number not in supported:
        raise CompileError(f"arch sm_{number}{suffix} is not supported by NVRTC {nvrtc_version()} "
                           f"(supported: {', '.join(f'sm_{a}' for a in supported)})")
    return f"sm_{number}{suffix}"


def resolve_arch(arch: str | None) -> str:
    """The arch a kernel is built for: `arch` normalized, else the current GPU's (`default_arch`)."""
    return normalize_arch(arch or default_arch())


def default_arch() -> str:
    """The current device's arch ('sm_90a' on Hopper), or sm_90a when no GPU is usable."""
    try:
        return driver.current_arch()
    except Exception as exc:  # no driver, no device: compile for the H200
        _warn_fallback(f"{type(exc).__name__}: {exc}")
        return DEFAULT_ARCH


@functools.cache
def _warn_fallback(reason: str) -> None:
    """Once per process and reason: a kernel compiled for no GPU this machine has may not be the one wanted."""
    log.warning("no usable GPU (%s): compiling CUDA for %s (Hopper); pass arch='sm_XX' to compile for "
                "another GPU", reason, DEFAULT_ARCH)


def nvrtc_version() -> str:
    """"major.minor" of the NVRTC that compiles (memoized on disk, see toolchain.py)."""
    return toolchain.nvrtc_facts()[0]


def supported_archs() -> tuple[int, ...]:
    return toolchain.nvrtc_facts()[1]


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """Header dirs: the pip CUDA runtime headers, then the toolkit's (CUDA_HOME, /usr/local/cuda)."""
    dirs: list[str] = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        wheel = find_nvidia_header_directory("cudart")
        if wheel:
            dirs.append(wheel)
    except Exception as exc:  # pathfinder missing or no header dir: fall back to the toolkit
        log.debug("cuda.pathfinder found no cudart headers: %s", exc)
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_runtime.h").is_file():
            toolkit = str(Path(root) / "include")
            if toolkit not in dirs:
                dirs.append(toolkit)
            break
    return tuple(dirs)


def compile_cuda(source: str, name: str, options: CompileOptions) -> bytes:
    """Compile `source` (program name `<name>.cu`) to a cubin; CompileError with NVRTC's log on failure."""
    start = time.perf_counter()
    cubin = _compile(source, name, options, options.flags(), "CUBIN")
    log.debug("NVRTC compiled %s.cu for %s in %.3f s (%d-byte cubin)", name, options.arch,
              time.perf_counter() - start, len(cubin))
    return cubin


def compile_ptx(source: str, name: str, options: CompileOptions) -> str:
    """The PTX NVRTC makes of `source` for the virtual arch of `options.arch` (for
    reading what the flags did; launches use `compile_cuda`'s cubin)."""
    virtual = options.arch.replace("sm_", "compute_", 1)
    flags = [f"-arch={virtual}", *options.flags()[1:]]
    return _compile(source, name, options, flags, "PTX").rstrip(b"\x00").decode()


def ptxas_report(source: str, name: str, options: CompileOptions) -> str:
    """ptxas's verbose report on `source` compiled as `compile_cuda` would (registers, spills, and the
    advisories it prints only there, e.g. that it serialized wgmma instructions)."""
    reports: list[str] = []
    _compile(source, name, options, [*options.flags(), "--ptxas-options=-v"], "CUBIN", reports)
    return reports[0]


def _compile(source: str, name: str, options: CompileOptions, flags: list[str], output: str,
             reports: list[str] | None = None) -> bytes:
    nvrtc = toolchain.bindings()
    created = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    program = toolchain.check(created, "program creation")
    try:
        encoded = [f.encode() for f in flags]
        (err,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        program_log = _program_log(nvrtc, program)
        if int(err) != 0:
            raise CompileError(Diagnostic(
                "error", f"NVRTC could not compile {name}.cu for {options.arch}:\n{program_log.rstrip()}"))
        if program_log.strip():
            log.debug("NVRTC log for %s.cu:\n%s", name, program_log.rstrip())
        if reports is not None:
            reports.append(program_log)
        size = toolchain.check(getattr(nvrtc, f"nvrtcGet{output}Size")(program), f"{output} size query")
        image = b" " * size
        toolchain.check((getattr(nvrtc, f"nvrtcGet{output}")(program, image)[0], None), f"{output} read")
        return image
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _program_log(nvrtc, program) -> str:
    size = toolchain.check(nvrtc.nvrtcGetProgramLogSize(program), "log size query")
    if size <= 1:
        return ""
    buffer = b" " * size
    toolchain.check((nvrtc.nvrtcGetProgramLog(program, buffer)[0], None), "log read")
    return buffer.rstrip(b"\x00").decode(errors="replace")
