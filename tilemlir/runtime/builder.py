"""Every factory of CompiledKernels, and the writer of their artifacts.

`build` compiles CUDA source + signature through the disk cache and NVRTC,
`load` reads an artifact directory (no MLIR, no NVRTC), `cached` reads a
disk-cache entry, and `export` writes a kernel's artifact. Each kernel made
here gets `build` and `export`, for its `with_cuda_source` and `export`.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Callable

from tilemlir.config import settings
from tilemlir.diagnostics import CompileError
from tilemlir.runtime import cache
from tilemlir.runtime.artifact import Artifact
from tilemlir.runtime.cuda_decl import check_declaration
from tilemlir.runtime.kernel import CompiledKernel, override_file_name
from tilemlir.runtime.nvrtc import CompileOptions, compile_cuda, resolve_arch
from tilemlir.runtime.signature import KernelSignature

log = logging.getLogger("tilemlir.runtime")


def build(source: str, signature: KernelSignature, *, arch: str | None = None, fmad: bool = True,
          fast_math: bool = False, use_cache: bool = True, apply_override: bool = True,
          origin: str = "the CUDA source") -> CompiledKernel:
    """Compile `source`, whose kernel follows `signature`, for `arch` (default:
    the current GPU's, else sm_90a). The source's kernel must take the signature's
    parameters (`cuda_decl.check_declaration`; `origin` names the source in its error).

    With ``TILEMLIR_CUDA_OVERRIDE`` set and holding this source's `override_file_name`,
    that file is compiled instead of `source` (unless `apply_override` is False).
    With ``TILEMLIR_DUMP_DIR`` set, the source compiled is written there under that name.
    Raises CompileError with NVRTC's log when the source does not compile."""
    start = time.perf_counter()
    config = settings()
    generated_name = override_file_name(source, signature)
    if apply_override and config.cuda_override is not None:
        source, origin = _override(config.cuda_override, generated_name, signature.name, source, origin)
    check_declaration(source, signature, origin)
    if config.dump_dir is not None:
        _dump(config.dump_dir, generated_name, source)
    options = CompileOptions(arch=resolve_arch(arch), fmad=fmad, fast_math=fast_math)
    caching = use_cache and not config.disable_cache
    key = cache.make_key(source, options, extra=signature.to_json()) if caching else None
    found = None
    if key is not None:
        found = cache.lookup(key, lambda hit: _differences(hit, source, signature, options))
        if found is not None:
            log.debug("cache hit for %s (%s): %.4f s", signature.name, cache.entry_dir(key),
                      time.perf_counter() - start)
    if found is None:
        cubin = compile_cuda(source, signature.name, options)
        if key is not None:
            cache.store(key, source, cubin, signature, options)
        log.debug("cold compile of %s for %s: %.3f s", signature.name, options.arch, time.perf_counter() - start)
        found = Artifact(signature, source, cubin, options)
    kernel = _kernel(found)
    kernel.override_file = generated_name
    return kernel


def load(directory: str | Path) -> CompiledKernel:
    """The CompiledKernel stored in an artifact directory (imports no MLIR)."""
    return _kernel(Artifact.read(Path(directory)))


def cached(key: str, expect: Callable[[Artifact], str | None] | None = None) -> CompiledKernel | None:
    """The CompiledKernel of the disk-cache entry under `key`, or None (see `cache.lookup` for `expect`)."""
    found = cache.lookup(key, expect)
    return None if found is None else _kernel(found)


def export(kernel: CompiledKernel, directory: Path) -> Path:
    """Write `kernel`'s artifact into `directory`; returns it."""
    return Artifact(kernel.signature, kernel.cuda_source(), kernel.cubin, kernel.options).write(directory)


def _kernel(found: Artifact) -> CompiledKernel:
    return CompiledKernel(found.signature, found.source, found.cubin, found.options, build=build, export=export)


def _differences(found: Artifact, source: str, signature: KernelSignature, options: CompileOptions) -> str | None:
    """What makes an artifact read from the cache another than the one `build` was asked for, or None."""
    for what, stored, wanted in (("signature", found.signature, signature), ("source", found.source, source),
                                 ("compile options", found.options, options)):
        if stored != wanted:
            return f"it holds another {what} than the kernel's"
    return None


def _override(directory: Path, name: str, kernel: str, source: str, origin: str) -> tuple[str, str]:
    """The source to compile and its origin: the override file `name` in `directory` if there is one."""
    path = directory / name
    if path.is_file():
        log.warning("TILEMLIR_CUDA_OVERRIDE: compiling %s instead of the generated source of %s", path, kernel)
        origin = f"the TILEMLIR_CUDA_OVERRIDE file {path}"
        try:
            return path.read_text(), origin
        except UnicodeDecodeError as exc:
            raise CompileError(f"{origin} is not UTF-8 text ({exc})") from None
    pattern = re.compile(rf"{re.escape(kernel)}(-[0-9a-f]{{12}})?\.cu")
    others = sorted(p.name for p in directory.glob(f"{kernel}*.cu") if pattern.fullmatch(p.name))
    if others:
        log.warning("TILEMLIR_CUDA_OVERRIDE: %s has %s but not %s, the override file of kernel %s as generated now "
                    "(the name hashes the generated source and signature, so a file made for another kernel of that "
                    "name, or for this one before its source changed, does not apply); compiling the generated source",
                    directory, ", ".join(others), name, kernel)
    else:
        log.debug("TILEMLIR_CUDA_OVERRIDE: no %s in %s; compiling the generated source", name, directory)
    return source, origin


def _dump(directory: Path, name: str, source: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(source)
    log.debug("TILEMLIR_DUMP_DIR: wrote %s", path)
