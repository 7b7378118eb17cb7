"""Artifacts: the directory format of a compiled kernel, readable without MLIR.

Layout (the disk cache uses the same one)::

    <name>.cu         the CUDA source the cubin was built from
    <name>.cubin      NVRTC's output
    signature.json    the KernelSignature (schema in signature.py)
    build.json        arch, fmad, fast_math, lineinfo, NVRTC and tilemlir versions
    <name>_host.cu    standalone launcher (see host_launcher.py)

This module reads and writes those files and makes no kernels (builder.py
does). Reading checks what it reads: UTF-8 text, a signature and build
options of the right shape, and a cubin that is a whole CUDA ELF image
(header, section and program tables and every section inside the file), so a
truncated or garbage file is a LaunchError here, not a fault at the first
launch.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import tilemlir
from tilemlir.diagnostics import LaunchError
from tilemlir.runtime.host_launcher import host_launcher_source
from tilemlir.runtime.nvrtc import CompileOptions, nvrtc_version
from tilemlir.runtime.signature import KernelSignature, SignatureError

SIGNATURE_FILE = "signature.json"
BUILD_FILE = "build.json"
_ARCH = re.compile(r"^sm_\d+[af]?$")
_OPTION_TYPES = {"arch": str, "fmad": bool, "fast_math": bool, "lineinfo": bool}
_EM_CUDA, _SHT_NOBITS = 190, 8


class _Unreadable(Exception):
    """Why files do not make an artifact."""


@dataclass(frozen=True)
class Artifact:
    """What an artifact holds: a kernel's signature, CUDA source, cubin and compile options."""

    signature: KernelSignature
    source: str = field(repr=False)
    cubin: bytes = field(repr=False)
    options: CompileOptions

    def files(self) -> dict[str, bytes]:
        """The artifact's files, by name."""
        name = self.signature.name
        build = dict(self.options.to_dict(), nvrtc=nvrtc_version(), tilemlir=tilemlir_version())
        return {
            f"{name}.cu": self.source.encode(),
            f"{name}.cubin": self.cubin,
            SIGNATURE_FILE: self.signature.to_json().encode(),
            BUILD_FILE: (json.dumps(build, indent=2) + "\n").encode(),
            f"{name}_host.cu": host_launcher_source(self.signature).encode(),
        }

    def write(self, directory: Path) -> Path:
        """Write the files into `directory` (made when missing); returns it."""
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in self.files().items():
            (directory / name).write_bytes(data)
        return directory

    @classmethod
    def read(cls, directory: Path) -> "Artifact":
        """The artifact stored in `directory`; LaunchError naming it and what is wrong when it holds none."""
        files: dict[str, bytes] = {}
        try:
            files[SIGNATURE_FILE] = (directory / SIGNATURE_FILE).read_bytes()
            name = _signature(files).name
            for file in (f"{name}.cu", f"{name}.cubin", BUILD_FILE):
                if file != BUILD_FILE or (directory / file).is_file():  # artifacts from before build.json lack it
                    files[file] = (directory / file).read_bytes()
        except (OSError, _Unreadable) as exc:
            raise LaunchError(f"{directory} is not a loadable tilemlir artifact: {exc}") from None
        return cls.from_files(files, str(directory))

    @classmethod
    def from_files(cls, files: Mapping[str, bytes], where: str) -> "Artifact":
        """The artifact made of `files` (name -> bytes); LaunchError naming `where` and what is
        wrong when they do not make one."""
        try:
            signature = _signature(files)
            source = _text(files, f"{signature.name}.cu")
            cubin = _file(files, f"{signature.name}.cubin")
            _check_cubin(cubin)
            options = _options(files)
        except _Unreadable as exc:
            raise LaunchError(f"{where} is not a loadable tilemlir artifact: {exc}") from None
        return cls(signature, source, cubin, options)


def _check_cubin(image: bytes) -> None:
    """_Unreadable unless `image` is a whole 64-bit little-endian CUDA ELF image."""
    if len(image) < 64 or image[:6] != b"\x7fELF\x02\x01":
        raise _Unreadable("the cubin is not a 64-bit ELF image")
    (machine,) = struct.unpack_from("<H", image, 18)
    if machine != _EM_CUDA:
        raise _Unreadable(f"the cubin's ELF machine is {machine}, not CUDA ({_EM_CUDA})")
    phoff, shoff = struct.unpack_from("<QQ", image, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", image, 0x36)
    if phoff + phnum * phentsize > len(image) or shoff + shnum * shentsize > len(image) or shentsize < 40:
        raise _Unreadable(f"the cubin is truncated ({len(image)} bytes; its tables end past that)")
    for index in range(shnum):
        (kind,) = struct.unpack_from("<I", image, shoff + index * shentsize + 4)
        offset, size = struct.unpack_from("<QQ", image, shoff + index * shentsize + 24)
        if kind != _SHT_NOBITS and offset + size > len(image):
            raise _Unreadable(f"the cubin is truncated ({len(image)} bytes; section {index} ends at {offset + size})")


def _file(files: Mapping[str, bytes], name: str) -> bytes:
    if name not in files:
        raise _Unreadable(f"it has no {name}")
    return files[name]


def _text(files: Mapping[str, bytes], name: str) -> str:
    try:
        return _file(files, name).decode()
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"{name} is not UTF-8 text ({exc})") from None


def _signature(files: Mapping[str, bytes]) -> KernelSignature:
    try:
        return KernelSignature.from_json(_text(files, SIGNATURE_FILE))
    except SignatureError as exc:
        raise _Unreadable(f"{SIGNATURE_FILE}: {exc}") from None


def _options(files: Mapping[str, bytes]) -> CompileOptions:
    """The CompileOptions recorded in build.json (the defaults without one)."""
    if BUILD_FILE not in files:
        return CompileOptions()
    try:
        build = json.loads(_text(files, BUILD_FILE))
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"{BUILD_FILE} is not valid JSON: {exc}") from None
    if not isinstance(build, dict):
        raise _Unreadable(f"{BUILD_FILE} is not a JSON object")
    known = {k: build[k] for k in _OPTION_TYPES if k in build}
    for key, value in known.items():
        if type(value) is not _OPTION_TYPES[key] or (key == "arch" and not _ARCH.match(value)):
            raise _Unreadable(f"{BUILD_FILE}: {key} {value!r} is not a valid {key}")
    return CompileOptions(**known)


def tilemlir_version() -> str:
    return getattr(tilemlir, "__version__", "unknown")
