"""Issue 6's statistics: guards and vector accesses of every library kernel at its benchmark shapes.

    python3 -m benchmarks.guard_statistics

Runs the compiler's pipeline (tilemlir.pipeline) on each kernel's frontend IR
and prints, per kernel and shape, the guards insert-guards placed, how many
eliminate-guards proved, folded, kept or kept because a query ran out of
the prover's budget, the accesses vectorize made 16/8/4/2 bytes wide, and
vectorize's queries that ran out of the budget.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.build_artifacts import REGISTRY, factory_for
from benchmarks.cases import select_cases

COLUMNS = [("insert-guards", "guards-inserted"), ("eliminate-guards", "guards-proved"),
           ("eliminate-guards", "guards-folded"), ("eliminate-guards", "guards-kept"),
           ("eliminate-guards", "guards-resource-out"), ("eliminate-guards", "loops-versioned"),
           ("eliminate-guards", "loops-range-versioned"), ("eliminate-guards", "loops-split"), ("vectorize", "vectorized-16B"), ("vectorize", "vectorized-8B"),
           ("vectorize", "vectorized-4B"), ("vectorize", "vectorized-2B"), ("vectorize", "runs-scalar"),
           ("vectorize", "prover-resource-outs")]


def statistics(kernel_fn) -> dict:
    from tilemlir.pass_infra.runner import PipelineReport, run_pipeline
    from tilemlir.pipeline import passes_until

    module = kernel_fn.frontend().module()
    report = PipelineReport()
    with module.context:
        run_pipeline(module, passes_until("final"), report=report)
    return {(p, c): stat.value for p, counters in report.statistics.items() for c, stat in counters.items()}


def main() -> int:
    print("| kernel | " + " | ".join(c for _, c in COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for case in select_cases():
        entry = REGISTRY[case.kernel.name]
        factory = factory_for(entry)
        stats = statistics(factory.instantiate(**entry.kwargs(case.shape)))
        print(f"| {case.id} | " + " | ".join(str(stats.get(key, 0)) for key in COLUMNS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
