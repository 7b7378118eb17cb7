"""The fast call path: one Python function per kernel signature, generated
once, that checks and launches a call on torch tensors in a few microseconds.

`CompiledKernel.__call__` tries it first. It answers `SLOW` whenever the call
is not the plain case, and the general path (`arrays.describe`,
`ArgumentBinder`, ...) then takes the call from the start and raises its own
LaunchError. The fast path never raises an argument error itself, so every
message stays the general path's, and it has no side effect before it has
decided to launch.

The plain case: the right number of arguments; every tensor argument a
`torch.Tensor` on the device of the current CUDA context, of the signature's
dtype and rank, with its static dims, the same value for each symbol,
C-contiguous, its data pointer aligned, no written tensor's bytes overlapping
another tensor argument's, within the 32-bit element limit when
`index_bits` is 32; every scalar converts to its dtype; every assume holds;
the grid has no zero or out-of-range extent; the shared bytes fit; the kernel
has been launched in this context before (the first launch in a context takes
the general path, which loads the module, logs the launch and registers the
context with `FastCall.register`).

The generated code (`fast_call_source`) reads each tensor once (dtype,
is_contiguous, get_device, shape, data_ptr), checks with straight-line code,
allocates outputs with ``torch.empty(*dims, dtype=, device=)`` (dims as
separate arguments: torch parses a tuple size several times slower), takes
PyTorch's current stream from ``torch._C._cuda_getCurrentRawStream`` and
launches through the `native` extension (values passed as Python numbers,
the parameter block on the C stack), or, where that cannot be built, through
the ctypes `driver.raw()` calls with kernel-parameter slots owned by the
calling thread. Either way concurrent calls need no lock.
"""

from __future__ import annotations

import ctypes
import threading
from types import ModuleType
from typing import Any, Callable, Sequence

from tilemlir.hardware import MAX_GRID
from tilemlir.runtime.checks import INT32_LIMIT
from tilemlir.runtime.dtypes import DTYPES, scalar_converter
from tilemlir.runtime.native import KIND, MAP_KIND
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorMapParam, TensorParam

SLOW = object()  # the fast path's answer when the general path must take the call

_ARGUMENT_ERRORS = "(TypeError, ValueError, OverflowError, ArithmeticError)"


class FastCall:
    """The generated function of one kernel, `call(args, stream)` -> the kernel's
    result or `SLOW`, and the contexts it may launch in.

    `raw`: the `driver.raw()` entry points; `native`: the `native` extension
    module, or None to call them through ctypes; `map_caches`: the kernel's
    `TensorMapCache` of each of the signature's tensor maps, in order."""

    def __init__(self, signature: KernelSignature, torch: Any, raw: Any, stream_handle: Callable[[Any], int],
                 launch_failed: Callable[[int, tuple, int], None], native: ModuleType | None = None,
                 map_caches: Sequence[Any] = ()):
        self._torch = torch
        self._native = native is not None
        self._contexts: dict[int, tuple[Any, int, Any, int]] = {}
        namespace = {
            "SLOW": SLOW, "Tensor": torch.Tensor, "empty": torch.empty,
            "raw_stream": torch._C._cuda_getCurrentRawStream, "stream_handle": stream_handle,
            "launch_failed": launch_failed, "contexts": self._contexts,
        }
        if native is not None:
            namespace.update(current_context=native.current_context, launch=native.launch,
                             get_context=function_address(raw.get_context), launcher=function_address(raw.launch))
        else:
            namespace.update(get_context=raw.get_context, launch=raw.launch, local=threading.local(),
                             new_slots=_slot_maker(signature))
        for p in signature.params:
            if isinstance(p, TensorParam):
                namespace[f"dtype_{p.name}"] = getattr(torch, DTYPES[p.dtype].torch_name)
            else:
                namespace[f"convert_{p.name}"] = scalar_converter(DTYPES[p.dtype])
        if len(map_caches) != len(signature.tensor_maps):
            raise ValueError(f"{signature.name}: {len(signature.tensor_maps)} tensor maps, {len(map_caches)} caches")
        for m, cache in zip(signature.tensor_maps, map_caches):
            namespace[f"lookup_{m.name}"] = cache.lookup
        source = fast_call_source(signature, native=self._native)
        exec(compile(source, f"<fast call of {signature.name}>", "exec"), namespace)
        self.call: Callable[[tuple, Any], Any] = namespace["fast_call"]

    def register(self, context: int, function: ctypes.c_void_p, device: int, max_dynamic_shared: int) -> None:
        """Allow launches in `context`, whose module's kernel is `function`, on CUDA device `device`."""
        handle = function.value if self._native else function
        self._contexts[context] = (handle, device, self._torch.device("cuda", device), max_dynamic_shared)

    def registered(self, context: int) -> bool:
        return context in self._contexts


def function_address(function: Any) -> int:
    """The address of a ctypes function (a driver entry point) as an int."""
    return ctypes.cast(function, ctypes.c_void_p).value


def available(signature: KernelSignature, torch: Any) -> bool:
    """Whether this torch can take the fast path for this signature."""
    tensors = [p for p in signature.params if isinstance(p, TensorParam)]
    return (hasattr(torch._C, "_cuda_getCurrentRawStream")
            and len(tensors) > len(signature.out_idx)  # a tensor input: torch is then the framework
            and all(hasattr(torch, DTYPES[p.dtype].torch_name) for p in tensors)
            and _constant_problem(signature) is None)


def _constant_problem(signature: KernelSignature) -> str | None:
    """Why no call can take the fast path, judged from constants alone."""
    exprs = signature.exprs
    for axis, expr in enumerate(exprs.grid):
        value = expr.constant() if not expr.names else 1
        if type(value) is not int or not 0 < value <= MAX_GRID[axis]:
            return f"grid {axis}"
    if not exprs.shared.names and (type(exprs.constant_shared) is not int or exprs.constant_shared < 0):
        return "shared bytes"
    if signature.index_bits == 32:
        for p in signature.params:
            static = isinstance(p, TensorParam) and all(isinstance(d, int) for d in p.shape)
            if static and _product(p.shape) >= INT32_LIMIT:
                return f"{p.name} elements"
    return None


def _product(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


# -- kernel-parameter slots ----------------------------------------------------------------
def _slot_types(signature: KernelSignature) -> list[Any]:
    """The ctypes type of each CUDA parameter's slot; None for a tensor map (the launch gets its address)."""
    params: dict[str, Any] = {p.name: p for p in (*signature.params, *signature.tensor_maps)}
    symbol_type = ctypes.c_int32 if signature.index_bits == 32 else ctypes.c_int64
    types = []
    for name in signature.cuda_params:
        p = params.get(name)
        types.append(None if isinstance(p, TensorMapParam) else ctypes.c_void_p if isinstance(p, TensorParam)
                     else DTYPES[p.dtype].scalar_ctype if isinstance(p, ScalarParam) else symbol_type)
    return types


def _slot_maker(signature: KernelSignature) -> Callable[[], tuple]:
    """new_slots() -> (context, byref(context), stream, params, *one slot per cuda param, array):
    one thread's ctypes storage for cuCtxGetCurrent and cuLaunchKernel."""
    types = _slot_types(signature)

    def new_slots() -> tuple:
        context = ctypes.c_void_p()
        values = [None if t is None else t() for t in types]
        array = (ctypes.c_void_p * max(len(values), 1))(*[0 if v is None else ctypes.addressof(v) for v in values])
        return (context, ctypes.byref(context), ctypes.c_void_p(), ctypes.c_void_p(ctypes.addressof(array)),
                *values, array)

    return new_slots


# -- the generated source ------------------------------------------------------------------
def fast_call_source(signature: KernelSignature, native: bool = False) -> str:
    """The Python source of `fast_call(args, stream)` for `signature`, calling
    the driver through the `native` extension or through ctypes.

    Local names carry a prefix per kind (t_ tensor, d_ dim, s_ symbol, v_
    scalar, p_ data pointer, e_ end of its bytes, o_ output, c_ parameter
    slot, m_ tensor map), so names from the signature never collide with the
    fixed ones or the builtins."""
    sig = signature
    inputs = [sig.params[i] for i in sig.input_indices]
    tensors = [p for p in inputs if isinstance(p, TensorParam)]
    lines = [
        "def fast_call(args, stream):",
        f"    if len(args) != {len(inputs)}:",
        "        return SLOW",
        f"    {_unpack(['t_' + p.name if isinstance(p, TensorParam) else '_' for p in inputs])} = args",
        f"    if not ({' and '.join(f'isinstance(t_{p.name}, Tensor)' for p in tensors)}):",
        "        return SLOW",
    ]
    lines += _native_context() if native else _ctypes_context(sig)
    lines += [
        "    if entry is None:",
        "        return SLOW",
        "    function, device, torch_device, max_shared = entry",
        "    try:",
    ]
    body, grid, shared = _checks(sig, inputs, tensors)
    lines += ["        " + line for line in body]
    lines += [f"    except {_ARGUMENT_ERRORS}:", "        return SLOW"]
    lines += _launch_value_checks(sig, grid, shared)
    outputs = {sig.params[i].name for i in sig.out_idx}
    lines += _map_lookups(sig, [m for m in sig.tensor_maps if m.tensor not in outputs], outputs)
    for p in (sig.params[i] for i in sig.out_idx):
        dims = ", ".join(_dims(p)) or "()"
        lines.append(f"    o_{p.name} = empty({dims}, dtype=dtype_{p.name}, device=torch_device)")
    lines += _map_lookups(sig, [m for m in sig.tensor_maps if m.tensor in outputs], outputs)
    stream = "raw_stream(device) if stream is None else stream_handle(stream)"
    config = f"{', '.join(grid)}, {', '.join(str(b) for b in sig.block)}, {shared}"
    lines += _native_launch(sig, config, stream) if native else _ctypes_launch(sig, config, stream)
    lines += [
        "    if code:",
        f"        launch_failed(code, ({', '.join(grid)}), {shared})",
    ]
    result = [f"o_{sig.params[i].name}" for i in sig.out_idx]
    lines.append(f"    return {result[0] if len(result) == 1 else '(' + ', '.join(result) + ')' if result else 'None'}")
    return "\n".join(lines) + "\n"


def _dims(p: TensorParam) -> list[str]:
    return [f"s_{d}" if isinstance(d, str) else str(d) for d in p.shape]


def _map_lookups(sig: KernelSignature, maps: list[TensorMapParam], outputs: set[str]) -> list[str]:
    """m_<map> = the EncodedMap of each of `maps`, or SLOW."""
    params = {p.name: p for p in sig.params}
    lines = []
    for m in maps:
        pointer = f"o_{m.tensor}.data_ptr()" if m.tensor in outputs else f"p_{m.tensor}"
        dims = _dims(params[m.tensor])
        lines += [f"    m_{m.name} = lookup_{m.name}({pointer}, ({', '.join(dims)}{',' if len(dims) == 1 else ''}))",
                  f"    if m_{m.name} is None:", "        return SLOW"]
    return lines


def _checks(sig: KernelSignature, inputs: list, tensors: list[TensorParam]) -> tuple[list[str], list[str], str]:
    """(lines of the checks, the grid's three Python expressions, the shared bytes' one):
    tensors, scalars, assumes, the 32-bit limit of the outputs; grid and shared computed."""
    rename = {s: f"s_{s}" for s in sig.symbols} | {p.name: f"v_{p.name}" for p in sig.params
                                                   if isinstance(p, ScalarParam)}
    py = lambda expr: expr.to_python(rename.__getitem__)  # noqa: E731
    limit = INT32_LIMIT if sig.index_bits == 32 else None
    lines: list[str] = []
    bound: set[str] = set()
    limited: set[str] = set()
    for p in tensors:
        lines += _tensor_checks(p, bound, limited, limit)
    if limit is not None and sig.symbols:
        lines += [f"if {' or '.join(f's_{s} >= {limit}' for s in sig.symbols)}:", "    return SLOW"]
    lines += _alias_checks(tensors)
    for pos, p in enumerate(inputs):
        if isinstance(p, ScalarParam):
            lines.append(f"v_{p.name} = convert_{p.name}(args[{pos}])")
    for expr in sig.exprs.assumes:
        lines += [f"if not ({py(expr)}):", "    return SLOW"]
    for p in (sig.params[i] for i in sig.out_idx):
        for condition in _element_limit(p, limited, limit):
            lines += [f"if {condition}:", "    return SLOW"]
    grid = []
    for axis, expr in enumerate(sig.exprs.grid):
        if expr.names:
            lines.append(f"grid_{'xyz'[axis]} = {py(expr)}")
        grid.append(f"grid_{'xyz'[axis]}" if expr.names else str(expr.constant()))
    if sig.exprs.shared.names:
        lines.append(f"shared = {py(sig.exprs.shared)}")
    return lines or ["pass"], grid, "shared" if sig.exprs.shared.names else str(sig.exprs.constant_shared)


def _ctypes_context(sig: KernelSignature) -> list[str]:
    slots = ["context", "context_ref", "stream_slot", "params", *(f"c_{n}" for n in sig.cuda_params), "_array"]
    return [
        "    try:",
        "        slots = local.slots",
        "    except AttributeError:",
        "        slots = local.slots = new_slots()",
        f"    {_unpack(slots)} = slots",
        "    if get_context(context_ref):",
        "        return SLOW",
        "    entry = contexts.get(context.value)",
    ]


def _native_context() -> list[str]:
    return ["    entry = contexts.get(current_context(get_context))"]


def _param_values(sig: KernelSignature) -> list[str]:
    """The Python expression of each CUDA parameter's value, in cuda_params order (a tensor map's: the
    address of its bytes)."""
    params = {p.name: p for p in sig.params}
    outs = {sig.params[i].name for i in sig.out_idx}
    maps = {m.name for m in sig.tensor_maps}
    return [f"m_{name}.address" if name in maps else f"o_{name}.data_ptr()" if name in outs
            else f"p_{name}" if isinstance(params.get(name), TensorParam)
            else f"v_{name}" if isinstance(params.get(name), ScalarParam) else f"s_{name}"
            for name in sig.cuda_params]


def _ctypes_launch(sig: KernelSignature, config: str, stream: str) -> list[str]:
    lines = [f"    stream_slot.value = {stream}"]
    maps = {m.name for m in sig.tensor_maps}
    for position, (name, value) in enumerate(zip(sig.cuda_params, _param_values(sig))):
        lines.append(f"    _array[{position}] = {value}" if name in maps else f"    c_{name}.value = {value}")
    return lines + [f"    code = launch(function, {config}, stream_slot, params, None)"]


def _native_launch(sig: KernelSignature, config: str, stream: str) -> list[str]:
    kinds = "".join(MAP_KIND if t is None else KIND[t] for t in _slot_types(sig)).encode()
    values = "".join(f", {value}" for value in _param_values(sig))
    return [f"    code = launch(launcher, function, {config}, {stream}, {kinds!r}{values})"]


def _unpack(names: list[str]) -> str:
    return f"({names[0]},)" if len(names) == 1 else ", ".join(names)


def _tensor_checks(p: TensorParam, bound: set[str], limited: set[str], limit: int | None) -> list[str]:
    t = f"t_{p.name}"
    lines = [f"if {t}.get_device() != device or {t}.dtype is not dtype_{p.name} or not {t}.is_contiguous():",
             "    return SLOW"]
    dims, conditions = [], []
    for axis, d in enumerate(p.shape):
        if isinstance(d, str) and d not in bound:
            bound.add(d)
            dims.append(f"s_{d}")
        else:
            dims.append(f"d_{p.name}_{axis}")
            conditions.append(f"d_{p.name}_{axis} != {f's_{d}' if isinstance(d, str) else d}")
    lines += [f"{_unpack(dims) if dims else '()'} = {t}.shape  # ValueError when the rank differs",
              f"p_{p.name} = {t}.data_ptr()"]
    conditions.append(f"not p_{p.name}")  # no storage (or an empty tensor): the general path decides
    if p.align > 1:
        conditions.append(f"p_{p.name} & {p.align - 1}")
    conditions += _element_limit(p, limited, limit)
    if conditions:
        lines += [f"if {' or '.join(conditions)}:", "    return SLOW"]
    return lines


def alias_pairs(tensors: list[TensorParam]) -> list[tuple[TensorParam, TensorParam]]:
    """The pairs of input tensors whose bytes may not overlap (ArgumentBinder's check): those
    with a written tensor, leaving out tensors of a static empty shape, which overlap nothing."""
    sized = [p for p in tensors if not all(isinstance(d, int) for d in p.shape) or _product(p.shape)]
    return [(a, b) for k, a in enumerate(sized) for b in sized[k + 1:] if a.written or b.written]


def _alias_checks(tensors: list[TensorParam]) -> list[str]:
    """Overlap of the byte ranges [p_, e_) of each `alias_pairs` pair.
    A range of symbolic size may be empty, which overlaps nothing."""
    pairs = alias_pairs(tensors)
    involved = [p for p in tensors if any(p in pair for pair in pairs)]
    lines = []
    for p in involved:
        size = " * ".join([f"s_{d}" if isinstance(d, str) else str(d) for d in p.shape]
                          + [str(DTYPES[p.dtype].itemsize)])
        lines.append(f"e_{p.name} = p_{p.name} + {size}")
    for a, b in pairs:
        conditions = [f"p_{a.name} < e_{b.name}", f"p_{b.name} < e_{a.name}"]
        conditions += [f"p_{p.name} < e_{p.name}" for p in (a, b) if not all(isinstance(d, int) for d in p.shape)]
        lines += [f"if {' and '.join(conditions)}:", "    return SLOW"]
    return lines


def _element_limit(p: TensorParam, limited: set[str], limit: int | None) -> list[str]:
    """The 32-bit element-count condition of `p`, unless a tensor of the same dims had it
    (all-static shapes were judged once, by `_constant_problem`)."""
    numel = " * ".join(f"s_{d}" if isinstance(d, str) else str(d) for d in p.shape)
    if limit is None or numel in limited or all(isinstance(d, int) for d in p.shape):
        return []
    limited.add(numel)
    return [f"{numel} >= {limit}"]


def _launch_value_checks(sig: KernelSignature, grid: list[str], shared: str) -> list[str]:
    conditions = [f"not (type({g}) is int and 0 < {g} <= {MAX_GRID[axis]})"
                  for axis, g in enumerate(grid) if g.startswith("grid_")]
    if shared == "shared":
        conditions.append("not (type(shared) is int and 0 <= shared <= max_shared)")
    elif sig.exprs.constant_shared:
        conditions.append(f"{shared} > max_shared")
    return [f"    if {' or '.join(conditions)}:", "        return SLOW"] if conditions else []
