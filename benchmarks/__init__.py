"""Issue 8's benchmarks (not part of the tilemlir package).

cases.py (what is measured), report.py and sass.py (numbers, tables, cuobjdump
parsing; pure Python), torch_impls.py / triton_impls.py / tilelang_impls.py
(the peers), ours.py (our precompiled artifacts), measure.py (checks and
timing), and the entry points bench_memory_bound.py (GPU machine),
build_artifacts.py, compile_time.py and codegen_baseline.py (here; its
codegen_baseline.json is checked by test/python/test_codegen_baseline.py),
run_on_h200.sh. RESULTS.md holds the method and the numbers.
"""
