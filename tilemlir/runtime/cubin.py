"""What a cubin says of its kernels: the registers ptxas gave each (no CUDA tools needed).

A CUDA ELF image keeps per-kernel properties in its `.nv.info` section as attribute records
(format byte, attribute byte, then a value whose size the format fixes or a 16-bit length gives);
EIATTR_REGCOUNT holds a kernel's symbol index and its register count per thread.
"""

from __future__ import annotations

import struct

_SHT_SYMTAB = 2
_EIATTR_REGCOUNT = 0x2F
_FIXED_SIZES = {1: 0, 2: 1, 3: 2}  # EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL; EIFMT_SVAL (4) carries a 16-bit length
_SIZED = 4


class CubinError(ValueError):
    """The image is not a CUDA ELF image this module can read."""


def register_counts(image: bytes) -> dict[str, int]:
    """Registers per thread of each kernel in `image`, by kernel name."""
    sections = _sections(image)
    symbols = _symbol_names(image, sections)
    info = next((s for s in sections if s.name == ".nv.info"), None)
    if info is None:
        raise CubinError("the cubin has no .nv.info section")
    counts = {}
    for attribute, value in _records(image[info.offset:info.offset + info.size]):
        if attribute == _EIATTR_REGCOUNT:
            symbol, count = struct.unpack("<II", value)
            counts[symbols.get(symbol, f"symbol {symbol}")] = count
    return counts


class _Section:
    def __init__(self, name: str, kind: int, offset: int, size: int, link: int, entry_size: int):
        self.name, self.kind, self.offset, self.size, self.link, self.entry_size = (
            name, kind, offset, size, link, entry_size)


def _sections(image: bytes) -> list[_Section]:
    if len(image) < 64 or image[:6] != b"\x7fELF\x02\x01":
        raise CubinError("not a 64-bit little-endian ELF image")
    (shoff,) = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", image, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4]
    return [_Section(_string(image, names_at + h[0]), h[1], h[4], h[5], h[6], h[9]) for h in raw]


def _symbol_names(image: bytes, sections: list[_Section]) -> dict[int, str]:
    table = next((s for s in sections if s.kind == _SHT_SYMTAB), None)
    if table is None:
        return {}
    strings = sections[table.link].offset
    names = {}
    for index in range(table.size // table.entry_size):
        (name,) = struct.unpack_from("<I", image, table.offset + index * table.entry_size)
        names[index] = _string(image, strings + name)
    return names


def _records(data: bytes):
    at = 0
    while at + 2 <= len(data):
        form, attribute = data[at], data[at + 1]
        at += 2
        if form == _SIZED:
            (size,) = struct.unpack_from("<H", data, at)
            at += 2
        elif form in _FIXED_SIZES:
            size = _FIXED_SIZES[form]
        else:
            raise CubinError(f"unknown .nv.info record format {form} at byte {at - 2}")
        yield attribute, data[at:at + size]
        at += size


def _string(image: bytes, at: int) -> str:
    end = image.index(b"\0", at)
    return image[at:end].decode()
