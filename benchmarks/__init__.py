"""Issue 8's benchmarks (not part of the tilemlir package).

cases.py (what is measured), report.py and sass.py (numbers, tables, cuobjdump
parsing; pure Python), torch_impls.py / triton_impls.py / tilelang_impls.py
(the peers), ours.py (our precompiled artifacts), measure.py (checks and
timing), and the entry points bench_memory_bound.py (GPU machine),
build_artifacts.py, compile_time.py and codegen_baseline.py (here; its
codegen_baseline.json is checked by test/python/test_codegen_baseline.py),
run_on_h200.sh. RESULTS.md holds the method and the numbers.

Issue 16's GEMM: gemm_cases.py and gemm_report.py (shapes, bounds, tables; pure
Python), triton_gemm.py / tilelang_gemm.py (the peers), build_gemm_artifacts.py
(here) and bench_gemm.py (GPU machine). README.md says how to run everything on
the H200, the GPU tests included.
"""
