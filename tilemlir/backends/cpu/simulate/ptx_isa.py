"""Warp-level semantics of the PTX instructions tensor-core code runs on: mma.sync, ldmatrix,
stmatrix and cp.async, written from the PTX ISA's text (version 9.1), not from tilemlir's layout
code (analysis/layouts.py), so that a lowering whose layouts disagree with the hardware's fails
in the CPU simulation. Numpy (and ml_dtypes for the fp8 formats' values). Sections (numbers move between ISA versions, names do not):

- 9.7.14.5.7  "Matrix Fragments for mma.m16n8k8" (.f16/.bf16 A and B, .f16/.f32 C and D)
- 9.7.14.5.8  "Matrix Fragments for mma.m16n8k16 with floating point type"
- 9.7.14.5.14 "Multiply-and-Accumulate Instruction: mma" (type rules, "Precision and rounding")
- 9.7.14.5.15 "Warp-level matrix load instruction: ldmatrix" (its text and Figure 104)
- 9.7.14.5.16 "Warp-level matrix store instruction: stmatrix" (its text and Figure 107)
- 9.7.9.25.3.1-3 "cp.async", "cp.async.commit_group", "cp.async.wait_group / cp.async.wait_all"
- 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma, below)

Conventions. Registers are numpy arrays indexed `[lane, register]`: uint32 words for registers
holding two 16-bit elements, float32 for .f32 accumulators. The ISA lists a register's elements
"low to high", so element 2j of a fragment is bits 0-15 of register j and element 2j+1 bits
16-31. Shared memory is a flat uint8 array indexed by byte address, little endian (a .b32 load
of a 16-bit pair puts the lower address in the low half).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import ml_dtypes
import numpy as np

from tilemlir.diagnostics import TilemlirError

WARP = 32
HALF_TYPES = ("f16", "bf16")


class PtxError(TilemlirError, ValueError):
    """An instruction used outside what the PTX ISA defines (a type combination it lacks,
    a misaligned or out-of-range address, operands of the wrong shape)."""


class AsyncCopyRace(TilemlirError):
    """Shared memory touched while a cp.async write to it has not landed (the program's bug)."""


# -- 16-bit elements in .b32 registers --------------------------------------------------------
def half_bits(values: np.ndarray, etype: str) -> np.ndarray:
    """float32 values -> uint16 bits of f16 or bf16, rounded to nearest even (past the largest
    finite value to infinity)."""
    values = np.asarray(values, dtype=np.float32)
    if etype == "f16":
        with np.errstate(over="ignore"):
            return values.astype(np.float16).view(np.uint16)
    _check_half_type(etype)
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def half_values(bits: np.ndarray, etype: str) -> np.ndarray:
    """uint16 bits of f16 or bf16 -> their float32 values (exact)."""
    bits = np.asarray(bits, dtype=np.uint16)
    if etype == "f16":
        return bits.view(np.float16).astype(np.float32)
    _check_half_type(etype)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def pack_halves(bits: np.ndarray) -> np.ndarray:
    """uint16 elements [..., 2] -> uint32 registers [...]: element 0 low, element 1 high."""
    bits = np.asarray(bits, dtype=np.uint16)
    return bits[..., 0].astype(np.uint32) | (bits[..., 1].astype(np.uint32) << 16)


def unpack_halves(words: np.ndarray) -> np.ndarray:
    """uint32 registers [...] -> uint16 elements [..., 2] (low half first)."""
    words = np.asarray(words, dtype=np.uint32)
    return np.stack([words & 0xFFFF, words >> 16], axis=-1).astype(np.uint16)


def _check_half_type(etype: str) -> None:
    if etype not in HALF_TYPES:
        raise PtxError(f"16-bit element type must be one of {', '.join(HALF_TYPES)}, got {etype!r}")


# -- fragment tables --------------------------------------------------------------------------
@dataclass(frozen=True)
class Fragment:
    """Where each lane's register elements sit in a `rows x cols` matrix:
    `coords[lane, register, element] = (row, col)`."""

    name: str
    rows: int
    cols: int
    coords: np.ndarray = field(repr=False)

    @property
    def registers(self) -> int:
        return self.coords.shape[1]

    @property
    def per_register(self) -> int:
        return self.coords.shape[2]

    def gather(self, matrix: np.ndarray) -> np.ndarray:
        """The matrix's elements as the lanes hold them: [lane, register, element]."""
        matrix = np.asarray(matrix)
        if matrix.shape != (self.rows, self.cols):
            raise PtxError(f"{self.name} holds a {self.rows}x{self.cols} matrix, got shape {matrix.shape}")
        return matrix[self.coords[..., 0], self.coords[..., 1]]

    def scatter(self, elements: np.ndarray) -> np.ndarray:
        """The matrix the lanes' elements [lane, register, element] form."""
        elements = np.asarray(elements)
        if elements.shape != self.coords.shape[:3]:
            raise PtxError(f"{self.name} has elements of shape {self.coords.shape[:3]}, got {elements.shape}")
        matrix = np.zeros((self.rows, self.cols), dtype=elements.dtype)
        matrix[self.coords[..., 0], self.coords[..., 1]] = elements
        return matrix


def _fragment(name: str, rows: int, cols: int, registers: int, per_register: int,
              where: Callable[[int, int], tuple[int, int]]) -> Fragment:
    """Evaluate the ISA's formula `where(lane, i) -> (row, col)` for element i of every lane,
    element i being element i % per_register of register i // per_register."""
    coords = np.array([[[where(lane, r * per_register + e) for e in range(per_register)]
                        for r in range(registers)] for lane in range(WARP)], dtype=np.int64)
    coords.setflags(write=False)
    return Fragment(name, rows, cols, coords)


def _lane_split(lane: int) -> tuple[int, int]:
    # "groupID = %laneid >> 2", "threadID_in_group = %laneid % 4" (every mma fragment section)
    return lane >> 2, lane % 4


def _m16n8k16_a(lane: int, i: int) -> tuple[int, int]:
    # 9.7.14.5.8, Multiplicand A, .f16/.bf16 (a0..a7 in four .f16x2 registers):
    #   row = groupID for ai where 0 <= i < 2 || 4 <= i < 6;  groupID + 8 otherwise
    #   col = (threadID_in_group * 2) + (i & 0x1)      for ai where i <  4
    #         (threadID_in_group * 2) + (i & 0x1) + 8  for ai where i >= 4
    group, tig = _lane_split(lane)
    row = group if (0 <= i < 2 or 4 <= i < 6) else group + 8
    col = tig * 2 + (i & 0x1) if i < 4 else tig * 2 + (i & 0x1) + 8
    return row, col


def _m16n8k16_b(lane: int, i: int) -> tuple[int, int]:
    # 9.7.14.5.8, Multiplicand B, .f16/.bf16 (b0..b3 in two .f16x2 registers):
    #   row = (threadID_in_group * 2) + (i & 0x1)      for bi where i <  2
    #         (threadID_in_group * 2) + (i & 0x1) + 8  for bi where i >= 2
    #   col = groupID
    group, tig = _lane_split(lane)
    row = tig * 2 + (i & 0x1) if i < 2 else tig * 2 + (i & 0x1) + 8
    return row, group


def _m16n8_c(lane: int, i: int) -> tuple[int, int]:
    # 9.7.14.5.8 and 9.7.14.5.7, Accumulators C/D (c0..c3: four .f32 or two .f16x2 registers):
    #   row = groupID for ci where i < 2;  groupID + 8 for ci where i >= 2
    #   col = (threadID_in_group * 2) + (i & 0x1)  for ci where i = {0,..,3}
    group, tig = _lane_split(lane)
    return (group if i < 2 else group + 8), tig * 2 + (i & 0x1)


def _m16n8k8_a(lane: int, i: int) -> tuple[int, int]:
    # 9.7.14.5.7, Multiplicand A, .f16/.bf16 (a0..a3 in two .f16x2 registers):
    #   row = groupID for a0 and a1;  groupID + 8 for a2 and a3
    #   col = threadID_in_group * 2 + (i & 0x1)  for ai where i = {0,..,3}
    group, tig = _lane_split(lane)
    return (group if i < 2 else group + 8), tig * 2 + (i & 0x1)


def _m16n8k8_b(lane: int, i: int) -> tuple[int, int]:
    # 9.7.14.5.7, Multiplicand B, .f16/.bf16 (b0, b1 in one .f16x2 register):
    #   row = (threadID_in_group * 2) + i  for bi where i = {0, 1};  col = groupID
    group, tig = _lane_split(lane)
    return tig * 2 + i, group


def _ldmatrix_m8n8(lane: int, i: int) -> tuple[int, int]:
    # 9.7.14.5.15: "Each thread in a warp loads fragments of a row, with thread 0 receiving the
    # first fragment in its register r, and so on. A group of four threads loads an entire row
    # of the matrix" (Figure 104: thread t holds row t / 4, elements 2 * (t % 4) and + 1).
    return lane // 4, 2 * (lane % 4) + i


def _stmatrix_m8n8(lane: int, i: int) -> tuple[int, int]:
    # 9.7.14.5.16: "Each thread in a warp stores fragments of a row, with thread 0 storing the first
    # fragment from its register r, and so on. A group of four threads stores an entire row of the
    # matrix" (Figure 107: thread t stores row t / 4, elements 2 * (t % 4) and + 1, from the low
    # half of its register up).
    return lane // 4, 2 * (lane % 4) + i


_MMA_TABLES = {  # (shape, operand): (rows, cols, registers, formula); two 16-bit elements a register
    ("m16n8k16", "a"): (16, 16, 4, _m16n8k16_a),
    ("m16n8k16", "b"): (16, 8, 2, _m16n8k16_b),
    ("m16n8k8", "a"): (16, 8, 2, _m16n8k8_a),
    ("m16n8k8", "b"): (8, 8, 1, _m16n8k8_b),
}


def _mma_fragments() -> dict[tuple[str, str, str], Fragment]:
    tables = {}
    for (shape, operand), (rows, cols, registers, where) in _MMA_TABLES.items():
        for etype in HALF_TYPES:
            name = f"mma.{shape} {operand.upper()} .{etype}"
            tables[shape, operand, etype] = _fragment(name, rows, cols, registers, 2, where)
    for shape in ("m16n8k16", "m16n8k8"):
        tables[shape, "c", "f32"] = _fragment(f"mma.{shape} C/D .f32", 16, 8, 4, 1, _m16n8_c)
        tables[shape, "c", "f16"] = _fragment(f"mma.{shape} C/D .f16x2", 16, 8, 2, 2, _m16n8_c)
    return tables


FRAGMENTS = _mma_fragments()  # (shape, operand "a"/"b"/"c", element type) -> Fragment
LDMATRIX_M8N8_B16 = _fragment("ldmatrix .m8n8.b16", 8, 8, 1, 2, _ldmatrix_m8n8)
STMATRIX_M8N8_B16 = _fragment("stmatrix .m8n8.b16", 8, 8, 1, 2, _stmatrix_m8n8)


def fragment_registers(fragment: Fragment, matrix: np.ndarray, etype: str) -> np.ndarray:
    """The registers [lane, register] that hold `matrix` (float values) in `fragment`, with
    elements of `etype` ("f16", "bf16", or "f32" for one float32 per register)."""
    elements = fragment.gather(np.asarray(matrix, dtype=np.float32))
    if etype == "f32":
        return _f32_elements(fragment, elements)[..., 0]
    return pack_halves(half_bits(elements, etype))


def fragment_matrix(fragment: Fragment, registers: np.ndarray, etype: str) -> np.ndarray:
    """The float32 matrix the registers [lane, register] hold in `fragment` (inverse of
    `fragment_registers`)."""
    _check_registers(fragment.name, registers, fragment.registers, np.float32 if etype == "f32" else np.uint32)
    if etype == "f32":
        return fragment.scatter(_f32_elements(fragment, registers[..., None]))
    return fragment.scatter(half_values(unpack_halves(registers), etype))


def _f32_elements(fragment: Fragment, elements: np.ndarray) -> np.ndarray:
    if fragment.per_register != 1:
        raise PtxError(f"{fragment.name} packs {fragment.per_register} elements a register, not one .f32")
    return elements


def _check_registers(what: str, registers: np.ndarray, count: int, dtype: type) -> None:
    if not isinstance(registers, np.ndarray) or registers.shape != (WARP, count) or registers.dtype != dtype:
        got = (registers.shape, str(registers.dtype)) if isinstance(registers, np.ndarray) else type(registers)
        raise PtxError(f"{what} needs registers of shape ({WARP}, {count}) and dtype {np.dtype(dtype)}, got {got}")


# -- mma.sync ----------------------------------------------------------------------------------
_MMA_SYNTAX = re.compile(r"mma\.sync\.aligned\.(m\d+n\d+k\d+)\.row\.col\.(\w+)\.(\w+)\.(\w+)\.(\w+)")


@dataclass(frozen=True)
class Mma:
    """One `mma.sync.aligned.{shape}.row.col.{dtype}.{atype}.{btype}.{ctype}` instruction, in
    the combinations 9.7.14.5.14 defines for 16-bit inputs: .f32.f16.f16.f32, .f16.f16.f16.f16,
    .f32.bf16.bf16.f32 ("Half precision" and "Alternate floating point type" syntax: .atype
    equals .btype, .dtype equals .ctype for m16n8k8 and m16n8k16, and .bf16 only with .f32)."""

    shape: str
    dtype: str
    atype: str
    btype: str
    ctype: str

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise PtxError(f"{self.text()}: {problem}")

    def _problem(self) -> str | None:
        if self.shape not in ("m16n8k16", "m16n8k8"):
            return "only shapes m16n8k16 and m16n8k8 are modelled"
        if self.atype not in HALF_TYPES or self.btype != self.atype:
            return ".atype and .btype must both be .f16 or both .bf16"
        if self.ctype not in ("f16", "f32") or self.dtype != self.ctype:
            return ".dtype must equal .ctype, .f16 or .f32"
        if self.atype == "bf16" and self.ctype != "f32":
            return ".bf16 inputs accumulate in .f32 only"
        return None

    @classmethod
    def parse(cls, text: str) -> "Mma":
        match = _MMA_SYNTAX.fullmatch(text.strip())
        if match is None:
            raise PtxError(f"not an mma.sync.aligned.<shape>.row.col.<d>.<a>.<b>.<c> instruction: {text!r}")
        return cls(*match.groups())

    def text(self) -> str:
        return f"mma.sync.aligned.{self.shape}.row.col.{self.dtype}.{self.atype}.{self.btype}.{self.ctype}"

    @property
    def mnk(self) -> tuple[int, int, int]:
        m, n, k = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", self.shape).groups()
        return int(m), int(n), int(k)

    def fragment(self, operand: str) -> Fragment:
        """The fragment table of operand "a", "b" or "c" (C and D share it)."""
        if operand not in ("a", "b", "c"):
            raise PtxError(f"mma operands are 'a', 'b' and 'c', got {operand!r}")
        return FRAGMENTS[self.shape, operand, self.ctype if operand == "c" else self.atype]


def mma_sync(inst: Mma, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D = A * B + C for a warp: registers [lane, register] in, D's registers out.

    A and B are uint32 words of 16-bit pairs; C and D are float32 (.f32) or uint32 words of f16
    pairs (.f16). The ISA leaves "the accumulation order, rounding and handling of subnormal
    inputs" unspecified ("Precision and rounding" in 9.7.14.5.14: products with at least single
    precision; accumulation with at least single precision, or at least half precision for
    .f16 C and D). This model: each product is formed in float32 (exact for f16 and bf16 inputs
    unless it leaves float32's range), then added to C in float32 in ascending k, one rounding
    per addition; an .f16 D is that float32 sum rounded to f16 once. Subnormals are kept.
    The hardware's order and internal width differ, so tests of mma results compare with a
    tolerance, or bit for bit only on inputs whose every partial sum is exact."""
    k = inst.mnk[2]
    fa, fb, fc = inst.fragment("a"), inst.fragment("b"), inst.fragment("c")
    _check_registers(f"{inst.text()} A", a, fa.registers, np.uint32)
    _check_registers(f"{inst.text()} B", b, fb.registers, np.uint32)
    _check_registers(f"{inst.text()} C", c, fc.registers, np.float32 if inst.ctype == "f32" else np.uint32)
    lhs = fragment_matrix(fa, a, inst.atype)
    rhs = fragment_matrix(fb, b, inst.btype)
    acc = fragment_matrix(fc, c, inst.ctype)
    for kk in range(k):
        acc = acc + lhs[:, kk:kk + 1] * rhs[kk:kk + 1, :]
    return fragment_registers(fc, acc, inst.dtype)


# -- ldmatrix / stmatrix -----------------------------------------------------------------------
MATRIX_COUNTS = (1, 2, 4)
_ROW_BYTES = 16  # an 8x8 .b16 row: "a group of four consecutive threads loads 16 bytes"


def ldmatrix(shared: np.ndarray, addresses: np.ndarray, num: int, trans: bool = False) -> np.ndarray:
    """`ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16`: registers [lane, num] (uint32).

    `addresses[lane]` is each lane's byte address; lanes 8i..8i+7 give the row addresses of
    matrix i ("Threads 0-7: addr0-addr7, ..." in 9.7.14.5.15), the other lanes' are unused.
    Register i of every lane holds its fragment of matrix i (Figure 104's layout); with .trans
    "the matrix is loaded in column-major format": the lanes receive the transposed matrix."""
    rows = _matrix_rows("ldmatrix", shared, addresses, num)
    matrices = np.stack([shared[rows[i]].view("<u2") for i in range(num)])  # [matrix, row, col]
    if trans:
        matrices = matrices.transpose(0, 2, 1)
    return np.stack([pack_halves(LDMATRIX_M8N8_B16.gather(m))[:, 0] for m in matrices], axis=1)


def stmatrix(shared: np.ndarray, addresses: np.ndarray, registers: np.ndarray, trans: bool = False) -> None:
    """`stmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16` (sm_90): the inverse of `ldmatrix`;
    writes `shared` in place. Register i of the lanes holds matrix i (Figure 107's layout);
    `addresses` as in ldmatrix ("addr0-addr7 correspond to the rows of the first matrix", the
    addresses of lanes from 8 * num on unused); with .trans "the matrix is stored in column-major
    format"."""
    num = registers.shape[1] if isinstance(registers, np.ndarray) and registers.ndim == 2 else 0
    if num not in MATRIX_COUNTS:
        raise PtxError(f"stmatrix stores 1, 2 or 4 matrices (registers of shape (32, num)), got {num}")
    _check_registers("stmatrix", registers, num, np.uint32)
    rows = _matrix_rows("stmatrix", shared, addresses, num)
    starts = np.sort(rows[:, :, 0].ravel())
    if np.any(np.diff(starts) < _ROW_BYTES):
        raise PtxError("stmatrix: two row addresses overlap; each of the 8 * num rows needs its own 16 bytes")
    for i in range(num):
        matrix = STMATRIX_M8N8_B16.scatter(unpack_halves(registers[:, i:i + 1]))
        stored = np.ascontiguousarray(matrix.T if trans else matrix, dtype="<u2")
        shared[rows[i]] = stored.view(np.uint8).reshape(8, _ROW_BYTES)


def _matrix_rows(what: str, shared: np.ndarray, addresses: np.ndarray, num: int) -> np.ndarray:
    """Byte indices [matrix, row, byte] of the rows the lanes' addresses name, checked."""
    if num not in MATRIX_COUNTS:
        raise PtxError(f"{what} .num must be .x1, .x2 or .x4, got {num!r}")
    if not isinstance(shared, np.ndarray) or shared.ndim != 1 or shared.dtype != np.uint8:
        raise PtxError(f"{what} needs shared memory as a 1-D uint8 array")
    addresses = np.asarray(addresses)
    if addresses.shape != (WARP,) or not np.issubdtype(addresses.dtype, np.integer):
        raise PtxError(f"{what} needs one integer address per lane (shape ({WARP},)), got {addresses.shape}")
    used = addresses[:8 * num].astype(np.int64)
    for lane, address in enumerate(used):
        if address % _ROW_BYTES or address < 0 or address + _ROW_BYTES > shared.size:
            raise PtxError(f"{what}: lane {lane}'s row address {address} is not a 16-byte aligned row inside "
                           f"the {shared.size}-byte shared memory")
    return (used[:, None] + np.arange(_ROW_BYTES)).reshape(num, 8, _ROW_BYTES)


# -- cp.async ----------------------------------------------------------------------------------
CP_SIZES = (4, 8, 16)


@dataclass(frozen=True)
class AsyncWrite:
    """One cp.async's write of `data` (cp-size bytes: the src-size source bytes, then zeros) to
    shared byte address `dst`, issued by `thread` as its `serial`-th cp.async."""

    thread: int
    serial: int
    dst: int
    data: bytes

    @property
    def end(self) -> int:
        return self.dst + len(self.data)

    def overlaps(self, address: int, nbytes: int) -> bool:
        return self.dst < address + nbytes and address < self.end

    def apply(self, shared: np.ndarray) -> None:
        shared[self.dst:self.end] = np.frombuffer(self.data, dtype=np.uint8)


@dataclass
class _ThreadCopies:
    issued: int = 0
    uncommitted: list[AsyncWrite] = field(default_factory=list)
    groups: list[list[AsyncWrite]] = field(default_factory=list)  # committed, oldest first

    def pending(self) -> list[AsyncWrite]:
        return [w for group in self.groups for w in group] + self.uncommitted


class AsyncCopies:
    """The cp.async state of a block's threads: each thread's pending copies, in the groups
    cp.async.commit_group closed. A copy's write lands (is returned by `wait`, for the caller to
    apply) at the cp.async.wait_group of its thread that retires its group: before that no
    thread may read or write its bytes (9.7.9.25.3.3: writes "are made visible to the executing
    thread only after" that wait; there is "no ordering between two cp.async operations" not so
    synchronized). After the wait the landed bytes are an ordinary write by the issuing thread:
    other threads see them only after a barrier, which the simulator's race checks already cover."""

    def __init__(self, shared_bytes: int | None = None):
        self.shared_bytes = shared_bytes
        self._threads: dict[int, _ThreadCopies] = {}

    def issue(self, thread: int, dst: int, src: bytes | np.ndarray, size: int, *, cache: str = "ca",
              src_address: int | None = None) -> AsyncWrite:
        """`cp.async.{cache}.shared.global [dst], [src], size, src-size` with src-size = len(src)
        bytes read from global; the rest of the `size` bytes are zero filled (9.7.9.25.3.1)."""
        data = np.ascontiguousarray(src).tobytes() if isinstance(src, np.ndarray) else bytes(src)
        self._check_issue(thread, dst, len(data), size, cache, src_address)
        state = self._threads.setdefault(thread, _ThreadCopies())
        write = AsyncWrite(thread, state.issued, dst, data + bytes(size - len(data)))
        state.issued += 1
        state.uncommitted.append(write)
        return write

    def commit(self, thread: int) -> None:
        """cp.async.commit_group: the thread's uncommitted copies become its newest group (an
        empty group if there are none, "trivially complete")."""
        state = self._threads.setdefault(thread, _ThreadCopies())
        state.groups.append(state.uncommitted)
        state.uncommitted = []

    def wait(self, thread: int, n: int) -> list[AsyncWrite]:
        """cp.async.wait_group n: retire all but the thread's newest n committed groups; the
        writes that land now, in issue order. Uncommitted copies stay pending."""
        if not isinstance(n, int) or n < 0:
            raise PtxError(f"cp.async.wait_group takes a non-negative integer constant, got {n!r}")
        state = self._threads.setdefault(thread, _ThreadCopies())
        retired = len(state.groups) - n
        if retired <= 0:
            return []
        landed = [w for group in state.groups[:retired] for w in group]
        state.groups = state.groups[retired:]
        return landed

    def wait_all(self, thread: int) -> list[AsyncWrite]:
        """cp.async.wait_all, "equivalent to cp.async.commit_group; cp.async.wait_group 0"."""
        self.commit(thread)
        return self.wait(thread, 0)

    def pending(self, thread: int | None = None) -> list[AsyncWrite]:
        """The writes not landed yet (of one thread, or of all in thread order)."""
        threads = [thread] if thread is not None else sorted(self._threads)
        return [w for t in threads if t in self._threads for w in self._threads[t].pending()]

    def check_access(self, thread: int, address: int, nbytes: int, *, write: bool = False) -> None:
        """Raise AsyncCopyRace if `thread` reading (or writing) shared bytes [address, address +
        nbytes) touches a cp.async write that has not landed."""
        for pending in self.pending():
            if pending.overlaps(address, nbytes):
                raise AsyncCopyRace(
                    f"thread {thread} {'writes' if write else 'reads'} shared bytes [{address}, {address + nbytes}) "
                    f"while {self._describe(pending)} has not landed (it lands at that thread's "
                    f"cp.async.wait_group retiring its group)")

    def _check_issue(self, thread: int, dst: int, src_size: int, size: int, cache: str,
                     src_address: int | None) -> None:
        if cache not in ("ca", "cg"):
            raise PtxError(f"cp.async cache operator must be .ca or .cg, got {cache!r}")
        if size not in CP_SIZES or (cache == "cg" and size != 16):
            raise PtxError(f"cp.async.{cache} copies {'16' if cache == 'cg' else '4, 8 or 16'} bytes, got {size}")
        if src_size > size:
            raise PtxError(f"cp.async src-size {src_size} exceeds cp-size {size} (undefined behaviour)")
        for name, address in (("dst", dst), ("src", src_address)):
            if address is not None and address % size:
                raise PtxError(f"cp.async {name} address {address} is not aligned to its {size} bytes")
        if dst < 0 or (self.shared_bytes is not None and dst + size > self.shared_bytes):
            raise PtxError(f"cp.async dst bytes [{dst}, {dst + size}) leave the {self.shared_bytes}-byte shared memory")
        for pending in self.pending():
            if pending.overlaps(dst, size):
                raise AsyncCopyRace(f"thread {thread}'s cp.async to shared bytes [{dst}, {dst + size}) overlaps "
                                    f"{self._describe(pending)}, which has not landed: the two are unordered")

    def _describe(self, write: AsyncWrite) -> str:
        state = self._threads[write.thread]
        group = next((i for i, g in enumerate(state.groups) if write in g), None)
        where = ("not committed yet" if group is None
                 else f"pending group {group + 1} of {len(state.groups)}, oldest first")
        return f"thread {write.thread}'s cp.async #{write.serial} of bytes [{write.dst}, {write.end}) ({where})"


# -- wgmma.mma_async (sm_90a) ------------------------------------------------------------------
# 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions":
#   9.7.15.5.1.1.1 "Matrix Fragments for wgmma.mma_async.m64nNk16" (Figure 149, accumulator D)
#   9.7.15.5.1.1.2 "Matrix Fragments for wgmma.mma_async.m64nNk32" (.e4m3 / .e5m2; the same D)
#   9.7.15.5.1.2   "Shared Memory Matrix Layout" (K-major / MN-major, swizzle atoms)
#   9.7.15.5.1.2.1 "Major-ness supported by Strides" (LBO, SBO) and .3 "Canonical Layouts"
#   9.7.15.5.1.2.2 "Matrix Descriptor Format"
WARPGROUP = 128
WGMMA_M, WGMMA_K = 64, 16
# 9.7.15.2 "Matrix Shape": .m64nNk16 for .f16 / .bf16, .m64nNk32 for .e4m3 / .e5m2 (either for A and
# either for B); 9.7.15.5.1 (wgmma.mma_async): imm-trans-a / imm-trans-b exist only for .f16 / .bf16, so
# fp8 operands in shared memory are K-major.
WGMMA_SHAPE_K = {"f16": 16, "bf16": 16, "e4m3": 32, "e5m2": 32}
FP8_TYPES = ("e4m3", "e5m2")
_FP8_DTYPES = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}  # E4M3 has no infinities
# descriptor bits 63-62: "0: No swizzle, 1: 128-Byte swizzle, 2: 64-Byte swizzle, 3: 32-Byte swizzle"
SWIZZLE_OF_MODE = {0: 0, 1: 128, 2: 64, 3: 32}
MODE_OF_SWIZZLE = {swizzle: mode for mode, swizzle in SWIZZLE_OF_MODE.items()}
_FIELD = 0x3FFF  # the 14-bit address and offset fields


def descriptor_encode(value: int) -> int:
    """`matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4`."""
    return (value & 0x3FFFF) >> 4


@dataclass(frozen=True)
class MatrixDescriptor:
    """The 64-bit wgmma matrix descriptor: start address, leading and stride dimension byte offsets
    (bytes, multiples of 16), the matrix base offset and the swizzle (bytes, 0 for none)."""

    start: int
    leading: int
    stride: int
    swizzle: int
    base_offset: int = 0

    def __post_init__(self) -> None:
        if self.swizzle not in MODE_OF_SWIZZLE:
            raise PtxError(f"wgmma swizzle must be 0 (none), 32, 64 or 128 bytes, got {self.swizzle}")
        for name in ("start", "leading", "stride"):
            value = getattr(self, name)
            if value < 0 or value % 16 or value >= 1 << 18:
                raise PtxError(f"descriptor {name} {value} is not a multiple of 16 in [0, 2**18)")

    def bits(self) -> int:
        """Bits 13-0 start, 29-16 leading, 45-32 stride (each encoded), 51-49 base offset, 63-62 mode."""
        return (descriptor_encode(self.start) | descriptor_encode(self.leading) << 16
                | descriptor_encode(self.stride) << 32 | (self.base_offset & 0x7) << 49
                | MODE_OF_SWIZZLE[self.swizzle] << 62)

    @classmethod
    def decode(cls, bits: int) -> "MatrixDescriptor":
        return cls(start=(bits & _FIELD) << 4, leading=((bits >> 16) & _FIELD) << 4,
                   stride=((bits >> 32) & _FIELD) << 4, swizzle=SWIZZLE_OF_MODE[(bits >> 62) & 0x3],
                   base_offset=(bits >> 49) & 0x7)


# 9.7.15.5.1.2.1.3, "Canonical Layouts" in CuTe notation, (MN mode, K mode), each (shape, stride):
# strides in elements, except "LBO" / "SBO", the descriptor's byte offsets; "T" = 128 / element bits;
# the last extent of each mode ("m", "k": the repetitions) is unbounded.
#   MN-major none: ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))   K-major none: ((8,m),(T,2k)):((1T,SBO),(1,LBO))
#   MN-major 32B:  ((T,2,m),(8,k)):((1,T,LBO),(2T,SBO))   K-major 32B:  ((8,m),(T,2k)):((2T,SBO),(1,T))
#   MN-major 64B:  ((T,4,m),(8,k)):((1,T,LBO),(4T,SBO))   K-major 64B:  ((8,m),(T,2k)):((4T,SBO),(1,T))
#   MN-major 128B: ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))   K-major 128B: ((8,m),(T,2k)):((8T,SBO),(1,T))
def _canonical_layout(major: str, swizzle: int, t: int):
    atoms = max(1, swizzle // 16)  # 16-byte units in a swizzle row: 1 (none), 2, 4, 8
    if major == "mn":
        if swizzle == 0:
            return ((t, 1, None), (1, t, "SBO")), ((8, None), (t, "LBO"))
        return ((t, atoms, None), (1, t, "LBO")), ((8, None), (atoms * t, "SBO"))
    if major == "k":
        if swizzle == 0:
            return ((8, None), (t, "SBO")), ((t, None), (1, "LBO"))
        return ((8, None), (atoms * t, "SBO")), ((t, None), (1, t))
    raise PtxError(f"wgmma major-ness is 'k' or 'mn', got {major!r}")


def _mode_offset(coord: int, shape, stride, element_bytes: int, lbo: int, sbo: int) -> int:
    """Byte offset of `coord` in one CuTe mode (colexicographic: the first extent varies fastest)."""
    offset, rest = 0, coord
    for extent, step in zip(shape, stride):
        digit = rest if extent is None else rest % extent
        rest = 0 if extent is None else rest // extent
        offset += digit * ({"LBO": lbo, "SBO": sbo}[step] if isinstance(step, str) else step * element_bytes)
    return offset


def canonical_offset(major: str, swizzle: int, mn: int, k: int, element_bytes: int, lbo: int, sbo: int) -> int:
    """The unswizzled byte offset, from the matrix start, of element (mn, k) of a wgmma operand
    (mn: A's row m or B's column n; k: the reduction index) in the ISA's canonical layout."""
    (mn_shape, mn_stride), (k_shape, k_stride) = _canonical_layout(major, swizzle, 16 // element_bytes)
    return (_mode_offset(mn, mn_shape, mn_stride, element_bytes, lbo, sbo)
            + _mode_offset(k, k_shape, k_stride, element_bytes, lbo, sbo))


def canonical_offset_terms(major: str, swizzle: int, rows: int, element_bytes: int, k_extent: int = WGMMA_K
                           ) -> np.ndarray:
    """[rows, k_extent, 3]: the canonical offset of (mn, k) as `c0 + c1 * LBO + c2 * SBO` (it is linear
    in the two byte offsets), for the simulator to evaluate at run time from a descriptor."""
    terms = np.zeros((rows, k_extent, 3), dtype=np.int64)
    for mn in range(rows):
        for k in range(k_extent):
            base = canonical_offset(major, swizzle, mn, k, element_bytes, 0, 0)
            terms[mn, k] = (base, canonical_offset(major, swizzle, mn, k, element_bytes, 1, 0) - base,
                            canonical_offset(major, swizzle, mn, k, element_bytes, 0, 1) - base)
    return terms


def swizzle_address(address: int, swizzle: int) -> int:
    """CuTe's Swizzle<B, 4, 3> of the canonical-layout table, B = log2(swizzle / 16): bits [4, 4 + B)
    of the shared address XORed with bits [7, 7 + B) (none: the address itself). The hardware applies
    it to the address, so a pattern starts at a 1024/512/256-byte boundary (base offset 0)."""
    if swizzle == 0:
        return address
    return address ^ (((address >> 7) & (swizzle // 16 - 1)) << 4)


def _wgmma_d(thread: int, i: int) -> tuple[int, int]:
    # Figure 149 (WGMMA .m64nNk16 register fragment layout for accumulator matrix D): warp w of the
    # warpgroup holds rows 16w .. 16w + 15; per 8 columns the four registers of a lane are the
    # m16n8 accumulator's (row groupID, + 8 for the second pair; col threadID_in_group * 2 + (i & 1)),
    # the next 8 columns in the next four registers.
    warp, lane = thread // WARP, thread % WARP
    group, tig = _lane_split(lane)
    return 16 * warp + group + 8 * ((i >> 1) & 1), 8 * (i >> 2) + tig * 2 + (i & 0x1)


def wgmma_d_fragment(n: int) -> Fragment:
    """The m64nNk16 .f32 accumulator: `coords[thread of the warpgroup, register, 0] = (row, col)`; the ISA
    draws the same D fragment for .m64nNk32 (9.7.15.5.1.1.2, the fp8 shape)."""
    if n < 8 or n > 256 or n % 8:
        raise PtxError(f"wgmma .m64nNk16 needs N a multiple of 8 in 8..256, got {n}")
    coords = np.array([[[_wgmma_d(thread, i)] for i in range(n // 2)] for thread in range(WARPGROUP)],
                      dtype=np.int64)
    coords.setflags(write=False)
    return Fragment(f"wgmma.m64n{n}k16 D .f32", WGMMA_M, n, coords)


def wgmma_k(etype: str) -> int:
    """The K of one wgmma on `etype` operands (`WGMMA_SHAPE_K`)."""
    if etype not in WGMMA_SHAPE_K:
        raise PtxError(f"wgmma operands are .f16, .bf16, .e4m3 or .e5m2, got {etype!r}")
    return WGMMA_SHAPE_K[etype]


def element_values(raw: np.ndarray, etype: str) -> np.ndarray:
    """Little-endian bytes [..., element bytes] of `etype` elements -> their float32 values (exact)."""
    if etype in FP8_TYPES:
        return raw[..., 0].view(_FP8_DTYPES[etype]).astype(np.float32)
    return half_values(raw.view("<u2")[..., 0], etype)


def wgmma_operand(shared: np.ndarray, descriptor: int, major: str, rows: int, etype: str) -> np.ndarray:
    """The float32 matrix [rows (M or N), K] a descriptor names in `shared` (a flat uint8 array whose
    address 0 is 1024-byte aligned): element (mn, k) at swizzle(start + canonical offset); K and the
    element size from `etype` (16 x 2 bytes, or 32 x 1 byte for fp8)."""
    desc = MatrixDescriptor.decode(descriptor)
    if desc.base_offset:
        raise PtxError("only base offset 0 is modelled (patterns starting at their swizzle boundary)")
    k_extent = wgmma_k(etype)
    element_bytes = 32 // k_extent
    raw = np.zeros((rows, k_extent, element_bytes), dtype=np.uint8)
    for mn in range(rows):
        for k in range(k_extent):
            offset = canonical_offset(major, desc.swizzle, mn, k, element_bytes, desc.leading, desc.stride)
            address = swizzle_address(desc.start + offset, desc.swizzle)
            if address + element_bytes > shared.size:
                raise PtxError(f"wgmma operand element ({mn}, {k}) at byte {address} is outside shared memory")
            raw[mn, k] = shared[address:address + element_bytes]
    return element_values(raw, etype)


def wgmma_m64nNk16(shared: np.ndarray, a_desc: int, b_desc: int, c: np.ndarray, n: int, etype: str,
                   trans_a: bool = False, trans_b: bool = False) -> np.ndarray:
    """`wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{etype}.{etype}` with A and B in shared memory:
    the warpgroup's D registers [thread, n / 2] (float32) from its C registers. `trans_a` / `trans_b`:
    imm-trans 1, A M-major / B N-major. Accumulation as `mma_sync`'s model: C plus the products in
    ascending k, in float32, one rounding per addition."""
    _check_half_type(etype)
    return _wgmma(shared, a_desc, b_desc, c, n, etype, etype, "mn" if trans_a else "k", "mn" if trans_b else "k")


def wgmma_m64nNk32(shared: np.ndarray, a_desc: int, b_desc: int, c: np.ndarray, n: int, a_type: str,
                   b_type: str) -> np.ndarray:
    """`wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{a_type}.{b_type}` (each .e4m3 or .e5m2), A and B
    K-major in shared memory (the fp8 forms take no imm-trans). The products of two fp8 values are
    exact in float32; they are added to C in ascending k, in float32 (the hardware's adder keeps fewer
    bits inside one instruction: a model at least as exact, not bit-exact)."""
    for etype in (a_type, b_type):
        if etype not in FP8_TYPES:
            raise PtxError(f"wgmma .m64nNk32 takes .e4m3 or .e5m2 operands, got {etype!r}")
    return _wgmma(shared, a_desc, b_desc, c, n, a_type, b_type, "k", "k")


def _wgmma(shared, a_desc, b_desc, c, n, a_type, b_type, a_major, b_major) -> np.ndarray:
    fragment = wgmma_d_fragment(n)
    k = wgmma_k(a_type)
    if not isinstance(c, np.ndarray) or c.shape != (WARPGROUP, n // 2) or c.dtype != np.float32:
        raise PtxError(f"wgmma m64n{n}k{k} needs C registers of shape ({WARPGROUP}, {n // 2}) float32")
    a = wgmma_operand(shared, a_desc, a_major, WGMMA_M, a_type)  # [m, k]
    b = wgmma_operand(shared, b_desc, b_major, n, b_type)  # [n, k]
    acc = fragment.scatter(c[..., None])
    for step in range(k):
        acc = acc + a[:, step:step + 1] * b[:, step][None, :]
    return fragment.gather(acc)[..., 0]
