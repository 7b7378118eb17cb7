"""Layout algebra: which thread holds which fragment element, in a form passes can reason about.

A `TiledLayout` splits every fragment dim into mixed-radix *digits*
(`Digit`): digit `(dim, stride, size)` is `(index[dim] floordiv stride) mod
size`, and the digits of one dim tile `[0, padded extent)` exactly. Each
digit is either a *thread* digit (it contributes `coeff * digit` to the id
of the holding thread) or a *register* digit (`coeff * digit` to the
register slot). Replica digits (`dim = None`) split the replica index
`s0`; they are always thread digits. The thread digits form a mixed radix
of `[0, threads)` and the register digits one of `[0, registers)`, so the
layout maps `(padded element, replica)` one-to-one onto `threads x
registers`.

The padded extent of a dim is the product of its digit sizes; it is the
fragment extent rounded up to the layout's tiling. Elements in
`[extent, padded)` are *padding*: their register slots exist but hold no
element (masked registers; partition-threads never touches them in masked
code). So on the real fragment the map is injective, and onto exactly when
no dim is padded.

`to_attr` writes a layout as `#tile.layout<thread_map, local_map, replicate>`
(a digit prints as `(d floordiv stride) mod size`, the `mod` omitted where
it cannot matter: the outermost digit of an unpadded dim), so the maps are
also right on the padding; `from_attr`
reads such an attribute back (also hand-written or user-annotated ones of
that shape) given the shape it describes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from tilemlir.analysis.affine_fold import AffineOps, fold_affine
from tilemlir.dialects import tile
from tilemlir.mlir import ir

WARP = 32
VECTOR_BYTES = 16


class LayoutError(ValueError):
    """A layout attribute or a requested layout that cannot describe the fragment."""


@dataclass(frozen=True)
class Digit:
    """`(index[dim] floordiv stride) mod size` (dim None: of the replica index).

    `thread` is its coefficient in the thread id, `reg` in the register slot;
    exactly one of them is set.
    """

    dim: int | None
    stride: int
    size: int
    thread: int | None = None
    reg: int | None = None

    @property
    def is_thread(self) -> bool:
        return self.thread is not None


@dataclass(frozen=True)
class TiledLayout:
    shape: tuple[int, ...]
    threads: int
    digits: tuple[Digit, ...]

    def __post_init__(self):
        # One canonical digit order, so equal layouts compare equal.
        ordered = sorted(self.digits, key=lambda d: (d.dim is None, d.dim or 0, d.stride))
        object.__setattr__(self, "digits", tuple(ordered))
        object.__setattr__(self, "shape", tuple(self.shape))

    # ------------------------------------------------------------------ views

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def replicate(self) -> int:
        return math.prod(d.size for d in self.digits if d.dim is None)

    @property
    def registers(self) -> int:
        return math.prod(d.size for d in self.digits if not d.is_thread)

    def dim_digits(self, dim: int | None) -> list[Digit]:
        """The digits of `dim` (None: the replica), innermost (smallest stride) first."""
        return sorted((d for d in self.digits if d.dim == dim), key=lambda d: d.stride)

    @property
    def padded_shape(self) -> tuple[int, ...]:
        return tuple(math.prod(d.size for d in self.dim_digits(k)) for k in range(self.rank))

    @property
    def is_padded(self) -> bool:
        return self.padded_shape != self.shape

    def thread_digits(self) -> list[Digit]:
        return sorted((d for d in self.digits if d.is_thread), key=lambda d: d.thread)

    def register_digits(self) -> list[Digit]:
        return sorted((d for d in self.digits if not d.is_thread), key=lambda d: d.reg)

    def describe(self) -> str:
        """A one-line human summary: extents, threads, registers, replication."""
        shape = "x".join(map(str, self.shape))
        padded = "" if not self.is_padded else f" (padded to {'x'.join(map(str, self.padded_shape))})"
        return (
            f"{shape}{padded} over {self.threads} threads, {self.registers} registers per thread, "
            f"replicate {self.replicate}"
        )

    # ------------------------------------------------------------- validity

    def problem(self) -> str | None:
        """Why this is not a valid layout, or None."""
        for d in self.digits:
            if (d.thread is None) == (d.reg is None):
                return f"digit {d} must be exactly one of thread or register"
            if d.size < 1 or d.stride < 1:
                return f"digit {d} has a non-positive size or stride"
            if d.dim is None and not d.is_thread:
                return "replica digits must be thread digits"
            if d.dim is not None and not 0 <= d.dim < self.rank:
                return f"digit {d} names dim {d.dim} of a rank-{self.rank} fragment"
        for dim in [*range(self.rank), None]:
            problem = _mixed_radix_problem([(d.stride, d.size) for d in self.dim_digits(dim)], "strides")
            if problem:
                return f"{'replica' if dim is None else f'dim {dim}'} digits: {problem}"
        for k, (extent, padded) in enumerate(zip(self.shape, self.padded_shape)):
            if padded < extent:
                return f"dim {k} digits cover {padded} elements, fewer than the extent {extent}"
        problem = _mixed_radix_problem([(d.thread, d.size) for d in self.thread_digits()], "thread coefficients")
        if problem:
            return problem
        if math.prod(d.size for d in self.thread_digits()) != self.threads:
            return f"thread digits cover {math.prod(d.size for d in self.thread_digits())} threads, not {self.threads}"
        return _mixed_radix_problem([(d.reg, d.size) for d in self.register_digits()], "register coefficients")

    def checked(self) -> "TiledLayout":
        problem = self.problem()
        if problem:
            raise LayoutError(problem)
        return self

    # ---------------------------------------------------------- evaluation

    def locate(self, index: np.ndarray, replica: np.ndarray | int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(thread, register) of the elements `index` (shape [..., rank]) in replica `replica`."""
        index = np.asarray(index, dtype=np.int64)
        replica = np.asarray(replica, dtype=np.int64)
        thread = np.zeros(index.shape[:-1], dtype=np.int64)
        reg = np.zeros(index.shape[:-1], dtype=np.int64)
        for d in self.digits:
            source = replica if d.dim is None else index[..., d.dim]
            value = (source // d.stride) % d.size
            if d.is_thread:
                thread = thread + value * d.thread
            else:
                reg = reg + value * d.reg
        return thread, reg

    def element_of(self, thread: np.ndarray | int, reg: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """Inverse map: (index [..., rank], replica) held by `thread` in register `reg` (padded domain)."""
        thread = np.asarray(thread, dtype=np.int64)
        reg = np.asarray(reg, dtype=np.int64)
        shape = np.broadcast(thread, reg).shape
        index = np.zeros((*shape, self.rank), dtype=np.int64)
        replica = np.zeros(shape, dtype=np.int64)
        for d in self.digits:
            value = (thread // d.thread) % d.size if d.is_thread else (reg // d.reg) % d.size
            if d.dim is None:
                replica = replica + value * d.stride
            else:
                index[..., d.dim] += value * d.stride
        return index, replica

    def all_elements(self, padded: bool = False) -> np.ndarray:
        extents = self.padded_shape if padded else self.shape
        if not extents:
            return np.zeros((1, 0), dtype=np.int64)
        return np.stack(np.meshgrid(*[np.arange(e) for e in extents], indexing="ij"), axis=-1).reshape(-1, self.rank)

    def holders(self) -> np.ndarray:
        """[elements (row-major, real shape), replicate]: the threads holding each element, sorted."""
        elements = self.all_elements()
        table = np.stack([self.locate(elements, r)[0] for r in range(self.replicate)], axis=1)
        return np.sort(table, axis=1)

    # --------------------------------------------------------- derivations

    def with_shape(self, shape: tuple[int, ...]) -> "TiledLayout":
        """The same digits describing a domain of other extents (each within the padded extent)."""
        return replace(self, shape=tuple(shape)).checked()

    def permuted(self, order: list[int]) -> "TiledLayout":
        """The layout of the fragment whose dim k is this layout's dim `order[k]`."""
        new_dim = {old: new for new, old in enumerate(order)}
        digits = tuple(d if d.dim is None else replace(d, dim=new_dim[d.dim]) for d in self.digits)
        return TiledLayout(tuple(self.shape[o] for o in order), self.threads, digits).checked()

    def project(self, keep: list[int]) -> "TiledLayout":
        """The layout of the fragment indexed by dims `keep` of this one (dim k = this dim keep[k]).

        Thread digits of the dropped dims become replica digits (every thread
        that held some element of a slice holds its projection); register
        digits of dropped dims vanish and the rest are renumbered densely.
        """
        new_dim = {old: new for new, old in enumerate(keep)}
        kept, replicas = [], []
        for d in self.digits:
            if d.dim is None or d.dim not in new_dim:
                if d.is_thread:
                    replicas.append(d)
            else:
                kept.append(replace(d, dim=new_dim[d.dim]))
        stride, replica_digits = 1, []
        for d in sorted(replicas, key=lambda d: d.thread):
            replica_digits.append(Digit(None, stride, d.size, thread=d.thread))
            stride *= d.size
        shape = tuple(self.shape[k] for k in keep)
        return _dense_registers(TiledLayout(shape, self.threads, tuple(kept + replica_digits))).checked()

    def lift(self, keep: list[int], shape: tuple[int, ...], vector: int = 1) -> "TiledLayout":
        """A layout of rank len(shape) whose projection onto dims `keep` is this layout.

        Dims `keep[k]` take this layout's dim-k digits; the other dims are
        spread over this layout's replica digits (innermost dim first, with
        `vector` elements per register run on the last dim) and registers.
        """
        shape = tuple(shape)
        digits = [replace(d, dim=keep[d.dim]) for d in self.digits if d.dim is not None]
        replicas = sorted((d for d in self.digits if d.dim is None), key=lambda d: d.thread)
        extra = [k for k in reversed(range(len(shape))) if k not in keep]
        if not extra:
            if replicas:
                raise LayoutError("cannot lift a replicated layout onto the same dims")
            return TiledLayout(shape, self.threads, tuple(digits)).checked()
        threads_of = {k: [] for k in extra}
        pending = list(replicas)
        for k in extra:
            v = _vector_width(shape[k], vector) if k == len(shape) - 1 else 1
            chunks = math.ceil(shape[k] / v)
            while pending and math.prod(d.size for d in threads_of[k]) * pending[0].size <= chunks:
                threads_of[k].append(pending.pop(0))
        threads_of[extra[-1]].extend(pending)  # leftover threads pad the outermost new dim
        for k in extra:
            v = _vector_width(shape[k], vector) if k == len(shape) - 1 else 1
            digits.extend(_dim_digits(k, shape[k], v, [d.thread for d in threads_of[k]], [d.size for d in threads_of[k]]))
        return _dense_registers(TiledLayout(shape, self.threads, tuple(digits))).checked()


def _mixed_radix_problem(pairs: list[tuple[int, int]], what: str) -> str | None:
    expected = 1
    for coeff, size in sorted(pairs):
        if coeff != expected:
            return f"{what} must form a mixed radix (expected {expected}, got {coeff})"
        expected *= size
    return None


def _dense_registers(layout: TiledLayout) -> TiledLayout:
    """Renumber register coefficients row-major: dims outer to inner, each dim's digits outer to inner."""
    regs = [d for d in layout.digits if not d.is_thread]
    ordered = sorted(regs, key=lambda d: (-1 if d.dim is None else d.dim, -d.stride))
    coeff, new = 1, {}
    for d in reversed(ordered):
        new[d] = replace(d, reg=coeff)
        coeff *= d.size
    return replace(layout, digits=tuple(new.get(d, d) for d in layout.digits))


def _vector_width(extent: int, vector: int) -> int:
    return max(1, min(vector, 1 << (extent.bit_length() - 1)))


def _dim_digits(dim: int, extent: int, vector: int, thread_coeffs: list[int], thread_sizes: list[int]) -> list[Digit]:
    """Digits of one dim: `vector` register elements, then the thread digits, then register chunks."""
    digits, stride = [], 1
    if vector > 1:
        digits.append(Digit(dim, 1, vector, reg=0))
        stride = vector
    for coeff, size in zip(thread_coeffs, thread_sizes):
        if size > 1:
            digits.append(Digit(dim, stride, size, thread=coeff))
            stride *= size
    chunks = math.ceil(extent / stride)
    if chunks > 1:
        digits.append(Digit(dim, stride, chunks, reg=0))
    return digits


# ----------------------------------------------------------------------------
# Choosing a layout.


def vector_elements(element_type: ir.Type) -> int:
    """Elements of `element_type` in 16 bytes (1 for types narrower than a byte or unknown)."""
    width = getattr(element_type, "width", 0)
    return max(1, VECTOR_BYTES * 8 // width) if width >= 8 else 1


def tiled_layout(
    shape: tuple[int, ...],
    threads: int,
    vector: int = 1,
    fast_dim: int | None = None,
    vector_dim: int | None = None,
) -> TiledLayout:
    """The layout the compiler picks for a fragment (or loop domain) of `shape` over `threads`.

    `vector_dim` (default: the last dim, contiguous in memory) is split
    into runs of `vector` consecutive elements per thread (16 bytes of the
    global element type), runs interleaved across threads so a warp's
    accesses are contiguous. Thread digits go to `fast_dim` first (default
    `vector_dim`; the lowest thread ids: lanes, then warps; a reduced dim
    goes here so shuffles do most of the work), then to the other dims
    innermost first. Among the thread splits (powers of two per dim; an
    odd factor of the block size on any one dim) it takes the one with the
    fewest registers per thread, then the least padding of `fast_dim`,
    then the fewest warps across `fast_dim` (a row in one warp reduces with
    shuffles alone, no shared exchange or barrier), then the most threads
    on `fast_dim`, then on inner dims. Extents that do not divide are
    padded (masked registers).
    """
    shape = tuple(shape)
    rank = len(shape)
    if rank == 0:
        return replicated_layout((), threads)
    vdim = rank - 1 if vector_dim is None else vector_dim
    fast = vdim if fast_dim is None else fast_dim
    vectors = [_vector_width(shape[k], vector) if k == vdim else 1 for k in range(rank)]
    chunks = [math.ceil(e / v) for e, v in zip(shape, vectors)]
    pow2 = threads & -threads
    odd = threads // pow2
    order = [fast] + [k for k in reversed(range(rank)) if k != fast]
    best = None
    for split in _pow2_splits(pow2.bit_length() - 1, rank):
        for odd_dim in order if odd > 1 else order[:1]:
            counts = dict(zip(order, split))
            counts[odd_dim] *= odd
            regs = math.prod(math.ceil(c / counts[k]) * v for k, c, v in zip(range(rank), chunks, vectors))
            fast_padding = math.ceil(chunks[fast] / counts[fast]) * counts[fast] - chunks[fast]
            warps_spanned = math.ceil(counts[fast] / WARP)
            key = (regs, fast_padding, warps_spanned, [-counts[k] for k in order])
            if best is None or key < best[0]:
                best = (key, counts)
    counts = best[1]
    digits, coeff, coeffs = [], 1, {}
    for k in order:
        coeffs[k] = coeff
        coeff *= counts[k]
    for k in range(rank):
        digits.extend(_dim_digits(k, shape[k], vectors[k], [coeffs[k]], [counts[k]]))
    return _dense_registers(TiledLayout(shape, threads, tuple(digits))).checked()


def _pow2_splits(bits: int, parts: int):
    """Every way to write 2**bits as an ordered product of `parts` powers of two."""
    for cut in itertools.product(range(bits + 1), repeat=parts - 1):
        if sum(cut) <= bits:
            yield [1 << c for c in cut] + [1 << (bits - sum(cut))]


def replicated_layout(shape: tuple[int, ...], threads: int) -> TiledLayout:
    """Every thread holds every element (registers row-major)."""
    digits = [Digit(None, 1, threads, thread=1)] if threads > 1 else []
    for k, extent in enumerate(shape):
        if extent > 1:
            digits.append(Digit(k, 1, extent, reg=0))
    return _dense_registers(TiledLayout(tuple(shape), threads, tuple(digits))).checked()


def same_holders(a: TiledLayout, b: TiledLayout) -> bool:
    """Whether both layouts put every element on the same set of threads."""
    return a.shape == b.shape and a.threads == b.threads and bool(np.array_equal(a.holders(), b.holders()))


def same_placement(a: TiledLayout, b: TiledLayout) -> bool:
    """Whether both layouts put every element (and replica) in the same thread and register: equal maps, even
    when their digits split them differently (a wgmma accumulator's warp and warpgroup digits against one
    mma.sync warp digit)."""
    if (a.shape, a.threads, a.replicate, a.registers) != (b.shape, b.threads, b.replicate, b.registers):
        return False
    elements = a.all_elements()
    return all(np.array_equal(np.stack(a.locate(elements, r)), np.stack(b.locate(elements, r)))
               for r in range(a.replicate))


def check_bijection(layout: TiledLayout) -> str | None:
    """Brute force: does (padded element, replica) -> (thread, register) hit threads x registers once each?"""
    elements = layout.all_elements(padded=True)
    slots = []
    for replica in range(layout.replicate):
        thread, reg = layout.locate(elements, replica)
        slots.append(thread * layout.registers + reg)
    slots = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
    total = layout.threads * layout.registers
    if len(slots) != total:
        return f"{len(slots)} (element, replica) pairs for {total} (thread, register) slots"
    if slots.min() < 0 or slots.max() >= total or len(np.unique(slots)) != total:
        return "two (element, replica) pairs share a (thread, register) slot"
    return None


# ----------------------------------------------------------------------------
# Attributes.


def to_attr(layout: TiledLayout) -> ir.Attribute:
    """`#tile.layout<thread_map, local_map, replicate>` of `layout`."""
    rank, symbols = layout.rank, 1 if layout.replicate > 1 else 0
    thread = _sum_expr([(d.thread, _digit_expr(layout, d)) for d in layout.thread_digits()])
    reg = _sum_expr([(d.reg, _digit_expr(layout, d)) for d in layout.register_digits()])
    return tile.make_layout(
        ir.AffineMap.get(rank, symbols, [thread]), ir.AffineMap.get(rank, 0, [reg]), layout.replicate
    )


def _digit_expr(layout: TiledLayout, d: Digit) -> ir.AffineExpr:
    var = ir.AffineSymbolExpr.get(0) if d.dim is None else ir.AffineDimExpr.get(d.dim)
    extent = layout.replicate if d.dim is None else layout.shape[d.dim]
    padded = layout.replicate if d.dim is None else layout.padded_shape[d.dim]
    expr = var if d.stride == 1 else ir.AffineFloorDivExpr.get(var, ir.AffineConstantExpr.get(d.stride))
    if not d.stride * d.size == extent == padded:
        expr = ir.AffineModExpr.get(expr, ir.AffineConstantExpr.get(d.size))
    return expr


def _sum_expr(terms: list[tuple[int, ir.AffineExpr]]) -> ir.AffineExpr:
    total = None
    for coeff, expr in terms:
        term = expr if coeff == 1 else expr * coeff
        total = term if total is None else total + term
    return total if total is not None else ir.AffineConstantExpr.get(0)


def from_attr(attr: ir.Attribute, shape: tuple[int, ...], threads: int) -> TiledLayout:
    """Read a `#tile.layout` describing a fragment (or domain) of `shape` over `threads`."""
    shape = tuple(shape)
    problem = tile.check_layout(attr, len(shape))
    if problem:
        raise LayoutError(problem)
    thread_map, local_map, replicate = tile.layout_parts(attr)
    digits = []
    for terms, kind in ((_terms(thread_map.results[0]), "thread"), (_terms(local_map.results[0]), "reg")):
        for coeff, var, stride, size in terms:
            extent = replicate if var is None else shape[var]
            if size is None:
                if extent % stride:
                    raise LayoutError(f"digit floordiv {stride} of an extent-{extent} dim needs a 'mod'")
                size = extent // stride
            digits.append(Digit(var, stride, size, **{kind: coeff}))
    layout = TiledLayout(shape, threads, tuple(digits))
    if layout.replicate != replicate:
        raise LayoutError(f"replica digits cover {layout.replicate} replicas, the attribute says {replicate}")
    return layout.checked()


def _terms(expr: ir.AffineExpr) -> list[tuple[int, int | None, int, int | None]]:
    """`expr` as a sum of `coeff * ((var floordiv stride) mod size)`; var None is s0, size None: no mod."""
    if isinstance(expr, ir.AffineConstantExpr):
        if expr.value != 0:
            raise LayoutError(f"layout maps take no constant offsets, got {expr}")
        return []
    if isinstance(expr, ir.AffineAddExpr):
        return _terms(expr.lhs) + _terms(expr.rhs)
    if isinstance(expr, ir.AffineMulExpr):
        factor, inner = _constant_side(expr)
        return [(c * factor, v, s, z) for c, v, s, z in _terms(inner)]
    if isinstance(expr, ir.AffineDimExpr):
        return [(1, expr.position, 1, None)]
    if isinstance(expr, ir.AffineSymbolExpr):
        if expr.position != 0:
            raise LayoutError("a layout's thread_map takes only the replica symbol s0")
        return [(1, None, 1, None)]
    if isinstance(expr, (ir.AffineFloorDivExpr, ir.AffineModExpr)):
        divisor = expr.rhs
        if not isinstance(divisor, ir.AffineConstantExpr) or divisor.value <= 0:
            raise LayoutError(f"expected a positive constant divisor in {expr}")
        inner = _terms(expr.lhs)
        if len(inner) != 1 or inner[0][0] != 1:
            raise LayoutError(f"cannot read {expr} as a digit of one index")
        _, var, stride, size = inner[0]
        return [_divided(var, stride, size, divisor.value, isinstance(expr, ir.AffineModExpr), expr)]
    raise LayoutError(f"unsupported expression in a layout map: {expr}")


def _constant_side(expr) -> tuple[int, ir.AffineExpr]:
    if isinstance(expr.rhs, ir.AffineConstantExpr):
        return expr.rhs.value, expr.lhs
    if isinstance(expr.lhs, ir.AffineConstantExpr):
        return expr.lhs.value, expr.rhs
    raise LayoutError(f"a layout map must be linear in its digits, got {expr}")


def _divided(var, stride, size, divisor, is_mod, expr):
    if is_mod:
        if size is not None and size % divisor:
            raise LayoutError(f"cannot read {expr} as a digit: {divisor} does not divide {size}")
        return (1, var, stride, divisor)
    if size is None:
        return (1, var, stride * divisor, None)
    if size % divisor:
        raise LayoutError(f"cannot read {expr} as a digit: {divisor} does not divide {size}")
    return (1, var, stride * divisor, size // divisor)


# ----------------------------------------------------------------------------
# Independent evaluation of the affine maps themselves (what tests check against).


def eval_affine(expr: ir.AffineExpr, dims: np.ndarray, symbols: np.ndarray | None = None) -> np.ndarray:
    """Evaluate an affine expression on integer arrays (dims [..., n]; symbols [..., m])."""
    ops = AffineOps(
        constant=lambda value: np.full(dims.shape[:-1], value, dtype=np.int64),
        add=np.add,
        mul=np.multiply,
        floordiv=np.floor_divide,
        ceildiv=lambda lhs, rhs: -np.floor_divide(-lhs, rhs),
        mod=np.mod,
    )
    return fold_affine(expr, ops, _columns(dims), _columns(symbols))


def _columns(values: np.ndarray | None) -> list[np.ndarray]:
    if values is None:
        return []
    return [values[..., i].astype(np.int64) for i in range(values.shape[-1])]
