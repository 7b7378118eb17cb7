"""The PTX ISA model of the CPU simulation (backends/cpu/simulate/ptx_isa.py): mma.sync against
float64 matrix products, the fragment tables as bijections and against the ISA's figures,
ldmatrix/stmatrix against direct readings of shared memory, ldmatrix feeding mma (the two tables
must agree as the hardware's do), and cp.async's deferred writes and race checks."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tilemlir.backends.cpu.simulate import ptx_isa as isa
from tilemlir.backends.cpu.simulate.ptx_isa import AsyncCopies, AsyncCopyRace, Mma, PtxError
from tilemlir.testing import relative_error

from support import swizzled

MMAS = [f"mma.sync.aligned.{shape}.row.col.{types}" for shape in ("m16n8k16", "m16n8k8")
        for types in ("f32.f16.f16.f32", "f32.bf16.bf16.f32", "f16.f16.f16.f16")]
NUMPY_HALF = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}


def rounded(values: np.ndarray, etype: str) -> np.ndarray:
    """Values rounded to `etype`, as float64 (the exact inputs the instruction sees)."""
    return np.asarray(values).astype(NUMPY_HALF[etype]).astype(np.float64)


def run_mma(inst: Mma, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Distribute A, B, C to the lanes by the ISA tables, run the warp's mma, gather D."""
    d = isa.mma_sync(inst, isa.fragment_registers(inst.fragment("a"), a, inst.atype),
                     isa.fragment_registers(inst.fragment("b"), b, inst.btype),
                     isa.fragment_registers(inst.fragment("c"), c, inst.ctype))
    return isa.fragment_matrix(inst.fragment("c"), d, inst.dtype).astype(np.float64)


# -- mma.sync ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text", MMAS)
def test_mma_matches_float64_product(text, rng):
    inst = Mma.parse(text)
    m, n, k = inst.mnk
    a = rounded(rng.standard_normal((m, k)), inst.atype)
    b = rounded(rng.standard_normal((k, n)), inst.btype)
    c = rounded(rng.standard_normal((m, n)), inst.ctype)
    want = a @ b + c
    bound = 2.0**-11 + 1e-6 if inst.dtype == "f16" else 1e-6  # one f16 rounding of D; k float32 additions
    assert relative_error(run_mma(inst, a, b, c), want) < bound


@pytest.mark.parametrize("text", MMAS)
def test_mma_exact_on_integers(text, rng):
    """Small integers: every product and partial sum is exact in float32 (and D in f16)."""
    inst = Mma.parse(text)
    m, n, k = inst.mnk
    a, b = rng.integers(-8, 9, (m, k)).astype(np.float64), rng.integers(-8, 9, (k, n)).astype(np.float64)
    c = rng.integers(-64, 65, (m, n)).astype(np.float64)
    np.testing.assert_array_equal(run_mma(inst, a, b, c), a @ b + c)


def test_mma_accumulates_in_float32_in_k_order():
    """The documented model: C + p0 + p1 + ... rounded in float32 after each addition."""
    inst = Mma.parse("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    a, b, c = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
    c[0, 0] = 2.0**24          # 1.0 is below half an ulp of 2**24 in float32: each +1 is lost ...
    a[0, :2], b[:2, 0] = 1.0, 1.0
    a[1, 0], b[0, 1], c[1, 1] = 1.0, 1.0, 2.0**24 - 1  # ... while 2**24 - 1 + 1 is exact
    d = run_mma(inst, a, b, c)
    assert d[0, 0] == 2.0**24 and d[1, 1] == 2.0**24


def test_mma_f16_accumulator_rounds_once():
    inst = Mma.parse("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16")
    a, b, c = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
    a[3, :], b[:, 5] = 1.0, 2.0**-11   # sixteen terms below half an f16 ulp of 1.0 ...
    c[3, 5] = 1.0
    assert run_mma(inst, a, b, c)[3, 5] == 1.0 + 2.0**-7  # ... summed in float32 first, then rounded


@pytest.mark.parametrize("text, problem", [
    ("mma.sync.aligned.m16n8k16.row.col.f16.bf16.bf16.f16", r"\.bf16 inputs accumulate in \.f32 only"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.bf16.f32", r"\.atype and \.btype must both be"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16", r"\.dtype must equal \.ctype"),
    ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", r"only shapes m16n8k16 and m16n8k8"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32", r"\.atype and \.btype must both be"),
    ("mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32", r"not an mma\.sync\.aligned"),
])
def test_mma_rejects_what_the_isa_lacks(text, problem):
    with pytest.raises(PtxError, match=problem):
        Mma.parse(text)


def test_mma_rejects_registers_of_the_wrong_shape():
    inst = Mma.parse("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
    a, b = np.zeros((32, 4), np.uint32), np.zeros((32, 2), np.uint32)
    with pytest.raises(PtxError, match=r"C needs registers of shape \(32, 4\) and dtype float32"):
        isa.mma_sync(inst, a, b, np.zeros((32, 4), np.uint32))
    with pytest.raises(PtxError, match=r"A needs registers of shape \(32, 4\)"):
        isa.mma_sync(inst, a[:, :2], b, np.zeros((32, 4), np.float32))


# -- the tables --------------------------------------------------------------------------------
TABLES = sorted(isa.FRAGMENTS.items()) + [(("ldmatrix",), isa.LDMATRIX_M8N8_B16)]


@pytest.mark.parametrize("key, fragment", TABLES, ids=[f.name for _, f in TABLES])
def test_table_is_a_bijection(key, fragment):
    cells = fragment.coords.reshape(-1, 2)
    assert len(cells) == fragment.rows * fragment.cols
    assert len({tuple(cell) for cell in cells}) == len(cells)
    assert cells.min() == 0 and cells[:, 0].max() == fragment.rows - 1 and cells[:, 1].max() == fragment.cols - 1


# (lane, register, element) -> (row, col), read off Figures 79, 81, 83 (m16n8k16), 74 (m16n8k8 B)
# and 104 (ldmatrix) of the ISA, not computed from the formulas.
FIGURE_CELLS = [
    (("m16n8k16", "a", "f16"), [((0, 0, 0), (0, 0)), ((0, 1, 0), (8, 0)), ((0, 2, 1), (0, 9)),
                                ((0, 3, 0), (8, 8)), ((5, 1, 1), (9, 3)), ((31, 3, 1), (15, 15))]),
    (("m16n8k16", "b", "bf16"), [((0, 0, 1), (1, 0)), ((0, 1, 0), (8, 0)), ((6, 0, 0), (4, 1)),
                                 ((31, 1, 1), (15, 7))]),
    (("m16n8k16", "c", "f32"), [((0, 1, 0), (0, 1)), ((4, 0, 0), (1, 0)), ((7, 2, 0), (9, 6)),
                                ((31, 3, 0), (15, 7))]),
    (("m16n8k16", "c", "f16"), [((7, 0, 1), (1, 7)), ((7, 1, 0), (9, 6))]),
    (("m16n8k8", "b", "f16"), [((9, 0, 1), (3, 2)), ((31, 0, 1), (7, 7))]),
    (("ldmatrix",), [((0, 0, 1), (0, 1)), ((3, 0, 0), (0, 6)), ((4, 0, 0), (1, 0)), ((31, 0, 1), (7, 7))]),
]


@pytest.mark.parametrize("key, cells", FIGURE_CELLS, ids=[" ".join(k) for k, _ in FIGURE_CELLS])
def test_table_matches_the_isa_figures(key, cells):
    fragment = isa.LDMATRIX_M8N8_B16 if key == ("ldmatrix",) else isa.FRAGMENTS[key]
    for (lane, register, element), cell in cells:
        assert tuple(fragment.coords[lane, register, element]) == cell, (lane, register, element)


def test_half_bits_round_to_nearest_even_like_ml_dtypes(rng):
    values = (rng.standard_normal(4096) * 10.0 ** rng.integers(-30, 30, 4096)).astype(np.float32)
    values[:4] = [np.inf, -np.inf, np.finfo(np.float32).max, 1.0 + 2.0**-8]  # to inf; a tie to even
    for etype in ("f16", "bf16"):
        with np.errstate(over="ignore"):
            want = values.astype(NUMPY_HALF[etype]).view(np.uint16)
        np.testing.assert_array_equal(isa.half_bits(values, etype), want)
        np.testing.assert_array_equal(isa.half_values(want, etype), want.view(NUMPY_HALF[etype]).astype(np.float32))
    assert isa.half_bits(np.float32(np.nan), "bf16") == 0x7FC0


def test_pack_puts_element_zero_low():
    assert isa.pack_halves(np.array([0x1234, 0xABCD], np.uint16)) == 0xABCD1234
    np.testing.assert_array_equal(isa.unpack_halves(np.uint32(0xABCD1234)), [0x1234, 0xABCD])


# -- ldmatrix / stmatrix -----------------------------------------------------------------------
def random_rows(rng, count: int, shared_bytes: int) -> np.ndarray:
    """`count` distinct, scattered 16-byte row addresses."""
    return rng.choice(shared_bytes // 16, count, replace=False) * 16


def direct_read(shared: np.ndarray, rows: np.ndarray, trans: bool) -> np.ndarray:
    """Registers [lane, matrix] read straight off the ISA's text: lane l's register i holds
    elements 2(l%4), 2(l%4)+1 of row l/4 of matrix i (of its transpose with .trans)."""
    num = len(rows) // 8
    words = np.zeros((32, num), np.uint32)
    for i in range(num):
        matrix = [[int(shared[rows[8 * i + r] + 2 * c]) | int(shared[rows[8 * i + r] + 2 * c + 1]) << 8
                   for c in range(8)] for r in range(8)]
        for lane in range(32):
            r, c = lane // 4, 2 * (lane % 4)
            lo, hi = (matrix[c][r], matrix[c + 1][r]) if trans else (matrix[r][c], matrix[r][c + 1])
            words[lane, i] = lo | hi << 16
    return words


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_reads_rows_at_the_lanes_addresses(num, trans, rng):
    shared = rng.integers(0, 256, 4096, dtype=np.uint8)
    addresses = np.full(32, -3)  # lanes past 8 * num give no address
    addresses[:8 * num] = random_rows(rng, 8 * num, shared.size)
    got = isa.ldmatrix(shared, addresses, num, trans)
    np.testing.assert_array_equal(got, direct_read(shared, addresses[:8 * num], trans))


def test_ldmatrix_rejects_bad_addresses():
    shared = np.zeros(1024, np.uint8)
    addresses = np.arange(32) * 16
    with pytest.raises(PtxError, match=r"lane 3's row address 56 is not a 16-byte aligned row"):
        isa.ldmatrix(shared, np.where(np.arange(32) == 3, 56, addresses), 4)
    with pytest.raises(PtxError, match=r"lane 1's row address 1024 .* inside the 1024-byte shared memory"):
        isa.ldmatrix(shared, np.where(np.arange(32) == 1, 1024, addresses), 1)
    with pytest.raises(PtxError, match=r"\.num must be \.x1, \.x2 or \.x4, got 3"):
        isa.ldmatrix(shared, addresses, 3)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_is_the_inverse_of_ldmatrix(num, trans, rng):
    shared = rng.integers(0, 256, 2048, dtype=np.uint8)
    addresses = np.zeros(32, np.int64)
    addresses[:8 * num] = random_rows(rng, 8 * num, shared.size)
    registers = rng.integers(0, 2**32, (32, num), dtype=np.uint32)
    before = shared.copy()
    isa.stmatrix(shared, addresses, registers, trans)
    np.testing.assert_array_equal(isa.ldmatrix(shared, addresses, num, trans), registers)
    touched = (addresses[:8 * num, None] + np.arange(16)).ravel()
    untouched = np.setdiff1d(np.arange(shared.size), touched)
    np.testing.assert_array_equal(shared[untouched], before[untouched])


def test_stmatrix_stores_an_mma_accumulator_row_major(rng):
    """The epilogue's path: D (f32) -> bf16 pairs -> stmatrix.x2 by rows (lane l: row l of 16)
    writes D row-major, so the C/D table and stmatrix's agree."""
    fragment = isa.FRAGMENTS["m16n8k16", "c", "f32"]
    d = rng.standard_normal((16, 8)).astype(np.float32)
    words = isa.fragment_registers(fragment, d, "f32")
    pairs = isa.pack_halves(isa.half_bits(words.reshape(32, 2, 2), "bf16"))  # (c0, c1), (c2, c3)
    shared = np.zeros(16 * 64, np.uint8)
    isa.stmatrix(shared, np.arange(32) % 16 * 64 + 32, pairs)
    stored = shared.reshape(16, 64)[:, 32:48].copy().view(np.uint16)
    np.testing.assert_array_equal(stored, d.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_stmatrix_rejects_overlapping_rows():
    with pytest.raises(PtxError, match="two row addresses overlap"):
        isa.stmatrix(np.zeros(512, np.uint8), np.arange(32) % 8 * 16, np.zeros((32, 2), np.uint32))


# -- ldmatrix feeding mma ----------------------------------------------------------------------
def shared_matrix(matrix: np.ndarray, etype: str, row_bytes: int, shared: np.ndarray, base: int) -> None:
    """Store `matrix` row-major in 16-bit `etype` at `base`, rows `row_bytes` apart."""
    bits = isa.half_bits(matrix.astype(np.float32), etype)
    for r, row in enumerate(bits):
        shared[base + r * row_bytes:base + r * row_bytes + 2 * len(row)] = row.astype("<u2").view(np.uint8)


def mma_from_shared(inst: Mma, a: np.ndarray, b: np.ndarray, b_layout: str, rng) -> np.ndarray:
    """A (16x16) and B loaded as lower-gemm-mma plans: A by ldmatrix.x4 (lane l: row l % 16,
    column block l / 16); B stored K x N by ldmatrix.x2.trans (lane l: row l % 16) or N x K by
    ldmatrix.x2 (lane l: row l % 8, column block (l / 8) % 2). Rows are padded (80 bytes apart)."""
    shared = rng.integers(0, 256, 4096, dtype=np.uint8)
    lane = np.arange(32)
    shared_matrix(a, inst.atype, 80, shared, 0)
    a_regs = isa.ldmatrix(shared, lane % 16 * 80 + lane // 16 * 16, 4)
    if b_layout == "kn":
        shared_matrix(b, inst.btype, 80, shared, 2048)
        b_regs = isa.ldmatrix(shared, 2048 + lane % 16 * 80, 2, trans=True)
    else:
        shared_matrix(b.T, inst.btype, 80, shared, 2048)
        b_regs = isa.ldmatrix(shared, 2048 + lane % 8 * 80 + lane // 8 % 2 * 16, 2)
    c = isa.fragment_registers(inst.fragment("c"), np.zeros((16, 8)), inst.ctype)
    return isa.fragment_matrix(inst.fragment("c"), isa.mma_sync(inst, a_regs, b_regs, c), inst.dtype)


@pytest.mark.parametrize("text", [t for t in MMAS if ".m16n8k16." in t])
@pytest.mark.parametrize("b_layout", ["kn", "nk"])
def test_ldmatrix_feeds_mma(text, b_layout, rng):
    inst = Mma.parse(text)
    a, b = rng.integers(-8, 9, (16, 16)).astype(np.float64), rng.integers(-8, 9, (16, 8)).astype(np.float64)
    np.testing.assert_array_equal(mma_from_shared(inst, a, b, b_layout, rng), a @ b)
    a, b = rounded(rng.standard_normal((16, 16)), inst.atype), rounded(rng.standard_normal((16, 8)), inst.btype)
    bound = 2.0**-11 + 1e-6 if inst.dtype == "f16" else 1e-6
    assert relative_error(mma_from_shared(inst, a, b, b_layout, rng), a @ b) < bound


def test_ldmatrix_without_trans_for_kn_b_gives_the_wrong_product(rng):
    """The pairing is sensitive: a K x N B read without .trans multiplies by another matrix."""
    inst = Mma.parse("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
    a, b = rng.integers(-8, 9, (16, 16)).astype(np.float64), rng.integers(-8, 9, (16, 8)).astype(np.float64)
    shared = np.zeros(4096, np.uint8)
    lane = np.arange(32)
    shared_matrix(a, "bf16", 32, shared, 0)
    shared_matrix(b, "bf16", 16, shared, 1024)
    a_regs = isa.ldmatrix(shared, lane % 16 * 32 + lane // 16 * 16, 4)
    b_regs = isa.ldmatrix(shared, 1024 + lane % 16 * 16, 2)
    c = np.zeros((32, 4), np.float32)
    d = isa.fragment_matrix(inst.fragment("c"), isa.mma_sync(inst, a_regs, b_regs, c), "f32")
    assert not np.array_equal(d, a @ b)


def test_ldmatrix_x4_trans_feeds_two_n_atoms(rng):
    """B K x N (16 x 16) by one ldmatrix.x4.trans: registers 0-1 are n-atom 0's, 2-3 n-atom 1's."""
    inst = Mma.parse("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    a, b = rng.integers(-8, 9, (16, 16)).astype(np.float64), rng.integers(-8, 9, (16, 16)).astype(np.float64)
    shared = rng.integers(0, 256, 4096, dtype=np.uint8)
    lane = np.arange(32)
    shared_matrix(a, "f16", 48, shared, 0)
    shared_matrix(b, "f16", 48, shared, 1024)
    a_regs = isa.ldmatrix(shared, lane % 16 * 48 + lane // 16 * 16, 4)
    b_regs = isa.ldmatrix(shared, 1024 + (lane % 8 + lane // 8 % 2 * 8) * 48 + lane // 16 * 16, 4, trans=True)
    zero = np.zeros((32, 4), np.float32)
    halves = [isa.fragment_matrix(inst.fragment("c"), isa.mma_sync(inst, a_regs, b_regs[:, 2 * j:2 * j + 2], zero),
                                  "f32") for j in range(2)]
    np.testing.assert_array_equal(np.hstack(halves), a @ b)


# -- cp.async ----------------------------------------------------------------------------------
def test_cp_async_lands_at_the_wait_that_retires_its_group(rng):
    copies, shared = AsyncCopies(1024), np.zeros(1024, np.uint8)
    data = rng.integers(1, 256, 16, dtype=np.uint8)
    copies.issue(0, 64, data, 16, cache="cg")
    copies.commit(0)
    with pytest.raises(AsyncCopyRace, match=r"thread 0 reads shared bytes \[72, 76\) while thread 0's cp.async #0 "
                                            r"of bytes \[64, 80\) \(pending group 1 of 1, oldest first\)"):
        copies.check_access(0, 72, 4)
    assert np.all(shared[64:80] == 0)
    landed = copies.wait(0, 0)
    assert [(w.thread, w.dst, w.data) for w in landed] == [(0, 64, data.tobytes())]
    for write in landed:
        write.apply(shared)
    np.testing.assert_array_equal(shared[64:80], data)
    copies.check_access(0, 72, 4)
    copies.check_access(1, 64, 16, write=True)
    assert copies.pending() == []


def test_wait_group_n_keeps_the_newest_n_groups():
    copies = AsyncCopies()
    for group in range(4):
        copies.issue(3, 16 * group, bytes([group + 1] * 8), 8)
        copies.issue(3, 16 * group + 8, bytes([group + 1] * 8), 8)
        copies.commit(3)
    assert copies.wait(3, 4) == []
    assert [w.dst for w in copies.wait(3, 3)] == [0, 8]
    assert [(w.dst, w.data) for w in copies.wait(3, 1)] == [(16, b"\x02" * 8), (24, b"\x02" * 8),
                                                            (32, b"\x03" * 8), (40, b"\x03" * 8)]
    assert [w.dst for w in copies.pending(3)] == [48, 56]
    assert copies.wait(3, 1) == []
    assert [w.dst for w in copies.wait(3, 0)] == [48, 56]
    assert copies.pending() == []


def test_wait_group_leaves_uncommitted_copies_and_wait_all_commits_them():
    copies = AsyncCopies()
    copies.issue(0, 0, b"\x01" * 4, 4)
    copies.commit(0)
    copies.issue(0, 16, b"\x02" * 4, 4)
    assert [w.dst for w in copies.wait(0, 0)] == [0]
    with pytest.raises(AsyncCopyRace, match=r"cp.async #1 of bytes \[16, 20\) \(not committed yet\)"):
        copies.check_access(5, 18, 1)
    assert [w.dst for w in copies.wait_all(0)] == [16]


def test_empty_group_is_trivially_complete():
    copies = AsyncCopies()
    copies.issue(0, 0, b"\x07" * 16, 16)
    copies.commit(0)
    copies.commit(0)  # an empty group, newest
    assert [w.dst for w in copies.wait(0, 1)] == [0]  # retires the full group, keeps the empty one
    assert copies.wait(0, 0) == []


def test_threads_wait_for_their_own_groups():
    copies = AsyncCopies()
    copies.issue(0, 0, b"\x01" * 16, 16)
    copies.issue(1, 16, b"\x02" * 16, 16)
    copies.commit(0)
    copies.commit(1)
    assert [w.thread for w in copies.wait(1, 0)] == [1]
    with pytest.raises(AsyncCopyRace, match="thread 1 reads .* while thread 0's cp.async #0"):
        copies.check_access(1, 0, 16)


@pytest.mark.parametrize("src_size", [0, 3, 8, 16])
def test_src_size_zero_fills_the_rest(src_size, rng):
    copies, shared = AsyncCopies(), np.full(64, 0xEE, np.uint8)
    data = rng.integers(1, 256, src_size, dtype=np.uint8)
    copies.issue(2, 32, data, 16)
    for write in copies.wait_all(2):
        write.apply(shared)
    np.testing.assert_array_equal(shared[32:32 + src_size], data)
    assert np.all(shared[32 + src_size:48] == 0) and np.all(shared[:32] == 0xEE) and np.all(shared[48:] == 0xEE)


def test_overlapping_pending_copies_race():
    copies = AsyncCopies()
    copies.issue(0, 0, b"", 16)
    copies.commit(0)
    with pytest.raises(AsyncCopyRace, match=r"thread 4's cp.async to shared bytes \[8, 16\) overlaps thread 0's"):
        copies.issue(4, 8, b"", 8)
    copies.issue(4, 16, b"", 8)  # adjacent bytes are fine
    with pytest.raises(AsyncCopyRace, match=r"thread 9 writes shared bytes \[15, 17\)"):
        copies.check_access(9, 15, 2, write=True)


@pytest.mark.parametrize("kwargs, problem", [
    ({"size": 12}, r"cp.async.ca copies 4, 8 or 16 bytes, got 12"),
    ({"size": 8, "cache": "cg"}, r"cp.async.cg copies 16 bytes, got 8"),
    ({"size": 4, "src": b"12345"}, r"src-size 5 exceeds cp-size 4"),
    ({"size": 16, "dst": 8}, r"dst address 8 is not aligned to its 16 bytes"),
    ({"size": 8, "src_address": 4}, r"src address 4 is not aligned to its 8 bytes"),
    ({"size": 16, "dst": 256}, r"dst bytes \[256, 272\) leave the 256-byte shared memory"),
    ({"size": 16, "cache": "cs"}, r"cache operator must be .ca or .cg"),
])
def test_cp_async_rejects_what_the_isa_forbids(kwargs, problem):
    args = {"dst": 0, "src": b"", **kwargs}
    with pytest.raises(PtxError, match=problem):
        AsyncCopies(256).issue(0, args.pop("dst"), args.pop("src"), args.pop("size"), **args)


def test_wait_group_needs_a_non_negative_count():
    with pytest.raises(PtxError, match="non-negative integer constant, got -1"):
        AsyncCopies().wait(0, -1)


# -- wgmma.mma_async ---------------------------------------------------------------------------------
def test_descriptor_fields_sit_where_the_isa_puts_them():
    """9.7.15.5.1.2.2: start >> 4 in bits 13-0, LBO >> 4 in 29-16, SBO >> 4 in 45-32, base offset in 51-49,
    the swizzle mode in 63-62 (128 B: 1, 64 B: 2, 32 B: 3)."""
    desc = isa.MatrixDescriptor(start=0x400, leading=16, stride=1024, swizzle=128)
    assert desc.bits() == 0x40 | 1 << 16 | 64 << 32 | 1 << 62
    assert isa.MatrixDescriptor(0, 8192, 512, 64).bits() == 512 << 16 | 32 << 32 | 2 << 62
    assert isa.MatrixDescriptor(0, 16, 256, 32).bits() >> 62 == 3
    for swizzle in (0, 32, 64, 128):
        again = isa.MatrixDescriptor(0x3FFF0, 0x3FFF0, 16, swizzle, base_offset=5)
        assert isa.MatrixDescriptor.decode(again.bits()) == again
    with pytest.raises(PtxError, match="start 8 is not a multiple of 16"):
        isa.MatrixDescriptor(8, 16, 16, 128)


def _exact(shape, stride, mn, k):
    """A CuTe layout ((mn modes), (k modes)) : ((strides), (strides)) at (mn, k), colexicographic."""
    offset = 0
    for coord, modes, steps in ((mn, shape[0], stride[0]), (k, shape[1], stride[1])):
        for extent, step in zip(modes, steps):
            offset += (coord % extent) * step
            coord //= extent
    return offset


# The ISA's worked examples under "Canonical Layouts": (major, swizzle, element bytes, exact layout in
# elements, LBO, SBO in bytes); LBO is "NA" (not used) for the swizzled K-major one.
ISA_EXAMPLES = [
    ("k", 0, 4, (((8, 2), (4, 4)), ((4, 32), (1, 64))), 64 * 4, 32 * 4),
    ("k", 32, 4, (((8, 2), (4, 4)), ((8, 64), (1, 4))), 16, 64 * 4),
    ("mn", 0, 2, (((8, 1, 2), (8, 2)), ((1, 8, 64), (8, 128))), 128 * 2, 64 * 2),
    ("mn", 32, 2, (((8, 2, 2), (8, 2)), ((1, 8, 128), (16, 256))), 128 * 2, 256 * 2),
    ("mn", 64, 2, (((8, 4, 2), (8, 2)), ((1, 8, 256), (32, 512))), 256 * 2, 512 * 2),
]


@pytest.mark.parametrize("major, swizzle, element_bytes, exact, lbo, sbo", ISA_EXAMPLES,
                         ids=[f"{e[0]}-major-{e[1]}B-{e[2]}byte" for e in ISA_EXAMPLES])
def test_canonical_layouts_give_the_isa_examples(major, swizzle, element_bytes, exact, lbo, sbo):
    (mn_shape, k_shape), _ = exact
    for mn in range(int(np.prod(mn_shape))):
        for k in range(int(np.prod(k_shape))):
            want = _exact(*exact, mn, k) * element_bytes
            assert isa.canonical_offset(major, swizzle, mn, k, element_bytes, lbo, sbo) == want, (mn, k)


def test_canonical_offset_terms_are_linear_in_lbo_and_sbo():
    terms = isa.canonical_offset_terms("mn", 64, 64, 2)
    for mn, k in ((0, 0), (37, 5), (63, 15)):
        c0, c1, c2 = terms[mn, k]
        assert c0 + c1 * 4096 + c2 * 1024 == isa.canonical_offset("mn", 64, mn, k, 2, 4096, 1024)


def test_swizzle_xors_the_chunk_bits_with_bits_7_up():
    assert isa.swizzle_address(0x80 + 0x10, 128) == 0x80  # row 1, chunk 1 -> chunk 0
    assert isa.swizzle_address(7 * 128, 128) == 7 * 128 + 0x70
    assert isa.swizzle_address(3 * 128 + 0x20, 64) == 3 * 128 + 0x20 ^ 0x30
    assert isa.swizzle_address(0x80, 32) == 0x90 and isa.swizzle_address(0x100, 32) == 0x100
    assert isa.swizzle_address(0x90, 0) == 0x90


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_d_fragment_is_a_bijection(n):
    fragment = isa.wgmma_d_fragment(n)
    cells = fragment.coords.reshape(-1, 2)
    assert fragment.coords.shape == (128, n // 2, 1, 2)
    assert len({tuple(cell) for cell in cells}) == 64 * n and cells.max(0).tolist() == [63, n - 1]


def test_wgmma_d_fragment_matches_figure_149():
    """(thread, register) -> (row, col) read off Figure 149 (WGMMA .m64nNk16 D): T0 d0..d3 at rows 0 and 8,
    cols 0-1; d4 at col 8; T4 one row down; T32 (warp 1) at row 16; T127's last at (63, N - 1)."""
    coords = isa.wgmma_d_fragment(64).coords[:, :, 0]
    cells = {(0, 0): (0, 0), (0, 1): (0, 1), (0, 2): (8, 0), (0, 3): (8, 1), (0, 4): (0, 8), (4, 0): (1, 0),
             (3, 1): (0, 7), (32, 0): (16, 0), (127, 31): (63, 63)}
    for (thread, register), cell in cells.items():
        assert tuple(coords[thread, register]) == cell


@pytest.mark.parametrize("trans_a, trans_b, swizzle", [(False, False, 128), (True, True, 64), (False, True, 32)])
def test_wgmma_reads_the_swizzled_tiles_the_compiler_lays_out(trans_a, trans_b, swizzle, rng):
    """A (64 x K) and B (K x 64), K = one swizzle row of bf16, stored as docs/tensor_cores.md's swizzled
    buffers (support.swizzled), one after the other from a 1024-byte boundary; descriptors per the ISA's
    strides; the wgmma's k16 against float64."""
    n, k = 64, swizzle // 2
    a = rounded(rng.standard_normal((64, k)), "bf16")
    b = rounded(rng.standard_normal((k, n)), "bf16")
    c = rng.standard_normal((64, n)).astype(np.float32)
    stored_a = a.T if trans_a else a  # [K, M] (M-major) or [M, K]
    stored_b = b if trans_b else b.T  # [K, N] (N-major) or [N, K]
    buffers = [swizzled(m.astype(ml_dtypes.bfloat16), swizzle).view(np.uint8) for m in (stored_a, stored_b)]
    shared = np.concatenate(buffers)

    def descriptor(start, stored, mn_major):
        rows = stored.shape[0]
        leading = rows * swizzle if mn_major else 16  # MN-major: the next W bytes along MN; K-major: unused
        return isa.MatrixDescriptor(start, leading, 8 * swizzle, swizzle).bits()

    d = isa.wgmma_m64nNk16(shared, descriptor(0, stored_a, trans_a), descriptor(buffers[0].size, stored_b, trans_b),
                           isa.wgmma_d_fragment(n).gather(c)[..., 0], n, "bf16", trans_a, trans_b)
    got = isa.wgmma_d_fragment(n).scatter(d[..., None])
    assert relative_error(got, a[:, :16] @ b[:16] + c) < 1e-6


def test_fp8_elements_decode_as_the_formats_define_them():
    """e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits, no infinities (S.1111.111 is NaN, so 448 is the
    largest); e5m2: 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like."""
    raw = np.array([[0x38], [0xB8], [0x7E], [0x01], [0x7F]], dtype=np.uint8)
    got = isa.element_values(raw, "e4m3")
    assert got[:4].tolist() == [1.0, -1.0, 448.0, 2.0 ** -9] and np.isnan(got[4])
    raw = np.array([[0x3C], [0x7B], [0x01], [0x7C]], dtype=np.uint8)
    assert isa.element_values(raw, "e5m2").tolist() == [1.0, 57344.0, 2.0 ** -16, np.inf]


def test_fp8_wgmma_is_k32_and_k_major():
    """9.7.15.2: .m64nNk32 for .e4m3 / .e5m2; with 1-byte elements (T = 16) the K-major 128-byte layout
    ((8, m), (T, 2k)) : ((8T, SBO), (1, T)) puts a row's 32 k in 32 consecutive bytes."""
    assert [isa.wgmma_k(t) for t in ("f16", "bf16", "e4m3", "e5m2")] == [16, 16, 32, 32]
    for mn, k in ((0, 0), (5, 17), (13, 31)):
        assert isa.canonical_offset("k", 128, mn, k, 1, 16, 1024) == (mn % 8) * 128 + (mn // 8) * 1024 + k
    with pytest.raises(PtxError, match="wgmma .m64nNk32 takes .e4m3 or .e5m2 operands, got 'bf16'"):
        isa.wgmma_m64nNk32(np.zeros(1 << 15, np.uint8), 0, 0, np.zeros((128, 4), np.float32), 8, "bf16", "e4m3")


FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


@pytest.mark.parametrize("swizzle, step, a_type, b_type", [(128, 0, "e4m3", "e4m3"), (128, 3, "e4m3", "e5m2"),
                                                           (64, 1, "e5m2", "e4m3"), (32, 0, "e5m2", "e5m2")])
def test_fp8_wgmma_reads_the_swizzled_k_major_tiles(swizzle, step, a_type, b_type, rng):
    """A (64 x K) and B stored N x K, K = one swizzle row of fp8, laid out as the compiler's swizzled buffers;
    k32 step `step` starts 32 step bytes into the row (within the panel, before the hardware's XOR); the wgmma's
    k32 against float64 of the decoded fp8 values."""
    n, k = 64, swizzle
    a = rng.standard_normal((64, k)).astype(FP8[a_type])
    b = rng.standard_normal((n, k)).astype(FP8[b_type])
    c = rng.standard_normal((64, n)).astype(np.float32)
    buffers = [swizzled(m, swizzle, element_bytes=1).view(np.uint8) for m in (a, b)]
    shared = np.concatenate(buffers)
    descriptor = lambda start: isa.MatrixDescriptor(start + 32 * step, 16, 8 * swizzle, swizzle).bits()
    d = isa.wgmma_m64nNk32(shared, descriptor(0), descriptor(buffers[0].size), isa.wgmma_d_fragment(n).gather(c)[..., 0],
                           n, a_type, b_type)
    got = isa.wgmma_d_fragment(n).scatter(d[..., None])
    ks = slice(32 * step, 32 * step + 32)
    want = a[:, ks].astype(np.float64) @ b[:, ks].astype(np.float64).T + c
    assert relative_error(got, want) < 1e-6


def test_the_isa_model_loads_without_mlir():
    """benchmarks/mma_ceiling.py runs it on the GPU machine, which has no MLIR: the CPU backend's
    package face must not import its MLIR-using modules."""
    import subprocess
    import sys

    code = ("import sys\nfrom tilemlir.backends.cpu.simulate import ptx_isa\n"
            "print(sorted(m for m in sys.modules if m.startswith(('torch_mlir', 'tilemlir.mlir', 'llvmlite'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
