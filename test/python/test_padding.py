"""padding_value: out-of-range global reads read as the identity of the reduction they feed."""

import math

import pytest

from tilemlir.analysis.padding import FINITE_FLOAT_MAX, padding_attr, padding_value
from tilemlir.context import make_context
from tilemlir.mlir import ir

X_TYPE = "memref<?x1024xbf16>"
FRAG = 'memref<4x1024xf32, "fragment">'
ROW = 'memref<4xf32, "fragment">'


def kernel(body: str, args: str = f"%X: {X_TYPE}") -> str:
    return f"""
func.func @k({args}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  "tile.kernel"(%c1) ({{
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {{name = "x"}} : () -> {FRAG}
    %y = "tile.alloc_fragment"() {{name = "y"}} : () -> {FRAG}
    %m = "tile.alloc_fragment"() {{name = "m"}} : () -> {ROW}
    %s = "tile.alloc_fragment"() {{name = "s"}} : () -> {ROW}
{body}
    "tile.yield"() : () -> ()
  }}) {{threads = 128 : i64}} : (index) -> ()
  return
}}
"""


COPY_X = f'    "tile.copy"(%X, %x, %bx, %c0, %c0, %c0) {{shape = [4, 1024], probe}} : ({X_TYPE}, {FRAG}, index, index, index, index) -> ()'


def reduce(kind: str, src: str = "%x", dst: str = "%m", clear: str = "true") -> str:
    return f'    "tile.reduce"({src}, {dst}) {{kind = "{kind}", dim = 1 : i64, clear = {clear}}} : ({FRAG}, {ROW}) -> ()'


def parallel(body: str) -> str:
    return f"""    "tile.parallel"(%c4, %c1024) ({{
    ^bb0(%i: index, %j: index):
{body}
      "tile.yield"() : () -> ()
    }}) : (index, index) -> ()"""


EXP_IN_PLACE = parallel(
    f"""      %v = memref.load %x[%i, %j] : {FRAG}
      %mi = memref.load %m[%i] : {ROW}
      %d = arith.subf %v, %mi : f32
      %e = math.exp %d : f32
      memref.store %e, %x[%i, %j] : {FRAG}"""
)


def probe_value(text: str):
    with make_context() as ctx, ir.Location.unknown(ctx):
        module = ir.Module.parse(text)
        assert module.operation.verify()
        probes = []

        def find(op):
            if "probe" in op.attributes:
                probes.append(op)
            return ir.WalkResult.ADVANCE

        module.operation.walk(find)
        assert len(probes) == 1
        return padding_value(probes[0]), str(padding_attr(probes[0]))


@pytest.mark.parametrize(
    "kind, expected",
    [("max", -math.inf), ("min", math.inf), ("sum", 0.0), ("abssum", 0.0), ("absmax", 0.0)],
)
def test_copy_reads_the_identity_of_the_reduction_it_feeds(kind, expected):
    value, attr = probe_value(kernel(COPY_X + "\n" + reduce(kind)))
    assert value == expected
    assert attr.endswith(": bf16")


def test_copy_feeding_nothing_reads_zero():
    value, attr = probe_value(kernel(COPY_X))
    assert value == 0.0 and attr == "0.000000e+00 : bf16"


def test_softmax_in_place_pads_with_minus_infinity():
    # max reads the copied values; the in-place exp overwrites x before the sum reads it.
    body = "\n".join([COPY_X, reduce("max"), EXP_IN_PLACE, reduce("sum", dst="%s")])
    assert probe_value(kernel(body))[0] == -math.inf


def test_two_kinds_fed_read_zero():
    body = "\n".join([COPY_X, reduce("max"), reduce("sum", dst="%s")])
    assert probe_value(kernel(body))[0] == 0.0


def test_overwrite_before_the_reduction_stops_feeding():
    fill = f'    %z = arith.constant 1.0 : f32\n    "tile.fill"(%x, %z) : ({FRAG}, f32) -> ()'
    body = "\n".join([COPY_X, fill, reduce("max")])
    assert probe_value(kernel(body))[0] == 0.0


def test_values_followed_through_copies_and_unchanged_moves():
    shared = 'memref<4x1024xbf16, "shared">'
    body = f"""    %sh = "tile.alloc_shared"() {{name = "sh"}} : () -> {shared}
    "tile.copy"(%X, %sh, %bx, %c0, %c0, %c0) {{shape = [4, 1024], probe}} : ({X_TYPE}, {shared}, index, index, index, index) -> ()
    "tile.copy"(%sh, %y, %c0, %c0, %c0, %c0) {{shape = [4, 1024]}} : ({shared}, {FRAG}, index, index, index, index) -> ()
{parallel(f'''      %v = memref.load %y[%i, %j] : {FRAG}
      memref.store %v, %x[%i, %j] : {FRAG}''')}
{reduce("min")}"""
    assert probe_value(kernel(body))[0] == math.inf


def test_element_code_load_feeds_the_buffer_it_is_stored_into():
    load = parallel(
        f"""      %r = arith.addi %bx, %i : index
      %v = memref.load %X[%r, %j] {{probe}} : {X_TYPE}
      %w = arith.extf %v : bf16 to f32
      %sq = arith.mulf %w, %w : f32
      memref.store %sq, %y[%i, %j] : {FRAG}"""
    )
    assert probe_value(kernel(load + "\n" + reduce("max", src="%y")))[0] == -math.inf
    assert probe_value(kernel(load + "\n" + reduce("sum", src="%y")))[0] == 0.0


def test_reduction_before_the_read_inside_a_loop_is_fed_next_iteration():
    body = f"""    %n = arith.constant 8 : index
    scf.for %k = %c0 to %n step %c1 {{
{reduce("max", clear="false")}
{COPY_X}
    }}"""
    assert probe_value(kernel(body))[0] == -math.inf


def test_types_without_infinity_use_their_lowest_finite_value():
    f8 = "memref<?x1024xf8E4M3FN>"
    copy = COPY_X.replace(X_TYPE, f8)
    value, attr = probe_value(kernel(copy + "\n" + reduce("max"), args=f"%X: {f8}"))
    assert value == -448.0 and attr.endswith(": f8E4M3FN")
    i32 = "memref<?x1024xi32>"
    frag_i = 'memref<4x1024xi32, "fragment">'
    row_i = 'memref<4xi32, "fragment">'
    body = f"""    %xi = "tile.alloc_fragment"() {{name = "xi"}} : () -> {frag_i}
    %mi = "tile.alloc_fragment"() {{name = "mi"}} : () -> {row_i}
    "tile.copy"(%X, %xi, %bx, %c0, %c0, %c0) {{shape = [4, 1024], probe}} : ({i32}, {frag_i}, index, index, index, index) -> ()
    "tile.reduce"(%xi, %mi) {{kind = "min", dim = 1 : i64, clear = true}} : ({frag_i}, {row_i}) -> ()"""
    value, attr = probe_value(kernel(body, args=f"%X: {i32}"))
    assert value == 2**31 - 1 and attr == "2147483647 : i32"


@pytest.mark.parametrize("mlir_name, ml_name", [
    ("f8E4M3FN", "float8_e4m3fn"), ("f8E4M3FNUZ", "float8_e4m3fnuz"), ("f8E5M2FNUZ", "float8_e5m2fnuz"),
    ("f8E5M2", "float8_e5m2"), ("bf16", "bfloat16"), ("f16", "float16"), ("f32", "float32")])
def test_the_finite_float_table_is_ml_dtypes_finfo(mlir_name, ml_name):
    """The compiler's table of float types without infinities (it does not import ml_dtypes) against ml_dtypes."""
    import ml_dtypes
    import numpy as np

    dtype = np.dtype(getattr(ml_dtypes, ml_name, None) or ml_name)
    with np.errstate(over="ignore"):
        has_inf = bool(np.isinf(np.array(np.inf).astype(dtype)))
    assert (mlir_name not in FINITE_FLOAT_MAX) == has_inf
    if not has_inf:
        assert FINITE_FLOAT_MAX[mlir_name] == float(ml_dtypes.finfo(dtype).max)


def test_rejects_reads_that_are_not_global():
    body = f'    "tile.copy"(%x, %y, %c0, %c0, %c0, %c0) {{shape = [4, 1024], probe}} : ({FRAG}, {FRAG}, index, index, index, index) -> ()'
    with pytest.raises(ValueError, match="not a global tensor"):
        probe_value(kernel(body))
