"""Compiled kernels as PyTorch custom operators: a kernel called inside `torch.compile` is one op in the
graph (no graph break), and its launch is one node that CUDA graphs capture.

A launcher (the runtime's `CompiledKernel`, the CPU backend's `CpuKernel`) becomes the op
``torch.ops.tilemlir.<name>_<16 hex digits>`` the first time it is needed: when a call of it is traced
by Dynamo, or when `torch_op` is asked for it (`kernel.as_torch_op()`). The hex digits hash the device
type, the signature and what the launcher runs (its cubin, or its LLVM IR), so the name is the same in
every process for the same kernel (torch.compile's caches key on it) and two kernels of one name never
share an op. The op stays registered, and keeps its launcher alive, for the life of the process.

The op's schema comes from the signature: the inputs in order (the parameters not in `out_idx`), a
tensor the kernel writes as a mutated argument ``Tensor(aK!)``, float scalars as ``float``, integer
scalars as ``SymInt``, bools as ``bool``; it returns the `out_idx` outputs (``()``, ``Tensor`` or a
tuple). Its implementation, for CPU and CUDA tensors alike, is the launcher's own call (so a tensor on
the wrong device gets the kernel's message), on PyTorch's current stream. Its fake implementation runs
the kernel's argument checks (`ArgumentBinder`) on the shapes and dtypes alone, the pointer checks
(null data, alignment, aliasing) left to the launch, and returns empty outputs of the signature's
shapes, so shapes and dtypes propagate through the graph and a bad call fails at trace time with the
kernel's `LaunchError` text.

A launcher's ``__call__`` starts with ``if compiling(): return traced_call(self, args, stream)``. Dynamo
folds `compiling()` to True and traces `traced_call`, in which `op_name` is run, not traced (it carries
the mark `torch._dynamo.assume_constant_result` sets): it finds the launcher by the string `track`
gave it, registers its op, and returns the op's name as a constant. torch is never imported here
outside a trace or a registration.

    kernel = scale()                        # a compiled kernel
    y = torch.compile(lambda x: kernel(x, 2.0) + 1, fullgraph=True)(x)
    op = kernel.as_torch_op()               # torch.ops.tilemlir.kernel_<hex>.default
"""

from __future__ import annotations

import hashlib
import sys
import threading
import weakref
from typing import Any

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime.arrays import describe_abstract
from tilemlir.runtime.checks import ArgumentBinder
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.signature import KernelSignature, TensorParam

NAMESPACE = "tilemlir"
DEVICE_KEYS = ("CPU", "CUDA")  # the op's implementation is registered for both: the launcher checks devices

_live: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()  # track() key -> object
_names: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()  # launcher -> its op's name
_launchers: dict[str, Any] = {}  # op name -> the launcher it runs (kept: a compiled graph may call it later)
_library: Any = None  # torch.library.Library(NAMESPACE, "FRAGMENT"), made at the first registration
_lock = threading.Lock()


def compiling() -> bool:
    """Whether this call is being traced by torch.compile. A dict lookup until Dynamo is imported (`import
    torch` does not import it), so the launches of a process that never compiles pay no more."""
    modules = sys.modules
    return "torch._dynamo" in modules and modules["torch"].compiler.is_compiling()


def track(obj: Any) -> str:
    """The string a trace finds `obj` (a launcher, a `tilemlir.JitFunction`) by, its `trace_key`: what is
    passed to a function Dynamo runs rather than traces, which takes constants only."""
    key = f"{type(obj).__name__}-{id(obj):x}"
    _live[key] = obj
    return key


def lookup(key: str) -> Any:
    """The object `track` gave `key` (alive: a trace holds the object it calls)."""
    return _live[key]


def traced_call(launcher: Any, args: tuple, stream: Any) -> Any:
    """`launcher(*args, stream=stream)` as Dynamo traces it: a call of the launcher's op."""
    if stream is not None:
        raise LaunchError(f"kernel {launcher.signature.name!r}: stream= is not supported inside torch.compile; "
                          "the kernel launches on PyTorch's current stream there (use `with torch.cuda.stream(s):`)")
    if len(args) != len(launcher.signature.input_indices):  # the op's schema would refuse it, in torch's words
        raise LaunchError(count_message(launcher.trace_key, len(args)))
    import torch

    return getattr(getattr(torch.ops, NAMESPACE), op_name(launcher.trace_key))(*args)


def count_message(key: str, got: int) -> str:
    """The launch's message for a call of the launcher tracked as `key` with `got` arguments."""
    try:
        ArgumentBinder(lookup(key).signature).check_count((None,) * got)
    except LaunchError as exc:
        return str(exc)
    raise ValueError(f"{got} is the right argument count")


def op_name(key: str) -> str:
    """The name in ``torch.ops.tilemlir`` of the op of the launcher tracked as `key`, registered on first use."""
    return _register(lookup(key))


# What torch._dynamo.assume_constant_result sets (torch is not imported for it): Dynamo calls these, not traces.
op_name._dynamo_marked_constant = True
count_message._dynamo_marked_constant = True


def torch_op(launcher: Any) -> Any:
    """The `torch._ops.OpOverload` that runs `launcher` (registered on first use)."""
    import torch

    return getattr(getattr(torch.ops, NAMESPACE), _register(launcher)).default


def _register(launcher: Any) -> str:
    name = _names.get(launcher)
    if name is None:
        with _lock:
            name = _op_name(launcher)
            if name not in _launchers:
                _define(name, launcher)
                _launchers[name] = launcher
            _names[launcher] = name
    return name


def _op_name(launcher: Any) -> str:
    signature = launcher.signature
    digest = hashlib.sha256(launcher.device_type.encode() + b"\0" + signature.to_json().encode() + b"\0"
                            + launcher.identity())
    base = signature.name if signature.name.isascii() else "kernel"
    return f"{base}_{digest.hexdigest()[:16]}"


def schema(signature: KernelSignature) -> str:
    """The op schema of `signature` without its name: ``(Tensor X, Tensor(a0!) Y, float eps) -> Tensor``."""
    arguments, mutated = [], 0
    for position, index in enumerate(signature.input_indices):
        param = signature.params[index]
        name = param.name if param.name.isascii() else f"arg{position}"
        if isinstance(param, TensorParam):
            annotation = f"(a{mutated}!)" if param.written else ""
            mutated += param.written
            arguments.append(f"Tensor{annotation} {name}")
        else:
            arguments.append(f"{_SCALAR_TYPES[DTYPES[param.dtype].kind]} {name}")
    count = len(signature.out_idx)
    returns = "()" if count == 0 else "Tensor" if count == 1 else f"({', '.join(['Tensor'] * count)})"
    return f"({', '.join(arguments)}) -> {returns}"


_SCALAR_TYPES = {"float": "float", "int": "SymInt", "uint": "SymInt", "bool": "bool"}


def _define(name: str, launcher: Any) -> None:
    import torch

    global _library
    if _library is None:
        _library = torch.library.Library(NAMESPACE, "FRAGMENT")
    _library.define(name + schema(launcher.signature), tags=_tags(torch))

    def run(*args: Any) -> Any:
        return launcher.launch(args)

    for key in DEVICE_KEYS:
        _library.impl(name, run, key)
    outputs = AbstractOutputs(launcher.signature, launcher.device_type)
    torch.library.register_fake(f"{NAMESPACE}::{name}", outputs, lib=_library)


def _tags(torch: Any) -> tuple:
    """The kernel reads its tensors as C-contiguous: Inductor must pass them with the strides traced."""
    tag = getattr(torch.Tag, "needs_exact_strides", None) or getattr(torch.Tag, "needs_fixed_stride_order", None)
    return (tag,) if tag is not None else ()


class AbstractOutputs:
    """The fake implementation of a kernel's op: the argument checks on shapes and dtypes, then empty
    outputs of the shapes the signature gives (on the first tensor input's device)."""

    def __init__(self, signature: KernelSignature, device_type: str):
        self._signature = signature
        self._device_type = device_type
        self._binder = ArgumentBinder(signature)

    def __call__(self, *args: Any) -> Any:
        import torch

        binder = self._binder
        binder.check_count(args)
        values = [describe_abstract(a, p.name, self._device_type) if isinstance(p, TensorParam) else a
                  for p, a in zip(binder.inputs, args)]
        env = binder.bind(values, None)
        devices = [a.device for p, a in zip(binder.inputs, args) if isinstance(p, TensorParam)]
        device = devices[0] if devices else torch.device(self._device_type)
        params = self._signature.params
        outputs = tuple(torch.empty(shape, dtype=getattr(torch, DTYPES[params[index].dtype].torch_name),
                                    device=device) for index, shape in binder.output_shapes(env))
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else outputs
