"""Artifact directories: a compiled kernel on disk, loadable without MLIR.

Layout (the disk cache uses the same one)::

    <name>.cu         the CUDA source the cubin was built from
    <name>.cubin      NVRTC's output
    signature.json    the KernelSignature (schema in signature.py)
    build.json        arch, fmad, fast_math, lineinfo, NVRTC and tilemlir versions
    <name>_host.cu    standalone launcher (see host_launcher.py)
"""

from __future__ import annotations

import json
from pathlib import Path

from tilemlir.errors import LaunchError
from tilemlir.runtime.host_launcher import host_launcher_source
from tilemlir.runtime.signature import KernelSignature, SignatureError

SIGNATURE_FILE = "signature.json"
BUILD_FILE = "build.json"


def write_artifact(directory: Path, signature: KernelSignature, source: str, cubin: bytes, options) -> Path:
    from tilemlir.runtime.nvrtc import nvrtc_version

    directory.mkdir(parents=True, exist_ok=True)
    name = signature.name
    (directory / f"{name}.cu").write_text(source)
    (directory / f"{name}.cubin").write_bytes(cubin)
    (directory / SIGNATURE_FILE).write_text(signature.to_json())
    build = dict(options.to_dict(), nvrtc=nvrtc_version(), tilemlir=tilemlir_version())
    (directory / BUILD_FILE).write_text(json.dumps(build, indent=2) + "\n")
    (directory / f"{name}_host.cu").write_text(host_launcher_source(signature))
    return directory


def load(directory: str | Path):
    """The CompiledKernel stored in an artifact directory (imports no MLIR)."""
    from tilemlir.runtime.kernel import CompiledKernel
    from tilemlir.runtime.nvrtc import CompileOptions

    directory = Path(directory)
    try:
        signature = KernelSignature.from_json((directory / SIGNATURE_FILE).read_text())
        source = (directory / f"{signature.name}.cu").read_text()
        cubin = (directory / f"{signature.name}.cubin").read_bytes()
        build = json.loads((directory / BUILD_FILE).read_text()) if (directory / BUILD_FILE).is_file() else {}
    except (OSError, SignatureError, json.JSONDecodeError) as exc:
        raise LaunchError(f"{directory} is not a loadable tilemlir artifact: {exc}") from None
    known = {k: build[k] for k in ("arch", "fmad", "fast_math", "lineinfo") if k in build}
    return CompiledKernel(signature, source, cubin, CompileOptions(**known))


def tilemlir_version() -> str:
    import tilemlir

    return getattr(tilemlir, "__version__", "unknown")
