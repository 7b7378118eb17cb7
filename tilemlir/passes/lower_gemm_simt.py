"""lower-gemm-simt: each tile.gemm without `tile.mma` becomes element code on CUDA cores.

Takes tile-level IR (docs/ir.md) before infer-layouts. Gives the same IR
with only the gemms select-mma gave `tile.mma` left (lower-gemm-mma takes
them at the thread level): every other `tile.gemm(A, B, C)` becomes

    tile.parallel (M, N) (i, j):
      acc = C[i, j]
      for k in [0, K):                      scf.for, `acc` carried
        acc = acc + cvt(op(A)[i, k]) * cvt(op(B)[k, j])
      C[i, j] = acc

`op` transposes as `transpose_a` / `transpose_b` say (a ring operand is
read in the tile its ring indices select); `cvt` converts to C's
element type the way the tile-level reference does
(`backends/cpu/tile_ops.lower_gemm`, signedness from
`analysis/signedness.py`), and k ascends as there, so both levels do the
same arithmetic in the same order. C is a fragment indexed by the loop
variables, so infer-layouts gives the loop C's layout and partition-threads
distributes it; the reads of A and B are ordinary shared-memory reads, so
partition-threads' barrier planning covers them.

A fragment operand cannot be read there (a thread holds only its own
elements and the loop reads a whole row of A / column of B per point), so
it is first copied into a new shared buffer (`<name>_gemm`, allocated at the
top of the kernel) and the loop reads that.
"""

from __future__ import annotations

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.signedness import is_unsigned, mark_unsigned
from tilemlir.diagnostics.reporting import error
from tilemlir.dialects import tile
from tilemlir.dialects.tensor_core_ops import MMA_ATTR
from tilemlir.dialects.tile import FRAGMENT, gemm_ring_indices, memory_space
from tilemlir.ir_util import defining_op, enclosing, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.thread_builder import Builder


@register_pass("lower-gemm-simt", "tile.gemm without tile.mma -> tile.parallel over C with a serial K loop (CUDA cores)")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for gemm in ops_named(module, "tile.gemm"):
            if MMA_ATTR not in gemm.attributes:
                _lower(gemm)


def _lower(gemm: ir.Operation) -> None:
    kernel = enclosing(gemm, "tile.kernel", stop="func.func")
    if kernel is None:
        raise error(gemm, "tile.gemm is not inside a tile.kernel: lower-gemm-simt takes tile-level IR (docs/ir.md), "
                          "where a gemm's block is a tile.kernel, not a gpu.launch")
    kernel_block = kernel.regions[0].blocks[0]
    b = Builder(ir.InsertionPoint(gemm), gemm.location, kernel_block)
    a, bm = (_readable(b, kernel_block, v) for v in list(gemm.operands)[:2])
    c = gemm.operands[2]
    ring_a, ring_b = gemm_ring_indices(gemm)
    trans_a = ir.BoolAttr(gemm.attributes["transpose_a"]).value
    trans_b = ir.BoolAttr(gemm.attributes["transpose_b"]).value
    m, n = c.type.shape
    k_extent = a.type.shape[-2] if trans_a else a.type.shape[-1]
    acc_type = c.type.element_type
    floating = isinstance(acc_type, ir.FloatType)

    loop = tile.parallel([b.index(m), b.index(n)], loc=b.loc, ip=b.ip)
    block = tile.body_block(loop)
    i, j = block.arguments
    inner = b.at(ir.InsertionPoint(block))
    start = inner.load(c, [i, j])
    with inner.loop(k_extent, unroll=False, iter_args=[start]) as (body, k, (acc,), serial):
        serial.attributes["tile.name"] = ir.StringAttr.get("k")
        serial.attributes["tile.result_names"] = ir.ArrayAttr.get([ir.StringAttr.get("acc")])
        x = body.convert(body.load(a, ring_a + ([k, i] if trans_a else [i, k])), acc_type, is_unsigned(a),
                         is_unsigned(c))
        y = body.convert(body.load(bm, ring_b + ([j, k] if trans_b else [k, j])), acc_type, is_unsigned(bm),
                         is_unsigned(c))
        product = body.op("arith.mulf" if floating else "arith.muli", [x, y], [acc_type]).result
        body.yield_([body.op("arith.addf" if floating else "arith.addi", [acc, product], [acc_type]).result])
    inner.store(serial.results[0], c, [i, j])
    tile.yield_(loc=b.loc, ip=ir.InsertionPoint(block))
    gemm.erase()


def _readable(b: Builder, kernel_block: ir.Block, operand: ir.Value) -> ir.Value:
    """`operand` itself, or for an A / B fragment a shared copy of it made right before the gemm."""
    if memory_space(operand.type) != FRAGMENT:
        return operand
    source = defining_op(operand)
    name = f"{lir.name_of(source) if source is not None else 'operand'}_gemm"
    shape = list(operand.type.shape)
    staged = tile.alloc_shared(shape, operand.type.element_type, name, loc=b.loc,
                               ip=ir.InsertionPoint.at_block_begin(kernel_block))
    mark_unsigned(staged, is_unsigned(operand))
    zeros = [b.index(0)] * (2 * len(shape))
    tile.copy(operand, staged.results[0], zeros[:len(shape)], zeros[len(shape):], shape, loc=b.loc, ip=b.ip)
    return staged.results[0]

