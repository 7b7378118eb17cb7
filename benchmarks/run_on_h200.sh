#!/bin/bash
# The one command of issue 8's benchmark on the H200, run from the repository root by the device tool:
#   run(command="bash benchmarks/run_on_h200.sh", carry=[".whl", "benchmarks/artifacts"], timeout_s=600)
# Extra arguments go to bench_memory_bound.py (e.g. --kernels softmax --quick).
# .whl/tilelang-bundle.tar.xz (tools/pack_tilelang.sh) brings TileLang 0.1.15; without it TileLang is left out.
# benchmarks/artifacts holds our precompiled kernels (benchmarks/build_artifacts.py); the machine has no MLIR.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/bench_out}
mkdir -p "$OUT"
[ -z "${CUDA_HOME:-}" ] && [ -d /usr/local/cuda ] && export CUDA_HOME=/usr/local/cuda
[ -n "${CUDA_HOME:-}" ] && export PATH="$CUDA_HOME/bin:$PATH"
EXTRA=()
if [ -f .whl/tilelang-bundle.tar.xz ]; then
  mkdir -p /tmp/site && tar xJf .whl/tilelang-bundle.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site:$PWD
else
  echo "no .whl/tilelang-bundle.tar.xz (carry .whl): TileLang left out"
  EXTRA=(--no-tilelang)
  export PYTHONPATH=$PWD
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
echo "artifacts: $(ls benchmarks/artifacts 2>/dev/null | wc -l) directories"
python3 -m benchmarks.bench_memory_bound "${EXTRA[@]}" --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.log"
