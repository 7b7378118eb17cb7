"""`scalarize-bool-vectors`: each 1-D `vector.load` / `vector.store` of i1 lanes as one
`memref.load` / `memref.store` per lane (CPU backend).

Takes loop-level IR; gives the same IR without 1-D i1 vector accesses. LLVM
packs a `<N x i1>` in memory into bits, where a memref of i1 (a numpy bool
array) has a byte per element.
"""

from __future__ import annotations

from tilemlir.backends.cpu.ir_builders import constant
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, ir, memref, vector
from tilemlir.pass_infra.registry import register_pass


@register_pass("scalarize-bool-vectors", "1-D vector loads/stores of i1 -> one memref access per lane, a byte "
                                         "each (CPU backend)")
def run(module: ir.Operation, options) -> None:
    for op in ops_named(module, "vector.load", "vector.store"):
        if _is_bool_vector(_vector_of(op)):
            _scalarize(op)


def _is_bool_vector(type_: ir.VectorType) -> bool:
    element = type_.element_type
    return type_.rank == 1 and isinstance(element, ir.IntegerType) and element.width == 1


def _scalarize(op: ir.Operation) -> None:
    is_load = op.name == "vector.load"
    buffer, *indices = op.operands if is_load else op.operands[1:]
    with op.location, ir.InsertionPoint(op):
        step = [constant(ir.IndexType.get(), k) for k in range(1, _vector_of(op).shape[0])]
        lanes = [indices] + [[*indices[:-1], arith.addi(indices[-1], k)] for k in step]
        if is_load:
            loaded = [memref.load(buffer, at) for at in lanes]
            op.results[0].replace_all_uses_with(vector.from_elements(_vector_of(op), loaded))
        else:
            for k, at in enumerate(lanes):
                memref.store(vector.extract(op.operands[0], [], [k]), buffer, at)
    op.erase()


def _vector_of(op) -> ir.VectorType:
    """The vector type a `vector.load` gives or a `vector.store` takes."""
    return ir.VectorType(op.results[0].type if op.name == "vector.load" else op.operands[0].type)
