"""The compilation pipelines: tile-level IR to the thread-level IR the CUDA emitter prints, and the CPU
backend's roads to LLVM.

One flat list per stage, one pass per line, each with why it stands where
it does. `tilemlir.driver` and the CPU backend run these through
`tilemlir.pass_infra.runner`; `tile-opt -p` runs any pass alone,
`tile-opt --pipeline NAME` one of `PIPELINES`, `tile-opt --stage STAGE`
every stage pipeline from the frontend IR up to STAGE. Imports nothing: the
pass infrastructure's floor (docs/layout.md), so backends can read it.
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
        # With tma=True (else a no-op): an accumulator's copy out (direct on wgmma, or a staged tile the block
        # cannot hold) goes in column slabs through two slab buffers; needs plan-pipeline's rings (their stages
        # count against the block's shared memory), before the two passes below, which mark the slabs' copies.
        "epilogue-slabs",
        # With tma=True (else a no-op): copies of a whole shared tile into a tensor argument (a staged epilogue)
        # become TMA stores; needs the tile's swizzle from select-shared-layouts, before lower-tile-ops, which
        # keeps them whole, and partition-threads, whose barrier planner sees each as every thread's read.
        "select-tma-stores",
        # On sm_90a (tensor_cores="wgmma", else a no-op): a whole accumulator copied into a 16-bit shared tile
        # is stored by stmatrix; needs the fragment's layout (infer-layouts), before lower-tile-ops keeps it whole
        # for partition-threads.
        "select-stmatrix",
        # Copies, fills and reductions become element loops, warp shuffles and shared
        # exchanges while fragments are still whole tiles, so they can follow the layouts.
        "lower-tile-ops",
        # Only now do fragments become per-thread registers and tile.kernel a gpu.launch (select-stmatrix's
        # copies stmatrix instructions of those registers); barriers are placed here because only here is
        # shared-memory traffic explicit.
        "partition-threads",
        # Needs C as a register array with its layout, which only partition-threads makes.
        "lower-gemm-mma",
        # plan-pipeline's tile.tma ring copies (kept whole by lower-tile-ops and partition-threads) become an
        # elected thread's TMA boxes on mbarriers: thread-level ops, so after partition-threads; after
        # lower-gemm-mma, whose proxy fences are for generic-proxy writers, which TMA is not.
        "tma-copies",
        # The marked stores become thread 0's boxes after a proxy fence and the planned barrier: thread-level
        # ops, so after partition-threads; after tma-copies, whose tensor maps they share; before warp-specialize,
        # which keeps them with the consumers (they are not the producer's issues).
        "tma-stores",
        # With warp_specialize=True (else a no-op): tma-copies' issues go to an added producer warpgroup, the
        # user's threads consume through full/empty mbarriers; needs tma-copies' thread-level form, before the
        # final stage's guards and shared-memory plan see the launch.
        "warp-specialize",
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
        # Last, once cse has made each ring slot `(t + c) mod S` one value: counters carried by the loop
        # instead of a remainder (and the CUDA compiler's induction registers) per iteration.
        "carry-ring-slots",
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


# The CPU backend: the tile level runs the frontend IR, the thread level the `final` stage's IR;
# both then go to LLVM through `cpu_llvm_pipeline`.


def cpu_tile_pipeline() -> list[str]:
    """Frontend (tile-level) IR -> upstream loops (`target="cpu"`, `level="tile"`: the reference)."""
    return [
        # Tiles become buffers and loops with the frontend's semantics, every on-chip access checked at run time.
        "lower-tile-to-loops",
    ]


def cpu_thread_pipeline() -> list[str]:
    """`final` stage IR -> upstream loops (`level="thread"`: checks the GPU lowering)."""
    return [
        # gpu.launch becomes loops over blocks and threads split at barriers and shuffles, race-checked.
        "simulate-threads",
    ]


def cpu_llvm_pipeline() -> list[str]:
    """Upstream loops -> the LLVM dialect llvmlite's parser reads (`backends/cpu/jit.py` translates it)."""
    return [
        # The tile.* attributes (read by the backend first) mean nothing to the LLVM conversion.
        "strip-tile-attributes",
        # Before any upstream math rewrite: math-expand-ops would split math.fma into two roundings,
        # math-extend-to-supported-types round a half-precision fma twice; the GPU rounds once.
        "fuse-fma",
        "lower-affine",
        # Narrow-float arithmetic computed in f32 and rounded back after each operation, as CUDA does.
        "func.func(arith-emulate-unsupported-floats{source-types=f16,bf16,f8E4M3FN,f8E5M2 target-type=f32})",
        "math-extend-to-supported-types",
        # Upstream has no LLVM lowering for math.isinf.
        "expand-isinf",
        # Before the vector conversion: LLVM packs <N x i1> in memory into bits, numpy bools are bytes.
        "scalarize-bool-vectors",
        # The casts the widening left, as integer code on their bits: LLVM has no fp8 and converts halves
        # differently per host. No canonicalize after the widening: it marks its casts `contract`, and
        # canonicalize would fold extf(truncf(x)) to x, skipping the rounding of each narrow-float operation.
        "expand-narrow-floats",
        "arith-expand",
        "math-expand-ops",
        "convert-math-to-funcs",
        "convert-vector-to-scf",
        "convert-scf-to-cf",
        "convert-math-to-llvm",
        "convert-math-to-libm",
        "expand-strided-metadata",
        "finalize-memref-to-llvm",
        "convert-to-llvm",
        "reconcile-unrealized-casts",
        # On the LLVM dialect: the checks' recorder stays one out-of-line function.
        "keep-out-of-line",
        # LLVM 22's loop vectorizer aborts choosing a width for loops with a float max or min.
        "keep-min-max-loops-scalar",
        # Last: llvmlite's older parser rejects the float constant forms the newer printer writes.
        "opaque-float-constants",
    ]


# Every named pipeline, for `tile-opt --pipeline NAME`.
PIPELINES = {
    "thread": thread_pipeline(),
    "final": final_pipeline(),
    "cpu-tile": cpu_tile_pipeline(),
    "cpu-thread": cpu_thread_pipeline(),
    "cpu-llvm": cpu_llvm_pipeline(),
}
