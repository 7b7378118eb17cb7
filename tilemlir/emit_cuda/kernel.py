"""Find the kernel in a thread-level module: the `tile.entry` function, its one `gpu.launch`,
and the facts docs/ir.md puts on the function (Python names, symbolic shapes, assumes, tensor maps)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tilemlir.analysis.kernel_abi import Dim, KernelABI, read_kernel_abi, tensor_shape
from tilemlir.diagnostics.reporting import error
from tilemlir.dialects.tile import MAX_MIN_BLOCKS, MIN_BLOCKS, memory_space
from tilemlir.emit_cuda import irutil
from tilemlir.ir_util import entry_function
from tilemlir.mlir import ir


TENSOR_MAPS = "tile.tensor_maps"


class TensorMapAttr(NamedTuple):
    """One entry of the entry function's `tile.tensor_maps`: a CUtensorMap kernel parameter `name` of
    tensor argument `tensor` (the runtime's TensorMapParam less the dtype, which is the tensor's)."""

    tensor: str
    name: str
    box: tuple[int, ...]
    swizzle: int
    l2_promotion: int


@dataclass(frozen=True)
class KernelIR:
    abi: KernelABI
    func: ir.Operation
    launch: ir.Operation
    name: str
    arg_names: tuple[str, ...]
    arg_dims: tuple[tuple[Dim, ...] | None, ...]  # None for scalar arguments
    arg_dtypes: tuple[str, ...] | None  # the language dtypes (`tile.arg_dtypes`: uint8 and int8 are both i8)
    symbols: tuple[str, ...]
    assumes: tuple[str, ...]
    block: tuple[int, int, int]
    out_idx: tuple[int, ...]
    min_blocks: int | None  # resident blocks per multiprocessor asked for (tile.min_blocks)
    tensor_maps: tuple[TensorMapAttr, ...] = ()  # parameters after the arguments, before the symbols

    @property
    def args(self) -> list[ir.BlockArgument]:
        return list(self.func.regions[0].blocks[0].arguments)

    @property
    def body(self) -> ir.Block:
        return irutil.single_block(self.launch)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def launch_grid(self) -> list[ir.Value]:
        launch = self.launch.opview
        return [launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ]


def find_kernel(module: ir.Operation) -> KernelIR:
    """The kernel of a builtin.module op; CompileError when it does not hold exactly one."""
    abi = read_kernel_abi(entry_function(module, "the CUDA emitter"))
    launch = _the_launch(abi.function)
    return KernelIR(
        abi=abi,
        func=abi.function,
        launch=launch,
        name=abi.name,
        arg_names=abi.arg_names,
        arg_dims=tuple(_arg_dims(abi)),
        arg_dtypes=abi.arg_dtypes,
        symbols=abi.symbols,
        assumes=abi.assumes,
        block=_block_size(launch),
        out_idx=abi.out_idx,
        min_blocks=_min_blocks(launch),
        tensor_maps=_tensor_maps(abi.function, abi.arg_names),
    )


def _tensor_maps(func: ir.Operation, arg_names: tuple[str, ...]) -> tuple[TensorMapAttr, ...]:
    """`tile.tensor_maps` (`dialects/bulk_copy.py`): a dictionary from map name to {tensor = i64 (the
    argument it describes), box = [i64...], swizzle = i64, l2_promotion = i64} (swizzle and
    l2_promotion default to 0), in name order; the signature validates the values."""
    if TENSOR_MAPS not in func.attributes:
        return ()
    attr = func.attributes[TENSOR_MAPS]
    problem = f"'{TENSOR_MAPS}' must be a dictionary from map name to {{tensor = i64 (an argument), box = [i64...], " \
              "optional swizzle and l2_promotion integers}"
    if not isinstance(attr, ir.DictAttr):
        raise error(func, f"{problem}, got {attr}")
    maps = []
    for i in range(len(attr)):
        name, entry = attr[i].name, attr[i].attr
        keys = {entry[j].name for j in range(len(entry))} if isinstance(entry, ir.DictAttr) else set()
        if not {"tensor", "box"} <= keys <= {"tensor", "box", "swizzle", "l2_promotion"} \
                or not isinstance(entry["box"], ir.ArrayAttr) \
                or not all(isinstance(v, ir.IntegerAttr) for v in entry["box"]) \
                or not all(isinstance(entry[k], ir.IntegerAttr) for k in ("tensor", "swizzle", "l2_promotion")
                           if k in keys) \
                or not 0 <= entry["tensor"].value < len(arg_names):
            raise error(func, f"{problem}, got {name} = {entry}")
        setting = lambda key: entry[key].value if key in keys else 0  # noqa: E731
        maps.append(TensorMapAttr(arg_names[entry["tensor"].value], name,
                                  tuple(ir.IntegerAttr(v).value for v in entry["box"]), setting("swizzle"),
                                  setting("l2_promotion")))
    return tuple(maps)


def _the_launch(func: ir.Operation) -> ir.Operation:
    irutil.single_block(func)  # a structured function body
    nested = [op for op in irutil.walk(func) if op.name == "tile.kernel"]
    if nested:
        raise error(nested[0], "tile.kernel is still present: the CUDA emitter takes thread-level IR "
                               "(run the pipeline through partition-threads first)")
    launches = [op for op in irutil.walk(func) if op.name == "gpu.launch"]
    if len(launches) != 1 or irutil.operation(launches[0].parent) != func:
        raise error(func, f"the kernel function must hold exactly one gpu.launch at its top level, found {len(launches)}")
    launch = launches[0]
    view = launch.opview
    if list(view.asyncDependencies) or view.asyncToken is not None:
        raise error(launch, "async gpu.launch is not supported by the CUDA emitter")
    if view.clusterSizeX is not None:
        raise error(launch, "gpu.launch with thread-block clusters is not supported by the CUDA emitter yet")
    return launch


def _min_blocks(launch: ir.Operation) -> int | None:
    if MIN_BLOCKS not in launch.attributes:
        return None
    attr = launch.attributes[MIN_BLOCKS]
    if not isinstance(attr, ir.IntegerAttr) or not 1 <= attr.value <= MAX_MIN_BLOCKS:
        raise error(launch, f"'{MIN_BLOCKS}' must be an integer in 1..{MAX_MIN_BLOCKS}, got {attr}")
    return attr.value


def _block_size(launch: ir.Operation) -> tuple[int, int, int]:
    view = launch.opview
    sizes = []
    for axis, value in zip("xyz", (view.blockSizeX, view.blockSizeY, view.blockSizeZ)):
        size = irutil.const_int(value)
        if size is None or size < 1:
            raise error(launch, f"the block size along {axis} must be a positive constant, got {value}")
        sizes.append(size)
    if sizes[0] * sizes[1] * sizes[2] > 1024:
        raise error(launch, f"block {tuple(sizes)} has more than 1024 threads")
    return tuple(sizes)  # type: ignore[return-value]


def _arg_dims(abi: KernelABI) -> list[tuple[Dim, ...] | None]:
    """Each tensor argument's dims (`tile.arg_dims`, checked against the types by entry_attributes_problem)."""
    dims: list[tuple[Dim, ...] | None] = []
    for index, (arg, name) in enumerate(zip(abi.args, abi.arg_names)):
        if not isinstance(arg.type, ir.MemRefType):
            dims.append(None)
            continue
        if not is_row_major(arg.type):
            raise error(abi.function, f"tensor {name} has a non-row-major layout {arg.type.layout}; the CUDA emitter "
                                      "needs row-major")
        if memory_space(arg.type) is not None:
            raise error(abi.function, f"kernel argument {name} must be a global tensor, got memory space "
                                      f"{arg.type.memory_space}")
        dims.append(tensor_shape(abi, index))
    return dims


def is_row_major(type_: ir.MemRefType) -> bool:
    layout = type_.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(type_.rank)
