"""The benchmark harness of issue 8 (benchmarks/): case definitions, byte counts,
ratio and percent math, tables, argument parsing, cuobjdump parsing, the
calling-convention check of our artifacts, and the artifact builder.

Needs no GPU. Tests of the torch side (references, poisoning, checks,
bitwise and batch-invariance comparisons) run on the CPU and are skipped
where torch is not installed.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import build_artifacts, cases, report, sass  # noqa: E402
from benchmarks.bench_memory_bound import parse_args, progress_line  # noqa: E402
from benchmarks.ours import Missing, load_ours, signature_problems  # noqa: E402
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam  # noqa: E402

K = cases.KERNELS_BY_NAME


def case(name: str, *dims: int) -> cases.Case:
    return cases.Case(K[name], cases.Shape(dims))


# -- cases and compulsory bytes ------------------------------------------------------------
@pytest.mark.parametrize("name, dims, expected", [
    ("add_fp32", (2**28,), 3 * 2**28 * 4),
    ("mul_bf16", (2**28,), 3 * 2**28 * 2),
    ("cast_fp32_bf16", (2**28,), 2**28 * (4 + 2)),
    ("cast_bf16_fp8", (2**28,), 2**28 * (2 + 1)),
    ("softmax_bf16", (8192, 8192), 2 * 8192 * 8192 * 2),
    ("softmax_fp16", (4096, 65536), 2 * 4096 * 65536 * 2),
    ("rmsnorm_bf16", (16384, 4096), 2 * 16384 * 4096 * 2 + 4096 * 2),
    ("add_rmsnorm_bf16", (16384, 4096), 4 * 16384 * 4096 * 2 + 4096 * 2),
    ("layernorm_bf16", (4001, 7168), 2 * 4001 * 7168 * 2 + 2 * 7168 * 2),
    ("add_layernorm_bf16", (4001, 7168), 4 * 4001 * 7168 * 2 + 2 * 7168 * 2),
    ("row_sum_fp32", (4001, 7168), 4001 * 7168 * 4 + 4001 * 4),
    ("row_max_fp32", (8192, 8192), 8192 * 8192 * 4 + 8192 * 4),
    ("quant_row_fp8", (16384, 4096), 16384 * 4096 * (2 + 1) + 16384 * 4),
    ("quant_block_fp8", (8001, 576), 8001 * 576 * (2 + 1) + 8001 * 5 * 4),  # 576 = 4.5 blocks of 128
    ("silu_mul_bf16", (8001, 576), 8001 * 1152 * 2 + 8001 * 576 * 2),
])
def test_compulsory_bytes_count_each_input_and_output_once(name, dims, expected):
    assert case(name, *dims).compulsory_bytes() == expected


def test_default_cases_cover_issue_8():
    all_cases = cases.select_cases()
    ids = [c.id for c in all_cases]
    assert len(ids) == len(set(ids)) == 8 + 2 * 5 + 9 * 4
    assert "add_bf16_268435456" in ids and "softmax_bf16_4096x65536" in ids
    assert "rmsnorm_bf16_4096x65536" not in ids  # the long row is softmax's case
    for shape in ("16384x4096", "8192x8192", "4001x7168", "8001x576"):
        assert f"quant_block_fp8_{shape}" in ids and f"silu_mul_bf16_{shape}" in ids
    assert {c.kernel.kind for c in all_cases if c.shape.rank == 1} == {"elementwise"}


def test_params_follow_inputs_outputs_scalars_order():
    assert [p[1] for p in K["add_rmsnorm_bf16"].params()] == ["X", "R", "W", "Y", "H", "eps"]
    assert K["quant_block_fp8"].params() == [("tensor", "X", "bfloat16", 2), ("tensor", "Q", "float8_e4m3", 2),
                                             ("tensor", "S", "float32", 2)]
    assert case("quant_block_fp8", 10, 300).kernel.outputs[1].shape(cases.Shape((10, 300))) == (10, 3)


def test_tensor_dims_of_the_wrong_rank_are_an_error():
    with pytest.raises(ValueError, match="does not define"):
        K["softmax_bf16"].inputs[0].shape(cases.Shape((1024,)))


@pytest.mark.parametrize("text, dims", [("8192x8192", (8192, 8192)), ("2^28", (2**28,)),
                                        ("268435456", (2**28,)), (" 4001X7168 ", (4001, 7168))])
def test_parse_shape(text, dims):
    assert cases.parse_shape(text).dims == dims


@pytest.mark.parametrize("text", ["8192y8192", "0x5", "1x2x3", "", "-4"])
def test_parse_shape_rejects(text):
    with pytest.raises(ValueError, match=r"shape '.*' is not of the form MxN, n or 2\^k|a shape is \(n,\) or \(M, N\) of positive ints"):
        cases.parse_shape(text)


def test_select_by_family_and_name_and_shapes():
    chosen = cases.select_cases(["softmax", "rmsnorm", "add_fp16"], ["8192x8192", "2^20"])
    assert [c.id for c in chosen] == ["add_fp16_1048576", "softmax_fp16_8192x8192", "softmax_bf16_8192x8192",
                                      "rmsnorm_bf16_8192x8192", "add_rmsnorm_bf16_8192x8192"]
    with pytest.raises(ValueError, match="known families: add, mul, cast, softmax"):
        cases.select_cases(["sofmax"])
    with pytest.raises(ValueError, match="no case"):
        cases.select_cases(["softmax"], ["1024"])


def test_split_list():
    assert cases.split_list(" a, b,,c ") == ["a", "b", "c"]
    assert cases.split_list("") is None and cases.split_list(None) is None and cases.split_list(" , ") is None


# -- numbers ---------------------------------------------------------------------------------
def impl(times, ok=True, status="ok"):
    return {"status": status, "times_us": times, "check": {"ok": ok, "errors": {"Y": 1e-3}, "poisoned": True}}


def result(impls, nbytes=268435456, name="softmax_bf16_8192x8192"):
    return {"case": name, "kernel": "softmax_bf16", "shape": [8192, 8192], "bytes": nbytes, "impls": impls}


def test_gbps_percent_spread():
    assert report.gbps(268435456, 70.0) == pytest.approx(268435456 / 70e-6 / 1e9)
    assert report.gbps(4_000_000_000, 1_000_000.0) == pytest.approx(4.0)
    assert report.percent(3834.9, 4248.0) == pytest.approx(90.275, abs=1e-3)
    assert report.spread([100.0, 103.0]) == pytest.approx(0.03)
    with pytest.raises(ValueError, match="time must be positive, got 0.0"):
        report.gbps(1, 0.0)
    with pytest.raises(ValueError, match="ceiling must be positive, got 0.0"):
        report.percent(1.0, 0.0)
    with pytest.raises(ValueError, match="no measurement"):
        report.spread([])


def test_best_peer_skips_wrong_and_missing_peers():
    impls = {"ours": impl([66.0, 65.0]), "torch": impl([259.0, 260.0]), "triton": impl([50.0, 49.0], ok=False),
             "tilelang": impl([70.8, 71.0])}
    assert report.best_peer(impls) == ("tilelang", 70.8)
    assert report.ratio_to_best_peer(result(impls)) == pytest.approx(70.8 / 65.0)
    impls["tilelang"] = {"status": "error", "reason": "compile failed"}
    assert report.best_peer(impls) == ("torch", 259.0)
    assert report.ratio_to_best_peer(result({"ours": {"status": "missing"}, "torch": impl([1.0])})) is None
    assert report.ratio_to_best_peer(result({"ours": impl([1.0]), "torch": impl([2.0], ok=False)})) is None


def test_case_metrics():
    m = report.case_metrics(result({"ours": impl([70.0, 71.0]), "torch": impl([259.0, 250.0])}), 4248.0)
    rate = 268435456 / 70e-6 / 1e9
    assert m["impls"]["ours"]["gbps"] == pytest.approx(rate)
    assert m["impls"]["ours"]["pct_copy"] == pytest.approx(100 * rate / 4248.0)
    assert m["impls"]["ours"]["spread"] == pytest.approx(1 / 70)
    assert m["best_peer"] == "torch" and m["ratio"] == pytest.approx(250 / 70)
    assert report.case_metrics(result({"ours": impl([70.0])}), None)["impls"]["ours"]["pct_copy"] is None
    assert m["impls"]["ours"]["pct_same_size_copy"] is None
    sized = result({"ours": impl([70.0])})
    sized["same_size_copy_gbps"] = 3913.0
    assert report.case_metrics(sized, 4248.0)["impls"]["ours"]["pct_same_size_copy"] == pytest.approx(100 * rate / 3913)


# -- tables ----------------------------------------------------------------------------------
def test_markdown_table_shape_and_escaping():
    text = report.markdown_table(["a", "b"], [[1, "x|y"]])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 1 | x/y |"]
    with pytest.raises(ValueError, match="2 columns"):
        report.markdown_table(["a", "b"], [[1]])


def test_perf_table_row():
    impls = {"ours": impl([65.0, 66.0]), "torch": impl([259.0]), "triton": impl([69.9], ok=False),
             "tilelang": {"status": "missing", "reason": "x"}}
    case = result(impls)
    case["same_size_copy_gbps"] = 3913.0
    row = report.perf_table([case], 4248.0).splitlines()[2]
    cells = [c.strip() for c in row.strip("|").split("|")]
    rate = 268435456 / 65e-6 / 1e9
    assert cells == ["softmax_bf16_8192x8192", "268.4", "65.0", f"{rate:.0f}", f"{100 * rate / 4248:.1f}%",
                     f"{100 * rate / 3913:.1f}%", "1.5%", "259.0", "69.9 (wrong!)", "missing", "torch",
                     f"{259 / 65:.2f}"]


def test_quality_cells():
    ours = impl([1.0])
    ours["check"] = {"ok": False, "errors": {"Q": float("nan"), "S": 1e-7}, "poisoned": False}
    ours["bitwise"] = {"Q": {"mismatches": 3, "total": 100, "variant": "x * (1/s)"},
                       "S": {"mismatches": 0, "total": 10, "variant": "x / s"}}
    ours["batch_invariance"] = {"ok": None, "detail": "n/a: static M"}
    assert report.check_cell(ours) == "FAIL nan (unpoisoned)"
    assert report.bitwise_cell(ours) == "Q 3/100 differ, = torch[x * (1/s)]; S ="
    assert report.invariance_cell(ours) == "n/a (n/a: static M)"
    assert report.invariance_cell({"status": "ok", "batch_invariance": {"ok": False, "detail": "Y: 1 of 1"}}) == \
        "NO (Y: 1 of 1)"
    res = {"regs": 40, "stack": 0, "shared": 0, "local": 0, "local_insts": 0, "ldg128": 8}
    assert report.resources_cell(res) == ["40", "0", "0", "yes (8)"]
    assert report.resources_cell({**res, "local": 16, "local_insts": 4, "ldg128": 0})[1:] == \
        ["LOCAL 16 B, 4 LDL/STL", "0", "no"]
    assert report.resources_cell({**res, "ldg128": 0, "ldg_bits": {"32": 9, "64": 2}})[3] == "no (2 x 64-bit, 9 x 32-bit)"
    table = report.quality_table([{**result({"ours": ours}), "resources": res}])
    assert "FAIL nan" in table and "yes (8)" in table


def test_launch_table_and_full_markdown():
    launch = {"torch": {"status": "ok", "host_us": [8.4, 8.2], "total_us": [9.0, 8.9], "call": "a + b"},
              "ours": {"status": "missing", "reason": "no artifact"}}
    text = report.launch_table(launch)
    assert "| torch | 8.20 | 8.90 | 2.4% | a + b |" in text and "| ours | missing |" in text
    full = report.full_markdown({"env": {"gpu": "H200"}, "copy_gbps": 4248.0, "copy_runs": [4240.0, 4248.0],
                                 "results": [result({"ours": {"status": "missing", "reason": "no artifact"}})],
                                 "launch": launch, "notes": ["wall time 10 s"]})
    assert "- gpu: H200" in full and "4248 GB/s (measurements: 4240, 4248)" in full
    assert "- ours: missing: no artifact — softmax_bf16_8192x8192" in full and "wall time 10 s" in full


def test_notes_group_repeated_reasons():
    results = [result({"ours": {"status": "missing", "reason": f"no artifact {n}"},
                       "torch": impl([1.0]), "tilelang": {"status": "skipped", "reason": "--no-tilelang"}}, name=n)
               for n in ("a_1x2", "b_3x4", "c_5x6")]
    results[1]["impls"]["torch"]["check"]["note"] = "outputs did not land in the poisoned blocks"
    assert report.notes_lines(results, shown_cases=2) == [
        "- ours: missing: no artifact <case> — a_1x2, b_3x4, … (3 cases)",
        "- tilelang: skipped: --no-tilelang — a_1x2, b_3x4, … (3 cases)",
        "- torch: outputs did not land in the poisoned blocks — b_3x4"]


def test_progress_line():
    line = progress_line(result({"ours": impl([65.0]), "torch": impl([130.0]),
                                 "triton": {"status": "skipped"}}), 4248.0)
    assert line == "softmax_bf16_8192x8192 | ours 65.0 us | torch 130.0 us | triton skipped | tilelang — | ratio 2.00"


# -- argument parsing ------------------------------------------------------------------------
def test_bench_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("OUT", str(tmp_path))
    args = parse_args(["--kernels", "softmax,rmsnorm", "--shapes", "8192x8192", "--quick", "--no-tilelang",
                       "--seed", "7"])
    assert [c.id for c in args.cases] == ["softmax_fp16_8192x8192", "softmax_bf16_8192x8192",
                                          "rmsnorm_bf16_8192x8192", "add_rmsnorm_bf16_8192x8192"]
    assert args.quick and args.no_tilelang and args.seed == 7 and args.out == tmp_path
    assert len(parse_args([]).cases) == len(cases.select_cases())
    monkeypatch.delenv("OUT")
    assert parse_args([]).out == Path(cases.__file__).parent / "out"


def test_bench_rejects_unknown_kernel(capsys):
    with pytest.raises(SystemExit, match="^2$"):
        parse_args(["--kernels", "softmaxx"])
    assert "unknown kernel(s) softmaxx" in capsys.readouterr().err


# -- cuobjdump parsing -----------------------------------------------------------------------
RESOURCE_USAGE = """
Fatbin elf code:
================
arch = sm_90a

Resource usage:
 Common:
  GLOBAL:0
 Function softmax_bf16:
  REG:40 STACK:8 SHARED:1024 LOCAL:16 CONSTANT[0]:576 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function helper:
  REG:12 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0
"""

SASS = """
\tcode for sm_90a
\t\tFunction : softmax_bf16
        /*0120*/              @!P3 LDG.E.128 R4, desc[UR4][R12.64] ;                /* 0x000000040c04b981 */
                                                                                    /* 0x0002a8000c1e1d00 */
        /*0130*/                   LDG.E.128.CONSTANT R8, desc[UR4][R14.64] ;       /* 0x000000040e08b981 */
        /*0140*/                   LDG.E.64 R8, desc[UR4][R14.64] ;                 /* 0x000000040e08b981 */
        /*0148*/                   LDG.E.CONSTANT R9, desc[UR4][R14.64] ;           /* 0x000000040e08b981 */
        /*014c*/                   LDG.E.U16 R9, desc[UR4][R14.64] ;                /* 0x000000040e08b981 */
        /*0150*/                   STL.64 [R1], R4 ;                                /* 0x0000000401007387 */
        /*0160*/                   LDL R6, [R1+0x8] ;                               /* 0x0000080001067983 */
        /*0170*/                   STG.E.128 desc[UR4][R2.64], R4 ;                 /* 0x0000000402007986 */
        /*0180*/                   FADD R0, R1, R2 ;                                /* 0x0000000201007221 */
        /*0190*/                   STG.E.U8 desc[UR4][R2.64], R4 ;                  /* 0x0000000402007986 */
        /*01a0*/                   STG.E desc[UR4][R2.64], R4 ;                     /* 0x0000000402007986 */
        /*01b0*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64] ;     /* 0x0000000004037fae */
        /*01c0*/                   LDGDEPBAR ;                                      /* 0x00000000000079af */
"""


def test_parse_resource_usage():
    usage = sass.parse_resource_usage(RESOURCE_USAGE)
    assert usage == {"softmax_bf16": {"regs": 40, "stack": 8, "shared": 1024, "local": 16},
                     "helper": {"regs": 12, "stack": 0, "shared": 0, "local": 0}}


def test_count_sass():
    # LDGSTS (cp.async into shared) and LDGDEPBAR are not LDGs
    assert sass.count_sass(SASS) == {"ldg128": 2, "ldg_bits": {128: 2, 64: 1, 32: 1, 16: 1}, "stg128": 1,
                                     "stg_bits": {128: 1, 8: 1, 32: 1}, "local_insts": 2, "instructions": 13}
    assert sass.count_sass("") == {"ldg128": 0, "ldg_bits": {}, "stg128": 0, "stg_bits": {}, "local_insts": 0,
                                   "instructions": 0}


def test_tools_come_from_their_wheels_else_path(tmp_path, monkeypatch):
    wheel = sass.find_tool("cuobjdump")
    if wheel is not None and "nvidia" in wheel:
        assert Path(wheel).name == "cuobjdump" and Path(wheel).parent.name == "bin"
        assert Path(sass.find_tool("nvdisasm")).parent == Path(wheel).parent
        assert sass.tool_version(wheel).startswith("Cuda compilation tools, release ")
    fake = tmp_path / "bin" / "nvfaketool"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 9.9, V9.9.1'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    assert sass.find_tool("nvfaketool") == str(fake)
    assert sass.tool_version(str(fake)) == "Cuda compilation tools, release 9.9, V9.9.1"
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert sass.find_tool("nvfaketool") == str(fake)
    monkeypatch.delenv("CUDA_HOME")
    assert sass.find_tool("nvfaketool") is None


# -- our artifacts: the calling convention -----------------------------------------------------
def signature(params, out_idx=(), name="k"):
    symbols = ("M",)
    cuda = [p.name for p in params] + ["M"]
    return KernelSignature(name=name, params=params, symbols=symbols, grid=("M", "1", "1"), block=(128, 1, 1),
                           cuda_params=cuda, out_idx=out_idx)


RMS_PARAMS = (TensorParam("X", "bfloat16", ("M", 4096)), TensorParam("W", "bfloat16", (4096,)),
              TensorParam("Y", "bfloat16", ("M", 4096)), ScalarParam("eps", "float32"))


def test_signature_follows_convention():
    assert signature_problems(signature(RMS_PARAMS), K["rmsnorm_bf16"]) == []
    assert signature_problems(signature(RMS_PARAMS, out_idx=(2,)), K["rmsnorm_bf16"]) == []


def test_signature_departures_are_named():
    swapped = (RMS_PARAMS[1], RMS_PARAMS[0], RMS_PARAMS[2], RMS_PARAMS[3])
    problems = signature_problems(signature(swapped), K["rmsnorm_bf16"])
    assert problems == ["param 0 (W): tensor bfloat16 of rank 1, expected tensor bfloat16 of rank 2 (like X)",
                        "param 1 (X): tensor bfloat16 of rank 2, expected tensor bfloat16 of rank 1 (like W)"]
    assert signature_problems(signature(RMS_PARAMS, out_idx=(0,)), K["rmsnorm_bf16"]) == \
        ["out_idx [0] should be empty or the outputs [2]"]
    short = signature_problems(signature(RMS_PARAMS[:3]), K["rmsnorm_bf16"])
    assert short == ["3 params (X, W, Y), expected 4 (X, W, Y, eps)"]


ADD_SOURCE = r"""
extern "C" __global__ void __launch_bounds__(256) add_fp32(const float* __restrict__ A, const float* __restrict__ B,
                                                          float* __restrict__ C, long long n) {
  long long i = (long long)blockIdx.x * 256 + threadIdx.x;
  if (i < n) C[i] = A[i] + B[i];
}
"""


def _export_add(directory: Path, dtype: str = "float32") -> None:
    from tilemlir.runtime import build

    params = (TensorParam("A", dtype, ("n",)), TensorParam("B", dtype, ("n",)), TensorParam("C", dtype, ("n",)))
    sig = KernelSignature(name="add_fp32", params=params, symbols=("n",), grid=("(n + 255) // 256", "1", "1"),
                          block=(256, 1, 1), cuda_params=("A", "B", "C", "n"))
    build(ADD_SOURCE, sig, arch="sm_90a", use_cache=False).export(directory)


def test_load_ours_from_an_exported_artifact(tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    _export_add(tmp_path / cases.LAUNCH_CASE.id)
    mine = load_ours(cases.LAUNCH_CASE, tmp_path)
    assert not mine.allocates and mine.compiled.signature.name == "add_fp32"
    assert mine.describe() == "add_fp32_1024: outputs passed"
    if sass.find_cuobjdump():
        found = sass.inspect_cubin(tmp_path / cases.LAUNCH_CASE.id / "add_fp32.cubin", "add_fp32")
        assert found["regs"] > 0 and found["local"] == 0 and found["local_insts"] == 0 and found["instructions"] > 5


def test_load_ours_reports_missing_and_mismatched_artifacts(tmp_path):
    with pytest.raises(Missing, match="no artifact add_fp32_1024"):
        load_ours(cases.LAUNCH_CASE, tmp_path)
    pytest.importorskip("cuda.bindings.nvrtc")
    _export_add(tmp_path / "add_fp16_268435456", dtype="float32")
    with pytest.raises(Missing, match="param 0 .A.: tensor float32 of rank 1, expected tensor float16"):
        load_ours(case("add_fp16", 2**28), tmp_path)


# -- the artifact builder ------------------------------------------------------------------------
def test_registry_covers_every_kernel():
    assert set(build_artifacts.REGISTRY) == set(K)
    entry = build_artifacts.REGISTRY["softmax_bf16"]
    assert entry.kwargs(cases.Shape((8001, 576))) == {"N": 576, "dtype": "bfloat16"}
    assert build_artifacts.REGISTRY["add_fp16"].kwargs(cases.Shape((2**28,))) == {"dtype": "float16"}


class FakeKernel:
    def __init__(self, kwargs):
        self.kwargs = kwargs

    def export(self, directory):
        Path(directory).mkdir(parents=True)
        (Path(directory) / "k.cubin").write_bytes(b"x" * 100)
        (Path(directory) / "build.json").write_text('{"arch": "sm_90a"}')


def test_build_compiles_once_per_factory_arguments_and_skips_missing(tmp_path, monkeypatch):
    made = []

    def factory(**kwargs):
        made.append(kwargs)
        if kwargs.get("N") == 576:
            raise RuntimeError("tile too large")
        return FakeKernel(kwargs)

    real_factory_for = build_artifacts.factory_for
    monkeypatch.setattr(build_artifacts, "factory_for",
                        lambda entry: real_factory_for(entry) if entry.module == "missing" else factory)
    monkeypatch.setitem(build_artifacts.REGISTRY, "row_max_fp32",
                        build_artifacts.Entry("missing", "row_max", lambda s: {}))
    selected = cases.select_cases(["row_sum", "row_max", "add_fp32"]) + [cases.LAUNCH_CASE]
    built, skipped, failed = build_artifacts.build(selected, tmp_path, "sm_90a")
    assert built == 3 + 1 + 1  # row_sum at three shapes, add_fp32 at 2^28 and at the launch size
    assert made.count({"dtype": "float32"}) == 1  # one compile serves both add_fp32 artifacts
    assert [f.split(":")[0] for f in failed] == ["row_sum_fp32_8001x576"]
    assert skipped == [f"row_max_fp32_{s.name}: no module tilemlir.kernels.missing" for s in cases.ROW_SHAPES]
    assert (tmp_path / "add_fp32_1024" / "k.cubin").is_file() and (tmp_path / "add_fp32_268435456").is_dir()
    assert build_artifacts.dir_size(tmp_path) == 5 * (100 + len('{"arch": "sm_90a"}'))


def test_build_rejects_artifacts_for_another_arch(tmp_path, monkeypatch):
    monkeypatch.setattr(build_artifacts, "factory_for", lambda entry: lambda **kwargs: FakeKernel(kwargs))
    built, _, failed = build_artifacts.build([case("add_fp32", 2**28)], tmp_path, "sm_100a")
    assert built == 0 and "compiled for sm_90a, not sm_100a" in failed[0]


# -- the torch side, on the CPU ------------------------------------------------------------------
def _torch():
    return pytest.importorskip("torch")


def _cpu_impl(name, fn, allocates=True):
    from benchmarks.measure import Impl

    return Impl(name, fn, allocates, True)


def test_references_and_eager_agree_on_the_cpu():
    t = _torch()
    from benchmarks import torch_impls as ti

    g = t.Generator().manual_seed(3)
    for kernel in cases.KERNELS:
        shape = cases.Shape((4096,)) if kernel.kind == "elementwise" else cases.Shape((5, 576))
        c = cases.Case(kernel, shape)
        inputs = ti.make_inputs(c, "cpu", g)
        assert all(float(x.float().abs().sum()) > 0 for x in inputs)
        refs = ti.reference(kernel, inputs)
        outs = ti.eager(kernel)(inputs, ti.scalars_of(kernel))
        for spec, out, ref in zip(kernel.outputs, outs, refs):
            assert tuple(out.shape) == spec.shape(shape) == tuple(ref.shape), kernel.name
            err = ti.relative_error(out, ref)
            assert err <= cases.TOLERANCE[spec.dtype], (kernel.name, spec.name, err)
            assert err > 0 or spec.dtype == "float32" or kernel.family == "cast", (kernel.name, spec.name)


def test_poison_and_bits():
    t = _torch()
    from benchmarks import torch_impls as ti

    q = ti.poison(t.empty(4, dtype=ti.FP8))
    assert q.view(t.uint8).tolist() == [0x7F] * 4 and t.isnan(q.float()).all()
    assert t.isnan(ti.poison(t.empty(3, dtype=t.bfloat16)).float()).all()
    a = t.tensor([1.0, -0.0, 2.0])
    assert ti.mismatches(a, t.tensor([1.0, 0.0, 2.0])) == 1  # -0.0 and 0.0 differ in bits
    with pytest.raises(ValueError, match="cannot compare bits"):
        ti.mismatches(a, a.half())


def test_check_catches_unwritten_and_wrong_outputs():
    t = _torch()
    from benchmarks import measure, torch_impls as ti

    c = cases.Case(K["softmax_fp16"], cases.Shape((6, 576)))
    inputs = ti.make_inputs(c, "cpu", t.Generator().manual_seed(5))
    refs = ti.reference(c.kernel, inputs)
    eager = ti.eager(c.kernel)

    def skips_last_row(i, o, s):
        o[0][:-1] = eager([i[0][:-1]], s)[0]
        return tuple(o)

    outs, poisoned = measure.run_checked(_cpu_impl("t", skips_last_row, allocates=False), c, inputs, {}, "cpu")
    assert poisoned and t.isnan(outs[0][-1].float()).all()
    bad = measure.check(c, outs, refs, poisoned)
    assert not bad["ok"] and math.isnan(bad["errors"]["Y"])
    outs, _ = measure.run_checked(_cpu_impl("t", lambda i, o, s: eager(i, s)), c, inputs, {}, "cpu")
    fine = measure.check(c, outs, refs, True)
    assert fine["ok"] and 0 < fine["errors"]["Y"] < 2e-3
    wrong_shape = measure.check(c, (outs[0][:3],), refs, True)
    assert not wrong_shape["ok"] and "expected torch.float16 (6, 576)" in wrong_shape["note"]


def test_bitwise_names_the_matching_rounding_variant():
    t = _torch()
    from benchmarks import measure, torch_impls as ti

    c = cases.Case(K["quant_row_fp8"], cases.Shape((64, 7168)))
    inputs = ti.make_inputs(c, "cpu", t.Generator().manual_seed(11))
    variants = ti.bit_variants(c.kernel, inputs)
    exact = measure.bitwise(c, tuple(ti.quant_row(inputs[0])), variants)
    assert exact["Q"]["mismatches"] == 0 and exact["Q"]["variant"] == "x / s" and exact["S"]["mismatches"] == 0
    by_reciprocal = tuple(ti.quant_row(inputs[0], "x * (448/amax)"))
    found = measure.bitwise(c, by_reciprocal, variants)
    assert found["Q"]["variant"] == "x * (448/amax)"
    assert found["Q"]["by_variant"]["x * (448/amax)"] == 0
    assert found["Q"]["mismatches"] == found["Q"]["by_variant"]["x / s"]


def test_batch_invariance_flags_row_dependence():
    t = _torch()
    from benchmarks import measure, torch_impls as ti

    c = cases.Case(K["row_sum_fp32"], cases.Shape((50, 576)))
    inputs = ti.make_inputs(c, "cpu", t.Generator().manual_seed(2))
    eager = ti.eager(c.kernel)
    honest = _cpu_impl("t", lambda i, o, s: eager(i, s))
    full, _ = measure.run_checked(honest, c, inputs, {}, "cpu")
    assert measure.batch_invariance(honest, c, inputs, {}, full, "cpu") == {"ok": True, "detail": "M = 1, 37 vs 50"}

    def depends_on_batch(i, o, s):
        return (i[0].sum(dim=-1) + (1e-3 if i[0].shape[0] < 50 else 0.0),)

    found = measure.batch_invariance(_cpu_impl("t", depends_on_batch), c, inputs, {}, full, "cpu")
    assert found == {"ok": False, "detail": "Y: 1 of 1 rows differ at M=1; Y: 37 of 37 rows differ at M=37"}

    def static_rows(i, o, s):
        raise RuntimeError("dim 0 must be 50")

    assert measure.batch_invariance(_cpu_impl("t", static_rows), c, inputs, {}, full, "cpu")["ok"] is None


def test_sweep_parameters_parse_into_every_combination():
    import argparse

    from benchmarks import sweep_rows

    assert sweep_rows.parse_param("block_rows=8,16") == ("block_rows", (8, 16))
    assert sweep_rows.parse_param("hold=bfloat16,none") == ("hold", ("bfloat16", None))
    for bad in ("block_rows", "=8", "block_rows=", "block_rows=8,,16", "2x=1"):
        with pytest.raises(argparse.ArgumentTypeError, match="NAME=V1,V2"):
            sweep_rows.parse_param(bad)
    variants = sweep_rows.variants_of({"max_chunks": (2, 4), "min_blocks": (None, 3)})
    assert [sweep_rows.label(v) for v in variants] == [
        "max_chunks2_min_blocksnone", "max_chunks2_min_blocks3", "max_chunks4_min_blocksnone", "max_chunks4_min_blocks3"]
    assert dict(variants[1]) == {"max_chunks": 2, "min_blocks": 3}
