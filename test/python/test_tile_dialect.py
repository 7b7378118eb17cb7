"""The Python builders of every tile op: build, verify, print, re-parse, and read the attributes back."""

import pytest

from tilemlir.context import make_context
from tilemlir.dialects import tile
from tilemlir.mlir import MLIRError, arith, func, ir, memref

DYN = ir.ShapedType.get_dynamic_size()


@pytest.fixture
def ctx():
    context = make_context()
    with context, ir.Location.file("builders.py", 7, 3):
        yield context


class Kernel:
    """A module with one function `k(X: memref<?x64xf32>, Y: memref<?x64xf32>, A: memref<?x?xf16>, n: index)`
    and one 2-d tile.kernel; `inside()` is an insertion point in the kernel body before its yield."""

    def __init__(self, threads=128):
        self.module = ir.Module.create()
        f32, f16, index = ir.F32Type.get(), ir.F16Type.get(), ir.IndexType.get()
        self.f32, self.f16, self.index = f32, f16, index
        glob = ir.MemRefType.get([DYN, 64], f32)
        with ir.InsertionPoint(self.module.body):
            self.func = func.FuncOp("k", ([glob, glob, ir.MemRefType.get([DYN, DYN], f16), index], []))
            entry = self.func.add_entry_block()
        self.X, self.Y, self.A, self.n = entry.arguments
        with ir.InsertionPoint(entry):
            self.c = {v: arith.constant(index, v) for v in (0, 1, 2, 4, 64)}
            self.zero = arith.constant(f32, 0.0)
            self.kernel = tile.kernel([self.n, self.c[2]], threads)
            func.ReturnOp([])
        with ir.InsertionPoint(tile.body_block(self.kernel)):
            self.terminator = tile.yield_()

    def inside(self):
        return ir.InsertionPoint(self.terminator)

    def verify_and_reparse(self) -> str:
        """Verify, print, re-parse the text, and return the re-printed text (which must be identical)."""
        assert self.module.operation.verify()
        text = str(self.module)
        assert str(ir.Module.parse(text)) == text
        return text


def attrs(op):
    return op.operation.attributes


def test_kernel_builder_makes_one_index_argument_per_grid_dim(ctx):
    k = Kernel(threads=256)
    block = tile.body_block(k.kernel)
    assert [str(a.type) for a in block.arguments] == ["index", "index"]
    assert attrs(k.kernel)["threads"].value == 256
    assert list(k.kernel.operation.operands) == [k.n, k.c[2]]
    assert "operandSegmentSizes" not in attrs(k.kernel)
    text = k.verify_and_reparse()
    assert '"tile.kernel"(%arg3, %c2) ({' in text
    assert "{threads = 256 : i64} : (index, index) -> ()" in text


@pytest.mark.parametrize(
    "builder, space", [(tile.alloc_shared, "shared"), (tile.alloc_fragment, "fragment"), (tile.alloc_local, "local")]
)
def test_alloc_builders_set_the_memory_space_and_name(ctx, builder, space):
    k = Kernel()
    with k.inside():
        buf = builder([4, 64], k.f32, "acc")
        unnamed = builder([8], k.f16)
    result_type = buf.operation.results[0].type
    assert tile.memory_space(result_type) == space
    assert list(result_type.shape) == [4, 64] and result_type.element_type == k.f32
    assert attrs(buf)["name"].value == "acc"
    assert "name" not in attrs(unnamed)
    text = k.verify_and_reparse()
    assert f'"tile.alloc_{space}"() {{name = "acc"}} : () -> memref<4x64xf32, "{space}">' in text


def test_fragment_layout_round_trips_through_make_layout_and_layout_parts(ctx):
    k = Kernel()
    d0, d1, s0 = ir.AffineDimExpr.get(0), ir.AffineDimExpr.get(1), ir.AffineSymbolExpr.get(0)
    four = ir.AffineConstantExpr.get(4)
    thread_map = ir.AffineMap.get(2, 1, [d0 * 16 + ir.AffineFloorDivExpr.get(d1, four) + s0 * 64])
    local_map = ir.AffineMap.get(2, 0, [d1 % 4])
    layout = tile.make_layout(thread_map, local_map, replicate=2)
    with k.inside():
        frag = tile.alloc_fragment([4, 64], k.f32, "x")
    attrs(frag)["layout"] = layout
    got_thread, got_local, replicate = tile.layout_parts(attrs(frag)["layout"])
    assert got_thread == thread_map and got_local == local_map and replicate == 2
    assert tile.check_layout(attrs(frag)["layout"], 2) is None
    assert "takes 2 dims but the fragment has rank 3" in tile.check_layout(layout, 3)
    text = k.verify_and_reparse()
    assert "#tile.layout<" in text and ", 2 : i64>" in text


def test_parallel_builder_with_element_code(ctx):
    k = Kernel()
    with k.inside():
        frag = tile.alloc_fragment([4, 64], k.f32, "x")
        par = tile.parallel([k.c[4], k.c[64]])
    block = tile.body_block(par)
    i, j = block.arguments
    with ir.InsertionPoint(block):
        v = memref.load(frag.result, [i, j])
        memref.store(arith.addf(v, v), frag.result, [i, j])
        tile.yield_()
    assert list(par.operation.operands) == [k.c[4], k.c[64]]
    assert len(block.arguments) == 2
    text = k.verify_and_reparse()
    assert '"tile.parallel"(%c4, %c64) ({' in text
    assert "}) : (index, index) -> ()" in text


def test_pipelined_builder(ctx):
    k = Kernel()
    with k.inside():
        loop = tile.pipelined(k.c[0], k.n, k.c[1], num_stages=3)
    with ir.InsertionPoint(tile.body_block(loop)):
        tile.yield_()
    assert attrs(loop)["num_stages"].value == 3
    assert len(tile.body_block(loop).arguments) == 1
    text = k.verify_and_reparse()
    assert '"tile.pipelined"(%c0, %arg3, %c1) ({' in text and "{num_stages = 3 : i64}" in text


def test_copy_builder_orders_offsets_src_then_dst(ctx):
    k = Kernel()
    block_row = tile.body_block(k.kernel).arguments[0]
    with k.inside():
        frag = tile.alloc_fragment([4, 64], k.f32, "x")
        load = tile.copy(k.X, frag.result, [block_row, k.c[0]], [k.c[0], k.c[0]], [4, 64])
        store = tile.copy(frag.result, k.Y, [k.c[0], k.c[0]], [block_row, k.c[0]], [4, 64])
    assert list(load.operation.operands)[2:] == [block_row, k.c[0], k.c[0], k.c[0]]
    assert [a.value for a in attrs(load)["shape"]] == [4, 64]
    assert list(store.operation.operands)[:2] == [frag.result, k.Y]
    assert "operandSegmentSizes" not in attrs(load)
    text = k.verify_and_reparse()
    assert '"tile.copy"(%arg0, %0, %arg4, %c0, %c0, %c0) {shape = [4, 64]}' in text


def test_fill_builder(ctx):
    k = Kernel()
    with k.inside():
        local = tile.alloc_local([8], k.f32, "acc")
        fill = tile.fill(local.result, k.zero)
    assert list(fill.operation.operands) == [local.result, k.zero]
    text = k.verify_and_reparse()
    assert '"tile.fill"(%0, %cst) : (memref<8xf32, "local">, f32) -> ()' in text


@pytest.mark.parametrize("kind", tile.REDUCE_KINDS)
def test_reduce_builder_every_kind(ctx, kind):
    k = Kernel()
    with k.inside():
        src = tile.alloc_fragment([4, 64], k.f16)
        dst = tile.alloc_fragment([4], k.f32)
        red = tile.reduce(src.result, dst.result, kind, dim=1, clear=False)
    assert attrs(red)["kind"].value == kind
    assert attrs(red)["dim"].value == 1
    assert attrs(red)["clear"].value is False
    text = k.verify_and_reparse()
    assert f'{{clear = false, dim = 1 : i64, kind = "{kind}"}}' in text


@pytest.mark.parametrize("transpose_a, transpose_b", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_builder_honours_transposes(ctx, transpose_a, transpose_b):
    k = Kernel()
    a_shape = [32, 128] if transpose_a else [128, 32]
    b_shape = [64, 32] if transpose_b else [32, 64]
    with k.inside():
        a = tile.alloc_shared(a_shape, k.f16, "A_s")
        b = tile.alloc_fragment(b_shape, k.f16, "B_f")
        c = tile.alloc_fragment([128, 64], k.f32, "C")
        gemm = tile.gemm(a.result, b.result, c.result, transpose_a, transpose_b)
    assert attrs(gemm)["transpose_a"].value is transpose_a
    assert attrs(gemm)["transpose_b"].value is transpose_b
    k.verify_and_reparse()


def test_gemm_builder_result_is_checked_by_the_verifier(ctx):
    k = Kernel()
    with k.inside():
        a = tile.alloc_shared([128, 32], k.f16)
        b = tile.alloc_shared([32, 64], k.f16)
        c = tile.alloc_fragment([128, 64], k.f32)
        tile.gemm(a.result, b.result, c.result, transpose_b=True)
    with pytest.raises(MLIRError) as info:
        k.module.operation.verify()
    messages = [d.message for d in info.value.error_diagnostics]
    assert messages == ["'tile.gemm' op K mismatch: A gives K = 32, B gives K = 64 "
                        "(transpose_a = False, transpose_b = True)"]
    assert str(info.value.error_diagnostics[0].location) == 'loc("builders.py":7:3)'


def test_atomic_add_builder_scalar_and_buffer(ctx):
    k = Kernel()
    row = tile.body_block(k.kernel).arguments[0]
    with k.inside():
        acc = tile.alloc_fragment([4, 64], k.f32, "acc")
        scalar = tile.atomic_add(k.Y, k.zero, [row, k.c[0]])
        box = tile.atomic_add(k.Y, acc.result, [row, k.c[0]])
    assert list(scalar.operation.operands) == [k.Y, k.zero, row, k.c[0]]
    assert list(box.operation.operands)[1] == acc.result
    assert "operandSegmentSizes" not in attrs(box)
    text = k.verify_and_reparse()
    assert '"tile.atomic_add"(%arg1, %cst, %arg4, %c0) : (memref<?x64xf32>, f32, index, index) -> ()' in text


def test_assume_builder(ctx):
    k = Kernel()
    with ir.InsertionPoint(k.kernel):
        cond = arith.cmpi(arith.CmpIPredicate.ugt, k.n, k.c[0])
        assume = tile.assume(cond, "n > 0")
    assert attrs(assume)["expr"].value == "n > 0"
    text = k.verify_and_reparse()
    assert '"tile.assume"(%0) {expr = "n > 0"} : (i1) -> ()' in text


def test_builder_locations_are_kept(ctx):
    k = Kernel()
    with k.inside():
        buf = tile.alloc_shared([4], k.f32, loc=ir.Location.file("kernel.py", 12, 9))
    assert str(buf.location) == 'loc("kernel.py":12:9)'
