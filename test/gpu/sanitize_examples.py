"""Every example once at a small shape, for compute-sanitizer (memcheck, racecheck):

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 python test/gpu/sanitize_examples.py
    compute-sanitizer --tool racecheck --error-exitcode 1 python test/gpu/sanitize_examples.py

(`--report-api-errors no`: torch and cuda-python probe driver entry points with
cuGetProcAddress, which fail harmlessly and would otherwise count as errors.)
On the H200 (2026-11-29): memcheck 0 errors, racecheck 0 hazards.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from example_cases import CASES  # noqa: E402
from test_examples_gpu import check_example  # noqa: E402


def main() -> int:
    for case in CASES:
        small = min(r for r in case.rows if r > 1)
        check_example(case, (min(small, 64) if case.n else 5003,))
        print(f"ran {case.name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
