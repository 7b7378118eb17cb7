"""The fast path in C: a kernel's whole call done by the native extension's `CallPlan`.

`NativeCall` has `FastCall`'s interface (`call(args, stream)` -> the result
or `SLOW`, `register`, `registered`) and takes the same plain case, with the
same answer `SLOW` for everything else, but nothing of it runs in Python:
the tensors are read through the DLPack exchange API that the framework
publishes on its tensor type (``torch.Tensor.__dlpack_c_exchange_api__``,
DLPack 1.2: a C function fills a DLTensor, no Python attribute reads), the
checks are loops over a table, the grid, shared bytes and assumes are
postfix programs over 64-bit ints, the outputs come from the framework's
own allocator (``managed_tensor_allocator``, i.e. ``torch.empty``'s caching
allocator, on the current stream) and the launch is a direct cuLaunchKernel.
This is what issue 8's launch-overhead target asks for when Python cannot
reach it (TileLang did the same through TVM-FFI).

`plan_spec` packs the signature into int64 words; its layout is what
`read_spec` in launch.c reads:

    header   SPEC_VERSION, device type, #inputs, #tensors, #scalars, #symbols,
             symbol bits, 32-bit limit, #outputs, #params, #alias pairs,
             #programs, block x, y, z
    inputs   (kind: 0 tensor / 1 scalar, index into tensors / scalars) per input
    tensors  (DLPack code, bits, rank, align, itemsize, is output, dims...) per
             tensor param; a dim >= 0 is static, -(k + 1) is symbol k
    scalars  (kind character, env slot or -1) per scalar param
    outputs  tensor index per out_idx entry
    params   (kind: 0 tensor / 1 scalar / 2 symbol / 3 tensor map, index) per CUDA parameter
    alias    (tensor, tensor) per pair whose bytes may not overlap
    maps     #maps, then (tensor index, CUtensorMapDataType, rank, itemsize, interleave,
             swizzle, L2 promotion, OOB fill enums, box innermost first...) per tensor map
    programs (length, ops...) for grid x, y, z, shared bytes, then each assume

A tensor map is encoded in C, from the same requirements as
`tensor_map.requirement_problem` (a call breaking one answers `SLOW`, and the
general path raises the error), through the plan's own cache of the last
8 maps per map, keyed by data pointer and shape; its parameter is the
address of the cached 128 bytes.

A signature the plan cannot express exactly (a 16-bit float scalar, a float
in an expression, more than 32 tensors, ...) keeps the Python fast path.
"""

from __future__ import annotations

import ctypes
from array import array
from types import ModuleType
from typing import Any, Callable

from tilemlir.runtime import tensor_map
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.fastpath import SLOW, alias_pairs, function_address
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

SPEC_VERSION = 2  # as in launch.c
KDL_CUDA = 2
MAX_TENSORS, MAX_RANK, MAX_PARAMS, MAX_ENV, MAX_STACK, MAX_MAPS = 32, 8, 128, 64, 32, 16  # as in launch.c

_OPCODES = {"const": 0, "load": 1, "+": 2, "-": 3, "*": 4, "//": 5, "%": 6, "neg": 7, "min": 8, "max": 9,
            "==": 10, "!=": 11, "<": 12, "<=": 13, ">": 14, ">=": 15, "not": 16, "and": 17, "or": 18,
            "wrap": 19, "wrapu": 20}
# The scalar kinds launch.c converts: the parameter's C type, as a character.
_SCALAR_KINDS = {"float32": "f", "float64": "d", "bool": "?", "int8": "b", "uint8": "B", "int16": "h",
                 "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q"}


class NativeCall:
    """A kernel's call path through a `CallPlan`; the interface of `fastpath.FastCall`."""

    def __init__(self, plan: Any):
        self._plan = plan
        self.call: Callable[[tuple, Any], Any] = plan.call

    @classmethod
    def create(cls, signature: KernelSignature, torch: Any, raw: Any, stream_handle: Callable[[Any], int],
               launch_failed: Callable[[int, tuple, int], None], extension: ModuleType | None) -> "NativeCall | None":
        """The native call of `signature`, or None where the extension, this torch or the
        signature does not allow one (the Python fast path then serves)."""
        plan_type = getattr(extension, "CallPlan", None)
        capsule = exchange_api(torch)
        spec = plan_spec(signature)
        if plan_type is None or capsule is None or spec is None:
            return None
        encode = function_address(raw.encode_tiled) if signature.tensor_maps else None
        try:
            plan = plan_type(spec, capsule, torch.Tensor, SLOW, stream_handle, launch_failed,
                             function_address(raw.get_context), function_address(raw.launch), encode)
        except (ValueError, TypeError):
            return None  # an exchange API of another DLPack version: not ours to guess at
        return cls(plan)

    def register(self, context: int, function: ctypes.c_void_p, device: int, max_dynamic_shared: int) -> None:
        self._plan.register(context, function.value or 0, device, max_dynamic_shared)

    def registered(self, context: int) -> bool:
        return self._plan.registered(context)


def exchange_api(torch: Any) -> Any | None:
    """torch's DLPack exchange API capsule (torch 2.10 and later), or None."""
    return getattr(getattr(torch, "Tensor", None), "__dlpack_c_exchange_api__", None)



def plan_spec(signature: KernelSignature, device_type: int = KDL_CUDA) -> bytes | None:
    """The packed spec of `signature` (module docstring), or None when the plan cannot express it."""
    sig = signature
    tensors = [p for p in sig.params if isinstance(p, TensorParam)]
    scalars = [p for p in sig.params if isinstance(p, ScalarParam)]
    if (len(tensors) > MAX_TENSORS or len(sig.cuda_params) > MAX_PARAMS or len(sig.env_names) > MAX_ENV
            or any(p.rank > MAX_RANK for p in tensors) or any(p.dtype not in _SCALAR_KINDS for p in scalars)
            or len(sig.tensor_maps) > MAX_MAPS):
        return None
    tensor_index = {p.name: i for i, p in enumerate(tensors)}
    scalar_index = {p.name: i for i, p in enumerate(scalars)}
    symbol_index = {s: i for i, s in enumerate(sig.symbols)}
    map_index = {m.name: i for i, m in enumerate(sig.tensor_maps)}
    inputs = [sig.params[i] for i in sig.input_indices]
    bound = {d for p in inputs if isinstance(p, TensorParam) for d in p.shape if isinstance(d, str)}
    if bound != set(sig.symbols):
        return None  # a symbol no input tensor binds
    integer_slots = dict(symbol_index)
    integer_slots.update((p.name, len(sig.symbols) + k) for k, p in enumerate(scalars)
                         if DTYPES[p.dtype].kind != "float")
    bool_names = frozenset(p.name for p in scalars if DTYPES[p.dtype].kind == "bool")
    programs = [_program(e, integer_slots, False, bool_names) for e in (*sig.exprs.grid, sig.exprs.shared)]
    programs += [_program(e, integer_slots, True, bool_names) for e in sig.exprs.assumes]
    if any(p is None for p in programs) or len(programs) > MAX_ENV:
        return None
    outputs = {sig.params[i].name for i in sig.out_idx}
    words = [SPEC_VERSION, device_type, len(inputs), len(tensors), len(scalars), len(sig.symbols),
             sig.index_bits, int(sig.index_bits == 32), len(sig.out_idx), len(sig.cuda_params), 0,
             len(programs), *sig.block]
    for p in inputs:
        words += [0, tensor_index[p.name]] if isinstance(p, TensorParam) else [1, scalar_index[p.name]]
    for p in tensors:
        code, bits = DTYPES[p.dtype].dlpack
        words += [code, bits, p.rank, p.align, DTYPES[p.dtype].itemsize, int(p.name in outputs)]
        words += [d if isinstance(d, int) else -(symbol_index[d] + 1) for d in p.shape]
    for p in scalars:
        words += [ord(_SCALAR_KINDS[p.dtype]), integer_slots.get(p.name, -1)]
    words += [tensor_index[sig.params[i].name] for i in sig.out_idx]
    for name in sig.cuda_params:
        words += ([0, tensor_index[name]] if name in tensor_index else [1, scalar_index[name]]
                  if name in scalar_index else [3, map_index[name]] if name in map_index else [2, symbol_index[name]])
    pairs = alias_pairs([p for p in inputs if isinstance(p, TensorParam)])
    words[10] = len(pairs)
    for a, b in pairs:
        words += [tensor_index[a.name], tensor_index[b.name]]
    words.append(len(sig.tensor_maps))
    for m in sig.tensor_maps:
        words += [tensor_index[m.tensor], tensor_map.DATA_TYPES[m.dtype], m.rank, DTYPES[m.dtype].itemsize,
                  tensor_map.INTERLEAVES[m.interleave], tensor_map.SWIZZLES[m.swizzle],
                  tensor_map.L2_PROMOTIONS[m.l2_promotion], tensor_map.OOB_FILLS[m.oob_fill], *reversed(m.box)]
    for program in programs:
        words += [len(program), *program]
    return array("q", words).tobytes()


def _program(expr: Any, slots: dict[str, int], boolean: bool,
             bool_names: frozenset[str] = frozenset()) -> list[int] | None:
    steps = expr.to_postfix(slots, boolean, bool_names)
    if steps is None:
        return None
    words, depth = [], 0
    for step in steps:
        words += [_OPCODES[step[0]], *step[1:]]
        pops = step[1] if step[0] in ("min", "max", "and", "or") else 0 if step[0] in ("const", "load") else \
            1 if step[0] in ("neg", "not", "wrap", "wrapu") else 2
        depth += 1 - pops
        if depth > MAX_STACK:
            return None
    return words
