"""Export every GPU test case's kernel into test/gpu/artifacts/<case>/ (run where the compiler is installed).

    python test/gpu/build_artifacts.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from example_cases import ARTIFACTS, CASES, INDEX_WIDTH_CASES, PIPELINE_CASES, kernel_for  # noqa: E402


def main() -> int:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    for case in (*CASES, *INDEX_WIDTH_CASES, *PIPELINE_CASES):
        kernel_for(case).export(ARTIFACTS / case.name)
        print(f"exported {case.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
