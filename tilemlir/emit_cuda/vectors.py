"""1-D `vector` values -> aligned structs (`struct __align__(16) bf16x8 { __nv_bfloat16 v[8]; }`).

A vector SSA value is a named struct variable, never modified after its
definition. Global and shared vector loads and stores move the whole
struct through one aligned access; elementwise `arith` / `math` on vectors
become `#pragma unroll` loops over the elements; `vector.extract` reads
`v.v[i]` in place.
"""

from __future__ import annotations

import re

from tilemlir.diagnostics.reporting import error
from tilemlir.emit_cuda import cexpr as C
from tilemlir.emit_cuda import irutil
from tilemlir.emit_cuda.cexpr import CExpr
from tilemlir.emit_cuda.ctype import UnsupportedType, float_kind, vector_alignment, vector_length
from tilemlir.emit_cuda.statement_context import StatementContext
from tilemlir.mlir import ir

_DYNAMIC = -(2**63)
_REDUCTIONS = {  # vector.kind -> (float op, integer op)
    "add": ("arith.addf", "arith.addi"), "mul": ("arith.mulf", "arith.muli"),
    "maximumf": ("arith.maximumf", None), "minimumf": ("arith.minimumf", None),
    "maxnumf": ("arith.maxnumf", None), "minnumf": ("arith.minnumf", None),
    "maxsi": (None, "arith.maxsi"), "minsi": (None, "arith.minsi"), "maxui": (None, "arith.maxui"),
    "minui": (None, "arith.minui"), "and": (None, "arith.andi"), "or": (None, "arith.ori"), "xor": (None, "arith.xori"),
}


class VectorStatements:
    def __init__(self, cx: StatementContext):
        self._cx = cx
        self._lane: str | None = None

    # -- helpers ------------------------------------------------------------------------------------
    def struct(self, type_: ir.VectorType, where: ir.Operation) -> str:
        try:
            name = self._cx.types.vector(type_)
            element = self._cx.types.scalar(type_.element_type)
            return self._cx.prelude.vector_struct(name, element, vector_length(type_), vector_alignment(type_))
        except UnsupportedType as exc:
            raise error(where, f"{exc} (in '{where.name}')") from None

    def lane(self) -> str:
        if self._lane is None:
            self._lane = self._cx.identifiers.fresh_global("e")
        return self._lane

    def element(self, value: ir.Value, index: CExpr) -> CExpr:
        """Element `index` of a vector value: of its struct, or computed in place when the value is folded."""
        if not self._cx.folded(value):
            return C.atom(f"{self._cx.value(value).text}.v[{index.text}]")
        op = irutil.defining_op(value)
        if op.name == "arith.constant":
            return self._cx.scalar.constant(op.attributes["value"].get_splat_value(), value.type.element_type)
        if op.name in ("vector.broadcast", "vector.splat"):
            return self._cx.value(op.operands[0])
        if op.name == "vector.load":
            indices = [self._cx.value(v) for v in list(op.operands)[1:]]
            return self._cx.memory.element(op.operands[0], self._shifted(indices, index), op)
        return self._cx.scalar.translate(op, self._operands(op, index))

    def _operands(self, op: ir.Operation, index: CExpr) -> list[CExpr]:
        return [self.element(v, index) if isinstance(v.type, ir.VectorType) else self._cx.value(v) for v in op.operands]

    def whole(self, value: ir.Value, where: ir.Operation, base: str = "t") -> CExpr:
        """The struct of a vector value; a folded one is first computed into a named struct."""
        if not self._cx.folded(value):
            return self._cx.value(value)
        struct = self.struct(value.type, where)
        name = self._cx.identifiers.fresh(base)
        lane = C.atom(self.lane())
        self._cx.out.line(f"{struct} {name};")
        self._loop(vector_length(value.type), f"{name}.v[{lane.text}] = {self.element(value, lane).text};")
        return C.atom(name)

    def constant(self, op: ir.Operation) -> CExpr:
        """A constant vector as a struct initializer expression."""
        result = op.results[0]
        struct = self.struct(result.type, op)
        values = ", ".join(self._cx.scalar.constant(a, result.type.element_type).text for a in dense_elements(op))
        return C.atom(f"{struct}{{{{{values}}}}}")

    def _loop(self, length: int, body: str, start: int = 0) -> None:
        lane = self.lane()
        self._cx.out.line("#pragma unroll")
        self._cx.out.line(f"for (int {lane} = {start}; {lane} < {length}; ++{lane}) {body}")

    def _shifted(self, indices: list[CExpr], offset: CExpr) -> list[CExpr]:
        return indices[:-1] + [C.add(indices[-1], offset)]

    # -- statements ---------------------------------------------------------------------------------
    def statement(self, op: ir.Operation) -> None:
        result = op.results[0]
        if len(op.results) != 1 or not isinstance(result.type, ir.VectorType):
            raise error(op, f"'{op.name}' with these results is not supported by the CUDA emitter")
        struct = self.struct(result.type, op)
        length = vector_length(result.type)
        name, declare = self._cx.result_variable(result, op)
        typed = f"{struct} {name}" if declare else name  # the head of an initialization
        lane = C.atom(self.lane())
        if op.name == "vector.load":
            self._load(op, struct, typed, length)
        elif op.name == "arith.constant":
            values = [self._cx.scalar.constant(a, result.type.element_type).text for a in dense_elements(op)]
            self._cx.out.wrapped(f"{'const ' if declare else ''}{typed} = {{{{", values, "}};")
        elif op.name in ("vector.broadcast", "vector.splat"):
            if isinstance(op.operands[0].type, ir.VectorType):
                raise error(op, "vector.broadcast of a vector is not supported by the CUDA emitter")
            self._declare(struct, name, declare)
            self._loop(length, f"{name}.v[{lane.text}] = {self._cx.value(op.operands[0]).text};")
        elif op.name == "vector.from_elements":
            self._cx.out.wrapped(f"{typed} = {{{{", [self._cx.value(v).text for v in op.operands], "}};")
        elif op.name == "vector.insert":
            position = self._position(op, op.operands[2:] if len(op.operands) > 2 else [])
            self._cx.out.line(f"{typed} = {self.whole(op.operands[1], op).text};")
            self._cx.out.line(f"{name}.v[{position.text}] = {self._cx.value(op.operands[0]).text};")
        elif op.name.startswith("arith.") or op.name.startswith("math."):
            expr = self._cx.scalar.translate(op, self._operands(op, lane))
            self._declare(struct, name, declare)
            self._loop(length, f"{name}.v[{lane.text}] = {expr.text};")
        else:
            raise error(op, f"'{op.name}' is not supported by the CUDA emitter")
        self._cx.bind(result, C.atom(name))

    def _declare(self, struct: str, name: str, declare: bool) -> None:
        if declare:
            self._cx.out.line(f"{struct} {name};")

    def _load(self, op: ir.Operation, struct: str, typed: str, length: int) -> None:
        """`typed` is `T name` for a new variable, or `name` for an existing one."""
        memref = op.operands[0]
        indices = [self._cx.value(v) for v in list(op.operands)[1:]]
        memory = self._cx.memory
        if memory.is_registers(memref):
            lane = C.atom(self.lane())
            source = memory.element(memref, self._shifted(indices, lane), op)
            name = typed.split()[-1]
            self._declare(struct, name, typed != name)
            self._loop(length, f"{name}.v[{lane.text}] = {source.text};")
            return
        address = memory.element(memref, indices, op)
        self._cx.out.line(f"{typed} = *reinterpret_cast<const {struct}*>(&{address.text});")

    def store(self, op: ir.Operation) -> None:
        value, memref = op.operands[0], op.operands[1]
        indices = [self._cx.value(v) for v in list(op.operands)[2:]]
        memory = self._cx.memory
        if memory.is_registers(memref):
            lane = C.atom(self.lane())
            target = memory.element(memref, self._shifted(indices, lane), op)
            self._loop(vector_length(value.type), f"{target.text} = {self.element(value, lane).text};")
            return
        struct = self.struct(value.type, op)
        target = memory.tensors.get(memref) or memory.buffers.get(memref)
        whole = self.whole(value, op, base=target.name.lower() + "v" if target else "t")
        address = memory.element(memref, indices, op)
        self._cx.out.line(f"*reinterpret_cast<{struct}*>(&{address.text}) = {whole.text};")

    # -- scalar results -------------------------------------------------------------------------------
    def scalar_expr(self, op: ir.Operation) -> CExpr:
        if op.name == "vector.extract":
            return self.element(op.operands[0], self._position(op, list(op.operands)[1:]))
        if op.name == "vector.reduction":
            return self._reduction(op)
        raise error(op, f"'{op.name}' is not supported by the CUDA emitter")

    def _position(self, op: ir.Operation, dynamic: list[ir.Value]) -> CExpr:
        positions = list(op.attributes["static_position"])
        if len(positions) != 1:
            raise error(op, f"'{op.name}' needs exactly one position (1-D vectors only)")
        if positions[0] == _DYNAMIC:
            return self._cx.value(dynamic[0])
        return C.int_lit(positions[0])

    def _reduction(self, op: ir.Operation) -> CExpr:
        """A short vector.reduction as one expression, folded left to right."""
        vector = op.operands[0]
        elements = [self.element(vector, C.int_lit(i)) for i in range(vector_length(vector.type))]
        total = self._cx.value(op.operands[1]) if len(op.operands) > 1 else elements.pop(0)
        for item in elements:
            total = self._combine(op, total, item)
        return total

    def reduction_statement(self, op: ir.Operation) -> None:
        """A long vector.reduction as a variable and an unrolled loop (the same left-to-right order)."""
        vector, result = op.operands[0], op.results[0]
        has_init = len(op.operands) > 1
        if has_init and _accumulates_carried(op):
            name = self._cx.value(op.operands[1]).text  # update the loop-carried variable in place
        else:
            name = self._cx.identifiers.fresh(self._cx.value_names.of(result, op))
            init = self._cx.value(op.operands[1]) if has_init else self.element(vector, C.int_lit(0))
            self._cx.out.line(f"{self._cx.c_type(result.type, op)} {name} = {init.text};")
        step = self._combine(op, C.atom(name), self.element(vector, C.atom(self.lane())))
        self._loop(vector_length(vector.type), C.compound_assignment(name, step), start=0 if has_init else 1)
        self._cx.bind(result, C.atom(name))

    def _combine(self, op: ir.Operation, total: CExpr, item: CExpr) -> CExpr:
        kind = re.search(r"<(\w+)>", str(op.attributes["kind"])).group(1)
        vector = op.operands[0]
        element_type = vector.type.element_type
        float_op, int_op = _REDUCTIONS.get(kind, (None, None))
        if float_kind(element_type):
            if float_op is None:
                raise error(op, f"vector.reduction <{kind}> on {element_type} is not supported by the CUDA emitter")
            return self._cx.scalar.float_binary(float_op, [total, item], element_type)
        if int_op is None:
            raise error(op, f"vector.reduction <{kind}> on {element_type} is not supported by the CUDA emitter")
        return self._cx.scalar.int_binary(int_op, [total, item], element_type, [vector, vector])


def _accumulates_carried(op: ir.Operation) -> bool:
    """`acc' = reduce(v, acc)` yielded straight back as `acc`, acc used nowhere else."""
    carried, result = op.operands[1], op.results[0]
    if not isinstance(carried, ir.BlockArgument) or carried.arg_number == 0:
        return False
    loop = irutil.operation(carried.owner.owner)
    uses, result_uses = irutil.users(carried), irutil.users(result)
    return (loop.name == "scf.for" and len(uses) == 1 and len(result_uses) == 1
            and result_uses[0][0].name == "scf.yield" and result_uses[0][0].block == carried.owner
            and result_uses[0][1] == carried.arg_number - 1)


def dense_elements(op: ir.Operation) -> list:
    """The elements of a dense vector constant. The bindings cannot iterate bf16/f8 dense
    attributes, but every such constant our passes make is a splat."""
    attr = op.attributes["value"]
    if attr.is_splat:
        return [attr.get_splat_value()] * vector_length(op.results[0].type)
    return list(attr)
