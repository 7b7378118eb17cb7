"""Simulation state that lives for one block: buffers allocated once at the function's entry and refilled with
their initial value at the start of every simulated block."""

from __future__ import annotations

from tilemlir.backends.cpu import buffers
from tilemlir.mlir import ir


class BlockStates:
    """Mixin of the launch models (warpgroups, bulk stores): `_state` makes such a buffer, `reset` lists them.
    Needs `self.function` (the function the buffers are allocated in) and `self._reset` (a list)."""

    function: ir.Operation
    _reset: list[tuple[ir.Value, int]]

    def _state(self, shape: list[int], initial: int, loc: ir.Location) -> ir.Value:
        buffer = buffers.allocate_at_entry(self.function, ir.MemRefType.get(shape, ir.IntegerType.get_signless(64)),
                                           loc)
        self._reset.append((buffer, initial))
        return buffer

    def reset(self) -> list[tuple[ir.Value, int]]:
        """(buffer, value) pairs to fill at every block start."""
        return list(self._reset)
