"""The `T` namespace: dtypes, signatures, layouts, and markers that only mean something in kernels."""

from __future__ import annotations

import sys

import pytest

import tilemlir.language as T

ALL_DTYPES = {
    "float16": ("float", 16, "f16"),
    "bfloat16": ("float", 16, "bf16"),
    "float32": ("float", 32, "f32"),
    "float64": ("float", 64, "f64"),
    "int8": ("int", 8, "i8"),
    "uint8": ("uint", 8, "i8"),
    "int16": ("int", 16, "i16"),
    "int32": ("int", 32, "i32"),
    "int64": ("int", 64, "i64"),
    "bool": ("bool", 1, "i1"),
    "float8_e4m3": ("float", 8, "f8E4M3FN"),
    "float8_e5m2": ("float", 8, "f8E5M2"),
}


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_every_dtype_is_an_attribute_and_a_string(name):
    dtype = getattr(T, name)
    assert (dtype.kind, dtype.bits, dtype.mlir) == ALL_DTYPES[name]
    assert T.dtype(name) is dtype
    assert T.dtype(dtype) is dtype
    assert repr(dtype) == f"T.{name}"


@pytest.mark.parametrize(
    "alias, name",
    [("half", "float16"), ("bf16", "bfloat16"), ("float", "float32"), ("fp8_e4m3", "float8_e4m3"),
     ("float8_e4m3fn", "float8_e4m3"), ("T.int32", "int32"), (" Float16 ", "float16")],
)
def test_dtype_aliases(alias, name):
    assert T.dtype(alias) is getattr(T, name)


def test_python_types_as_dtypes():
    assert T.dtype(float) is T.float32
    assert T.dtype(int) is T.int32
    assert T.dtype(type(True)) is T.bool


def test_unknown_dtype_lists_the_known_ones():
    with pytest.raises(ValueError) as info:
        T.dtype("float17")
    assert "unknown dtype 'float17'" in str(info.value) and "bfloat16" in str(info.value)
    with pytest.raises(ValueError, match=r'expected a dtype such as T.float16 or "float16", got 3.5'):
        T.dtype(3.5)


def test_symbolic_dims_compare_by_name():
    assert T.symbolic("M") == T.symbolic("M") and T.dynamic("M") == T.symbolic("M")
    assert T.symbolic("M") != T.symbolic("N")
    with pytest.raises(ValueError, match="a symbolic dim needs a Python identifier as its name, got 'not a name'"):
        T.symbolic("not a name")


def test_tensor_type_normalises_and_validates():
    M = T.symbolic("M")
    tensor = T.Tensor([M, 128], "bf16")
    assert tensor.shape == (M, 128) and tensor.dtype is T.bfloat16
    assert T.Tensor(64, T.int8).shape == (64,)
    for bad in [(0, 4), (4, -1), (4.0,), (True, 2), ()]:
        with pytest.raises(ValueError, match=r"T\.Tensor (dims must be positive|needs a non-empty tuple of dims)"):
            T.Tensor(bad, T.float32)


def test_layout_from_functions_renders_affine_maps():
    layout = T.Layout(lambda i, j: i * 32 + j // 4, lambda i, j: j % 4)
    thread_map, local_map = layout.affine_maps(2)
    assert thread_map == "affine_map<(d0, d1) -> (((d0 * 32) + (d1 floordiv 4)))>"
    assert local_map == "affine_map<(d0, d1) -> ((d1 mod 4))>"


def test_replicated_layout_takes_the_replica_as_a_symbol():
    layout = T.Layout(lambda i, r: i + 64 * r, lambda i: 0, replicate=2)
    assert layout.affine_maps(1) == ("affine_map<(d0)[s0] -> ((d0 + (64 * s0)))>", "affine_map<(d0) -> (0)>")


def test_layout_text_and_mistakes():
    assert T.Layout("(d0) -> (d0)", "affine_map<(d0) -> (0)>").affine_maps(1)[0] == "affine_map<(d0) -> (d0)>"
    with pytest.raises(TypeError, match="affine"):
        T.Layout(lambda i, j: i * j, lambda i, j: 0).affine_maps(2)
    with pytest.raises(ValueError, match="takes 1 arguments, but the fragment has rank 2"):
        T.Layout(lambda i: i, lambda i, j: 0).affine_maps(2)
    with pytest.raises(ValueError, match="Layout replicate must be a positive int, got 0"):
        T.Layout(lambda i: i, lambda i: 0, replicate=0)


def test_kernel_operations_fail_outside_kernels():
    for operation in (T.copy, T.Parallel, T.exp, T.alloc_fragment, T.Kernel):
        with pytest.raises(RuntimeError, match="only has a meaning inside a @tilemlir.jit kernel"):
            operation(1, 2)
    with pytest.raises(RuntimeError, match=r"T\.float32\(\.\.\.\) is kernel code: it only has a meaning inside a @tilemlir.jit kernel"):
        T.float32(1.0)


def test_ceildiv_computes_on_python_ints():
    assert [T.ceildiv(n, 4) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def test_every_operation_has_its_marker_name():
    for name in ("copy", "fill", "clear", "reduce_sum", "reduce_absmax", "gemm", "atomic_add", "max", "sigmoid",
                 "rsqrt", "fma", "cast", "if_then_else", "assume", "annotate_layout", "Pipelined", "unroll"):
        assert getattr(T, name).__tilemlir_intrinsic__ == name


def test_importing_the_language_and_decorating_does_not_load_mlir():
    code = (
        "import sys, tilemlir, tilemlir.language as T\n"
        "@tilemlir.jit\n"
        "def k(x: T.float32):\n"
        "    pass\n"
        "print(any(m.startswith('torch_mlir') for m in sys.modules))"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


DECLARATIONS_REFUSED = [
    ('@@T.Tensor((M, 128), "flaot32")', "T.Tensor: unknown dtype 'flaot32' (known: float16, bfloat16, float32, "
     "float64, float8_e4m3, float8_e5m2, int8, uint8, int16, uint16, int32, uint32, int64, uint64, bool)"),
    ("@@T.Tensor((M, 128.0), T.float32)", "T.Tensor dims must be positive ints or T.symbolic dims, got 128.0"),
    ("@@T.Tensor((M, 0), T.float32)", "T.Tensor dims must be positive, got 0"),
    ("@@T.Tensor((), T.float32)", "T.Tensor needs a non-empty tuple of dims, got ()"),
    ("T.Tensor((@@T.symbolic('2M'), 4), T.float32)", "a symbolic dim needs a Python identifier as its name, got '2M'"),
]


@pytest.mark.parametrize("annotation, expected", DECLARATIONS_REFUSED, ids=[a for a, _ in DECLARATIONS_REFUSED])
def test_a_malformed_tensor_annotation_is_located_where_python_evaluates_it(tmp_path, annotation, expected):
    """Python evaluates a kernel's annotations when it runs the `def`, before the frontend: the error is a
    CompileError (and a ValueError, as before) at the annotation's file:line:col, not a bare traceback."""
    from frontend_util import load_module, marked
    from tilemlir.diagnostics import CompileError

    source = f"""
        @tilemlir.jit
        def k(X: {annotation}):
            with T.Kernel(4, threads=32) as bx:
                pass
    """
    clean, line, col = marked(source)
    with pytest.raises(CompileError) as info:
        load_module(tmp_path, clean)
    err = info.value
    assert isinstance(err, ValueError) and err.diagnostics[0].message == expected
    assert (err.location.line, err.location.col) == (line, col) and err.location.file.startswith(str(tmp_path))


def test_the_namespace_holds_only_the_language():
    """What a kernel can write as T.x is __all__ (and the two errors the language raises): no module
    of its own implementation (typing.Any, dataclass, sys, ...) leaks into it."""
    public = {name for name in vars(T) if not name.startswith("_")}
    assert public == set(T.__all__) | {"DeclarationError", "LanguageAttributeError"}
    for leaked in ("Any", "Callable", "dataclass", "sys", "enum", "inspect", "numbers", "annotations",
                   "CompileError", "SourceLocation"):
        with pytest.raises(AttributeError):
            getattr(T, leaked)


@pytest.mark.parametrize("typo, hint", [("clmap", "clamp"), ("Clamp", "clamp"), ("And_", "And"),
                                        ("Parallell", "Parallel"), ("alloc_fragmnt", "alloc_fragment")])
def test_a_misspelt_name_suggests_a_name_of_the_language(typo, hint):
    with pytest.raises(T.LanguageAttributeError) as info:
        getattr(T, typo)
    assert info.value.text == f"'T' has no attribute '{typo}'; did you mean '{hint}'?"


def test_a_name_close_only_to_an_implementation_detail_gets_no_hint():
    with pytest.raises(T.LanguageAttributeError) as info:
        getattr(T, "dataclas")
    assert info.value.text == "'T' has no attribute 'dataclas'"
