"""Per-thread state across phases: thread ids, values live across sync points, shuffles,
and "local" (per-thread) buffers.

After `phases.PhaseSplitter`, an SSA value defined in one thread loop may be
used in another (or by block-level control). Such a value gets a per-thread
array `memref<T x type>`: its definition stores it at `[t]`, each use in
another thread loop loads `[t]`, and a block-level use (a loop bound, a
condition, proved thread-independent) loads thread 0's copy. A
`gpu.shuffle` loads its partner lane's copy instead. A "local" buffer of
shape S becomes one `memref<T x S>`, indexed by the thread first.
"""

from __future__ import annotations

from tilemlir.backends.cpu import buffers
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.simulate.phases import LINEAR_ATTR, THREAD_LOOP_ATTR, ThreadLoop
from tilemlir.diagnostics import reporting as diag
from tilemlir.ir_util import walk_ops
from tilemlir.mlir import arith, ir, memref, vector

WARP = 32
_DIMS = {"x": 0, "y": 1, "z": 2}


class ThreadState:
    def __init__(self, function: ir.Operation, block_dims: tuple[int, int, int], loops: list[ThreadLoop]):
        self.function = function
        self.block_dims = block_dims
        self.n_threads = block_dims[0] * block_dims[1] * block_dims[2]
        self.loops = {loop.op: loop for loop in loops}
        self._ids: dict[ir.Operation, list[ir.Value]] = {}
        self._storage: dict[ir.Value, ir.Value] = {}

    # -- where things are -------------------------------------------------------------
    def loop_of(self, op: ir.Operation) -> ThreadLoop | None:
        """The thread loop containing `op` (None at block level)."""
        current = op
        while current is not None and current != self.function:
            if THREAD_LOOP_ATTR in current.attributes:
                return self.loops[current]
            current = current.parent
        return None

    def loop_defining(self, value: ir.Value) -> ThreadLoop | None:
        owner = value.owner
        op = owner.owner if isinstance(owner, ir.Block) else owner
        return self.loop_of(op.operation if isinstance(op, ir.OpView) else op)

    # -- thread ids ----------------------------------------------------------------------
    def thread_ids(self, loop: ThreadLoop) -> list[ir.Value]:
        """(x, y, z, linear, lane) ids of the thread running `loop`, computed at its top."""
        if loop.op not in self._ids:
            body = loop.op.regions[0].blocks[0]
            with loop.op.location, ir.InsertionPoint.at_block_begin(body):
                t = loop.tid
                dim_x, dim_y, _ = self.block_dims
                x = arith.remui(t, b.index(dim_x))
                y = arith.remui(arith.divui(t, b.index(dim_x)), b.index(dim_y))
                z = arith.divui(t, b.index(dim_x * dim_y))
                lane = arith.remui(t, b.index(WARP))
            self._ids[loop.op] = [x, y, z, t, lane]
        return self._ids[loop.op]

    def bind_thread_ids(self, launch_thread_args: list[ir.Value]) -> None:
        """Replace `gpu.thread_id`, `gpu.lane_id`, `gpu.block_dim` and the launch's thread
        arguments by the ids of the thread loop each use is in."""
        for loop in self.loops.values():
            for op in list(walk_ops(loop.op)):  # a snapshot: ops are erased on the way
                replacement = self._id_op_value(op, loop)
                if replacement is not None:
                    op.results[0].replace_all_uses_with(replacement)
                    op.erase()
        for dim, arg in enumerate(launch_thread_args):
            for user in {use.owner.operation for use in arg.uses}:
                loop = self.loop_of(user)
                if loop is None:
                    raise diag.error(user, f"cannot simulate {user.name}: it uses a thread id outside "
                                           "any per-thread code")
                user.replace_uses_of_with(arg, self.thread_ids(loop)[dim])

    def _id_op_value(self, op: ir.Operation, loop: ThreadLoop) -> ir.Value | None:
        if op.name == "gpu.thread_id":
            return self.thread_ids(loop)[3 if LINEAR_ATTR in op.attributes else _dim(op)]
        if op.name == "gpu.lane_id":
            return self.thread_ids(loop)[4]
        if op.name == "gpu.block_dim":
            with op.location, ir.InsertionPoint(op):
                return b.index(self.block_dims[_dim(op)])
        return None

    # -- values live across phases ----------------------------------------------------
    @property
    def carried(self) -> list[ir.Value]:
        """The per-thread arrays of values live across phases."""
        return list(self._storage.values())

    def storage(self, value: ir.Value) -> ir.Value:
        """The per-thread array of `value` (created with its store on first request)."""
        if value in self._storage:
            return self._storage[value]
        loop = self.loop_defining(value)
        owner = value.owner
        if isinstance(owner, ir.Block) or isinstance(value.type, ir.MemRefType):
            raise diag.error(_op_of(owner), f"cannot simulate: value of type {value.type} is used across a "
                                             "gpu.barrier or gpu.shuffle and cannot be kept per thread")
        array = buffers.allocate_at_entry(self.function, ir.MemRefType.get([self.n_threads], value.type),
                                          owner.location)
        with owner.location, ir.InsertionPoint.after(owner):
            memref.store(value, array, [loop.tid])
        self._storage[value] = array
        return array

    def carry_values_across_phases(self, block_level_ops: list[ir.Operation]) -> None:
        for loop in list(self.loops.values()):
            for op in list(walk_ops(loop.op)):
                self._reload_operands(op, loop)
        for op in block_level_ops:
            self._reload_operands(op, None)

    def _reload_operands(self, op: ir.Operation, loop: ThreadLoop | None) -> None:
        for value in set(op.operands):
            defined_in = self.loop_defining(value)
            if defined_in is None or defined_in is loop:
                continue
            if loop is None and defined_in.predicated:
                raise diag.error(op, f"cannot simulate {op.name}: its operand is computed under a "
                                     "thread-dependent condition, so no thread is known to hold it")
            with op.location, ir.InsertionPoint(op):
                index = loop.tid if loop is not None else b.index(0)
                reloaded = memref.load(self.storage(value), [index])
            op.replace_uses_of_with(value, reloaded)

    # -- shuffles -------------------------------------------------------------------------
    def exchange_shuffles(self) -> None:
        """Each `gpu.shuffle` (which opens its thread loop) reads its partner's stored value."""
        for loop in list(self.loops.values()):
            for op in list(walk_ops(loop.op)):
                if op.name == "gpu.shuffle":
                    self._exchange(op, loop)

    def _exchange(self, op: ir.Operation, loop: ThreadLoop) -> None:
        value, offset, width = op.operands
        mode = str(op.attributes["mode"]).split()[-1].rstrip(">")
        with op.location, ir.InsertionPoint(op):
            linear, lane = self.thread_ids(loop)[3], self.thread_ids(loop)[4]
            offset = arith.index_cast(ir.IndexType.get(), offset)
            width = arith.index_cast(ir.IndexType.get(), width)
            source_lane, valid = _source_lane(mode, lane, offset, width)
            source = arith.addi(arith.subi(linear, lane), source_lane)
            valid = arith.andi(valid, arith.cmpi(b.CMPI.ult, source, b.index(self.n_threads)))
            if self.loop_defining(value) is None:
                result = value
            else:
                array = self.storage(value)
                source = arith.select(valid, source, linear)
                result = memref.load(array, [source])
        self._replace_and_erase(op, [result, valid])

    # -- per-thread buffers --------------------------------------------------------------
    def expand_local_buffer(self, old: ir.Value, expanded: ir.Value) -> None:
        """Rewrite every access to `old` (one thread's buffer) as an access to `expanded[t]`."""
        for user in {use.owner.operation for use in old.uses}:
            loop = self.loop_of(user)
            if loop is None or user.name not in ("memref.load", "memref.store", "vector.load", "vector.store"):
                raise diag.error(user, f"cannot simulate {user.name} on a per-thread (\"local\") buffer")
            self._reindex(user, old, expanded, loop.tid)

    def _reindex(self, op: ir.Operation, old: ir.Value, expanded: ir.Value, tid: ir.Value) -> None:
        operands = list(op.operands)
        with op.location, ir.InsertionPoint(op):
            if op.name == "memref.load":
                new = memref.load(expanded, [tid, *operands[1:]])
            elif op.name == "vector.load":
                new = vector.load(op.results[0].type, expanded, [tid, *operands[1:]])
            elif op.name == "memref.store":
                memref.store(operands[0], expanded, [tid, *operands[2:]])
                new = None
            else:
                vector.store(operands[0], expanded, [tid, *operands[2:]])
                new = None
        self._replace_and_erase(op, [new] if new is not None else [])

    def _replace_and_erase(self, op: ir.Operation, replacements: list[ir.Value]) -> None:
        """Replace `op`'s results and erase it. A result with a per-thread array hands the array
        to its replacement (whose uses, the array's store among them, it took over): the erased
        value's address is reused by values created later, and a stale key would give one of them
        another value's array."""
        for old, new in zip(op.results, replacements):
            old.replace_all_uses_with(new)
            if old in self._storage:
                self._storage[new] = self._storage.pop(old)
        op.erase()


def _source_lane(mode: str, lane: ir.Value, offset: ir.Value, width: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(lane read from, whether it is valid) for `gpu.shuffle` `mode`."""
    if mode == "xor":
        source = arith.xori(lane, offset)
        return source, arith.cmpi(b.CMPI.ult, source, width)
    if mode == "down":
        source = arith.addi(lane, offset)
        return source, arith.cmpi(b.CMPI.ult, source, width)
    if mode == "up":
        return arith.subi(lane, offset), arith.cmpi(b.CMPI.uge, lane, offset)
    return offset, arith.cmpi(b.CMPI.ult, offset, width)  # idx


def _dim(op: ir.Operation) -> int:
    return _DIMS[str(op.attributes["dimension"]).split()[-1].rstrip(">")]


def _op_of(owner) -> ir.Operation:
    return owner.owner if isinstance(owner, ir.Block) else owner
