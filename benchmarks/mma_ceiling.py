"""The mma.sync ceiling of the H200 (issue 16, tensor cores stage A): how many TFLOP/s
`mma.sync.aligned.m16n8k16.row.col` reaches when nothing but mma runs, and what feeding its
operands from shared memory by ldmatrix costs. Runs on the GPU machine, without MLIR:

    python3 -m benchmarks.mma_ceiling [--ms 25] [--nvcc PATH] [--keep DIR]

It compiles benchmarks/mma_ceiling.cu with nvcc (-gencode=arch=compute_90a,code=sm_90a -O3),
checks every variant, then times it and prints a markdown table. Variants, for each of
.f32.bf16.bf16.f32, .f32.f16.f16.f32 and .f16.f16.f16.f16:

    registers, N acc   operands fixed in registers (two sets), N independent accumulators a warp
                       (no dependent chain: each mma waits only on its own accumulator's last one)
    fresh, 4 acc       every mma gets fresh operands: ldmatrix.x4 (A) + ldmatrix.x2.trans (B)
    tile MxN           a warp tile of M x N m16n8 atoms per k16 step as lower-gemm-mma plans it:
                       M ldmatrix.x4 + N/2 ldmatrix.x4.trans for M*N mmas (4x8: the 64x64 warp
                       tile of a 128x128 block on 2x2 warps)

Every launch puts one block of 4, 8, 16 or 32 warps on each SM (its dynamic shared memory is over
half an SM's) and loops `iters` times; accumulators are written out at the end, and the inline
asm is volatile, so no mma can be optimized away. Time: CUDA events, the median of 5 launches
of ~25 ms after a warm-up (spread = (max - min) / median). TFLOP/s = 2*16*8*16 * mmas / time.
The SM clock and FLOP/clk/SM come from clock64() around each block's loop; 4096 FLOP/clk/SM is
the dense fp16/bf16 tensor peak of an H100/H200 SXM SM (989.4 TFLOP/s = 132 SMs x 1830 MHz x
4096), which wgmma reaches and mma.sync reportedly does not. Shared tiles store each 8x8 matrix
as 128 contiguous bytes, so ldmatrix has no bank conflicts. Operand values are small multiples
of 1/8 that stay fixed in the loop (a real GEMM's operands toggle more bits and draw more power);
.f16 accumulators reach infinity in the long timed runs, which does not change the timing.

The check (before timing): 2 warps, 8 iterations of each variant, whose output must equal bit
for bit what the CPU model of the PTX ISA (tilemlir/backends/cpu/simulate/ptx_isa.py) computes
from the same inputs: every partial sum is exact there, so this pins the ISA tables of mma,
ldmatrix and ldmatrix.trans against the hardware. A mismatch exits with status 1.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tilemlir.backends.cpu.simulate import ptx_isa as isa  # noqa: E402  (numpy only, no MLIR)

SOURCE = Path(__file__).resolve().with_name("mma_ceiling.cu")
NVCC_FLAGS = ("-gencode=arch=compute_90a,code=sm_90a", "-O3", "-Xptxas", "-v")
FLOP_PER_MMA = 2 * 16 * 8 * 16
PEAK_FLOP_PER_CLK_SM = 4096
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


# -- the executable's lines -----------------------------------------------------------------
def parse_line(line: str) -> tuple[str, dict[str, str]] | None:
    """'TAG k=v k=v ...' -> (TAG, fields); a DEVICE line's name= runs to the end of the line."""
    tag, _, rest = line.strip().partition(" ")
    if tag not in ("DEVICE", "CHECK", "RESULT", "SKIP"):
        return None
    name = None
    if tag == "DEVICE" and " name=" in f" {rest}":
        rest, _, name = f" {rest}".partition(" name=")
    fields = dict(item.split("=", 1) for item in rest.split())
    if name is not None:
        fields["name"] = name
    return tag, fields


@dataclass(frozen=True)
class Result:
    """One timed configuration (a RESULT line)."""

    name: str
    inst: str
    feed: str
    tile_m: int
    tile_n: int
    accumulators: int
    warps: int
    regs: int
    local_bytes: int
    sms: int
    iters: int
    cycles: float
    ms: tuple[float, ...]

    @classmethod
    def from_fields(cls, f: dict[str, str]) -> "Result":
        ints = {k: int(f[k]) for k in ("tile_m", "tile_n", "accumulators", "warps", "regs", "local_bytes", "sms",
                                       "iters")}
        return cls(name=f["name"], inst=f["inst"], feed=f["feed"], cycles=float(f["cycles"]),
                   ms=tuple(float(t) for t in f["ms"].split(",")), **ints)

    @property
    def mmas_per_sm(self) -> int:
        return self.warps * self.accumulators * self.iters

    @property
    def median_ms(self) -> float:
        return statistics.median(self.ms)

    @property
    def tflops(self) -> float:
        return FLOP_PER_MMA * self.mmas_per_sm * self.sms / (self.median_ms * 1e-3) / 1e12

    @property
    def spread(self) -> float:
        return (max(self.ms) - min(self.ms)) / self.median_ms

    @property
    def sm_mhz(self) -> float:
        return self.cycles / (self.median_ms * 1e3)

    @property
    def flop_per_clk_sm(self) -> float:
        return FLOP_PER_MMA * self.mmas_per_sm / self.cycles


def describe(feed: str, tile_m: int, tile_n: int, accumulators: int) -> str:
    if feed == "registers":
        return f"registers, {accumulators} acc"
    if feed == "fresh":
        return f"ldmatrix per mma, {accumulators} acc"
    return f"ldmatrix tile {tile_m}x{tile_n} ({16 * tile_m}x{8 * tile_n} warp tile)"


def markdown_table(results: list[Result], skips: list[dict[str, str]]) -> str:
    lines = ["| instruction | feed | warps/SM | regs | TFLOP/s | spread | SM MHz | FLOP/clk/SM | of 4096 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        regs = f"{r.regs}" + (f" ({r.local_bytes} B local)" if r.local_bytes else "")
        lines.append(f"| {r.inst} | {describe(r.feed, r.tile_m, r.tile_n, r.accumulators)} | {r.warps} | {regs} | "
                     f"{r.tflops:.1f} | {100 * r.spread:.1f}% | {r.sm_mhz:.0f} | {r.flop_per_clk_sm:.0f} | "
                     f"{100 * r.flop_per_clk_sm / PEAK_FLOP_PER_CLK_SM:.1f}% |")
    for s in skips:
        what = describe(s["feed"], int(s["tile_m"]), int(s["tile_n"]), int(s["accumulators"]))
        lines.append(f"| {s['inst']} | {what} | {s['warps']} | {s['regs']} | not resident "
                     f"({s['resident_blocks']} blocks/SM) | | | | |")
    return "\n".join(lines)


# -- the check against the ISA model ----------------------------------------------------------
def expected_words(fields: dict[str, str], words: np.ndarray) -> np.ndarray:
    """The output words the executable must produce for a CHECK line's variant on its input words
    (uint32 array), computed by the ISA model: accumulator j of each warp at
    [warp, j, register, lane]."""
    inst = isa.Mma.parse(f"mma.sync.aligned.m16n8k16.row.col.{fields['inst']}")
    count, iters, warps = int(fields["accumulators"]), int(fields["iters"]), int(fields["warps"])
    operands = _operand_source(fields, np.asarray(words, dtype=np.uint32))
    zero = isa.fragment_registers(inst.fragment("c"), np.zeros((16, 8)), inst.ctype)
    accumulators = [zero] * count
    for it in range(iters):
        for j in range(count):
            accumulators[j] = isa.mma_sync(inst, *operands(it, j), accumulators[j])
    warp = np.stack([acc.view(np.uint32).T for acc in accumulators])
    return np.broadcast_to(warp, (warps, *warp.shape)).copy()


Operands = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


def _operand_source(fields: dict[str, str], words: np.ndarray) -> Operands:
    """(iteration, accumulator) -> (A registers, B registers), addressed as the kernels do."""
    feed, count = fields["feed"], int(fields["accumulators"])
    if feed == "registers":
        a, b = words[:256].reshape(2, 32, 4), words[256:384].reshape(2, 32, 2)
        return lambda it, j: (a[j % 2], b[j % 2])
    shared, lane = words.view(np.uint8), np.arange(32)
    a_atoms, n_atoms = (count, count) if feed == "fresh" else (int(fields["tile_m"]), int(fields["tile_n"]))
    a_bytes = a_atoms * 512
    slice_bytes, slices = a_bytes + n_atoms * 256, int(fields["slices"])

    def fresh(it: int, j: int):
        base = it % slices * slice_bytes
        return (isa.ldmatrix(shared, base + j * 512 + 16 * lane, 4),
                isa.ldmatrix(shared, base + a_bytes + j * 256 + 16 * (lane % 16), 2, trans=True))

    def tile(it: int, j: int):
        base, (i, n) = it % slices * slice_bytes, divmod(j, n_atoms)
        pair = isa.ldmatrix(shared, base + a_bytes + n // 2 * 512 + 16 * lane, 4, trans=True)
        return isa.ldmatrix(shared, base + i * 512 + 16 * lane, 4), pair[:, 2 * (n % 2):2 * (n % 2) + 2]

    return fresh if feed == "fresh" else tile


def compare(fields: dict[str, str], got: np.ndarray, want: np.ndarray) -> str | None:
    """None when the words agree bit for bit, else what differs first."""
    got = np.asarray(got, dtype=np.uint32).reshape(want.shape)
    wrong = np.argwhere(got != want)
    if not len(wrong):
        return None
    warp, acc, register, lane = wrong[0]
    as_value = (lambda w: np.uint32(w).view(np.float32)) if fields["inst"].startswith("f32") else hex
    return (f"{len(wrong)} of {got.size} words differ; first: warp {warp} accumulator {acc} register {register} "
            f"lane {lane}: got {as_value(got[tuple(wrong[0])])}, the ISA model {as_value(want[tuple(wrong[0])])}")


def run_check(exe: Path, work: Path) -> list[tuple[str, str | None]]:
    """(variant, None or the mismatch) for every variant of `exe check`."""
    outcomes = []
    for tag, fields in _records(_run([str(exe), "check", str(work)])):
        if tag != "CHECK":
            continue
        words = np.fromfile(work / f"{fields['name']}.in", dtype="<u4")
        got = np.fromfile(work / f"{fields['name']}.out", dtype="<u4")
        outcomes.append((fields["name"], compare(fields, got, expected_words(fields, words))))
    return outcomes


# -- building and running -----------------------------------------------------------------------
def find_nvcc(explicit: str | None) -> str:
    candidates = [explicit] if explicit else [
        os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc") if os.environ.get("CUDA_HOME") else None,
        shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    for candidate in filter(None, candidates):
        if Path(candidate).is_file():
            return candidate
    raise SystemExit(f"no nvcc found (tried {', '.join(filter(None, candidates))}); pass --nvcc PATH")


def build(nvcc: str, work: Path) -> Path:
    exe = work / "mma_ceiling"
    done = subprocess.run([nvcc, *NVCC_FLAGS, "-o", str(exe), str(SOURCE)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nvcc failed:\n{done.stderr}")
    spills = [m.group(0) for m in _SPILL.finditer(done.stderr) if m.group(1) != "0" or m.group(2) != "0"]
    if spills:
        print(f"warning: ptxas reports spills: {'; '.join(spills)}")
    return exe


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def _records(output: str) -> list[tuple[str, dict[str, str]]]:
    return [record for record in map(parse_line, output.splitlines()) if record]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ms", type=float, default=25.0, help="target milliseconds a timed launch (default 25)")
    parser.add_argument("--nvcc", help="the nvcc to build with (default: $CUDA_HOME/bin, PATH, /usr/local/cuda)")
    parser.add_argument("--keep", type=Path, help="build and check in this directory and keep it")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    nvcc = find_nvcc(args.nvcc)
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        exe = build(nvcc, work)
        outcomes = run_check(exe, work)
        for name, problem in outcomes:
            print(f"check {name}: {'bit-exact against the ISA model' if problem is None else 'MISMATCH: ' + problem}")
        records = _records(_run([str(exe), "bench", str(args.ms)]))
    device = next((f for tag, f in records if tag == "DEVICE"), {})
    print(f"\n{device.get('name', '?')}, {device.get('sms', '?')} SMs, nvcc {nvcc}\n")
    print(markdown_table([Result.from_fields(f) for tag, f in records if tag == "RESULT"],
                         [f for tag, f in records if tag == "SKIP"]))
    return 1 if any(problem for _, problem in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
