"""Every example once at a small shape, then the tensor-core GEMMs whose synchronization the compiler plans
(TMA loads on mbarriers, warp specialization, the persistent schedule, TMA stores out of slab buffers), for
compute-sanitizer (memcheck, racecheck):

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 python test/gpu/sanitize_examples.py
    compute-sanitizer --tool racecheck --error-exitcode 1 python test/gpu/sanitize_examples.py

(`--report-api-errors no`: torch and cuda-python probe driver entry points with
cuGetProcAddress, which fail harmlessly and would otherwise count as errors.)
On the H200 (2026-11-29), the examples alone: memcheck 0 errors, racecheck 0 hazards (the GEMMs not run yet).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from example_cases import CASES  # noqa: E402
from mma_cases import mma_kernel  # noqa: E402
from test_examples_gpu import check_example  # noqa: E402
from test_gemm_mma_gpu import run  # noqa: E402

# name: (M, N, K, epilogue, out dtype, error bound); each case's N and K are its static ones
SYNCHRONIZED_GEMMS = {
    "tma_wgmma_bf16_bias_relu": (300, 640, 384, True, "bfloat16", 1e-2),  # TMA in, slab epilogue out
    "ws_persistent_bf16_128x128x64_ragged": (300, 1000, 1000, False, "float32", 1e-4),
    "ws_persistent_bf16_128x128x64_staged_ragged": (300, 1000, 1000, False, "bfloat16", 1e-2),
}


def main() -> int:
    for case in CASES:
        small = min(r for r in case.rows if r > 1)
        check_example(case, (min(small, 64) if case.n else 5003,))
        print(f"ran {case.name}", flush=True)
    for name, (m, n, k, epilogue, out_dtype, bound) in SYNCHRONIZED_GEMMS.items():
        error = run(mma_kernel(name), m, n, k, False, False, "bfloat16", out_dtype, epilogue=epilogue)
        assert error <= bound, f"{name}: relative error {error:.3g} > {bound}"
        print(f"ran {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
