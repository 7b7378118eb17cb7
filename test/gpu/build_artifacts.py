"""Export every GPU test case's kernel into test/gpu/artifacts/<case>/ (run where the compiler is installed).

    python test/gpu/build_artifacts.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from example_cases import ARTIFACTS, CASES, GEMM_CASES, INDEX_WIDTH_CASES, PIPELINE_CASES, kernel_for  # noqa: E402
from mma_cases import GEMM_EXAMPLE, MMA_CASES, compile_case  # noqa: E402


def main() -> int:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    for case in (*CASES, *GEMM_CASES, *INDEX_WIDTH_CASES, *PIPELINE_CASES, GEMM_EXAMPLE):
        kernel_for(case).export(ARTIFACTS / case.name)
        print(f"exported {case.name}")
    for name in MMA_CASES:
        compile_case(name).export(ARTIFACTS / name)
        print(f"exported {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
