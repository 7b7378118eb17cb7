"""A reference interpreter of the thread-level IR subset the guard and vectorize tests use.

Runs every thread of a `gpu.launch` one after another (the test kernels
have no barriers) over numpy arrays. A global access outside its tensor
either raises `OutOfBounds` (`oob="error"`: checking a pass's output) or
reads the load's `tile.pad` and drops the store (`oob="pad"`: the meaning
insert-guards implements). Vector accesses must also be aligned to their
`alignment` attribute, counted from a base aligned to 16 bytes.
"""

from __future__ import annotations

import numpy as np

from tilemlir.mlir import ir


class OutOfBounds(AssertionError):
    pass


class Misaligned(AssertionError):
    pass


_CMP = {
    0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
    4: lambda a, b: a > b, 5: lambda a, b: a >= b,
    6: lambda a, b: (a % 2**64) < (b % 2**64), 7: lambda a, b: (a % 2**64) <= (b % 2**64),
    8: lambda a, b: (a % 2**64) > (b % 2**64), 9: lambda a, b: (a % 2**64) >= (b % 2**64),
}


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINARY = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": _trunc_div,
    "arith.remsi": lambda a, b: a - b * _trunc_div(a, b),
    "arith.floordivsi": lambda a, b: a // b,
    "arith.ceildivsi": lambda a, b: -((-a) // b),
    "arith.divui": lambda a, b: (a % 2**64) // (b % 2**64),
    "arith.remui": lambda a, b: (a % 2**64) % (b % 2**64),
    "arith.ceildivui": lambda a, b: -(-(a % 2**64) // (b % 2**64)),
    "arith.minsi": min,
    "arith.maxsi": max,
    "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << b,
    "arith.shrsi": lambda a, b: a >> b,
    "arith.addf": lambda a, b: a + b,
    "arith.mulf": lambda a, b: a * b,
    "arith.maximumf": max,
}
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.extf", "arith.truncf")


class Interpreter:
    """Runs one function: `run(args)` with numpy arrays for tensors and Python ints for scalars."""

    def __init__(self, func: ir.Operation, oob: str = "error"):
        self.func = func.operation if isinstance(func, ir.OpView) else func
        self.oob = oob
        self.env: dict = {}
        self.global_accesses = 0

    def run(self, args: list) -> None:
        block = self.func.regions[0].blocks[0]
        for arg, value in zip(block.arguments, args):
            self.env[arg] = value
        self._block(block)

    def _block(self, block: ir.Block):
        for op in block.operations:
            op = op.operation
            if op.name in ("scf.yield", "func.return", "gpu.terminator"):
                return [self.env[v] for v in op.operands]
            self._op(op)
        return []

    def _set(self, op, values):
        for result, value in zip(op.results, values):
            self.env[result] = value

    def _op(self, op: ir.Operation) -> None:
        name = op.name
        args = [self.env[v] for v in op.operands]
        if name == "arith.constant":
            self._set(op, [_constant(op.attributes["value"])])
        elif name in _BINARY:
            self._set(op, [_BINARY[name](*args)])
        elif name == "arith.cmpi":
            self._set(op, [_CMP[ir.IntegerAttr(op.attributes["predicate"]).value](*args)])
        elif name == "arith.select":
            self._set(op, [args[1] if args[0] else args[2]])
        elif name in _CASTS:
            self._set(op, [args[0]])
        elif name == "memref.dim":
            self._set(op, [args[0].shape[args[1]]])
        elif name == "memref.alloca":
            type_ = op.results[0].type
            self._set(op, [np.full(list(type_.shape), np.nan)])
        elif name in ("memref.load", "memref.store", "vector.load", "vector.store"):
            self._memory(op, args)
        elif name == "vector.extract":
            position = list(ir.DenseI64ArrayAttr(op.attributes["static_position"]))
            self._set(op, [args[0][position[0]]])
        elif name == "vector.from_elements":
            self._set(op, [np.array(args)])
        elif name == "scf.for":
            self._set(op, self._for(op, args))
        elif name == "scf.if":
            self._set(op, self._if(op, args[0]))
        elif name == "gpu.launch":
            self._launch(op)
        elif name == "tile.assume":
            assert args[0], "a tile.assume fact does not hold for these arguments"
        else:
            raise NotImplementedError(f"interpreter: {name}")

    def _for(self, op, args):
        lb, ub, step, *carried = args
        block = op.regions[0].blocks[0]
        iv = lb
        while iv < ub:
            self.env[block.arguments[0]] = iv
            for arg, value in zip(list(block.arguments)[1:], carried):
                self.env[arg] = value
            carried = self._block(block)
            iv += step
        return carried

    def _if(self, op, cond):
        region = op.regions[0] if cond else op.regions[1]
        if len(region.blocks) == 0:
            return []
        return self._block(region.blocks[0])

    def _launch(self, op):
        view = op.opview
        grid = [self.env[v] for v in (view.gridSizeX, view.gridSizeY, view.gridSizeZ)]
        block_size = [self.env[v] for v in (view.blockSizeX, view.blockSizeY, view.blockSizeZ)]
        body = op.regions[0].blocks[0]
        args = list(body.arguments)
        for bid in np.ndindex(*reversed(grid)):
            for tid in np.ndindex(*reversed(block_size)):
                values = [*reversed(bid), *reversed(tid), *grid, *block_size]
                for arg, value in zip(args, values):
                    self.env[arg] = int(value)
                self._block(body)

    def _memory(self, op, args):
        is_load = op.name.endswith("load")
        memref_index = 0 if is_load else 1
        array, indices = args[memref_index], [int(i) for i in args[memref_index + 1 :]]
        type_ = op.operands[memref_index].type
        lanes = 1
        if op.name.startswith("vector."):
            vector_type = op.results[0].type if is_load else op.operands[0].type
            lanes = vector_type.shape[0]
        global_ = type_.memory_space is None
        in_range = all(0 <= i < n for i, n in zip(indices, array.shape)) and indices[-1] + lanes <= array.shape[-1]
        if global_:
            self.global_accesses += 1
            if lanes > 1:
                self._check_alignment(op, array, indices)
        if not in_range:
            if not global_ or self.oob == "error":
                raise OutOfBounds(f"{op.name} at {indices} outside {list(array.shape)}")
            if is_load:
                self._set(op, [_pad(op, lanes)])
            return
        where = tuple(indices[:-1]) + (slice(indices[-1], indices[-1] + lanes),) if lanes > 1 else tuple(indices)
        if is_load:
            value = array[where]
            self._set(op, [np.array(value) if lanes > 1 else float(value)])
        else:
            array[where] = args[0]

    def _check_alignment(self, op, array, indices):
        align = ir.IntegerAttr(op.attributes["alignment"]).value if "alignment" in op.attributes else 1
        offset = int(np.ravel_multi_index(indices, array.shape)) * array.itemsize_bytes
        if offset % align:
            raise Misaligned(f"{op.name} at byte offset {offset} not aligned to {align}")


class Tensor(np.ndarray):
    """A float64 array that remembers the element size of the tensor it stands for."""

    def __new__(cls, values, element_bytes: int):
        obj = np.asarray(values, dtype=np.float64).view(cls)
        obj.itemsize_bytes = element_bytes
        return obj

    def __array_finalize__(self, obj):
        self.itemsize_bytes = getattr(obj, "itemsize_bytes", 8)


def _constant(attr):
    if isinstance(attr, ir.IntegerAttr):
        return attr.value if attr.type != ir.IntegerType.get_signless(1) else bool(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return attr.value
    if isinstance(attr, ir.DenseElementsAttr):
        type_ = attr.type
        splat = attr.get_splat_value()
        return np.full(list(type_.shape), _constant(splat))
    raise NotImplementedError(f"interpreter: constant {attr}")


def _pad(op, lanes):
    value = _constant(op.attributes["tile.pad"]) if "tile.pad" in op.attributes else 0.0
    return np.full([lanes], value) if lanes > 1 else value
