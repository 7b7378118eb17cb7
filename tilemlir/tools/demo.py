"""`tilemlir-demo`: compile the softmax example, show every IR stage and the CUDA source, run it, check it.

It runs on the GPU when one is usable (an NVIDIA device plus torch or CuPy
to hold the arrays), otherwise on the CPU backend at both the tile level
(reference semantics) and the thread level (the GPU lowering, simulated),
and compares every result with a float64 numpy reference.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

import tilemlir
from tilemlir.diagnostics import TilemlirError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "softmax.py"
TOLERANCE = 2e-3


def _banner(title: str) -> None:
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def _load_example():
    """examples/softmax.py's factory (an editable install has it); the library's softmax otherwise."""
    if EXAMPLE.is_file():
        sys.path.insert(0, str(EXAMPLE.parent))
        spec = importlib.util.spec_from_file_location("softmax_example", EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.softmax.instantiate(N=1024, block_N=1024), str(EXAMPLE)
    from tilemlir.kernels.softmax import softmax

    return softmax.instantiate(N=1024, dtype="float16"), "tilemlir/kernels/softmax.py"


def _reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _max_relative_error(got, want: np.ndarray) -> float:
    """max |got - want| / max |want|: elementwise ratios would blow up on probabilities that
    underflow in float16."""
    got = np.asarray(got, dtype=np.float64)
    if not np.isfinite(got).all():
        return float("inf")
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _norm_relative_error(got, want: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def _gpu_array_module():
    """torch or cupy when a CUDA device is usable through it, else None."""
    for name in ("torch", "cupy"):
        if importlib.util.find_spec(name) is None:
            continue
        module = __import__(name)
        try:
            if name == "torch" and module.cuda.is_available():
                return module
            if name == "cupy" and module.cuda.runtime.getDeviceCount() > 0:
                return module
        except Exception:  # a broken driver install just means: no GPU here
            continue
    return None


def _report(label: str, got, want: np.ndarray) -> bool:
    max_err = _max_relative_error(got, want)
    norm_err = _norm_relative_error(got, want)
    ok = np.isfinite(max_err) and norm_err <= TOLERANCE
    print(f"{label}: max relative error {max_err:.3e}, relative norm error {norm_err:.3e} "
          f"({'ok' if ok else 'FAILED'}, tolerance {TOLERANCE:g})")
    return ok


def _run_gpu(kernel_fn, x: np.ndarray, xp) -> bool:
    kernel = tilemlir.compile(kernel_fn, target="cuda")
    device_x = xp.asarray(x) if xp.__name__ == "cupy" else xp.from_numpy(x).cuda()
    y = kernel(device_x)
    host = y.get() if xp.__name__ == "cupy" else y.cpu().numpy()
    return _report(f"GPU ({xp.__name__})", host, _reference(x))


def _run_cpu(kernel_fn, x: np.ndarray) -> bool:
    ok = True
    for level in ("tile", "thread"):
        kernel = tilemlir.compile(kernel_fn, target="cpu", level=level)
        ok &= _report(f"CPU backend, {level} level", kernel(x), _reference(x))
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=37, help="rows of the input (a symbolic dim)")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU backend even if a GPU is present")
    args = parser.parse_args(argv)
    try:
        kernel_fn, where = _load_example()
        print(f"tilemlir demo: row softmax from {where} (fp16 in/out, fp32 math, N = 1024)")
        for stage in ("frontend", "thread", "final"):
            _banner(f"IR after stage '{stage}'")
            print(tilemlir.lower(kernel_fn, stage=stage))
        _banner("CUDA C++ source (compiled by NVRTC for sm_90a when no GPU is present)")
        cuda = tilemlir.compile(kernel_fn, target="cuda")
        print(cuda.cuda_source())
        _banner("run and check against numpy (float64)")
        x = (3 * np.random.default_rng().standard_normal((args.rows, 1024))).astype(np.float16)
        xp = None if args.cpu else _gpu_array_module()
        ok = _run_gpu(kernel_fn, x, xp) if xp is not None else _run_cpu(kernel_fn, x)
    except TilemlirError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
