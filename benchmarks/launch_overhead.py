"""Host launch overhead of our public call path next to PyTorch eager (issue 8: <= 5 us).

Runs on the GPU machine, without MLIR:

    python3 -m benchmarks.launch_overhead [--artifact DIR | --build] [--calls 10000] [--n 1024]

The kernel is a 1-D fp32 add, C = A + B, whose output C the kernel allocates
(out_idx): from an artifact directory (default benchmarks/artifacts/add_fp32_1024),
or with --build compiled by NVRTC from the CUDA source below. After a
correctness check against a + b, each row is a loop of `calls` calls after
200 warm-up calls, timed twice; the table shows the host microseconds per
call of the better run, and with the final synchronize:

    torch eager        c = a + b
    ours               c = kernel(a, b): the public path, every argument check on (the launcher
                       line says which fast path serves it: the native call plan or Python)
    ours, no output    kernel(a, b, c) through the native call plan of the same kernel without out_idx
    ours, Python fast  the Python fast path (generated per signature, native extension launch)
    ours, ctypes       the Python fast path launching through ctypes (no C compiler or Python.h)
    ours, general      the general path alone (every call before the fast path existed)
    torch.empty        the output allocation as the fast path does it
    current stream     torch._C._cuda_getCurrentRawStream
    cuCtxGetCurrent    through ctypes
    cuLaunchKernel     through ctypes with fixed arguments
    native launch      the native extension's launch with fixed arguments: the floor of any launch from Python

The floor without Python is `benchmarks/launch_floor.cu` (nvcc -O2 -arch=sm_90a launch_floor.cu -lcuda):
loops of launches of the same add from C.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_ARTIFACT = Path(__file__).resolve().parent / "artifacts" / "add_fp32_1024"
TARGET_US = 5.0

ADD_SOURCE = r"""
extern "C" __global__ void __launch_bounds__(256) add_fp32(const float* __restrict__ A,
    const float* __restrict__ B, float* __restrict__ C, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) C[i] = A[i] + B[i];
}
"""


def add_signature() -> Any:
    from tilemlir.runtime import KernelSignature, TensorParam

    return KernelSignature(name="add_fp32", params=tuple(TensorParam(n, "float32", ("n",)) for n in "ABC"),
                           symbols=("n",), grid=("(n + 255) // 256", "1", "1"), block=(256, 1, 1),
                           cuda_params=("A", "B", "C", "n"), out_idx=(2,), index_bits=32)


def load_kernel(args: argparse.Namespace) -> Any:
    import tilemlir.runtime as runtime

    if args.build:
        return runtime.build(ADD_SOURCE, add_signature(), use_cache=False)
    return runtime.load(args.artifact)


def time_loop(call: Callable[[], Any], calls: int, synchronize: Callable[[], None]) -> tuple[float, float]:
    """(host us per call, us per call until the GPU is done), the better of two loops."""
    from time import perf_counter

    runs = []
    for _ in range(2):
        for _ in range(200):
            call()
        synchronize()
        start = perf_counter()
        for _ in range(calls):
            call()
        issued = perf_counter()
        synchronize()
        runs.append((1e6 * (issued - start) / calls, 1e6 * (perf_counter() - start) / calls))
    return min(runs)


def rows(kernel: Any, torch: Any, a: Any, b: Any) -> dict[str, Callable[[], Any]]:
    """The calls to time; the kernel has been called once, so its module is loaded."""
    from dataclasses import replace

    from tilemlir.runtime import driver, native
    from tilemlir.runtime.fastpath import FastCall, _slot_types, function_address
    from tilemlir.runtime.native import KIND
    from tilemlir.runtime.native_call import NativeCall
    from tilemlir.runtime.kernel import stream_handle

    raw = driver.raw()
    context, device = driver.current()
    module = kernel._modules[context]
    handle = module.handle
    with_ctypes = FastCall(kernel.signature, torch, raw, stream_handle, kernel._launch_failed, native=None)
    with_ctypes.register(context, handle, device, module.max_dynamic_shared)
    n, c = a.numel(), torch.empty_like(a)
    grid, block = kernel._binder.grid([n]), kernel.signature.block
    stream = ctypes.c_void_p(torch._C._cuda_getCurrentRawStream(device))
    sig = kernel.signature
    by_name = dict(zip((p.name for p in sig.params), (a.data_ptr(), b.data_ptr(), c.data_ptr())))
    by_name.update((symbol, n) for symbol in sig.symbols)
    values = [ctype(by_name[name]) for ctype, name in zip(_slot_types(sig), sig.cuda_params)]
    array = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    params = ctypes.c_void_p(ctypes.addressof(array))
    context_slot = ctypes.c_void_p()
    context_ref = ctypes.byref(context_slot)

    def launch_only() -> int:  # C = A + B into the preallocated c, through the same ctypes call as ours
        return raw.launch(handle, *grid, *block, 0, stream, params, None)

    launch_only.keep_alive = (c, values, array)
    extension = native.load()
    calls = {
        "torch eager": lambda: a + b,
        "ours": lambda: kernel(a, b),
    }
    no_output = NativeCall.create(replace(kernel.signature, out_idx=()), torch, raw, stream_handle,
                                  kernel._launch_failed, extension)
    if no_output is not None:
        no_output.register(context, handle, device, module.max_dynamic_shared)
        calls["ours, no output"] = lambda: no_output.call((a, b, c), None)
    if extension is not None:
        python_fast = FastCall(kernel.signature, torch, raw, stream_handle, kernel._launch_failed, extension)
        python_fast.register(context, handle, device, module.max_dynamic_shared)
        calls["ours, Python fast"] = lambda: python_fast.call((a, b), None)
    calls.update({
        "ours, ctypes": lambda: with_ctypes.call((a, b), None),
        "ours, general": lambda: kernel._call((a, b), None),
        "torch.empty": lambda: torch.empty(n, dtype=a.dtype, device=a.device),
        "current stream": lambda: torch._C._cuda_getCurrentRawStream(device),
        "cuCtxGetCurrent": lambda: raw.get_context(context_ref),
        "cuLaunchKernel": launch_only,
    })
    if extension is not None:
        launcher = function_address(raw.launch)
        kinds = "".join(KIND[t] for t in _slot_types(sig)).encode()
        fixed = [v.value for v in values]
        calls["native launch"] = lambda: extension.launch(launcher, handle.value, *grid, *block, 0, stream.value or 0,
                                                         kinds, *fixed)
    return calls


def check(kernel: Any, torch: Any, a: Any, b: Any) -> None:
    for attempt in range(3):  # the first call takes the general path, the next ones the fast path
        c = kernel(a, b)
        torch.cuda.synchronize()
        if not torch.equal(c, a + b):
            raise SystemExit(f"wrong result on call {attempt + 1}: max error {(c - (a + b)).abs().max().item()}")
    from tilemlir.runtime.fastpath import SLOW

    if kernel._fast is None or kernel._fast.call((a, b), None) is SLOW:
        raise SystemExit("the fast path does not take these calls")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifact", type=Path, default=DEFAULT_ARTIFACT, help="artifact directory of the add")
    parser.add_argument("--build", action="store_true", help="compile the inline add with NVRTC instead")
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--n", type=int, default=1024, help="elements of the add")
    args = parser.parse_args(argv)
    import torch

    kernel = load_kernel(args)
    a, b = (torch.randn(args.n, device="cuda") for _ in range(2))
    check(kernel, torch, a, b)
    print(f"{kernel.name}: {args.n} fp32 elements, {args.calls} calls a loop, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}, Python {sys.version.split()[0]}")
    print(f"fast path: {type(kernel._fast).__name__}")
    print(f"{'call':18s} {'host us/call':>13s} {'with sync':>10s}")
    results = {}
    for name, call in rows(kernel, torch, a, b).items():
        host, total = time_loop(call, args.calls, torch.cuda.synchronize)
        results[name] = host
        print(f"{name:18s} {host:13.2f} {total:10.2f}", flush=True)
    ours, eager = results["ours"], results["torch eager"]
    verdict = "meets" if ours <= TARGET_US and ours < eager else "misses"
    print(f"ours {ours:.2f} us vs torch eager {eager:.2f} us: {verdict} the target (<= {TARGET_US} us and below eager)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
