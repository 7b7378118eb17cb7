"""infer-layouts: decide which thread holds each fragment element and runs each parallel point.

Takes tile-level IR (docs/ir.md) and gives the same IR with a `layout`
(`#tile.layout<thread_map, local_map, replicate>`) on every
`tile.alloc_fragment` and on every `tile.parallel` with static extents (its
domain layout: the thread that runs each point).

How layouts are found:
- Fragments and parallel loops that index each other at full rank (`x[i, j]`
  inside a parallel over `(i, j)`, also transposed) form a *component* that
  shares one layout. A lower-rank access (`row_max[i]` beside `x[i, j]`) is a
  *projection*: the fragment gets the component's layout with the missing
  dims' threads as replicas, so every thread running a point holds what it
  reads. Such accesses may only read.
- Fixed layouts: the accumulator C (and a fragment A) of a `tile.mma` gemm
  take the mma.sync or wgmma fragment layouts (`analysis/mma_layouts.py`), the gemm
  named in conflict messages; `tile.annotated_layout` (T.annotate_layout) on an
  allocation, and full replication for fragments read or written outside
  any parallel loop (every thread runs that code). A `tile.thread_loop`
  parallel (thread code, frontend/threads.py: one point per thread of the
  block) runs point t on thread t.
- Gathers: an access inside a parallel whose indices are not plain loop
  variables (`f[63 - i]`, `f[j // 2]`, `f[i, k]` with `k` a serial loop's
  variable) links nothing. When the layouts found without it let every
  thread running a point hold the element it touches (the indices
  evaluated at every point, `analysis/index_values.py`; an index known only
  at run time in a dim held whole in registers holds anywhere), and for a
  write that element has one copy, it stays so; otherwise the fragment is
  fully replicated, and for a written gather the loop too (every thread
  then runs every point and keeps its own copy current).
- Chosen layouts (`analysis.layouts.tiled_layout`): each still-open
  component, highest rank and size first, gets the block's threads spread
  with 16 bytes per register run of the element type it loads from global
  memory contiguously (else of what it stores there, else of shared
  memory), and the dim a `tile.reduce` reduces as the fastest-varying
  thread dim (lanes, then warps). A component that others' projections
  already constrain is lifted from them instead.
- Soft links: a `tile.reduce` destination prefers the projection of its
  source; a whole fragment-to-fragment copy prefers equal layouts. Where
  they end up different, lower-tile-ops exchanges through shared memory.
Inference runs to a fixed point; a projection that cannot hold (a
fragment two uses want on different threads) is a CompileError naming the
fragment, both uses and their source lines, and the ways out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.index_values import gather_is_held
from tilemlir.analysis.layouts import (
    Digit,
    LayoutError,
    TiledLayout,
    replicated_layout,
    same_holders,
    tiled_layout,
    vector_elements,
)
from tilemlir.analysis.mma_layouts import gemm_accumulator_layout, operand_a_layout
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tensor_core_ops import mma_choice
from tilemlir.dialects.tile import THREAD_LOOP_ATTR, memory_space
from tilemlir.ir_util import constant_int, defining_op, enclosing, operation, walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass

RESOLUTION = (
    "copy the fragment through shared memory (T.copy into a T.alloc_shared buffer, then read that), "
    "or fix the layouts with T.annotate_layout"
)


@dataclass(eq=False)
class Node:
    """A fragment allocation or a tile.parallel: something a layout is attached to."""

    op: ir.Operation
    shape: tuple[int, ...]
    label: str
    comp: "Component | None" = None
    perm: list[int] | None = None  # effective dim k -> component dim

    @property
    def eff(self) -> list[int]:
        return lir.effective_dims(self.shape)

    @property
    def eff_shape(self) -> tuple[int, ...]:
        return tuple(self.shape[k] for k in self.eff)


@dataclass(eq=False)
class Access:
    """A fragment element access inside a parallel: fragment effective dim k is parallel effective dim dims[k]."""

    parallel: Node
    fragment: Node
    dims: list[int]
    write: bool
    op: ir.Operation


@dataclass(eq=False)
class Gather:
    """A fragment access inside a parallel indexed by something other than its loop variables."""

    parallel: Node
    fragment: Node
    indices: list[ir.Value]
    write: bool
    op: ir.Operation


@dataclass(eq=False)
class Component:
    nodes: list[Node]
    shape: tuple[int, ...]
    layout: TiledLayout | None = None
    origin: tuple[str, ir.Operation] | None = None
    # dim -> (priority, elements per 16 bytes): global loads, then global stores, then shared accesses
    vectors: dict[int, tuple[int, int]] = field(default_factory=dict)
    fast_dim: int | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(eq=False)
class Projection:
    """`lower` comp dim j is `higher` comp dim keep[j]; `access` made the link (None: soft)."""

    higher: Component
    lower: Component
    keep: list[int]
    access: Access | None = None
    soft_op: ir.Operation | None = None


def _error(op, message: str, notes=()):
    return diag.error(op, message, notes=list(notes))


# ----------------------------------------------------------------------------
# Collecting the kernel's nodes and accesses.


class _Kernel:
    def __init__(self, kernel: ir.Operation, replicated: frozenset = frozenset()):
        self.kernel = kernel
        self.replicated = replicated  # ops (fragments, parallels) whose layout must be fully replicated
        self.gathers: list[Gather] = []
        self.threads = lir.kernel_threads(kernel)
        self.fragments: dict[ir.Value, Node] = {}
        self.parallels: list[Node] = []
        self.accesses: list[Access] = []
        self.serial: list[tuple[Node, ir.Operation]] = []
        self.annotated: list[tuple[Node, TiledLayout]] = []
        self.mma_fixed: list[tuple[Node, TiledLayout, tuple[str, ir.Operation]]] = []
        self._collect()

    def _collect(self) -> None:
        for op in walk_ops(self.kernel):
            if op.name == "tile.alloc_fragment":
                node = Node(op, tuple(op.results[0].type.shape), f"fragment '{lir.name_of(op)}'")
                self.fragments[op.results[0]] = node
                self._read_annotation(node)
            elif op.name == "tile.parallel":
                self._add_parallel(op)
        for op in walk_ops(self.kernel):
            if op.name in ("memref.load", "memref.store"):
                self._add_access(op)
            elif op.name == "tile.gemm" and mma_choice(op) is not None:
                self._add_mma_gemm(op)

    def _add_mma_gemm(self, op: ir.Operation) -> None:
        choice = mma_choice(op)
        warps_m, warps_n = choice.grid_m, choice.grid_n
        a, c = self.fragments.get(op.operands[0]), self.fragments.get(op.operands[2])
        fixed = [(c, lambda: gemm_accumulator_layout(choice, c.shape, self.threads),
                  f"{c.label} is the accumulator of this T.gemm on tensor cores")]
        if a is not None:
            if warps_n != 1:
                raise _error(op, f"a fragment A ({a.label}) needs every warp along M (warps_n = 1), but this "
                             f"T.gemm's warp grid is {warps_m}x{warps_n}")
            fixed.append((a, lambda: operand_a_layout(a.shape, self.threads, warps_m),
                          f"{a.label} is the A operand of this T.gemm on tensor cores"))
        for node, make, why in fixed:
            layout = _derived(lambda: lir.squeeze(make()), op)
            self.mma_fixed.append((node, layout, (why, op)))

    def _read_annotation(self, node: Node) -> None:
        if lir.ANNOTATED_ATTR not in node.op.attributes:
            return
        try:
            layout = lir.squeeze(
                lir.from_attr(node.op.attributes[lir.ANNOTATED_ATTR], node.shape, self.threads)
            )
        except LayoutError as err:
            raise _error(node.op, f"invalid T.annotate_layout for {node.label}: {err}") from None
        self.annotated.append((node, layout))

    def _add_parallel(self, op: ir.Operation) -> None:
        outer = enclosing(op, "tile.parallel", stop="tile.kernel")
        if outer is not None:
            raise _error(op, "T.Parallel loops cannot be nested inside another T.Parallel",
                         [diag.note(outer, "the enclosing T.Parallel is here")])
        extents = lir.static_extents(op)
        if any(e is None for e in extents):
            return  # a dynamic loop: distributed without a layout, may not touch fragments
        self.parallels.append(Node(op, tuple(extents), "T.Parallel"))

    def _parallel_node(self, op: ir.Operation) -> Node | None:
        return next((p for p in self.parallels if p.op == op), None)

    def _add_access(self, op: ir.Operation) -> None:
        is_store = op.name == "memref.store"
        memref = op.operands[1] if is_store else op.operands[0]
        if not lir.is_fragment(memref):
            return
        fragment = self.fragments.get(memref)
        if fragment is None:
            raise _error(op, "fragment accesses must name a T.alloc_fragment buffer of this kernel")
        indices = list(op.operands[2:] if is_store else op.operands[1:])
        parallel_op = enclosing(op, "tile.parallel", stop="tile.kernel")
        if parallel_op is None:
            self.serial.append((fragment, op))
            return
        parallel = self._parallel_node(parallel_op)
        if parallel is None:
            raise _error(op, f"{fragment.label} is accessed inside a T.Parallel whose extents are not "
                         "compile-time constants; fragment loops need constant extents")
        if not self._plain_indices(fragment, parallel, indices):
            self.gathers.append(Gather(parallel, fragment, indices, is_store, op))
            return
        dims = self._index_dims(op, fragment, parallel, indices)
        self.accesses.append(Access(parallel, fragment, dims, is_store, op))

    @staticmethod
    def _plain_indices(fragment: Node, parallel: Node, indices) -> bool:
        """Is every effective dim indexed by its own loop variable of `parallel`?"""
        block = parallel.op.regions[0].blocks[0]
        args = [index.arg_number for index in (indices[k] for k in fragment.eff)
                if isinstance(index, ir.BlockArgument) and index.owner == block and index.arg_number in parallel.eff]
        return len(args) == len(fragment.eff) and len(set(args)) == len(args)

    def _index_dims(self, op, fragment: Node, parallel: Node, indices) -> list[int]:
        block = parallel.op.regions[0].blocks[0]
        eff_of_arg = {k: i for i, k in enumerate(parallel.eff)}
        dims = []
        for k in fragment.eff:
            index = indices[k]
            arg = index if isinstance(index, ir.BlockArgument) and index.owner == block else None
            if parallel.shape[arg.arg_number] > fragment.shape[k]:
                raise _error(op, f"T.Parallel extent {parallel.shape[arg.arg_number]} exceeds dim {k} of "
                             f"{fragment.label} ({fragment.shape[k]})")
            dims.append(eff_of_arg[arg.arg_number])
        return dims


# ----------------------------------------------------------------------------
# Components: nodes that index each other at full rank share one layout.


def _components(kernel: _Kernel) -> list[Component]:
    nodes = [*kernel.fragments.values(), *kernel.parallels]
    full = {n: [] for n in nodes}
    for a in kernel.accesses:
        if len(a.dims) == len(a.parallel.eff):
            full[a.fragment].append((a.parallel, a.dims, a))
            inverse = [0] * len(a.dims)
            for k, d in enumerate(a.dims):
                inverse[d] = k
            full[a.parallel].append((a.fragment, inverse, a))
    for a, b, dims, op in _fragment_copies(kernel):
        full[a].append((b, dims, op))
        full[b].append((a, [dims.index(k) for k in range(len(dims))], op))
    comps = []
    for start in nodes:
        if start.comp is None:
            comps.append(_grow(start, full))
    return comps


def _fragment_copies(kernel: _Kernel):
    """Whole fragment-to-fragment copies: the two fragments share one layout (dim k is dim k)."""
    for op in walk_ops(kernel.kernel):
        if op.name != "tile.copy":
            continue
        src, dst = op.operands[0], op.operands[1]
        a, b = kernel.fragments.get(src), kernel.fragments.get(dst)
        if a is None or b is None or a.eff_shape != b.eff_shape:
            continue
        box = [attr.value for attr in op.attributes["shape"]]
        offsets = [constant_int(v) for v in op.operands[2:]]
        if all(o == 0 for o in offsets) and math.prod(box) == math.prod(a.shape):
            yield a, b, list(range(len(a.eff))), op


def _grow(start: Node, full) -> Component:
    comp = Component([], start.eff_shape)
    start.comp, start.perm = comp, list(range(len(start.eff)))
    work = [start]
    while work:
        node = work.pop()
        comp.nodes.append(node)
        for other, dims, why in full[node]:
            # node effective dim k <-> other effective dim dims[k]
            perm = [0] * len(dims)
            for k, d in enumerate(dims):
                perm[d] = node.perm[k]
            if other.comp is None:
                other.comp, other.perm = comp, perm
                work.append(other)
            elif other.perm != perm:
                op = why.op if isinstance(why, Access) else why
                raise _error(op, f"layout conflict: {other.label} is indexed transposed relative to itself "
                             f"through a chain of T.Parallel loops; {RESOLUTION}")
    extents = [0] * len(start.eff)
    for node in comp.nodes:
        for k, e in enumerate(node.eff_shape):
            extents[node.perm[k]] = max(extents[node.perm[k]], e)
    comp.shape = tuple(extents)
    return comp


# ----------------------------------------------------------------------------
# Preferences: vector width and the reduced dim.


def _note_preferences(kernel: _Kernel) -> list[tuple[Component, Component, list[int], ir.Operation]]:
    reduces = []
    for op in walk_ops(kernel.kernel):
        if op.name == "tile.copy":
            _prefer_copy_vector(kernel, op)
        elif op.name == "tile.reduce":
            link = _reduce_link(kernel, op)
            if link:
                reduces.append(link)
        elif op.name == "tile.atomic_add" and op.operands[1] in kernel.fragments:
            _prefer_vector(kernel.fragments[op.operands[1]], op.operands[0].type, GLOBAL_STORE)
    for parallel in kernel.parallels:
        _prefer_parallel_vector(parallel)
    return reduces


GLOBAL_LOAD, GLOBAL_STORE, SHARED_ACCESS = 3, 2, 1


def _access_priority(memref_type: ir.Type, is_load: bool) -> int | None:
    space = memory_space(memref_type)
    if space is None:
        return GLOBAL_LOAD if is_load else GLOBAL_STORE
    return SHARED_ACCESS if space == "shared" else None


def _prefer_vector(node: Node, memref_type: ir.Type, priority: int, dim: int | None = None) -> None:
    """Note that `node`'s `dim` (default: its last) is contiguous in a `memref_type` access.

    16-byte runs of the element type of global loads win over those of global
    stores (loads are what a thread waits for), and both over shared accesses."""
    eff = node.eff
    k = (len(eff) - 1 if eff else None) if dim is None else eff.index(dim) if dim in eff else None
    if k is None:
        return
    comp_dim = node.perm[k]
    candidate = (priority, vector_elements(memref_type.element_type))
    node.comp.vectors[comp_dim] = max(node.comp.vectors.get(comp_dim, (0, 1)), candidate)


def _prefer_copy_vector(kernel: _Kernel, op: ir.Operation) -> None:
    src, dst = op.operands[0], op.operands[1]
    box = [attr.value for attr in op.attributes["shape"]]
    for near, far, far_is_source in ((src, dst, False), (dst, src, True)):
        node = kernel.fragments.get(near)
        priority = _access_priority(far.type, far_is_source)
        if node is None or priority is None or box[-1] == 1 or near.type.shape[-1] == 1:
            continue
        _prefer_vector(node, far.type, priority, dim=near.type.rank - 1)


def _prefer_parallel_vector(parallel: Node) -> None:
    block = parallel.op.regions[0].blocks[0]
    for op in walk_ops(parallel.op):
        if op.name not in ("memref.load", "memref.store"):
            continue
        memref = op.operands[1] if op.name == "memref.store" else op.operands[0]
        priority = _access_priority(memref.type, op.name == "memref.load")
        if priority is None or memref.type.rank == 0:
            continue
        arg = _contiguous_arg(op.operands[-1], block)
        if arg is not None and arg in parallel.eff:
            _prefer_vector(parallel, memref.type, priority, dim=arg)


def _contiguous_arg(value: ir.Value, block: ir.Block) -> int | None:
    """The loop variable `value` moves with at unit stride (`j`, `off + j`, `j - off`), if any."""
    if isinstance(value, ir.BlockArgument):
        return value.arg_number if value.owner == block else None
    op = defining_op(value)
    if op is None or op.name not in ("arith.addi", "arith.subi"):
        return None
    lhs, rhs = _contiguous_arg(op.operands[0], block), _contiguous_arg(op.operands[1], block)
    if op.name == "arith.subi":
        return lhs if not _uses_args(op.operands[1], block) else None
    if lhs is not None and not _uses_args(op.operands[1], block):
        return lhs
    if rhs is not None and not _uses_args(op.operands[0], block):
        return rhs
    return None


def _uses_args(value: ir.Value, block: ir.Block) -> bool:
    if isinstance(value, ir.BlockArgument):
        return value.owner == block
    op = defining_op(value)
    return op is not None and any(_uses_args(v, block) for v in op.operands)


def _reduce_link(kernel: _Kernel, op: ir.Operation):
    src, dst = kernel.fragments.get(op.operands[0]), kernel.fragments.get(op.operands[1])
    dim = op.attributes["dim"].value
    if src is None:
        return None
    if dim in src.eff:
        src.comp.fast_dim = src.comp.fast_dim if src.comp.fast_dim is not None else src.perm[src.eff.index(dim)]
    if dst is None:
        return None
    kept_src = [k for k in src.eff if k != dim]
    src_dims_left = [k for k in range(len(src.shape)) if k != dim]
    keep = []
    for k_dst, eff_k in enumerate(dst.eff):
        src_dim = src_dims_left[eff_k] if eff_k < len(src_dims_left) else None
        if src_dim not in kept_src:
            return None
        keep.append((dst.perm[k_dst], src.perm[src.eff.index(src_dim)]))
    comp_keep = [0] * len(keep)
    for lower_dim, higher_dim in keep:
        comp_keep[lower_dim] = higher_dim
    if dst.comp is src.comp:
        return None
    return src.comp, dst.comp, comp_keep, op


# ----------------------------------------------------------------------------
# Solving.


class _Solver:
    def __init__(self, kernel: _Kernel, comps: list[Component], soft_reduces):
        self.kernel = kernel
        self.comps = comps
        self.projections: list[Projection] = []
        for a in kernel.accesses:
            if len(a.dims) != len(a.parallel.eff):
                self._add_projection(a)
        self.soft = [Projection(h, l, keep, soft_op=op) for h, l, keep, op in soft_reduces]

    def _add_projection(self, a: Access) -> None:
        if a.write:
            loops = len(a.parallel.eff)
            raise _error(a.op, f"{a.fragment.label} is written inside a T.Parallel over {loops} dims but "
                         f"indexed by only {len(a.dims)} of them: several points would write the same "
                         "element (use T.reduce_* to combine them)")
        keep = [0] * len(a.dims)
        for k, d in enumerate(a.dims):
            keep[a.fragment.perm[k]] = a.parallel.perm[d]
        self.projections.append(Projection(a.parallel.comp, a.fragment.comp, keep, access=a))

    def solve(self) -> None:
        for node, layout, origin in self.kernel.mma_fixed:
            self._fix(node.comp, layout.permuted(_inverse(node.perm)), origin, node)
        self._fix_annotated()
        self._fix_thread_loops()
        self._fix_serial()
        self._fix_replicated()
        while True:
            open_comps = [c for c in self.comps if c.layout is None]
            if not open_comps:
                return
            comp = max(open_comps, key=lambda c: (c.rank, math.prod(c.shape), c.fast_dim is not None))
            self._choose(comp)

    def _fix_annotated(self) -> None:
        for node, layout in self.kernel.annotated:
            comp_layout = layout.permuted(_inverse(node.perm))
            self._fix(node.comp, comp_layout, (f"{node.label} is annotated with T.annotate_layout", node.op), node)

    def _fix_serial(self) -> None:
        for node, op in self.kernel.serial:
            layout = replicated_layout(node.comp.shape, self.kernel.threads)
            self._fix(node.comp, layout, (f"{node.label} is accessed outside T.Parallel, so every thread "
                                          "holds all of it", op), node)

    def _fix_thread_loops(self) -> None:
        for node in self.kernel.parallels:
            if THREAD_LOOP_ATTR in node.op.attributes:
                layout = thread_identity_layout(node.comp.shape, self.kernel.threads)
                if layout is None:
                    raise _error(node.op, f"a per-thread loop must run one point on each of the {self.kernel.threads} "
                                 f"threads, but it has {math.prod(node.shape)} points")
                self._fix(node.comp, layout, ("it is per-thread code: point t runs on thread t", node.op), node)

    def _fix_replicated(self) -> None:
        for gather in self.kernel.gathers:
            for node in (gather.fragment, gather.parallel):
                if node.op in self.kernel.replicated:
                    layout = replicated_layout(node.comp.shape, self.kernel.threads)
                    why = (f"{gather.fragment.label} is indexed here by an expression the layouts cannot follow, so "
                           "every thread holds all of it" + (" and runs every point" if gather.write else ""))
                    self._fix(node.comp, layout, (why, gather.op), node)

    def _fix(self, comp: Component, layout: TiledLayout, origin, node: Node) -> None:
        if comp.layout is None:
            self._assign(comp, layout, origin)
        elif not same_holders(comp.layout, layout.with_shape(comp.shape)):
            raise self._conflict(node, origin, comp.origin)

    def _choose(self, comp: Component) -> None:
        lifts = [p for p in self.projections if p.higher is comp and p.lower.layout is not None]
        if lifts:
            p = lifts[0]
            vector, _ = _vector_choice(comp)
            origin = p.access.op if p.access else p.soft_op
            layout = _derived(lambda: p.lower.layout.lift(p.keep, comp.shape, vector), origin)
            self._assign(comp, layout, ("it must agree with the layout of an access in this T.Parallel", origin))
            return
        vector, vector_dim = _vector_choice(comp)
        layout = _tiled(comp.shape, self.kernel.threads, vector, vector_dim, comp.fast_dim)
        self._assign(comp, layout, ("it was chosen for this operation", comp.nodes[0].op))

    def _assign(self, comp: Component, layout: TiledLayout, origin) -> None:
        comp.layout, comp.origin = layout, origin
        for p in self.projections:
            if p.higher is comp:
                self._project(p)
            elif p.lower is comp and p.higher.layout is not None:
                self._check(p)
        for p in self.soft:
            if p.higher is comp and p.lower.layout is None:
                layout = _derived(lambda: comp.layout.project(p.keep).with_shape(p.lower.shape), p.soft_op)
                self._assign(p.lower, layout, ("it receives this reduction", p.soft_op))

    def _project(self, p: Projection) -> None:
        if p.lower.layout is None:
            layout = _derived(lambda: p.higher.layout.project(p.keep).with_shape(p.lower.shape), p.access.op)
            self._assign(p.lower, layout, (f"{p.access.fragment.label} is read here", p.access.op))
        else:
            self._check(p)

    def _check(self, p: Projection) -> None:
        a = p.access
        domain = p.higher.layout.with_shape(_member_shape(p.higher, a.parallel))
        if not _holds_every_read(domain, p.keep, p.lower.layout):
            raise self._conflict(a.fragment, (f"{a.fragment.label} is read here", a.op), p.lower.origin)

    def _conflict(self, node: Node, here, before):
        label = node.label
        return _error(
            here[1],
            f"layout conflict for {label}: the threads that run this use do not hold the elements it "
            f"needs under the layout {label} already has; {RESOLUTION}",
            [diag.note(here[1], f"this use: {here[0]}"),
             diag.note(before[1], f"the layout it conflicts with comes from here: {before[0]}")],
        )


def _derived(make, op) -> TiledLayout:
    """A layout derived from another one for the use `op`, or a CompileError there saying why not."""
    try:
        return make()
    except LayoutError as err:
        raise _error(op, f"layout conflict: this use needs a layout derived from another fragment's, which "
                     f"does not fit ({err}); {RESOLUTION}") from None


def _member_shape(comp: Component, node: Node) -> tuple[int, ...]:
    shape = list(comp.shape)
    for k, e in enumerate(node.eff_shape):
        shape[node.perm[k]] = e
    return tuple(shape)


def _holds_every_read(domain: TiledLayout, keep: list[int], fragment: TiledLayout) -> bool:
    """Does every thread running a (real) point of `domain` hold the fragment element it projects to?"""
    points = domain.all_elements()
    table = fragment.holders()
    sub = points[:, keep] if keep else np.zeros((len(points), 0), dtype=np.int64)
    flat = np.ravel_multi_index(sub.T, fragment.shape) if keep else np.zeros(len(points), dtype=np.int64)
    for replica in range(domain.replicate):
        thread, _ = domain.locate(points, replica)
        if not (table[flat] == thread[:, None]).any(axis=1).all():
            return False
    return True


def _vector_choice(comp: Component) -> tuple[int, int | None]:
    """(elements per register run, the dim they run along) from the strongest preference."""
    if not comp.vectors:
        return 1, None
    dim = max(comp.vectors, key=lambda d: (comp.vectors[d], d))
    return comp.vectors[dim][1], dim


def _tiled(shape, threads, vector, vector_dim, fast_dim) -> TiledLayout:
    if not shape:
        return replicated_layout((), threads)
    return tiled_layout(shape, threads, vector, fast_dim=fast_dim, vector_dim=vector_dim)


def _inverse(perm: list[int]) -> list[int]:
    inverse = [0] * len(perm)
    for k, p in enumerate(perm):
        inverse[p] = k
    return inverse


# ----------------------------------------------------------------------------
# Writing the result.


def _write_back(kernel: _Kernel, comps: list[Component]) -> None:
    for node in [*kernel.fragments.values(), *kernel.parallels]:
        lir.set_layout(node.op, _node_layout(node))


def infer_kernel(kernel_op: ir.Operation) -> None:
    replicated: frozenset = frozenset()
    while True:
        kernel = _Kernel(kernel_op, replicated)
        comps = _components(kernel)
        soft = _note_preferences(kernel)
        _Solver(kernel, comps, soft).solve()
        failing = _failing_gathers(kernel, replicated)
        if not failing:
            break
        replicated = replicated | failing
    for g in kernel.gathers:
        if g.write:
            _check_replicated_memory_writes(g)
    _write_back(kernel, comps)


def _check_replicated_memory_writes(g: Gather) -> None:
    """A written gather makes every thread run every point of its loop: the loop must not read a shared or
    global buffer it writes (only one replica writes memory; the others would read it as it changes)."""
    loads, stores = [], []
    for op in walk_ops(g.parallel.op):
        if op.name in ("memref.load", "memref.store"):
            memref = op.operands[1] if op.name == "memref.store" else op.operands[0]
            if memory_space(memref.type) in (None, "shared"):
                (stores if op.name == "memref.store" else loads).append((memref, op))
    for memref, store in stores:
        if any(memref == loaded for loaded, _ in loads):
            raise _error(g.op, f"{g.fragment.label} is written at an index other than the T.Parallel loop variables, "
                         "so every thread runs every point of this loop, but the loop also reads and writes one "
                         "shared or global buffer, which the threads would race on; split the loop (the fragment "
                         "write in a loop of its own)", [diag.note(store, "the buffer is written here")])


def thread_identity_layout(shape: tuple[int, ...], threads: int) -> TiledLayout | None:
    """Point t of a one-dim loop over the block's threads on thread t (None for any other shape)."""
    if shape != (threads,):
        return replicated_layout((), threads) if threads == 1 and not shape else None
    return TiledLayout(shape, threads, (Digit(0, 1, threads, thread=1),))


def _failing_gathers(kernel: _Kernel, replicated: frozenset) -> frozenset:
    """The fragments (and, for writes, loops) of gathers the solved layouts do not serve, to replicate."""
    failing = set()
    for g in kernel.gathers:
        wanted = {g.fragment.op, g.parallel.op} if g.write else {g.fragment.op}
        if wanted <= replicated:
            continue
        if not _gather_is_held(g):
            failing |= wanted
    return frozenset(failing)


def _gather_is_held(g: Gather) -> bool:
    """Does every thread running a point of the gather's loop hold the fragment element it touches there
    (and, for a write, is that its only copy)?"""
    fragment = _node_layout(g.fragment)
    if g.write and fragment.replicate != 1:
        return False
    block = g.parallel.op.regions[0].blocks[0]
    return gather_is_held(_node_layout(g.parallel), fragment, list(block.arguments), g.indices)


def _node_layout(node: Node) -> TiledLayout:
    """`node`'s layout over its own (full-rank) shape, as `_write_back` writes it."""
    layout = node.comp.layout.permuted(node.perm) if node.perm else node.comp.layout
    return lir.unsqueeze(layout.with_shape(node.eff_shape), node.shape)


@register_pass("infer-layouts", "give every fragment and T.Parallel loop a thread layout")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        kernels = [op for op in walk_ops(module) if op.name == "tile.kernel"]
        for op in kernels:
                infer_kernel(op)
