"""The frontend's IR: signature, tile ops, loops, scalars and numeric rules, locations (docs/ir.md, docs/language.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import tilemlir
from frontend_util import frontend_error, load_module, message
from tilemlir.context import make_context
from tilemlir.mlir import ir

HEADER = "import tilemlir\nimport tilemlir.language as T\n\nM = T.symbolic('M')\nN = T.symbolic('N')\n"


def build(tmp_path, source: str, name: str = "k"):
    """(parsed module, frontend IR text) of kernel `name` in the snippet."""
    module = load_module(tmp_path, source)
    text = tilemlir.lower(getattr(module, name))
    return ir.Module.parse(text, make_context()), text


def ops(module, name: str) -> list:
    found = []

    def visit(op):
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def op_names(module) -> list[str]:
    names = []
    module.operation.walk(lambda op: names.append(op.name) or ir.WalkResult.ADVANCE)
    return names


def element_body(tmp_path, params: str, body: str):
    """The parsed module of a one-point T.Parallel kernel doing `body` (element code) on `params`."""
    source = f"""
        @tilemlir.jit
        def k({params}):
            with T.Kernel(4, threads=32) as bx:
                for i in T.Parallel(1):
{body}
    """
    return build(tmp_path, source)[0]


# ----------------------------------------------------------------------------
# Signature


def test_signature_attributes_and_symbol_reads(tmp_path):
    module, text = build(tmp_path, """
        @tilemlir.jit
        def k(W: T.Tensor((N,), "bf16"), X: T.Tensor((M, N), T.float16), eps: T.float32, q: T.Tensor((4, M), "uint8")):
            with T.Kernel(M, threads=128) as bx:
                pass
    """)
    func = ops(module, "func.func")[0]
    attrs = func.attributes
    assert "tile.entry" in attrs
    assert [a.value for a in attrs["tile.arg_names"]] == ["W", "X", "eps", "q"]
    assert str(attrs["tile.arg_dims"]) == '[["N"], ["M", "N"], [], [4, "M"]]'
    assert [a.value for a in attrs["tile.symbols"]] == ["N", "M"]
    assert [a.value for a in attrs["tile.arg_dtypes"]] == ["bfloat16", "float16", "float32", "uint8"]
    assert "func.func @k(%arg0: memref<?xbf16>, %arg1: memref<?x?xf16>, %arg2: f32, %arg3: memref<4x?xi8>)" in text
    dims = ops(module, "memref.dim")
    assert len(dims) == 2  # each symbol read once, from the first tensor that has it
    assert re.search(r"%dim = memref.dim %arg0, %c0 : memref<\?xbf16>", text)
    assert re.search(r"memref.dim %arg1, %c0_0 : memref<\?x\?xf16>", text)


def test_kernel_info_describes_the_signature(tmp_path):
    module = load_module(tmp_path, """
        BLOCK = 64

        @tilemlir.jit(out_idx=-1)
        def k(X: T.Tensor((M, N), T.float16), n: T.int32, Y: T.Tensor((M, N), T.float16)):
            T.assume(N % BLOCK == 0)
            with T.Kernel(T.ceildiv(N, BLOCK), M * 2 + n, threads=256) as (bx, by):
                pass
    """)
    info = module.k.frontend().info
    assert info.name == "k" and info.threads == 256
    assert [(p.name, p.kind, p.dtype, p.shape) for p in info.params] == [
        ("X", "tensor", "float16", ("M", "N")),
        ("n", "scalar", "int32", ()),
        ("Y", "tensor", "float16", ("M", "N")),
    ]
    assert [(s.name, s.param, s.dim) for s in info.symbols] == [("M", 0, 0), ("N", 0, 1)]
    assert info.grid == ("(-(-N // 64))", "((M * 2) + n)")
    assert info.assumes == ("((N % 64) == 0)",)
    assert info.out_idx == (2,)
    assert Path(info.source_file).name == f"{module.__name__}.py" and info.source_line == 9
    assert [eval(g, {"M": 37, "N": 640, "n": 5}) for g in info.grid] == [10, 79]


@pytest.mark.parametrize(
    "dtype, mlir",
    [("float16", "f16"), ("bfloat16", "bf16"), ("float32", "f32"), ("float64", "f64"), ("int8", "i8"),
     ("uint8", "i8"), ("int16", "i16"), ("int32", "i32"), ("int64", "i64"), ("bool", "i1"),
     ("float8_e4m3", "f8E4M3FN"), ("float8_e5m2", "f8E5M2")],
)
def test_every_dtype_reaches_the_signature(tmp_path, dtype, mlir):
    _, text = build(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, 16), "{dtype}"), s: T.{dtype}):
            with T.Kernel(M, threads=32) as bx:
                pass
    """)
    assert f"func.func @k(%arg0: memref<?x16x{mlir}>, %arg1: {mlir})" in text


def test_factory_closure_values_and_python_helpers(tmp_path):
    module = load_module(tmp_path, """
        def rows_per_block(threads):
            return threads // 32

        @tilemlir.jit
        def make(n=256, dtype="bfloat16", threads=128):
            rows = rows_per_block(threads)

            def k(X: T.Tensor((M, n), dtype)):
                with T.Kernel(T.ceildiv(M, rows), threads=threads) as bx:
                    x = T.alloc_fragment((rows, n), T.float32)
                    T.copy(X[bx * rows, 0], x)
            return k
    """)
    text = tilemlir.lower(module.make.instantiate(512, threads=256))
    assert "memref<?x512xbf16>" in text
    assert '"tile.alloc_fragment"() {name = "x"} : () -> memref<8x512xf32, "fragment">' in text
    assert "{threads = 256 : i64}" in text


# ----------------------------------------------------------------------------
# Tile operations


def test_copy_forms_and_boxes(tmp_path):
    module, text = build(tmp_path, """
        BK = 32

        @tilemlir.jit
        def k(X: T.Tensor((M, 256), T.float16), V: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                s = T.alloc_shared((4, BK), T.float16)
                row = T.alloc_fragment((256,), T.float32)
                v = T.alloc_fragment((4,), T.float32)
                for k in range(256 // BK):
                    T.copy(X[bx * 4, k * BK], s)
                    T.copy(X[bx * 4:bx * 4 + 4, k * BK:(k + 1) * BK], s)
                T.copy(X[bx, :], row)
                T.copy(row, X[bx, 0])
                T.copy(V[bx * 4], v)
                T.copy(v, V[bx * 4:bx * 4 + 4])
    """)
    boxes = [str(op.attributes["shape"]) for op in ops(module, "tile.copy")]
    assert boxes == ["[4, 32]", "[4, 32]", "[1, 256]", "[1, 256]", "[4]", "[4]"]
    operand_counts = [len(op.operands) for op in ops(module, "tile.copy")]
    assert operand_counts == [6, 6, 5, 5, 4, 4]  # src, dst, rank(src) + rank(dst) offsets


def test_fill_clear_reduce_gemm_atomic(tmp_path):
    module, text = build(tmp_path, """
        @tilemlir.jit
        def k(A: T.Tensor((M, 64), T.float16), Out: T.Tensor((M, 64), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_shared((64, 32), T.float16)
                b = T.alloc_shared((64, 32), T.float16)
                c = T.alloc_fragment((64, 64), T.float32)
                r = T.alloc_fragment((64,), T.float32)
                T.clear(c)
                T.fill(r, -T.infinity(T.float32))
                T.gemm(a, b, c, transpose_B=True)
                T.reduce_absmax(c, r, dim=0, clear=False)
                T.atomic_add(Out[bx, 0], r)
                T.atomic_add(Out[bx, 1], 1)
    """)
    fills = ops(module, "tile.fill")
    assert len(fills) == 2
    gemm = ops(module, "tile.gemm")[0]
    assert str(gemm.attributes["transpose_a"]) == "false" and str(gemm.attributes["transpose_b"]) == "true"
    reduce = ops(module, "tile.reduce")[0]
    assert (str(reduce.attributes["kind"]), str(reduce.attributes["dim"]), str(reduce.attributes["clear"])) == (
        '"absmax"', "0 : i64", "false")
    atomics = ops(module, "tile.atomic_add")
    assert [str(a.operands[1].type) for a in atomics] == ['memref<64xf32, "fragment">', "f32"]
    assert "arith.constant 0xFF800000 : f32" in text  # -inf folded


def test_annotate_layout_records_the_attribute(tmp_path):
    module, text = build(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                x = T.alloc_fragment((4, 128), T.float32)
                T.annotate_layout({x: T.Layout(lambda i, j: i * 32 + j // 4, lambda i, j: j % 4)})
    """)
    alloc = ops(module, "tile.alloc_fragment")[0]
    layout = str(alloc.attributes["tile.annotated_layout"])
    assert layout.startswith("#tile.layout<affine_map<(d0, d1) -> (d0 * 32 + d1 floordiv 4)>")
    assert "affine_map<(d0, d1) -> (d1 mod 4)>" in layout


def test_annotate_layout_checks_the_rank(tmp_path):
    module = load_module(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                x = T.alloc_fragment((4, 128), T.float32)
                T.annotate_layout({x: T.Layout(lambda i: i, lambda i: 0)})
    """)
    with pytest.raises(tilemlir.CompileError, match="bad layout for 'x': Layout thread_map takes 1 arguments"):
        tilemlir.lower(module.k)


# ----------------------------------------------------------------------------
# Loops, branches and scalar variables


def test_loop_kinds(tmp_path):
    module, text = build(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float16)):
            with T.Kernel(M, threads=128) as bx:
                s = T.alloc_shared((64,), T.float16)
                for k in T.Pipelined(T.ceildiv(M, 64), num_stages=3):
                    T.copy(X[k * 64, 0], s)
                for a in range(2, 10, 2):
                    X[bx, a] = 0.0
                for b in T.serial(4):
                    X[bx, b] = 1.0
                for c in T.unroll(4):
                    X[bx, c] = 2.0
                for i, j in T.Parallel(8, 8):
                    X[bx, i * 8 + j] = 3.0
    """)
    pipelined = ops(module, "tile.pipelined")[0]
    assert str(pipelined.attributes["num_stages"]) == "3 : i64"
    loops = ops(module, "scf.for")
    assert len(loops) == 3
    assert ["tile.unroll" in loop.attributes for loop in loops] == [False, False, True]
    assert re.search(r"scf.for %arg\d+ = %c2 to %c10 step %c2", text)
    parallel = ops(module, "tile.parallel")[0]
    assert len(parallel.regions[0].blocks[0].arguments) == 2


def test_serial_unroll_request(tmp_path):
    module, _ = build(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                for a in T.serial(4, unroll=True):
                    X[bx, a] = 1.0
                for b in T.serial(4, unroll=False):
                    X[bx, b] = 2.0
                for c in T.serial(4, unroll=None):
                    X[bx, c] = 3.0
    """)
    marks = [str(loop.attributes["tile.unroll"]) if "tile.unroll" in loop.attributes else None
             for loop in ops(module, "scf.for")]
    assert marks == ["unit", "false", None]


@pytest.mark.parametrize("value, shown", [("1", "1"), ("bx > 0", "a run-time bool value")])
def test_serial_unroll_must_be_a_compile_time_bool(tmp_path, value, shown):
    err = frontend_error(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                for a in T.serial(4, unroll=@@{value}):
                    X[bx, a] = 1.0
    """)
    assert message(err) == f"T.serial: 'unroll' must be a compile-time True or False, got {shown}"


def test_compile_time_unrolling_and_folding(tmp_path):
    module, _ = build(tmp_path, """
        WEIGHTS = (0.5, 0.25, 0.125)

        @tilemlir.jit
        def k(X: T.Tensor((M, 8), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                acc = X[bx, 0]
                for t, w in enumerate(WEIGHTS):
                    if t == 1:
                        acc = acc + 100.0
                    acc = acc * w
                for c in [1, 2]:
                    X[bx, c] = acc
    """)
    assert len(ops(module, "arith.mulf")) == 3
    assert len(ops(module, "arith.addf")) == 1
    assert not ops(module, "scf.if") and not ops(module, "scf.for")
    assert len(ops(module, "memref.store")) == 2


def test_loop_carried_scalars_take_the_promoted_type(tmp_path):
    module, text = build(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float16), Y: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                total = 0
                count = 0
                for j in range(64):
                    total += X[bx, j] * 2.0
                    count = count + 1
                Y[bx] = total / count
    """)
    loop = ops(module, "scf.for")[0]
    assert [str(r.type) for r in loop.results] == ["f16", "i32"]
    assert re.search(r"iter_args\(%arg\d+ = %cst, %arg\d+ = %c0_i32\) -> \(f16, i32\)", text)


def test_loop_carried_scalar_widens_on_reassignment(tmp_path):
    module, _ = build(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float16), Y: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                acc = X[bx, 0]
                for j in range(1, 64):
                    acc = acc + T.cast(X[bx, j], T.float32)
                Y[bx] = acc
    """)
    loop = ops(module, "scf.for")[0]
    assert [str(r.type) for r in loop.results] == ["f32"]
    assert str(loop.operands[3].type) == "f32"  # the f16 initial value is extended before the loop


def test_runtime_if_merges_reassigned_scalars(tmp_path):
    module, _ = build(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float32), Y: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                v = X[bx, 0]
                sign = 1
                if v < 0:
                    v = -v
                    sign = -1
                elif v == 0:
                    sign = 0
                Y[bx] = v * sign
    """)
    branches = ops(module, "scf.if")  # post-order: the `elif` comes first
    assert [[str(r.type) for r in b.results] for b in branches] == [["i32"], ["f32", "i32"]]


def test_if_without_reassignment_has_no_results(tmp_path):
    module, text = build(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float32), n: T.int32):
            with T.Kernel(M, threads=32) as bx:
                if bx < n and not (bx == 3):
                    X[bx, 0] = 1.0
    """)
    branch = ops(module, "scf.if")[0]
    assert len(branch.results) == 0 and len(branch.regions[1].blocks) == 0
    assert ops(module, "arith.andi") and ops(module, "arith.xori")


def test_kernel_grid_and_block_indices(tmp_path):
    module, text = build(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, N), T.float32), n: T.int32):
            with T.Kernel(M, N, n, threads=64) as idx:
                bx, by, bz = idx
                X[bx, by] = T.cast(bz, T.float32)
    """)
    kernel = ops(module, "tile.kernel")[0]
    assert len(kernel.operands) == 3
    assert "arith.index_cast %arg1 : i32 to index" in text


# ----------------------------------------------------------------------------
# Numeric rules


def test_integer_division_and_modulo_floor_like_python(tmp_path):
    module = element_body(tmp_path, "X: T.Tensor((8,), T.int32), U: T.Tensor((8,), T.uint8)", """
                    X[0] = X[1] // X[2]
                    X[3] = X[1] % X[2]
                    U[0] = U[1] // U[2] + U[3] % U[4]
                    X[4] = -7 // 2 + -7 % 2
    """)
    names = op_names(module)
    assert names.count("arith.floordivsi") == 2 and names.count("arith.divui") == 1 and "arith.remui" in names
    assert "arith.divsi" not in names and "arith.remsi" not in names
    constants = [str(op.attributes["value"]) for op in ops(module, "arith.constant")]
    assert "-3 : i32" in constants  # -7 // 2 + -7 % 2 == -4 + 1, folded with Python's semantics


@pytest.mark.parametrize(
    "a, b, expression, expected_ops, result_type",
    [
        ("float16", "float32", "a + b", ["arith.extf", "arith.addf"], "f32"),
        ("float16", "bfloat16", "a * b", ["arith.extf", "arith.extf", "arith.mulf"], "f32"),
        ("int32", "float16", "a - b", ["arith.sitofp", "arith.subf"], "f16"),
        ("uint8", "float32", "a * b", ["arith.uitofp", "arith.mulf"], "f32"),
        ("float8_e4m3", "float8_e4m3", "a + b", ["arith.extf", "arith.extf", "arith.addf"], "f32"),
        ("bfloat16", "bfloat16", "a * b + 1.5", ["arith.mulf", "arith.addf"], "bf16"),
        ("int32", "int32", "a + 2.5", ["arith.sitofp", "arith.addf"], "f32"),
        ("int8", "int32", "a * b", ["arith.extsi", "arith.muli"], "i32"),
        ("uint8", "int16", "a + b", ["arith.extui", "arith.addi"], "i16"),
        ("int16", "int64", "(a + b) * 2", ["arith.extsi", "arith.addi", "arith.muli"], "i64"),
        ("float16", "float16", "a * 3", ["arith.mulf"], "f16"),
    ],
)
def test_promotion(tmp_path, a, b, expression, expected_ops, result_type):
    module = element_body(tmp_path, f"A: T.Tensor((4,), T.{a}), B: T.Tensor((4,), T.{b})", f"""
                    a = A[0]
                    b = B[0]
                    r = {expression}
    """)
    arithmetic = [op for op in ops_in_order(module) if op.name.startswith("arith.") and op.name != "arith.constant"]
    assert [op.name for op in arithmetic] == expected_ops
    assert str(arithmetic[-1].result.type) == result_type


def ops_in_order(module) -> list:
    found = []
    module.operation.walk(lambda op: found.append(op) or ir.WalkResult.ADVANCE)
    return found


def test_comparisons_are_i1_and_not_equal_is_true_on_nan(tmp_path):
    module = element_body(tmp_path, "X: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.bool)", """
                    B[0] = X[0] != X[1]
                    B[1] = X[0] < 1
                    B[2] = 0 <= X[0] < X[1]
    """)
    predicates = [str(op.attributes["predicate"]) for op in ops(module, "arith.cmpf")]
    assert predicates == ["13 : i64", "4 : i64", "5 : i64", "4 : i64"]  # une, olt, ole, olt
    assert all(str(op.result.type) == "i1" for op in ops(module, "arith.cmpf"))
    assert len(ops(module, "arith.andi")) == 1


@pytest.mark.parametrize(
    "call, expected",
    [
        ("T.exp(x)", ["math.exp"]), ("T.exp2(x)", ["math.exp2"]), ("T.log(x)", ["math.log"]),
        ("T.log2(x)", ["math.log2"]), ("T.sqrt(x)", ["math.sqrt"]), ("T.rsqrt(x)", ["math.rsqrt"]),
        ("T.tanh(x)", ["math.tanh"]), ("T.erf(x)", ["math.erf"]), ("T.floor(x)", ["math.floor"]),
        ("T.ceil(x)", ["math.ceil"]), ("T.abs(x)", ["math.absf"]), ("abs(x)", ["math.absf"]),
        ("T.abs(n)", ["math.absi"]), ("T.max(x, y)", ["arith.maximumf"]), ("T.min(x, y, 0.0)", ["arith.minimumf"] * 2),
        ("max(n, 3)", ["arith.maxsi"]), ("T.min(n, 3)", ["arith.minsi"]), ("T.pow(x, y)", ["math.powf"]),
        ("x ** 2.0", ["math.powf"]), ("n ** 3", ["math.ipowi"]), ("T.fma(x, y, x)", ["math.fma"]),
        ("T.sigmoid(x)", ["arith.negf", "math.exp", "arith.addf", "arith.divf"]),
        ("T.if_then_else(x > y, x, y)", ["arith.cmpf", "arith.select"]), ("x if x > y else y", ["arith.cmpf", "arith.select"]),
        ("T.cast(x, T.bfloat16)", ["arith.truncf"]), ("T.cast(x, T.int32)", ["arith.fptosi"]),
        ("T.cast(n, T.float32)", ["arith.sitofp"]), ("T.cast(u, T.float32)", ["arith.uitofp"]),
        ("T.cast(n, T.int8)", ["arith.trunci"]), ("T.cast(u, T.int32)", ["arith.extui"]),
        ("T.float16(x)", ["arith.truncf"]), ("T.cast(x, T.float8_e4m3)", ["arith.truncf"]),
        ("T.cast(i, T.float32)", ["arith.index_cast", "arith.sitofp"]),
    ],
)
def test_element_functions_map_to_upstream_ops(tmp_path, call, expected):
    module = element_body(tmp_path, "X: T.Tensor((4,), T.float32), I: T.Tensor((4,), T.int32), "
                                    "U: T.Tensor((4,), T.uint8)", f"""
                    x = X[0]
                    y = X[1]
                    n = I[0]
                    u = U[0]
                    r = {call}
    """)
    names = [n for n in op_names(module) if n.startswith(("arith.", "math.")) and n != "arith.constant"]
    assert names[-len(expected):] == expected


def test_typed_assignment_and_literal_range(tmp_path):
    module = element_body(tmp_path, "X: T.Tensor((4,), T.int8)", """
                    small: T.int8 = 100
                    X[0] = small + 27
    """)
    constants = [str(op.attributes["value"]) for op in ops(module, "arith.constant")]
    assert "100 : i8" in constants and "27 : i8" in constants
    bad = load_module(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((4,), T.int8)):
            with T.Kernel(4, threads=32) as bx:
                X[0] = X[1] + 300
    """)
    with pytest.raises(tilemlir.CompileError, match=r"the constant 300 does not fit in int8 \(range -128..127\)"):
        tilemlir.lower(bad.k)


# ----------------------------------------------------------------------------
# Locations and printing


def test_every_op_carries_the_python_location(tmp_path):
    module = load_module(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                x = T.alloc_fragment((64,), T.float32)
                T.copy(X[bx, 0], x)
                for j in T.Parallel(64):
                    x[j] = T.exp(x[j]) * 2.0
    """)
    text = tilemlir.lower(module.k, debuginfo=True)
    file = f"{module.__name__}.py"

    def loc_of(pattern: str) -> str:
        line = next(l for l in text.splitlines() if re.search(pattern, l))
        return re.search(r'loc\("[^"]*/([^"/]+)":(\d+:\d+)\)\s*$', line).group(1, 2)

    assert loc_of(r"\}\) \{threads = 32") == (file, "8:5")
    assert loc_of(r'"tile\.alloc_fragment"') == (file, "9:13")
    assert loc_of(r'"tile\.copy"') == (file, "10:9")
    assert loc_of(r"memref\.load %\d+\[") == (file, "12:26")
    assert loc_of(r"math\.exp") == (file, "12:20")
    assert loc_of(r"arith\.mulf") == (file, "12:20")
    assert loc_of(r"memref\.store") == (file, "12:13")
    for line in text.splitlines():  # region ops print their location after the region
        if not line.rstrip().endswith("{") and line.strip() not in ("}", "") and not line.strip().startswith("^bb"):
            assert 'loc("' in line, line


def test_printed_ir_reparses_in_tile_opt(tmp_path):
    module = load_module(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 64), T.float32), eps: T.float32):
            with T.Kernel(M, threads=32) as bx:
                x = T.alloc_fragment((64,), T.float32)
                s = T.alloc_fragment((1,), T.float32)
                T.copy(X[bx, 0], x)
                T.reduce_sum(x, s)
                for j in T.Parallel(64):
                    x[j] = x[j] / (s[0] + eps)
                T.copy(x, X[bx, 0])
    """)
    tile_opt = Path(sys.executable).with_name("tile-opt")
    for debuginfo in (False, True):
        text = tilemlir.lower(module.k, debuginfo=debuginfo)
        args = [str(tile_opt)] + (["--mlir-print-debuginfo"] if debuginfo else [])
        result = subprocess.run(args + ["-"], input=text, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == ir.Module.parse(text, make_context()).operation.get_asm(
            enable_debug_info=debuginfo).strip()


def test_numpy_scalars_are_python_numbers(tmp_path):
    module, _ = build(tmp_path, """
        import numpy as np

        WIDTH = np.int64(64)
        SCALE = np.float32(0.5)

        @tilemlir.jit
        def k(X: T.Tensor((M, WIDTH), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                x = T.alloc_fragment((WIDTH,), T.float32)
                T.copy(X[bx, 0], x)
                for j in T.Parallel(WIDTH):
                    x[j] = x[j] * SCALE
    """)
    assert str(ops(module, "tile.alloc_fragment")[0].result.type) == 'memref<64xf32, "fragment">'
    assert [str(op.attributes["value"]) for op in ops(module, "arith.constant") if "f32" in str(op.result.type)] == [
        "5.000000e-01 : f32"]
