"""What a cubin's machine code says: registers, stack, shared and local bytes
(`cuobjdump --dump-resource-usage`), 16-byte global loads and stores and
local-memory instructions (`cuobjdump --dump-sass`).

The parsers are pure Python; `inspect_cubin` runs cuobjdump (the CUDA
toolkit's, else the one Triton's wheel carries).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):?\s*$")
_RESOURCE = re.compile(r"\b(REG|STACK|SHARED|LOCAL):(\d+)")
_LDG128 = re.compile(r"\bLDG(?:\.[A-Z0-9_]+)*\.128\b")
_LDG = re.compile(r"\bLDG((?:\.[A-Z0-9_]+)*)")
_LDG_BITS = {"128": 128, "64": 64, "U16": 16, "S16": 16, "U8": 8, "S8": 8}
_STG128 = re.compile(r"\bSTG(?:\.[A-Z0-9_]+)*\.128\b")
_LOCAL_MEMORY = re.compile(r"\b(?:LDL|STL)(?:\.[A-Z0-9_]+)*\b")
_SASS_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """cuobjdump --dump-resource-usage output -> {function: {"regs", "stack", "shared", "local"}}."""
    usage: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        match = _FUNCTION.match(line)
        if match:
            current = match.group(1)
            continue
        fields = dict(_RESOURCE.findall(line))
        if current and "REG" in fields:
            usage[current] = {"regs": int(fields["REG"]), "stack": int(fields.get("STACK", 0)),
                              "shared": int(fields.get("SHARED", 0)), "local": int(fields.get("LOCAL", 0))}
            current = None
    return usage


def sass_instructions(text: str) -> list[str]:
    """The instruction text of each SASS line (predicate included), without addresses and encodings."""
    return [m.group(1) for m in map(_SASS_INSTRUCTION.search, text.splitlines()) if m]


def count_sass(text: str) -> dict[str, int]:
    """Counts of 16-byte global loads/stores, of global loads by width in bits, and of
    local-memory loads/stores in a SASS dump."""
    instructions = sass_instructions(text)
    return {"ldg128": sum(bool(_LDG128.search(i)) for i in instructions),
            "ldg_bits": _load_widths(instructions),
            "stg128": sum(bool(_STG128.search(i)) for i in instructions),
            "local_insts": sum(bool(_LOCAL_MEMORY.search(i)) for i in instructions),
            "instructions": len(instructions)}


def _load_widths(instructions: list[str]) -> dict[int, int]:
    widths: dict[int, int] = {}
    for match in filter(None, map(_LDG.search, instructions)):
        suffixes = match.group(1).split(".")
        bits = next((_LDG_BITS[s] for s in suffixes if s in _LDG_BITS), 32)
        widths[bits] = widths.get(bits, 0) + 1
    return widths


def find_cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "cuobjdump").is_file():
            return str(Path(root) / "bin" / "cuobjdump")
    try:
        import triton

        bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        return str(bundled) if bundled.is_file() else None
    except ImportError:
        return None


def inspect_cubin(cubin: Path, function: str | None = None) -> dict[str, object]:
    """Resource usage of `function` (the only one when None) and SASS counts of the whole cubin;
    {"error": why} when cuobjdump is missing or fails."""
    tool = find_cuobjdump()
    if tool is None:
        return {"error": "no cuobjdump (CUDA toolkit or Triton's wheel)"}
    try:
        usage_text = _run(tool, "--dump-resource-usage", cubin)
        sass_text = _run(tool, "--dump-sass", cubin)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": f"cuobjdump failed: {exc}"}
    usage = parse_resource_usage(usage_text)
    if function is None and len(usage) == 1:
        function = next(iter(usage))
    if function not in usage:
        return {"error": f"cuobjdump lists functions {sorted(usage)}, not {function!r}"}
    return {**usage[function], **count_sass(sass_text), "cuobjdump": tool}


def _run(tool: str, flag: str, cubin: Path) -> str:
    done = subprocess.run([tool, flag, str(cubin)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise subprocess.SubprocessError(done.stderr.strip() or f"exit status {done.returncode}")
    return done.stdout
