"""Artifacts: export, the standalone host launcher, `load(dir)` without MLIR, import cost."""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime.builder import build, load
from tilemlir.runtime.expr import Expr
from tilemlir.runtime.host_launcher import host_launcher_source
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

REPO = Path(__file__).resolve().parents[2]

SOURCE = r'''#include <cuda_bf16.h>
extern "C" __global__ void __launch_bounds__(256) row_scale(const __nv_bfloat16* __restrict__ X,
    __nv_bfloat16* __restrict__ Y, float s, long long M) {
  extern __shared__ float tile[];
  long long row = blockIdx.x;
  tile[threadIdx.x] = __bfloat162float(X[row * 256 + threadIdx.x]) * s;
  __syncthreads();
  Y[row * 256 + threadIdx.x] = __float2bfloat16_rn(tile[255 - threadIdx.x]);
}
'''
SIGNATURE = KernelSignature(
    name="row_scale",
    params=(TensorParam("X", "bfloat16", ("M", 256), 16), TensorParam("Y", "bfloat16", ("M", 256), 16),
            ScalarParam("s", "float32")),
    symbols=("M",), grid=("M", "1", "1"), block=(256, 1, 1), cuda_params=("X", "Y", "s", "M"),
    shared_bytes="256 * 4", assumes=("M >= 1",), out_idx=(1,))


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))
    return build(SOURCE, SIGNATURE, arch="sm_90a")


def test_export_writes_source_cubin_signature_and_launcher(kernel, tmp_path):
    out = kernel.export(tmp_path / "export")
    assert (out / "row_scale.cu").read_text() == SOURCE
    assert (out / "row_scale.cubin").read_bytes() == kernel.cubin
    assert KernelSignature.from_json((out / "signature.json").read_text()) == SIGNATURE
    build_info = json.loads((out / "build.json").read_text())
    assert build_info["arch"] == "sm_90a" and build_info["fmad"] is True and build_info["fast_math"] is False
    host = (out / "row_scale_host.cu").read_text()
    assert host == host_launcher_source(SIGNATURE)
    loaded = load(out)
    assert loaded.signature == SIGNATURE and loaded.cubin == kernel.cubin and loaded.options == kernel.options


def test_host_launcher_declares_the_kernel_abi_and_computes_grid():
    host = host_launcher_source(SIGNATURE)
    assert "// Build: nvcc -gencode=arch=compute_90a,code=sm_90a row_scale.cu row_scale_host.cu -o row_scale" in host
    assert 'extern "C" __global__ void row_scale(void* arg_X, void* arg_Y, float arg_s, long long sym_M);' in host
    assert 'long long sym_M = (long long)arg_value(argc, argv, "M", true, 0);' in host
    assert "dim3 grid((unsigned int)(sym_M), (unsigned int)(1LL), (unsigned int)(1LL));" in host
    assert "size_t shared = (size_t)((256LL * 4LL));" in host
    assert "if (!((sym_M >= 1LL))) {" in host
    assert "void* arg_X = device_array<__nv_bfloat16>((size_t)sym_M * (size_t)256, true, false);" in host
    assert "void* arg_Y = device_array<__nv_bfloat16>((size_t)sym_M * (size_t)256, false, false);" in host
    assert "row_scale<<<grid, block, shared>>>(arg_X, arg_Y, arg_s, sym_M);" in host
    assert "CHECK(cudaGetLastError());" in host
    narrow = KernelSignature.from_dict(dict(SIGNATURE.to_dict(), index_bits=32))
    assert "float arg_s, int sym_M);" in host_launcher_source(narrow)


HELPER_EXPRS = ["-(-wrap(M * 4, 32) // 128)", "(wrapu(M * 4, 32) + 127) // 128", "wrap(M, 8)", "wrapu(M - 300, 16)",
                "wrap(M, 63)", "wrap(M, 64)", "wrapu(M, 1)", "wrap(M, 1)", "max(M % 7, -M // 3)"]
HELPER_VALUES = [0, 1, -1, 200, 300, 2**30 + 100, 2**31, -(2**31) - 7, 2**40 + 5, 2**60 + 9, -(2**61)]  # M * 4 fits in int64


def test_host_launcher_helpers_compute_what_the_expressions_do(tmp_path):
    """The launcher's grid formulas (floor division and modulo, min, max, wrap, wrapu) in C++, run."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    host = host_launcher_source(SIGNATURE)
    helpers = host[host.index("// Python's floor division"):host.index('// "NAME=value"')]
    exprs = [Expr(text) for text in HELPER_EXPRS]
    lines = [f'  printf("%lld\\n", (long long)({e.to_c(lambda name: "m")}));' for e in exprs]
    program = "#include <cstdio>\n#include <cstdlib>\n" + helpers + textwrap.dedent("""
        int main(int argc, char** argv) {
          long long m = atoll(argv[1]);
        """) + "\n".join(lines) + "\n}\n"
    (tmp_path / "helpers.cpp").write_text(program)
    subprocess.run([compiler, "-std=c++17", "-O1", "-o", str(tmp_path / "helpers"), str(tmp_path / "helpers.cpp")],
                   check=True, capture_output=True)
    for value in HELPER_VALUES:
        done = subprocess.run([str(tmp_path / "helpers"), str(value)], check=True, capture_output=True, text=True)
        expected = [e.closure({"M": 0})([value]) for e in exprs]
        assert [int(v) for v in done.stdout.split()] == expected, value


def test_host_launcher_declaration_matches_the_kernel():
    """With the pointer types spelled as in the kernel, the launcher's declaration must redeclare the
    very function the kernel defines; extern "C" functions cannot overload, so a different arity or
    scalar type is a compile error (shown with the 32-bit-index declaration)."""
    from tilemlir.diagnostics import CompileError
    from tilemlir.runtime.nvrtc import CompileOptions, compile_cuda

    def unit(signature):
        line = [ln for ln in host_launcher_source(signature).splitlines() if ln.startswith('extern "C"')][0]
        return SOURCE + line.replace("void*", "const __nv_bfloat16*", 1).replace("void*", "__nv_bfloat16*", 1) + "\n"

    assert compile_cuda(unit(SIGNATURE), "row_scale", CompileOptions())[:4] == b"\x7fELF"
    narrow = KernelSignature.from_dict(dict(SIGNATURE.to_dict(), index_bits=32))
    with pytest.raises(CompileError, match="row_scale"):
        compile_cuda(unit(narrow), "row_scale", CompileOptions())


def test_a_loaded_kernel_exports_and_tunes_like_a_built_one(kernel, tmp_path):
    first = kernel.export(tmp_path / "first")
    again = load(first).export(tmp_path / "again")
    assert {p.name: p.read_bytes() for p in again.iterdir()} == {p.name: p.read_bytes() for p in first.iterdir()}
    tuned = load(first).with_cuda_source(SOURCE.replace("* s;", "* s * 2.0f;"))
    assert tuned.signature == SIGNATURE and tuned.options == kernel.options and tuned.cubin != kernel.cubin
    assert tuned.override_file == kernel.override_file


def test_a_kernel_made_by_hand_launches_only(kernel, tmp_path):
    from tilemlir.diagnostics import TilemlirError
    from tilemlir.runtime.kernel import CompiledKernel

    by_hand = CompiledKernel(SIGNATURE, SOURCE, kernel.cubin, kernel.options)
    with pytest.raises(TilemlirError, match="export: kernel 'row_scale' was made without the runtime's builder"):
        by_hand.export(tmp_path / "export")
    with pytest.raises(TilemlirError, match="with_cuda_source: kernel 'row_scale' was made without the runtime's"):
        by_hand.with_cuda_source(SOURCE)
    assert not (tmp_path / "export").exists()


def test_load_reports_a_broken_directory(tmp_path):
    with pytest.raises(LaunchError, match="is not a loadable tilemlir artifact"):
        load(tmp_path)
    (tmp_path / "signature.json").write_text("{")
    with pytest.raises(LaunchError, match="not valid JSON"):
        load(tmp_path)



@pytest.mark.parametrize("name, damage, message", [
    ("row_scale.cubin", lambda b: b[: len(b) // 2], "the cubin is truncated"),
    ("row_scale.cubin", lambda b: b[:-1], "the cubin is truncated"),
    ("row_scale.cubin", lambda b: b"\x7fELF" + bytes(len(b) - 4), "the cubin is not a 64-bit ELF image"),
    ("row_scale.cubin", lambda b: b[:18] + b"\x3e\x00" + b[20:], "the cubin.s ELF machine is 62, not CUDA"),
    ("signature.json", lambda b: b.replace(b'"row_scale"', b'"row_\xffscale"'), "signature.json is not UTF-8"),
    ("row_scale.cu", lambda b: b"\xc3" + b, "row_scale.cu is not UTF-8"),
    ("build.json", lambda b: b.replace(b'"sm_90a"', b"90"), "build.json: arch 90 is not a valid arch"),
    ("build.json", lambda b: b.replace(b'"fmad": true', b'"fmad": "yes"'), "build.json: fmad 'yes' is not a valid fmad"),
    ("build.json", lambda b: b"[]", "build.json is not a JSON object"),
])
def test_load_names_what_is_wrong_with_a_damaged_file(kernel, tmp_path, name, damage, message):
    out = kernel.export(tmp_path / "export")
    (out / name).write_bytes(damage((out / name).read_bytes()))
    with pytest.raises(LaunchError, match=f"export is not a loadable tilemlir artifact: {message}"):
        load(out)


def run_python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_load_needs_no_mlir_and_checks_arguments(kernel, tmp_path):
    out = kernel.export(tmp_path / "artifact")
    stdout = run_python(f"""
        import sys
        import tilemlir.runtime as runtime
        from tilemlir.diagnostics import LaunchError
        kernel = runtime.load({str(out)!r})
        fake = type("Fake", (), {{"__cuda_array_interface__": {{"shape": (4, 128), "typestr": "<f4",
                                                               "data": (1 << 40, False), "version": 3}}}})()
        try:
            kernel(fake, 2.0)
        except LaunchError as exc:
            print("error:", exc)
        heavy = [m for m in ("torch_mlir", "tilemlir.mlir", "tilemlir.diagnostics.reporting", "tilemlir.dialects",
                             "tilemlir.passes", "tilemlir.frontend", "cuda.bindings.driver") if m in sys.modules]
        print("heavy:", heavy)
        print("signature:", kernel.signature.name, kernel.arch)
    """)
    assert "error: argument 'X': expected dtype bfloat16, got float32" in stdout
    assert "heavy: []" in stdout
    assert "signature: row_scale sm_90a" in stdout


def test_import_time_of_the_runtime():
    stdout = run_python("""
        import time
        start = time.perf_counter()
        import tilemlir.runtime
        from tilemlir.runtime import load, KernelSignature, CompiledKernel
        print(time.perf_counter() - start)
    """)
    seconds = float(stdout.strip())
    print(f"import tilemlir.runtime (with load, KernelSignature, CompiledKernel): {seconds:.3f} s")
    assert seconds < 1.0
