"""Thread-level index arithmetic as Z3 integer terms, with the facts their variables carry.

`IndexTerms(func, ctx)` translates SSA values of one `tile.entry` function
(at thread level, docs/ir.md) into Z3 terms over mathematical integers, all
built in the Z3 context `ctx` (one per compile, never Z3's shared default
context: compiles in other threads use theirs):

- `arith` on index/iN: add/sub/mul, signed division and remainder with C
  semantics (`divsi`, `remsi`: truncation), floor/ceil division
  (`floordivsi`, `ceildivsi`, `ceildivui`), unsigned `divui`/`remui`,
  min/max (signed and unsigned), `select`, `cmpi`, `andi`/`ori`/`xori` on
  i1, `andi` with a low-bit mask, shifts by constants, casts;
- `affine.apply`/`affine.min`/`affine.max` and their affine maps;
- `memref.dim` of a function argument: the static extent, or the symbol
  named by `tile.arg_dims` (one Z3 variable per symbol name, >= 0: the
  runtime accepts empty tensors);
- `gpu.launch` block/thread ids (and `gpu.thread_id`/`gpu.block_id`):
  in [0, grid) and [0, block);
- `scf.for` induction variables: iv = lb + k * step, k >= 0, iv < ub;
- anything else: a fresh unconstrained variable (sound: it can be any value).

Index arithmetic is assumed not to overflow (64-bit index, tensors smaller
than 2**63 elements). Each variable's facts are kept under its name in
`owned_facts`. They hold wherever the variable is in scope: a loop's
induction variable only inside its loop. The prover takes the facts of the
variables a query mentions, never those of a loop it is not in (they
would claim that loop runs, which may constrain the symbols).
"""

from __future__ import annotations

import operator

import z3

from tilemlir.analysis.affine_fold import AffineOps, fold_affine
from tilemlir.ir_util import constant_int, enclosing, operation
from tilemlir.mlir import ir

_MAX_DEPTH = 400
_CMP = {
    0: lambda a, b: a == b,
    1: lambda a, b: a != b,
    2: lambda a, b: a < b,
    3: lambda a, b: a <= b,
    4: lambda a, b: a > b,
    5: lambda a, b: a >= b,
    6: lambda a, b: _ult(a, b),
    7: lambda a, b: z3.Not(_ult(b, a)),
    8: lambda a, b: _ult(b, a),
    9: lambda a, b: z3.Not(_ult(a, b)),
}


def _ult(a, b):
    """Unsigned a < b for two's-complement values held as signed integers."""
    return z3.If((a >= 0) == (b >= 0), a < b, z3.And(a >= 0, b < 0))


def floor_div(a, b):
    """floor(a / b); Z3's `/` is floor division for a positive divisor."""
    if z3.is_int_value(b) and b.as_long() > 0:
        return a / b
    return z3.If(b > 0, a / b, (-a) / (-b))


def floor_mod(a, b):
    return a - b * floor_div(a, b)


def trunc_div(a, b):
    """a / b rounded toward zero (C, arith.divsi)."""
    q = floor_div(z3.If(a >= 0, a, -a), z3.If(b >= 0, b, -b))
    return z3.If((a >= 0) == (b >= 0), q, -q)


def trunc_rem(a, b):
    return a - b * trunc_div(a, b)


def ceil_div(a, b):
    return -floor_div(-a, b)


def _is_bool(type_: ir.Type) -> bool:
    return isinstance(type_, ir.IntegerType) and type_.width == 1


def _int_width(type_: ir.Type) -> int | None:
    return type_.width if isinstance(type_, ir.IntegerType) else None


def launch_sizes(launch: ir.Operation) -> list[ir.Value]:
    """Grid x, y, z then block x, y, z extents of a `gpu.launch` (region arguments 6..11 alias them)."""
    view = launch.opview
    return [view.gridSizeX, view.gridSizeY, view.gridSizeZ, view.blockSizeX, view.blockSizeY, view.blockSizeZ]


def _string_list(attr) -> list:
    if attr is None:
        return []
    return [_attr_py(a) for a in ir.ArrayAttr(attr)]


def _attr_py(attr):
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    if isinstance(attr, ir.ArrayAttr):
        return [_attr_py(a) for a in attr]
    return str(attr)


class IndexTerms:
    """Z3 terms for the index values of one function; memoized per value."""

    def __init__(self, func: ir.Operation, ctx: z3.Context):
        self.func = operation(func)
        self.ctx = ctx
        attrs = self.func.attributes
        self.arg_names = _string_list(attrs["tile.arg_names"]) if "tile.arg_names" in attrs else []
        self.arg_dims = _string_list(attrs["tile.arg_dims"]) if "tile.arg_dims" in attrs else []
        self.owned_facts: dict[str, list] = {}
        self._terms: dict = {}
        self._fresh = 0
        self._translating: list[ir.Value] = []
        self._origins: dict[str, ir.Value] = {}

    # -- public ---------------------------------------------------------------

    def int_val(self, value: int) -> z3.IntNumRef:
        """The integer constant `value` in this function's context."""
        return z3.IntVal(value, self.ctx)

    def int_term(self, value: ir.Value) -> z3.ArithRef:
        term = self.term(value)
        return z3.If(term, 1, 0) if z3.is_bool(term) else term

    def bool_term(self, value: ir.Value) -> z3.BoolRef:
        term = self.term(value)
        return term if z3.is_bool(term) else term != 0

    def term(self, value: ir.Value):
        """Int term for index/integer values, Bool term for i1 values."""
        if value in self._terms:
            return self._terms[value]
        self._translating.append(value)
        try:
            term = self._opaque(value, "deep") if len(self._translating) > _MAX_DEPTH else self._translate(value)
        finally:
            self._translating.pop()
        self._terms[value] = term
        return term

    def loop_var(self, loop: ir.Operation) -> z3.ArithRef:
        """The induction variable of an `scf.for` (with its range facts)."""
        return self.int_term(loop.regions[0].blocks[0].arguments[0])

    def fresh_int(self, hint: str) -> z3.ArithRef:
        """A new unconstrained integer standing for (part of) the value being translated."""
        return self._fresh_var(hint, z3.Int)

    def origin(self, name: str) -> ir.Value | None:
        """The value whose translation introduced variable `name` (None for thread/block ids,
        symbols and parameters, which are fixed for the whole thread)."""
        return self._origins.get(name)

    def _fresh_var(self, hint: str, make):
        self._fresh += 1
        var = make(f"{hint}!{self._fresh}", self.ctx)
        if self._translating:
            self._origins[var.decl().name()] = self._translating[-1]
        return var

    def dim_term(self, memref: ir.Value, dim: int) -> z3.ArithRef:
        """The extent of dim `dim` of a global memref (constant, symbol, or opaque >= 0)."""
        type_ = memref.type
        size = type_.shape[dim]
        if size != ir.ShapedType.get_dynamic_size():
            return self.int_val(size)
        key = ("dim", memref, dim)
        if key in self._terms:
            return self._terms[key]
        var = z3.Int(self._dim_name(memref, dim), self.ctx)
        self._own(var, [var >= 0])
        self._terms[key] = var
        return var

    def _own(self, var, facts: list) -> None:
        self.owned_facts.setdefault(var.decl().name(), []).extend(facts)

    # -- translation ----------------------------------------------------------

    def _translate(self, value: ir.Value):
        owner = value.owner
        if isinstance(owner, ir.Block):
            return self._block_arg(value, owner)
        op = operation(owner)
        handler = _HANDLERS.get(op.name)
        if handler is not None:
            term = handler(self, op, value)
            if term is not None:
                return term
        return self._opaque(value, op.name.replace(".", "_"))

    def _opaque(self, value: ir.Value, hint: str):
        return self._fresh_var(hint, z3.Bool if _is_bool(value.type) else z3.Int)

    def _block_arg(self, value: ir.Value, block: ir.Block):
        op = block.owner
        op = operation(op)
        index = value.arg_number
        if op.name == "gpu.launch":
            return self._launch_arg(op, index)
        if op.name == "scf.for" and index == 0:
            return self._induction_var(op)
        if op.name == "func.func" and block == op.regions[0].blocks[0]:
            return self._scalar_param(value, index)
        return self._opaque(value, "arg")

    def _launch_arg(self, launch: ir.Operation, index: int):
        sizes = launch_sizes(launch)
        if index >= 6:
            return self.int_term(sizes[index - 6])
        kind, axis = ("bid", index) if index < 3 else ("tid", index - 3)
        bound = sizes[index]
        key = (kind, launch, axis)
        if key not in self._terms:
            var = z3.Int(f"{kind}.{'xyz'[axis]}", self.ctx)
            self._terms[key] = var
            self._own(var, [var >= 0, var < self.int_term(bound)])
        return self._terms[key]

    def _induction_var(self, loop: ir.Operation):
        view = loop.opview
        lb, ub, step = (self.int_term(v) for v in (view.lowerBound, view.upperBound, view.step))
        iv = self._fresh_var("iv", z3.Int)
        self._terms[loop.regions[0].blocks[0].arguments[0]] = iv
        facts = [iv >= lb, iv < ub]
        if not (z3.is_int_value(step) and step.as_long() == 1):
            k = self._fresh_var("k", z3.Int)
            facts += [k >= 0, iv == lb + k * step, step >= 1]
        self._own(iv, facts)
        return iv

    def _scalar_param(self, value: ir.Value, index: int):
        name = self.arg_names[index] if index < len(self.arg_names) else f"arg{index}"
        if _is_bool(value.type):
            return z3.Bool(f"param.{name}", self.ctx)
        if not isinstance(value.type, (ir.IntegerType, ir.IndexType)):
            return self._opaque(value, "param")
        var = z3.Int(f"param.{name}", self.ctx)
        width = _int_width(value.type)
        if width:
            self._own(var, [var >= -(2 ** (width - 1)), var < 2 ** (width - 1)])
        return var

    def _dim_name(self, memref: ir.Value, dim: int) -> str:
        owner = memref.owner
        if isinstance(owner, ir.Block) and owner == self.func.regions[0].blocks[0]:
            index = memref.arg_number
            if index < len(self.arg_dims) and dim < len(self.arg_dims[index]):
                entry = self.arg_dims[index][dim]
                if isinstance(entry, str):
                    return f"sym.{entry}"
            return f"dim.arg{index}.{dim}"
        self._fresh += 1
        return f"dim!{self._fresh}"  # a memref's extent: fixed wherever the memref is


# -- per-op translations (return None to fall back to an opaque variable) ------


def _binary(fn):
    def handler(terms: IndexTerms, op: ir.Operation, value: ir.Value):
        if _is_bool(value.type):
            return None
        a, b = (terms.int_term(v) for v in op.operands)
        return fn(a, b)

    return handler


def _unsigned(fn):
    """An unsigned op: exact when both operands are non-negative, opaque otherwise."""

    def handler(terms: IndexTerms, op: ir.Operation, value: ir.Value):
        a, b = (terms.int_term(v) for v in op.operands)
        return z3.If(z3.And(a >= 0, b > 0), fn(a, b), terms.fresh_int("unsigned"))

    return handler


def _constant(terms, op, value):
    attr = op.attributes["value"]
    if not isinstance(attr, ir.IntegerAttr):
        return None
    if _is_bool(value.type):
        return z3.BoolVal(attr.value != 0, terms.ctx)
    return terms.int_val(attr.value)


def _logic(bool_fn, int_fn):
    def handler(terms, op, value):
        if _is_bool(value.type):
            a, b = (terms.bool_term(v) for v in op.operands)
            return bool_fn(a, b)
        return int_fn(terms, op)

    return handler


def _andi_int(terms, op):
    for mask_value, other in ((op.operands[1], op.operands[0]), (op.operands[0], op.operands[1])):
        mask = constant_int(mask_value)
        if mask is not None and mask >= 0 and (mask + 1) & mask == 0:
            return terms.int_term(other) % (mask + 1)
    return None


def _shift(kind):
    def handler(terms, op, value):
        amount = constant_int(op.operands[1])
        width = _int_width(value.type) or 64
        if amount is None or not 0 <= amount < width:
            return None
        a = terms.int_term(op.operands[0])
        if kind == "shl":
            return a * (2**amount)
        if kind == "shrsi":
            return a / (2**amount)
        return z3.If(a >= 0, a / (2**amount), terms.fresh_int("shrui"))

    return handler


def _cmpi(terms, op, value):
    predicate = ir.IntegerAttr(op.attributes["predicate"]).value
    a, b = (terms.int_term(v) for v in op.operands)
    return _CMP[predicate](a, b)


def _select(terms, op, value):
    cond = terms.bool_term(op.operands[0])
    a, b = (terms.term(v) for v in op.operands[1:])
    if z3.is_bool(a) != z3.is_bool(b):
        return None
    return z3.If(cond, a, b)


def _cast(terms, op, value):
    source = op.operands[0]
    if not isinstance(source.type, (ir.IntegerType, ir.IndexType)):
        return None
    return terms.int_term(source)


def _extui(terms, op, value):
    source = op.operands[0]
    width = _int_width(source.type)
    if width == 1:
        return z3.If(terms.bool_term(source), 1, 0)
    a = terms.int_term(source)
    return z3.If(a >= 0, a, a + 2**width) if width else None


def _extsi(terms, op, value):
    source = op.operands[0]
    if _int_width(source.type) == 1:
        return z3.If(terms.bool_term(source), -1, 0)
    return terms.int_term(source)


def _index_castui(terms, op, value):
    source = op.operands[0]
    width = _int_width(source.type) or _int_width(value.type)
    a = terms.int_term(source)
    return z3.If(a >= 0, a, a + 2**width) if width else a


def _trunci(terms, op, value):
    a = terms.int_term(op.operands[0])
    width = _int_width(value.type)
    fits = z3.And(a >= -(2 ** (width - 1)), a < 2 ** (width - 1))
    return z3.If(fits, a, terms.fresh_int("trunc"))


def _min_max(fn, unsigned=False):
    def handler(terms, op, value):
        a, b = (terms.int_term(v) for v in op.operands)
        less = _ult(a, b) if unsigned else a < b
        return z3.If(less, a, b) if fn == "min" else z3.If(less, b, a)

    return handler


def _memref_dim(terms, op, value):
    memref, index = op.operands
    dim = constant_int(index)
    if dim is None or not 0 <= dim < memref.type.rank:
        return None
    return terms.dim_term(memref, dim)


def _gpu_id(kind):
    def handler(terms, op, value):
        launch = enclosing(op, "gpu.launch")
        if launch is None:
            return None
        axis = "xyz".index(str(op.attributes["dimension"]).split()[-1].rstrip(">"))
        index = {"bid": 0, "tid": 3, "grid": 6, "block": 9}[kind] + axis
        return terms.term(launch.regions[0].blocks[0].arguments[index])

    return handler


def affine_term(expr: ir.AffineExpr, dims: list, symbols: list, ctx: z3.Context):
    """A Z3 term in `ctx` for an affine expression over dim and symbol terms (mod/floordiv: floor semantics)."""
    ops = AffineOps(constant=lambda value: z3.IntVal(value, ctx), add=operator.add, mul=operator.mul,
                    floordiv=floor_div, ceildiv=ceil_div, mod=floor_mod)
    return fold_affine(expr, ops, dims, symbols)


def _affine_results(terms, op):
    amap = ir.AffineMapAttr(op.attributes["map"]).value
    operands = [terms.int_term(v) for v in op.operands]
    dims, symbols = operands[: amap.n_dims], operands[amap.n_dims :]
    return [affine_term(e, dims, symbols, terms.ctx) for e in amap.results]


def _affine_apply(terms, op, value):
    return _affine_results(terms, op)[0]


def _affine_min_max(fn):
    def handler(terms, op, value):
        results = _affine_results(terms, op)
        best = results[0]
        for r in results[1:]:
            best = z3.If(r < best, r, best) if fn == "min" else z3.If(r > best, r, best)
        return best

    return handler


_HANDLERS = {
    "arith.constant": _constant,
    "arith.addi": _binary(lambda a, b: a + b),
    "arith.subi": _binary(lambda a, b: a - b),
    "arith.muli": _binary(lambda a, b: a * b),
    "arith.divsi": _binary(trunc_div),
    "arith.remsi": _binary(trunc_rem),
    "arith.floordivsi": _binary(floor_div),
    "arith.ceildivsi": _binary(ceil_div),
    "arith.divui": _unsigned(lambda a, b: a / b),
    "arith.remui": _unsigned(lambda a, b: a % b),
    "arith.ceildivui": _unsigned(ceil_div),
    "arith.minsi": _min_max("min"),
    "arith.maxsi": _min_max("max"),
    "arith.minui": _min_max("min", unsigned=True),
    "arith.maxui": _min_max("max", unsigned=True),
    "arith.cmpi": _cmpi,
    "arith.select": _select,
    "arith.andi": _logic(z3.And, _andi_int),
    "arith.ori": _logic(z3.Or, lambda terms, op: None),
    "arith.xori": _logic(z3.Xor, lambda terms, op: None),
    "arith.shli": _shift("shl"),
    "arith.shrsi": _shift("shrsi"),
    "arith.shrui": _shift("shrui"),
    "arith.index_cast": _cast,
    "arith.index_castui": _index_castui,
    "arith.extsi": _extsi,
    "arith.extui": _extui,
    "arith.trunci": _trunci,
    "affine.apply": _affine_apply,
    "affine.min": _affine_min_max("min"),
    "affine.max": _affine_min_max("max"),
    "memref.dim": _memref_dim,
    "gpu.thread_id": _gpu_id("tid"),
    "gpu.block_id": _gpu_id("bid"),
    "gpu.grid_dim": _gpu_id("grid"),
    "gpu.block_dim": _gpu_id("block"),
}
