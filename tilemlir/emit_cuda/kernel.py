"""Find the kernel in a thread-level module: the `tile.entry` function, its one `gpu.launch`,
and the facts docs/ir.md puts on the function (Python names, symbolic shapes, assumes)."""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.diagnostics.reporting import error
from tilemlir.dialects.tile import MAX_MIN_BLOCKS, MIN_BLOCKS, entry_attributes_problem, memory_space
from tilemlir.emit_cuda import irutil
from tilemlir.ir_util import entry_function
from tilemlir.mlir import ir

Dim = int | str


@dataclass(frozen=True)
class KernelIR:
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
    func = entry_function(module, "the CUDA emitter")
    problem = entry_attributes_problem(func)
    if problem is not None:
        raise error(func, problem)
    launch = _the_launch(func)
    names = _arg_names(func)
    dims = _arg_dims(func, names)
    symbols = _string_list(func, "tile.symbols") or []
    return KernelIR(
        func=func,
        launch=launch,
        name=irutil.str_attr(func, "sym_name") or "kernel",
        arg_names=tuple(names),
        arg_dims=tuple(dims),
        arg_dtypes=_arg_dtypes(func),
        symbols=tuple(symbols),
        assumes=tuple(_assumes(func)),
        block=_block_size(launch),
        out_idx=tuple(_int_list(func, "tile.out_idx")),
        min_blocks=_min_blocks(launch),
    )


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


def _string_list(op: ir.Operation, name: str) -> list[str] | None:
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    if not isinstance(attr, ir.ArrayAttr) or not all(isinstance(a, ir.StringAttr) for a in attr):
        raise error(op, f"'{name}' must be an array of strings")
    return [a.value for a in attr]


def _int_list(op: ir.Operation, name: str) -> list[int]:
    if name not in op.attributes:
        return []
    attr = op.attributes[name]
    if not isinstance(attr, ir.ArrayAttr) or not all(isinstance(a, ir.IntegerAttr) for a in attr):
        raise error(op, f"'{name}' must be an array of integers")
    return [a.value for a in attr]


def _arg_names(func: ir.Operation) -> list[str]:
    count = len(func.regions[0].blocks[0].arguments)
    return _string_list(func, "tile.arg_names") or [f"arg{i}" for i in range(count)]


def _arg_dtypes(func: ir.Operation) -> tuple[str, ...] | None:
    dtypes = _string_list(func, "tile.arg_dtypes")
    return None if dtypes is None else tuple(dtypes)


def _arg_dims(func: ir.Operation, names: list[str]) -> list[tuple[Dim, ...] | None]:
    """Each tensor argument's dims (`tile.arg_dims`, checked against the types by entry_attributes_problem)."""
    args = list(func.regions[0].blocks[0].arguments)
    attr = func.attributes["tile.arg_dims"] if "tile.arg_dims" in func.attributes else None
    dims: list[tuple[Dim, ...] | None] = []
    for i, (arg, name) in enumerate(zip(args, names)):
        if not isinstance(arg.type, ir.MemRefType):
            dims.append(None)
            continue
        declared = tuple(d.value for d in attr[i]) if attr is not None else None
        dims.append(_tensor_dims(func, arg.type, name, declared))
    return dims


def _tensor_dims(func: ir.Operation, type_: ir.MemRefType, name: str, declared: tuple[Dim, ...] | None
                 ) -> tuple[Dim, ...]:
    if not is_row_major(type_):
        raise error(func, f"tensor {name} has a non-row-major layout {type_.layout}; the CUDA emitter needs row-major")
    if memory_space(type_) is not None:
        raise error(func, f"kernel argument {name} must be a global tensor, got memory space {type_.memory_space}")
    if declared is not None:
        return declared
    if any(d == ir.ShapedType.get_dynamic_size() for d in type_.shape):
        raise error(func, f"tensor {name} has dynamic dims but the function has no 'tile.arg_dims'")
    return tuple(type_.shape)


def is_row_major(type_: ir.MemRefType) -> bool:
    layout = type_.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(type_.rank)


def _assumes(func: ir.Operation) -> list[str]:
    facts = []
    for op in irutil.walk(func):
        if op.name == "tile.assume":
            expr = irutil.str_attr(op, "expr")
            if expr is None:
                raise error(op, "tile.assume needs a string 'expr' attribute")
            facts.append(expr)
    return facts
