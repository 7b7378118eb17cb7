"""T.print and T.device_assert on a real device: examples/debug_print.py's and device_assert.py's kernels
(artifacts debug_scale and checked_gather).

- debug_scale on fresh random bf16 rows: the printf lines of each block are, in order, exactly what
  `expected_lines` derives from the inputs (the CPU target prints the same lines: test_cpu_debug_calls.py),
  and the output is exact.
- checked_gather with good indices computes the gather; with an index past the table it traps: the launch
  fails with a device-side assert, and stderr names the message and the kernel's Python file:line. A trap
  leaves the CUDA context unusable, so that launch runs in a child process.
"""

import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from example_cases import DEBUG_CASES_BY_NAME, EXAMPLES, example_module, kernel_for  # noqa: E402

HERE = Path(__file__).resolve().parent


def test_debug_scale_prints_what_its_inputs_say_from_each_block(capfd):
    debug_print = example_module("debug_print")
    kernel = kernel_for(DEBUG_CASES_BY_NAME["debug_scale"])
    rows, alpha = 37, 1.375
    x = torch.randn((rows, 8), dtype=torch.bfloat16, device="cuda")
    capfd.readouterr()
    y = kernel(x, alpha)
    torch.cuda.synchronize()  # the device's printf buffer reaches the host's stdout here
    ctypes.CDLL(None).fflush(None)  # and C's stdout buffer reaches the captured file
    printed = capfd.readouterr().out.splitlines()
    want = debug_print.expected_lines(x.float().cpu().numpy(), alpha)
    by_block = {}
    for line in printed:
        block = line.split("block (", 1)[1].split(",", 1)[0]
        by_block.setdefault(int(block), []).append(line)
    assert sorted(by_block) == list(range(rows))
    for row in range(rows):
        assert by_block[row] == want[row], f"block {row}"
    assert torch.equal(y, x.float() * alpha)


CHILD = """
import sys
sys.path[:0] = [{root!r}, {here!r}, {examples!r}]
import torch
from example_cases import DEBUG_CASES_BY_NAME, kernel_for

kernel = kernel_for(DEBUG_CASES_BY_NAME["checked_gather"])
table = torch.randn(1000, device="cuda")
index = torch.randint(0, 1000, (5000,), dtype=torch.int32, device="cuda")
out = kernel(table, index)
torch.cuda.synchronize()
assert torch.equal(out, table[index.long()]), "the gather is wrong"
print("good indices: ok", flush=True)
index[4321] = 1000
try:
    kernel(table, index)
    torch.cuda.synchronize()
except Exception as exc:
    print(f"launch failed: {{type(exc).__name__}}: {{exc}}", flush=True)
    sys.exit(3)
print("no failure", flush=True)
"""


def test_a_bad_index_traps_naming_the_assertion_and_its_python_line():
    child = subprocess.run([sys.executable, "-c", CHILD.format(root=str(HERE.parents[1]), here=str(HERE),
                                                                examples=str(EXAMPLES))],
                           capture_output=True, text=True, timeout=300)
    assert "good indices: ok" in child.stdout, child.stdout + child.stderr
    assert child.returncode == 3, child.stdout + child.stderr
    assert "launch failed: " in child.stdout and "assert" in child.stdout.lower(), child.stdout
    source = (EXAMPLES / "device_assert.py").read_text().splitlines()
    line = next(n for n, text in enumerate(source, start=1) if "index past the end of the table" in text)
    assert f"device_assert.py:{line}" in child.stderr + child.stdout, child.stderr
    assert "Assertion `index past the end of the table` failed" in child.stderr + child.stdout, child.stderr
    assert "block: [33,0,0]" in child.stderr + child.stdout, child.stderr  # 4321 // 128 = 33
