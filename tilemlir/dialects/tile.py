"""The `tile` dialect: tile-level ops over global tensors, shared tiles and block-owned fragments.

Defined with upstream MLIR's Python-defined-dialect DSL (IRDL underneath).
Ops print in generic form and keep their attributes as discardable
attributes (IRDL dialects have no properties). docs/ir.md is the contract
around these ops; each op's docstring gives its semantics and an example.

Verifiers never raise: a Python exception inside one is reported as an
internal verifier error on the op, so a malformed input can never crash the
bindings' caller.
"""


import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tilemlir import hardware
from tilemlir.hardware import format_bytes
from tilemlir.ir_util import constant_int, enclosing, walk_ops
from tilemlir.mlir import ext, ir

Operand = ext.Operand
Result = ext.Result
Region = ext.Region

SHARED, FRAGMENT, LOCAL = "shared", "fragment", "local"
THREAD_LOOP_ATTR = "tile.thread_loop"  # on thread code's tile.parallel (frontend/threads.py): point t is thread t
ON_CHIP_SPACES = (SHARED, FRAGMENT, LOCAL)
REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")
MAX_THREADS = hardware.MAX_THREADS_PER_BLOCK


class Tile(ext.Dialect, name="tile"):
    pass


class Layout(Tile.Attribute, name="layout"):
    """`#tile.layout<thread_map, local_map, replicate>`: which thread holds each fragment element.

    `thread_map` maps a fragment's logical index to the thread id holding it;
    when `replicate > 1` it takes one symbol, the replica in
    `[0, replicate)`. `local_map` maps the index to the register slot in
    that thread. Example, a 4x128 f32 fragment over 128 threads, each
    thread holding 4 consecutive columns of one row:

        #tile.layout<affine_map<(d0, d1) -> (d0 * 32 + d1 floordiv 4)>,
                     affine_map<(d0, d1) -> (d1 mod 4)>, 1 : i64>
    """

    thread_map: ir.AffineMapAttr
    local_map: ir.AffineMapAttr
    replicate: ir.IntegerAttr


def layout_parts(layout: Layout) -> tuple[ir.AffineMap, ir.AffineMap, int]:
    """(thread_map, local_map, replicate) of a layout attribute."""
    params = layout.params
    return ir.AffineMapAttr(params[0]).value, ir.AffineMapAttr(params[1]).value, ir.IntegerAttr(params[2]).value


def make_layout(thread_map: ir.AffineMap, local_map: ir.AffineMap, replicate: int = 1) -> Layout:
    return Layout.get(
        ir.AffineMapAttr.get(thread_map),
        ir.AffineMapAttr.get(local_map),
        ir.IntegerAttr.get(ir.IntegerType.get_signless(64), replicate),
    )


# ----------------------------------------------------------------------------
# Helpers shared by the verifiers.


def memory_space(type_: ir.Type) -> str | None:
    """"shared"/"fragment"/"local" for on-chip memrefs, None for global ones."""
    space = type_.memory_space
    if space is None:
        return None
    if isinstance(space, ir.StringAttr):
        return space.value
    return str(space)


def _space_name(space: str | None) -> str:
    return "global" if space is None else f'"{space}"'


def _is_memref(type_: ir.Type) -> bool:
    return isinstance(type_, ir.MemRefType)


def _static(dim: int) -> bool:
    return dim != ir.ShapedType.get_dynamic_size()


def _int_attr(op, name: str) -> int | None:
    attrs = op.operation.attributes
    if name not in attrs:
        return None
    attr = attrs[name]
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


def _int_range_problem(op, name: str, low: int, high: int) -> str | None:
    """Why attribute `name` of `op` is not an integer in low..high, or None."""
    value = _int_attr(op, name)
    if value is None or not low <= value <= high:
        return f"'{name}' must be an integer in {low}..{high}, got {op.operation.attributes[name]}"
    return None


def _bool_attr(op, name: str, default: bool = False) -> bool | None:
    attrs = op.operation.attributes
    if name not in attrs:
        return default
    attr = attrs[name]
    return attr.value if isinstance(attr, ir.BoolAttr) else None


_KIND_NAMES = {ir.MemRefType: "a memref", ir.IndexType: "index", ir.IntegerType: "an integer",
               ir.StringAttr: "a string", ir.IntegerAttr: "an integer", ir.ArrayAttr: "an array"}


def _kind_problem(what: str, value, constraint) -> str | None:
    if not isinstance(constraint, type) or not issubclass(constraint, (ir.Type, ir.Attribute)):
        return None
    if isinstance(value, constraint):
        return None
    return f"{what} must be {_KIND_NAMES.get(constraint, constraint.__name__)}, got {value}"


def _count_problem(kind: str, defs, got: int) -> str | None:
    fixed = [d.name for d in defs if d.variadicity == ext.Variadicity.single]
    variadic = [d.name for d in defs if d.variadicity != ext.Variadicity.single]
    if got == len(fixed) or (variadic and got > len(fixed)):
        return None
    names = ", ".join(fixed + [f"{n}..." for n in variadic])
    at_least = "at least " if variadic else ""
    return f"expects {at_least}{len(fixed)} {kind}(s){f' ({names})' if names else ''}, got {got}"


def _structure_problem(op) -> str | None:
    """What `op` lacks of the operands, attributes, results and regions its definition declares.

    Our verifiers run before the IRDL checks of the same op, so they check
    the structure first and name the operand or attribute that is wrong.
    """
    operand_defs, attr_defs, result_defs, region_defs = ext.partition_fields(type(op)._fields)
    operation = op.operation
    for kind, defs, values in (("operand", operand_defs, list(operation.operands)),
                               ("result", result_defs, list(operation.results))):
        problem = _count_problem(kind, defs, len(values))
        if problem:
            return problem
        fixed = [d for d in defs if d.variadicity == ext.Variadicity.single]
        variadic = [d for d in defs if d.variadicity != ext.Variadicity.single]
        # every tile op with a variadic group has it last
        per_value = fixed + variadic[:1] * (len(values) - len(fixed))
        for i, (value, d) in enumerate(zip(values, per_value)):
            problem = _kind_problem(f"{kind} #{i} ({d.name})", value.type, d.constraint)
            if problem:
                return problem
    attrs = operation.attributes
    for d in attr_defs:
        if d.name not in attrs:
            return f"requires attribute '{d.name}'"
        problem = _kind_problem(f"attribute '{d.name}'", attrs[d.name], d.constraint)
        if problem:
            return problem
    if len(operation.regions) != len(region_defs):
        return f"expects {len(region_defs)} region(s), got {len(operation.regions)}"
    return None


def _checked(verify):
    """Wrap a verifier returning an error message (or None) into the DSL's bool protocol. A verifier may
    also return (op, message): the problem is another op's (the kernel function's signature attributes)."""

    @functools.wraps(verify)
    def wrapper(self) -> bool:
        try:
            problem = _structure_problem(self) or verify(self)
        except Exception as exc:  # a verifier bug must not escape into the bindings
            problem = f"internal verifier error: {type(exc).__name__}: {exc}"
        if isinstance(problem, tuple):
            where, message = problem
            where.location.emit_error(f"'{where.name}' op {message}")
            return False
        if problem:
            self.location.emit_error(f"'{self.OPERATION_NAME}' op {problem}")
            return False
        return True

    return wrapper


def _check_region_args(op, count: int, what: str) -> str | None:
    region = op.operation.regions[0]
    blocks = list(region.blocks)
    if len(blocks) != 1:
        return f"region must have exactly one block, got {len(blocks)}"
    args = blocks[0].arguments
    if len(args) != count:
        return f"region must have {count} block argument(s), one per {what}, got {len(args)}"
    for i, arg in enumerate(args):
        if not isinstance(arg.type, ir.IndexType):
            return f"block argument #{i} must be of type index, got {arg.type}"
    return None


def _check_positive_extents(values, what: str) -> str | None:
    for i, value in enumerate(values):
        extent = constant_int(value)
        if extent is not None and extent <= 0:
            return f"{what} #{i} must be positive, got {extent}"
    return None


def _is_float(type_: ir.Type) -> bool:
    return isinstance(type_, ir.FloatType)


def _bitwidth(type_: ir.Type) -> int:
    if isinstance(type_, (ir.IntegerType, ir.FloatType)):
        return type_.width
    return 0


def _element_bytes(type_: ir.Type) -> int:
    """Bytes of one element in memory (a bool, i1, takes one)."""
    if isinstance(type_, ir.IndexType):
        return 8
    return -(-_bitwidth(type_) // 8)


def thread_bytes(type_: ir.MemRefType, threads: int) -> int:
    """The bytes of on-chip buffer `type_` that one thread of a `threads`-thread block holds at least: a
    local buffer whole, a fragment an even share of its elements (no layout gives a thread fewer)."""
    count = 1
    for dim in type_.shape:
        count *= dim
    if memory_space(type_) == FRAGMENT:
        count = -(-count // threads)
    return count * _element_bytes(type_.element_type)


def _strings(attrs, name: str, count: int) -> tuple[list[str] | None, str | None]:
    """The strings of array attribute `name` (None when absent) and what is wrong with it."""
    if name not in attrs:
        return None, None
    attr = attrs[name]
    if not isinstance(attr, ir.ArrayAttr) or not all(isinstance(a, ir.StringAttr) for a in attr):
        return None, f"'{name}' must be an array of strings"
    if count >= 0 and len(attr) != count:
        return None, f"'{name}' has {len(attr)} entries for {count} arguments"
    return [a.value for a in attr], None


def _dims_problem(entry: ir.Attribute, type_: ir.Type, index: int) -> str | None:
    """Whether `tile.arg_dims` entry `entry` describes argument `index` of type `type_`."""
    what = f"'tile.arg_dims' entry #{index}"
    if not isinstance(entry, ir.ArrayAttr) or not all(isinstance(d, (ir.IntegerAttr, ir.StringAttr)) for d in entry):
        return f"{what} must be an array of integers and symbol names"
    dims = [d.value for d in entry]
    if not _is_memref(type_):
        return None if not dims else f"{what} must be empty for the scalar argument of type {type_}, got {dims}"
    if len(dims) != type_.rank:
        return f"{what} gives {len(dims)} dims for an argument of type {type_}"
    for d, (dim, size) in enumerate(zip(dims, type_.shape)):
        if _static(size) != isinstance(dim, int) or (_static(size) and dim != size):
            expected = size if _static(size) else "a symbol name"
            return f"{what} says {dim!r} for dim #{d} of {type_}, which needs {expected}"
        if isinstance(dim, str) and not dim.isidentifier():
            return f"{what} names dim #{d} {dim!r}, which is not a symbol name"
    return None


def entry_attributes_problem(func: ir.Operation) -> str | None:
    """What is wrong with the signature attributes of kernel function `func` (docs/ir.md): `tile.arg_names`,
    `tile.arg_dtypes` and `tile.arg_dims` one entry per argument, the dims matching the argument types, and
    `tile.symbols` naming exactly the symbolic dims used. None when they are right (or absent)."""
    attrs = func.attributes
    if "function_type" not in attrs or not isinstance(attrs["function_type"], ir.TypeAttr):
        return None
    inputs = list(ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value).inputs)
    for name in ("tile.arg_names", "tile.arg_dtypes"):
        problem = _strings(attrs, name, len(inputs))[1]
        if problem:
            return problem
    symbols, problem = _strings(attrs, "tile.symbols", -1)
    if problem:
        return problem
    if "tile.arg_dims" not in attrs:
        return None
    all_dims = attrs["tile.arg_dims"]
    if not isinstance(all_dims, ir.ArrayAttr) or len(all_dims) != len(inputs):
        return f"'tile.arg_dims' must be an array with one entry per argument ({len(inputs)})"
    used: dict[str, None] = {}
    for index, (entry, type_) in enumerate(zip(all_dims, inputs)):
        problem = _dims_problem(entry, type_, index)
        if problem:
            return problem
        used.update((d.value, None) for d in entry if isinstance(d, ir.StringAttr))
    if symbols is None and used:
        return f"'tile.arg_dims' uses the symbolic dims {list(used)}, but the function has no 'tile.symbols'"
    if symbols is not None and (len(set(symbols)) != len(symbols) or set(symbols) != set(used)):
        return f"'tile.symbols' must name each symbolic dim of 'tile.arg_dims' once, {list(used)}, got {symbols}"
    return None


def _grid_problem(values) -> str | None:
    for axis, (value, limit) in enumerate(zip(values, hardware.MAX_GRID)):
        extent = constant_int(value)
        if extent is not None and extent > limit:
            return f"grid extent #{axis} is {extent}, more than the {limit} blocks a grid has along {'xyz'[axis]}"
    return None


def _thread_storage_problem(kernel: ir.Operation) -> str | None:
    """Whether the on-chip buffers of `kernel` fit in one thread: registers, then local memory."""
    threads = kernel.attributes["threads"].value
    total, parts = 0, []
    for op in walk_ops(kernel):
        if op.name in ("tile.alloc_fragment", "tile.alloc_local"):
            size = thread_bytes(op.results[0].type, threads)
            total += size
            name = ir.StringAttr(op.attributes["name"]).value if "name" in op.attributes else op.name
            parts.append(f"'{name}' {size} bytes")
    if total <= hardware.MAX_BYTES_PER_THREAD:
        return None
    return (f"the block's fragments and local buffers need at least {format_bytes(total)} in each thread "
            f"({', '.join(parts)}), more than a thread can hold ({hardware.THREAD_CAPACITY})")


def _on_chip_size_problem(op: ir.Operation, type_: ir.MemRefType) -> str | None:
    """Whether one fragment fits in the registers, or one local buffer in the storage, of a thread."""
    space = memory_space(type_)
    kernel = enclosing(op, "tile.kernel")
    threads = _int_attr(kernel, "threads") if kernel is not None else None
    if space == FRAGMENT and threads is not None and threads > 0:
        size = thread_bytes(type_, threads)
        registers = -(-size // hardware.REGISTER_BYTES)
        if registers > hardware.MAX_REGISTERS_PER_THREAD:
            return (f"needs at least {registers} 32-bit registers in each of the block's {threads} threads "
                    f"({size // _element_bytes(type_.element_type)} of its {type_.element_type} elements a "
                    f"thread), more than the {hardware.MAX_REGISTERS_PER_THREAD} a thread has: make the tile "
                    "smaller and loop over the rest, or use more threads")
    if space == LOCAL:
        size = thread_bytes(type_, 1)
        if size > hardware.MAX_BYTES_PER_THREAD:
            return (f"needs {format_bytes(size)} in each thread, more than a thread can hold "
                    f"({hardware.THREAD_CAPACITY})")
    return None


def _widens(src: ir.Type, dst: ir.Type) -> bool:
    """Whether accumulating `src` elements into `dst` is an allowed widening."""
    if src == dst:
        return True
    if _is_float(src) and _is_float(dst):
        return _bitwidth(dst) > _bitwidth(src)
    if isinstance(src, ir.IntegerType) and isinstance(dst, ir.IntegerType):
        return dst.width > src.width
    return False


def check_layout(layout_attr: ir.Attribute, rank: int) -> str | None:
    """Why `layout_attr` cannot be the layout of a rank-`rank` fragment, or None."""
    if not isinstance(layout_attr, Layout):
        return f"'layout' must be a #tile.layout attribute, got {layout_attr}"
    thread_map, local_map, replicate = layout_parts(layout_attr)
    for label, amap in (("thread_map", thread_map), ("local_map", local_map)):
        if amap.n_dims != rank:
            return f"layout {label} takes {amap.n_dims} dims but the fragment has rank {rank}"
        if len(amap.results) != 1:
            return f"layout {label} must have exactly one result, got {len(amap.results)}"
    if replicate < 1:
        return f"layout replicate must be >= 1, got {replicate}"
    expected_symbols = 1 if replicate > 1 else 0
    if thread_map.n_symbols != expected_symbols:
        return (
            f"layout thread_map must take {expected_symbols} symbol(s) for replicate = {replicate}, "
            f"got {thread_map.n_symbols}"
        )
    if local_map.n_symbols != 0:
        return "layout local_map must take no symbols"
    return None


SWIZZLE_ATTR = "tile.swizzle"
SWIZZLE_WIDTHS = (0, 32, 64, 128)


def swizzle_problem(width: int | None, shape: list[int], element_bytes: int) -> str | None:
    """Why a shared buffer of `shape` cannot carry `tile.swizzle = width` (docs/tensor_cores.md), or None."""
    if width not in SWIZZLE_WIDTHS:
        return f"'{SWIZZLE_ATTR}' must be one of {', '.join(map(str, SWIZZLE_WIDTHS))}, got {width}"
    if width == 0:
        return None
    if len(shape) < 2:
        return f"'{SWIZZLE_ATTR}' needs a buffer of rank 2 or more (rows of a tile), got rank {len(shape)}"
    row_bytes = shape[-1] * element_bytes
    if row_bytes % width:
        return f"'{SWIZZLE_ATTR}' = {width} needs rows of a multiple of {width} bytes, got {row_bytes}"
    return None


# ----------------------------------------------------------------------------
# Operations.


class YieldOp(Tile.Operation, name="yield", traits=[ir.IsTerminatorTrait]):
    """Terminator of `tile.kernel`, `tile.parallel` and `tile.pipelined` regions.

        "tile.yield"() : () -> ()
    """

    @_checked
    def verify_invariants(self):
        parent = self.operation.parent
        if parent is None or parent.name not in ("tile.kernel", "tile.parallel", "tile.pipelined"):
            where = parent.name if parent is not None else "nothing"
            return f"must terminate a tile.kernel, tile.parallel or tile.pipelined region, not {where}"
        return None


class KernelOp(Tile.Operation, name="kernel"):
    """One thread block's program, launched over a grid of 1 to 3 dims.

    Operands are the grid extents (index; constant ones within the
    hardware's grid, `tilemlir.hardware.MAX_GRID`); `threads` the block size
    (1..1024). The single-block region takes one index argument per grid
    dim, the block's coordinates. The optional `tile.min_blocks` asks for at
    least that many resident blocks per multiprocessor (CUDA's second
    `__launch_bounds__` argument: it caps registers per thread); 1..32, and
    `threads * min_blocks` at most 2048. The optional `tile.rasterization =
    {order = "row" | "column", panel = P}` (T.use_swizzle, 2- and 3-dim grids)
    remaps the block coordinates the region sees (`rewriting/rasterization.py`).
    The fragments and local buffers
    inside must fit in a thread (`thread_bytes`), and the enclosing
    function's signature attributes must match its argument types
    (`entry_attributes_problem`, reported at the function).

        "tile.kernel"(%gx) ({
        ^bb0(%bx: index):
          "tile.yield"() : () -> ()
        }) {threads = 128 : i64} : (index) -> ()
    """

    grid: Sequence[Operand[ir.IndexType]]
    threads: ir.IntegerAttr
    body: Region

    @_checked
    def verify_invariants(self):
        rank = len(self.operation.operands)
        if not 1 <= rank <= 3:
            return f"must have 1 to 3 grid extents, got {rank}"
        threads = _int_attr(self, "threads")
        if not 1 <= threads <= MAX_THREADS:
            return f"'threads' must be in 1..{MAX_THREADS}, got {threads}"
        problem = min_blocks_problem(self.operation) or rasterization_problem(self.operation)
        if problem is not None:
            return problem
        function = enclosing(self.operation, "func.func")
        problem = entry_attributes_problem(function) if function is not None else None
        if problem is not None:
            return function, problem
        return _check_positive_extents(self.operation.operands, "grid extent") or _grid_problem(
            self.operation.operands)

    @_checked
    def verify_region_invariants(self):
        return _check_region_args(self, len(self.operation.operands), "grid dim") or _thread_storage_problem(
            self.operation)


class _AllocOp(Tile.Operation):
    """Shared verifier of the three allocation ops (no name: not an op itself)."""

    SPACE = ""

    @_checked
    def verify_invariants(self):
        type_ = self.operation.results[0].type
        space = memory_space(type_)
        if space != self.SPACE:
            return f'result memory space must be "{self.SPACE}", got {_space_name(space)}'
        for i, dim in enumerate(type_.shape):
            if not _static(dim):
                return f"dim #{i} of the result must be static: on-chip buffers need a compile-time shape"
            if dim <= 0:
                return f"dim #{i} of the result must be positive, got {dim}"
        if enclosing(self.operation, "tile.kernel") is None:
            return "must be inside a tile.kernel"
        problem = _on_chip_size_problem(self.operation, type_)
        if problem is not None:
            return problem
        if "layout" in self.operation.attributes:
            if self.SPACE != FRAGMENT:
                return "only fragments carry a 'layout' attribute"
            return check_layout(self.operation.attributes["layout"], type_.rank)
        if SWIZZLE_ATTR in self.operation.attributes:
            if self.SPACE != SHARED:
                return f"only shared buffers carry a '{SWIZZLE_ATTR}' attribute"
            width = _int_attr(self, SWIZZLE_ATTR)
            return swizzle_problem(width, list(type_.shape), _element_bytes(type_.element_type))
        return None


class AllocSharedOp(_AllocOp, name="alloc_shared"):
    """A tile in the block's shared memory; `name` is the Python buffer name.

        %s = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x32xf16, "shared">
    """

    SPACE = SHARED
    result: Result[ir.MemRefType]


class AllocFragmentOp(_AllocOp, name="alloc_fragment"):
    """A register tile owned by the whole block; `infer-layouts` sets its `layout`.

        %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x1024xf32, "fragment">
    """

    SPACE = FRAGMENT
    result: Result[ir.MemRefType]


class AllocLocalOp(_AllocOp, name="alloc_local"):
    """Registers private to each thread (every thread has its own copy).

        %acc = "tile.alloc_local"() {name = "acc"} : () -> memref<1xf32, "local">
    """

    SPACE = LOCAL
    result: Result[ir.MemRefType]


class ParallelOp(Tile.Operation, name="parallel"):
    """An iteration space of independent points; the compiler maps points to threads.

    One index block argument per extent. Element code inside uses
    `memref.load/store`, `arith` and `math`.

        "tile.parallel"(%c4, %c1024) ({
        ^bb0(%i: index, %j: index):
          "tile.yield"() : () -> ()
        }) : (index, index) -> ()
    """

    extents: Sequence[Operand[ir.IndexType]]
    body: Region

    @_checked
    def verify_invariants(self):
        if len(self.operation.operands) == 0:
            return "must have at least one extent"
        if enclosing(self.operation, "tile.kernel") is None:
            return "must be inside a tile.kernel"
        return _check_positive_extents(self.operation.operands, "extent")

    @_checked
    def verify_region_invariants(self):
        return _check_region_args(self, len(self.operation.operands), "extent")


class PipelinedOp(Tile.Operation, name="pipelined"):
    """A serial loop `for k in [lower, upper) step step` whose copies are pipelined `num_stages` deep.

        "tile.pipelined"(%c0, %kt, %c1) ({
        ^bb0(%k: index):
          "tile.yield"() : () -> ()
        }) {num_stages = 3 : i64} : (index, index, index) -> ()
    """

    lower: Operand[ir.IndexType]
    upper: Operand[ir.IndexType]
    step: Operand[ir.IndexType]
    num_stages: ir.IntegerAttr
    body: Region

    @_checked
    def verify_invariants(self):
        stages = _int_attr(self, "num_stages")
        if stages < 1:
            return f"'num_stages' must be >= 1, got {stages}"
        step = constant_int(self.operation.operands[2])
        if step is not None and step <= 0:
            return f"step must be positive, got {step}"
        return None

    @_checked
    def verify_region_invariants(self):
        return _check_region_args(self, 1, "loop")


def _box_problem(side: str, type_: ir.MemRefType, shape: list[int], offsets: list[ir.Value]) -> str | None:
    """Check that the copy box, right-aligned onto `type_`, fits it at `offsets` where static."""
    rank = type_.rank
    lead = len(shape) - rank
    if lead < 0:
        return f"{side} has rank {rank} but the copy box {shape} has rank {len(shape)}"
    for i in range(lead):
        if shape[i] != 1:
            return f"copy box dim #{i} is {shape[i]}, but {side} (rank {rank}) only admits 1 there"
    for d in range(rank):
        extent, size = shape[lead + d], type_.shape[d]
        if not _static(size):
            continue
        offset = constant_int(offsets[d]) or 0
        if offset + extent > size:
            return (
                f"copy box extent {extent} at offset {offset} exceeds dim #{d} of {side} "
                f"({type_}), which is {size}"
            )
    return None


class CopyOp(Tile.Operation, name="copy"):
    """Copy a box of elements between any two memory levels, converting the element type.

    Operands: `src`, `dst`, then `rank(src)` offsets into `src` and
    `rank(dst)` offsets into `dst`. `shape` is the box; each side maps it by
    right alignment (leading box dims beyond a side's rank must be 1). Box
    elements outside a global tensor read as zero and are not written. No
    copy converts into i1 from another type (it would keep the low bit).

        "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [4, 1024]}
            : (memref<?x1024xbf16>, memref<4x1024xf32, "fragment">, index, index, index, index) -> ()
    """

    src: Operand[ir.MemRefType]
    dst: Operand[ir.MemRefType]
    offsets: Sequence[Operand[ir.IndexType]]
    shape: ir.ArrayAttr

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        src, dst = operands[0].type, operands[1].type
        offsets = operands[2:]
        if len(offsets) != src.rank + dst.rank:
            return (
                f"expects {src.rank + dst.rank} offsets (rank of src {src.rank} + rank of dst {dst.rank}), "
                f"got {len(offsets)}"
            )
        if memory_space(src) is None and memory_space(dst) is None:
            return "cannot copy global to global: one side must be shared, fragment or local"
        shape_attr = self.operation.attributes["shape"]
        if not all(isinstance(a, ir.IntegerAttr) for a in shape_attr):
            return "'shape' must be an array of integers"
        shape = [a.value for a in shape_attr]
        if not shape:
            return "'shape' must not be empty"
        for i, extent in enumerate(shape):
            if extent <= 0:
                return f"copy box extent #{i} must be positive, got {extent}"
        if _bitwidth(dst.element_type) == 1 and src.element_type != dst.element_type:
            return (f"cannot convert {src.element_type} to i1: a copy would truncate to the low bit; compare "
                    "with zero in element code (arith.cmpi ne / arith.cmpf une)")
        return _box_problem("src", src, shape, offsets[: src.rank]) or _box_problem(
            "dst", dst, shape, offsets[src.rank :]
        )


class FillOp(Tile.Operation, name="fill"):
    """Set every element of an on-chip buffer to a scalar of its element type.

        "tile.fill"(%acc, %zero) : (memref<4x128xf32, "fragment">, f32) -> ()
    """

    dst: Operand[ir.MemRefType]
    value: Operand[Any]

    @_checked
    def verify_invariants(self):
        dst, value = self.operation.operands[0].type, self.operation.operands[1].type
        if memory_space(dst) not in ON_CHIP_SPACES:
            return f"dst must be a shared, fragment or local buffer, got {_space_name(memory_space(dst))} memory"
        if value != dst.element_type:
            return f"value type {value} must equal the dst element type {dst.element_type}"
        return None


class ReduceOp(Tile.Operation, name="reduce"):
    """Reduce `src` along `dim` into `dst` (src's shape without `dim`).

    `kind` is sum, max, min, abssum or absmax. With `clear = true` the old
    contents of `dst` are ignored; with false they take part in the
    reduction. `dst` may be wider than `src` (f16 -> f32 accumulation). A
    rank-1 source reduces into a one-element `dst`.

        "tile.reduce"(%x, %rmax) {kind = "max", dim = 1 : i64, clear = true}
            : (memref<4x1024xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    """

    src: Operand[ir.MemRefType]
    dst: Operand[ir.MemRefType]
    kind: ir.StringAttr
    dim: ir.IntegerAttr
    clear: Any  # a BoolAttr; IRDL has no constraint for it, checked below

    @_checked
    def verify_invariants(self):
        src, dst = self.operation.operands[0].type, self.operation.operands[1].type
        for label, type_ in (("src", src), ("dst", dst)):
            if memory_space(type_) not in ON_CHIP_SPACES:
                return f"{label} must be a fragment, shared or local buffer, got {_space_name(memory_space(type_))} memory"
        if _bool_attr(self, "clear") is None:
            return "'clear' must be a boolean"
        kind = self.operation.attributes["kind"].value
        if kind not in REDUCE_KINDS:
            return f"kind must be one of {', '.join(REDUCE_KINDS)}, got '{kind}'"
        dim = _int_attr(self, "dim")
        if dim is None or not 0 <= dim < src.rank:
            return f"dim must be in [0, {src.rank}) for a rank-{src.rank} src, got {dim}"
        expected = [s for i, s in enumerate(src.shape) if i != dim]
        got = list(dst.shape)
        if got != expected and not (not expected and got == [1]):
            return f"dst shape {got} must equal the src shape {list(src.shape)} without dim {dim}: {expected}"
        if not _widens(src.element_type, dst.element_type):
            return (
                f"dst element type {dst.element_type} must equal or widen the src element type "
                f"{src.element_type}"
            )
        return None


FP8_TYPES = ("f8E4M3FN", "f8E5M2")  # a gemm's A and B may be of different fp8 kinds (as wgmma's are)
_GEMM_ACCUMULATORS = {"f16": ("f16", "f32"), "bf16": ("f32",), "f32": ("f32",), "f64": ("f64",),
                      "f8E4M3FN": ("f32",), "f8E5M2": ("f32",), "i8": ("i32",)}


class GemmOp(Tile.Operation, name="gemm"):
    """`C += op(A) x op(B)`, op transposing when `transpose_a` / `transpose_b` are set.

    A and B are shared or fragment tiles of one element type (or two fp8 kinds); C is a
    fragment accumulator (f32 for f16/bf16/fp8 inputs, f16 also for f16,
    i32 for i8). A shared operand may be a *ring* of tiles: a buffer of rank
    2 + r whose last two dims are the tile, selected by r leading `indices`
    (A's first, then B's), as a `T.Pipelined` ring slot is.

        "tile.gemm"(%A_s, %B_s, %C) {transpose_a = false, transpose_b = false}
            : (memref<128x32xf16, "shared">, memref<32x128xf16, "shared">, memref<128x128xf32, "fragment">) -> ()
        "tile.gemm"(%A_ring, %B_s, %C, %slot) {transpose_a = false, transpose_b = false}
            : (memref<3x128x32xf16, "shared">, memref<32x128xf16, "shared">, memref<128x128xf32, "fragment">,
               index) -> ()
    """

    a: Operand[ir.MemRefType]
    b: Operand[ir.MemRefType]
    c: Operand[ir.MemRefType]
    indices: Sequence[Operand[ir.IndexType]]

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        a, b, c = (v.type for v in operands[:3])
        if "tile.gemm_mnk" in self.operation.attributes:
            return _thread_level_gemm_problem(self, a, b, c, len(operands) - 3)
        for label, type_ in (("A", a), ("B", b)):
            space = memory_space(type_)
            if space not in (SHARED, FRAGMENT):
                return f"operand {label} must be a shared or fragment tile, got {_space_name(space)} memory"
            if type_.rank < 2 or (space == FRAGMENT and type_.rank != 2):
                return (f"operand {label} must be rank 2{' (a shared ring of tiles: rank 3 or more)' if space == SHARED else ''}"
                        f", got rank {type_.rank}")
        ring = (a.rank - 2) + (b.rank - 2)
        if len(operands) - 3 != ring:
            return (f"expects {ring} ring indices (A's {a.rank - 2} leading dims, then B's {b.rank - 2}), "
                    f"got {len(operands) - 3}")
        if memory_space(c) != FRAGMENT:
            return f"accumulator C must be a fragment, got {_space_name(memory_space(c))} memory"
        if c.rank != 2:
            return f"accumulator C must be rank 2, got rank {c.rank}"
        trans_a = _bool_attr(self, "transpose_a")
        trans_b = _bool_attr(self, "transpose_b")
        if trans_a is None or trans_b is None:
            return "'transpose_a' and 'transpose_b' must be booleans"
        a_rows, a_cols = a.shape[-2:]
        b_rows, b_cols = b.shape[-2:]
        m, ka = (a_cols, a_rows) if trans_a else (a_rows, a_cols)
        kb, n = (b_cols, b_rows) if trans_b else (b_rows, b_cols)
        if ka != kb:
            return f"K mismatch: A gives K = {ka}, B gives K = {kb} (transpose_a = {trans_a}, transpose_b = {trans_b})"
        if list(c.shape) != [m, n]:
            return f"accumulator C must be {m}x{n} (M x N), got {c.shape[0]}x{c.shape[1]}"
        if a.element_type != b.element_type and not {str(a.element_type), str(b.element_type)} <= set(FP8_TYPES):
            return f"A and B element types differ: {a.element_type} vs {b.element_type}"
        allowed = _GEMM_ACCUMULATORS.get(str(a.element_type), ())
        if str(c.element_type) not in allowed:
            return (
                f"accumulator element type {c.element_type} is not valid for {a.element_type} inputs "
                f"(expected {' or '.join(allowed) or 'a supported input type'})"
            )
        return None


def _thread_level_gemm_problem(op, a, b, c, ring: int) -> str | None:
    """A tile.mma gemm partition-threads kept (docs/tensor_cores.md): C, and A when a fragment, are now
    "local" register arrays and `tile.gemm_mnk` = [M, N, K] gives the shapes they no longer show."""
    mnk = op.operation.attributes["tile.gemm_mnk"]
    if "tile.mma" not in op.operation.attributes:
        return "a gemm with 'tile.gemm_mnk' (thread level) must carry 'tile.mma'"
    if not isinstance(mnk, ir.ArrayAttr) or len(mnk) != 3 or not all(isinstance(v, ir.IntegerAttr) for v in mnk):
        return "'tile.gemm_mnk' must be an array of three integers"
    if memory_space(c) != LOCAL or c.rank != 1:
        return f"at the thread level the accumulator C must be a rank-1 \"local\" register array, got {c}"
    if memory_space(b) != SHARED:
        return f"operand B must be a shared tile, got {_space_name(memory_space(b))} memory"
    if memory_space(a) not in (SHARED, LOCAL):
        return f"operand A must be a shared tile or a register array, got {_space_name(memory_space(a))} memory"
    lead = (a.rank - 2 if memory_space(a) == SHARED else 0) + b.rank - 2
    if ring != lead:
        return f"expects {lead} ring indices, got {ring}"
    return None


def gemm_ring_indices(op: ir.Operation) -> tuple[list[ir.Value], list[ir.Value]]:
    """The leading indices that select A's and B's tile in their rings (empty for plain tiles)."""
    operands = list(op.operands)
    lead_a = operands[0].type.rank - 2 if memory_space(operands[0].type) == SHARED else 0
    return operands[3:3 + lead_a], operands[3 + lead_a:]


class AtomicAddOp(Tile.Operation, name="atomic_add"):
    """Atomically add `value` into the global tensor or shared buffer `dst` at `indices`.

    A scalar `value` adds into one element; an on-chip buffer adds its
    whole box, right-aligned onto `dst`, starting at `indices`.

        "tile.atomic_add"(%Out, %v, %i, %j) : (memref<?x64xf32>, f32, index, index) -> ()
    """

    dst: Operand[ir.MemRefType]
    value: Operand[Any]
    indices: Sequence[Operand[ir.IndexType]]

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        dst, value = operands[0].type, operands[1].type
        if memory_space(dst) not in (None, SHARED):
            return f"dst must be a global tensor or a shared buffer, got {_space_name(memory_space(dst))} memory"
        if len(operands) - 2 != dst.rank:
            return f"expects {dst.rank} indices (rank of dst), got {len(operands) - 2}"
        elem = value.element_type if _is_memref(value) else value
        if _is_memref(value):
            if memory_space(value) not in ON_CHIP_SPACES:
                return "value must be a scalar or an on-chip buffer"
            if value.rank > dst.rank:
                return f"value rank {value.rank} exceeds dst rank {dst.rank}"
        if elem != dst.element_type:
            return f"value element type {elem} must equal the dst element type {dst.element_type}"
        return None


class AssumeOp(Tile.Operation, name="assume"):
    """A user fact (`T.assume`) the prover may use; the runtime checks `expr` at launch.

        "tile.assume"(%cond) {expr = "N % 128 == 0"} : (i1) -> ()
    """

    cond: Operand[ir.IntegerType]
    expr: ir.StringAttr

    @_checked
    def verify_invariants(self):
        type_ = self.operation.operands[0].type
        if not (isinstance(type_, ir.IntegerType) and type_.width == 1):
            return f"cond must be i1, got {type_}"
        return None


# ----------------------------------------------------------------------------
# Builders with Python-friendly arguments (regions come with their block).


def _without_segments(op):
    """Drop the `operandSegmentSizes` the DSL adds for variadic operands: these ops have one
    variadic group at the end, so operand counts alone are unambiguous (and the parsed form has none)."""
    if "operandSegmentSizes" in op.operation.attributes:
        del op.operation.attributes["operandSegmentSizes"]
    return op


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _with_block(op, arg_count: int, loc=None):
    index = ir.IndexType.get()
    op.operation.regions[0].blocks.append(*([index] * arg_count), arg_locs=[loc or ir.Location.current] * arg_count)
    return op


def kernel(grid: list[ir.Value], threads: int, *, min_blocks: int | None = None, loc=None, ip=None) -> KernelOp:
    """A `tile.kernel` with its entry block (one index argument per grid dim)."""
    op = _with_block(_without_segments(KernelOp(list(grid), _i64(threads), loc=loc, ip=ip)), len(grid), loc)
    if min_blocks is not None:
        op.operation.attributes[MIN_BLOCKS] = _i64(min_blocks)
    return op


MIN_BLOCKS = "tile.min_blocks"  # on tile.kernel, then on the gpu.launch partition-threads makes of it
MAX_MIN_BLOCKS = 32  # resident blocks per multiprocessor on sm_90
MAX_THREADS_PER_SM = 2048


def min_blocks_problem(op: ir.Operation) -> str | None:
    """What is wrong with `op`'s `tile.min_blocks` for its block of `threads`, or None."""
    if MIN_BLOCKS not in op.attributes:
        return None
    attr = op.attributes[MIN_BLOCKS]
    if not isinstance(attr, ir.IntegerAttr) or not 1 <= attr.value <= MAX_MIN_BLOCKS:
        return f"'{MIN_BLOCKS}' must be an integer in 1..{MAX_MIN_BLOCKS}, got {attr}"
    threads = op.attributes["threads"].value if "threads" in op.attributes else None
    if threads is not None and threads * attr.value > MAX_THREADS_PER_SM:
        return (f"'{MIN_BLOCKS}' = {attr.value} blocks of {threads} threads exceed the "
                f"{MAX_THREADS_PER_SM} threads a multiprocessor holds")
    return None


RASTERIZATION = "tile.rasterization"  # on tile.kernel; applied where its block coordinates become values
RASTER_ORDERS = ("row", "column")


@dataclass(frozen=True)
class Rasterization:
    """T.use_swizzle(panel, order): consecutive blocks walk panels `panel` tiles wide (docs/language.md)."""

    order: str
    panel: int


def rasterization(op: ir.Operation) -> Rasterization | None:
    """`op`'s `tile.rasterization`, None when it has none (assumes `rasterization_problem` found none)."""
    if RASTERIZATION not in op.attributes:
        return None
    attr = ir.DictAttr(op.attributes[RASTERIZATION])
    return Rasterization(ir.StringAttr(attr["order"]).value, ir.IntegerAttr(attr["panel"]).value)


def rasterization_problem(op: ir.Operation) -> str | None:
    """What is wrong with `op`'s `tile.rasterization`, or None."""
    if RASTERIZATION not in op.attributes:
        return None
    attr = op.attributes[RASTERIZATION]
    expected = (f"'{RASTERIZATION}' must be {{order = \"row\" | \"column\", panel = <positive integer>}}, "
                f"got {attr}")
    if not isinstance(attr, ir.DictAttr) or len(attr) != 2 or "order" not in attr or "panel" not in attr:
        return expected
    order, panel = attr["order"], attr["panel"]
    if not isinstance(order, ir.StringAttr) or order.value not in RASTER_ORDERS:
        return expected
    if not isinstance(panel, ir.IntegerAttr) or panel.value < 1:
        return expected
    if len(op.operands) < 2:
        return f"'{RASTERIZATION}' needs a grid of 2 or 3 dims, got {len(op.operands)}"
    return None


def set_rasterization(op: ir.Operation, value: Rasterization) -> None:
    op.attributes[RASTERIZATION] = ir.DictAttr.get(
        {"order": ir.StringAttr.get(value.order), "panel": _i64(value.panel)})


def parallel(extents: list[ir.Value], *, loc=None, ip=None) -> ParallelOp:
    return _with_block(_without_segments(ParallelOp(list(extents), loc=loc, ip=ip)), len(extents), loc)


def pipelined(lower: ir.Value, upper: ir.Value, step: ir.Value, num_stages: int, *, loc=None, ip=None) -> PipelinedOp:
    return _with_block(PipelinedOp(lower, upper, step, _i64(num_stages), loc=loc, ip=ip), 1, loc)


def body_block(op) -> ir.Block:
    return op.operation.regions[0].blocks[0]


def _alloc(cls, space: str, shape, element_type, name, loc, ip):
    type_ = ir.MemRefType.get(list(shape), element_type, memory_space=ir.StringAttr.get(space))
    op = cls(type_, loc=loc, ip=ip)
    if name:
        op.operation.attributes["name"] = ir.StringAttr.get(name)
    return op


def alloc_shared(shape, element_type, name: str | None = None, *, loc=None, ip=None) -> AllocSharedOp:
    return _alloc(AllocSharedOp, SHARED, shape, element_type, name, loc, ip)


def alloc_fragment(shape, element_type, name: str | None = None, *, loc=None, ip=None) -> AllocFragmentOp:
    return _alloc(AllocFragmentOp, FRAGMENT, shape, element_type, name, loc, ip)


def alloc_local(shape, element_type, name: str | None = None, *, loc=None, ip=None) -> AllocLocalOp:
    return _alloc(AllocLocalOp, LOCAL, shape, element_type, name, loc, ip)


def copy(src, dst, src_offsets, dst_offsets, shape, *, loc=None, ip=None) -> CopyOp:
    box = ir.ArrayAttr.get([_i64(s) for s in shape])
    return _without_segments(CopyOp(src, dst, [*src_offsets, *dst_offsets], box, loc=loc, ip=ip))


def fill(dst, value, *, loc=None, ip=None) -> FillOp:
    return FillOp(dst, value, loc=loc, ip=ip)


def reduce(src, dst, kind: str, dim: int, clear: bool = True, *, loc=None, ip=None) -> ReduceOp:
    # The DSL rejects a falsy attribute value (BoolAttr false) at construction, so `clear` is set after.
    op = ReduceOp(src, dst, ir.StringAttr.get(kind), _i64(dim), ir.BoolAttr.get(True), loc=loc, ip=ip)
    op.operation.attributes["clear"] = ir.BoolAttr.get(clear)
    return op


def gemm(a, b, c, transpose_a: bool = False, transpose_b: bool = False, ring_indices=(), *, loc=None,
         ip=None) -> GemmOp:
    """`ring_indices`: A's leading ring indices, then B's (none for plain tiles)."""
    op = _without_segments(GemmOp(a, b, c, list(ring_indices), loc=loc, ip=ip))
    op.operation.attributes["transpose_a"] = ir.BoolAttr.get(transpose_a)
    op.operation.attributes["transpose_b"] = ir.BoolAttr.get(transpose_b)
    return op


def atomic_add(dst, value, indices, *, loc=None, ip=None) -> AtomicAddOp:
    return _without_segments(AtomicAddOp(dst, value, list(indices), loc=loc, ip=ip))


def assume(cond, expr: str, *, loc=None, ip=None) -> AssumeOp:
    return AssumeOp(cond, ir.StringAttr.get(expr), loc=loc, ip=ip)


def yield_(*, loc=None, ip=None) -> YieldOp:
    return YieldOp(loc=loc, ip=ip)
