"""The kernel's index width: 32-bit C index math where it provably computes what the IR does, else 64-bit.

The IR's `index` is 64 bits wide (the CPU backend, the reference, computes
it so), and 64-bit C index math is always exact. 32-bit math (`int`) is
faster, and exact only when every index value the kernel computes fits in
an `int`, and so does every intermediate the emitter writes on the way (a
guard's partial sums are values; the bias of a ceiling division, `(a + b -
1) / b`, and a loop variable's last increment past its bound are not).

The runtime launches a 32-bit kernel only when every tensor argument has
fewer than 2**31 elements and every symbol is below 2**31
(`tilemlir.runtime.checks`), and passes an index scalar as an int32. Over
exactly those inputs `Intervals` bounds every value: a symbol by 2**31 - 1,
and by (2**31 - 1) / P for a tensor whose other dims are static with
product P (the k-th root when it appears k times); block ids by the grid.
A global access linearizes its indices (`X[row * 4096 + col]`): an access
that happens lies inside its tensor (one outside is a fault, at any
width), so its linear offset and the partial sums on the way stay below
the element count. The ranges are therefore proofs, not estimates, and a
value the analysis cannot bound (a loop-carried index, an index loaded
from memory, an i64 cast to index) counts as one that does not fit.

`choose_index_bits(kernel, requested)`: with `requested` None, 32 when that
is proven (and no static tensor has 2**31 elements or more), else 64; 32
is a CompileError, located at the first value that may not fit and naming
its range, when it is not proven; 64 is always granted.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis import intervals as iv
from tilemlir.analysis.affine_fold import AffineOps, fold_affine
from tilemlir.emit_cuda import irutil
from tilemlir.emit_cuda.kernel import KernelIR
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import ir
from tilemlir.diagnostics.reporting import error
from tilemlir.runtime.checks import INT32_LIMIT as INT32_ELEMENTS  # a 32-bit kernel's tensors have fewer

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_CEILING_DIVISIONS = ("arith.ceildivsi", "arith.ceildivui")


@dataclass(frozen=True)
class Overflow:
    """An index value (or an intermediate of its C form) that may leave int32."""

    op: ir.Operation
    what: str  # what may leave int32: "the index 'arith.addi' computes here", ...
    range: iv.Range

    def message(self) -> str:
        lo = "-inf" if self.range[0] is None else self.range[0]
        hi = "inf" if self.range[1] is None else self.range[1]
        return (f"{self.what} may reach [{lo}, {hi}], outside 32-bit int [{INT32_MIN}, {INT32_MAX}] "
                f"for tensors the runtime accepts (fewer than 2**31 elements each)")


def choose_index_bits(kernel: KernelIR, requested: int | None) -> int:
    """The kernel's index width (see the module doc)."""
    if requested is not None and not (type(requested) is int and requested in (32, 64)):
        raise CompileError(f"index_bits must be 32, 64 or None (chosen by the compiler), got {requested!r}")
    if requested == 64:
        return 64
    too_large = _static_tensor_too_large(kernel)
    if too_large is not None:
        if requested == 32:
            raise error(kernel.func, f"index_bits=32 is not possible for this kernel: tensor {too_large[0]!r} has "
                                     f"{too_large[1]} elements, more than 32-bit index math can address (at most "
                                     f"{INT32_ELEMENTS - 1}); use index_bits=64")
        return 64
    overflow = first_overflow(kernel)
    if overflow is None:
        return 32
    if requested == 32:
        raise error(overflow.op, f"index_bits=32 is not safe for this kernel: {overflow.message()}; "
                                 "use index_bits=64 (or leave index_bits unset to let the compiler choose)")
    return 64


def _static_tensor_too_large(kernel: KernelIR) -> tuple[str, int] | None:
    for name, dims in zip(kernel.arg_names, kernel.arg_dims):
        if dims is not None and all(isinstance(d, int) for d in dims):
            count = _product(dims)
            if count >= INT32_ELEMENTS:
                return name, count
    return None


def first_overflow(kernel: KernelIR) -> Overflow | None:
    """The first index value the emitted kernel writes whose range may leave int32, or None."""
    ranges = iv.Intervals(_runtime_ranges(kernel))
    for op in _emitted_ops(kernel):
        found = _check(op, ranges)
        if found is not None:
            return found
    return None


# -- the sizes the runtime accepts ----------------------------------------------------------------


def symbol_bounds(kernel: KernelIR) -> dict[str, int]:
    """The largest value of each symbol that a 32-bit kernel's runtime checks let through."""
    bounds = {s: INT32_MAX for s in kernel.symbols}
    for dims in kernel.arg_dims:
        if dims is None:
            continue
        names = {d for d in dims if isinstance(d, str)}
        static = _product(d for d in dims if isinstance(d, int))
        if len(names) != 1 or static == 0:
            continue  # another symbol may be 0: the tensor then bounds nothing
        symbol = names.pop()
        bounds[symbol] = min(bounds[symbol], _root(INT32_MAX // static, list(dims).count(symbol)))
    return bounds


def _runtime_ranges(kernel: KernelIR):
    """`Intervals`' `known`: symbolic dims and index scalar parameters as the runtime bounds them."""
    bounds = symbol_bounds(kernel)
    dims_of = dict(zip(kernel.args, kernel.arg_dims))

    def known(value: ir.Value) -> iv.Range | None:
        if value in dims_of and dims_of[value] is None and isinstance(value.type, ir.IndexType):
            return INT32_MIN, INT32_MAX  # an index scalar is passed as an int32
        op = irutil.defining_op(value)
        if op is None or op.name != "memref.dim" or op.operands[0] not in dims_of:
            return None
        dims, axis = dims_of[op.operands[0]], irutil.const_int(op.operands[1])
        if dims is None or axis is None or not 0 <= axis < len(dims) or not isinstance(dims[axis], str):
            return None
        return 0, bounds[dims[axis]]

    return known


# -- what the emitter writes ------------------------------------------------------------------


def _emitted_ops(kernel: KernelIR) -> list[ir.Operation]:
    """The ops inside the launch, and those before it whose values the kernel uses (which the emitter
    writes at the top of the kernel), in program order. Values only the grid uses are computed on the host."""
    inside = list(irutil.walk(kernel.launch))
    before: set = set()
    pending = [v for op in inside for v in op.operands]
    while pending:
        op = irutil.defining_op(pending.pop())
        if op is None or op in before or op.parent is None or irutil.operation(op.parent) != kernel.func:
            continue
        before.add(op)
        pending.extend(op.operands)
    host = [op for op in irutil.block_ops(irutil.single_block(kernel.func)) if op in before]
    return host + inside


def _check(op: ir.Operation, ranges: iv.Intervals) -> Overflow | None:
    for result in op.results:
        if _holds_index(result.type):
            found = _outside(op, f"the index '{op.name}' computes here", _range_of(result, ranges))
            if found is not None:
                return found
    if op.name in _CEILING_DIVISIONS and isinstance(op.results[0].type, ir.IndexType):
        a, b = (ranges.operand_range(op, v) for v in op.operands)
        return _outside(op, f"the dividend a + b - 1 of the ceiling division here ('{op.name}')", _bias(a, b))
    if op.name in ("affine.apply", "affine.min", "affine.max"):
        return _affine_intermediates(op, ranges)
    if op.name == "scf.for" and isinstance(op.operands[0].type, ir.IndexType):
        lower, upper, step = (ranges.operand_range(op, v) for v in list(op.operands)[:3])
        last = iv.add(iv.add(upper, (-1, -1)), step)
        return _outside(op, "the variable of the loop here ('scf.for'), after its last step,", iv.union(lower, last))
    return None


def _holds_index(type_: ir.Type) -> bool:
    element = type_.element_type if isinstance(type_, ir.VectorType) else type_
    return isinstance(element, ir.IndexType)


def _range_of(value: ir.Value, ranges: iv.Intervals) -> iv.Range:
    return iv.UNKNOWN if isinstance(value.type, ir.VectorType) else ranges.range(value)


def _outside(op: ir.Operation, what: str, range_: iv.Range) -> Overflow | None:
    lo, hi = range_
    if lo is None or hi is None or lo < INT32_MIN or hi > INT32_MAX:
        return Overflow(op, what, range_)
    return None


def _affine_intermediates(op: ir.Operation, ranges: iv.Intervals) -> Overflow | None:
    """Every node of the map's C form: the emitter folds the same tree (`fold_affine`), node by node,
    and writes a ceiling division of non-negative operands as `(a + b - 1) / b`."""
    amap = ir.AffineMapAttr(op.attributes["map"]).value
    operands = [ranges.operand_range(op, v) for v in op.operands]
    nodes: list[iv.Range] = []

    def kept(node):
        def evaluate(*args):
            nodes.append(node(*args))
            return nodes[-1]
        return evaluate

    def ceildiv(a: iv.Range, b: iv.Range) -> iv.Range:
        nodes.append(_bias(a, b))
        return iv.AFFINE_RANGES.ceildiv(a, b)

    domain = iv.AFFINE_RANGES
    ops = AffineOps(constant=kept(domain.constant), add=kept(domain.add), mul=kept(domain.mul),
                    floordiv=kept(domain.floordiv), ceildiv=kept(ceildiv), mod=kept(domain.mod))
    for expr in amap.results:
        fold_affine(expr, ops, operands[: amap.n_dims], operands[amap.n_dims:])
    for range_ in nodes:
        found = _outside(op, f"a term of the affine map {amap} here ('{op.name}')", range_)
        if found is not None:
            return found
    return None


def _bias(a: iv.Range, b: iv.Range) -> iv.Range:
    """The range of `a + b - 1`, the dividend of a ceiling division's C form."""
    return iv.add(iv.add(a, b), (-1, -1))


def _product(values) -> int:
    total = 1
    for v in values:
        total *= v
    return total


def _root(value: int, k: int) -> int:
    """The largest x >= 0 with x**k <= value."""
    if k == 1:
        return value
    x = int(round(value ** (1 / k)))
    while x**k > value:
        x -= 1
    while (x + 1) ** k <= value:
        x += 1
    return x
