"""T.print and T.device_assert in the frontend (frontend/debug_ops.py): the ops they make, and every misuse
located at the code that wrote it."""

from __future__ import annotations

import re

import pytest

from frontend_util import frontend_error, lower, message

KERNEL = """
    @tilemlir.jit
    def k(X: T.Tensor((M, 16), T.float32), n: T.int32):
        with T.Kernel(M, threads=64) as bx:
            x = T.alloc_fragment((16,), T.float32)
            h = T.alloc_local((2,), T.float16)
            T.copy(X[bx, 0], x)
{body}
"""


def kernel(body: str) -> str:
    return KERNEL.format(body="\n".join(" " * 12 + line for line in body.splitlines()))


def test_a_scalar_prints_from_thread_0_with_its_source_text_and_the_block(tmp_path):
    ir = lower(tmp_path, kernel("T.print(n + 1)"))
    assert '"tile.print"(%' in ir and '{msg = "n + 1", thread = 0 : i64} : (i32, index, index, index) -> ()' in ir


def test_warp_ids_choose_the_printing_thread_and_a_fragment_prints_through_a_shared_copy(tmp_path):
    ir = lower(tmp_path, kernel('T.print(x, "the tile", warp_id=1)'))
    shared = re.search(r'(%\w+) = "tile.alloc_shared"\(\) \{name = "x_printed"\} : \(\) -> '
                       r'memref<16xf32, "shared">', ir)
    fragment = re.search(r'(%\w+) = "tile.alloc_fragment"\(\) \{name = "x"\}', ir)
    assert shared and fragment
    assert f'"tile.copy"({fragment.group(1)}, {shared.group(1)}, ' in ir
    load = re.search(rf"(%\w+) = memref.load {shared.group(1)}\[", ir)
    assert load and f'"tile.print"({load.group(1)}, ' in ir
    assert '{buffer = "x", msg = "the tile", shape = [16], thread = 32 : i64} : (f32, index, index, index, index)' in ir


def test_a_half_precision_buffer_prints_widened_to_float32(tmp_path):
    ir = lower(tmp_path, kernel("h[0] = 1.5\nh[1] = 2.5\nT.print(h)"))
    assert "arith.extf" in ir and '{buffer = "h", msg = "h", shape = [2], thread = 0 : i64} : (f32,' in ir


def test_an_assertion_keeps_its_condition_as_the_default_message(tmp_path):
    ir = lower(tmp_path, kernel("for i in T.Parallel(16):\n    T.device_assert(x[i] < n)"))
    assert '"tile.device_assert"(%' in ir and '{msg = "x[i] < n"} : (i1) -> ()' in ir


def test_a_true_compile_time_assertion_disappears(tmp_path):
    assert "tile.device_assert" not in lower(tmp_path, kernel("T.device_assert(16 > 8)"))


@pytest.mark.parametrize("body, expected", [
    ("for i in T.Parallel(16):\n    @@T.print(x[i])",
     "T.print cannot be used inside T.Parallel (its points run on different threads): print the fragment, or a "
     "value of it, after the loop"),
    ("@@T.print(x, warp_group_id=1)",
     "T.print: warp_group_id=1, warp_id=0 names thread 128 (warp_group_id * 128 + warp_id * 32), but the block has "
     "threads 0..63"),
    ("T.print(@@X)", "T.print prints on-chip buffers; 'X' is a global tensor: copy the tile you want to see into a "
                     "fragment or a shared buffer (T.copy) and print that"),
    ("T.print(x, msg=@@n)", "T.print: 'msg' must be a string, got a run-time int32 value"),
    ("T.print(@@T.float32)", "T.print prints a scalar or an on-chip buffer, got float32"),
    ("T.device_assert(@@n)", "the condition of T.device_assert must be a bool, got a int32 value: compare it "
                             "explicitly, e.g. x != 0"),
    ("T.device_assert(@@16 < 8)", "T.device_assert(16 < 8) is false at compile time"),
    ("T.device_assert(n > 0, @@3)", "T.device_assert: 'msg' must be a string, got 3"),
])
def test_misuse_is_located(tmp_path, body, expected):
    assert message(frontend_error(tmp_path, kernel(body))) == expected


def test_outside_the_kernel_block_is_an_error(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            @@T.print(1)
            with T.Kernel(M, threads=32) as bx:
                pass
    """)
    assert message(err) == "T.print must be inside the `with T.Kernel(...)` block"


def test_pythons_print_of_a_run_time_value_points_to_t_print(tmp_path):
    assert message(frontend_error(tmp_path, kernel("@@print(n)"))) == (
        "cannot call the Python function 'print' with run-time values: only T.* operations run on the device, "
        "other calls are evaluated at compile time; to print from the kernel as it runs write T.print(x, msg=...)")
