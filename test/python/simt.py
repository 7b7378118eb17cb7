"""A small SIMT interpreter of thread-level IR, for the layout/partition tests.

Runs a `func.func` whose kernel is a `gpu.launch`: every block of the grid
runs all its threads in lockstep, each SSA value a numpy vector over the
threads, `scf.if` by masking. It checks what lockstep execution would
otherwise hide:
- every `gpu.shuffle` and `gpu.barrier` is reached by all threads of the
  warp / block (convergence);
- shared memory is race-free: a read of an element another thread wrote
  since the last barrier, or a write of one another thread read since the
  last barrier, raises `Race`;
- global loads outside the tensor read their `tile.pad` (0 without it) and
  out-of-range stores are dropped, the semantics insert-guards gives them.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from tilemlir.dialects.tile import memory_space
from tilemlir.mlir import ir


class Race(AssertionError):
    pass


class Divergence(AssertionError):
    pass


DTYPES = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2,
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "index": np.int64,
}


FLOAT_LIKE = (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)


def dtype_of(type_: ir.Type):
    return DTYPES[str(type_)]


class _Shared:
    def __init__(self, shape, dtype):
        self.data = np.zeros(shape, dtype=dtype)
        self.writer = np.full(shape, -1, dtype=np.int64)
        self.write_epoch = np.full(shape, -1, dtype=np.int64)
        self.reader = np.full(shape, -1, dtype=np.int64)
        self.read_epoch = np.full(shape, -1, dtype=np.int64)


class _Local:
    def __init__(self, threads, shape, dtype):
        self.data = np.zeros((threads, *shape), dtype=dtype)


def run(module: ir.Module, func_name: str, args: list) -> None:
    """Run `func_name` on `args` (numpy arrays for memrefs, Python numbers for scalars); arrays are updated in place."""
    func = next(op for op in module.body.operations
                if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == func_name)
    block = func.regions[0].blocks[0]
    env = {}
    for arg, value in zip(block.arguments, args):
        env[arg] = value if isinstance(value, np.ndarray) else np.array([value])
    _Interpreter(width=1, env=env).block(block, np.ones(1, dtype=bool))


class _Interpreter:
    def __init__(self, width: int, env: dict, epoch: list | None = None):
        self.width = width
        self.env = env
        self.epoch = epoch if epoch is not None else [0]
        self.tid = np.arange(width)

    def value(self, v):
        x = self.env[v]
        if isinstance(x, (np.ndarray,)) and x.ndim == 1 and x.shape[0] == 1 and self.width > 1 and not _is_memref(v):
            return np.broadcast_to(x, (self.width,))
        return x

    def block(self, block, mask):
        for op in block.operations:
            op = op.operation
            result = self.op(op, mask)
            if op.name in ("scf.yield", "gpu.terminator", "func.return"):
                return result
        return None

    def op(self, op, mask):
        name = op.name
        handler = getattr(self, "op_" + name.replace(".", "_"), None)
        if handler is not None:
            return handler(op, mask)
        if name.startswith("arith.") or name.startswith("math."):
            return self.elementwise(op)
        if name in ("tile.assume",):
            return None
        raise NotImplementedError(f"simt: no semantics for {name}")

    def set(self, op, *values):
        for result, value in zip(op.results, values):
            self.env[result] = value

    # ----------------------------------------------------------------- arith

    def op_arith_constant(self, op, mask):
        attr = op.attributes["value"]
        dtype = dtype_of(op.results[0].type)
        value = ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else ir.FloatAttr(attr).value
        self.set(op, np.full(self.width, value, dtype=dtype))

    def elementwise(self, op):
        xs = [self.value(v) for v in op.operands]
        out = dtype_of(op.results[0].type)
        with np.errstate(all="ignore"):
            result = _ELEMENTWISE[op.name](xs, op, out)
        self.set(op, np.asarray(result).astype(out, copy=False))

    # ---------------------------------------------------------------- memref

    def op_memref_dim(self, op, mask):
        array = self.env[op.operands[0]]
        index = int(self.value(op.operands[1])[0])
        self.set(op, np.full(self.width, array.shape[index], dtype=np.int64))

    def op_memref_alloca(self, op, mask):
        type_ = op.results[0].type
        dtype = dtype_of(type_.element_type)
        if memory_space(type_) == "shared":
            self.env[op.results[0]] = _Shared(tuple(type_.shape), dtype)
        else:
            self.env[op.results[0]] = _Local(self.width, tuple(type_.shape), dtype)

    def _indices(self, operands):
        return [self.value(v).astype(np.int64) for v in operands]

    def op_memref_load(self, op, mask):
        memref = self.env[op.operands[0]]
        idx = self._indices(op.operands[1:])
        dtype = dtype_of(op.results[0].type)
        out = np.zeros(self.width, dtype=dtype)
        active = np.nonzero(mask)[0]
        if isinstance(memref, _Local):
            out[active] = memref.data[(active, *[i[active] for i in idx])]
        elif isinstance(memref, _Shared):
            self._check_read(memref, idx, active)
            out[active] = memref.data[tuple(i[active] for i in idx)]
        else:
            pad = 0
            if "tile.pad" in op.attributes:
                attr = op.attributes["tile.pad"]
                pad = ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value
            inside = np.ones(len(active), dtype=bool)
            for k, i in enumerate(idx):
                inside &= (i[active] >= 0) & (i[active] < memref.shape[k])
            out[active] = np.asarray(pad).astype(dtype)
            rows = active[inside]
            out[rows] = memref[tuple(i[rows] for i in idx)]
        self.set(op, out)

    def op_memref_store(self, op, mask):
        value = self.value(op.operands[0])
        memref = self.env[op.operands[1]]
        idx = self._indices(op.operands[2:])
        active = np.nonzero(mask)[0]
        if isinstance(memref, _Local):
            memref.data[(active, *[i[active] for i in idx])] = value[active]
        elif isinstance(memref, _Shared):
            self._check_write(memref, idx, active)
            memref.data[tuple(i[active] for i in idx)] = value[active]
        else:
            inside = np.ones(len(active), dtype=bool)
            for k, i in enumerate(idx):
                inside &= (i[active] >= 0) & (i[active] < memref.shape[k])
            rows = active[inside]
            memref[tuple(i[rows] for i in idx)] = value[rows].astype(memref.dtype)

    def _check_read(self, shared: _Shared, idx, active):
        epoch = self.epoch[0]
        for t in active:
            e = tuple(int(i[t]) for i in idx)
            if shared.write_epoch[e] == epoch and shared.writer[e] != t:
                raise Race(f"thread {t} reads shared element {e} written by thread {shared.writer[e]} "
                           "without a barrier between")
            if shared.read_epoch[e] == epoch and shared.reader[e] not in (t, -1):
                shared.reader[e] = -2
            else:
                shared.reader[e] = t
            shared.read_epoch[e] = epoch

    def _check_write(self, shared: _Shared, idx, active):
        epoch = self.epoch[0]
        for t in active:
            e = tuple(int(i[t]) for i in idx)
            if shared.read_epoch[e] == epoch and shared.reader[e] != t:
                raise Race(f"thread {t} writes shared element {e} read by another thread without a barrier between")
            shared.writer[e] = t
            shared.write_epoch[e] = epoch

    # ------------------------------------------------------------------- scf

    def op_scf_for(self, op, mask):
        lower, upper, step = (self.value(v).astype(np.int64) for v in op.operands[:3])
        carried = [np.array(self.value(v)) for v in op.operands[3:]]
        block = op.regions[0].blocks[0]
        iv = lower.copy()
        while True:
            active = mask & (iv < upper)
            if not active.any():
                break
            self.env[block.arguments[0]] = iv.copy()
            for arg, value in zip(list(block.arguments)[1:], carried):
                self.env[arg] = value
            results = self.block(block, active) or []
            carried = [np.where(active, r, c) for r, c in zip(results, carried)]
            iv = iv + step
        self.set(op, *carried)

    def op_scf_if(self, op, mask):
        cond = self.value(op.operands[0]).astype(bool)
        results = []
        for region, branch in zip(op.regions, (mask & cond, mask & ~cond)):
            if len(region.blocks) and branch.any():
                results.append(self.block(region.blocks[0], branch) or [])
            else:
                results.append(None)
        if op.results:
            then, other = results
            outs = []
            for k, result in enumerate(op.results):
                a = then[k] if then is not None else np.zeros(self.width, dtype=dtype_of(result.type))
                b = other[k] if other is not None else np.zeros(self.width, dtype=dtype_of(result.type))
                outs.append(np.where(cond, a, b))
            self.set(op, *outs)

    def op_scf_yield(self, op, mask):
        return [np.array(self.value(v)) for v in op.operands]

    # ------------------------------------------------------------------- gpu

    def op_gpu_launch(self, op, mask):
        grid = [int(self.value(v)[0]) for v in op.operands[:3]]
        block_size = [int(self.value(v)[0]) for v in op.operands[3:6]]
        threads = math.prod(block_size)
        body = op.regions[0].blocks[0]
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    env = dict(self.env)
                    inner = _Interpreter(threads, env, [0])
                    args = list(body.arguments)
                    for k, value in enumerate([bx, by, bz]):
                        env[args[k]] = np.full(threads, value, dtype=np.int64)
                    env[args[3]] = np.arange(threads) % block_size[0]
                    env[args[4]] = np.zeros(threads, dtype=np.int64)
                    env[args[5]] = np.zeros(threads, dtype=np.int64)
                    for k in range(6):
                        env[args[6 + k]] = np.full(threads, (grid + block_size)[k], dtype=np.int64)
                    inner.block(body, np.ones(threads, dtype=bool))

    def op_gpu_thread_id(self, op, mask):
        self.set(op, self.tid.copy())

    def op_gpu_barrier(self, op, mask):
        if not mask.all():
            raise Divergence("gpu.barrier reached by only some threads")
        self.epoch[0] += 1

    def op_gpu_shuffle(self, op, mask):
        value = self.value(op.operands[0])
        offset = self.value(op.operands[1]).astype(np.int64)
        width = self.value(op.operands[2]).astype(np.int64)
        warps = self.tid // 32
        for w in np.unique(warps[mask]):
            lanes = warps == w
            if not mask[lanes].all():
                raise Divergence(f"gpu.shuffle reached by only some lanes of warp {w}")
        lane = self.tid % width
        source = (self.tid - lane) + (lane ^ offset)
        out = value.copy()
        out[mask] = value[source[mask]]
        self.set(op, out, np.ones(self.width, dtype=bool))

    def op_gpu_terminator(self, op, mask):
        return None

    def op_func_return(self, op, mask):
        return None

    def op_tile_atomic_add(self, op, mask):
        memref = self.env[op.operands[0]]
        value = self.value(op.operands[1])
        idx = self._indices(op.operands[2:])
        active = np.nonzero(mask)[0]
        inside = np.ones(len(active), dtype=bool)
        for k, i in enumerate(idx):
            inside &= (i[active] >= 0) & (i[active] < memref.shape[k])
        rows = active[inside]
        np.add.at(memref, tuple(i[rows] for i in idx), value[rows].astype(memref.dtype))


def _is_memref(v) -> bool:
    return isinstance(v.type, ir.MemRefType)


def _cmp(predicate: int, a, b):
    if predicate in (6, 7, 8, 9):  # unsigned
        a, b = a.astype(np.uint64), b.astype(np.uint64)
    return [a == b, a != b, a < b, a <= b, a > b, a >= b, a < b, a <= b, a > b, a >= b][predicate]


def _cmpf(predicate: int, a, b):
    ordered = ~(np.isnan(a) | np.isnan(b))
    table = {1: a == b, 2: a > b, 3: a >= b, 4: a < b, 5: a <= b, 6: (a != b) & ordered, 7: ordered,
             8: (a == b) | ~ordered, 9: (a > b) | ~ordered, 10: (a >= b) | ~ordered, 11: (a < b) | ~ordered,
             12: (a <= b) | ~ordered, 13: a != b, 14: ~ordered, 0: np.zeros_like(ordered), 15: np.ones_like(ordered)}
    return table[predicate]


def _pred(op):
    return ir.IntegerAttr(op.attributes["predicate"]).value


_ELEMENTWISE = {
    "arith.addi": lambda x, op, t: x[0] + x[1],
    "arith.subi": lambda x, op, t: x[0] - x[1],
    "arith.muli": lambda x, op, t: x[0] * x[1],
    "arith.divui": lambda x, op, t: x[0] // x[1],
    "arith.remui": lambda x, op, t: x[0] % x[1],
    "arith.divsi": lambda x, op, t: np.trunc(x[0] / x[1]),
    "arith.remsi": lambda x, op, t: np.fmod(x[0], x[1]),
    "arith.floordivsi": lambda x, op, t: x[0] // x[1],
    "arith.ceildivui": lambda x, op, t: -(-x[0] // x[1]),
    "arith.ceildivsi": lambda x, op, t: -(-x[0] // x[1]),
    "arith.maxsi": lambda x, op, t: np.maximum(x[0], x[1]),
    "arith.minsi": lambda x, op, t: np.minimum(x[0], x[1]),
    "arith.maxui": lambda x, op, t: np.maximum(x[0], x[1]),
    "arith.minui": lambda x, op, t: np.minimum(x[0], x[1]),
    "arith.andi": lambda x, op, t: x[0] & x[1],
    "arith.ori": lambda x, op, t: x[0] | x[1],
    "arith.xori": lambda x, op, t: x[0] ^ x[1],
    "arith.cmpi": lambda x, op, t: _cmp(_pred(op), x[0], x[1]),
    "arith.cmpf": lambda x, op, t: _cmpf(_pred(op), x[0], x[1]),
    "arith.select": lambda x, op, t: np.where(x[0].astype(bool), x[1], x[2]),
    "arith.index_cast": lambda x, op, t: x[0],
    "arith.addf": lambda x, op, t: x[0] + x[1],
    "arith.subf": lambda x, op, t: x[0] - x[1],
    "arith.mulf": lambda x, op, t: x[0] * x[1],
    "arith.divf": lambda x, op, t: x[0] / x[1],
    "arith.negf": lambda x, op, t: -x[0],
    "arith.maximumf": lambda x, op, t: np.maximum(x[0], x[1]),
    "arith.minimumf": lambda x, op, t: np.minimum(x[0], x[1]),
    "arith.maxnumf": lambda x, op, t: np.fmax(x[0], x[1]),
    "arith.minnumf": lambda x, op, t: np.fmin(x[0], x[1]),
    "arith.extf": lambda x, op, t: x[0].astype(t),
    "arith.truncf": lambda x, op, t: x[0].astype(t),
    "arith.sitofp": lambda x, op, t: x[0].astype(t),
    "arith.uitofp": lambda x, op, t: x[0].astype(t),
    "arith.fptosi": lambda x, op, t: np.trunc(x[0].astype(np.float64)).astype(t),
    "arith.extsi": lambda x, op, t: x[0].astype(t),
    "arith.extui": lambda x, op, t: x[0].astype(t),
    "arith.trunci": lambda x, op, t: x[0].astype(t),
    "math.exp": lambda x, op, t: np.exp(x[0]),
    "math.exp2": lambda x, op, t: np.exp2(x[0]),
    "math.log": lambda x, op, t: np.log(x[0]),
    "math.sqrt": lambda x, op, t: np.sqrt(x[0]),
    "math.rsqrt": lambda x, op, t: (1 / np.sqrt(x[0].astype(np.float64))).astype(x[0].dtype),
    "math.absf": lambda x, op, t: np.abs(x[0]),
    "math.absi": lambda x, op, t: np.abs(x[0]),
    "math.tanh": lambda x, op, t: np.tanh(x[0]),
}
