"""The thread-level form partition-threads gives: upstream ops only, registers indexed by loop variables,
layout conflicts reported at the user's lines, and kernels using shared memory in loops race-free."""

import numpy as np
import pytest

import partition_support as ps
import tilemlir
import tilemlir.language as T
from tilemlir.ir_util import walk_ops
from tilemlir.mlir import ir
from tilemlir.testing import relative_error

ALLOWED_DIALECTS = {"scf", "arith", "math", "memref", "vector", "gpu", "func"}
ALLOWED_TILE_OPS = {"tile.gemm", "tile.atomic_add", "tile.assume"}
EXAMPLES = [
    ("rmsnorm", dict(N=2048, threads=128)),
    ("softmax", dict(N=2048, block_N=1024, threads=128)),
    ("layernorm", dict(N=1024, block_M=2, threads=128)),
    ("quant_fp8", dict(N=1024)),
    ("silu_and_mul", dict(D=512, block_D=256)),
    ("row_reduce", dict(N=2048, block_N=512)),
    ("elementwise_add", dict(block_N=1024)),
]


def example_kernel(name, params, factory=None):
    from support import example_module

    return getattr(example_module(name), factory or name).instantiate(**params)


def thread_ir(kernel) -> ir.Module:
    return ps.thread_level(kernel.frontend().located_text)


def depends_on_thread_id(value: ir.Value, seen=None) -> bool:
    seen = set() if seen is None else seen
    if value in seen:
        return False
    seen.add(value)
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return False
    op = owner.operation
    if op.name == "gpu.thread_id":
        return True
    return any(depends_on_thread_id(v, seen) for v in op.operands)


@pytest.mark.parametrize("name, params", EXAMPLES)
def test_thread_level_ir_is_upstream_ops_only(name, params):
    module = thread_ir(example_kernel(name, params))
    for op in walk_ops(module.operation):
        dialect = op.name.split(".")[0]
        assert dialect in ALLOWED_DIALECTS or op.name in ALLOWED_TILE_OPS, op.name
    launches = [op for op in walk_ops(module.operation) if op.name == "gpu.launch"]
    assert len(launches) == 1


@pytest.mark.parametrize("name, params", EXAMPLES)
def test_registers_are_indexed_by_loop_variables_only(name, params):
    # Once the emitter unrolls the tile.unroll loops every register index is a constant, so register
    # arrays stay in registers: no index may depend on the thread id.
    module = thread_ir(example_kernel(name, params))
    checked = 0
    for op in walk_ops(module.operation):
        if op.name not in ("memref.load", "memref.store"):
            continue
        memref = op.operands[1] if op.name == "memref.store" else op.operands[0]
        if "local" not in str(memref.type):
            continue
        indices = list(op.operands[2:] if op.name == "memref.store" else op.operands[1:])
        assert not any(depends_on_thread_id(i) for i in indices), str(op)
        checked += 1
    assert checked > 0


def test_every_register_loop_has_a_constant_trip_count():
    module = thread_ir(example_kernel("softmax", dict(N=2048, block_N=1024, threads=128)))
    loops = [op for op in walk_ops(module.operation) if op.name == "scf.for" and "tile.unroll" in op.attributes]
    assert loops
    for loop in loops:
        for bound in loop.operands[:3]:
            assert bound.owner.operation.name == "arith.constant", str(loop)


def test_gemm_left_for_partition_threads_is_a_located_error():
    kernel = example_kernel("gemm", dict(N=256, K=256), factory="matmul")
    with pytest.raises(tilemlir.CompileError, match=r"tile.gemm must be lowered before partition-threads \(run "
                                                    r"lower-gemm-simt first\)") as info:
        thread_ir(kernel)
    assert info.value.location.file.endswith("gemm.py")


@tilemlir.jit(out_idx=[2])
def row_and_column_scale(N=64, annotate=False):
    @T.prim_func
    def scale(X: T.Tensor((N, N), T.float32), S: T.Tensor((N,), T.float32), Y: T.Tensor((N, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((N, N), T.float32)
            s = T.alloc_fragment((N,), T.float32)
            if annotate:
                T.annotate_layout({s: T.Layout(lambda i, r: r, lambda i: i, replicate=128)})
            T.copy(X, x)
            T.copy(S, s)
            for i, j in T.Parallel(N, N):
                x[i, j] = x[i, j] * s[i] * s[j]
            T.copy(x, Y)

    return scale


def test_a_layout_conflict_names_both_lines_and_the_way_out():
    with pytest.raises(tilemlir.CompileError) as info:
        thread_ir(row_and_column_scale.instantiate())
    error = info.value.diagnostics[0]
    assert "layout conflict for fragment 's'" in error.message
    assert "T.annotate_layout" in error.message and "shared memory" in error.message
    this_file = __file__
    lines = sorted(note.location.line for note in error.notes)
    assert all(note.location.file == this_file for note in error.notes)
    assert len(lines) == 2
    columns = sorted(note.location.col for note in error.notes)
    assert columns[0] < columns[1]  # s[i] and s[j] on the same line


def test_the_annotation_the_error_suggests_resolves_it():
    x = np.random.default_rng().standard_normal((64, 64)).astype(np.float32)
    s = np.random.default_rng().standard_normal(64).astype(np.float32)
    module = thread_ir(row_and_column_scale.instantiate(annotate=True))
    (y,) = ps.call(module, [x, s], [2])
    assert relative_error(y, x * s[:, None] * s[None, :]) < 1e-6


@tilemlir.jit(out_idx=[1])
def chunked_row_sum(N=1024, block_N=256, threads=64, stages=2):
    M = T.symbolic("M")

    @T.prim_func
    def row_sum(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M,), T.float32)):
        with T.Kernel(M, threads=threads) as bx:
            s = T.alloc_shared((1, block_N), T.float16)
            x = T.alloc_fragment((1, block_N), T.float32)
            total = T.alloc_fragment((1,), T.float32)
            T.clear(total)
            for k in T.Pipelined(N // block_N, num_stages=stages):
                T.copy(X[bx, k * block_N], s)
                T.copy(s, x)
                T.reduce_sum(x, total, dim=1, clear=False)
            T.copy(total, Y[bx])

    return row_sum


def test_shared_memory_reused_across_a_pipelined_loop_is_race_free():
    x = np.random.default_rng().standard_normal((3, 1024)).astype(np.float16)
    module = thread_ir(chunked_row_sum.instantiate())
    text = str(module)
    assert "tile.num_stages = 2" in text
    (y,) = ps.call(module, [x], [1])  # simt raises on a missing barrier
    assert relative_error(y, x.astype(np.float64).sum(1)) < 1e-5
    # The copies into and out of `s` run on the same threads (one layout, the same indices): no barrier.
    # The reduction's exchange buffer (the row spans 2 warps) needs one before its write (the previous
    # iteration's readers) and one before its read.
    loop = next(op for op in walk_ops(module.operation) if op.name == "scf.for" and "tile.num_stages" in op.attributes)
    assert sum(1 for op in walk_ops(loop) if op.name == "gpu.barrier") == 2


@tilemlir.jit(out_idx=[1])
def row_statistic_through_shared():
    @T.prim_func
    def through_shared(X: T.Tensor((4, 64), T.float32), Y: T.Tensor((4, 64), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((4, 64), T.float32)
            m = T.alloc_fragment((4,), T.float32)
            s = T.alloc_shared((4,), T.float32)
            T.copy(X, x)
            T.reduce_max(x, m, dim=1)
            for i in T.Parallel(4):
                s[i] = m[i] * 2.0
            for i in T.Parallel(4):
                m[i] = s[i]
            for i, j in T.Parallel(4, 64):
                x[i, j] = x[i, j] - m[i]
            T.copy(x, Y)

    return through_shared


def test_a_replicated_write_then_read_of_shared_memory_needs_a_barrier():
    # m is replicated over the 16 threads of a row: replica 0 writes s[i], all 16 read it back.
    x = np.random.default_rng().standard_normal((4, 64)).astype(np.float32)
    module = thread_ir(row_statistic_through_shared.instantiate())
    assert str(module).count("gpu.barrier") == 1
    (y,) = ps.call(module, [x], [1])
    assert relative_error(y, x - 2 * x.max(1, keepdims=True)) < 1e-7
