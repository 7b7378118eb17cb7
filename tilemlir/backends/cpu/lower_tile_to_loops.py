"""`lower-tile-to-loops`: the reference meaning of tile-level IR, as upstream loops.

Takes tile-level IR (what the frontend emits: `tile.kernel`, `tile.parallel`,
`tile.pipelined`, the tile ops, on-chip buffers in memory spaces); gives
upstream `scf/memref/arith/math` with no memory spaces, which the CPU
backend JIT-compiles:

- the grid becomes a `scf.for` nest over block indices, remapped by the
  kernel's `tile.rasterization` as partition-threads does
  (`rewriting/rasterization.py`); `tile.parallel` and `tile.pipelined`
  become `scf.for` nests (parallel points run in order);
- `tile.copy/fill/reduce/gemm/atomic_add` become their loop nests
  (`tilemlir.backends.cpu.tile_ops`);
- global reads that may be out of range read their padding
  (`tilemlir.analysis.padding`, recorded as `tile.pad` first, while the IR
  still has the structure the analysis reads); out-of-range global writes
  are dropped; this holds for element code's `memref.load/store` too;
- `tile.print` and `tile.device_assert` become calls into Python
  (`backends/cpu/debug_calls.py`), once per block;
- `tile.assume` is dropped (the runtime checks it at launch); so are a
  pipeline's `gpu.barrier`, `tile.cp_async_commit` and `tile.cp_async_wait`
  (points run in order; its `tile.async` copies are copies);
- on-chip buffers become heap buffers allocated once at the function entry
  and poisoned at the start of every block (`backends/cpu/buffers.py`);
- every access to an on-chip buffer (element code and the tile ops' loops)
  is checked at run time (`backends/cpu/checks.py`): an index out of the
  buffer, and a read of an element the block has not stored to, are
  errors (the access does not happen); the function gets a trailing
  `memref<8xi64>` status argument and a `tile.sim_sites` attribute
  describing its errors.
"""

from __future__ import annotations

from tilemlir.analysis.padding import PAD_ATTR, padding_attr
from tilemlir.backends.cpu import buffers, checks, debug_calls, tile_ops
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tile import memory_space, rasterization
from tilemlir.ir_util import enclosing, ops_named
from tilemlir.mlir import arith, ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.rasterization import rasterized_coordinates
from tilemlir.rewriting.thread_builder import Builder

_ALLOCS = ("tile.alloc_shared", "tile.alloc_fragment", "tile.alloc_local")
# One block's points run in order here: a pipeline's barrier and cp.async groups order nothing more
# (block-level ones: a barrier inside a T.Parallel's element code stays, an error of the lowering below).
_SYNCHRONIZATION = ("gpu.barrier", "tile.cp_async_commit", "tile.cp_async_wait")


@register_pass("lower-tile-to-loops", "tile-level IR -> upstream scf/memref/arith loops (CPU reference semantics)")
def run(module: ir.Operation, options) -> None:
    by_function: dict[ir.Operation, list[ir.Operation]] = {}
    for kernel in ops_named(module, "tile.kernel"):
        by_function.setdefault(buffers.enclosing_function(kernel), []).append(kernel)
    for function, kernels in by_function.items():
        with function.location:  # types built below need a location for their diagnostics
            checker = checks.Checker(function, checks.add_status_argument(function), threads=False)
            for kernel in kernels:
                _lower_kernel(kernel, checker)
            function.attributes[checks.SITES_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in checker.sites])


def _lower_kernel(kernel: ir.Operation, checker: checks.Checker) -> None:
    function = buffers.enclosing_function(kernel)
    _record_padding(kernel)
    _rasterize(kernel)
    debug_calls.lower_debug_ops(kernel, function, list(kernel.regions[0].blocks[0].arguments), None)
    element_accesses = [op for op in ops_named(kernel, "memref.load", "memref.store") if _touches_global(op)]
    for op in ops_named(function, "tile.assume", *_SYNCHRONIZATION):
        if op.name == "tile.assume" or enclosing(op, "tile.parallel", stop="tile.kernel") is None:
            op.erase()
    for op in ops_named(kernel, *tile_ops.LOWERINGS):
        tile_ops.LOWERINGS[op.name](op)
    for op in element_accesses:
        _guard_element_access(op)
    on_chip = _hoist_buffers(function, kernel, checker)
    for op in ops_named(kernel, "tile.parallel"):
        b.inline_into_loop_nest(op, list(op.operands))
    for op in ops_named(kernel, "tile.pipelined"):
        lower, upper, step = op.operands
        b.inline_into_loop_nest(op, [upper], [lower], [step])
    for op in ops_named(kernel, "memref.load", "memref.store"):
        checker.instrument(op)
    _lower_grid(kernel, on_chip, checker)
    buffers.erase_memory_spaces(function)


def _record_padding(kernel: ir.Operation) -> None:
    """Set `tile.pad` on every global read the padding rule covers."""
    for op in ops_named(kernel, "tile.copy", "memref.load"):
        if PAD_ATTR in op.attributes or not tile_ops.is_global(op.operands[0]):
            continue
        if op.name == "memref.load" and not _inside(op, "tile.parallel"):
            continue  # a scalar read outside element code feeds no reduction: pads with 0
        try:
            op.attributes[PAD_ATTR] = padding_attr(op)
        except ValueError as exc:
            raise diag.error(op, f"cannot decide the padding of this read: {exc}") from None


def _rasterize(kernel: ir.Operation) -> None:
    """With `tile.rasterization`, the body reads the remapped block coordinates instead of the loop's."""
    raster = rasterization(kernel)
    if raster is None:
        return
    body = kernel.regions[0].blocks[0]
    ids = list(body.arguments)
    count = len(body.operations)
    b = Builder(ir.InsertionPoint.at_block_begin(body), kernel.location, body)
    coordinates = rasterized_coordinates(b, raster, ids, list(kernel.operands))
    remap = [op.operation for op in list(body.operations)[:len(body.operations) - count]]
    for arg, coordinate in zip(ids, coordinates):
        arg.replace_all_uses_except(coordinate, remap)


def _inside(op: ir.Operation, name: str) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "tile.kernel":
        if parent.name == name:
            return True
        parent = parent.parent
    return False


def _touches_global(op: ir.Operation) -> bool:
    ref = op.operands[0] if op.name == "memref.load" else op.operands[1]
    return tile_ops.is_global(ref)


def _guard_element_access(op: ir.Operation) -> None:
    with op.location, ir.InsertionPoint(op):
        if op.name == "memref.load":
            ref, indices = op.operands[0], list(op.operands[1:])
            value = tile_ops.read(op, ref, indices)
            op.results[0].replace_all_uses_with(value)
        else:
            value, ref, indices = op.operands[0], op.operands[1], list(op.operands[2:])
            tile_ops.write(value, ref, indices)
    op.erase()


def _hoist_buffers(function: ir.Operation, kernel: ir.Operation, checker: checks.Checker) -> list[ir.Value]:
    hoisted = []
    for op in ops_named(kernel, *_ALLOCS):
        name = ir.StringAttr(op.attributes["name"]).value if "name" in op.attributes else None
        type_ = op.results[0].type
        buffer = buffers.allocate_at_entry(function, type_, op.location, name)
        op.results[0].replace_all_uses_with(buffer)
        op.erase()
        checker.add_on_chip(memory_space(type_), name or "unnamed", buffer)
        hoisted.append(buffer)
    return hoisted


def _lower_grid(kernel: ir.Operation, on_chip: list[ir.Value], checker: checks.Checker) -> None:
    """The kernel body as a loop nest over the grid; each block starts with poisoned buffers."""
    body = kernel.regions[0].blocks[0]
    grid = list(kernel.operands)
    with kernel.location, ir.InsertionPoint.at_block_begin(body):
        for buffer in on_chip:
            buffers.poison(buffer)
        linear, stride = b.index(0), b.index(1)
        for block_index, extent in zip(body.arguments, grid):
            linear = arith.addi(linear, arith.muli(block_index, stride))
            stride = arith.muli(stride, extent)
        checker.start_block(linear)
    with kernel.location, ir.InsertionPoint(body.operations[-1]):
        checker.end_block()
    b.inline_into_loop_nest(kernel, grid)

