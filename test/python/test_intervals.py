"""The cheap range analysis: the ranges of thread-level index values it proves, and where it gives up."""

from __future__ import annotations

import re

import pytest

from tilemlir.analysis.intervals import UNKNOWN, Intervals, value_range
from tilemlir.context import make_context
from tilemlir.mlir import ir


def ranges(body: str, known=None) -> dict[str, tuple]:
    """The range of every named value `%name = ...` in `body` (a gpu.launch body with %bx < %g = n
    ceildiv 64 blocks of %tx < 128 threads, n the length of %X; %k and %b are parameters), by name."""
    text = f"""
func.func @f(%X: memref<?xf32>, %k: index, %b: i1) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %X, %c0 : memref<?xf32>
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %g = arith.ceildivui %n, %c64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {{
{body}
    gpu.terminator
  }}
  return
}}"""
    with make_context():
        module = ir.Module.parse(text)
        analysis = Intervals(known(module) if known else None)
        return {name: analysis.range(value) for name, value in named_values(text, module)}


def named_values(text: str, module) -> list[tuple[str, ir.Value]]:
    """(name, value) of every `%name = ...` line of `text`: the parsed module keeps no SSA names, but its
    ops come in the text's order."""
    names = re.findall(r"^\s*%(\w+) = ", text, re.MULTILINE)
    results = [op.results[0] for op in _walk(module.operation) if len(op.results) == 1]
    assert len(names) == len(results)
    return list(zip(names, results))


def _walk(op):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _walk(inner.operation)


def test_ids_sizes_and_ceiling_division_by_constants():
    got = ranges("""
    %t = gpu.thread_id x
    %lane = gpu.lane_id
    %nb = gpu.block_dim x
    %ng = gpu.grid_dim x
    %blk = gpu.block_id x
    %q = arith.ceildivsi %t, %c64 : index""", known=bounded_n(1000))
    assert got["t"] == (0, 127) and got["lane"] == (0, 31) and got["nb"] == (128, 128)
    assert got["g"] == (0, 16) and got["ng"] == (0, 16) and got["blk"] == (0, 15) and got["q"] == (0, 2)


def bounded_n(high: int):
    """`known` for `ranges`: %n, the length of %X, in [0, high]."""
    def known(module):
        dim = next(op for op in _walk(module.operation) if op.name == "memref.dim").results[0]
        return lambda value: (0, high) if value == dim else None
    return known


def test_without_known_ranges_a_symbol_is_unbounded_above():
    assert ranges("    %t = gpu.thread_id x")["g"] == (0, None)


def test_select_is_the_union_and_affine_maps_round_as_mlir_does():
    got = ranges("""
    %t = gpu.thread_id x
    %s = arith.select %b, %t, %c1 : index
    %f = affine.apply affine_map<(d0) -> ((d0 - 70) floordiv 8)>(%t)
    %c = affine.apply affine_map<(d0) -> ((d0 - 70) ceildiv 8)>(%t)
    %m = affine.apply affine_map<(d0) -> ((d0 - 70) mod 8)>(%t)
    %lo = affine.min affine_map<(d0) -> (d0, 50)>(%t)
    %hi = affine.max affine_map<(d0) -> (d0 - 100, 5)>(%t)""")
    assert got["s"] == (0, 127)
    assert got["f"] == (-9, 7) and got["c"] == (-8, 8) and got["m"] == (0, 7)  # floor(-70 / 8) = -9
    assert got["lo"] == (0, 50) and got["hi"] == (5, 27)


def test_bitwise_ops_of_non_negative_values_stay_below_the_next_power_of_two():
    # the swizzle's `L ^ ((L >> 7) mod 4) << 4` on a shared tile's byte offset (materialize-shared-layouts)
    got = ranges("""
    %t = gpu.thread_id x
    %c16 = arith.constant 16 : index
    %l = arith.muli %t, %c16 : index
    %r = arith.remui %t, %c16 : index
    %x = arith.xori %l, %r : index
    %o = arith.ori %t, %c16 : index
    %a = arith.andi %k, %c16 : index
    %u = arith.xori %k, %c16 : index
    %neg = arith.subi %c0, %t : index
    %v = arith.ori %neg, %c16 : index""")
    assert got["l"] == (0, 2032) and got["x"] == (0, 2047)
    assert got["o"] == (0, 127) and got["a"] == (0, 16)  # an and by a non-negative bound is below it
    assert got["u"] == UNKNOWN and got["v"] == UNKNOWN  # %k unbounded; %neg may be negative


def test_a_branch_on_a_comparison_bounds_the_values_inside_it():
    got = ranges("""
    %t = gpu.thread_id x
    %c32 = arith.constant 32 : index
    %lt = arith.cmpi ult, %t, %c32 : index
    scf.if %lt {
      %inside = arith.muli %t, %c64 : index
      %ge = arith.cmpi sge, %c64, %k : index
      %both = arith.andi %ge, %lt : i1
      scf.if %both {
        %kk = arith.addi %k, %t : index
      } else {
        %kn = arith.addi %k, %c1 : index
      }
    } else {
      %outside = arith.muli %t, %c64 : index
    }
    %ge32 = arith.cmpi uge, %t, %c32 : index
    scf.if %ge32 {
      %big = arith.addi %t, %c1 : index
    } else {
      %small = arith.addi %t, %c1 : index
    }
    %after = arith.muli %t, %c64 : index""")
    assert got["inside"] == (0, 31 * 64) and got["after"] == (0, 127 * 64)
    assert got["outside"] == (0, 127 * 64)  # t >= 32 or t < 0 as signed: the negation of `ult` bounds nothing
    assert got["small"] == (1, 32) and got["big"] == (1, 128)  # not (t >= 32 unsigned): t in [0, 32)
    assert got["kk"] == (None, 64 + 31)  # 64 >= k, mirrored
    assert got["kn"] == UNKNOWN  # not (a and b) says nothing about either


def test_loop_carried_values_and_unknown_ops_stay_unknown():
    got = ranges("""
    %t = gpu.thread_id x
    %r = scf.for %i = %c1 to %c64 step %c1 iter_args(%acc = %t) -> (index) {
      %next = arith.addi %acc, %i : index
      scf.yield %next : index
    }
    %sh = arith.shli %t, %c1 : index""")
    assert got["r"] == UNKNOWN and got["next"] == UNKNOWN and got["sh"] == UNKNOWN


def test_a_ring_slot_counter_is_bounded_by_its_inductive_range():
    """carry-ring-slots' counters: `s + 1 == 3 ? 0 : s + 1` from 2 stays in [0, 2] (the select picks s + 1 only
    where it is not 3), after the loop too; a counter that may pass its wrap value is unknown."""
    got = ranges("""
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %slot = scf.for %i = %c0 to %c64 step %c1 iter_args(%s = %c2) -> (index) {
      %up = arith.addi %s, %c1 : index
      %wraps = arith.cmpi eq, %up, %c3 : index
      %next = arith.select %wraps, %c0, %up : index
      %byte = arith.muli %s, %c64 : index
      scf.yield %next : index
    }
    %c5 = arith.constant 5 : index
    %runs = scf.for %i = %c0 to %c64 step %c1 iter_args(%s = %c5) -> (index) {
      %up5 = arith.addi %s, %c1 : index
      %wraps5 = arith.cmpi eq, %up5, %c3 : index
      %next5 = arith.select %wraps5, %c0, %up5 : index
      scf.yield %next5 : index
    }
    %t = gpu.thread_id x
    %ne = arith.cmpi ne, %t, %c0 : index
    %not0 = arith.select %ne, %t, %c1 : index""")
    assert got["slot"] == (0, 2) and got["next"] == (0, 2) and got["byte"] == (0, 128)
    assert got["runs"] == UNKNOWN  # from 5 it counts up past 3 and never wraps
    assert got["not0"] == (1, 127)  # picks t only where t != 0, the bottom of its range


@pytest.mark.parametrize("length", [10, 80])
def test_a_chain_deeper_than_the_depth_limit_is_unknown_but_a_query_from_the_middle_is_not(length):
    """Ranges cut short by the depth limit are not kept: asking for a value nearer the start still works."""
    chain = "\n".join(f"    %v{i + 1} = arith.addi %v{i}, %c1 : index" for i in range(length))
    text = f"""
func.func @f() {{
  %c1 = arith.constant 1 : index
  %v0 = arith.constant 0 : index
{chain}
  return
}}"""
    with make_context():
        module = ir.Module.parse(text)
        values = dict(named_values(text, module))
        analysis = Intervals()
        last = analysis.range(values[f"v{length}"])
        assert last == ((length, length) if length <= 64 else UNKNOWN)
        assert analysis.range(values["v5"]) == (5, 5) and value_range(values["v5"]) == (5, 5)
