"""Concurrency fuzzer (issue 14): eight kernels drawn from a seed (library kernels at random row widths and
dtypes) compile from eight threads at once, for a few rounds, to the CUDA each gives when compiled alone.

Each campaign runs in a fresh process with the disk caches off, so every compile runs the frontend, every pass,
Z3 and the emitter (not NVRTC: test_reproducible_builds compiles through NVRTC on threads), and a crash fails
the campaign's seed instead of killing the test session. The threads start together at a barrier.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fuzz_support import compile_to_cuda_source, fuzz_seeds

HERE = Path(__file__).resolve().parent
THREADS = 8
ROUNDS = 2

# factory (module, name) -> keyword choices; N is drawn separately.
FACTORIES = {
    ("softmax", "softmax"): {"dtype": ["float16", "float32", "bfloat16"]},
    ("norm", "rmsnorm"): {"dtype": ["bfloat16", "float16"]},
    ("norm", "add_layernorm"): {"dtype": ["bfloat16"]},
    ("quant", "quant_row_fp8"): {"dtype": ["bfloat16", "float16"]},
    ("quant", "quant_block_fp8"): {"dtype": ["bfloat16"]},
    ("reduce", "row_sum"): {},
    ("reduce", "row_max"): {},
    ("activation", "silu_mul"): {"dtype": ["bfloat16"]},
}


def draw_kernels(seed: int) -> list[dict]:
    rng = random.Random(seed)
    chosen, seen = [], set()
    while len(chosen) < THREADS:
        module, name = rng.choice(sorted(FACTORIES))
        kwargs = {key: rng.choice(values) for key, values in FACTORIES[(module, name)].items()}
        kwargs["N"] = rng.choice([rng.randint(1, 300), rng.randint(300, 5000)])
        key = json.dumps([module, name, kwargs], sort_keys=True)
        if key not in seen:
            seen.add(key)
            chosen.append({"module": module, "name": name, "kwargs": kwargs})
    return chosen


@pytest.mark.parametrize("seed", fuzz_seeds("concurrency", 1))
def test_eight_threads_compile_the_cuda_of_one(seed):
    env = {**os.environ, "TILEMLIR_DISABLE_CACHE": "1",
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", f"import test_fuzz_concurrency as t; t.campaign({seed})"],
                            cwd=HERE, env=env, capture_output=True, text=True, timeout=600)
    kernels = draw_kernels(seed)
    assert result.returncode == 0, f"seed {seed}: {kernels}\nexit status {result.returncode}\n{result.stderr[-4000:]}"
    report = json.loads(result.stdout.splitlines()[-1])
    serial = report["serial"]
    assert len(set(serial)) == THREADS, f"seed {seed}: the kernels are not all different"
    for round_, got in enumerate(report["rounds"]):
        assert sorted(got) == [str(i) for i in range(THREADS)], (seed, round_, sorted(got))
        for index, cuda in got.items():
            assert cuda == serial[int(index)], \
                f"seed {seed}, round {round_}: {kernels[int(index)]} differs on a thread:\n{cuda[:2000]}"


def _jitted(spec: dict):
    import importlib

    factory = getattr(importlib.import_module(f"tilemlir.kernels.{spec['module']}"), spec["name"])
    return factory.instantiate(**spec["kwargs"])


def _fresh_cuda(spec: dict) -> str:
    import tilemlir

    kernel = _jitted(spec)
    fresh = tilemlir.api.JitFunction(kernel.fn, kernel.out_idx, kernel.target, kernel.options)  # no frontend reuse
    return compile_to_cuda_source(fresh)


def campaign(seed: int) -> None:
    """Compile the seed's kernels one after another, then ROUNDS times from THREADS threads at once; print
    {"serial": [cuda, ...], "rounds": [{index: cuda}, ...]} as the last line."""
    specs = draw_kernels(seed)
    serial = [_fresh_cuda(spec) for spec in specs]
    rounds = []
    for _ in range(ROUNDS):
        got, errors = {}, []
        barrier = threading.Barrier(len(specs))

        def work(index: int) -> None:
            barrier.wait()
            try:
                got[str(index)] = _fresh_cuda(specs[index])
            except BaseException as exc:  # noqa: BLE001 - reported below, with the kernel
                errors.append(f"{specs[index]}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(specs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise SystemExit("\n".join(errors))
        rounds.append(got)
    print(json.dumps({"serial": serial, "rounds": rounds}))
