"""`build`: CUDA source + signature -> CompiledKernel, through the disk cache and NVRTC."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from tilemlir.config import settings
from tilemlir.runtime import cache
from tilemlir.runtime.kernel import CompiledKernel
from tilemlir.runtime.nvrtc import CompileOptions, compile_cuda, resolve_arch
from tilemlir.runtime.signature import KernelSignature

log = logging.getLogger("tilemlir.runtime")


def build(source: str, signature: KernelSignature, *, arch: str | None = None, fmad: bool = True,
          fast_math: bool = False, use_cache: bool = True, apply_override: bool = True) -> CompiledKernel:
    """Compile `source`, whose kernel follows `signature`, for `arch` (default:
    the current GPU's, else sm_90a).

    With ``TILEMLIR_CUDA_OVERRIDE`` set and holding ``<name>.cu``, that file
    is compiled instead of `source` (unless `apply_override` is False).
    With ``TILEMLIR_DUMP_DIR`` set, the source compiled is written there as ``<name>.cu``.
    Raises CompileError with NVRTC's log when the source does not compile."""
    start = time.perf_counter()
    config = settings()
    if apply_override and config.cuda_override is not None:
        override = config.cuda_override / f"{signature.name}.cu"
        if override.is_file():
            log.warning("TILEMLIR_CUDA_OVERRIDE: compiling %s instead of the generated source", override)
            source = override.read_text()
    if config.dump_dir is not None:
        _dump(config.dump_dir, signature.name, source)
    options = CompileOptions(arch=resolve_arch(arch), fmad=fmad, fast_math=fast_math)
    caching = use_cache and not config.disable_cache
    key = cache.make_key(source, options, extra=signature.to_json()) if caching else None
    if key is not None:
        kernel = cache.lookup(key, lambda hit: _differences(hit, source, signature, options))
        if kernel is not None:
            log.debug("cache hit for %s (%s): %.4f s", signature.name, cache.entry_dir(key),
                      time.perf_counter() - start)
            return kernel
    cubin = compile_cuda(source, signature.name, options)
    if key is not None:
        cache.store(key, source, cubin, signature, options)
    log.debug("cold compile of %s for %s: %.3f s", signature.name, options.arch, time.perf_counter() - start)
    return CompiledKernel(signature, source, cubin, options)


def _differences(kernel: CompiledKernel, source: str, signature: KernelSignature,
                 options: CompileOptions) -> str | None:
    """What makes a kernel read from the cache another than the one `build` was asked for, or None."""
    for what, found, wanted in (("signature", kernel.signature, signature), ("source", kernel.cuda_source(), source),
                                ("compile options", kernel.options, options)):
        if found != wanted:
            return f"it holds another {what} than the kernel's"
    return None


def _dump(directory: Path, name: str, source: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.cu"
    path.write_text(source)
    log.debug("TILEMLIR_DUMP_DIR: wrote %s", path)
