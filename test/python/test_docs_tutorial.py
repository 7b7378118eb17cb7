"""docs/tutorial.md's Python blocks run, in order, as one script, and do what the page says.

Every ```python block of the page is code to run; a block whose first line starts with `# GPU only`
needs an NVIDIA GPU and torch and is left out of the CPU run (with both present the whole page
runs). The blocks are written into one script at the line numbers they have in the page, so a
traceback's line is the page's line. The script runs in a fresh interpreter with its own disk
cache; the blocks check their own results (`assert_close`, `assert`), and this test checks what
they print and that every block ran.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
GPU_MARK = "# GPU only"
BLOCK_DONE = "tutorial block done at line"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of each ```python block."""
    blocks, lines, start = [], text.splitlines(), None
    for number, line in enumerate(lines, 1):
        if start is None and line.strip() == "```python":
            start = number + 1
        elif start is not None and line.strip() == "```":
            blocks.append((start, "\n".join(lines[start - 1:number - 1])))
            start = None
    assert start is None, f"docs/tutorial.md: the ```python block at line {start - 1} is not closed"
    return blocks


def script(blocks: list[tuple[int, str]], gpu: bool) -> tuple[str, list[int]]:
    """One script holding the blocks to run at their page lines, each followed by a marker print;
    and the first lines of the blocks it holds."""
    lines: list[str] = []
    ran = []
    for start, source in blocks:
        if source.startswith(GPU_MARK) and not gpu:
            continue
        body = source.splitlines()
        lines += [""] * (start - 1 - len(lines))
        lines += body
        lines.append(f"print({BLOCK_DONE!r}, {start}, flush=True)")
        ran.append(start)
    return "\n".join(lines) + "\n", ran


def gpu_usable() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def test_tutorial_blocks_are_well_formed():
    blocks = python_blocks(TUTORIAL.read_text())
    assert len(blocks) >= 12
    for start, source in blocks:
        compile(source, f"docs/tutorial.md:{start}", "exec")  # GPU blocks too: at least valid Python
    gpu = [start for start, source in blocks if source.startswith(GPU_MARK)]
    assert 0 < len(gpu) < len(blocks) / 2


def test_tutorial_runs(tmp_path):
    gpu = gpu_usable()
    text, ran = script(python_blocks(TUTORIAL.read_text()), gpu)
    path = tmp_path / "tutorial.py"  # a real file: the frontend reads kernels' source from it
    path.write_text(text)
    env = {**os.environ, "TILEMLIR_CACHE_DIR": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("TILEMLIR_DUMP_DIR", None)
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=900)
    out = result.stdout
    assert result.returncode == 0, f"the tutorial failed (lines are docs/tutorial.md's):\n{result.stderr[-6000:]}"
    done = [int(n) for n in re.findall(rf"{BLOCK_DONE} (\d+)", out)]
    assert done == ran
    # What the page says the blocks print.
    assert "ndarray float32 (100003,)" in out
    assert "scaled: block (0, 0, 0), thread 0: x[1] = 0.5" in out
    assert "scaled: block (1, 0, 0), thread 0: x[3] = 3.5" in out
    assert out.index("block (0, 0, 0)") < out.index("block (1, 0, 0)")
    assert "error: device assertion failed in kernel 'gather_kernel', block (0, 0, 0): index past the end" in out
    assert re.search(r"data race on shared buffer 'first' element 0 in block 0: thread \d+ writes it at .*:\d+:\d+",
                     out)
    assert "00-frontend.mlir" in out and re.search(r"\['add-[0-9a-f]{12}\.cu'\]", out)
    assert "['build.json', 'signature.json', 'softmax.cu', 'softmax.cubin', 'softmax_host.cu']" in out
    assert re.search(r'%\d+ = "tile.gemm"|"tile.gemm"\(', out)
    assert re.search(r"^[1-9]\d* wgmma ops in the final IR$", out, flags=re.MULTILINE)


@pytest.mark.parametrize("gpu, expected", [(False, "cpu"), (True, "all")])
def test_script_keeps_page_lines_and_leaves_gpu_blocks_to_gpus(gpu, expected):
    page = "text\n```python\nx = 1\n```\nmore\n```python\n# GPU only: needs a GPU\ny = 2\n```\n"
    blocks = python_blocks(page)
    assert blocks == [(3, "x = 1"), (7, "# GPU only: needs a GPU\ny = 2")]
    text, ran = script(blocks, gpu)
    lines = text.splitlines()
    assert lines[2] == "x = 1"
    if expected == "cpu":
        assert ran == [3] and "y = 2" not in text
    else:
        assert ran == [3, 7] and lines[7] == "y = 2"
