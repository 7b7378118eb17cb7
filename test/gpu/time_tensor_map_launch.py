"""Host cost of tensor-map parameters: launches of test_tensor_map_gpu.py's TMA kernel, timed.

    PYTHONPATH=$PWD python3 test/gpu/time_tensor_map_launch.py [--calls 20000]

Rows (host microseconds per call, the better of two loops, after warm-up):
    hit, 1 tensor        kernel(x, ...) on the same tensor: the fast path, the map from its cache
    hit, 8 tensors       round robin over 8 tensors: every map still cached (the C plan keeps 8)
    miss, 9 tensors      round robin over 9: the C plan re-encodes each call (the Python caches keep 16)
    encode alone         TensorMapCache.get with a new key each call: arguments + cuTensorMapEncodeTiled
                         through ctypes (the general path's and the Python fast path's miss)
The path line says which fast path served (NativeCall: the C plan; FastCall: Python).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from test_tensor_map_gpu import BOX_BYTES, TMA_BOX, tma_signature  # noqa: E402
from tilemlir.runtime import build  # noqa: E402


def per_call_us(loop, calls: int) -> float:
    best = float("inf")
    for _ in range(2):
        torch.cuda.synchronize()
        start = time.perf_counter()
        loop(calls)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return 1e6 * best / calls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    calls = parser.parse_args().calls
    kernel = build(TMA_BOX, tma_signature())
    raw = torch.zeros(BOX_BYTES, dtype=torch.uint8, device="cuda")
    status = torch.zeros(1, dtype=torch.int32, device="cuda")
    tensors = [torch.randint(-2**15, 2**15, (256, 256), dtype=torch.int16, device="cuda") for _ in range(9)]
    for x in tensors * 30:  # warm-up: the module, the fast path, the caches
        kernel(x, raw, status, 0, 0)

    def round_robin(count: int):
        group = tensors[:count]

        def loop(n: int):
            for i in range(n):
                kernel(group[i % count], raw, status, 0, 0)

        return loop

    print(f"path: {type(kernel._fast).__name__}")
    print("| case | us per call |\n|---|---|")
    for name, count in (("hit, 1 tensor", 1), ("hit, 8 tensors", 8), ("miss, 9 tensors", 9)):
        print(f"| {name} | {per_call_us(round_robin(count), calls):.2f} |")
    cache = kernel.map_caches()[0]
    base = tensors[0].data_ptr()
    keys = iter(range(1, 10**9))

    def encode(n: int):
        for _ in range(n):
            cache.get(base, (next(keys), 256))  # a new shape: a miss (nothing is launched)

    print(f"| encode alone | {per_call_us(encode, min(calls, 5000)):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
