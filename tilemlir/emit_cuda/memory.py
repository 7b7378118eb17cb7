"""Memrefs -> C++: kernel tensor parameters, register arrays, and the planned dynamic shared buffer.

- A global tensor is a `__restrict__` pointer (`const` when the kernel only
  reads it); an access linearizes its logical indices with the row-major
  strides the runtime guarantees: `X[row * 4096 + col]` (Horner form).
- A `"local"` buffer is a register array (`float x[4][8];`), indexed per dim.
- `"shared"` buffers live in one `extern __shared__ __align__(16) unsigned
  char smem[]` (1024 when a buffer is `tile.swizzle = 128`) at planned offsets: a `tile.smem_offset` attribute (set by
  plan-shared-memory) is honored; buffers without one follow, each 16-byte
  aligned. Each gets a typed pointer: `float (*red_buf)[4] = ...`.
- A vector access to global or shared memory reads the aligned vector
  struct in one go (16 bytes -> one LDG.E.128 / LDS.128); one to registers
  is an unrolled element copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis.shared_layouts import alloca_alignment
from tilemlir.diagnostics.reporting import error
from tilemlir.dialects.bulk_copy import stored_tensors
from tilemlir.dialects.tile import memory_space
from tilemlir.emit_cuda import cexpr as C
from tilemlir.emit_cuda import irutil
from tilemlir.emit_cuda.cexpr import CExpr
from tilemlir.emit_cuda.ctype import CTypes, byte_size
from tilemlir.emit_cuda.identifiers import Identifiers
from tilemlir.emit_cuda.kernel import KernelIR, is_row_major
from tilemlir.hardware import format_bytes, max_shared_bytes
from tilemlir.mlir import ir

SHARED_ALIGN = 16
_ALLOCS = ("memref.alloca", "memref.alloc")


@dataclass(frozen=True)
class Tensor:
    name: str  # C name
    element: str  # C element type
    dims: tuple[CExpr, ...]
    written: bool


@dataclass(frozen=True)
class Buffer:
    name: str
    element: str
    shape: tuple[int, ...]
    space: str  # "local" or "shared"


class Memory:
    def __init__(self, kernel: KernelIR, types: CTypes, identifiers: Identifiers, c_names: dict[str, str]):
        """`c_names` maps each Python parameter and symbol name to its C identifier."""
        self._types = types
        self._identifiers = identifiers
        self.tensors: dict[ir.Value, Tensor] = {}
        self.buffers: dict[ir.Value, Buffer] = {}
        self.shared_offsets, self.shared_bytes = _plan_shared(kernel)
        # the largest alignment a buffer's swizzle needs (plan-shared-memory aligned its offset so)
        self.shared_align = max([SHARED_ALIGN] + [alloca_alignment(op) for op in self.shared_offsets])
        self._launch = kernel.launch
        written = _written_memrefs(kernel.func)
        for arg, py_name, dims in zip(kernel.args, kernel.arg_names, kernel.arg_dims):
            if dims is None:
                continue
            c_dims = tuple(C.int_lit(d) if isinstance(d, int) else C.atom(c_names[d]) for d in dims)
            element = types.scalar(arg.type.element_type)
            self.tensors[arg] = Tensor(c_names[py_name], element, c_dims, arg in written)

    # -- declarations ------------------------------------------------------------------------
    def parameter(self, arg: ir.Value) -> str:
        tensor = self.tensors[arg]
        const = "" if tensor.written else "const "
        return f"{const}{tensor.element}* __restrict__ {tensor.name}"

    def declare(self, op: ir.Operation) -> list[str]:
        """The declaration lines of an on-chip allocation."""
        type_ = op.results[0].type
        space = memory_space(type_)
        if space not in ("local", "shared"):
            where = "global memory" if space is None else f'memory space "{space}"'
            raise error(op, f"'{op.name}' in {where} is not supported by the CUDA emitter "
                            "(on-chip buffers are \"local\" or \"shared\"; fragments must be partitioned first)")
        if not is_row_major(type_):
            raise error(op, f"buffer type {type_} has a non-row-major layout, which the CUDA emitter does not support")
        element = self._types.scalar(type_.element_type)
        base = irutil.str_attr(op, "name") or irutil.str_attr(op, "tile.name") or ("regs" if space == "local" else "sbuf")
        buffer = Buffer(self._identifiers.fresh(base), element, tuple(type_.shape), space)
        self.buffers[op.results[0]] = buffer
        if space == "local":
            dims = "".join(f"[{d}]" for d in buffer.shape)
            return [f"{element} {buffer.name}{dims};{_layout_comment(op)}"]
        offset = self.shared_offsets[op]
        inner = "".join(f"[{d}]" for d in buffer.shape[1:])
        pointer = f"{element} (*{buffer.name}){inner}" if inner else f"{element}* {buffer.name}"
        cast_type = f"{element} (*){inner}" if inner else f"{element}*"
        return [f"{pointer} = reinterpret_cast<{cast_type}>(smem + {offset});{_swizzle_comment(op)}"]

    # -- accesses -------------------------------------------------------------------------------
    def element(self, memref: ir.Value, indices: list[CExpr], where: ir.Operation) -> CExpr:
        """The lvalue of one element."""
        if memref in self.tensors:
            tensor = self.tensors[memref]
            return C.subscript(C.atom(tensor.name), self._linear(tensor, indices))
        if memref in self.buffers:
            buffer = self.buffers[memref]
            if not indices:
                return C.atom(buffer.name) if buffer.space == "local" else C.atom(f"{buffer.name}[0]")
            return C.subscript(C.atom(buffer.name), *indices)
        raise error(where, f"'{where.name}' accesses {memref.type}, which is neither a kernel tensor nor an "
                           "on-chip buffer the CUDA emitter declared (views and casts are not supported)")

    def check_shared_limit(self, arch: str) -> None:
        """CompileError at the first shared buffer that ends past what one block may use on `arch`."""
        limit = max_shared_bytes(arch)
        if limit is None or self.shared_bytes <= limit:
            return
        placed = sorted(self.shared_offsets.items(), key=lambda item: item[1])
        buffers = [(op, offset, _bytes(op.results[0].type)) for op, offset in placed]
        listed = ", ".join(f"'{irutil.str_attr(op, 'name') or 'buffer'}' {size} bytes at offset {offset}"
                           for op, offset, size in buffers) or "asked for by the gpu.launch"
        where = next((op for op, offset, size in buffers if offset + size > limit), self._launch)
        raise error(where, f"the block needs {format_bytes(self.shared_bytes)} of shared memory ({listed}), more "
                           f"than the {format_bytes(limit)} one block may use on {arch}")

    def is_registers(self, memref: ir.Value) -> bool:
        return memref in self.buffers and self.buffers[memref].space == "local"

    def _linear(self, tensor: Tensor, indices: list[CExpr]) -> CExpr:
        if not indices:
            return C.int_lit(0)
        linear = indices[0]
        for dim, index in zip(tensor.dims[1:], indices[1:]):
            linear = C.add(C.mul(linear, dim), index)
        return linear


def _plan_shared(kernel: KernelIR) -> tuple[dict[ir.Operation, int], int]:
    allocs = [op for op in irutil.walk(kernel.launch)
              if op.name in _ALLOCS and memory_space(op.results[0].type) == "shared"]
    offsets: dict[ir.Operation, int] = {}
    end = 0
    for op in allocs:
        offset = irutil.int_attr(op, "tile.smem_offset")
        if offset is not None:
            if offset < 0 or offset % byte_size(op.results[0].type.element_type):
                raise error(op, f"'tile.smem_offset' {offset} is not aligned to the element size")
            offsets[op] = offset
            end = max(end, offset + _bytes(op.results[0].type))
    for op in allocs:
        if op not in offsets:
            offset = -(-end // SHARED_ALIGN) * SHARED_ALIGN
            offsets[op] = offset
            end = offset + _bytes(op.results[0].type)
    requested = kernel.launch.opview.dynamicSharedMemorySize
    if requested is not None:  # a launch that asks for dynamic shared memory itself gets at least that
        size = irutil.const_int(requested)
        if size is None:
            raise error(kernel.launch, "the gpu.launch dynamic shared memory size must be a constant")
        end = max(end, size)
    return offsets, -(-end // SHARED_ALIGN) * SHARED_ALIGN


def _bytes(type_: ir.MemRefType) -> int:
    count = 1
    for d in type_.shape:
        count *= d
    return count * byte_size(type_.element_type)


def _written_memrefs(func: ir.Operation) -> set:
    arguments = func.regions[0].blocks[0].arguments
    written = {arguments[i] for i in stored_tensors(func)}
    for op in irutil.walk(func):
        if op.name in ("memref.store", "vector.store"):
            written.add(op.operands[1])
        elif op.name == "tile.atomic_add":
            written.add(op.operands[0])
    return written


def _swizzle_comment(op: ir.Operation) -> str:
    """What a flattened swizzled shared buffer was (materialize-shared-layouts)."""
    if "tile.logical_shape" not in op.attributes or "tile.swizzle" not in op.attributes:
        return ""
    shape = " x ".join(str(d) for d in ir.DenseI64ArrayAttr(op.attributes["tile.logical_shape"]))
    width = ir.IntegerAttr(op.attributes["tile.swizzle"]).value
    return f"  // {shape}, swizzled in {width}-byte panels (docs/tensor_cores.md)"


def _layout_comment(op: ir.Operation) -> str:
    key = next((k for k in ("tile.layout", "layout") if k in op.attributes), None)
    if key is None:
        return ""
    attr = op.attributes[key]
    try:
        from tilemlir.dialects.tile import Layout, layout_parts

        thread_map, local_map, replicate = layout_parts(Layout(attr))
    except Exception:  # not a #tile.layout: show it as printed
        return f"  // layout {attr}"
    text = f"  // layout: thread {thread_map}, register {local_map}"
    return text + (f", replicated x{replicate}" if replicate > 1 else "")
