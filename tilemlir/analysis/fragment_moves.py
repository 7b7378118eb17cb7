"""How lower-tile-ops moves fragment data, decided from layouts alone (so test-print-layouts can show it).

- A whole fragment copied onto a whole fragment whose layout puts every element on the same threads is
  register-local (each thread converts its own elements); any other fragment-to-fragment (or -local) copy
  goes through a shared staging buffer.
- A `tile.reduce` of a fragment reduces into the source layout's projection: each thread combines its own
  registers, then the reduced dim's thread digits that lie within a warp (power-of-two lane strides) are
  combined by butterfly shuffles (`lanes`), and those across warps through a shared exchange (`warps`).
  `copies` are the projection's other replica digits: threads that hold the same partials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.layouts import TiledLayout, same_holders

WARP = 32


def copy_is_register_local(src: TiledLayout, dst: TiledLayout, whole_box: bool) -> bool:
    """A copy of all of `src` onto all of `dst` (`whole_box`: same shape, zero offsets) with no exchange."""
    return whole_box and src.shape == dst.shape and same_holders(src, dst)


@dataclass(frozen=True)
class ReductionThreads:
    layout: TiledLayout  # the projection partials live in, over the destination's shape
    lanes: list[tuple[int, int]]  # (thread coefficient, size) combined by shuffles
    warps: list[tuple[int, int]]  # combined through shared memory
    copies: list[tuple[int, int]]  # replicas holding equal partials

    @property
    def shuffle_offsets(self) -> list[int]:
        """The xor offsets of the butterfly, largest first."""
        return sorted((c << bit for c, z in self.lanes for bit in range(z.bit_length() - 1)), reverse=True)

    @property
    def exchange_slots(self) -> int:
        return math.prod(z for _, z in self.warps)


def reduction_threads(src: TiledLayout, dim: int, dst_shape: tuple[int, ...]) -> ReductionThreads:
    keep = [k for k in range(src.rank) if k != dim]
    projected = src.project(keep)
    layout = projected.with_shape(dst_shape) if keep else lir.unsqueeze(projected, dst_shape)
    reduced = {d.thread for d in src.digits if d.dim == dim and d.is_thread}
    lanes, warps = split_at_warp([(d.thread, d.size) for d in layout.digits if d.dim is None and d.thread in reduced])
    copies = [(d.thread, d.size) for d in layout.digits if d.dim is None and d.thread not in reduced]
    return ReductionThreads(layout, lanes, warps, copies)


def split_at_warp(digits: list[tuple[int, int]], warp: int = WARP):
    """Split thread digits (coeff, size) into the parts shuffles reach (power-of-two lanes) and the rest."""
    lanes, rest = [], []
    for coeff, size in digits:
        if coeff >= warp or coeff & (coeff - 1):
            rest.append((coeff, size))
            continue
        inside = min(size, warp // coeff)
        if size % inside or inside & (inside - 1):
            rest.append((coeff, size))
            continue
        if inside > 1:
            lanes.append((coeff, inside))
        if size // inside > 1:
            rest.append((coeff * inside, size // inside))
    return lanes, rest


def describe_reduction(src: TiledLayout, dim: int, dst_shape: tuple[int, ...]) -> str:
    plan = reduction_threads(src, dim, dst_shape)
    registers = math.prod(d.size for d in src.digits if d.dim == dim and not d.is_thread)
    parts = [f"{registers} register{'s' if registers != 1 else ''} a thread"]
    offsets = plan.shuffle_offsets
    parts.append(f"{len(offsets)} warp shuffle{'s' if len(offsets) != 1 else ''}"
                 + (f" (xor {', '.join(map(str, offsets))})" if offsets else ""))
    parts.append(f"a shared exchange over {plan.exchange_slots} warps" if plan.warps else "no shared memory")
    return ", ".join(parts)
