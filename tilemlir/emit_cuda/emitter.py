"""The statement printer: the gpu.launch body -> the body of one `__global__` function.

Values are written in place or named as `plan.InlinePlan` decides; structured
`scf.for` / `scf.if` become `for` / `if` (loop-carried values and `if`
results become variables assigned by their `scf.yield`); each statement is
preceded by a `// file.py:LINE` comment when its Python line changes.
"""

from __future__ import annotations

import re

from tilemlir.diagnostics.reporting import error, source_location
from tilemlir.dialects.tile import memory_space
from tilemlir.emit_cuda import cexpr as C
from tilemlir.emit_cuda import async_copy, bulk_copy, debug, irutil
from tilemlir.emit_cuda.cexpr import CExpr
from tilemlir.emit_cuda.code_writer import MAX_LINE, CodeWriter
from tilemlir.emit_cuda.ctype import CTypes, UnsupportedType
from tilemlir.emit_cuda.identifiers import Identifiers
from tilemlir.emit_cuda.kernel import KernelIR
from tilemlir.emit_cuda.memory import Memory
from tilemlir.emit_cuda.plan import InlinePlan, is_vector
from tilemlir.emit_cuda.prelude import Prelude
from tilemlir.emit_cuda.scalar import ScalarOps
from tilemlir.emit_cuda.signs import Signs
from tilemlir.emit_cuda.statement_context import StatementContext
from tilemlir.emit_cuda.value_names import ValueNames
from tilemlir.emit_cuda.tensor_cores import TensorCoreStatements
from tilemlir.emit_cuda.warpgroup import WarpgroupStatements
from tilemlir.emit_cuda.vectors import VectorStatements
from tilemlir.mlir import ir
from tilemlir.runtime.tensor_map import TENSOR_MAP_DECLARATION

MAX_FULL_UNROLL = 256
# A loop that does not index registers is still unrolled when the copies stay this small.
MAX_UNROLLED_OPS = 256
_SILENT = frozenset({"gpu.terminator", "tile.assume", "memref.dealloc"})
_SHUFFLE_TYPES = frozenset({"float", "double", "int", "unsigned int", "long long", "unsigned long long", "half",
                            "__nv_bfloat16"})
# Shuffled as int (no __shfl_*_sync overload takes them): the low bits come back unchanged.
_NARROW_INTS = frozenset({"signed char", "short", "bool"})
_ID_VARS = {"gpu.thread_id": ("t", "threadIdx"), "gpu.block_id": ("b", "blockIdx"), "gpu.grid_dim": ("grid_", "gridDim")}


class KernelEmitter:
    def __init__(self, kernel: KernelIR, *, fast_math: bool, index_bits: int):
        self.kernel = kernel
        self.types = CTypes(index_bits)
        self.identifiers = Identifiers()
        self.prelude = Prelude()
        self.signs = Signs(kernel.launch)
        self.plan = InlinePlan(kernel.func)
        self.scalar = ScalarOps(self.types, self.signs, self.prelude, fast_math)
        self.function_name = self.identifiers.kernel_name(kernel.name)
        self.c_names = {name: self.identifiers.fresh_global(name)
                        for name in (*kernel.arg_names, *kernel.symbols, *(m.name for m in kernel.tensor_maps))}
        self.memory = Memory(kernel, self.types, self.identifiers, self.c_names)
        self.value_names = ValueNames(self.memory)
        self.exprs: dict[ir.Value, CExpr] = {}
        self.prologue: list[str] = []
        self.out = CodeWriter()
        context = StatementContext(
            types=self.types, prelude=self.prelude, identifiers=self.identifiers, value_names=self.value_names,
            memory=self.memory, scalar=self.scalar, out=self.out, value=self.value, folded=self.folded,
            bind=self.exprs.__setitem__, result_variable=self.result_variable, c_type=self.c_type)
        self.vectors = VectorStatements(context)
        self.tensor_cores = TensorCoreStatements(context)
        self.warpgroup = WarpgroupStatements(context)
        self._ids: dict[tuple[str, str], CExpr] = {}
        self._branch_targets: list[tuple[ir.Block, list[tuple[str, str]]] | None] = []
        self._launch_args = list(kernel.body.arguments)
        for op in irutil.walk(kernel.launch):
            if op.name == "tile.gemm":
                self._gemm(op)
        for arg, name in zip(kernel.args, kernel.arg_names):
            if not isinstance(arg.type, ir.MemRefType):
                self.exprs[arg] = C.atom(self.c_names[name])

    # -- the whole function ------------------------------------------------------------------------
    def function(self) -> str:
        self.block(self.kernel.body)
        if self.memory.shared_bytes:
            self.prologue.insert(0, f"extern __shared__ __align__({self.memory.shared_align}) unsigned char smem[];")
        body = [f"  {line}" for line in self.prologue]
        if body and self.out.lines and self.out.lines[0].strip():
            body.append("")
        return "\n".join([self._header(), *body, *self.out.lines, "}"]) + "\n"

    def _header(self) -> str:
        params = []
        for arg, name in zip(self.kernel.args, self.kernel.arg_names):
            if isinstance(arg.type, ir.MemRefType):
                params.append(self.memory.parameter(arg))
            else:
                params.append(f"{self.c_type(arg.type, self.kernel.func)} {self.c_names[name]}")
        if self.kernel.tensor_maps:
            self.prelude.helper_text("CUtensorMap", TENSOR_MAP_DECLARATION)
            params += [f"const __grid_constant__ CUtensorMap {self.c_names[m.name]}" for m in self.kernel.tensor_maps]
        params += [f"{self.types.index} {self.c_names[s]}" for s in self.kernel.symbols]
        bounds = f"{self.kernel.threads}, {self.kernel.min_blocks}" if self.kernel.min_blocks else f"{self.kernel.threads}"
        head = f'extern "C" __global__ void __launch_bounds__({bounds}) {self.function_name}('
        one_line = head + ", ".join(params) + ") {"
        if len(one_line) <= MAX_LINE:
            return one_line
        return head + "\n" + ",\n".join(f"    {p}" for p in params) + ") {"

    def c_type(self, type_: ir.Type, where: ir.Operation) -> str:
        try:
            return self.types.of(type_)
        except UnsupportedType as exc:
            raise error(where, f"{exc} (in '{where.name}')") from None

    # -- values -----------------------------------------------------------------------------------
    def value(self, value: ir.Value) -> CExpr:
        """The C expression of an SSA value at its (single, or named) use."""
        if value in self.exprs:
            return self.exprs[value]
        op = irutil.defining_op(value)
        if op is None:
            return self._block_argument(value)
        if op.block == self.kernel.func.regions[0].blocks[0]:
            return self._host_value(value, op)
        if not self.plan.is_inlined(op):
            raise error(op, f"internal error: the CUDA emitter used the result of '{op.name}' before defining it")
        expr = self.op_expr(op)
        if self.plan.is_atom(op):
            self.exprs[value] = expr
        return expr

    def folded(self, value: ir.Value) -> bool:
        """Whether `value` is computed in place at its use: it has no C expression yet and `plan` folds it."""
        op = irutil.defining_op(value)
        return value not in self.exprs and op is not None and self.plan.is_inlined(op)

    def _block_argument(self, value: ir.BlockArgument) -> CExpr:
        for position, arg in enumerate(self._launch_args):
            if arg == value:
                return self._launch_argument(position)
        owner = irutil.operation(value.owner.owner)
        raise error(owner, f"internal error: block argument #{value.arg_number} of '{owner.name}' has no C name")

    def _launch_argument(self, position: int) -> CExpr:
        group, axis = divmod(position, 3)
        dim = "xyz"[axis]
        if group == 3:
            return C.int_lit(self.kernel.block[axis])
        return self.id_var(("gpu.block_id", "gpu.thread_id", "gpu.grid_dim")[group], dim)

    def id_var(self, op_name: str, dim: str) -> CExpr:
        """`tx`, `bx`, ... declared once at the top as the index type (threadIdx is unsigned)."""
        if (op_name, dim) not in self._ids:
            prefix, builtin = _ID_VARS[op_name]
            name = self.identifiers.fresh_global(prefix + dim)
            self.prologue.append(f"const {self.types.index} {name} = {builtin}.{dim};")
            self._ids[(op_name, dim)] = C.atom(name)
        return self._ids[(op_name, dim)]

    def _host_value(self, value: ir.Value, op: ir.Operation) -> CExpr:
        """A value computed before the gpu.launch (from parameters and symbols): written in place when it
        is an atom or used once, else computed once at the top of the kernel."""
        if op.name == "arith.constant" and isinstance(value.type, ir.VectorType):
            # canonicalize hoists constant vectors (a guard's zero fill) out of the launch
            self.exprs[value] = self.vectors.constant(op)
            return self.exprs[value]
        kind = self.plan.kind(op)
        if kind not in ("atom", "pure"):
            raise error(op, f"'{op.name}' before the gpu.launch cannot be used inside the kernel "
                            "(only index math over parameters and symbols can)")
        if kind == "atom":
            expr = self.op_expr(op)
            self.exprs[value] = expr
            return expr
        uses = irutil.users(value)
        if len(uses) == 1 and uses[0][0].block == op.block:
            return self.op_expr(op)
        name = self.identifiers.fresh_global(self.value_names.of(value, op))
        self.prologue.append(f"const {self.c_type(value.type, op)} {name} = {self.op_expr(op).text};")
        self.exprs[value] = C.atom(name)
        return self.exprs[value]

    def op_expr(self, op: ir.Operation) -> CExpr:
        """The expression computing `op`'s scalar result."""
        name = op.name
        if name == "arith.constant":
            return self.scalar.constant(op.attributes["value"], op.results[0].type)
        if name == "memref.dim":
            return self._dim(op)
        if name in _ID_VARS:
            return self.id_var(name, _dimension(op))
        if name == "gpu.block_dim":
            return C.int_lit(self.kernel.block["xyz".index(_dimension(op))])
        if name == "gpu.lane_id":
            return C.rem(self.id_var("gpu.thread_id", "x"), C.int_lit(32))
        if name == "memref.load":
            return self.memory.element(op.operands[0], [self.value(v) for v in list(op.operands)[1:]], op)
        if name == "scf.if":
            return self._ternary(op)
        if name == "gpu.shuffle":
            return self._shuffle(op)
        if name.startswith("vector."):
            return self.vectors.scalar_expr(op)
        return self.scalar.translate(op, [self.value(v) for v in op.operands])

    def _dim(self, op: ir.Operation) -> CExpr:
        source, index = op.operands
        position = irutil.const_int(index)
        type_ = source.type
        if position is None or not 0 <= position < type_.rank:
            raise error(op, "memref.dim needs a constant dim index within the rank")
        if type_.shape[position] != ir.ShapedType.get_dynamic_size():
            return C.int_lit(type_.shape[position])
        if source in self.memory.tensors:
            return self.memory.tensors[source].dims[position]
        raise error(op, f"memref.dim of a dynamic dim of {type_} is not supported by the CUDA emitter")

    def _ternary(self, op: ir.Operation) -> CExpr:
        then_value, else_value = (irutil.block_ops(irutil.single_block(op, i))[-1].operands[0] for i in (0, 1))
        return C.cond(self.value(op.operands[0]), self.value(then_value), self.value(else_value))

    def _shuffle(self, op: ir.Operation) -> CExpr:
        value, offset, width = op.operands
        ctype = self.c_type(value.type, op)
        if ctype not in _SHUFFLE_TYPES | _NARROW_INTS:
            raise error(op, f"gpu.shuffle of {value.type} is not supported by the CUDA emitter")
        if list(op.results[1].uses):
            raise error(op, "the 'valid' result of gpu.shuffle is not supported by the CUDA emitter")
        mode = re.search(r"(xor|down|up|idx)", str(op.attributes["mode"])).group(1)
        fn = {"xor": "__shfl_xor_sync", "down": "__shfl_down_sync", "up": "__shfl_up_sync", "idx": "__shfl_sync"}[mode]
        mask = C.atom("0xffffffff" if self.kernel.threads % 32 == 0 else "__activemask()")
        shuffled = self.value(value) if ctype in _SHUFFLE_TYPES else C.cast("int", self.value(value))
        args = [mask, shuffled, self.value(offset)]
        if irutil.const_int(width) != 32:
            args.append(self.value(width))
        return C.call(fn, *args) if ctype in _SHUFFLE_TYPES else C.cast(ctype, C.call(fn, *args))

    # -- statements --------------------------------------------------------------------------------
    def block(self, block: ir.Block, targets: list[tuple[str, str]] | None = None, branch: bool = False) -> None:
        """Emit a block; its `scf.yield` assigns `targets` (C name, C type). In an `if` branch (`branch`),
        a value made only to be yielded is computed straight into its target."""
        self._branch_targets.append((block, targets or []) if branch else None)
        for op in irutil.block_ops(block):
            if op.name == "scf.yield":
                self._assign(targets or [], list(op.operands))
            else:
                self.statement(op)
        self._branch_targets.pop()

    def result_variable(self, value: ir.Value, op: ir.Operation) -> tuple[str, bool]:
        """(C variable for a named value, whether it needs a declaration)."""
        current = self._branch_targets[-1] if self._branch_targets else None
        uses = irutil.users(value)
        if current is not None and len(uses) == 1 and uses[0][0].name == "scf.yield" and uses[0][0].block == current[0]:
            return current[1][uses[0][1]][0], False
        return self.identifiers.fresh(self.value_names.of(value, op)), True

    def statement(self, op: ir.Operation) -> None:
        name = op.name
        if name in _SILENT or self.plan.is_inlined(op):
            return
        handler = None if self.plan.is_ternary(op) else _HANDLERS.get(name)
        if handler is not None:
            self.out.source_line(op)
            handler(self, op)
        elif op.results and any(is_vector(r) for r in op.results):
            self.out.source_line(op)
            self.vectors.statement(op)
        elif self.plan.kind(op) is not None:
            self.out.source_line(op)
            self.named(op)
        else:
            raise _unsupported(op)

    def named(self, op: ir.Operation) -> None:
        value = op.results[0]
        ctype = self.c_type(value.type, op)
        expr = self.op_expr(op)
        name, declare = self.result_variable(value, op)
        self.out.line(f"{ctype} {name} = {expr.text};" if declare else f"{name} = {expr.text};")
        self.exprs[value] = C.atom(name)

    def _alloc(self, op: ir.Operation) -> None:
        try:
            lines = self.memory.declare(op)
        except UnsupportedType as exc:
            raise error(op, str(exc)) from None
        for text in lines:
            self.out.line(text)

    def _store(self, op: ir.Operation) -> None:
        value, memref = op.operands[0], op.operands[1]
        target = self.memory.element(memref, [self.value(v) for v in list(op.operands)[2:]], op)
        self.out.line(C.compound_assignment(target.text, self.value(value)))

    def _barrier(self, op: ir.Operation) -> None:
        self.out.line("__syncthreads();")

    def _atomic_add(self, op: ir.Operation) -> None:
        dst, value = op.operands[0], op.operands[1]
        if isinstance(value.type, ir.MemRefType):
            raise error(op, "tile.atomic_add of a whole buffer is not supported by the CUDA emitter yet "
                            "(lower it to per-element atomics first)")
        target = self.memory.element(dst, [self.value(v) for v in list(op.operands)[2:]], op)
        ctype = self.c_type(value.type, op)
        if ctype in ("float", "double", "int", "unsigned int", "unsigned long long", "half", "__nv_bfloat16"):
            self.out.line(f"atomicAdd(&{target.text}, {self.value(value).text});")
        elif ctype == "long long":
            self.out.line(f"atomicAdd(reinterpret_cast<unsigned long long*>(&{target.text}), "
                          f"(unsigned long long){C.paren(self.value(value), C.UNARY)});")
        else:
            raise error(op, f"tile.atomic_add of {value.type} is not supported by the CUDA emitter")

    def _vector_store(self, op: ir.Operation) -> None:
        self.vectors.store(op)

    def _vector_reduction(self, op: ir.Operation) -> None:
        self.vectors.reduction_statement(op)

    def _ldmatrix(self, op: ir.Operation) -> None:
        self.tensor_cores.ldmatrix(op)

    def _stmatrix(self, op: ir.Operation) -> None:
        self.tensor_cores.stmatrix(op)

    def _mma_sync(self, op: ir.Operation) -> None:
        self.tensor_cores.mma_sync(op)

    def _gemm(self, op: ir.Operation) -> None:
        raise error(op, "tile.gemm must be lowered before CUDA emission (run lower-gemm-simt, which the "
                        "thread pipeline runs first)")

    def _for(self, op: ir.Operation) -> None:
        if irutil.has_attr(op, "unsignedCmp"):
            raise error(op, "scf.for with unsigned comparison is not supported by the CUDA emitter")
        body = irutil.single_block(op)
        lower, upper, step = (self.value(v) for v in list(op.operands)[:3])
        targets = self._declare_results(op, list(body.arguments)[1:], list(op.operands)[3:])
        iv = body.arguments[0]
        self.identifiers.push()
        iv_name = self.identifiers.fresh(self.value_names.induction_variable(op))
        self.exprs[iv] = C.atom(iv_name)
        pragma = _unroll_pragma(op, lower, upper, step)
        if pragma:
            self.out.line(pragma)
        increment = f"++{iv_name}" if step.value == 1 else f"{iv_name} += {step.text}"
        ctype = self.c_type(iv.type, op)
        condition = f"{iv_name} < {C.paren(upper, C.REL + 1)}"
        self.out.line(f"for ({ctype} {iv_name} = {lower.text}; {condition}; {increment}) {{")
        self._nested(body, targets)
        self.out.line("}")
        self.identifiers.pop()

    def _if(self, op: ir.Operation) -> None:
        condition = self.value(op.operands[0])
        targets = self._declare_results(op, [], [])
        self.out.line(f"if ({condition.text}) {{")
        self._nested(irutil.single_block(op, 0), targets, branch=True)
        has_else = len(op.regions[1].blocks) > 0 and (len(irutil.block_ops(irutil.single_block(op, 1))) > 1
                                                       or len(op.results) > 0)
        if has_else:
            self.out.line("} else {")
            self._nested(irutil.single_block(op, 1), targets, branch=True)
        self.out.line("}")

    def _nested(self, block: ir.Block, targets: list[tuple[str, str]], branch: bool = False) -> None:
        with self.out.indented():
            self.identifiers.push()
            self.block(block, targets, branch)
            self.identifiers.pop()

    def _declare_results(self, op: ir.Operation, args: list[ir.Value], inits: list[ir.Value]) -> list[tuple[str, str]]:
        """Variables for a loop's carried values (initialized) or an if's results (declared)."""
        targets = []
        for i, result in enumerate(op.results):
            ctype = self.c_type(result.type, op)
            name = self.identifiers.fresh(self.value_names.of(result, op))
            if inits:
                self.out.line(f"{ctype} {name} = {self.value(inits[i]).text};")
                self.exprs[args[i]] = C.atom(name)
            else:
                self.out.line(f"{ctype} {name};")
            self.exprs[result] = C.atom(name)
            targets.append((name, ctype))
        return targets

    def _assign(self, targets: list[tuple[str, str]], values: list[ir.Value]) -> None:
        """`scf.yield`: assign all targets at once (temporaries when one update reads another's target)."""
        pending = [(name, ctype, self.value(v)) for (name, ctype), v in zip(targets, values)]
        pending = [(n, t, e) for n, t, e in pending if e.text != n]
        clobbers = any(re.search(rf"\b{re.escape(n)}\b", later.text)
                       for i, (n, _, _) in enumerate(pending) for (_, _, later) in pending[i + 1:])
        if clobbers:
            staged = []
            for name, ctype, expr in pending:
                temp = self.identifiers.fresh(f"{name}_next")
                self.out.line(f"{ctype} {temp} = {expr.text};")
                staged.append((name, ctype, C.atom(temp)))
            pending = staged
        for name, _, expr in pending:
            self.out.line(C.compound_assignment(name, expr))


def _dimension(op: ir.Operation) -> str:
    return re.search(r"dim ([xyz])", str(op.attributes["dimension"])).group(1)


def _unroll_pragma(op: ir.Operation, lower: CExpr, upper: CExpr, step: CExpr) -> str | None:
    if "tile.unroll" in op.attributes:
        attr = op.attributes["tile.unroll"]
        if isinstance(attr, ir.BoolAttr):
            return "#pragma unroll" if attr.value else "#pragma unroll 1"
        if isinstance(attr, ir.IntegerAttr):
            return f"#pragma unroll {attr.value}" if attr.value != 0 else "#pragma unroll"
        return "#pragma unroll"
    if lower.value is not None and upper.value is not None and step.value:
        trips = max(0, -(-(upper.value - lower.value) // step.value))
        if trips <= MAX_FULL_UNROLL and (_indexes_registers(op) or trips * _size(op) <= MAX_UNROLLED_OPS):
            return "#pragma unroll"
    return None


def _size(loop: ir.Operation) -> int:
    return sum(1 for _ in irutil.walk(loop))


_ACCESSES = ("memref.load", "memref.store", "vector.load", "vector.store")


def _indexes_registers(loop: ir.Operation) -> bool:
    """Whether the loop variable (through index arithmetic) indexes a "local" register array.

    Those loops must be unrolled, or the array moves to local memory; a user's serial
    loop that only walks global memory (a chunk loop) stays a loop, so its body is
    not copied once per iteration into the register allocator's way."""
    derived = {loop.regions[0].blocks[0].arguments[0]}
    for op in irutil.walk(loop):
        operands = list(op.operands)
        if op.name in _ACCESSES:
            memref_index = 1 if op.name.endswith("store") else 0
            ref_type = operands[memref_index].type
            if memory_space(ref_type) == "local" and any(v in derived for v in operands[memref_index + 1:]):
                return True
        elif op.name.startswith(("arith.", "affine.", "index.")) and any(v in derived for v in operands):
            derived.update(op.results)
    return False


def _unsupported(op: ir.Operation):
    name = op.name
    if name.startswith("tile."):
        return error(op, f"'{name}' must be lowered before CUDA emission (run lower-tile-ops and partition-threads)")
    return error(op, f"'{name}' is not supported by the CUDA emitter")


_HANDLERS = {
    "memref.alloca": KernelEmitter._alloc,
    "memref.alloc": KernelEmitter._alloc,
    "memref.store": KernelEmitter._store,
    "vector.store": KernelEmitter._vector_store,
    "vector.reduction": KernelEmitter._vector_reduction,
    "gpu.barrier": KernelEmitter._barrier,
    "tile.atomic_add": KernelEmitter._atomic_add,
    "tile.ldmatrix": KernelEmitter._ldmatrix,
    "tile.stmatrix": KernelEmitter._stmatrix,
    "tile.mma_sync": KernelEmitter._mma_sync,
    "tile.wgmma_desc": lambda emitter, op: emitter.warpgroup.descriptor(op),
    "tile.wgmma": lambda emitter, op: emitter.warpgroup.wgmma(op),
    "tile.wgmma_fence": lambda emitter, op: emitter.warpgroup.fence(op),
    "tile.wgmma_commit": lambda emitter, op: emitter.warpgroup.fence(op),
    "tile.fence_proxy_async": lambda emitter, op: emitter.warpgroup.fence(op),
    "tile.wgmma_wait": lambda emitter, op: emitter.warpgroup.wait(op),
    "tile.setmaxnreg": lambda emitter, op: emitter.warpgroup.setmaxnreg(op),
    "tile.named_barrier": lambda emitter, op: emitter.warpgroup.named_barrier(op),
    "scf.for": KernelEmitter._for,
    "scf.if": KernelEmitter._if,
    **async_copy.HANDLERS,
    **bulk_copy.HANDLERS,
    **debug.HANDLERS,
}
