"""The GEMM benchmark of issue 16 (benchmarks/bench_gemm.py and its modules) without a GPU: shapes,
FLOP counts and artifact names, argument parsing, SASS opcode counts, the tables from fake timings,
the artifact builder on a real (small) compile of examples/gemm.py, loading that artifact the way
the GPU machine does, and the run script's modes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import build_gemm_artifacts, gemm_cases, gemm_report, sass  # noqa: E402
from benchmarks.bench_gemm import (Missing, artifact_resources, final_tables, load_ours, parse_args,  # noqa: E402
                                   progress_line, signature_problems)
from tilemlir.runtime.signature import KernelSignature, TensorParam  # noqa: E402


# -- cases --------------------------------------------------------------------------------------
def test_default_cases_are_issue_16s_shapes_in_both_dtypes():
    cases = gemm_cases.select_cases()
    shapes = [(c.shape.m, c.shape.n, c.shape.k) for c in cases if c.dtype == "bfloat16"]
    assert shapes == [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 2048), (4096, 2112, 7168),
                      (4096, 24576, 1536), (4096, 7168, 16384), (4095, 4096, 4096), (129, 4096, 4096)]
    assert len(cases) == 16 and {c.dtype for c in cases} == {"bfloat16", "float16"}
    # M is symbolic in our kernel: the ragged M reuse the 4096 x 4096 artifact
    assert len(gemm_cases.artifact_ids(cases)) == 12
    assert gemm_cases.GemmCase(gemm_cases.GemmShape(129, 4096, 4096), "float16").artifact_id == "gemm_fp16_n4096_k4096"


def test_flops_and_tflops():
    shape = gemm_cases.GemmShape(4096, 7168, 2048)
    assert shape.flops == 2 * 4096 * 7168 * 2048
    assert gemm_cases.tflops(2 * 10**12, 1e6) == pytest.approx(2.0)  # 2e12 FLOP in one second
    assert gemm_cases.tflops(gemm_cases.GemmShape(8192, 8192, 8192).flops, 1600.0) == pytest.approx(687.2, abs=0.1)
    with pytest.raises(ValueError, match="positive"):
        gemm_cases.tflops(1, 0)


def test_error_bounds_are_stated_per_dtype():
    assert gemm_cases.ERROR_BOUND == {"bfloat16": 8e-3, "float16": 2e-3}


@pytest.mark.parametrize("text, mnk", [("4096^3", (4096,) * 3), ("4096x7168x2048", (4096, 7168, 2048)),
                                       (" 129X4096x4096 ", (129, 4096, 4096))])
def test_parse_shape(text, mnk):
    shape = gemm_cases.parse_shape(text)
    assert (shape.m, shape.n, shape.k) == mnk


@pytest.mark.parametrize("text", ["4096x4096", "4096^2", "ax1x1", "0x4x4"])
def test_parse_shape_rejects(text):
    with pytest.raises(ValueError):
        gemm_cases.parse_shape(text)


def test_parse_dtype():
    assert gemm_cases.parse_dtype("bf16") == "bfloat16" and gemm_cases.parse_dtype("float16") == "float16"
    with pytest.raises(ValueError, match="fp32"):
        gemm_cases.parse_dtype("fp32")


def test_bench_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("OUT", str(tmp_path))
    args = parse_args(["--dtypes", "fp16", "--shapes", "4096^3,129x4096x4096", "--seed", "7"])
    assert [c.id for c in args.cases] == ["gemm_fp16_4096x4096x4096", "gemm_fp16_129x4096x4096"]
    assert args.out == tmp_path and args.seed == 7 and args.rounds == 2


@pytest.mark.parametrize("argv, message", [(["--dtypes", "int8"], "int8"), (["--shapes", "12x12"], "12x12"),
                                           (["--rounds", "0"], "--rounds")])
def test_bench_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err


# -- SASS ---------------------------------------------------------------------------------------
SASS = """
        /*0100*/                   LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64] ;  /* 0x0000000004037fae */
        /*0110*/                   LDSM.16.M88.4 R8, [R2] ;                          /* 0x000000000208783b */
        /*0120*/                   LDSM.16.MT88.2 R12, [R2+0x200] ;                  /* 0x000200000208783b */
        /*0130*/                   HMMA.16816.F32.BF16 R16, R8, R12, R16 ;          /* 0x0000000c0810723c */
        /*0140*/              @!P0 HMMA.16816.F32.BF16 R20, R8, R14, R20 ;          /* 0x0000000e0814723c */
        /*0150*/                   FFMA R0, R1, R2, R0 ;                            /* 0x0000000201007223 */
        /*0160*/                   HFMA2.MMA R0, -RZ, RZ, 0 ;                       /* 0x000000ffff007435 */
        /*0170*/                   LDGDEPBAR ;                                      /* 0x00000000000079af */
"""


def test_count_opcodes_reads_the_opcode_not_its_suffixes():
    counts = sass.count_opcodes(SASS, sass.MATRIX_OPCODES)
    assert counts == {"HMMA": 2, "HGMMA": 0, "LDSM": 2, "LDGSTS": 1, "FFMA": 1, "FMUL": 0}


def test_matrix_path():
    assert gemm_cases.matrix_path({"HMMA": 64, "HGMMA": 0}, "") == "mma.sync"
    assert gemm_cases.matrix_path({"HMMA": 0, "HGMMA": 8}, "") == "wgmma"
    assert gemm_cases.matrix_path({"HMMA": 0, "HGMMA": 0, "FMUL": 1024}, "mma.sync") == "SIMT"
    assert gemm_cases.matrix_path(None, "asm volatile(\"mma.sync.aligned...\")") == "mma.sync"
    assert gemm_cases.matrix_path(None, "acc += a * b;").startswith("SIMT")


# -- tables from fake timings -------------------------------------------------------------------
def fake_result(case_id="gemm_bf16_4096x4096x4096", ours=(400.0, 410.0), torch=(200.0, 202.0), triton=None,
                ours_error=2e-3, unwritten=0):
    flops = 2 * 4096**3
    impls = {
        "ours": {"status": "ok", "times_us": list(ours), "error": ours_error, "unwritten": unwritten,
                 "ok": ours_error <= 8e-3 and unwritten == 0},
        "torch": {"status": "ok", "times_us": list(torch), "error": 2.2e-3, "unwritten": 0, "ok": True},
        "triton": {"status": "error", "reason": "CompilationError: out of resources"} if triton is None else
        {"status": "ok", "times_us": list(triton), "error": 2.3e-3, "unwritten": 0, "ok": True},
        "tilelang": {"status": "skipped", "reason": "--no-tilelang"},
    }
    return {"case": case_id, "dtype": "bfloat16", "shape": [4096] * 3, "flops": flops, "bound": 8e-3,
            "artifact": "gemm_bf16_n4096_k4096", "impls": impls}


def test_metrics_from_fake_timings():
    m = gemm_report.metrics(fake_result(triton=(190.0, 195.0)))
    ours = 2 * 4096**3 / 400e-6 / 1e12
    assert m["impls"]["ours"]["tflops"] == pytest.approx(ours)
    assert m["impls"]["ours"]["spread"] == pytest.approx(0.025)
    assert m["of_cublas"] == pytest.approx(0.5) and m["best_peer"] == "triton"
    assert m["of_best_peer"] == pytest.approx(190.0 / 400.0)


def test_a_wrong_or_unwritten_result_gets_no_rate():
    for result in (fake_result(ours_error=0.5), fake_result(unwritten=3)):
        assert gemm_report.metrics(result)["of_cublas"] is None
        assert gemm_report.rate_cell(result["impls"]["ours"], result["flops"]) == "WRONG"
    assert gemm_report.error_cell(fake_result(unwritten=3)["impls"]["ours"]) == "FAIL 2.0e-03 (3 NaN)"


def test_tables_and_markdown_from_fake_timings():
    slow = fake_result("gemm_bf16_8192x8192x8192", ours=(4000.0, 4100.0), torch=(1600.0, 1610.0))
    results = [fake_result(), slow]
    resources = {"gemm_bf16_n4096_k4096": {"path": "SIMT", "regs": 255, "stack": 832, "local": 0, "local_insts": 1053,
                                           "shared": 1024, "dynamic_shared": 16384, "compile_s": 24.0,
                                           "extra_args": {"num_stages": 4, "block_K": 64},
                                           "opcodes": {"HMMA": 0, "LDSM": 0, "LDGSTS": 0, "FFMA": 0, "FMUL": 1397}}}
    perf = gemm_report.perf_table(results, {"gemm_bf16_n4096_k4096": "SIMT"})
    rows = perf.splitlines()
    assert rows[0].startswith("| case | ours path | tilemlir TFLOP/s | torch.matmul (cuBLAS) TFLOP/s |")
    assert rows[2] == ("| gemm_bf16_4096x4096x4096 | SIMT | 343.6 (±2.5%) | 687.2 (±1.0%) | error | skipped "
                       "| 50.0% | 50.0% | torch.matmul (cuBLAS) |")
    assert "| 40.0% | 40.0% |" in rows[3]
    table = gemm_report.resources_table(resources)
    assert "| gemm_bf16_n4096_k4096 | SIMT | 255 | 832 B stack, 0 B local, 1053 LDL/STL | 1024 | 16384 | 0 | 0 | 0 " \
           "| 0 / 1397 | 24.0 | block_K=64, num_stages=4 |" in table
    assert gemm_report.resources_row("x", {"error": "no cuobjdump"})[2] == "no cuobjdump"
    assert len(gemm_report.resources_row("x", {"error": "no cuobjdump"})) == table.splitlines()[0].count("|") - 1
    text = gemm_report.full_markdown({"env": {"gpu": "fake"}, "results": results, "resources": resources,
                                      "notes": ["wall time 3 s"]})
    assert "- gpu: fake" in text and "ok 2.0e-03" in text
    assert "1 of 1 artifacts compiled to the SIMT path" in text
    assert "Triton: error: CompilationError: out of resources — gemm_bf16_4096x4096x4096, gemm_bf16_8192x8192x8192" \
        in text
    assert "below 50% of cuBLAS (to explain in RESULTS.md): gemm_bf16_8192x8192x8192 (40.0%)" in text
    assert "- wall time 3 s" in text
    printed = final_tables({"results": results, "resources": resources})
    assert printed.index("== correctness ==") < printed.index("== TFLOP/s ==")
    assert progress_line(results[0]) == ("gemm_bf16_4096x4096x4096 | ours 343.6 (±2.5%) | torch 687.2 (±1.0%) | "
                                          "triton error | tilelang skipped")


def test_no_simt_note_once_every_kernel_is_on_the_tensor_cores():
    assert gemm_report.path_notes({"a": {"path": "mma.sync"}, "b": {"path": "wgmma"}}) == []


# -- our artifacts ------------------------------------------------------------------------------
def gemm_signature(dtype="bfloat16", n=128, k=64, out_idx=(2,)):
    params = (TensorParam("A", dtype, ("M", k)), TensorParam("B", dtype, (k, n)), TensorParam("C", dtype, ("M", n)))
    return KernelSignature(name="gemm", params=params, symbols=("M",), grid=("1", "M", "1"), block=(128, 1, 1),
                           cuda_params=("A", "B", "C", "M"), out_idx=out_idx)


def case_of(text, dtype="bfloat16"):
    return gemm_cases.GemmCase(gemm_cases.parse_shape(text), dtype)


def test_signature_problems_name_each_departure():
    assert signature_problems(gemm_signature(), case_of("4095x128x64")) == []
    found = signature_problems(gemm_signature(n=256), case_of("64x128x64"))
    assert found == ["B is bfloat16 (64, 256), expected B bfloat16 (64, 128)",
                     "C is bfloat16 ('M', 256), expected C bfloat16 ('M', 128)"]
    assert signature_problems(gemm_signature(out_idx=(0,)), case_of("64x128x64")) == ["out_idx [0], expected [] or [2]"]
    assert "float16" in signature_problems(gemm_signature(), case_of("64x128x64", "float16"))[0]


def test_missing_artifact_names_the_build_command(tmp_path):
    with pytest.raises(Missing, match="no artifact gemm_bf16_n4096_k4096 .*build_gemm_artifacts"):
        load_ours(case_of("4096^3"), tmp_path)


def test_builder_rejects_kernel_args_that_clash_with_the_cases(capsys):
    with pytest.raises(SystemExit):
        build_gemm_artifacts.main(["--kernel-args", '{"N": 4}'])
    assert "may not set N" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_gemm_artifacts.main(["--kernel-args", "[1]"])
    assert "--kernel-args must be a JSON object" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_gemm_artifacts.main(["--compile-args", '"wgmma"'])
    assert "--compile-args must be a JSON object" in capsys.readouterr().err


def test_builder_passes_compile_args_to_the_compiler(tmp_path):
    assert build_gemm_artifacts.main(["--out", str(tmp_path), "--shapes", "64x128x64", "--dtypes", "bf16",
                                      "--kernel-args", '{"block_M": 64, "block_N": 64, "block_K": 64}',
                                      "--compile-args", '{"tensor_cores": "mma_sync"}']) == 0
    entry = json.loads((tmp_path / "manifest.json").read_text())["artifacts"]["gemm_bf16_n128_k64"]
    assert entry["compile_options"] == {"tensor_cores": "mma_sync"}
    (device_source,) = [p for p in (tmp_path / "gemm_bf16_n128_k64").glob("*.cu") if not p.stem.endswith("_host")]
    source = device_source.read_text()
    assert "tl_mma_m16n8k16_" in source and "tl_wgmma" not in source  # sm_90a would take wgmma by default


def test_builder_builds_the_example_on_wgmma_fed_by_tma(tmp_path):
    """--compile-args with tma: examples/gemm.py's body on wgmma fed by TMA boxes, no cp.async."""
    options = {"tensor_cores": "wgmma", "tma": True}
    assert build_gemm_artifacts.main(["--out", str(tmp_path), "--shapes", "64x128x64", "--dtypes", "bf16",
                                      "--kernel-args", '{"block_M": 64, "block_N": 64, "block_K": 64}',
                                      "--compile-args", json.dumps(options)]) == 0
    entry = json.loads((tmp_path / "manifest.json").read_text())["artifacts"]["gemm_bf16_n128_k64"]
    assert entry["compile_options"] == options
    (device_source,) = [p for p in (tmp_path / "gemm_bf16_n128_k64").glob("*.cu") if not p.stem.endswith("_host")]
    source = device_source.read_text()
    assert "tl_tma_load_2d(" in source and "tl_wgmma_m64n64k16_" in source and "cp_async" not in source
    if "error" not in entry["resources"]:
        assert entry["path"] == "wgmma"


def test_built_artifact_loads_without_the_compiler_and_reports_its_path(tmp_path):
    """A real compile of examples/gemm.py at a small shape, then what the GPU machine does with it."""
    assert build_gemm_artifacts.main(["--out", str(tmp_path), "--shapes", "64x128x64", "--dtypes", "bf16",
                                      "--kernel-args", '{"block_M": 64, "block_N": 64, "block_K": 32}']) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    entry = manifest["artifacts"]["gemm_bf16_n128_k64"]
    assert entry["kwargs"] == {"N": 128, "K": 64, "dtype": "bfloat16", "block_M": 64, "block_N": 64, "block_K": 32}
    assert entry["compile_s"] > 0 and (tmp_path / "SOURCE_COMMIT").read_text().strip() == manifest["source_commit"]
    # a ragged M of the same N, K is served by the same artifact, its out_idx dropped so C can be poisoned
    kernel = load_ours(case_of("4095x128x64"), tmp_path)
    assert kernel.signature.out_idx == () and [p.name for p in kernel.signature.params] == ["A", "B", "C"]
    (tmp_path / "gemm_fp16_n128_k64").symlink_to(tmp_path / "gemm_bf16_n128_k64")
    with pytest.raises(Missing, match="not this GEMM: .*float16"):
        load_ours(case_of("64x128x64", "float16"), tmp_path)
    found = artifact_resources(tmp_path / "gemm_bf16_n128_k64", entry)
    if "error" in found:
        pytest.skip(f"no cuobjdump here: {found['error']}")
    ops = found["opcodes"]
    # sm_90a's default tensor-core path: one warpgroup's m64n64k16 wgmma twice a 32-deep k tile
    assert found["path"] == "wgmma" and ops["HMMA"] == 0 and ops["HGMMA"] >= 32 // 16
    assert found["dynamic_shared"] == kernel.signature.shared_bytes and found["compile_s"] == entry["compile_s"]
    assert found["extra_args"] == {"block_M": 64, "block_N": 64, "block_K": 32}
    assert entry["path"] == found["path"] and entry["resources"]["opcodes"] == ops


# -- the run script -----------------------------------------------------------------------------
def run_script(tmp_path, *args):
    """benchmarks/run_on_h200.sh with python3, nvidia-smi and compute-sanitizer replaced by recorders."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("python3", "nvidia-smi", "compute-sanitizer"):
        (bin_dir / tool).write_text(f"#!/bin/sh\necho \"{tool} $*\" >> {tmp_path}/calls\n")
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(tmp_path / "out"), "HOME": str(tmp_path)}
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "run_on_h200.sh"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    calls = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    return done, [c for c in calls if not c.startswith("nvidia-smi")]


def test_run_script_gemm_mode_runs_the_ceiling_then_the_bench(tmp_path):
    done, calls = run_script(tmp_path, "gemm", "--dtypes", "bf16")
    assert done.returncode == 0, done.stderr
    assert calls[0] == "python3 -m benchmarks.mma_ceiling"
    assert calls[1].startswith("python3 -m benchmarks.bench_gemm --no-tilelang --budget-s ")
    assert calls[1].endswith(f"--out {tmp_path}/out --dtypes bf16")
    assert "TileLang left out" in done.stdout and "no benchmarks/artifacts_gemm" in done.stdout


def test_run_script_fp8_mode_runs_the_gpu_tests_then_the_bench(tmp_path):
    done, calls = run_script(tmp_path, "fp8", "--quick")
    assert done.returncode == 0, done.stderr
    assert calls[0] == "python3 -m pytest -q -p no:cacheprovider -rs test/gpu/test_fp8_gemm_gpu.py"
    assert calls[1].startswith("python3 -m benchmarks.bench_fp8_gemm --budget-s ")
    assert calls[1].endswith(f"--out {tmp_path}/out --quick")
    assert "no benchmarks/artifacts_fp8_gemm" in done.stdout


def test_run_script_modes(tmp_path):
    _, calls = run_script(tmp_path, "--kernels", "softmax")
    assert calls == [f"python3 -m benchmarks.bench_memory_bound --no-tilelang --out {tmp_path}/out --kernels softmax"]
    (tmp_path / "calls").unlink()
    _, calls = run_script(tmp_path, "tests", "-k", "gemm")
    assert calls[-1] == ("python3 -m pytest -q -p no:cacheprovider -rs test/gpu "
                         "test/python/test_runtime_fastpath_torch.py -k gemm")
    (tmp_path / "calls").unlink()
    _, calls = run_script(tmp_path, "sanitize")
    assert calls == ["compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 python3 "
                     "test/gpu/sanitize_examples.py",
                     "compute-sanitizer --tool racecheck --error-exitcode 1 python3 test/gpu/sanitize_examples.py"]


# -- the runner on the CPU (where torch is installed) -------------------------------------------
class FakeTiming:
    """Stands in for do_bench: runs the call once and reports a fixed time per implementation."""

    def __init__(self, times):
        self.times = iter(times)

    def __call__(self, fn):
        fn()
        return next(self.times)


def cpu_runner(monkeypatch, tmp_path, impls):
    from benchmarks import bench_gemm

    args = parse_args(["--shapes", "129x96x80", "--dtypes", "bf16", "--no-triton", "--no-tilelang",
                       "--artifacts", str(tmp_path), "--out", str(tmp_path / "out"), "--seed", "5"])
    runner = bench_gemm.GemmRunner(args, device="cpu")
    monkeypatch.setattr(runner, "impls", lambda case: (impls, {"tilelang": {"status": "skipped", "reason": "x"}}))
    return args, runner


def test_runner_checks_poisoned_outputs_then_times_only_the_correct(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")

    def honest(a, b, c):
        return torch.matmul(a, b, out=c)

    def skips_last_row(a, b, c):
        c[:-1] = torch.matmul(a[:-1], b)

    def wrong(a, b, c):
        c.copy_(torch.matmul(a, b) * 1.05)

    impls = {"ours": (skips_last_row, "ours"), "torch": (honest, "torch"), "triton": (wrong, "wrong")}
    args, runner = cpu_runner(monkeypatch, tmp_path, impls)
    runner.timing = FakeTiming([10.0, 11.0])  # two rounds of the one correct implementation
    result = runner.run_case(args.cases[0], args.seed)
    ours, peer, bad = (result["impls"][n] for n in ("ours", "torch", "triton"))
    assert ours["unwritten"] == 96 and not ours["ok"] and "times_us" not in ours
    assert peer["ok"] and 0 < peer["error"] < 8e-3 and peer["times_us"] == [10.0, 11.0]
    assert not bad["ok"] and bad["error"] == pytest.approx(0.05, rel=0.05) and bad["unwritten"] == 0
    assert result["flops"] == 2 * 129 * 96 * 80 and result["artifact"] == "gemm_bf16_n96_k80"
    runner.results.append(result)
    runner.write()
    saved = json.loads((tmp_path / "out" / "bench_gemm.json").read_text())
    assert saved["results"][0]["impls"]["torch"]["times_us"] == [10.0, 11.0]
    text = (tmp_path / "out" / "bench_gemm.md").read_text()
    assert "| gemm_bf16_129x96x80 | — | WRONG | " in text and "FAIL " in text and "(96 NaN)" in text


def test_runner_reports_a_failing_implementation_and_goes_on(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")

    def raises(a, b, c):
        raise RuntimeError("launch failed: too many resources requested")

    impls = {"ours": (raises, "ours"), "torch": (lambda a, b, c: torch.matmul(a, b, out=c), "torch")}
    args, runner = cpu_runner(monkeypatch, tmp_path, impls)
    runner.timing = FakeTiming([5.0, 5.0])
    result = runner.run_case(args.cases[0], args.seed)
    assert result["impls"]["ours"] == {"status": "error", "call": "ours",
                                       "reason": "RuntimeError: launch failed: too many resources requested"}
    assert result["impls"]["torch"]["ok"]


TRITON_GEMM_ON_THE_CPU = """
import torch, triton
from benchmarks import triton_gemm
torch.manual_seed(0)
for (m, n, k), dtype in (((129, 96, 80), torch.float16), ((70, 200, 64), torch.float32)):
    a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
    c = torch.full((m, n), float("nan"), dtype=dtype)
    grid = (triton.cdiv(m, 32) * triton.cdiv(n, 64),)
    triton_gemm._matmul_kernel.fn[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                        c.stride(0), c.stride(1), BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, GROUP_M=3)
    ref = (a.double() @ b.double())
    print(int(torch.isnan(c).sum()), float((c.double() - ref).norm() / ref.norm()))
"""


def test_triton_gemm_masks_ragged_edges_under_the_interpreter():
    """The Triton peer's kernel (one config, autotune bypassed) under TRITON_INTERPRET=1: M, N and K
    not multiples of the blocks, grouped program order with a partial last group. (The interpreter's
    bf16 dot is not usable, so fp16 and fp32; the GPU run checks bf16.)"""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = {**__import__("os").environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", TRITON_GEMM_ON_THE_CPU], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (nan16, err16), (nan32, err32) = [(int(a), float(b)) for a, b in (line.split() for line in done.stdout.split("\n")
                                                                      if line.strip())]
    assert nan16 == nan32 == 0
    assert 0 < err16 < 2e-3 and 0 < err32 < 1e-5


def test_carry_line_adds_the_repository_the_wheels_and_the_artifacts(tmp_path, monkeypatch):
    repository = build_gemm_artifacts.repository_bytes()
    assert repository is not None and repository > 100_000  # this checkout's tracked files
    line = build_gemm_artifacts.carry_line(3 * 2**20)
    wheels = build_gemm_artifacts.dir_size(ROOT / ".whl")
    assert line == (f"a gemm call carries {(repository + wheels + 3 * 2**20) / 2**20:.1f} MiB of 64: repository "
                    f"{repository / 2**20:.1f}, .whl {wheels / 2**20:.1f}, artifacts 3.0")
    (tmp_path / ".whl").mkdir()
    (tmp_path / ".whl" / "bundle.tar.xz").write_bytes(b"x" * 2**20)
    monkeypatch.setattr(build_gemm_artifacts, "ROOT", tmp_path)  # not a git checkout
    assert build_gemm_artifacts.carry_line(0) == "artifacts 0.0 MiB + .whl 1.0 MiB (+ the repository) of 64 MiB"


def test_builder_starts_from_the_tuned_config(tmp_path):
    """--tuned builds examples/gemm.py with the config that won on the GPU; explicit --kernel-args keys win."""
    assert build_gemm_artifacts.main(["--out", str(tmp_path), "--shapes", "64x256x128", "--dtypes", "bf16", "--tuned",
                                      "--kernel-args", '{"num_stages": 2}']) == 0
    entry = json.loads((tmp_path / "manifest.json").read_text())["artifacts"]["gemm_bf16_n256_k128"]
    assert entry["kwargs"] == {"N": 256, "K": 128, "dtype": "bfloat16",
                               **build_gemm_artifacts.TUNED_KERNEL_ARGS, "num_stages": 2}
    assert entry["compile_options"] == {"tensor_cores": "wgmma", "tma": True}
    (device_source,) = [p for p in (tmp_path / "gemm_bf16_n256_k128").glob("*.cu") if not p.stem.endswith("_host")]
    source = device_source.read_text()
    assert "tl_tma_load_2d(" in source and "tl_wgmma_m64n256k16_" in source


@pytest.mark.parametrize("epilogue", ["staged", "lanes"])
def test_builder_builds_another_example_and_records_it(tmp_path, epilogue):
    """--example benchmarks/epilogue_gemm.py: the same factory arguments and `epilogue`; "staged" goes through a
    shared tile (stmatrix in, TMA boxes out), "lanes" stores each lane's pairs (disable_tma=True); the manifest
    names the module the kernel came from."""
    kernel_args = {"block_M": 64, "block_N": 64, "block_K": 64, "epilogue": epilogue}
    assert build_gemm_artifacts.main(["--out", str(tmp_path), "--shapes", "64x128x64", "--dtypes", "bf16",
                                      "--example", str(ROOT / "benchmarks" / "epilogue_gemm.py"),
                                      "--kernel-args", json.dumps(kernel_args),
                                      "--compile-args", '{"tensor_cores": "wgmma", "tma": true}']) == 0
    entry = json.loads((tmp_path / "manifest.json").read_text())["artifacts"]["gemm_bf16_n128_k64"]
    assert entry["factory"] == "benchmarks/epilogue_gemm.py:matmul" and entry["kwargs"]["epilogue"] == epilogue
    (device_source,) = [p for p in (tmp_path / "gemm_bf16_n128_k64").glob("*.cu") if not p.stem.endswith("_host")]
    source = device_source.read_text()
    staged = epilogue == "staged"
    assert "tl_wgmma_m64n64k16_" in source and ("tl_stmatrix_x4_f32_bf16(&C_s[" in source) == staged
    assert ("tl_tma_store_2d(&C_map, &C_s[" in source) == staged and ("&C[" in source.split("gemm(", 1)[1]) != staged
