"""The kernel signature: everything the runtime needs to check arguments and launch.

The emitter produces it next to the CUDA source; artifacts store it as
``signature.json``. Schema (JSON object, version 1)::

    {
      "version": 1,
      "name": "rmsnorm",                 # the extern "C" __global__ function's name
      "params": [                        # the Python parameters, in Python order
        {"kind": "tensor", "name": "X", "dtype": "bfloat16",
         "shape": ["M", 4096],           # int = static dim, str = symbol name
         "align": 16,                    # bytes the data pointer must be aligned to
         "written": false},              # whether the kernel stores into it
        {"kind": "scalar", "name": "eps", "dtype": "float32"}
      ],
      "symbols": ["M"],                  # symbolic dims, in first-seen order
      "grid": ["(M + 3) // 4", "1", "1"],  # expressions over symbols and scalars
      "block": [128, 1, 1],
      "shared_bytes": 0,                 # dynamic shared memory: int or expression
      "assumes": ["M % 4 == 0"],         # T.assume facts, checked at every launch
      "out_idx": [2],                    # params the runtime allocates and returns
      "cuda_params": ["X", "W", "Y", "eps", "M"],  # CUDA kernel parameter order
      "index_bits": 64,                  # 32: every tensor must have < 2**31 elements
      "tensor_maps": [                   # optional: TMA descriptors the runtime encodes per launch
        {"tensor": "X", "name": "X_map", "dtype": "bfloat16",
         "box": [64, 64],                # elements per dim, outermost first (last = the tensor's last dim)
         "swizzle": 128,                 # 0 (none), 32, 64 or 128 bytes
         "interleave": "none", "l2_promotion": 128,  # 0, 64, 128 or 256 bytes
         "oob_fill": "zero", "element_strides": [1, 1]}
      ]
    }

Dtype names are those of `tilemlir.runtime.dtypes`. Expressions use the
language of `tilemlir.runtime.expr`. A `cuda_params` entry names a param or
a symbol (the two share one namespace). Kernel parameter ABI, which the
emitted kernel must follow: a tensor is a pointer to its first element; a
symbol is ``long long`` (``int`` when ``index_bits == 32``); a scalar is its
dtype's C++ type (`DType.cxx`).

Every tensor parameter is ``__restrict__`` (``const`` too when not
``written``), so the runtime rejects a call where a written tensor's bytes
overlap another tensor argument's. An artifact written before ``written``
existed lacks it; such a tensor counts as written (the safe reading: every
overlap is then rejected).

A ``tensor_maps`` entry is one more CUDA parameter, named in ``cuda_params``
by its ``name`` (which shares the namespace of params and symbols): a
``const __grid_constant__ CUtensorMap`` (128 bytes, 128-byte aligned) that
the runtime encodes with ``cuTensorMapEncodeTiled`` at each launch from the
argument of tensor param ``tensor`` (an input or an output): its data
pointer, its shape and its C-contiguous byte strides, with the entry's box,
swizzle and L2 promotion, no interleave, element strides 1 and zero fill
out of bounds (`tilemlir.runtime.tensor_map`). The map's ``dtype`` is the
tensor's; its rank is the tensor's (1 to 5); a box dim is 1 to 256 elements
and may be smaller or larger than the tensor's dim; the innermost box dim
spans a multiple of 16 bytes, and at most the swizzle width when swizzled.
At launch the data pointer must be 16-byte aligned and each outer stride a
multiple of 16 bytes (LaunchError otherwise, naming the map). A signature
without maps writes no ``tensor_maps`` key, so its JSON is the one of
before; the schema version stays 1, as a signature without the key reads
as one with no maps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Union

from tilemlir.diagnostics import TilemlirError
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.expr import Expr, ExprError

SCHEMA_VERSION = 1


class SignatureError(TilemlirError, ValueError):
    """A signature that is inconsistent or does not follow the schema."""


@dataclass(frozen=True)
class TensorParam:
    name: str
    dtype: str
    shape: tuple[int | str, ...]
    align: int = 0  # 0: the element size
    written: bool = True  # False only when the kernel never stores into it (see the module docstring)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        if self.dtype in DTYPES and self.align == 0:
            object.__setattr__(self, "align", DTYPES[self.dtype].itemsize)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "tensor", "name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "align": self.align, "written": self.written}


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "scalar", "name": self.name, "dtype": self.dtype}


Param = Union[TensorParam, ScalarParam]

# Map settings the schema accepts (tensor_map.py holds the driver's enum for each).
MAP_SWIZZLES = (0, 32, 64, 128)
MAP_L2_PROMOTIONS = (0, 64, 128, 256)
MAP_INTERLEAVES = ("none",)
MAP_OOB_FILLS = ("zero",)
MAP_MAX_RANK = 5
MAP_MAX_BOX = 256
MAP_DTYPES = ("bool", "int8", "uint8", "float8_e4m3", "float8_e5m2", "int16", "uint16", "float16", "bfloat16",
              "int32", "uint32", "float32", "int64", "uint64", "float64")


@dataclass(frozen=True)
class TensorMapParam:
    """A `CUtensorMap` kernel parameter `name`, encoded at launch from tensor param `tensor`."""

    tensor: str
    name: str
    dtype: str
    box: tuple[int, ...]
    swizzle: int = 0
    interleave: str = "none"
    l2_promotion: int = 0
    oob_fill: str = "zero"
    element_strides: tuple[int, ...] = ()  # (): all 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "box", tuple(self.box))
        strides = tuple(self.element_strides) or (1,) * len(self.box)
        object.__setattr__(self, "element_strides", strides)

    @property
    def rank(self) -> int:
        return len(self.box)

    def to_dict(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "name": self.name, "dtype": self.dtype, "box": list(self.box),
                "swizzle": self.swizzle, "interleave": self.interleave, "l2_promotion": self.l2_promotion,
                "oob_fill": self.oob_fill, "element_strides": list(self.element_strides)}


@dataclass(frozen=True)
class KernelSignature:
    name: str
    params: tuple[Param, ...]
    symbols: tuple[str, ...]
    grid: tuple[str, str, str]
    block: tuple[int, int, int]
    cuda_params: tuple[str, ...]
    shared_bytes: int | str = 0
    assumes: tuple[str, ...] = ()
    out_idx: tuple[int, ...] = ()
    index_bits: int = 64
    tensor_maps: tuple[TensorMapParam, ...] = ()
    exprs: "SignatureExprs" = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for attr in ("params", "symbols", "grid", "block", "cuda_params", "assumes", "out_idx", "tensor_maps"):
            object.__setattr__(self, attr, tuple(getattr(self, attr)))
        object.__setattr__(self, "grid", tuple(str(g) for g in self.grid))
        _validate(self)
        object.__setattr__(self, "exprs", SignatureExprs(self))

    # -- views used by the runtime --------------------------------------------------
    @property
    def input_indices(self) -> tuple[int, ...]:
        """Indices of the params the caller passes (all but `out_idx`), in order."""
        outs = set(self.out_idx)
        return tuple(i for i in range(len(self.params)) if i not in outs)

    @property
    def env_names(self) -> tuple[str, ...]:
        """Names in an expression environment: the symbols, then the scalar params."""
        return self.symbols + tuple(p.name for p in self.params if isinstance(p, ScalarParam))

    # -- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = {
            "version": SCHEMA_VERSION,
            "name": self.name,
            "params": [p.to_dict() for p in self.params],
            "symbols": list(self.symbols),
            "grid": list(self.grid),
            "block": list(self.block),
            "shared_bytes": self.shared_bytes,
            "assumes": list(self.assumes),
            "out_idx": list(self.out_idx),
            "cuda_params": list(self.cuda_params),
            "index_bits": self.index_bits,
        }
        if self.tensor_maps:  # absent otherwise: a signature without maps keeps its JSON (and cache keys)
            data["tensor_maps"] = [m.to_dict() for m in self.tensor_maps]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "KernelSignature":
        if not isinstance(data, dict):
            raise SignatureError(f"a signature is a JSON object, got {type(data).__name__}")
        version = data.get("version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise SignatureError(f"signature schema version {version} is not supported (this runtime reads {SCHEMA_VERSION})")
        try:
            params = tuple(_param_from_dict(p) for p in data["params"])
            return cls(
                name=data["name"],
                params=params,
                symbols=tuple(data.get("symbols", ())),
                grid=tuple(data["grid"]),
                block=tuple(data["block"]),
                cuda_params=tuple(data["cuda_params"]),
                shared_bytes=data.get("shared_bytes", 0),
                assumes=tuple(data.get("assumes", ())),
                out_idx=tuple(data.get("out_idx", ())),
                index_bits=data.get("index_bits", 64),
                tensor_maps=tuple(_tensor_map_from_dict(m) for m in data.get("tensor_maps", ())),
            )
        except KeyError as exc:
            raise SignatureError(f"signature lacks the required key {exc.args[0]!r}") from None
        except TypeError as exc:
            raise SignatureError(f"malformed signature: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> "KernelSignature":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SignatureError(f"signature is not valid JSON: {exc}") from None
        return cls.from_dict(data)


def _param_from_dict(data: dict[str, Any]) -> Param:
    kind = data.get("kind")
    if kind == "tensor":
        return TensorParam(data["name"], data["dtype"], tuple(data["shape"]), data.get("align", 0),
                           data.get("written", True))
    if kind == "scalar":
        return ScalarParam(data["name"], data["dtype"])
    raise SignatureError(f"param {data.get('name')!r}: kind must be 'tensor' or 'scalar', got {kind!r}")


def _tensor_map_from_dict(data: dict[str, Any]) -> TensorMapParam:
    if not isinstance(data, dict):
        raise SignatureError(f"a tensor_maps entry is a JSON object, got {data!r}")
    known = {"tensor", "name", "dtype", "box", "swizzle", "interleave", "l2_promotion", "oob_fill", "element_strides"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SignatureError(f"tensor map {data.get('name')!r}: unknown key(s) {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")
    if not isinstance(data["box"], list) or not isinstance(data.get("element_strides", []), list):
        raise SignatureError(f"tensor map {data.get('name')!r}: box and element_strides are lists")
    return TensorMapParam(data["tensor"], data["name"], data["dtype"], tuple(data["box"]), data.get("swizzle", 0),
                          data.get("interleave", "none"), data.get("l2_promotion", 0), data.get("oob_fill", "zero"),
                          tuple(data.get("element_strides", ())))


class SignatureExprs:
    """The signature's expressions compiled to closures over the environment
    ``env = [symbol values..., scalar values...]`` (order of `env_names`)."""

    def __init__(self, sig: KernelSignature):
        slots = {name: i for i, name in enumerate(sig.env_names)}
        try:
            self.grid = tuple(Expr(g) for g in sig.grid)
            self.grid_fns = tuple(e.closure(slots) for e in self.grid)
            self.shared = Expr(str(sig.shared_bytes))
            self.shared_fn = self.shared.closure(slots)
            self.assumes = tuple(Expr(a) for a in sig.assumes)
            self.assume_fns = tuple(e.closure(slots) for e in self.assumes)
        except ExprError as exc:
            raise SignatureError(f"kernel {sig.name!r}: {exc}") from None
        self.constant_grid = tuple(e.constant() for e in self.grid) if not any(e.names for e in self.grid) else None
        self.constant_shared = self.shared.constant()


def _validate(sig: KernelSignature) -> None:
    where = f"kernel {sig.name!r}"
    if not isinstance(sig.name, str) or not sig.name.isidentifier():
        raise SignatureError(f"kernel name {sig.name!r} is not an identifier")
    names = [p.name for p in sig.params] + list(sig.symbols) + [m.name for m in sig.tensor_maps]
    for name in names:
        if not isinstance(name, str) or not name.isidentifier():
            raise SignatureError(f"{where}: name {name!r} is not an identifier")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        among = "params, symbols and tensor maps" if sig.tensor_maps else "params and symbols"
        raise SignatureError(f"{where}: names used twice among {among}: {', '.join(duplicates)}")
    for p in sig.params:
        _validate_param(where, p, sig.symbols)
    for m in sig.tensor_maps:
        _validate_tensor_map(where, m, {p.name: p for p in sig.params})
    _validate_symbols(where, sig)
    if len(sig.grid) != 3 or len(sig.block) != 3:
        raise SignatureError(f"{where}: grid and block need 3 entries each, got {len(sig.grid)} and {len(sig.block)}")
    if not all(isinstance(b, int) and b >= 1 for b in sig.block) or sig.block[0] * sig.block[1] * sig.block[2] > 1024:
        raise SignatureError(f"{where}: block {sig.block} must be positive ints with at most 1024 threads")
    if not isinstance(sig.shared_bytes, (int, str)) or isinstance(sig.shared_bytes, bool):
        raise SignatureError(f"{where}: shared_bytes must be an int or an expression string")
    for i in sig.out_idx:
        if not (isinstance(i, int) and 0 <= i < len(sig.params)) or not isinstance(sig.params[i], TensorParam):
            raise SignatureError(f"{where}: out_idx entry {i!r} is not the index of a tensor param")
    if len(set(sig.out_idx)) != len(sig.out_idx):
        raise SignatureError(f"{where}: out_idx {list(sig.out_idx)} repeats an index")
    if sorted(sig.cuda_params) != sorted(set(sig.cuda_params)) or not set(sig.cuda_params) <= set(names):
        kinds = "params, symbols or tensor maps" if sig.tensor_maps else "params or symbols"
        raise SignatureError(f"{where}: cuda_params {list(sig.cuda_params)} must name distinct {kinds} "
                             f"(known: {', '.join(names)})")
    missing = [p.name for p in (*sig.params, *sig.tensor_maps) if p.name not in sig.cuda_params]
    if missing:
        raise SignatureError(f"{where}: params {', '.join(missing)} are not passed to the CUDA kernel (cuda_params)")
    if sig.index_bits not in (32, 64):
        raise SignatureError(f"{where}: index_bits must be 32 or 64, got {sig.index_bits!r}")


def scalar_dtype_message(name: str, dtype: str) -> str:
    """Why scalar parameter `name` cannot have `dtype` (one without a C type a kernel argument could have)."""
    return (f"scalar parameter '{name}' cannot be {dtype}: a kernel argument has no {dtype} type; pass it as "
            f"float32 and convert with T.cast")


def _validate_param(where: str, p: Param, symbols: tuple[str, ...]) -> None:
    if p.dtype not in DTYPES:
        raise SignatureError(f"{where}: param {p.name!r} has unknown dtype {p.dtype!r} (known: {', '.join(DTYPES)})")
    if isinstance(p, ScalarParam):
        if DTYPES[p.dtype].scalar_ctype is None:
            raise SignatureError(f"{where}: scalar param {p.name!r} cannot have dtype {p.dtype}")
        return
    for dim in p.shape:
        if isinstance(dim, bool) or not isinstance(dim, (int, str)):
            raise SignatureError(f"{where}: param {p.name!r} dim {dim!r} is neither an int nor a symbol name")
        if isinstance(dim, int) and dim < 0:
            raise SignatureError(f"{where}: param {p.name!r} has negative dim {dim}")
        if isinstance(dim, str) and dim not in symbols:
            raise SignatureError(f"{where}: param {p.name!r} dim {dim!r} is not a declared symbol ({', '.join(symbols) or 'none'})")
    if not isinstance(p.written, bool):
        raise SignatureError(f"{where}: param {p.name!r} written must be true or false, got {p.written!r}")
    itemsize = DTYPES[p.dtype].itemsize
    align = p.align
    if not isinstance(align, int) or align < itemsize or align & (align - 1):
        raise SignatureError(f"{where}: param {p.name!r} align {align!r} must be a power of two >= {itemsize} (its element size)")


def _validate_tensor_map(where: str, m: TensorMapParam, params: dict[str, Param]) -> None:
    what = f"{where}: tensor map {m.name!r}"
    tensor = params.get(m.tensor)
    if not isinstance(tensor, TensorParam):
        raise SignatureError(f"{what}: {m.tensor!r} is not a tensor param")
    if m.dtype not in MAP_DTYPES:
        raise SignatureError(f"{what}: dtype {m.dtype!r} has no tensor-map data type (known: {', '.join(MAP_DTYPES)})")
    if m.dtype != tensor.dtype:
        raise SignatureError(f"{what}: dtype {m.dtype} is not the dtype {tensor.dtype} of tensor {m.tensor!r}")
    if not 1 <= m.rank <= MAP_MAX_RANK or m.rank != tensor.rank:
        raise SignatureError(f"{what}: box {list(m.box)} must have one dim per dim of tensor {m.tensor!r} "
                             f"(rank {tensor.rank}), and a tensor map has rank 1 to {MAP_MAX_RANK}")
    if not all(type(b) is int and 1 <= b <= MAP_MAX_BOX for b in m.box):
        raise SignatureError(f"{what}: box {list(m.box)}: each dim must be an int from 1 to {MAP_MAX_BOX}")
    for setting, value, allowed in (("swizzle", m.swizzle, MAP_SWIZZLES), ("l2_promotion", m.l2_promotion,
                                    MAP_L2_PROMOTIONS), ("interleave", m.interleave, MAP_INTERLEAVES),
                                    ("oob_fill", m.oob_fill, MAP_OOB_FILLS)):
        if type(value) is bool or value not in allowed:
            raise SignatureError(f"{what}: {setting} {value!r} is not one of {', '.join(map(repr, allowed))}")
    if m.element_strides != (1,) * m.rank:
        raise SignatureError(f"{what}: element_strides {list(m.element_strides)} must be {m.rank} ones "
                             "(strided traversal is not supported)")
    inner = m.box[-1] * DTYPES[m.dtype].itemsize
    if inner % 16:
        raise SignatureError(f"{what}: the innermost box dim spans {inner} bytes ({m.box[-1]} x {m.dtype}), "
                             "which must be a multiple of 16")
    if m.swizzle and inner > m.swizzle:
        raise SignatureError(f"{what}: the innermost box dim spans {inner} bytes, more than the {m.swizzle}-byte "
                             "swizzle width")
    row = DTYPES[m.dtype].itemsize
    for axis in range(tensor.rank - 1, 0, -1):  # the byte stride of dim axis - 1, where the dims below are static
        if not isinstance(tensor.shape[axis], int):
            break
        row *= tensor.shape[axis]
        if row % 16:
            raise SignatureError(f"{what}: tensor {m.tensor!r} of shape {list(tensor.shape)} has a stride of {row} "
                                 f"bytes in dim {axis - 1}; a tensor map needs multiples of 16")


def _validate_symbols(where: str, sig: KernelSignature) -> None:
    outs = set(sig.out_idx)
    bound = {d for i, p in enumerate(sig.params) if isinstance(p, TensorParam) and i not in outs for d in p.shape}
    unbound = [s for s in sig.symbols if s not in bound]
    if unbound:
        raise SignatureError(f"{where}: symbols {', '.join(unbound)} appear in no input tensor's shape, "
                             "so no call can bind them")
