"""benchmarks/mma_ceiling.py without a GPU: the executable's lines, the table's arithmetic, the ISA
model of each variant's check against matrices decoded straight from the input bytes, the
comparison, and that mma_ceiling.cu builds for sm_90a without spills."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import mma_ceiling as bench  # noqa: E402
from tilemlir.backends.cpu.simulate import ptx_isa as isa  # noqa: E402

RESULT = ("RESULT name=tile4x8-f32.bf16.bf16.f32 inst=f32.bf16.bf16.f32 feed=tile tile_m=4 tile_n=8 accumulators=32 "
          "slices=4 warps=8 regs=163 local_bytes=0 sms=132 iters=20000 cycles=40000000 ms=20.0000,21.0000,19.5000")
INSTS = ("f32.bf16.bf16.f32", "f32.f16.f16.f32", "f16.f16.f16.f16")


def test_parse_line():
    assert bench.parse_line("DEVICE sms=132 cc=9.0 clock_khz=1980000 name=NVIDIA H200") == (
        "DEVICE", {"sms": "132", "cc": "9.0", "clock_khz": "1980000", "name": "NVIDIA H200"})
    tag, fields = bench.parse_line(RESULT)
    assert tag == "RESULT" and fields["ms"] == "20.0000,21.0000,19.5000" and fields["tile_n"] == "8"
    assert bench.parse_line("warning: something") is None


def test_result_arithmetic():
    r = bench.Result.from_fields(bench.parse_line(RESULT)[1])
    assert r.mmas_per_sm == 8 * 32 * 20000 and r.median_ms == 20.0
    assert r.tflops == pytest.approx(4096 * 8 * 32 * 20000 * 132 / 20e-3 / 1e12)  # 138.4
    assert r.spread == pytest.approx(1.5 / 20.0)
    assert r.sm_mhz == pytest.approx(2000.0)
    assert r.flop_per_clk_sm == pytest.approx(4096 * 8 * 32 * 20000 / 40e6)  # 524.3


def test_markdown_table():
    r = bench.Result.from_fields(bench.parse_line(RESULT)[1])
    skip = bench.parse_line("SKIP name=x inst=f16.f16.f16.f16 feed=fresh tile_m=0 tile_n=0 accumulators=4 slices=4 "
                            "warps=32 regs=300 resident_blocks=0")[1]
    lines = bench.markdown_table([r], [skip]).splitlines()
    assert lines[0].startswith("| instruction | feed | warps/SM |") and len(lines) == 4
    assert lines[2] == ("| f32.bf16.bf16.f32 | ldmatrix tile 4x8 (64x64 warp tile) | 8 | 163 | 138.4 | 7.5% | 2000 "
                        "| 524 | 12.8% |")
    assert lines[3].startswith("| f16.f16.f16.f16 | ldmatrix per mma, 4 acc | 32 | 300 | not resident (0 blocks/SM)")


# -- the check's model ---------------------------------------------------------------------------
def element_words(rng, count: int, etype: str) -> np.ndarray:
    """uint32 words of two elements q / 8, q in -2..2, as the executable's inputs."""
    values = rng.integers(-2, 3, (count, 2)) / 8.0
    return isa.pack_halves(isa.half_bits(values.astype(np.float32), etype))


def check_fields(inst: str, feed: str, tile_m: int, tile_n: int, accumulators: int) -> dict[str, str]:
    return {"inst": inst, "feed": feed, "tile_m": str(tile_m), "tile_n": str(tile_n),
            "accumulators": str(accumulators), "slices": "4", "warps": "2", "iters": "8"}


def decode(words: np.ndarray, etype: str, base: int, operand: str) -> np.ndarray:
    """The A (16x16) or B (16x8) atom at byte `base` as the kernels store it: 8x8 matrices of
    128 bytes (A: rows 0-7 and 8-15 of columns 0-7, then of columns 8-15; B: k 0-7, then 8-15)."""
    count = 4 if operand == "a" else 2
    halves = isa.half_values(words.view("<u2"), etype).astype(np.float64)
    blocks = halves[base // 2:base // 2 + 64 * count].reshape(count, 8, 8)
    return np.block([[blocks[0], blocks[2]], [blocks[1], blocks[3]]]) if operand == "a" else np.vstack(blocks)


def gpu_words_as_matrices(fields: dict[str, str], out: np.ndarray) -> np.ndarray:
    """[warp, accumulator] -> the 16x8 D each accumulator holds, through the C/D table."""
    inst = isa.Mma.parse(f"mma.sync.aligned.m16n8k16.row.col.{fields['inst']}")
    regs = out.transpose(0, 1, 3, 2)  # [warp, acc, lane, register]
    if inst.ctype == "f32":
        regs = regs.view(np.float32)
    return np.array([[isa.fragment_matrix(inst.fragment("c"), np.ascontiguousarray(r), inst.ctype) for r in w]
                     for w in regs])


@pytest.mark.parametrize("inst", INSTS)
@pytest.mark.parametrize("feed, tile_m, tile_n, accumulators", [("fresh", 0, 0, 4), ("tile", 2, 4, 8),
                                                                ("tile", 4, 8, 32)])
def test_check_model_multiplies_the_stored_atoms(inst, feed, tile_m, tile_n, accumulators, rng):
    etype = inst.split(".")[1]
    a_atoms, n_atoms = (accumulators, accumulators) if feed == "fresh" else (tile_m, tile_n)
    slice_bytes = a_atoms * 512 + n_atoms * 256
    words = element_words(rng, 4 * slice_bytes // 4, etype)
    fields = check_fields(inst, feed, tile_m, tile_n, accumulators)
    got = gpu_words_as_matrices(fields, bench.expected_words(fields, words))
    for j in range(accumulators):
        i, n = (j, j) if feed == "fresh" else divmod(j, n_atoms)
        want = 2 * sum(decode(words, etype, s * slice_bytes + i * 512, "a")  # 8 iterations over 4 slices
                       @ decode(words, etype, s * slice_bytes + a_atoms * 512 + n * 256, "b") for s in range(4))
        np.testing.assert_array_equal(got[0, j], want)
        np.testing.assert_array_equal(got[1, j], want)


@pytest.mark.parametrize("inst", INSTS)
def test_check_model_of_register_operands(inst, rng):
    mma = isa.Mma.parse(f"mma.sync.aligned.m16n8k16.row.col.{inst}")
    words = element_words(rng, 384, mma.atype)
    fields = check_fields(inst, "registers", 0, 0, 8)
    got = gpu_words_as_matrices(fields, bench.expected_words(fields, words))
    a_sets, b_sets = words[:256].reshape(2, 32, 4), words[256:].reshape(2, 32, 2)
    for j in range(8):
        a = isa.fragment_matrix(mma.fragment("a"), a_sets[j % 2], mma.atype).astype(np.float64)
        b = isa.fragment_matrix(mma.fragment("b"), b_sets[j % 2], mma.btype).astype(np.float64)
        np.testing.assert_array_equal(got[1, j], 8 * (a @ b))


def test_compare_names_the_first_wrong_word(rng):
    fields = check_fields("f32.f16.f16.f32", "fresh", 0, 0, 4)
    want = bench.expected_words(fields, element_words(rng, 4 * 4 * 768 // 4, "f16"))
    assert bench.compare(fields, want.ravel().copy(), want) is None
    got = want.copy()
    got[1, 2, 3, 17] = np.float32(7.5).view(np.uint32)
    got[1, 3, 0, 0] ^= 1
    problem = bench.compare(fields, got.ravel(), want)
    assert problem.startswith("2 of 1024 words differ; first: warp 1 accumulator 2 register 3 lane 17: got 7.5, "
                              "the ISA model ")


# -- the build ------------------------------------------------------------------------------------
def test_source_builds_for_sm90a_without_spills(tmp_path):
    try:
        nvcc = bench.find_nvcc(None)
    except SystemExit:
        pytest.skip("no nvcc")
    done = subprocess.run([nvcc, *bench.NVCC_FLAGS, "-cubin", "-o", str(tmp_path / "m.cubin"), str(bench.SOURCE)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    spills = bench._SPILL.findall(done.stderr)
    assert len(spills) == 15 and set(spills) == {("0", "0")}  # 5 variants x 3 instructions


# -- the whole script, with a stand-in for the executable ------------------------------------------
FAKE_EXECUTABLE = '''#!{python}
import sys
sys.path.insert(0, {root!r})
import numpy as np
from benchmarks import mma_ceiling as bench
from tilemlir.backends.cpu.simulate import ptx_isa as isa

print("DEVICE sms=132 cc=9.0 clock_khz=1980000 name=Stand-in H200")
if sys.argv[1] == "check":
    fields = dict(name="tile2x4-f32.bf16.bf16.f32", inst="f32.bf16.bf16.f32", feed="tile", tile_m="2", tile_n="4",
                  accumulators="8", slices="4", warps="2", iters="8")
    values = np.random.default_rng().integers(-2, 3, (4 * 2048 // 4, 2)) / 8.0
    words = isa.pack_halves(isa.half_bits(values.astype(np.float32), "bf16"))
    out = bench.expected_words(fields, words)
    out[1, 7, 2, 30] ^= {flip}
    words.tofile(sys.argv[2] + "/" + fields["name"] + ".in")
    out.tofile(sys.argv[2] + "/" + fields["name"] + ".out")
    print("CHECK " + " ".join(f"{{k}}={{v}}" for k, v in fields.items()))
else:
    print({result!r})
'''


@pytest.mark.parametrize("flip", [0, 1])
def test_main_checks_then_tabulates(flip, tmp_path, monkeypatch, capsys):
    fake = tmp_path / "mma_ceiling"
    fake.write_text(FAKE_EXECUTABLE.format(python=sys.executable, root=str(Path(__file__).resolve().parents[2]),
                                           flip=flip, result=RESULT))
    fake.chmod(0o755)
    monkeypatch.setattr(bench, "find_nvcc", lambda explicit: "nvcc")
    monkeypatch.setattr(bench, "build", lambda nvcc, work: fake)
    status = bench.main(["--keep", str(tmp_path / "work")])
    printed = capsys.readouterr().out
    if flip:
        assert status == 1
        assert ("check tile2x4-f32.bf16.bf16.f32: MISMATCH: 1 of 2048 words differ; first: warp 1 accumulator 7 "
                "register 2 lane 30") in printed
    else:
        assert status == 0 and "check tile2x4-f32.bf16.bf16.f32: bit-exact against the ISA model" in printed
    assert "Stand-in H200, 132 SMs" in printed
    assert "| f32.bf16.bf16.f32 | ldmatrix tile 4x8 (64x64 warp tile) | 8 | 163 | 138.4 |" in printed
