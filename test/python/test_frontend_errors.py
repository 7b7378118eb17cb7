"""Every class of mistake in kernel code is a CompileError at the right file:line:col with a useful message."""

from __future__ import annotations

import textwrap

import pytest

import tilemlir
from frontend_util import frontend_error, load_module, message
from tilemlir.diagnostics import CompileError

# ----------------------------------------------------------------------------
# Unsupported Python syntax


@pytest.mark.parametrize(
    "statement, expected",
    [
        ("@@while True:\n    pass", "`while` loops are not supported"),
        ("@@try:\n    pass\nexcept Exception:\n    pass", "`try` is not supported"),
        ("f = lambda x: x\nX[bx, 0] = @@f(X[bx, 1])", "a lambda runs at compile time"),
        ("v = @@[i for i in range(3)]", "comprehensions are not supported"),
        ("v = @@{i: i for i in range(3)}", "comprehensions are not supported"),
        ("@@def helper():\n    pass", "functions cannot be defined inside a kernel"),
        ("@@import math", "import modules at the top of the file"),
        ("for i in range(4):\n    @@break", "`break` is not supported"),
        ("v = 1\n@@del v", "`del` is not supported"),
        ("v = (@@y := 3)", "the walrus operator"),
    ],
)
def test_unsupported_syntax(tmp_path, statement, expected):
    source = (
        "@tilemlir.jit\n"
        "def k(X: T.Tensor((M, 128), T.float32)):\n"
        "    with T.Kernel(M, threads=128) as bx:\n"
    ) + textwrap.indent(statement, " " * 8) + "\n"
    assert expected in message(frontend_error(tmp_path, source))


def test_with_other_than_kernel(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with @@open("x") as f:
                pass
    """)
    assert message(err) == "`with` is only supported as `with T.Kernel(...) as ...:`"


def test_unknown_name_suggests_a_close_one(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                value = 1.0
                X[bx, 0] = @@valeu + 1
    """)
    assert message(err) == "unknown name 'valeu'; did you mean 'value'?"


def test_unknown_T_attribute(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                @@T.copyy(X, X)
    """)
    assert message(err) == "'T' has no attribute 'copyy'; did you mean 'copy'?"


def test_error_prints_source_line_and_caret(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                X[bx, 0] = @@missing
    """)
    text = str(err).splitlines()
    assert text[0].endswith("error: unknown name 'missing'")
    assert text[1] == "        X[bx, 0] = missing"
    assert text[2] == " " * 19 + "^"


# ----------------------------------------------------------------------------
# Indexing, shapes and dtypes


def test_wrong_number_of_indices_on_store(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                X[@@bx] = 1.0
    """)
    assert message(err) == "wrong number of indices: tensor 'X' (M, 128) has rank 2, got 1 index"


def test_wrong_number_of_indices_on_load(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                s = T.alloc_local((4,), T.float32)
                s[0] = X[@@bx, 0, 1]
    """)
    assert message(err) == "wrong number of indices: tensor 'X' (M, 128) has rank 2, got 3 indices"


def test_constant_index_out_of_range(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                s = T.alloc_local((4,), T.float32)
                s[@@4] = 1.0
    """)
    assert message(err) == "index 4 is out of range for dim 0 of local buffer 's' (4,)"


def test_copy_shape_mismatch(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_fragment((4, 128), T.float32)
                b = T.alloc_fragment((4, 64), T.float32)
                @@T.copy(a, b)
    """)
    assert message(err).startswith(
        "shape mismatch in T.copy: the source tile (4, 128) of 'a' and the destination tile (4, 64) of 'b' "
        "differ in dim 1"
    )


def test_copy_slice_extent_mismatch(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_shared((4, 64), T.float32)
                @@T.copy(X[bx * 4:bx * 4 + 4, 0:32], a)
    """)
    assert "the source tile (4, 32) of 'X' and the destination tile (4, 64) of 'a' differ in dim 1" in message(err)


def test_copy_needs_one_known_side(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32), Y: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_shared((4, 64), T.float32)
                @@T.copy(a[0, 0], Y[bx, 0])
    """)
    assert message(err).startswith("T.copy cannot tell the tile's shape: both sides are start indices")


def test_copy_global_to_global(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                @@T.copy(X, X)
    """)
    assert message(err).startswith("T.copy cannot copy global to global")


def test_reduce_shape_mismatch(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_fragment((4, 128), T.float32)
                m = T.alloc_fragment((8,), T.float32)
                T.reduce_max(a, @@m, dim=1)
    """)
    assert message(err) == (
        "shape mismatch in T.reduce_max: reducing 'a' (4, 128) along dim 1 gives (4,), but dst 'm' is (8,)"
    )


def test_reduce_dtype_narrowing(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_fragment((4, 128), T.float32)
                s = T.alloc_fragment((4,), T.float16)
                T.reduce_sum(a, @@s)
    """)
    assert message(err).startswith("dtype mismatch in T.reduce_sum: 'a' is float32 but dst 's' is float16")


def test_gemm_k_mismatch(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float16)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_shared((64, 32), T.float16)
                b = T.alloc_shared((64, 32), T.float16)
                c = T.alloc_fragment((64, 64), T.float32)
                @@T.gemm(a, b, c)
    """)
    assert "gives K = 32 but B 'b' (64, 32) gives K = 64" in message(err)


def test_gemm_dtype_mismatch(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float16)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_shared((64, 32), T.float16)
                b = T.alloc_shared((32, 64), T.bfloat16)
                c = T.alloc_fragment((64, 64), T.float32)
                @@T.gemm(a, b, c)
    """)
    assert message(err) == "dtype mismatch in T.gemm: A 'a' is float16 but B 'b' is bfloat16"


def test_atomic_add_tile_dtype_mismatch(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float16)):
            with T.Kernel(M, threads=128) as bx:
                acc = T.alloc_fragment((128,), T.float32)
                T.clear(acc)
                T.atomic_add(X[bx, 0], @@acc)
    """)
    assert message(err).startswith("dtype mismatch in T.atomic_add: 'acc' is float32 but 'X' is float16")


def test_float_stored_into_int_buffer_needs_cast(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32), Y: T.Tensor((M, 128), T.int32)):
            with T.Kernel(M, threads=128) as bx:
                @@Y[bx, 0] = X[bx, 0] * 2
    """)
    assert message(err) == "cannot convert float32 to int32 implicitly: write T.cast(value, T.int32)"


def test_integer_true_division_is_rejected(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.int32)):
            with T.Kernel(M, threads=128) as bx:
                X[bx, 0] = @@X[bx, 1] / 2
    """)
    assert message(err).startswith("'/' on integers is ambiguous: write a // b")


def test_runtime_condition_must_be_bool(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                if @@X[bx, 0]:
                    X[bx, 1] = 0.0
    """)
    assert message(err) == "an `if` condition must be a bool, got a float32 value: compare it explicitly, e.g. x != 0"


# ----------------------------------------------------------------------------
# Scopes


def test_buffer_of_another_kernel_scope(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                s = T.alloc_shared((128,), T.float32)
            @@s[0] = 1.0
    """)
    assert message(err) == (
        "'s' is not defined here: it was assigned inside the T.Kernel block at line 8, which has ended "
        "(values and buffers of the T.Kernel block exist only inside it)"
    )


def test_allocation_outside_kernel(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            a = @@T.alloc_fragment((4, 128), T.float32)
            with T.Kernel(M, threads=128) as bx:
                pass
    """)
    assert message(err) == "T.alloc_fragment must be inside the `with T.Kernel(...)` block"


def test_allocation_inside_a_loop(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                for i in range(4):
                    a = @@T.alloc_shared((4, 128), T.float32)
    """)
    assert "allocate buffers at the top level of the T.Kernel block" in message(err)


def test_nested_parallel(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_fragment((4, 128), T.float32)
                for i in T.Parallel(4):
                    for j in @@T.Parallel(128):
                        a[i, j] = 0.0
    """)
    assert message(err).startswith("T.Parallel cannot be nested inside another T.Parallel")
    note = err.diagnostics[0].notes[0]
    assert (note.message, note.location.line, note.location.col) == ("the enclosing T.Parallel loop", 10, 9)


def test_parallel_nested_through_a_serial_loop(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                for i in T.Parallel(4):
                    for k in range(2):
                        for j in @@T.Parallel(128):
                            X[bx, j] = 0.0
    """)
    assert message(err).startswith("T.Parallel cannot be nested inside another T.Parallel")


def test_tile_op_inside_parallel(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_fragment((128,), T.float32)
                for i in T.Parallel(128):
                    @@T.fill(a, 0.0)
    """)
    assert message(err).startswith("T.fill works on whole tiles and cannot be used inside T.Parallel")


def test_reassigning_an_outer_scalar_in_parallel(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                acc = 0.0
                for i in T.Parallel(128):
                    @@acc += X[bx, i]
    """)
    assert message(err).startswith("cannot reassign 'acc' inside T.Parallel")
    assert err.diagnostics[0].notes[0].location.line == 9


def test_loop_local_name_used_after_the_loop(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                for j in range(4):
                    t = X[bx, j]
                X[bx, 0] = @@t
    """)
    assert message(err) == (
        "'t' is not defined here: it was assigned inside the loop at line 9, which has ended "
        "(assign it before the loop to carry it through the iterations)"
    )


def test_name_bound_in_one_branch_only(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                if X[bx, 0] > 0:
                    t = 1.0
                X[bx, 0] = @@t
    """)
    assert "it was assigned inside the `if` branch at line 9" in message(err)


def test_second_kernel_block(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                pass
            @@with T.Kernel(M, threads=128) as by:
                pass
    """)
    assert message(err).startswith("a kernel function holds exactly one T.Kernel block")
    assert err.diagnostics[0].notes[0].location.line == 8


# ----------------------------------------------------------------------------
# Compile-time constants required


def test_symbolic_dim_in_fragment_shape(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_fragment(@@(M, 128), T.float32)
    """)
    assert message(err).startswith(
        "T.alloc_fragment: the symbolic dim 'M' is used where a compile-time constant is required"
    )


def test_threads_not_a_constant(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32), n: T.int32):
            with T.Kernel(M, threads=@@n) as bx:
                pass
    """)
    assert message(err) == (
        "T.Kernel: 'threads' must be a compile-time integer (a Python int), got a run-time int32 value"
    )


def test_threads_symbolic(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=@@M) as bx:
                pass
    """)
    assert "'M' is a symbolic dim known only at run time" in message(err)


def test_threads_out_of_range(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=@@2048) as bx:
                pass
    """)
    assert message(err) == "threads must be in 1..1024, got 2048"


@pytest.mark.parametrize("threads, min_blocks, expected", [
    (128, "@@0", "min_blocks must be in 1..32, got 0"),
    (32, "@@33", "min_blocks must be in 1..32, got 33"),
    (1024, "@@3", "min_blocks=3 blocks of 1024 threads exceed the 2048 threads a multiprocessor holds"),
    (128, "@@2.0", "T.Kernel: 'min_blocks' must be a compile-time integer (a Python int), got 2.0"),
    (128, "@@M", "T.Kernel: 'min_blocks' must be a compile-time integer (a Python int), but 'M' is a symbolic dim "
                 "known only at run time"),
])
def test_min_blocks_out_of_range(tmp_path, threads, min_blocks, expected):
    err = frontend_error(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads={threads}, min_blocks={min_blocks}) as bx:
                pass
    """)
    assert message(err) == expected


@pytest.mark.parametrize("call, expected", [
    ("T.use_swizzle(@@0)", "T.use_swizzle: panel_size must be at least 1, got 0"),
    ("T.use_swizzle(@@-4)", "T.use_swizzle: panel_size must be at least 1, got -4"),
    ("T.use_swizzle(@@2.5)", "T.use_swizzle: 'panel_size' must be a compile-time integer (a Python int), got 2.5"),
    ("T.use_swizzle(@@M)", "T.use_swizzle: 'panel_size' must be a compile-time integer (a Python int), but 'M' is "
                           "a symbolic dim known only at run time"),
    ("T.use_swizzle(8, order=@@'col')", "T.use_swizzle: order must be 'row' or 'column', got 'col'"),
    ("T.use_swizzle(8, @@'diagonal')", "T.use_swizzle: order must be 'row' or 'column', got 'diagonal'"),
    ("T.use_swizzle(8, enable=@@1)", "T.use_swizzle: 'enable' must be a compile-time bool, got 1"),
    ("@@T.use_swizzle()", "T.use_swizzle() is missing its argument 'panel_size'"),
    ("T.use_swizzle(8, @@panel=2)", "T.use_swizzle() got an unexpected keyword argument 'panel' "
                                    "(keywords: panel_size, order, enable)"),
])
def test_use_swizzle_arguments(tmp_path, call, expected):
    err = frontend_error(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, N), T.float32)):
            with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32), threads=128) as (bx, by):
                {call}
                X[by, bx] = 0.0
    """)
    assert message(err) == expected


@pytest.mark.parametrize("body, expected", [
    ("for i in range(4):\n    @@T.use_swizzle(8)",
     "T.use_swizzle must stand directly in the `with T.Kernel(...)` block, outside any loop or branch: it remaps "
     "the block indices of the whole kernel"),
    ("X[by, bx] = 0.0\n@@T.use_swizzle(8)",
     "T.use_swizzle must come before any use of the block indices: it remaps them for the whole kernel"),
    ("T.use_swizzle(8)\n@@T.use_swizzle(4, enable=False)", "a kernel takes one T.use_swizzle"),
])
def test_use_swizzle_placement(tmp_path, body, expected):
    err = frontend_error(tmp_path, (
        "@tilemlir.jit\n"
        "def k(X: T.Tensor((M, N), T.float32)):\n"
        "    with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32), threads=128) as (bx, by):\n"
    ) + textwrap.indent(body, " " * 8) + "\n")
    assert message(err) == expected


def test_use_swizzle_outside_the_kernel(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, N), T.float32)):
            @@T.use_swizzle(8)
            with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32), threads=128) as (bx, by):
                X[by, bx] = 0.0
    """)
    assert message(err) == "T.use_swizzle must be inside the `with T.Kernel(...)` block"


def test_use_swizzle_in_plain_python_says_it_is_kernel_code():
    import tilemlir.language as T
    with pytest.raises(RuntimeError, match="T.use_swizzle is kernel code"):
        T.use_swizzle(8)


def test_reduce_dim_must_be_constant(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32), d: T.int32):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_fragment((4, 128), T.float32)
                m = T.alloc_fragment((4,), T.float32)
                T.reduce_max(a, m, dim=@@d)
    """)
    assert message(err) == "T.reduce_max: 'dim' must be a compile-time integer, got a run-time int32 value"


# ----------------------------------------------------------------------------
# Signature, calls, assume, assert


def test_parameter_without_annotation(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(@@X):
            with T.Kernel(4, threads=128) as bx:
                pass
    """)
    assert message(err).startswith("parameter 'X' needs a type")


def test_an_unknown_dtype_string_as_a_scalar_annotation(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32), n: @@"flaot32"):
            with T.Kernel(M, threads=128) as bx:
                X[bx] = 1.0
    """)
    assert message(err).startswith(
        "parameter 'n' must be annotated with T.Tensor(shape, dtype) or a dtype: unknown dtype 'flaot32' (known: "
        "float16, bfloat16, float32")


@pytest.mark.parametrize("annotation, expected", [
    ('@@T.Tensor((M, 128), "flaot32")', "T.Tensor: unknown dtype 'flaot32' (known: float16, "),
    ("@@T.Tensor((M, 128.0), T.float32)", "T.Tensor dims must be positive ints or T.symbolic dims, got 128.0"),
])
def test_a_malformed_postponed_annotation_is_located_at_it(tmp_path, annotation, expected):
    """Under `from __future__ import annotations` the frontend evaluates the annotation itself: the error is at
    the annotation in the kernel's file (not at the frontend's own frame, where T.Tensor was called from)."""
    from frontend_util import HEADER, marked

    header = "from __future__ import annotations\n" + HEADER
    clean, line, col = marked(f"""
        @tilemlir.jit
        def k(X: {annotation}):
            with T.Kernel(M, threads=128) as bx:
                X[bx, 0] = 1.0
    """, header)
    module = load_module(tmp_path, clean, header)
    with pytest.raises(CompileError) as info:
        tilemlir.lower(module.k)
    err = info.value
    assert message(err).startswith(expected), message(err)
    assert (err.location.file, err.location.line, err.location.col) == (module.__file__, line, col)


def test_call_arity_and_keywords(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                a = T.alloc_fragment((128,), T.float32)
                T.fill(a, 0.0, @@mode=1)
    """)
    assert message(err) == "T.fill() got an unexpected keyword argument 'mode' (keywords: buffer, value)"


def test_python_function_with_runtime_arguments(tmp_path):
    err = frontend_error(tmp_path, """
        import math

        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                X[bx, 0] = @@math.exp(X[bx, 0])
    """)
    assert message(err).startswith("cannot call the Python function 'exp' with run-time values")


def test_assume_on_block_index(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                T.assume(@@bx < 4)
    """)
    assert message(err).startswith("T.assume may only state facts about symbolic dims, scalar parameters")


def test_compile_time_assert(tmp_path):
    err = frontend_error(tmp_path, """
        BLOCK = 48

        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            assert @@128 % BLOCK == 0, "BLOCK must divide 128"
            with T.Kernel(M, threads=128) as bx:
                pass
    """)
    assert message(err) == "assertion failed: 128 % BLOCK == 0: BLOCK must divide 128"


def test_return_value(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                pass
            return @@X
    """)
    assert message(err) == "a kernel returns nothing: write its results into tensor parameters"


def test_constant_overflowing_the_float_type(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float16)):
            with T.Kernel(M, threads=128) as bx:
                X[bx, 0] = @@X[bx, 0] * 1e6
    """)
    assert message(err) == "the constant 1000000.0 overflows float16 (largest finite value 65504)"


# ----------------------------------------------------------------------------
# Errors found by the MLIR verifier, and internal errors, are located too


def test_verifier_error_is_located(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                big = T.alloc_shared((4, 128), T.float32)
                small = T.alloc_shared((2, 128), T.float32)
                @@T.copy(small, big[3, 0])
    """)
    assert "'tile.copy' op copy box extent 2 at offset 3 exceeds dim #0 of dst" in message(err)


def test_internal_error_is_located(tmp_path, monkeypatch):
    from tilemlir.frontend import scalars

    def broken(*args):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(scalars, "unary_function", broken)
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                X[bx, 0] = @@T.exp(X[bx, 1])
    """)
    assert message(err).startswith("internal compiler error: ZeroDivisionError: simulated bug")
    assert err.__cause__ is None and err.__suppress_context__


def test_source_must_be_readable(tmp_path):
    namespace = {}
    exec("import tilemlir.language as T\ndef k(X: T.Tensor((4,), T.float32)):\n    pass\n", namespace)
    with pytest.raises(CompileError) as info:
        tilemlir.lower(namespace["k"])
    assert "cannot read the source of kernel 'k'" in message(info.value)


def test_a_factory_is_not_lowered_directly(tmp_path):
    module = load_module(tmp_path, """
        @tilemlir.jit
        def make(block=128):
            def k(X: T.Tensor((M,), T.float32)):
                with T.Kernel(T.ceildiv(M, block), threads=block) as bx:
                    pass
            return k
    """)
    with pytest.raises(CompileError) as info:
        tilemlir.lower(module.make)
    assert message(info.value).startswith("'make' is a kernel factory: call it with its compile-time arguments")


def test_typed_assignment_does_not_truncate_floats(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.int32)):
            with T.Kernel(M, threads=128) as bx:
                n: T.int32 = @@2.5
    """)
    assert message(err) == "the float 2.5 needs an explicit conversion to int32: write T.cast(2.5, T.int32)"
