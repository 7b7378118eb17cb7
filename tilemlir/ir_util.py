"""Read-only helpers over the MLIR Python bindings: one spelling each, for the dialect and everything above it.

None of them changes the IR. The bindings hand out an op either as an
`ir.Operation` or as its `OpView` (what `block.operations` yields);
`operation` gives the `ir.Operation` of either, and every helper here that
returns an op returns an `ir.Operation`.
"""

from __future__ import annotations

from tilemlir.diagnostics import CompileError
from tilemlir.mlir import ir


def operation(op) -> ir.Operation:
    return op.operation if isinstance(op, ir.OpView) else op


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op producing `value`, or None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else operation(owner)


def constant_int(value: ir.Value) -> int | None:
    """The integer a value is defined to be by an `arith.constant` of integer or index type (not i1's
    `true`/`false`, which are bool attributes), else None."""
    op = defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


def is_multiple_of(value: ir.Value, n: int) -> bool:
    """Whether `value` is provably a multiple of `n` from how it is built: a constant multiple, a product
    with a multiple among its factors, or a sum of multiples."""
    known = constant_int(value)
    if known is not None:
        return known % n == 0
    op = defining_op(value)
    if op is None:
        return False
    if op.name == "arith.muli":
        return any(is_multiple_of(v, n) for v in op.operands)
    if op.name == "arith.addi":
        return all(is_multiple_of(v, n) for v in op.operands)
    return False


def enclosing(op: ir.Operation, name: str, *, stop: str | None = None) -> ir.Operation | None:
    """The nearest op named `name` that `op` is nested in, or None. With `stop`, the search
    ends (None) at the first enclosing op named `stop`: `enclosing(op, "tile.parallel",
    stop="tile.kernel")` finds a parallel loop of `op`'s own kernel only."""
    parent = op.parent
    while parent is not None and parent.name != stop:
        if parent.name == name:
            return operation(parent)
        parent = parent.parent
    return None


def after(op: ir.Operation) -> ir.InsertionPoint:
    """The insertion point right after `op` in its block (an op of a block ends with its terminator, so
    one follows unless `op` is the terminator)."""
    ops = list(op.operation.block.operations)
    index = next(i for i, candidate in enumerate(ops) if operation(candidate) == op.operation)
    if index + 1 < len(ops):
        return ir.InsertionPoint(ops[index + 1])
    return ir.InsertionPoint(op.operation.block)


def next_op(op: ir.Operation) -> ir.Operation | None:
    """The op after `op` in its block, None for the last."""
    ops = [operation(o) for o in op.block.operations]
    index = ops.index(operation(op))
    return ops[index + 1] if index + 1 < len(ops) else None


def previous_op(op: ir.Operation) -> ir.Operation | None:
    """The op before `op` in its block, None for the first."""
    ops = [operation(o) for o in op.block.operations]
    index = ops.index(operation(op))
    return ops[index - 1] if index else None


def fresh_name(base: str, taken: set) -> str:
    """`base`, or `base_1`, `base_2`... the first not in `taken` (which it joins)."""
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def inside(op: ir.Operation, ancestor: ir.Operation) -> bool:
    """Whether `op` is `ancestor` or nested in it."""
    node = op
    while node is not None:
        if node == ancestor:
            return True
        node = node.parent
    return False


def root_of(op: ir.Operation) -> ir.Operation:
    """The outermost op `op` is nested in (the module), or `op` itself."""
    while op.parent is not None:
        op = op.parent
    return op


def walk_ops(op: ir.Operation):
    """Every op nested in `op`'s regions, in program order (pre-order; not `op` itself)."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = operation(inner)
                yield inner
                yield from walk_ops(inner)


def ops_named(root: ir.Operation, *names: str) -> list[ir.Operation]:
    """Ops under `root` (and `root` itself) with one of `names`, inner ops before the ops that contain them."""
    found = []

    def visit(op):
        if op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def launch_grid(launch: ir.Operation) -> list[ir.Value]:
    """The three grid sizes of gpu.launch `launch`."""
    return list(launch.operands)[len(launch.opview.asyncDependencies):][:3]


def set_launch_grid(launch: ir.Operation, sizes: list[ir.Value]) -> None:
    """Make `sizes` the grid of gpu.launch `launch` (by operand position, after the async dependencies)."""
    first = len(launch.opview.asyncDependencies)
    for dim, size in enumerate(sizes):
        launch.operands[first + dim] = size


def set_launch_block_x(launch: ir.Operation, size: ir.Value) -> None:
    """Make `size` the x block size of gpu.launch `launch`. By operand position (after the async
    dependencies and the three grid sizes): the same SSA value may also be one of the grid sizes."""
    launch.operands[len(launch.opview.asyncDependencies) + 3] = size


def entry_function(module, consumer: str) -> ir.Operation:
    """The kernel function: the one `func.func` marked `tile.entry`, else the module's only one.
    `consumer` names who asks, for the error when there is no single candidate."""
    root = module.operation if isinstance(module, ir.Module) else operation(module)
    functions = [operation(op) for op in root.regions[0].blocks[0].operations if operation(op).name == "func.func"]
    entries = [f for f in functions if "tile.entry" in f.attributes]
    if not entries and len(functions) == 1:
        entries = functions
    if len(entries) != 1:
        raise CompileError(f"{consumer} needs exactly one func.func marked tile.entry, found {len(entries)}")
    return entries[0]
