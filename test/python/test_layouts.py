"""Layout algebra: construction, projection, lifting, attributes and the bijection onto threads x registers."""

import itertools

import numpy as np
import pytest

from tilemlir.analysis.layouts import (
    Digit,
    LayoutError,
    TiledLayout,
    check_bijection,
    eval_affine,
    from_attr,
    replicated_layout,
    same_holders,
    same_placement,
    tiled_layout,
    to_attr,
)
from tilemlir.context import make_context
from tilemlir.dialects.tile import layout_parts, make_layout
from tilemlir.mlir import ir


@pytest.fixture(autouse=True)
def context():
    with make_context() as ctx, ir.Location.unknown(ctx):
        yield ctx


def attr_slots(layout: TiledLayout, padded: bool = True):
    """(thread, register) of every (element, replica), computed from the attribute's affine maps alone."""
    thread_map, local_map, replicate = layout_parts(to_attr(layout))
    elements = layout.all_elements(padded=padded)
    threads, registers = [], []
    for replica in range(replicate):
        symbols = np.full((len(elements), 1), replica)
        threads.append(eval_affine(thread_map.results[0], elements, symbols))
        registers.append(eval_affine(local_map.results[0], elements))
    return np.concatenate(threads), np.concatenate(registers), elements


def assert_attr_is_bijection(layout: TiledLayout):
    """The attribute maps (padded element, replica) one-to-one onto threads x registers."""
    threads, registers, _ = attr_slots(layout)
    slots = threads * layout.registers + registers
    assert threads.min() >= 0 and threads.max() < layout.threads
    assert registers.min() >= 0 and registers.max() < layout.registers
    assert sorted(slots.tolist()) == list(range(layout.threads * layout.registers))


SMALL_SHAPES = [(1,), (4,), (7,), (64,), (2, 8), (3, 5), (4, 64), (1, 40), (5, 1), (2, 3, 8), (16, 16)]


@pytest.mark.parametrize("shape", SMALL_SHAPES)
@pytest.mark.parametrize("threads", [1, 4, 8, 32, 96, 128])
@pytest.mark.parametrize("vector", [1, 4])
def test_chosen_layouts_are_bijections(shape, threads, vector):
    for fast in [None, *range(len(shape))]:
        layout = tiled_layout(shape, threads, vector, fast_dim=fast)
        assert check_bijection(layout) is None
        assert_attr_is_bijection(layout)
        # On the real (unpadded) fragment the map is injective.
        t, r, _ = attr_slots(layout, padded=False)
        assert len(set(zip(t.tolist(), r.tolist()))) == len(t)


@pytest.mark.parametrize("shape", [(4, 64), (3, 5), (2, 3, 8), (16, 16)])
@pytest.mark.parametrize("threads", [8, 32, 128])
def test_projections_and_lifts_are_bijections_and_agree(shape, threads):
    layout = tiled_layout(shape, threads, 4)
    for keep_count in range(len(shape)):
        for keep in itertools.combinations(range(len(shape)), keep_count):
            projected = layout.project(list(keep))
            assert check_bijection(projected) is None
            assert_attr_is_bijection(projected)
            # every thread holding an element of the slice holds its projection
            table = projected.holders()
            for element in layout.all_elements():
                thread, _ = layout.locate(element)
                sub = tuple(element[list(keep)])
                flat = np.ravel_multi_index(sub, projected.shape) if keep else 0
                assert thread in table[flat]
            lifted = projected.lift(list(keep), shape, 4)
            assert check_bijection(lifted) is None
            assert same_holders(lifted.project(list(keep)), projected)


def test_rows_are_coalesced_runs_of_16_bytes():
    # bf16 4x4096 over 128 threads: every split needs 128 registers; a warp per row wins (no shared exchange):
    # thread t holds columns [(c*32 + t%32)*8, +8) for c in 0..15 of row t//32.
    layout = tiled_layout((4, 4096), 128, vector=8)
    assert layout.registers == 128 and layout.replicate == 1
    for t in (0, 1, 77, 127):
        for c in range(16):
            for e in range(8):
                thread, _ = layout.locate(np.array([t // 32, (c * 32 + t % 32) * 8 + e]))
                assert thread == t
    assert str(to_attr(layout)) == (
        "#tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32 + d0 * 32)>, "
        "affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>, 1 : i64>"
    )


def test_one_row_of_4096_over_128_threads_spans_the_block():
    # thread t holds columns [(c*128+t)*8, +8) for c in 0..3
    layout = tiled_layout((4096,), 128, vector=8)
    for t in (0, 5, 127):
        for c in range(4):
            assert layout.locate(np.array([(c * 128 + t) * 8 + 3]))[0] == t


@pytest.mark.parametrize("n, threads, warps", [(1024, 32, 1), (2048, 64, 2), (4096, 128, 4), (8192, 256, 8),
                                               (8192, 512, 16), (1024, 128, 4)])
def test_one_row_spans_the_warps_of_the_block(n, threads, warps):
    layout = tiled_layout((n,), threads, vector=8)
    thread_digits = [d for d in layout.digits if d.is_thread]
    assert [(d.stride, d.size, d.thread) for d in thread_digits] == [(8, threads, 1)]
    assert layout.registers == max(8, n // threads)
    assert threads // 32 == warps


def test_rows_share_the_block_when_rows_are_short():
    # 4 rows of 576 bf16 over 128 threads: a warp per row beats padding 72 runs to 128 threads.
    layout = tiled_layout((4, 576), 128, vector=8)
    row_threads = [d for d in layout.digits if d.dim == 0 and d.is_thread]
    assert [(d.size, d.thread) for d in row_threads] == [(4, 32)]
    assert layout.registers == 24 and layout.padded_shape == (4, 768)


def test_a_non_divisible_extent_is_padded_with_masked_registers():
    layout = tiled_layout((1000,), 128, vector=8)
    assert layout.padded_shape == (1024,) and layout.is_padded
    assert layout.registers == 8
    assert "padded to 1024" in layout.describe()
    threads, registers, elements = attr_slots(layout, padded=False)
    assert len(elements) == 1000 and threads.max() == 124


def test_reduced_dim_gets_the_lanes():
    layout = tiled_layout((64, 32), 128, vector=4, fast_dim=0)
    lanes = sorted((d for d in layout.digits if d.is_thread), key=lambda d: d.thread)
    assert lanes[0].dim == 0 and lanes[0].thread == 1


def test_projection_replicates_over_the_dropped_threads():
    rows = tiled_layout((4, 4096), 128, vector=8).project([0])
    assert rows.replicate == 32 and rows.registers == 1
    assert str(to_attr(rows)) == (
        "#tile.layout<affine_map<(d0)[s0] -> (d0 * 32 + s0)>, affine_map<(d0) -> (0)>, 32 : i64>"
    )
    spread = tiled_layout((2, 4096), 256, vector=8, fast_dim=1)
    assert spread.project([0]).replicate == 128
    whole = tiled_layout((1, 4096), 128, vector=8).project([0])
    assert same_holders(whole, replicated_layout((1,), 128))


def test_attribute_round_trip():
    for shape, threads, vector in [((4, 4096), 128, 8), ((1000,), 128, 8), ((3, 100), 128, 4), ((4, 8192), 96, 8)]:
        layout = tiled_layout(shape, threads, vector)
        assert from_attr(to_attr(layout), shape, threads) == layout
        projected = layout.project([0]) if len(shape) > 1 else layout.project([])
        assert from_attr(to_attr(projected), projected.shape, threads) == projected


def test_reads_hand_written_layouts():
    attr = make_layout(
        ir.AffineMap.get(2, 0, [ir.AffineExpr.get_dim(0) * 32 + ir.AffineExpr.get_floor_div(
            ir.AffineExpr.get_dim(1), ir.AffineExpr.get_constant(4))]),
        ir.AffineMap.get(2, 0, [ir.AffineExpr.get_mod(ir.AffineExpr.get_dim(1), ir.AffineExpr.get_constant(4))]),
    )
    layout = from_attr(attr, (4, 128), 128)
    assert layout.registers == 4 and check_bijection(layout) is None
    assert layout.locate(np.array([2, 13]))[0] == 2 * 32 + 3


@pytest.mark.parametrize("thread, local, message", [
    ("(d0) -> (d0 floordiv 2)", "(d0) -> (d0 mod 2)", "cover 64 threads, not 128"),
    ("(d0) -> (d0 mod 128)", "(d0) -> (d0 floordiv 64)", "mixed radix"),
    ("(d0) -> (d0 ceildiv 2)", "(d0) -> (d0 mod 2)", "unsupported expression"),
    ("(d0) -> ((d0 * 2) mod 128)", "(d0) -> (0)", "as a digit"),
    ("(d0) -> (d0 + 1)", "(d0) -> (0)", "constant offsets"),
])
def test_rejects_layouts_that_are_not_tiled_bijections(thread, local, message):
    attr = make_layout(ir.AffineMapAttr(ir.Attribute.parse(f"affine_map<{thread}>")).value,
                       ir.AffineMapAttr(ir.Attribute.parse(f"affine_map<{local}>")).value)
    with pytest.raises(LayoutError, match=message):
        from_attr(attr, (128,), 128)


@pytest.mark.parametrize("shape, threads, vector", [((4, 64), 128, 4), ((3, 100), 64, 8), ((1000,), 128, 8)])
def test_inverse_gives_back_the_element_and_replica(shape, threads, vector):
    for layout in (tiled_layout(shape, threads, vector), tiled_layout(shape, threads, vector).project([0])):
        elements = layout.all_elements(padded=True)
        for replica in range(layout.replicate):
            thread, reg = layout.locate(elements, replica)
            back, back_replica = layout.element_of(thread, reg)
            assert np.array_equal(back, elements) and (back_replica == replica).all()


def test_digit_validation_catches_overlaps():
    bad = TiledLayout((8,), 4, (Digit(0, 1, 4, thread=1), Digit(0, 2, 2, reg=1)))
    assert "mixed radix" in bad.problem()


def test_same_placement_compares_maps_not_digits():
    # Rows 0..127 over 8 warps of 16 rows: one warp digit, or a warp digit within a warpgroup and a warpgroup digit
    # (wgmma's accumulator over 2 warpgroups) — the same map, different digits.
    one = TiledLayout((128, 8), 256, (Digit(1, 1, 2, reg=1), Digit(1, 2, 4, thread=1), Digit(0, 1, 8, thread=4),
                                      Digit(0, 8, 2, reg=2), Digit(0, 16, 8, thread=32))).checked()
    split = TiledLayout((128, 8), 256, (Digit(1, 1, 2, reg=1), Digit(1, 2, 4, thread=1), Digit(0, 1, 8, thread=4),
                                        Digit(0, 8, 2, reg=2), Digit(0, 16, 4, thread=32),
                                        Digit(0, 64, 2, thread=128))).checked()
    assert one != split and same_placement(one, split)
    # Warps holding rows 16 w + 64 i (two m64 blocks in one warpgroup's registers) instead: other threads.
    interleaved = TiledLayout((128, 8), 128, (Digit(1, 1, 2, reg=1), Digit(1, 2, 4, thread=1),
                                              Digit(0, 1, 8, thread=4), Digit(0, 8, 2, reg=2),
                                              Digit(0, 16, 4, thread=32), Digit(0, 64, 2, reg=4))).checked()
    runs = TiledLayout((128, 8), 128, (Digit(1, 1, 2, reg=1), Digit(1, 2, 4, thread=1), Digit(0, 1, 8, thread=4),
                                       Digit(0, 8, 2, reg=2), Digit(0, 16, 2, reg=4),
                                       Digit(0, 32, 4, thread=32))).checked()
    assert same_holders(interleaved, interleaved) and not same_placement(interleaved, runs)
    # Same threads, registers swapped: not the same placement.
    swapped = TiledLayout((128, 8), 256, (Digit(1, 1, 2, reg=2), Digit(1, 2, 4, thread=1), Digit(0, 1, 8, thread=4),
                                          Digit(0, 8, 2, reg=1), Digit(0, 16, 8, thread=32))).checked()
    assert same_holders(one, swapped) and not same_placement(one, swapped)
