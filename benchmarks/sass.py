"""What a cubin's machine code says: registers, stack, shared and local bytes
(`cuobjdump --dump-resource-usage`), global loads and stores by width and
local-memory instructions (`cuobjdump --dump-sass`).

The parsers are pure Python; `inspect_cubin` runs cuobjdump: the one the
`nvidia-cuda-cuobjdump` wheel of the dev extra installs, else the CUDA
toolkit's, else the one Triton's wheel carries.
"""

from __future__ import annotations

import os
import re
from importlib import metadata
import shutil
import subprocess
from pathlib import Path

_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):?\s*$")
_RESOURCE = re.compile(r"\b(REG|STACK|SHARED|LOCAL):(\d+)")
_LDG128 = re.compile(r"\bLDG(?:\.[A-Z0-9_]+)*\.128\b")
# \b after the opcode: LDGSTS (cp.async) and LDGDEPBAR are other instructions
_LDG = re.compile(r"\bLDG\b((?:\.[A-Z0-9_]+)*)")
_STG = re.compile(r"\bSTG\b((?:\.[A-Z0-9_]+)*)")
_WIDTH_BITS = {"128": 128, "64": 64, "U16": 16, "S16": 16, "U8": 8, "S8": 8}  # no width suffix: 32 bits
_STG128 = re.compile(r"\bSTG(?:\.[A-Z0-9_]+)*\.128\b")
_LOCAL_MEMORY = re.compile(r"\b(?:LDL|STL)(?:\.[A-Z0-9_]+)*\b")
_SASS_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
# the matrix path of a GEMM: mma.sync (HMMA), wgmma (HGMMA), ldmatrix (LDSM), cp.async (LDGSTS), and the
# SIMT path's multiply-adds (FFMA, or FMUL + FADD when contraction is off)
MATRIX_OPCODES = ("HMMA", "HGMMA", "LDSM", "LDGSTS", "FFMA", "FMUL")


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
    """Counts of 16-byte global loads/stores, of global loads and stores by width in bits, and of
    local-memory loads/stores in a SASS dump."""
    instructions = sass_instructions(text)
    return {"ldg128": sum(bool(_LDG128.search(i)) for i in instructions),
            "ldg_bits": _access_widths(instructions, _LDG),
            "stg128": sum(bool(_STG128.search(i)) for i in instructions),
            "stg_bits": _access_widths(instructions, _STG),
            "local_insts": sum(bool(_LOCAL_MEMORY.search(i)) for i in instructions),
            "instructions": len(instructions)}


def count_opcodes(text: str, opcodes: tuple[str, ...]) -> dict[str, int]:
    """How many SASS instructions have each of `opcodes` as their opcode (any suffixes, any predicate)."""
    counts = dict.fromkeys(opcodes, 0)
    for instruction in sass_instructions(text):
        words = instruction.split()
        opcode = words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")
        base = opcode.split(".")[0]
        if base in counts:
            counts[base] += 1
    return counts


def _access_widths(instructions: list[str], opcode: re.Pattern) -> dict[int, int]:
    widths: dict[int, int] = {}
    for match in filter(None, map(opcode.search, instructions)):
        suffixes = match.group(1).split(".")
        bits = next((_WIDTH_BITS[s] for s in suffixes if s in _WIDTH_BITS), 32)
        widths[bits] = widths.get(bits, 0) + 1
    return widths


def find_cuobjdump() -> str | None:
    return find_tool("cuobjdump")


def find_tool(name: str) -> str | None:
    """`name` (cuobjdump, nvdisasm) from its nvidia-cuda-<name> wheel, PATH, the CUDA toolkit
    (CUDA_HOME, CUDA_PATH, /usr/local/cuda) or Triton's wheel, in that order; None if nowhere."""
    found = _wheel_tool(name) or shutil.which(name)
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda", _triton_nvidia()]
    candidates = [Path(root) / "bin" / name for root in roots if root]
    return next((str(c) for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def _wheel_tool(name: str) -> str | None:
    """`bin/<name>` of the nvidia-cuda-<name> wheel (its file list says where it went)."""
    try:
        files = metadata.files(f"nvidia-cuda-{name}") or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        path = Path(file.locate())
        if file.name == name and file.parent.name == "bin" and path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def _triton_nvidia() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    return str(Path(triton.__file__).parent / "backends" / "nvidia")


def tool_version(tool: str) -> str:
    """The release line of `<tool> --version`, e.g. 'Cuda compilation tools, release 13.5, V13.5.37'."""
    done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stdout.splitlines() if "release" in line]
    return lines[-1].strip() if done.returncode == 0 and lines else "unknown"


def _disassembler_env() -> dict[str, str]:
    """The environment with nvdisasm's directory first on PATH: cuobjdump --dump-sass runs nvdisasm."""
    env = dict(os.environ)
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm:
        env["PATH"] = os.pathsep.join([str(Path(nvdisasm).parent), env.get("PATH", "")])
    return env


def inspect_cubin(cubin: Path, function: str | None = None, opcodes: tuple[str, ...] = ()) -> dict[str, object]:
    """Resource usage of `function` (the only one when None) and SASS counts of the whole cubin
    (with `opcodes`: also {"opcodes": count_opcodes(...)}); {"error": why} when cuobjdump is
    missing or fails."""
    tool = find_cuobjdump()
    if tool is None:
        return {"error": "no cuobjdump (the dev extra's nvidia-cuda-cuobjdump, the CUDA toolkit or Triton's wheel)"}
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
    found = {**usage[function], **count_sass(sass_text), "cuobjdump": tool}
    if opcodes:
        found["opcodes"] = count_opcodes(sass_text, opcodes)
    return found


def _run(tool: str, flag: str, cubin: Path) -> str:
    done = subprocess.run([tool, flag, str(cubin)], capture_output=True, text=True, timeout=60, env=_disassembler_env())
    if done.returncode != 0:
        raise subprocess.SubprocessError(done.stderr.strip() or f"exit status {done.returncode}")
    return done.stdout
