#!/bin/bash
# The benchmarks and GPU tests on the H200, run from the repository root by the device tool. The first
# argument picks what runs; the rest go to its Python command.
#
#   bash benchmarks/run_on_h200.sh [memory] [ARGS]   issue 8: bench_memory_bound.py (the default mode)
#       carry=[".whl", "benchmarks/artifacts"]; ARGS e.g. --kernels softmax --quick
#   bash benchmarks/run_on_h200.sh gemm [ARGS]       issue 16: mma_ceiling.py, then bench_gemm.py
#       carry=[".whl", "benchmarks/artifacts_gemm"]; ARGS e.g. --dtypes bf16 --shapes 4096^3
#   bash benchmarks/run_on_h200.sh fp8 [ARGS]        issue 20: test/gpu/test_fp8_gemm_gpu.py, then bench_fp8_gemm.py
#       carry=["test/gpu/artifacts", "benchmarks/artifacts_fp8_gemm"]; ARGS go to the bench, e.g. --quick
#   bash benchmarks/run_on_h200.sh attention [ARGS]  issue 19: bench_attention.py (ours vs SDPA cuDNN / flash)
#       carry=["benchmarks/artifacts_attention"]; ARGS e.g. --shapes 4x32x4096x128 --quick
#   bash benchmarks/run_on_h200.sh tests [ARGS]      pytest test/gpu and the runtime fast-path tests
#       carry=["test/gpu/artifacts"]; ARGS e.g. -k gemm
#   bash benchmarks/run_on_h200.sh sanitize          compute-sanitizer memcheck and racecheck over
#       carry=["test/gpu/artifacts"]                 test/gpu/sanitize_examples.py
#
# benchmarks/README.md says how to build what each mode carries.
#
# .whl/tilelang-bundle.tar.xz (tools/pack_tilelang.sh) brings TileLang 0.1.15; without it TileLang is left out.
# The artifact directories hold our precompiled kernels (the machine has no MLIR): benchmarks/build_artifacts.py,
# benchmarks/build_gemm_artifacts.py, test/gpu/build_artifacts.py build them here.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/bench_out}
mkdir -p "$OUT"
MODE=memory
case "${1:-}" in
  memory|gemm|fp8|attention|tests|sanitize) MODE=$1; shift ;;
esac
[ -z "${CUDA_HOME:-}" ] && [ -d /usr/local/cuda ] && export CUDA_HOME=/usr/local/cuda
[ -n "${CUDA_HOME:-}" ] && export PATH="$CUDA_HOME/bin:$PATH"
export PYTHONPATH=$PWD
NO_TILELANG=()
unpack_tilelang() {
  if [ -f .whl/tilelang-bundle.tar.xz ]; then
    mkdir -p /tmp/site && tar xJf .whl/tilelang-bundle.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site:$PWD
  else
    echo "no .whl/tilelang-bundle.tar.xz (carry .whl): TileLang left out"
    NO_TILELANG=(--no-tilelang)
  fi
}
artifacts_of() {  # directory, the command that builds it here
  if [ -d "$1" ]; then
    local commit; commit=$(cat "$1/SOURCE_COMMIT" 2>/dev/null || echo "an unrecorded commit")
    echo "$1: $(find "$1" -name signature.json | wc -l) artifacts, built from $commit"
  else
    echo "no $1 (build it here with '$2' and carry it): our kernels will be missing"
  fi
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv

case $MODE in
  memory)
    unpack_tilelang
    artifacts_of benchmarks/artifacts "python3 -m benchmarks.build_artifacts --clean"
    python3 -m benchmarks.bench_memory_bound "${NO_TILELANG[@]}" --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.log"
    ;;
  gemm)
    unpack_tilelang
    artifacts_of benchmarks/artifacts_gemm "python3 -m benchmarks.build_gemm_artifacts --clean"
    echo "== mma.sync ceiling (benchmarks/mma_ceiling.py) =="
    timeout 180 python3 -m benchmarks.mma_ceiling 2>&1 | tee "$OUT/mma_ceiling.md"
    echo "mma_ceiling exit status ${PIPESTATUS[0]}"
    # the device tool stops a command at 600 s: leave the GEMM bench what is left, less a margin for its last case
    BUDGET=$(( 540 - SECONDS ))
    [ "$BUDGET" -lt 60 ] && BUDGET=60
    echo "== GEMM benchmark (benchmarks/bench_gemm.py), --budget-s $BUDGET =="
    python3 -m benchmarks.bench_gemm "${NO_TILELANG[@]}" --budget-s "$BUDGET" --out "$OUT" "$@" 2>&1 \
      | tee "$OUT/bench_gemm.log"
    ;;
  fp8)
    artifacts_of test/gpu/artifacts "python3 test/gpu/build_artifacts.py"
    artifacts_of benchmarks/artifacts_fp8_gemm "python3 -m benchmarks.build_fp8_gemm_artifacts"
    timeout 240 python3 -m pytest -q -p no:cacheprovider -rs test/gpu/test_fp8_gemm_gpu.py 2>&1 | tee "$OUT/test_fp8_gpu.log"
    BUDGET=$(( 500 - SECONDS ))
    [ "$BUDGET" -lt 60 ] && BUDGET=60
    echo "== fp8 GEMM benchmark (benchmarks/bench_fp8_gemm.py), --budget-s $BUDGET =="
    python3 -m benchmarks.bench_fp8_gemm --budget-s "$BUDGET" --out "$OUT" "$@" 2>&1 | tee "$OUT/bench_fp8_gemm.log"
    ;;
  attention)
    artifacts_of benchmarks/artifacts_attention "python3 -m benchmarks.build_attention_artifacts --clean"
    python3 -m benchmarks.bench_attention --out "$OUT" "$@" 2>&1 | tee "$OUT/bench_attention.log"
    ;;
  tests)
    if ! python3 -c "import pytest" 2>/dev/null; then
      echo "no pytest on this machine: carry its wheels in .whl (pytest, pluggy, iniconfig, packaging)"; exit 2
    fi
    artifacts_of test/gpu/artifacts "python3 test/gpu/build_artifacts.py"
    python3 -m pytest -q -p no:cacheprovider -rs test/gpu test/python/test_runtime_fastpath_torch.py "$@" 2>&1 \
      | tee "$OUT/test_gpu.log"
    ;;
  sanitize)
    artifacts_of test/gpu/artifacts "python3 test/gpu/build_artifacts.py"
    for tool in memcheck racecheck; do
      echo "== compute-sanitizer --tool $tool =="
      extra=(); [ $tool = memcheck ] && extra=(--report-api-errors no)
      compute-sanitizer --tool $tool "${extra[@]}" --error-exitcode 1 python3 test/gpu/sanitize_examples.py 2>&1 \
        | tee "$OUT/sanitize_$tool.log" | tail -25
      echo "$tool exit status ${PIPESTATUS[0]}"
    done
    ;;
esac
