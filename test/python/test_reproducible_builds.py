"""Reproducible builds (issue 14): the CUDA of a kernel depends on the kernel, its options, the arch,
the compiler and the prover's budget, never on the machine's load, on what the process compiled
before, or on other threads compiling at the same time.

Every compile runs in a subprocess with the disk caches off, so each one really runs the frontend,
the passes, Z3 and NVRTC, and a crash shows as a failed test, not a dead test session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tilemlir.config import DEFAULT_PROVER_RLIMIT

REPO = Path(__file__).resolve().parents[2]

# Benchmark cases of benchmarks/build_artifacts.py, one per kind of kernel (its other factories are
# variants of these: mul of add, row_max of row_sum, add_rmsnorm of rmsnorm and add_layernorm), at
# shapes with partial rows (so guards and vector accesses depend on proofs). All 13 kernels would
# take half as long again, and this test is the slowest of the suite already.
CASES = [
    ("add_fp32", "268435456"), ("cast_bf16_fp8", "268435456"), ("softmax_fp16", "4001x7168"),
    ("rmsnorm_bf16", "8001x576"), ("add_layernorm_bf16", "8001x576"), ("row_sum_fp32", "4001x7168"),
    ("quant_row_fp8", "4001x7168"), ("quant_block_fp8", "8001x576"), ("silu_mul_bf16", "8001x576"),
]
# About half of these kernels' queries need more than this (the most needs under 1,000).
TINY_BUDGET = 300

_PRELUDE = """
import json, os, sys, threading
sys.path.insert(0, os.getcwd())
from benchmarks.build_artifacts import REGISTRY, factory_for
from benchmarks.cases import parse_shape
import tilemlir

def kernel_function(name, shape):
    entry = REGISTRY[name]
    return factory_for(entry).instantiate(**entry.kwargs(parse_shape(shape)))

def cuda(kernel):
    # a new JitFunction each time: nothing of an earlier compile is reused but the prover's cache
    fresh = tilemlir.api.JitFunction(kernel.fn, kernel.out_idx, kernel.target, kernel.options)
    return fresh.compile("cuda", use_cache=False).cuda_source()
"""

# argv: cases (JSON), budgets (JSON, in compile order). Prints {budget: {case: CUDA}}.
_COMPILE_AT_BUDGETS = _PRELUDE + """
result = {}
for budget in json.loads(sys.argv[2]):
    os.environ["TILEMLIR_PROVER_RLIMIT"] = str(budget)
    result[budget] = {name: cuda(kernel_function(name, shape)) for name, shape in json.loads(sys.argv[1])}
print(json.dumps(result))
"""

# argv: cases (JSON), rounds. Prints the serial CUDA and, per round, what each of the threads got.
_COMPILE_ON_THREADS = _PRELUDE + """
cases = json.loads(sys.argv[1])
functions = [kernel_function(name, shape) for name, shape in cases]
serial = [cuda(fn) for fn in functions]
rounds = []
for round_ in range(int(sys.argv[2])):
    got = [None] * len(functions)

    def work(i):
        index = (i + round_) % len(functions)
        try:
            got[i] = [index, cuda(functions[index])]
        except Exception as exc:
            got[i] = [index, f"{type(exc).__name__}: {exc}"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(functions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rounds.append(got)
print(json.dumps({"serial": serial, "rounds": rounds}))
"""


def _environment() -> dict:
    env = {**os.environ, "TILEMLIR_DISABLE_CACHE": "1", "PYTHONPATH": str(REPO)}
    env.pop("TILEMLIR_PROVER_RLIMIT", None)
    return env


def _start(script: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, *args], cwd=REPO, env=_environment(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(process: subprocess.Popen):
    stdout, stderr = process.communicate(timeout=900)
    assert process.returncode == 0, f"exit status {process.returncode}:\n{stderr[-4000:]}"
    return json.loads(stdout)


class _CpuLoad:
    """One busy-looping process per core for as long as the `with` block runs."""

    def __enter__(self):
        self.spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                         for _ in range(min(os.cpu_count() or 2, 16))]
        return self

    def __exit__(self, *exc):
        for spinner in self.spinners:
            spinner.kill()
            spinner.wait()


def _vector_accesses(cuda: str) -> int:
    return cuda.count("*reinterpret_cast<")  # `*reinterpret_cast<const bf16x8*>(&X[...])`


def test_cuda_is_the_same_in_every_process_under_load_at_a_tiny_and_at_the_default_budget():
    cases = json.dumps(CASES)
    budgets = [DEFAULT_PROVER_RLIMIT, TINY_BUDGET]
    idle = _result(_start(_COMPILE_AT_BUDGETS, cases, json.dumps(budgets)))
    with _CpuLoad():
        # The other order first: a prover cache that ignored the budget would answer the second
        # budget's queries with the first one's verdicts.
        loaded = [_start(_COMPILE_AT_BUDGETS, cases, json.dumps(order)) for order in (budgets[::-1], [TINY_BUDGET])]
        results = [_result(process) for process in loaded]
    for result in results:
        for budget in result:
            for name, _ in CASES:
                assert result[budget][name] == idle[budget][name], f"{name} at rlimit {budget}"
    # The tiny budget is tiny: proofs run out, and kernels lose vector accesses (or keep guards).
    tiny, default = idle[str(TINY_BUDGET)], idle[str(DEFAULT_PROVER_RLIMIT)]
    changed = [name for name, _ in CASES if tiny[name] != default[name]]
    assert len(changed) >= len(CASES) // 2, changed
    assert sum(map(_vector_accesses, tiny.values())) < sum(map(_vector_accesses, default.values()))


def test_compiling_on_eight_threads_gives_the_serial_cuda():
    # Before contexts were made under a lock and each prover had its own Z3 context, this
    # process died (SIGSEGV or SIGBUS, or Z3 aborted) in every one of our runs.
    rounds, eight = 5, CASES[1:]
    result = _result(_start(_COMPILE_ON_THREADS, json.dumps(eight), str(rounds)))
    serial = result["serial"]
    assert len(set(serial)) == len(eight)  # eight different kernels
    assert len(result["rounds"]) == rounds
    for round_, got in enumerate(result["rounds"]):
        assert sorted(index for index, _ in got) == list(range(len(eight)))
        for index, cuda in got:
            assert cuda == serial[index], f"round {round_}, {eight[index][0]}: {cuda[:300]}"
