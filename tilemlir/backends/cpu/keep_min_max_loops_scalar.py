"""`keep-min-max-loops-scalar`: keep LLVM's loop vectorizer away from the loops that abort it, those
with a float max or min (CPU backend).

Takes LLVM-dialect IR; gives the same IR with those loops' back edges
annotated. Why:

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

The pass marks every loop whose body computes a float
maxnum or minnum (scalar or vector, whether it carries it in a register or
through memory) `llvm.loop.vectorize.enable = false`. Those loops stay
scalar; every other loop is vectorized as before. (Giving every loop its
width instead, by metadata or `-force-vector-width`, also avoids the
assertion, but then each loop the vectorizer cannot vectorize prints a
"loop not vectorized" remark on stderr.)
"""

from __future__ import annotations

from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass

MIN_MAX_OPS = frozenset({"llvm.intr.maxnum", "llvm.intr.minnum"})


@register_pass("keep-min-max-loops-scalar", "loops computing a float maxnum/minnum -> not vectorized by LLVM, "
                                            "whose width choice aborts on them (CPU backend)")
def run(module: ir.Operation, options) -> None:
    """Mark the loops of every `llvm.func` in `module` whose body has a `MIN_MAX_OPS` op."""
    scalar = ir.Attribute.parse("#llvm.loop_annotation<vectorize = <width = 1 : i32>, interleave = <count = 1 : i32>>",
                                module.context)
    for function in module.regions[0].blocks[0].operations:
        if function.name != "llvm.func" or not len(function.regions[0].blocks):
            continue
        blocks = list(function.regions[0].blocks)
        successors = {block: list(block.operations[-1].successors) for block in blocks}
        min_max = {block for block in blocks if any(op.name in MIN_MAX_OPS for op in block.operations)}
        if not min_max:
            continue
        predecessors: dict[ir.Block, list[ir.Block]] = {block: [] for block in blocks}
        for block in blocks:
            for successor in successors[block]:
                predecessors[successor].append(block)
        for latch, header in back_edges(blocks[0], successors):
            if loop_body(predecessors, latch, header) & min_max:
                latch.operations[-1].attributes["loop_annotation"] = scalar


def back_edges(entry: ir.Block, successors: dict[ir.Block, list[ir.Block]]) -> list[tuple[ir.Block, ir.Block]]:
    """(latch, header) of each branch from a block to one on its depth-first path from `entry`."""
    on_path, done, found = {entry}, set(), []
    stack = [(entry, iter(successors[entry]))]
    while stack:
        block, pending = stack[-1]
        successor = next(pending, None)
        if successor is None:
            stack.pop()
            on_path.discard(block)
            done.add(block)
        elif successor in on_path:
            found.append((block, successor))
        elif successor not in done:
            on_path.add(successor)
            stack.append((successor, iter(successors[successor])))
    return found


def loop_body(predecessors: dict[ir.Block, list[ir.Block]], latch: ir.Block, header: ir.Block) -> set[ir.Block]:
    """The natural loop of back edge latch -> header: the header and every block reaching the
    latch without passing through it."""
    body, work = {header, latch}, [latch]
    while work:
        for predecessor in predecessors[work.pop()]:
            if predecessor not in body:
                body.add(predecessor)
                work.append(predecessor)
    return body
