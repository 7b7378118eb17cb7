"""The compilation pipeline: tile-level IR to the thread-level IR the CUDA emitter prints.

One flat list per stage, one pass per line, each with why it stands where
it does. `tilemlir.driver` runs these; `tile-opt -p` runs any of them alone.
"""

from __future__ import annotations


def thread_pipeline() -> list[str]:
    """Tile level -> thread level (the `thread` stage)."""
    return [
        # First: which gemms run on tensor cores decides both how the others are lowered and which
        # fragments take the mma.sync layouts.
        "select-mma",
        # Before layouts: a gemm without tile.mma becomes a tile.parallel over its accumulator, which
        # infer-layouts must see.
        "lower-gemm-simt",
        # Then: every later decision (vector width, shuffle pattern, register count)
        # depends on which thread holds which fragment element.
        "infer-layouts",
        # Swizzles on the shared tiles tensor-core gemms read (their rings keep them), before plan-pipeline.
        "select-shared-layouts",
        # T.Pipelined(num_stages > 1): rings of shared tiles, prologue, commit/wait groups and one barrier per
        # iteration; before lower-tile-ops, which marks the ring copies' stores asynchronous, and
        # partition-threads, whose barrier planner leaves the rings to that one barrier.
        "plan-pipeline",
        # Copies, fills and reductions become element loops, warp shuffles and shared
        # exchanges while fragments are still whole tiles, so they can follow the layouts.
        "lower-tile-ops",
        # Only now do fragments become per-thread registers and tile.kernel a gpu.launch;
        # barriers are placed here because only here is shared-memory traffic explicit.
        "partition-threads",
        # Needs C as a register array with its layout, which only partition-threads makes.
        "lower-gemm-mma",
    ]


def final_pipeline() -> list[str]:
    """Thread level -> what the emitter sees (the `final` stage)."""
    return [
        # Every global access that might leave its tensor gets a guard, before any
        # rewrite could hide the index arithmetic the prover needs.
        "insert-guards",
        # Z3 removes the guards it proves redundant (and splits loops into an unguarded
        # interior and a guarded tail); must precede vectorize, which needs guard-free runs.
        "eliminate-guards",
        # 16-byte vector accesses where Z3 proves alignment and in-bounds for the whole vector.
        "vectorize",
        # Upstream clean-up of the index arithmetic the passes above left behind.
        "canonicalize",
        "cse",
        # A ring copy's shared stores of a global vector load become one cp.async (a guard becomes its zero
        # fill): after vectorize made the vectors and cse made each lane's index one value, before the next
        # canonicalize merges the guards' branches.
        "async-copies",
        # Swizzled shared buffers' logical indices become physical, once every access (the cp.async
        # above included) is in its final form; the clean-ups below fold the index arithmetic.
        "materialize-shared-layouts",
        # Offsets in the one dynamic shared buffer, by liveness, once no pass adds a shared buffer.
        "plan-shared-memory",
        # Again, now that cse has made the copies' identical row checks one value: scf.if's
        # canonicalization merges adjacent ifs on the same condition, so the loads of
        # consecutive copies share one branch region and all issue before their data is used.
        "canonicalize",
        # The merged branches repeat each copy's index arithmetic; one more cse keeps one copy.
        "cse",
    ]


STAGE_PIPELINES = {
    "frontend": [],
    "thread": thread_pipeline(),
    "final": final_pipeline(),
}

STAGES = tuple(STAGE_PIPELINES)


def passes_until(stage: str) -> list[str]:
    """Every pass from the frontend IR up to and including `stage`."""
    passes: list[str] = []
    for name in STAGES:
        passes += STAGE_PIPELINES[name]
        if name == stage:
            return passes
    raise KeyError(stage)
