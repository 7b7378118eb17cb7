"""Export every GPU test case's kernel into test/gpu/artifacts/<case>/ (run where the compiler is installed).

    python test/gpu/build_artifacts.py            # every case (the artifacts directory is rebuilt)
    python test/gpu/build_artifacts.py NAME ...   # only these cases (the others' artifacts stay)
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from example_cases import (ARTIFACTS, CASES, DEBUG_CASES, GEMM_CASES, INDEX_WIDTH_CASES, PIPELINE_CASES,  # noqa: E402
                           RASTER_CASES, STATIC_SHAPE_CASES, kernel_for)
from mma_cases import CASE_MARKERS, FP8_GEMM_EXAMPLE, GEMM_EXAMPLE, compile_case  # noqa: E402
from attention_cases import ATTENTION_CASES  # noqa: E402


def main(names: list[str]) -> int:
    cases = (*CASES, *GEMM_CASES, *INDEX_WIDTH_CASES, *STATIC_SHAPE_CASES, *DEBUG_CASES, *PIPELINE_CASES,
             *RASTER_CASES, GEMM_EXAMPLE, FP8_GEMM_EXAMPLE, *ATTENTION_CASES)
    known = [case.name for case in cases] + list(CASE_MARKERS)
    unknown = sorted(set(names) - set(known))
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    if not names:
        shutil.rmtree(ARTIFACTS, ignore_errors=True)
    for case in cases:
        if not names or case.name in names:
            shutil.rmtree(ARTIFACTS / case.name, ignore_errors=True)
            kernel_for(case).export(ARTIFACTS / case.name)
            print(f"exported {case.name}")
    for name in CASE_MARKERS:
        if not names or name in names:
            shutil.rmtree(ARTIFACTS / name, ignore_errors=True)
            compile_case(name).export(ARTIFACTS / name)
            print(f"exported {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
