"""Issue 5's table: every example on the GPU at its largest test shape, checked then timed.

    PYTHONPATH=$PWD python3 test/gpu/time_examples.py

Prints example, shape, max relative error (max |out - ref| / max |ref|),
relative norm error, time (do_bench median, L2 flushed) and GB/s of
compulsory traffic (inputs read once, outputs written once).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from example_cases import CASES, example_module, kernel_for  # noqa: E402
from test_examples_gpu import make_inputs, relative_error, to_device  # noqa: E402


def main() -> int:
    print("| example | shape | max rel err | norm rel err | us | GB/s |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng()
    for case in CASES:
        module = example_module(case.module)
        kernel = kernel_for(case)
        rows = max(case.rows)
        inputs = make_inputs(module, case, rows, rng)
        wanted = module.reference(*inputs)
        device = [to_device(a) for a in inputs]
        outputs = kernel(*device)
        outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        max_err = norm_err = 0.0
        for got, want in zip(outputs, wanted):
            norm_err = max(norm_err, relative_error(got, want))
            got = got.float().double().cpu().numpy()
            want = np.asarray(want, np.float64)
            max_err = max(max_err, float(np.abs(got - want).max() / np.abs(want).max()))
        ms = do_bench(lambda: kernel(*device), warmup=25, rep=100, return_mode="median")
        traffic = sum(t.numel() * t.element_size() for t in device if isinstance(t, torch.Tensor))
        traffic += sum(o.numel() * o.element_size() for o in outputs)
        shape = "x".join(str(d) for d in device[0].shape)
        print(f"| {case.name} | {shape} | {max_err:.2e} | {norm_err:.2e} | {ms * 1e3:.1f} | {traffic / ms / 1e6:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
