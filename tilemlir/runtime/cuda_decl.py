"""A kernel's `extern "C" __global__` declaration in CUDA source, checked against its KernelSignature.

`build` launches a kernel with the parameter block its signature describes
(signature.py: a tensor is a pointer, a scalar its dtype's C++ type, a
symbol ``long long`` or ``int``, a tensor map a ``const __grid_constant__
CUtensorMap``), so a hand-edited source (a
``TILEMLIR_CUDA_OVERRIDE`` file, `with_cuda_source`, `runtime.build`) must
declare that function with exactly those parameters. `check_declaration`
reads every declaration of the function (comments, strings and preprocessor
lines aside) and compares the parameters at the level the ABI sees: their
count and order; pointer for a tensor, a value for a scalar or symbol; a
floating-point type exactly (``half`` is not ``__nv_bfloat16``), an integer
type by its size (signedness and ``bool``/``char`` are free, as in the
generated code), a tensor map as ``CUtensorMap`` (or ``CUtensorMap_st``)
declared ``__grid_constant__`` (a copy of it in local memory is no address
TMA can read). Parameter names are free; a type it does not know (a
vector type such as ``float4``, ``void``, a typedef) is taken as written.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from tilemlir.diagnostics import CompileError
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.signature import KernelSignature, TensorParam

_LEXEMES = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_PREPROCESSOR = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_EXTERN_C = re.compile(r'\bextern\s*"C"')
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__", "register",
               "struct"}
_BUILTIN = {"void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float", "double"}
_FLOATS = {"float": "float32", "double": "float64", "half": "float16", "__half": "float16",
           "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "__nv_fp8_e4m3": "float8_e4m3",
           "__nv_fp8_e5m2": "float8_e5m2"}
_TENSOR_MAP_TYPES = {"CUtensorMap", "CUtensorMap_st"}
_TENSOR_MAP = ("tensor map", 128)
_NAMED_INTS = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8,
               "uint64_t": 8, "size_t": 8, "ptrdiff_t": 8, "intptr_t": 8, "uintptr_t": 8}


class _Declared:
    """One declared parameter: its text, indirection, and type class."""

    def __init__(self, text: str):
        self.text = " ".join(text.split())
        stripped = re.sub(r"__align__\s*\([^)]*\)", " ", self.text)
        self.pointers = stripped.count("*") + stripped.count("[")
        self.reference = "&" in stripped
        self.grid_constant = "__grid_constant__" in re.findall(r"\w+", stripped)
        words = [w for w in re.findall(r"[A-Za-z_]\w*", stripped) if w not in _QUALIFIERS]
        if len(words) >= 2 and words[-1] not in _BUILTIN:
            words = words[:-1]  # the parameter's name
        self.kind = _type_class(words)  # ("float", dtype) / ("int", size) / None: a type we do not know


def _type_class(words: list[str]) -> tuple[str, object] | None:
    if len(words) == 1 and words[0] in _TENSOR_MAP_TYPES:
        return _TENSOR_MAP
    if len(words) == 1 and words[0] in _FLOATS:
        return ("float", _FLOATS[words[0]])
    if len(words) == 1 and words[0] in _NAMED_INTS:
        return ("int", _NAMED_INTS[words[0]])
    if not words or not set(words) <= _BUILTIN or "void" in words or ("double" in words and "long" in words):
        return None
    if "float" in words or "double" in words:
        return ("float", "float32" if "float" in words else "float64")
    if "bool" in words or "char" in words:
        return ("int", 1)
    return ("int", 2 if "short" in words else 8 if "long" in words else 4)


class _Param(NamedTuple):
    """A CUDA parameter as the signature has it."""

    decl: str  # its C declaration
    what: str  # "float32 tensor X", "symbol M", ...
    kind: tuple[str, object]  # its type class
    pointer: bool


def _expected(signature: KernelSignature) -> list[_Param]:
    params = {p.name: p for p in signature.params}
    maps = {m.name for m in signature.tensor_maps}
    index = "int" if signature.index_bits == 32 else "long long"
    result = []
    for name in signature.cuda_params:
        param = params.get(name)
        if name in maps:
            result.append(_Param(f"const __grid_constant__ CUtensorMap {name}", f"tensor map {name}", _TENSOR_MAP,
                                 False))
            continue
        if param is None:
            result.append(_Param(f"{index} {name}", f"symbol {name}", ("int", signature.index_bits // 8), False))
            continue
        dtype = DTYPES[param.dtype]
        kind = ("float", param.dtype) if dtype.kind == "float" else ("int", dtype.itemsize)
        if isinstance(param, TensorParam):
            const = "" if param.written else "const "
            result.append(_Param(f"{const}{dtype.cxx}* {name}", f"{param.dtype} tensor {name}", kind, True))
        else:
            result.append(_Param(f"{dtype.cxx} {name}", f"{param.dtype} scalar {name}", kind, False))
    return result


def check_declaration(source: str, signature: KernelSignature, origin: str) -> None:
    """CompileError unless `source` declares `extern "C" __global__ <signature.name>` with the
    signature's parameters; `origin` names the source in the message."""
    declarations = _declarations(_code(source), signature.name, origin)
    expected = _expected(signature)
    for declared in declarations:
        problem = _mismatch(declared, expected)
        if problem is not None:
            raise CompileError(
                f"{origin}: the parameters of extern \"C\" __global__ {signature.name} do not match the kernel's "
                f"signature: {problem}\n  the signature: ({', '.join(e.decl for e in expected)})\n"
                f"  the source:    ({', '.join(d.text for d in declared)})")


def _mismatch(declared: list[_Declared], expected: list[_Param]) -> str | None:
    if len(declared) != len(expected):
        return f"it declares {len(declared)} parameters, the signature has {len(expected)}"
    for position, (param, want) in enumerate(zip(declared, expected), 1):
        wrong = ("a reference" if param.reference else
                 "not a pointer" if want.pointer and param.pointers != 1 else
                 "a pointer" if not want.pointer and param.pointers else
                 "another type" if param.kind is not None and param.kind != want.kind else
                 "not __grid_constant__" if want.kind == _TENSOR_MAP and not param.grid_constant else None)
        if wrong is not None:
            return f"parameter {position} is the {want.what} (`{want.decl}`), declared `{param.text}`: {wrong}"
    return None


def _code(source: str) -> str:
    """`source` without comments, preprocessor lines and the contents of literals other than "C"."""
    def blank(match: re.Match) -> str:
        text = match.group(0)
        return text if text == '"C"' else '""' if text[0] == '"' else "' '" if text[0] == "'" else " "

    return _PREPROCESSOR.sub("", _LEXEMES.sub(blank, source))


def _declarations(code: str, name: str, origin: str) -> list[list[_Declared]]:
    blocks = [(m.end(), _closing(code, m.end() - 1, "{", "}")) for m in re.finditer(r'\bextern\s*"C"\s*\{', code)]
    found = []
    for match in re.finditer(rf"\b{re.escape(name)}\s*\(", code):
        start = max(code.rfind(c, 0, match.start()) for c in ";{}") + 1
        head = code[start:match.start()]
        if "__global__" not in re.findall(r"\w+", head):
            continue  # a call, or another function's use of the name
        if not _EXTERN_C.search(head) and not any(a <= match.start() < b for a, b in blocks):
            raise CompileError(f"{origin} declares __global__ {name} without extern \"C\": its symbol name is "
                               "mangled, so the runtime cannot find the kernel by its name")
        close = _closing(code, match.end() - 1, "(", ")")
        found.append([_Declared(p) for p in _split(code[match.end():close])])
    if not found:
        raise CompileError(f"{origin} declares no extern \"C\" __global__ function {name} (the kernel's name)")
    return found


def _closing(code: str, opening: int, left: str, right: str) -> int:
    """The index of the bracket closing the one at `opening` (the end of `code` if none does)."""
    depth = 0
    for position in range(opening, len(code)):
        depth += (code[position] == left) - (code[position] == right)
        if depth == 0:
            return position
    return len(code)


def _split(params: str) -> list[str]:
    """Top-level comma-separated parts of a parameter list; () and (void) have none."""
    parts, depth, current = [], 0, []
    for char in params:
        if char in "(<[":
            depth += 1
        elif char in ")>]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    parts = [p.strip() for p in parts]
    return [] if parts in ([""], ["void"]) else parts
