"""Readable base names for the values the emitter must name (`identifiers` makes each unique).

The Python name when the IR carries one (`name` / `tile.name` on the
defining op, `tile.result_names` on an scf.for or scf.if for the values it
carries or yields, `tile.name` on an scf.for for its induction variable);
otherwise a name from how the value is used: `row` / `col` for an index
into a global tensor's last two dims, `xv` for a value read from (or made
to be stored into) `X`, `peer` for a shuffled value, `acc` for a
loop-carried value, `pred` for a condition, `i`, `j`, ... for loop counters.
"""

from __future__ import annotations

from tilemlir.emit_cuda import irutil
from tilemlir.emit_cuda.ctype import is_bool
from tilemlir.emit_cuda.memory import Memory
from tilemlir.emit_cuda.plan import is_vector
from tilemlir.mlir import ir

_LOOP_LETTERS = "ijklmn"
_FIRST_INDEX = {"memref.load": 1, "vector.load": 1, "memref.store": 2, "vector.store": 2}


class ValueNames:
    def __init__(self, memory: Memory):
        self._memory = memory

    def of(self, value: ir.Value, op: ir.Operation) -> str:
        """The base name of `value`, a result of `op`."""
        if op.name in ("scf.for", "scf.if"):
            given = _result_name(op, value.result_number)
        else:
            given = irutil.str_attr(op, "tile.name") or irutil.str_attr(op, "name")
        if given:
            return given
        if isinstance(value.type, ir.IndexType):
            return self.index(value) or "idx"
        if op.name in ("memref.load", "vector.load"):
            return self._memory_base(op.operands[0])
        uses = irutil.users(value)
        if is_vector(value) and len(uses) == 1 and uses[0][0].name == "vector.store":
            return self._memory_base(uses[0][0].operands[1])  # a vector made to be stored: after where it goes
        if op.name == "gpu.shuffle":
            return "peer"
        if op.name == "scf.for":
            return "acc"
        if is_bool(value.type):
            return "pred"
        return "t"

    def induction_variable(self, op: ir.Operation) -> str:
        iv = irutil.single_block(op).arguments[0]
        return irutil.str_attr(op, "tile.name") or self.index(iv) or _loop_letter(op)

    def index(self, value: ir.Value) -> str | None:
        """'row' / 'col' for an index that directly addresses a 2-D-or-more global tensor."""
        for user, operand in irutil.users(value):
            first = _FIRST_INDEX.get(user.name)
            if first is None or operand < first:
                continue
            memref = user.operands[first - 1]
            if memref not in self._memory.tensors or memref.type.rank < 2:
                continue
            position = operand - first
            if position == memref.type.rank - 1:
                return "col"
            if position == memref.type.rank - 2:
                return "row"
        return None

    def _memory_base(self, memref: ir.Value) -> str:
        memory = self._memory.tensors.get(memref) or self._memory.buffers.get(memref)
        return memory.name.lower() + "v" if memory else "v"


def _loop_letter(op: ir.Operation) -> str:
    depth = 0
    parent = op.parent
    while parent is not None and parent.name != "gpu.launch":
        depth += parent.name == "scf.for"
        parent = parent.parent
    return _LOOP_LETTERS[min(depth, len(_LOOP_LETTERS) - 1)]


def _result_name(op: ir.Operation, number: int) -> str | None:
    if "tile.result_names" not in op.attributes:
        return None
    names = op.attributes["tile.result_names"]
    if isinstance(names, ir.ArrayAttr) and number < len(names) and isinstance(names[number], ir.StringAttr):
        return names[number].value or None
    return None
