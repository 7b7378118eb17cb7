"""vectorize: per-thread contiguous runs of global and shared accesses become vector loads/stores of up to 16 bytes.

Takes thread-level IR after eliminate-guards and gives the same IR where a
run loop — an `scf.for` with constant bounds, step 1 and 2..max-lanes
iterations, no results, whose body holds only index/element arithmetic,
`"local"` memref accesses, shared accesses and global accesses (each global
one possibly inside its own guard) — has its global and shared accesses
(but a ring copy's `tile.async` shared stores, which async-copies makes
cp.async) turned into `vector.load`/`vector.store` when Z3
(`tilemlir.analysis.prover`) proves, for each vector of `w` lanes starting at iteration `s`:

- contiguity: the last index is `base + iv`, the other indices do not move
  (indices and guards must be functions of `iv` and of values fixed across
  the loop: a value loaded inside the run makes it stay scalar);
- in range: every lane is inside the tensor (where the vector runs);
- alignment: the row-major offset at `s` is a multiple of `w` elements
  (base pointers are 16-byte aligned: the runtime checks that for tensors,
  plan-shared-memory places shared buffers so; a swizzled buffer's logical
  offsets are what is checked, its 16-byte atoms keep an aligned vector of
  up to 16 bytes contiguous after materialize-shared-layouts);
- for an access inside a guard: either the guard is uniform (it holds for
  all `w` lanes or none), or where it holds at the last lane (or the first,
  or both) it holds at every lane.

The widest of 16/8/4/2 bytes that works for every access of the run is
used; otherwise the run stays scalar. Forms produced:

- a copy into registers (global load stored unchanged into a local/shared
  buffer at `reg0 + iv`, `reg0` a multiple of `w`):

      %v = vector.load %X[%r, %c] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
      vector.store %v, %x[%reg] : memref<32xbf16, "local">, vector<8xbf16>

  and the mirror image for a copy out of registers (`vector.load` of the
  buffer, `vector.store` to the tensor);
- anything else: the run is unrolled; each global load becomes one
  `vector.load` before it and its lanes `vector.extract %v[k]`; each
  global store collects its lanes with `vector.from_elements` and becomes
  one `vector.store` after it;
- a guarded access keeps one guard (`scf.if`, `tile.guard`) per vector.
  Uniform guard, on the first lane's condition: `scf.if %ok ->
  (vector<8xbf16>) { vector.load } else { arith.constant dense<pad> }`,
  or `scf.if %ok { vector.store }`. Otherwise, on the checked lanes'
  conditions, with the original guarded scalar lanes as the fallback:
  `scf.if %ok -> (vector<8xf16>) { vector.load } else { 8 guarded
  memref.load; vector.from_elements }`, or `scf.if %ok { vector.store }
  else { 8 x (vector.extract; guarded memref.store) }`. A guarded copy
  into registers yields nothing: each branch stores its vector into the
  buffer, so the guard is the copy's last op.
- a guard's condition reads each extent a symbol names from the symbol's
  first tensor (`guards.symbol_dims`, as range versioning does): after cse
  the guards of consecutive copies over tensors of one length have one
  condition, and canonicalize merges them, so one branch issues all their
  vector loads before any is used.

Every global vector access carries `alignment` = its width in bytes.
Distinct tensor arguments are assumed not to overlap (as `__restrict__`);
a run that loads and stores the same tensor stays scalar.

Statistics: vectorized-16B, vectorized-8B, vectorized-4B, vectorized-2B
(vector accesses made), vectorized-with-fallback, runs-vectorized,
runs-scalar, prover-resource-outs (queries that ran out of the prover's
budget: a run they decide stays scalar).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import z3

from tilemlir.analysis.accesses import MemoryAccess, global_access, is_global, ops_where, row_major_strides, shared_access
from tilemlir.analysis.shared_layouts import ASYNC_ATTR
from tilemlir.analysis.prover import Prover, Verdict
from tilemlir.ir_util import constant_int, defining_op, enclosing, inside, operation, root_of
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.guards import (
    PAD,
    PURE_OPS,
    Graveyard,
    clone_slice,
    conjunction,
    constant,
    guarded_access,
    index_constant,
    is_guard,
    make_guard,
    pad_attr,
    run_per_function,
    symbol_dims,
    wrap_in_guard,
    yield_,
)

_WIDTHS = (16, 8, 4, 2)
PLAIN, UNIFORM, FAST_PATH = "plain", "uniform", "fast-path"
_STATISTICS = {
    **{f"vectorized-{w}B": f"global and shared accesses turned into {w}-byte vector accesses" for w in _WIDTHS},
    "vectorized-with-fallback": "vector accesses under a whole-vector guard with guarded scalar lanes as fallback",
    "runs-vectorized": "run loops whose global and shared accesses became vector accesses",
    "runs-scalar": "run loops with accesses left scalar (not provably contiguous, aligned, in range)",
    "prover-resource-outs": "Z3 queries that ran out of the prover's budget (TILEMLIR_PROVER_RLIMIT)",
}


@dataclass(frozen=True)
class VectorizeOptions:
    max_bytes: int = 16  # widest vector access
    max_lanes: int = 64  # longest run loop considered (unrolled when not a plain copy)


@register_pass("vectorize", "turn contiguous per-thread global and shared accesses into vector accesses of up to 16 bytes",
               VectorizeOptions)
def run(module, options: VectorizeOptions) -> None:
    functions = ops_where(operation(module), lambda op: op.name == "func.func")
    run_per_function(functions, lambda func: _Vectorizer(func, options).run(), _STATISTICS)


@dataclass
class _Item:
    """One global access of a run: the access, the guard around it (if any), and its vector plan."""

    access: MemoryAccess
    guard: ir.Operation | None
    lanes: int = 0
    mode: str = PLAIN
    checked_lanes: tuple = ()

    @property
    def top(self) -> ir.Operation:
        return self.guard if self.guard is not None else self.access.op


@dataclass
class _Run:
    loop: ir.Operation
    lb: int
    trips: int
    items: list[_Item] = field(default_factory=list)


class _Vectorizer:
    def __init__(self, func: ir.Operation, options: VectorizeOptions):
        self.func = func
        self.options = options
        self.prover = Prover(func)
        self.graveyard = Graveyard()
        self.stats: Counter = Counter()

    def run(self) -> Counter:
        for loop in ops_where(self.func, lambda op: op.name == "scf.for"):
            run = self._run_of(loop)
            if run is None:
                continue
            if all(self._plan(run, item) for item in run.items):
                self._rewrite(run)
                self.stats["runs-vectorized"] += 1
            else:
                self.stats["runs-scalar"] += 1
        self.stats["prover-resource-outs"] = self.prover.stats[Verdict.RESOURCE_OUT.value]
        self.prover = None
        self.graveyard.release(root_of(self.func))
        return self.stats

    # -- recognizing a run ---------------------------------------------------------

    def _run_of(self, loop: ir.Operation) -> _Run | None:
        lb, ub, step = (constant_int(v) for v in list(loop.operands)[:3])
        if None in (lb, ub, step) or step != 1 or len(loop.results):
            return None
        trips = ub - lb
        if not 2 <= trips <= self.options.max_lanes or enclosing(loop, "gpu.launch") is None:
            return None
        run = _Run(loop, lb, trips)
        for op in _body_ops(loop):
            item = _item_of(op)
            if item is not None:
                run.items.append(item)
            elif len(op.regions) or not _plain_op(op):
                return None
        if not run.items or _loads_and_stores_same_tensor(run.items):
            return None
        return run

    # -- proving ---------------------------------------------------------------

    def _plan(self, run: _Run, item: _Item) -> bool:
        terms = self._index_terms(item)
        if item.guard is not None:
            terms.append(self.prover.terms.bool_term(item.guard.operands[0]))
        if not all(self._iteration_exact(run, t) for t in terms) or not self._contiguous(run, item):
            return False
        eb = item.access.element_bytes
        for width in _WIDTHS:
            lanes = width // eb
            if width > self.options.max_bytes or lanes < 2 or run.trips % lanes or width % eb:
                continue
            starts = range(run.lb, run.lb + run.trips, lanes)
            for mode, checked in _modes(item, lanes):
                if all(self._vector_ok(run, item, start, lanes, mode, checked) for start in starts):
                    item.lanes, item.mode, item.checked_lanes = lanes, mode, checked
                    return True
        return False

    def _iteration_exact(self, run: _Run, term) -> bool:
        """Whether `term` is a function of the run's induction variable and of values fixed across
        its iterations, so that substituting another iteration for the variable is that iteration's
        value (a variable standing for a value computed inside the loop, e.g. a load, is not)."""
        loop, terms = run.loop, self.prover.terms
        iv_value = _iv_value(loop)
        for name in self.prover.variables(term):
            origin = terms.origin(name)
            if origin is not None and origin != iv_value and _defined_inside(origin, loop):
                return False
        return True

    def _iv(self, run: _Run):
        return self.prover.terms.loop_var(run.loop)

    def _index_terms(self, item: _Item) -> list:
        return [self.prover.terms.int_term(v) for v in item.access.indices]

    def _contiguous(self, run: _Run, item: _Item) -> bool:
        iv = self._iv(run)
        lb = self.prover.terms.int_val(run.lb)
        goals = []
        indices = self._index_terms(item)
        for dim, index in enumerate(indices):
            at_lb = z3.substitute(index, (iv, lb))
            goals.append(index == at_lb + (iv - lb) if dim == len(indices) - 1 else index == at_lb)
        return self.prover.prove(z3.And(*goals), item.access.op).proved

    def _vector_ok(self, run: _Run, item: _Item, start: int, lanes: int, mode: str, checked: tuple) -> bool:
        """Whether the vector at `start` is sound in `mode`; it runs where the guard holds at the
        `checked` lane offsets (none for an unguarded access)."""
        terms = self.prover.terms
        iv, first = self._iv(run), terms.int_val(start)
        indices = [z3.substitute(t, (iv, first)) for t in self._index_terms(item)]
        extra = []
        if mode != PLAIN:
            cond = terms.bool_term(item.guard.operands[0])
            extra = [z3.substitute(cond, (iv, terms.int_val(start + k))) for k in checked]
            lanes_of_vector = [iv >= first, iv < first + lanes]
            if mode == UNIFORM:  # the guard holds on all lanes or none
                whole = self.prover.prove(cond == extra[0], run.loop, extra=lanes_of_vector)
            else:  # where it holds on the checked lanes, it holds on all
                whole = self.prover.prove(cond, run.loop, extra=lanes_of_vector + extra)
            if not whole.proved:
                return False
        memref = item.access.memref
        last = len(indices) - 1
        for dim, index in enumerate(indices):
            reach = index + (lanes - 1 if dim == last else 0)
            goal = z3.And(index >= 0, reach < terms.dim_term(memref, dim))
            if not self.prover.prove(goal, run.loop, extra=extra).proved:
                return False
        return self._aligned(run, indices, row_major_strides(terms, memref), lanes, extra)

    def _aligned(self, run: _Run, indices, strides, lanes: int, extra) -> bool:
        """sum(index * stride) is a multiple of `lanes`: each term is (a sufficient, cheaper check)."""
        for index, stride in zip(indices, strides):
            if self.prover.prove(stride % lanes == 0, run.loop, extra=extra).proved:
                continue
            if not self.prover.prove((index * stride) % lanes == 0, run.loop, extra=extra).proved:
                return False
        return True

    # -- rewriting ---------------------------------------------------------------

    def _rewrite(self, run: _Run) -> None:
        copy = _copy_pair(run)
        if copy is not None and self._register_side_ok(run, *copy):
            self._rewrite_copy(run, *copy)
        else:
            self._rewrite_unrolled(run)
        for item in run.items:
            width = item.lanes * item.access.element_bytes
            self.stats[f"vectorized-{width}B"] += run.trips // item.lanes
        self.graveyard.bury(run.loop)

    def _register_side_ok(self, run: _Run, item: _Item, register_op: ir.Operation) -> bool:
        """The register buffer index is `reg0 + iv` with `reg0` a multiple of the lanes."""
        if len(list(register_op.operands)) != (3 if register_op.name == "memref.store" else 2):
            return False  # a multi-dimensional buffer
        iv, lb = self._iv(run), self.prover.terms.int_val(run.lb)
        reg = self.prover.terms.int_term(list(register_op.operands)[-1])
        if not self._iteration_exact(run, reg):
            return False
        at_lb = z3.substitute(reg, (iv, lb))
        if not self.prover.prove(reg == at_lb + (iv - lb), register_op).proved:
            return False
        return self.prover.prove(at_lb % item.lanes == 0, run.loop).proved

    def _rewrite_copy(self, run: _Run, item: _Item, register_op: ir.Operation) -> None:
        loop = run.loop
        ip, loc = ir.InsertionPoint(loop), loop.location
        register_memref = register_op.operands[1] if register_op.name == "memref.store" else register_op.operands[0]
        vector_type = ir.VectorType.get([item.lanes], item.access.element_type)
        for start in range(run.lb, run.lb + run.trips, item.lanes):
            mapping = {_iv_value(loop): index_constant(start, ip, loc)}
            reg = clone_slice(list(register_op.operands)[-1], loop, mapping, ip, self.graveyard)
            if item.access.is_load:
                self._vector_load(item, start, vector_type, ip, loc, into=(register_memref, [reg]))
            else:
                vector = _vector_load_plain(register_memref, [reg], vector_type, None, ip, loc)
                self._vector_store(item, vector, start, ip, loc)

    def _rewrite_unrolled(self, run: _Run) -> None:
        loop = run.loop
        ip, loc = ir.InsertionPoint(loop), loop.location
        iv = _iv_value(loop)
        vectors: dict = {}
        for n, item in enumerate(run.items):
            if item.access.is_load:
                vector_type = ir.VectorType.get([item.lanes], item.access.element_type)
                for start in range(run.lb, run.lb + run.trips, item.lanes):
                    vectors[(n, start)] = self._vector_load(item, start, vector_type, ip, loc)
        tops = {hash(item.top): n for n, item in enumerate(run.items)}
        lane_values: dict = {}
        for i in range(run.trips):
            value = run.lb + i
            mapping = {iv: index_constant(value, ip, loc)}
            for op in _body_ops(loop):
                n = tops.get(hash(op))
                if n is None:
                    self._clone_into(op, mapping, ip)
                    continue
                item = run.items[n]
                start = value - (value - run.lb) % item.lanes
                if item.access.is_load:
                    vector = vectors[(n, start)]
                    lane = _extract(vector, value - start, item.access.element_type, ip, loc)
                    mapping[item.top.results[0]] = lane
                else:
                    stored = item.access.stored_value
                    lane_values.setdefault(n, []).append(mapping.get(stored, stored))
        for n, item in enumerate(run.items):
            if item.access.is_load:
                continue
            vector_type = ir.VectorType.get([item.lanes], item.access.element_type)
            for k, start in enumerate(range(run.lb, run.lb + run.trips, item.lanes)):
                lanes = lane_values[n][k * item.lanes : (k + 1) * item.lanes]
                vector = ir.Operation.create(
                    "vector.from_elements", results=[vector_type], operands=lanes, loc=loc, ip=ip
                ).result
                self._vector_store(item, vector, start, ip, loc)

    def _clone_into(self, op: ir.Operation, mapping: dict, ip) -> None:
        clone = op.clone(ip=ip)
        for i, operand in enumerate(op.operands):
            if operand in mapping:
                clone.operands[i] = mapping[operand]
        for old, new in zip(op.results, clone.results):
            mapping[old] = new
        if clone.name in PURE_OPS:
            self.graveyard.maybe_dead.append(clone)

    def _vector_load(self, item: _Item, start: int, vector_type, ip, loc, into: tuple | None = None) -> ir.Value | None:
        """The vector at `start`, or, with `into` (a register buffer and its indices), nothing: the
        vector is stored there, by each branch of a guard (so that the guard is the last op of the
        copy, and the guards of consecutive copies on one condition are adjacent for canonicalize
        to merge into one branch that issues all their loads)."""
        indices = self._indices_at(item, start, ip, loc)
        align = item.lanes * item.access.element_bytes
        if item.mode == PLAIN:
            loaded = _vector_load_plain(item.access.memref, indices, vector_type, align, ip, loc)
            if into is None:
                return loaded
            _vector_store(loaded, *into, None, ip, loc)
            return None
        results = [vector_type] if into is None else []
        guard = make_guard(self._vector_condition(item, start, ip, loc), results, loc, ip, with_else=True)
        then_block, else_block = guard.regions[0].blocks[0], guard.regions[1].blocks[0]
        loaded = _vector_load_plain(item.access.memref, indices, vector_type, align, ir.InsertionPoint(then_block), loc)
        _deliver(loaded, then_block, into, loc)
        else_ip = ir.InsertionPoint(else_block)
        if item.mode == UNIFORM:
            fallback = constant(ir.DenseElementsAttr.get_splat(vector_type, _pad_of(item)), else_ip, loc)
        else:
            lanes = [self._scalar_lane(item, start + k, None, else_ip, loc) for k in range(item.lanes)]
            fallback = ir.Operation.create(
                "vector.from_elements", results=[vector_type], operands=lanes, loc=loc, ip=else_ip
            ).result
        _deliver(fallback, else_block, into, loc)
        return guard.results[0] if into is None else None

    def _vector_store(self, item: _Item, vector: ir.Value, start: int, ip, loc) -> None:
        indices = self._indices_at(item, start, ip, loc)
        align = item.lanes * item.access.element_bytes
        if item.mode == PLAIN:
            _vector_store(vector, item.access.memref, indices, align, ip, loc)
            return
        fast = item.mode == FAST_PATH
        guard = make_guard(self._vector_condition(item, start, ip, loc), [], loc, ip, with_else=fast)
        then_block = guard.regions[0].blocks[0]
        _vector_store(vector, item.access.memref, indices, align, ir.InsertionPoint(yield_([], then_block, loc)), loc)
        if fast:
            else_block = guard.regions[1].blocks[0]
            else_ip = ir.InsertionPoint(yield_([], else_block, loc))
            for k in range(item.lanes):
                element = _extract(vector, k, item.access.element_type, else_ip, loc)
                self._scalar_lane(item, start + k, element, else_ip, loc)

    def _indices_at(self, item: _Item, iteration: int, ip, loc) -> list[ir.Value]:
        loop = item.top.parent
        mapping = {_iv_value(loop): index_constant(iteration, ip, loc)}
        return [clone_slice(v, loop, mapping, ip, self.graveyard) for v in item.access.indices]

    def _condition_at(self, item: _Item, iteration: int, ip, loc) -> ir.Value:
        """The guard at one iteration; a symbol's extent is read from its first tensor, so the
        conditions of runs over tensors of one length become one value after cse (and canonicalize
        merges the ifs built on them, as range versioning's)."""
        loop = item.top.parent
        cond = item.guard.operands[0]
        mapping = symbol_dims(self.prover.terms, [cond], loop, ip, loc)
        mapping[_iv_value(loop)] = index_constant(iteration, ip, loc)
        return clone_slice(cond, loop, mapping, ip, self.graveyard)

    def _vector_condition(self, item: _Item, start: int, ip, loc) -> ir.Value:
        """The guard at the checked lanes: the first (uniform), the last, or both (fast path)."""
        if item.mode == FAST_PATH:
            self.stats["vectorized-with-fallback"] += 1
        checks = [self._condition_at(item, start + k, ip, loc) for k in item.checked_lanes]
        return conjunction(checks, ip, loc)

    def _scalar_lane(self, item: _Item, iteration: int, element, ip, loc) -> ir.Value | None:
        """The original guarded scalar access at one iteration (a load's value, or None)."""
        indices = self._indices_at(item, iteration, ip, loc)
        cond = self._condition_at(item, iteration, ip, loc)
        access = item.access
        if access.is_load:
            scalar = ir.Operation.create(
                "memref.load", results=[access.element_type], operands=[access.memref, *indices], loc=loc, ip=ip
            )
            if PAD in access.op.attributes:
                scalar.attributes[PAD] = access.op.attributes[PAD]
            return wrap_in_guard(scalar, cond, pad=_pad_of(item)).results[0]
        store = ir.Operation.create("memref.store", operands=[element, access.memref, *indices], loc=loc, ip=ip)
        wrap_in_guard(store, cond)
        return None


# -- helpers -----------------------------------------------------------------------


def _body_ops(loop: ir.Operation) -> list[ir.Operation]:
    ops = [operation(o) for o in loop.regions[0].blocks[0].operations]
    return ops[:-1]


def _plain_op(op: ir.Operation) -> bool:
    """Arithmetic, or an access to an on-chip buffer."""
    if op.name in ("memref.load", "memref.store"):
        memref = op.operands[0] if op.name == "memref.load" else op.operands[1]
        return not is_global(memref.type)
    return op.name in PURE_OPS or op.name.startswith(("arith.", "math."))


def _item_of(op: ir.Operation) -> _Item | None:
    access = global_access(op)
    if access is None and ASYNC_ATTR not in op.attributes:
        access = shared_access(op)
    if access is not None:
        return _Item(access, None) if _scalar_load_or_store(access) else None
    if is_guard(op) and not _guard_extra_ops(op):
        inner = guarded_access(op)
        access = global_access(inner) if inner is not None else None
        if access is not None and _scalar_load_or_store(access):
            return _Item(access, op)
    return None


def _scalar_load_or_store(access: MemoryAccess) -> bool:
    return access.lanes == 1 and not access.is_atomic


def _guard_extra_ops(guard: ir.Operation) -> bool:
    """Whether a guard's else branch does more than yield constants."""
    if len(guard.regions[1].blocks) == 0:
        return False
    ops = [operation(o) for o in guard.regions[1].blocks[0].operations]
    return any(o.name not in ("arith.constant", "scf.yield") for o in ops)


def _modes(item: _Item, lanes: int) -> list[tuple[str, tuple]]:
    """(mode, lane offsets whose guard the vector checks), cheapest first."""
    if item.guard is None:
        return [(PLAIN, ())]
    last = lanes - 1
    return [(UNIFORM, (0,)), (FAST_PATH, (last,)), (FAST_PATH, (0,)), (FAST_PATH, (0, last))]


def _pad_of(item: _Item) -> ir.Attribute:
    """The scalar the guard yields when it fails (its else constant), else the load's `tile.pad`."""
    yielded = list(item.guard.regions[1].blocks[0].operations)[-1].operands[0]
    owner = defining_op(yielded)
    if owner is not None and owner.name == "arith.constant":
        return owner.attributes["value"]
    return pad_attr(item.access.op, item.access.element_type)


def _loads_and_stores_same_tensor(items: list[_Item]) -> bool:
    loaded = {hash(i.access.memref) for i in items if i.access.is_load}
    stored = {hash(i.access.memref) for i in items if not i.access.is_load}
    return bool(loaded & stored)


def _copy_pair(run: _Run):
    """(item, register access) when the run only copies one global access to or from a register buffer."""
    if len(run.items) != 1:
        return None
    item = run.items[0]
    others = [op for op in _body_ops(run.loop) if op != item.top]
    memory = [op for op in others if op.name in ("memref.load", "memref.store")]
    if len(memory) != 1:
        return None
    register_op = memory[0]
    if item.access.is_load:
        ok = register_op.name == "memref.store" and register_op.operands[0] == item.top.results[0]
        ok = ok and sum(1 for _ in item.top.results[0].uses) == 1
    else:
        ok = register_op.name == "memref.load" and item.access.stored_value == register_op.results[0]
    if not ok or register_op.operands[0 if register_op.name == "memref.load" else 1].type.element_type != item.access.element_type:
        return None
    return item, register_op


def _iv_value(loop: ir.Operation) -> ir.Value:
    return loop.regions[0].blocks[0].arguments[0]


def _defined_inside(value: ir.Value, loop: ir.Operation) -> bool:
    owner = value.owner
    op = operation(owner.owner) if isinstance(owner, ir.Block) else operation(owner)
    return inside(op, loop)


def _alignment_attrs(align: int | None) -> dict:
    return {} if align is None else {"alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), align)}


def _vector_load_plain(memref, indices, vector_type, align, ip, loc) -> ir.Value:
    return ir.Operation.create(
        "vector.load", results=[vector_type], operands=[memref, *indices], attributes=_alignment_attrs(align),
        loc=loc, ip=ip,
    ).result


def _vector_store(vector, memref, indices, align, ip, loc) -> None:
    ir.Operation.create(
        "vector.store", operands=[vector, memref, *indices], attributes=_alignment_attrs(align), loc=loc, ip=ip
    )


def _deliver(vector: ir.Value, block: ir.Block, into: tuple | None, loc) -> None:
    """End a guard branch: yield `vector`, or store it `into` (buffer, indices) and yield nothing."""
    if into is not None:
        _vector_store(vector, *into, None, ir.InsertionPoint(block), loc)
    yield_([vector] if into is None else [], block, loc)


def _extract(vector: ir.Value, position: int, element_type, ip, loc) -> ir.Value:
    return ir.Operation.create(
        "vector.extract",
        results=[element_type],
        operands=[vector],
        attributes={"static_position": ir.DenseI64ArrayAttr.get([position])},
        loc=loc,
        ip=ip,
    ).result
