"""The block-scaled fp8 GEMM benchmark of issue 20 (benchmarks/bench_fp8_gemm.py and its modules) without a GPU:
its shapes and artifact names, argument parsing, the table from fake results, and a missing artifact's message."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_fp8_gemm, fp8_gemm_cases  # noqa: E402
from benchmarks.ours import Missing  # noqa: E402


def test_default_shapes_are_issue_20s_weights_at_three_row_counts():
    shapes = fp8_gemm_cases.select_shapes(None)
    assert [(s.n, s.k) for s in shapes[::3]] == [(7168, 2048), (2112, 7168), (24576, 1536), (7168, 16384),
                                                  (4096, 7168)]
    assert {s.m for s in shapes} == {4096, 4095, 128} and len(shapes) == 15
    assert fp8_gemm_cases.artifact_id(2112, 7168) == "fp8_gemm_n2112_k7168"


def test_k_must_be_whole_scale_groups():
    with pytest.raises(ValueError, match="4096x7168x2000: K must be a multiple of the 128-wide scale groups"):
        fp8_gemm_cases.select_shapes(["4096x7168x2000"])


def test_arguments(tmp_path):
    args = bench_fp8_gemm.parse_args(["--shapes", "129x256x384", "--out", str(tmp_path), "--seed", "3"])
    assert [s.name for s in args.shapes] == ["129x256x384"] and args.seed == 3 and args.rounds == 2


def test_markdown_states_rates_ratio_failures_and_the_peak():
    rows = [{"shape": "4096x7168x2048", "results": {
        "ours": {"error": 2e-3, "ok": True, "times_us": [100.0, 90.0], "tflops": 1334.0},
        "torch._scaled_mm (row-wise)": {"error": 2e-2, "ok": False, "times_us": [80.0], "tflops": 1500.0}}}]
    text = bench_fp8_gemm.markdown(rows, {"shape": "8192x8192x8192", "what": "w", "tflops": 1600.0})
    assert "| 4096x7168x2048 | ours | 1334 | 100.0, 90.0 | 2.00e-03 |" in text
    assert "| 2.00e-02 FAILED |" in text
    assert "| 4096x7168x2048 | ours / cuBLASLt | 0.89x | | |" in text
    assert text.endswith("fp8 peak reference: 1600 TFLOP/s (w, 8192x8192x8192)")


def test_a_missing_artifact_names_the_build_command(tmp_path):
    with pytest.raises(Missing, match="run python3 -m benchmarks.build_fp8_gemm_artifacts"):
        bench_fp8_gemm.load_ours(tmp_path, 7168, 2048)
