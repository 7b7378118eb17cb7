"""tile-opt's exit codes and messages: good input, every kind of bad input, and its options."""

import io
import os
import subprocess
import sys

import pytest

from tilemlir.tools.tile_opt import main

GOOD = b"""func.func @f() -> i32 {
  %0 = arith.constant 2 : i32
  %1 = arith.constant 3 : i32
  %2 = arith.addi %0, %1 : i32
  return %2 : i32
}
"""


def tile_opt(args, stdin=b"", capsys=None):
    """Run tile-opt in-process; (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        status = main(list(args), stdin=io.BytesIO(stdin), stdout=out, stderr=err)
    except SystemExit as exit_:  # argparse errors
        status = exit_.code
    extra = capsys.readouterr().err if capsys is not None else ""
    return status, out.getvalue(), err.getvalue() + extra


@pytest.fixture
def write(tmp_path):
    def write(text, name="input.mlir"):
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return str(path)

    return write


def assert_no_traceback(err):
    assert "Traceback" not in err and "File \"" not in err


def test_good_input_prints_the_module(write):
    status, out, err = tile_opt([write(GOOD)])
    assert (status, err) == (0, "")
    assert "%c2_i32 = arith.constant 2 : i32" in out and "arith.addi %c2_i32, %c3_i32 : i32" in out


def test_pipeline_runs_upstream_passes(write):
    status, out, err = tile_opt([write(GOOD), "-p", "canonicalize"])
    assert status == 0, err
    assert "arith.constant 5 : i32" in out and "arith.addi" not in out


def test_stdin_is_the_default_input():
    status, out, _ = tile_opt([], stdin=GOOD)
    assert status == 0 and "func.func @f() -> i32" in out
    status, out, _ = tile_opt(["-"], stdin=GOOD)
    assert status == 0 and "func.func @f() -> i32" in out


def test_malformed_ir_is_a_located_error_with_the_source_line(write):
    path = write("func.func @f() {\n  %0 = arith.addi\n}\n")
    status, out, err = tile_opt([path])
    assert status == 1 and out == ""
    assert err.startswith(f"{path}:2:18: error: expected SSA operand\n  %0 = arith.addi\n                 ^")
    assert_no_traceback(err)


def test_malformed_stdin_names_stdin_and_quotes_the_line():
    status, _, err = tile_opt([], stdin=b"func.func @f() {\n  %0 = arith.addi %x, %x : i32\n}\n")
    assert status == 1
    assert err.splitlines() == ["<stdin>:2:19: error: use of undeclared SSA value name",
                                "  %0 = arith.addi %x, %x : i32",
                                "                  ^"]


def test_verifier_failure_is_located_at_the_op(write):
    path = write('func.func @f(%s: memref<4xf32, "shared">, %v: f16) {\n'
                 '  "tile.fill"(%s, %v) : (memref<4xf32, "shared">, f16) -> ()\n  return\n}\n')
    status, _, err = tile_opt([path])
    assert status == 1
    assert err.splitlines()[0] == f"{path}:2:3: error: 'tile.fill' op value type f16 must equal the dst element type f32"


def test_unknown_pass(write):
    status, out, err = tile_opt([write(GOOD), "-p", "canonicalize,no-such-pass"])
    assert status == 1 and out == ""
    assert err.splitlines()[0] == ("<pass-pipeline>:1:14: error: unknown pass 'no-such-pass' "
                                   "(not a tilemlir pass nor a registered upstream MLIR pass)")
    assert "note: in pass pipeline 'canonicalize,no-such-pass'" in err


def test_misspelled_pass_of_ours_gets_a_suggestion(write):
    status, _, err = tile_opt([write(GOOD), "-p", "test-diagnostic"])
    assert status == 1
    assert "unknown pass 'test-diagnostic' (did you mean 'test-diagnostics'?)" in err


@pytest.mark.parametrize("pipeline, message", [
    ("test-diagnostics{crash=maybe}", "test-diagnostics{crash} expects true or false, got 'maybe'"),
    ("builtin.module(test-diagnostics{colour=red})",
     "<pass-pipeline>:1:16: error: pass 'test-diagnostics' has no option 'colour' (options: fail-fast, crash, break-ir)"),
    ("canonicalize{no-such-option=1}", "invalid pass pipeline element 'canonicalize{no-such-option=1}'"),
    ("canonicalize{max-iterations=lots}", "'lots' value invalid"),
    ("func.func(test-diagnostics)", "pass 'test-diagnostics' runs on the whole module; it cannot be nested"),
    ("cse,,canonicalize", "<pass-pipeline>:1:5: error: expected a pass name, found ','"),
    ("func.func(cse", "missing ')' to close '('"),
])
def test_bad_pipelines_are_errors_before_anything_runs(write, pipeline, message):
    status, out, err = tile_opt([write(GOOD), "--pass-pipeline", pipeline])
    assert status == 1 and out == ""
    assert message in err
    assert_no_traceback(err)


def test_missing_file(tmp_path):
    missing = str(tmp_path / "absent.mlir")
    status, out, err = tile_opt([missing])
    assert (status, out) == (1, "")
    assert err == f"tile-opt: error: cannot open input file '{missing}': No such file or directory\n"


def test_directory_as_input(tmp_path):
    status, _, err = tile_opt([str(tmp_path)])
    assert status == 1 and "cannot open input file" in err


def test_empty_input_is_an_empty_module_as_in_mlir_opt():
    for text in (b"", b"\n\n", b"// only a comment\n"):
        status, out, err = tile_opt([], stdin=text)
        assert (status, out, err) == (0, "module {\n}\n", "")


def test_invalid_utf8_is_located_at_the_byte():
    status, _, err = tile_opt([], stdin=b"func.func @f() {\n  return // caf\xe9\n}\n")
    assert status == 1
    assert err.startswith("<stdin>:2:16: error: input is not valid UTF-8: byte 0xe9")


def test_binary_garbage_is_a_located_error():
    status, _, err = tile_opt([], stdin=bytes(range(1, 128)) + b"\x00\x01")
    assert status == 1
    assert err.startswith("<stdin>:1:")
    assert ": error: " in err.splitlines()[0]
    assert_no_traceback(err)


@pytest.mark.parametrize("text, message", [
    ("func.func @f() attributes {a = " + "[" * 100_000 + "]" * 100_000 + "} { return }",
     "<stdin>:1:287: error: input nests brackets more than 256 levels deep"),
    ("func.func @f() { %0 = arith.constant " + "9" * 100_000 + " : i32\n return }",
     "<stdin>:1:38: error: number literal longer than 1000 digits"),
    ("func.func @f() attributes {a = affine_map<(d0) -> (" + "-" * 100_000 + "d0)>} { return }",
     "<stdin>:1:52: error: more than 64 minus signs in a row"),
])
def test_inputs_that_would_crash_or_hang_the_parser_are_refused(text, message):
    status, _, err = tile_opt([], stdin=text.encode())
    assert status == 1
    assert err.splitlines()[0] == message


def test_nesting_below_the_limit_still_parses():
    text = "func.func @f() attributes {a = " + "[" * 200 + "]" * 200 + "} { return }"
    status, out, err = tile_opt([], stdin=text.encode())
    assert (status, err) == (0, "")
    assert "[" * 200 in out


def test_internal_error_in_a_pass_is_reported_without_traceback(write, monkeypatch):
    monkeypatch.delenv("TILEMLIR_TRACEBACK", raising=False)
    path = write(GOOD)
    status, out, err = tile_opt([path, "-p", "test-diagnostics{crash=true}"])
    assert (status, out) == (1, "")
    assert err == (f"{path}:0:0: error: internal compiler error in pass 'test-diagnostics': "
                   "RuntimeError: test-diagnostics was asked to crash\n")


def test_traceback_of_an_internal_error_on_request(write, monkeypatch):
    monkeypatch.setenv("TILEMLIR_TRACEBACK", "1")
    status, _, err = tile_opt([write(GOOD), "-p", "test-diagnostics{crash=true}"])
    assert status == 1
    assert "note: Python traceback:\nTraceback (most recent call last):" in err
    assert 'raise RuntimeError("test-diagnostics was asked to crash")' in err


def test_invalid_ir_produced_by_a_pass_fails_verification(write):
    path = write(GOOD)
    status, out, err = tile_opt([path, "-p", "test-diagnostics{break-ir=true},canonicalize"])
    assert (status, out) == (1, "")
    assert "error: 'tile.yield' op must terminate a tile.kernel, tile.parallel or tile.pipelined region" in err


def test_pass_errors_and_remarks_are_printed_in_order_with_notes(write):
    path = write('func.func @f() attributes {test.remark = "looked at f"} {\n'
                 '  %0 = arith.constant {test.error = "bad constant", test.note = "see here"} 1 : i32\n'
                 "  return\n}\n")
    status, out, err = tile_opt([path, "-p", "test-diagnostics"])
    assert (status, out) == (1, "")
    lines = err.splitlines()
    error_at = lines.index(f"{path}:2:8: error: bad constant")
    remark_at = lines.index(f"{path}:1:1: remark: looked at f")
    assert f"{path}:2:8: note: see here" in lines[error_at:]
    assert remark_at < error_at  # the pass walks post-order but reports errors after the walk


def test_output_file_written_on_success_only(write, tmp_path):
    out_path = tmp_path / "out.mlir"
    status, out, _ = tile_opt([write(GOOD), "-o", str(out_path), "-p", "canonicalize"])
    assert status == 0 and out == ""
    assert "arith.constant 5 : i32" in out_path.read_text()
    failed_path = tmp_path / "failed.mlir"
    status, _, _ = tile_opt([write(GOOD), "-o", str(failed_path), "-p", "test-diagnostics{crash=true}"])
    assert status == 1 and not failed_path.exists()


def test_split_input_file_keeps_going_and_reports_real_lines(write):
    path = write(GOOD.decode() + "// -----\nfunc.func @g() {\n  %0 = arith.addi\n}\n// -----\nfunc.func @h() {\n  return\n}\n")
    status, out, err = tile_opt([path, "--split-input-file"])
    assert status == 1
    assert err.splitlines()[0] == f"{path}:9:18: error: expected SSA operand"
    chunks = out.split("// -----\n")
    assert len(chunks) == 2 and "@f()" in chunks[0] and "@h()" in chunks[1]


def test_mlir_opt_single_dash_options(write):
    path = write(GOOD + b"// -----\n" + GOOD.replace(b"@f", b"@g"))
    status, out, _ = tile_opt([path, "-split-input-file", "-pass-pipeline=builtin.module(canonicalize)"])
    assert status == 0 and out.count("arith.constant 5 : i32") == 2


def test_verify_diagnostics_exit_status(write):
    ok = write('func.func @f() {\n  // expected-error @+1 {{expected SSA operand}}\n  %0 = arith.addi\n}\n')
    assert tile_opt([ok, "--verify-diagnostics"])[0] == 0
    wrong = write('func.func @f() {\n  // expected-error @+1 {{something else}}\n  %0 = arith.addi\n}\n', "wrong.mlir")
    status, _, err = tile_opt([wrong, "--verify-diagnostics"])
    assert status == 1
    assert f"{wrong}:3:18: error: unexpected error: expected SSA operand" in err
    assert f'{wrong}:2:6: error: expected error "something else" was not produced' in err


def test_list_passes_shows_ours_with_options_and_mentions_upstream():
    status, out, _ = tile_opt(["--list-passes"])
    assert status == 0
    lines = out.splitlines()
    at = lines.index("  test-diagnostics")
    assert lines[at + 1].strip().startswith("Report test.remark")
    assert "      --crash=<bool> (default: false)" in lines[at + 2 : at + 5]
    assert "Upstream MLIR passes are accepted too" in out


def test_unknown_command_line_option_exits_1(capsys):
    status, _, err = tile_opt(["--no-such-flag"], capsys=capsys)
    assert status == 1
    assert "tile-opt: error: unrecognized arguments: --no-such-flag" in err


def test_console_script_in_a_subprocess(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %0 = arith.addi\n}\n")
    script = os.path.join(os.path.dirname(sys.executable), "tile-opt")
    command = [script] if os.path.exists(script) else [sys.executable, "-m", "tilemlir.tools.tile_opt"]
    result = subprocess.run([*command, str(bad), "-p", "canonicalize"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.startswith(f"{bad}:2:18: error: expected SSA operand")
    assert_no_traceback(result.stderr)


GEMM_SOURCE = '''
import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[-1])
def matmul(N=64, K=64, block_M=32, block_N=32, block_K=16, dtype="float16", accum_dtype="float32"):
    M = T.symbolic("M")

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return gemm
'''


def _gemm(tmp_path):
    import importlib.util

    path = tmp_path / "gemm_kernel.py"
    path.write_text(GEMM_SOURCE)
    spec = importlib.util.spec_from_file_location("gemm_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.matmul.instantiate()


def _softmax(tmp_path):
    from tilemlir.kernels.softmax import softmax

    return softmax.instantiate(1024, "float16")


@pytest.mark.parametrize("make", [_gemm, _softmax], ids=["gemm", "softmax"])
@pytest.mark.parametrize("stage", ["thread", "final"])
def test_stage_reproduces_a_kernels_ir_from_its_frontend_ir(make, stage, write, tmp_path):
    """`tile-opt --stage S` of `k.ir("frontend")` prints `k.ir(S)`, text for text."""
    import tilemlir

    kernel = tilemlir.compile(make(tmp_path), target="cpu", level="thread")
    status, out, err = tile_opt([write(kernel.ir("frontend")), "--stage", stage])
    assert (status, err) == (0, "")
    assert out.rstrip("\n") == kernel.ir(stage).rstrip("\n")
    assert out != kernel.ir("frontend")


def test_pipeline_runs_one_named_pipeline(write, capsys):
    """`--pipeline cpu-tile` is `-p lower-tile-to-loops`; an unknown name is a usage error naming the choices."""
    from tilemlir.kernels.softmax import softmax

    frontend = write(tilemlir_lower(softmax.instantiate(1024, "float16")))
    named = tile_opt([frontend, "--pipeline", "cpu-tile"])
    spelled = tile_opt([frontend, "-p", "lower-tile-to-loops"])
    assert named[0] == 0 and named == spelled and "scf.for" in named[1]
    status, out, err = tile_opt([frontend, "--pipeline", "cuda-fast"], capsys=capsys)
    assert status != 0 and "invalid choice: 'cuda-fast'" in err and "cpu-llvm" in err


def tilemlir_lower(fn) -> str:
    import tilemlir

    return tilemlir.lower(fn, "frontend")
