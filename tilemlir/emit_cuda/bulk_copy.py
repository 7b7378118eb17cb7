"""The mbarrier and TMA statements (`dialects/bulk_copy.py`), one line each.

Each is a call of a `tl_` helper holding its PTX (ISA 9.7.13.15 mbarrier, 9.7.9.25.5 cp.async.bulk.tensor,
9.7.9.25 cp.async.bulk.commit_group / wait_group), generated into the prelude only when a kernel uses it:

    tl_mbarrier_init(&full[0], 1);  tl_fence_mbarrier_init();
    tl_mbarrier_arrive_expect_tx(&full[s], 32768);  tl_mbarrier_arrive(&empty[s]);
    tl_tma_load_2d(&A_s[...], &A_map, &full[s], (int)(col), (int)(row));
    tl_mbarrier_wait(&full[s], (unsigned)(parity));
    tl_tma_store_2d(&C_map, &C_s[...], (int)(col), (int)(row));
    tl_bulk_commit_group();  tl_bulk_wait_group_read<0>();

The TMA helpers take the tensor's coordinates innermost first, as the instruction does (the ops list
them outermost first); the map is the kernel's `const __grid_constant__ CUtensorMap` parameter, addressed
generically. The wait spins on `try_wait.parity`, which itself suspends the thread for a while. The
bulk wait's count is a template argument: the instruction takes it as an immediate.
"""

from __future__ import annotations

from tilemlir.emit_cuda import cexpr as C
from tilemlir.mlir import ir
from tilemlir.runtime.tensor_map import TENSOR_MAP_DECLARATION

_SHARED = "static_cast<unsigned>(__cvta_generic_to_shared({}))"

_HELPERS = {
    "tl_mbarrier_init": f"""\
__device__ __forceinline__ void tl_mbarrier_init(void* bar, unsigned count) {{
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"({_SHARED.format("bar")}), "r"(count) : "memory");
}}""",
    "tl_mbarrier_arrive_expect_tx": f"""\
__device__ __forceinline__ void tl_mbarrier_arrive_expect_tx(void* bar, unsigned bytes) {{
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"({_SHARED.format("bar")}), "r"(bytes)
               : "memory");
}}""",
    "tl_mbarrier_arrive": f"""\
__device__ __forceinline__ void tl_mbarrier_arrive(void* bar) {{
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"({_SHARED.format("bar")}) : "memory");
}}""",
    "tl_mbarrier_wait": f"""\
__device__ __forceinline__ void tl_mbarrier_wait(void* bar, unsigned parity) {{
  const unsigned address = {_SHARED.format("bar")};
  unsigned done;
  do {{
    asm volatile("{{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n"
                 " selp.u32 %0, 1, 0, p;\\n}}" : "=r"(done) : "r"(address), "r"(parity) : "memory");
  }} while (!done);
}}""",
    "tl_fence_mbarrier_init": """\
__device__ __forceinline__ void tl_fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}""",
    "tl_bulk_commit_group": """\
__device__ __forceinline__ void tl_bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}""",
    "tl_bulk_wait_group_read": """\
template <int N> __device__ __forceinline__ void tl_bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}""",
}


def _coordinates_asm(rank: int, first: int) -> tuple[str, str, str]:
    """A TMA helper's coordinate parameters, their asm operands (from %`first`) and the operands' bindings."""
    return (", ".join(f"int c{i}" for i in range(rank)), ", ".join(f"%{i + first}" for i in range(rank)),
            ", ".join(f'"r"(c{i})' for i in range(rank)))


def tma_load_helper(rank: int) -> tuple[str, str]:
    """(name, definition) of the `rank`-dimensional TMA load into shared memory completing on an mbarrier."""
    name = f"tl_tma_load_{rank}d"
    coords, operands, bound = _coordinates_asm(rank, 3)
    return name, (
        f"__device__ __forceinline__ void {name}(void* dst, const CUtensorMap* map, void* bar, {coords}) {{\n"
        f'  asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "\n'
        f'               "[%0], [%1, {{{operands}}}], [%2];"\n'
        f'               :: "r"({_SHARED.format("dst")}), "l"(reinterpret_cast<unsigned long long>(map)),\n'
        f'                  "r"({_SHARED.format("bar")}), {bound} : "memory");\n'
        "}")


def tma_store_helper(rank: int) -> tuple[str, str]:
    """(name, definition) of the `rank`-dimensional TMA store from shared memory, in the thread's bulk group."""
    name = f"tl_tma_store_{rank}d"
    coords, operands, bound = _coordinates_asm(rank, 2)
    return name, (
        f"__device__ __forceinline__ void {name}(const CUtensorMap* map, const void* src, {coords}) {{\n"
        f'  asm volatile("cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [%0, {{{operands}}}], [%1];"\n'
        f'               :: "l"(reinterpret_cast<unsigned long long>(map)), "r"({_SHARED.format("src")}), {bound}\n'
        '               : "memory");\n'
        "}")


def _address(emitter, buffer: ir.Value, indices: list[ir.Value], op: ir.Operation) -> str:
    element = emitter.memory.element(buffer, [emitter.value(v) for v in indices], op)
    return f"&{C.paren(element, C.UNARY)}"


def _barrier(emitter, op: ir.Operation) -> str:
    return _address(emitter, op.operands[0], [op.operands[1]], op)


def _tensor_map(emitter, op: ir.Operation, helper: str, text: str) -> str:
    """The address of `op`'s tensor map parameter, after declaring the map type and the TMA helper."""
    emitter.prelude.helper_text("CUtensorMap", TENSOR_MAP_DECLARATION)  # before the helper naming the type
    emitter.prelude.helper_text(helper, text)
    return f"&{emitter.c_names[ir.StringAttr(op.attributes['map']).value]}"


def _coordinates(emitter, coords: list[ir.Value]) -> list[str]:
    """The ops' coordinates (outermost first) as the instruction takes them: innermost first, as ints."""
    return [f"(int){C.paren(emitter.value(v), C.UNARY)}" for v in reversed(coords)]


def _helper(emitter, name: str) -> None:
    emitter.prelude.helper_text(name, _HELPERS[name])


def init(emitter, op: ir.Operation) -> None:
    _helper(emitter, "tl_mbarrier_init")
    emitter.out.line(f"tl_mbarrier_init({_barrier(emitter, op)}, {ir.IntegerAttr(op.attributes['count']).value});")


def arrive_expect_tx(emitter, op: ir.Operation) -> None:
    _helper(emitter, "tl_mbarrier_arrive_expect_tx")
    size = ir.IntegerAttr(op.attributes["bytes"]).value
    emitter.out.line(f"tl_mbarrier_arrive_expect_tx({_barrier(emitter, op)}, {size});")


def arrive(emitter, op: ir.Operation) -> None:
    _helper(emitter, "tl_mbarrier_arrive")
    emitter.out.line(f"tl_mbarrier_arrive({_barrier(emitter, op)});")


def wait(emitter, op: ir.Operation) -> None:
    _helper(emitter, "tl_mbarrier_wait")
    parity = C.paren(emitter.value(op.operands[2]), C.UNARY)
    emitter.out.line(f"tl_mbarrier_wait({_barrier(emitter, op)}, (unsigned){parity});")


def fence_init(emitter, op: ir.Operation) -> None:
    _helper(emitter, "tl_fence_mbarrier_init")
    emitter.out.line("tl_fence_mbarrier_init();")


def tma_load(emitter, op: ir.Operation) -> None:
    operands = list(op.operands)
    dst, bars = operands[0], operands[1]
    dst_indices = operands[2:2 + dst.type.rank]
    bar_index = operands[2 + dst.type.rank]
    coords = operands[3 + dst.type.rank:]
    name, text = tma_load_helper(len(coords))
    tensor_map = _tensor_map(emitter, op, name, text)
    args = [_address(emitter, dst, dst_indices, op), tensor_map, _address(emitter, bars, [bar_index], op)]
    emitter.out.line(f"{name}({', '.join(args + _coordinates(emitter, coords))});")


def tma_store(emitter, op: ir.Operation) -> None:
    operands = list(op.operands)
    src = operands[0]
    src_indices, coords = operands[1:1 + src.type.rank], operands[1 + src.type.rank:]
    name, text = tma_store_helper(len(coords))
    args = [_tensor_map(emitter, op, name, text), _address(emitter, src, src_indices, op)]
    emitter.out.line(f"{name}({', '.join(args + _coordinates(emitter, coords))});")


def commit_group(emitter, op: ir.Operation) -> None:
    _helper(emitter, "tl_bulk_commit_group")
    emitter.out.line("tl_bulk_commit_group();")


def wait_group_read(emitter, op: ir.Operation) -> None:
    _helper(emitter, "tl_bulk_wait_group_read")
    emitter.out.line(f"tl_bulk_wait_group_read<{ir.IntegerAttr(op.attributes['pending']).value}>();")


HANDLERS = {"tile.mbarrier_init": init, "tile.mbarrier_arrive_expect_tx": arrive_expect_tx,
            "tile.mbarrier_arrive": arrive, "tile.mbarrier_wait": wait, "tile.fence_mbarrier_init": fence_init,
            "tile.tma_load": tma_load, "tile.tma_store": tma_store, "tile.bulk_commit_group": commit_group,
            "tile.bulk_wait_group_read": wait_group_read}
