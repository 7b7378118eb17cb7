"""Keep LLVM's loop vectorizer away from the loops that abort it: those with a float max or min.

llvmlite's LLVM (22) is built with assertions. Its loop vectorizer, choosing
a vector width, costs every candidate twice (the VPlan cost model and the
legacy one) and asserts that both pick the same width. For a loop carrying
an `llvm.maxnum` / `llvm.minnum` reduction without fast-math flags (what
`reduce_max` / `reduce_absmax` / `reduce_min` lower to: NaN inputs are
skipped, so `nnan` would be wrong), LLVM 22 vectorizes with a NaN check
per iteration that only the VPlan model costs, and at some constant trip
counts the two disagree and the process aborts ("VPlan cost model and
legacy cost model disagreed"): `quant_row_fp8` at 22-23 and 28-31 columns
on one x86 host, 28-31 and 36-39 on another, which is why a fixed list of
widths cannot be avoided.

`keep_min_max_loops_scalar` marks every loop whose body computes a float
maxnum or minnum (scalar or vector, whether it carries it in a register or
through memory) `llvm.loop.vectorize.enable = false`. Those loops stay
scalar; every other loop is vectorized as before. (Giving every loop its
width instead, by metadata or `-force-vector-width`, also avoids the
assertion, but then each loop the vectorizer cannot vectorize prints a
"loop not vectorized" remark on stderr.)
"""

from __future__ import annotations

from tilemlir.mlir import ir

MIN_MAX_OPS = frozenset({"llvm.intr.maxnum", "llvm.intr.minnum"})


def keep_min_max_loops_scalar(module: ir.Module) -> None:
    """Mark the loops of every `llvm.func` in `module` whose body has a `MIN_MAX_OPS` op."""
    disabled = ir.Attribute.parse("#llvm.loop_annotation<vectorize = <width = 1 : i32>, interleave = <count = 1 : i32>>")
    for function in module.body.operations:
        if function.name != "llvm.func" or not len(function.regions[0].blocks):
            continue
        blocks = list(function.regions[0].blocks)
        for latch, header in back_edges(blocks):
            if any(op.name in MIN_MAX_OPS for block in loop_body(blocks, latch, header) for op in block.operations):
                _terminator(latch).attributes["loop_annotation"] = disabled


def back_edges(blocks: list[ir.Block]) -> list[tuple[ir.Block, ir.Block]]:
    """(latch, header) of each branch from a block to one on its depth-first path from the entry."""
    on_path, done, found = {blocks[0]}, set(), []
    stack = [(blocks[0], iter(_terminator(blocks[0]).successors))]
    while stack:
        block, successors = stack[-1]
        successor = next(successors, None)
        if successor is None:
            stack.pop()
            on_path.discard(block)
            done.add(block)
        elif successor in on_path:
            found.append((block, successor))
        elif successor not in done:
            on_path.add(successor)
            stack.append((successor, iter(_terminator(successor).successors)))
    return found


def loop_body(blocks: list[ir.Block], latch: ir.Block, header: ir.Block) -> set[ir.Block]:
    """The natural loop of back edge latch -> header: the header and every block reaching the
    latch without passing through it."""
    predecessors: dict[ir.Block, list[ir.Block]] = {block: [] for block in blocks}
    for block in blocks:
        for successor in _terminator(block).successors:
            predecessors[successor].append(block)
    body, work = {header, latch}, [latch]
    while work:
        for predecessor in predecessors[work.pop()]:
            if predecessor not in body:
                body.add(predecessor)
                work.append(predecessor)
    return body


def _terminator(block: ir.Block) -> ir.Operation:
    return list(block.operations)[-1].operation
