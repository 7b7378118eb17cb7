"""The kernel language: ``import tilemlir.language as T``.

Everything a kernel writes as ``T.something`` lives here. Nothing here
imports MLIR: the values (dtypes, symbolic dims, tensor types, layouts) are
plain Python objects, and the kernel operations (``T.copy``, ``T.exp``,
``T.Parallel``, ...) are markers the frontend recognises when it reads a
kernel's source. Calling a marker from ordinary Python code raises an error
that says it only means something inside a ``@tilemlir.jit`` kernel.
``T.ceildiv`` is the exception: on Python integers it computes, so host code
can size grids with it.

docs/language.md describes the language; each function's docstring says
what it does inside a kernel.
"""

from __future__ import annotations

import enum as _enum
import inspect as _inspect
import numbers as _numbers
import sys as _sys
from dataclasses import dataclass as _dataclass
from typing import Any as _Any, Callable as _Callable

from tilemlir.diagnostics import CompileError as _CompileError, SourceLocation as _SourceLocation

_PyBool = type(True)  # this module rebinds `bool`, `int` and `float` to the dtypes T.bool, T.int and T.float
_PyInt = type(0)


class DeclarationError(_CompileError, ValueError):
    """A malformed `T.Tensor` or `T.symbolic`, located at the Python code that wrote it.

    A kernel's annotations run when Python runs its `def`, before the frontend sees it, so the
    error carries its own location: the innermost caller outside this module. `text` is the bare
    message (the frontend relocates it when it evaluates a postponed annotation itself)."""

    def __init__(self, text: str):
        self.text = text
        super().__init__(text, _caller_location())


def _caller_location() -> _SourceLocation | None:
    frame = _sys._getframe(1)
    # this module's frames, and those of code it generates (a dataclass's __init__ is "<string>")
    while frame is not None and (frame.f_code.co_filename == __file__ or frame.f_code.co_filename.startswith("<")):
        frame = frame.f_back
    if frame is None:
        return None
    positions = _inspect.getframeinfo(frame, context=0).positions
    line = positions.lineno if positions and positions.lineno else frame.f_lineno
    col = positions.col_offset + 1 if positions and positions.col_offset is not None else 1
    return _SourceLocation(frame.f_code.co_filename, line, col)

# ----------------------------------------------------------------------------
# Element types.


@_dataclass(frozen=True)
class DType:
    """An element type. `kind` is "float", "int" (signed), "uint" or "bool"; `mlir` its MLIR spelling."""

    name: str
    kind: str
    bits: int
    mlir: str

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def bytes(self) -> int:
        """Bytes one element takes (TileLang's `dtype.bytes`; a bool takes one)."""
        return (self.bits + 7) // 8

    def __call__(self, value):
        """Inside a kernel, `T.float32(x)` is `T.cast(x, T.float32)`."""
        _kernel_only(f"T.{self.name}(...)")


float16 = DType("float16", "float", 16, "f16")
bfloat16 = DType("bfloat16", "float", 16, "bf16")
float32 = DType("float32", "float", 32, "f32")
float64 = DType("float64", "float", 64, "f64")
float8_e4m3 = DType("float8_e4m3", "float", 8, "f8E4M3FN")
float8_e5m2 = DType("float8_e5m2", "float", 8, "f8E5M2")
int8 = DType("int8", "int", 8, "i8")
uint8 = DType("uint8", "uint", 8, "i8")
int16 = DType("int16", "int", 16, "i16")
uint16 = DType("uint16", "uint", 16, "i16")
int32 = DType("int32", "int", 32, "i32")
uint32 = DType("uint32", "uint", 32, "i32")
int64 = DType("int64", "int", 64, "i64")
uint64 = DType("uint64", "uint", 64, "i64")
bool = DType("bool", "bool", 1, "i1")  # noqa: A001 - `T.bool` is the public name

DTYPES: dict[str, DType] = {
    d.name: d
    for d in (float16, bfloat16, float32, float64, float8_e4m3, float8_e5m2, int8, uint8, int16, uint16, int32, uint32,
              int64, uint64, bool)
}

_ALIASES = {
    "half": "float16", "fp16": "float16", "f16": "float16",
    "bf16": "bfloat16",
    "float": "float32", "fp32": "float32", "f32": "float32",
    "double": "float64", "fp64": "float64", "f64": "float64",
    "float8_e4m3fn": "float8_e4m3", "fp8_e4m3": "float8_e4m3", "e4m3": "float8_e4m3",
    "fp8_e5m2": "float8_e5m2", "e5m2": "float8_e5m2",
    "int": "int32", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
    "u16": "uint16", "u32": "uint32", "u64": "uint64",
}

_PYTHON_TYPES = {float: "float32", int: "int32", _PyBool: "bool"}


def dtype(value: _Any) -> DType:
    """The DType named by `value`: a DType, a name such as "float16" or "bf16", or Python's float/int/bool.

    Raises ValueError naming the known dtypes when `value` is none of those.
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if key.startswith("t."):
            key = key[2:]
        key = _ALIASES.get(key, key)
        if key in DTYPES:
            return DTYPES[key]
        raise ValueError(f"unknown dtype '{value}' (known: {', '.join(DTYPES)})")
    if isinstance(value, type) and value in _PYTHON_TYPES:
        return DTYPES[_PYTHON_TYPES[value]]
    raise ValueError(f"expected a dtype such as T.float16 or \"float16\", got {value!r}")


# ----------------------------------------------------------------------------
# Signatures.


@_dataclass(frozen=True)
class Symbolic:
    """A tensor dimension whose value is bound when the kernel is called (`T.symbolic("M")`).

    Two symbolic dims with the same name are the same dim.
    """

    name: str

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise DeclarationError(f"a symbolic dim needs a Python identifier as its name, got {self.name!r}")

    def __repr__(self) -> str:
        return f"T.symbolic({self.name!r})"



class _DimArithmetic:
    """`+ - * // %` on symbolic dims and ints make a `DimExpr` (TileLang's PrimExpr arithmetic in factories)."""

    def __add__(self, other):
        return DimExpr.make("+", self, other)

    def __radd__(self, other):
        return DimExpr.make("+", other, self)

    def __sub__(self, other):
        return DimExpr.make("-", self, other)

    def __rsub__(self, other):
        return DimExpr.make("-", other, self)

    def __mul__(self, other):
        return DimExpr.make("*", self, other)

    def __rmul__(self, other):
        return DimExpr.make("*", other, self)

    def __floordiv__(self, other):
        return DimExpr.make("//", self, other)

    def __rfloordiv__(self, other):
        return DimExpr.make("//", other, self)

    def __mod__(self, other):
        return DimExpr.make("%", self, other)

    def __rmod__(self, other):
        return DimExpr.make("%", other, self)

    def __truediv__(self, other):
        raise DeclarationError(f"'/' on dims is not supported: dims are integers, use '//' or T.ceildiv "
                               f"({self!r} / {other!r})")

    __rtruediv__ = __truediv__


for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__", "__rfloordiv__",
            "__mod__", "__rmod__", "__truediv__", "__rtruediv__"):
    setattr(Symbolic, _op, getattr(_DimArithmetic, _op))


@_dataclass(frozen=True, eq=False)
class DimExpr(_DimArithmetic):
    """Integer arithmetic on symbolic dims written in Python code (a factory, host code): `M * N`,
    `T.ceildiv(M, 128)`. Kernel code computes it at run time from the dims' values (a grid size, a loop
    bound, an index); a tensor shape cannot hold one (docs/tilelang.md). `op` is one of `+ - * // %` or
    "ceildiv"; operands are ints, `T.symbolic` dims and DimExprs."""

    op: str
    left: _Any
    right: _Any

    @staticmethod
    def make(op: str, left, right) -> "DimExpr":
        for value in (left, right):
            if not isinstance(value, (Symbolic, DimExpr)) and (isinstance(value, _PyBool)
                                                               or not isinstance(value, _numbers.Integral)):
                raise DeclarationError(f"'{op}' on a dim needs an int or another dim, got {value!r}")
        return DimExpr(op, left if not isinstance(left, _numbers.Integral) else _PyInt(left),
                       right if not isinstance(right, _numbers.Integral) else _PyInt(right))

    def __repr__(self) -> str:
        if self.op == "ceildiv":
            return f"T.ceildiv({self.left!r}, {self.right!r})"
        return f"({_dim_text(self.left)} {self.op} {_dim_text(self.right)})"


def _dim_text(value) -> str:
    return value.name if isinstance(value, Symbolic) else repr(value)


def symbolic(name: str) -> Symbolic:
    """A dynamic dimension named `name`, bound at call time from the tensors that use it."""
    return Symbolic(name)


dynamic = symbolic


@_dataclass(frozen=True, init=False)
class Tensor:
    """The type of a global tensor parameter: `T.Tensor((M, 4096), T.bfloat16)`.

    Dims are positive Python ints or `T.symbolic` dims; `dtype` is a DType or its name.
    """

    shape: tuple
    dtype: DType

    def __init__(self, *args, **kwargs):
        shape, dtype_ = _tensor_arguments(args, kwargs)
        if isinstance(shape, (_numbers.Integral, Symbolic)):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not shape:
            raise DeclarationError(f"T.Tensor needs a non-empty tuple of dims, got {shape!r}")
        dims = tuple(_dim(d) for d in shape)
        for dim in dims:
            if isinstance(dim, _PyInt) and dim <= 0:
                raise DeclarationError(f"T.Tensor dims must be positive, got {dim}")
        try:
            element = dtype(dtype_)
        except ValueError as exc:
            raise DeclarationError(f"T.Tensor: {exc}") from None
        object.__setattr__(self, "shape", dims)
        object.__setattr__(self, "dtype", element)

    def __repr__(self) -> str:
        return f"T.Tensor({self.shape!r}, {self.dtype!r})"

    def __class_getitem__(cls, key) -> "Tensor":
        """TileLang's subscript spelling: `T.Tensor[(M, N), dtype]` or `T.Tensor[M, N, dtype]`."""
        if not isinstance(key, tuple) or len(key) < 2:
            raise DeclarationError(f"T.Tensor[...] takes the dims and then the dtype, as in T.Tensor[(M, N), "
                                   f"T.float16] or T.Tensor[M, N, T.float16], got T.Tensor[{key!r}]")
        *dims, element = key
        shape = dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else tuple(dims)
        return cls(shape, element)


def _tensor_arguments(args: tuple, kwargs: dict) -> tuple:
    """`T.Tensor(shape, dtype="float32", **TileLang's keywords)`'s shape and dtype, every mistake a located
    error (an annotation runs before the frontend)."""
    if len(args) > 2:
        raise DeclarationError(f"T.Tensor() takes the shape and the dtype, got {len(args)} positional arguments")
    bound = dict(zip(("shape", "dtype"), args))
    for key in ("shape", "dtype"):
        if key in kwargs:
            if key in bound:
                raise DeclarationError(f"T.Tensor() got multiple values for argument '{key}'")
            bound[key] = kwargs.pop(key)
    if "shape" not in bound:
        raise DeclarationError("T.Tensor() is missing its shape")
    _check_tensor_options(kwargs)
    return bound["shape"], bound.get("dtype", "float32")


def _check_tensor_options(options: dict) -> None:
    """TileLang's `T.Tensor(..., scope=, strides=, ...)` keywords: a global scope is what a parameter is;
    the others describe buffers tilemlir's parameters cannot be."""
    for key, value in options.items():
        if key == "scope" and value in (None, "global"):
            continue
        if key in ("data", "strides", "elem_offset", "align", "offset_factor", "buffer_type", "axis_separators",
                   "scope"):
            raise DeclarationError(f"T.Tensor: TileLang's `{key}={value!r}` is not supported by tilemlir: tensor "
                                   "parameters are contiguous, row-major global tensors (docs/tilelang.md)")
        raise DeclarationError(f"T.Tensor() got an unexpected keyword argument '{key}'")


def _dim(dim):
    """A tensor dim: a T.symbolic dim, or an integer (numpy integers included) as a Python int."""
    if isinstance(dim, Symbolic):
        return dim
    if isinstance(dim, DimExpr):
        raise DeclarationError(
            f"arithmetic on dims is not supported in a tensor shape ({dim!r}): a tensor dim is an int or a "
            "T.symbolic dim; declare that dim as its own T.symbolic and state how they relate with T.assume in the "
            "kernel (docs/tilelang.md)")
    if not isinstance(dim, _PyBool) and isinstance(dim, _numbers.Integral):
        return _PyInt(dim)
    raise DeclarationError(f"T.Tensor dims must be positive ints or T.symbolic dims, got {dim!r}")


Buffer = Tensor


def prim_func(fn: _Callable) -> _Callable:
    """Marks a kernel function (TileLang spelling); the function is returned unchanged."""
    return fn


def macro(fn: _Callable) -> _Callable:
    """`@T.macro`: kernel code shared between kernels. A call from kernel code is inlined there
    (arguments may be run-time values, buffers or compile-time values; `return expr` at the end
    gives the call's value). The function is returned, marked."""
    if not _inspect.isfunction(fn):
        raise TypeError(f"@T.macro decorates a `def` function, got {type(fn).__name__}")
    fn.__tilemlir_macro__ = True
    return fn


# ----------------------------------------------------------------------------
# Layouts (`T.annotate_layout`).


class _AffineExpr:
    """A tiny affine expression builder used to turn layout lambdas into affine maps."""

    def __init__(self, text: str, constant: int | None = None):
        self.text = text
        self.constant = constant

    def __repr__(self) -> str:
        return self.text

    @staticmethod
    def lift(value) -> "_AffineExpr":
        if isinstance(value, _AffineExpr):
            return value
        if isinstance(value, _PyInt) and not isinstance(value, _PyBool):
            return _AffineExpr(str(value), value)
        raise TypeError(f"a layout map may only use ints and its index arguments, got {value!r}")

    def _binary(self, other, op: str, reverse: bool = False) -> "_AffineExpr":
        other = _AffineExpr.lift(other)
        left, right = (other, self) if reverse else (self, other)
        if op == "*" and left.constant is None and right.constant is None:
            raise TypeError("a layout map is affine: multiply an index only by an int")
        if op in ("floordiv", "mod", "ceildiv") and (right.constant is None or right.constant <= 0):
            raise TypeError(f"a layout map may only apply '{op}' by a positive int")
        return _AffineExpr(f"({left.text} {op} {right.text})")

    def __add__(self, other):
        return self._binary(other, "+")

    def __radd__(self, other):
        return self._binary(other, "+", reverse=True)

    def __sub__(self, other):
        return self._binary(other, "-")

    def __rsub__(self, other):
        return self._binary(other, "-", reverse=True)

    def __mul__(self, other):
        return self._binary(other, "*")

    def __rmul__(self, other):
        return self._binary(other, "*", reverse=True)

    def __floordiv__(self, other):
        return self._binary(other, "floordiv")

    def __mod__(self, other):
        return self._binary(other, "mod")


class Layout:
    """A fragment layout for `T.annotate_layout`: which thread holds each element, and where.

    `thread_map` and `local_map` are either Python functions of the fragment
    indices (`lambda i, j: i * 32 + j // 4`, using only `+ - * // %` with int
    constants) or MLIR affine-map text (`"(d0, d1) -> (d0 * 32 + d1 floordiv 4)"`).
    With `replicate > 1`, `thread_map` takes one more argument, the replica
    in `[0, replicate)`. It becomes `#tile.layout<thread_map, local_map, replicate>`
    (docs/ir.md, "Layouts").
    """

    def __init__(self, thread_map, local_map, replicate: int = 1):
        if isinstance(thread_map, (tuple, list)):
            raise DeclarationError(
                "T.Layout(shape, forward_fn) (TileLang's shared-memory layout) is not supported: tilemlir chooses "
                "shared-memory layouts itself; tilemlir's T.Layout(thread_map, local_map) and T.Fragment describe "
                "fragments (docs/tilelang.md)")
        if not isinstance(replicate, _PyInt) or replicate < 1:
            raise ValueError(f"Layout replicate must be a positive int, got {replicate!r}")
        self.thread_map = thread_map
        self.local_map = local_map
        self.replicate = replicate

    def affine_maps(self, rank: int) -> tuple[str, str]:
        """The two maps as MLIR `affine_map<...>` text for a rank-`rank` fragment."""
        symbols = 1 if self.replicate > 1 else 0
        return _map_text(self.thread_map, rank, symbols, "thread_map"), _map_text(self.local_map, rank, 0, "local_map")

    def __repr__(self) -> str:
        return f"T.Layout({self.thread_map!r}, {self.local_map!r}, replicate={self.replicate})"


class Fragment:
    """TileLang's fragment layout for `T.annotate_layout`: `T.Fragment(shape, forward_thread_fn=...,
    replicate=1, forward_index_fn=...)` or `T.Fragment(shape, forward_fn=...)` returning (thread, index).
    The functions take the fragment indices (and, with `replicate > 1`, the replica last, for the thread)
    and use `+ - * // %` with ints; the index is one register index. It becomes a `T.Layout`."""

    def __init__(self, shape, forward_fn=None, forward_thread_fn=None, replicate: int = 1, forward_index_fn=None):
        if isinstance(shape, _numbers.Integral):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not all(isinstance(d, _numbers.Integral) for d in shape):
            raise DeclarationError(f"T.Fragment needs the fragment's shape as a tuple of ints, got {shape!r}")
        if (forward_fn is None) == (forward_thread_fn is None):
            raise DeclarationError("T.Fragment takes forward_fn (giving thread and index) or forward_thread_fn (with "
                                   "forward_index_fn)")
        if forward_fn is None and forward_index_fn is None:
            raise DeclarationError("T.Fragment without forward_index_fn (the register index) is not supported: "
                                   "give forward_index_fn")
        self.shape = tuple(_PyInt(d) for d in shape)
        self.replicate = replicate
        self.forward_fn, self.thread_fn, self.index_fn = forward_fn, forward_thread_fn, forward_index_fn

    def layout(self) -> "Layout":
        """The same layout as a T.Layout of affine-map text."""
        rank, reps = len(self.shape), 1 if self.replicate > 1 else 0
        dims = [_AffineExpr(f"d{i}") for i in range(rank)]
        rep = [_AffineExpr("s0")] if reps else []
        if self.forward_fn is not None:
            thread, _ = _pair(self.forward_fn(*dims, *rep))
            _, index = _pair(self.forward_fn(*dims, *([_AffineExpr("0", 0)] if reps else [])))
        else:
            thread, index = self.thread_fn(*dims, *rep), self.index_fn(*dims)
        if isinstance(index, (tuple, list)):
            if len(index) != 1:
                raise ValueError(f"T.Fragment's index must be one register index, got {len(index)}")
            index = index[0]
        dim_list = ", ".join(f"d{i}" for i in range(rank))
        symbols = "[s0]" if reps else ""
        return Layout(f"({dim_list}){symbols} -> ({_AffineExpr.lift(thread).text})",
                      f"({dim_list}) -> ({_AffineExpr.lift(index).text})", self.replicate)

    def __repr__(self) -> str:
        return f"T.Fragment({self.shape!r}, replicate={self.replicate})"


def _pair(value):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"T.Fragment's forward_fn must return (thread, index), got {value!r}")
    return value


def _map_text(fn, rank: int, symbols: int, what: str) -> str:
    if isinstance(fn, str):
        text = fn.strip()
        return text if text.startswith("affine_map<") else f"affine_map<{text}>"
    if not callable(fn):
        raise TypeError(f"Layout {what} must be a function or affine-map text, got {fn!r}")
    try:
        arity = len(_inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        arity = rank + symbols
    if arity != rank + symbols:
        extra = " plus the replica" if symbols else ""
        raise ValueError(f"Layout {what} takes {arity} arguments, but the fragment has rank {rank}{extra}")
    dims = [_AffineExpr(f"d{i}") for i in range(rank)]
    syms = [_AffineExpr(f"s{i}") for i in range(symbols)]
    result = _AffineExpr.lift(fn(*dims, *syms))
    dim_list = ", ".join(f"d{i}" for i in range(rank))
    sym_list = "[" + ", ".join(f"s{i}" for i in range(symbols)) + "]" if symbols else ""
    return f"affine_map<({dim_list}){sym_list} -> ({result.text})>"


# ----------------------------------------------------------------------------
# Kernel operations: markers the frontend compiles.


def _kernel_only(what: str):
    raise RuntimeError(f"{what} is kernel code: it only has a meaning inside a @tilemlir.jit kernel function")


def _intrinsic(fn: _Callable) -> _Callable:
    """Mark `fn` as a kernel operation the frontend implements (looked up by this name)."""
    fn.__tilemlir_intrinsic__ = fn.__name__
    return fn


@_intrinsic
def Kernel(*grid, threads: int = 128, min_blocks: int | None = None):
    """`with T.Kernel(gx[, gy[, gz]], threads=n) as bx:` one block's program over a 1-3 dim grid.

    `as` binds the block indices: one name for a 1-dim grid, a tuple otherwise.
    `threads` must be a compile-time int in 1..1024. `min_blocks` (a
    compile-time int in 1..32, threads * min_blocks <= 2048) asks the CUDA
    compiler to keep that many blocks resident per multiprocessor by capping
    registers per thread (`__launch_bounds__(threads, min_blocks)`).
    """
    _kernel_only("T.Kernel")


@_intrinsic
def use_swizzle(panel_size: int, order: str = "row", enable: bool = True):
    """`T.use_swizzle(8)` in a `T.Kernel(gx, gy)` block: block rasterization for L2 reuse (TileLang's).

    Remaps the block indices so that consecutively launched blocks walk a panel of `panel_size` rows
    of the grid (`order="column"`: columns) one column (row) at a time, odd panels backwards, the
    last panel holding what is left. A bijection of the grid: every tile is still computed once.
    `enable=False`, or a 1-dim grid, leaves the indices alone. It stands directly in the `T.Kernel`
    block, once, before the block indices are used.
    """
    _kernel_only("T.use_swizzle")


@_intrinsic
def Parallel(*extents):
    """`for i, j in T.Parallel(M, N):` independent points; the compiler maps them to threads."""
    _kernel_only("T.Parallel")


@_intrinsic
def serial(*bounds, unroll: bool | None = None):
    """`for k in T.serial(n)` or `T.serial(a, b[, step])`: a sequential loop (same as `range`).
    `unroll=True` asks the backend to unroll it (as T.unroll), `unroll=False` never to; by default
    the backend decides (CUDA: small constant trip counts are unrolled)."""
    _kernel_only("T.serial")


@_intrinsic
def unroll(*bounds):
    """`for k in T.unroll(n)`: a sequential loop the backend should unroll."""
    _kernel_only("T.unroll")


@_intrinsic
def Pipelined(*bounds, num_stages: int = 1):
    """`for k in T.Pipelined(n, num_stages=3)`: a sequential loop whose copies are software-pipelined."""
    _kernel_only("T.Pipelined")


@_intrinsic
def alloc_shared(shape, dtype):
    """A tile in the block's shared memory (compile-time shape)."""
    _kernel_only("T.alloc_shared")


@_intrinsic
def alloc_fragment(shape, dtype):
    """A register tile owned by the whole block; the compiler picks which thread holds which element."""
    _kernel_only("T.alloc_fragment")


@_intrinsic
def alloc_local(shape, dtype):
    """Registers private to each thread."""
    _kernel_only("T.alloc_local")


@_intrinsic
def copy(src, dst):
    """Copy a tile: each side a whole buffer, a start index `A[i, j]` or a slice `A[a:b, :]`; converts dtypes."""
    _kernel_only("T.copy")


@_intrinsic
def fill(buffer, value):
    """Set every element of an on-chip buffer to `value` (converted to its dtype)."""
    _kernel_only("T.fill")


@_intrinsic
def clear(buffer):
    """`T.fill(buffer, 0)`."""
    _kernel_only("T.clear")


@_intrinsic
def reduce_sum(src, dst, dim: int = -1, clear: bool = True):
    """dst = sum of src along `dim` (with `clear=False`, dst's old values take part)."""
    _kernel_only("T.reduce_sum")


@_intrinsic
def reduce_max(src, dst, dim: int = -1, clear: bool = True):
    """dst = max of src along `dim`."""
    _kernel_only("T.reduce_max")


@_intrinsic
def reduce_min(src, dst, dim: int = -1, clear: bool = True):
    """dst = min of src along `dim`."""
    _kernel_only("T.reduce_min")


@_intrinsic
def reduce_abssum(src, dst, dim: int = -1, clear: bool = True):
    """dst = sum of |src| along `dim`."""
    _kernel_only("T.reduce_abssum")


@_intrinsic
def reduce_absmax(src, dst, dim: int = -1, clear: bool = True):
    """dst = max of |src| along `dim`."""
    _kernel_only("T.reduce_absmax")


class GemmWarpPolicy(_enum.Enum):
    """How `T.gemm(..., policy=)` splits C over the block's warps on tensor cores (TileLang's names):
    FullRow puts every warp along M (each warp holds whole rows), FullCol along N, Square the
    squarest per-warp tile."""

    Square = "square"
    FullRow = "full_row"
    FullCol = "full_col"


@_intrinsic
def gemm(A, B, C, transpose_A: bool = False, transpose_B: bool = False, policy: GemmWarpPolicy | None = None):
    """C += op(A) @ op(B) on tiles; C is a fragment accumulator. `policy`: the warp split on tensor cores."""
    _kernel_only("T.gemm")


@_intrinsic
def atomic_add(dst, value):
    """Atomically add a scalar into `dst[i, j]`, or an on-chip tile into `dst` starting at `dst[i, j]`."""
    _kernel_only("T.atomic_add")


@_intrinsic
def annotate_layout(layouts: dict):
    """`T.annotate_layout({frag: T.Layout(...)})`: request a layout for fragments."""
    _kernel_only("T.annotate_layout")


@_intrinsic
def print(obj, msg: str = "", warp_group_id: int = 0, warp_id: int = 0):  # noqa: A001 - TileLang's name
    """Print a scalar or every element of an on-chip buffer, from one thread of each block: thread
    `warp_group_id * 128 + warp_id * 32`. Each line holds `msg` (default: the argument's source
    text), the block's coordinates, the thread and the value (for a buffer: `name[i, j] = value`).
    printf on the GPU; on the CPU target, Python's stdout. Not inside T.Parallel."""
    _kernel_only("T.print")


@_intrinsic
def device_assert(condition, msg: str = ""):
    """Stop the kernel when `condition` (a bool) is false in a thread that reaches it: a trap with
    `msg` (default: the condition's source text), the Python file:line, block and thread on the GPU;
    a located `tilemlir.DeviceAssertionError` after the run on the CPU target."""
    _kernel_only("T.device_assert")


@_intrinsic
def assume(condition):
    """A fact over symbolic dims and scalar parameters the compiler may rely on; checked at launch."""
    _kernel_only("T.assume")


@_intrinsic
def cast(value, dtype):
    """Convert `value` to `dtype` (float to int truncates toward zero)."""
    _kernel_only("T.cast")


@_intrinsic
def if_then_else(condition, then_value, else_value):
    """`then_value` where `condition` holds, else `else_value` (both are evaluated)."""
    _kernel_only("T.if_then_else")


@_intrinsic
def infinity(dtype):
    """+inf of a float dtype (write `-T.infinity(dtype)` for -inf)."""
    _kernel_only("T.infinity")


@_intrinsic
def ceildiv(a, b):
    """ceil(a / b) for integers; on Python ints it computes right away."""
    if isinstance(a, _PyInt) and isinstance(b, _PyInt):
        return -(-a // b)
    if isinstance(a, (Symbolic, DimExpr)) or isinstance(b, (Symbolic, DimExpr)):
        return DimExpr.make("ceildiv", a, b)
    _kernel_only("T.ceildiv on non-integers")


def _math(name: str, doc: str) -> _Callable:
    def marker(*args):
        _kernel_only(f"T.{name}")

    marker.__name__ = marker.__qualname__ = name
    marker.__doc__ = doc
    return _intrinsic(marker)


max = _math("max", "Elementwise maximum of two or more values (NaN if either float is NaN).")  # noqa: A001
min = _math("min", "Elementwise minimum of two or more values (NaN if either float is NaN).")  # noqa: A001
abs = _math("abs", "Absolute value.")  # noqa: A001
exp = _math("exp", "e ** x.")
exp2 = _math("exp2", "2 ** x.")
log = _math("log", "Natural logarithm.")
log2 = _math("log2", "Base-2 logarithm.")
sqrt = _math("sqrt", "Square root.")
rsqrt = _math("rsqrt", "1 / sqrt(x).")
tanh = _math("tanh", "Hyperbolic tangent.")
sigmoid = _math("sigmoid", "1 / (1 + exp(-x)).")
erf = _math("erf", "The error function.")
pow = _math("pow", "x ** y.")  # noqa: A001
erfc = _math("erfc", "1 - erf(x), accurate where erf(x) is near 1.")
expm1 = _math("expm1", "e ** x - 1, accurate near 0.")
log10 = _math("log10", "Base-10 logarithm.")
log1p = _math("log1p", "log(1 + x), accurate near 0.")
cbrt = _math("cbrt", "Cube root.")
sin = _math("sin", "Sine (radians).")
cos = _math("cos", "Cosine (radians).")
tan = _math("tan", "Tangent (radians).")
asin = _math("asin", "Arc sine.")
acos = _math("acos", "Arc cosine.")
atan = _math("atan", "Arc tangent.")
atan2 = _math("atan2", "atan2(y, x): the angle of the point (x, y), in (-pi, pi].")
sinh = _math("sinh", "Hyperbolic sine.")
cosh = _math("cosh", "Hyperbolic cosine.")
asinh = _math("asinh", "Inverse hyperbolic sine.")
acosh = _math("acosh", "Inverse hyperbolic cosine.")
atanh = _math("atanh", "Inverse hyperbolic tangent.")
floor = _math("floor", "Round toward -inf (floats).")
ceil = _math("ceil", "Round toward +inf (floats).")
round = _math("round", "Round to nearest, halves away from zero (floats), as C's round.")  # noqa: A001
trunc = _math("trunc", "Round toward zero (floats).")
fma = _math("fma", "a * b + c with a single rounding.")


# ----------------------------------------------------------------------------
# TileLang spellings: the names TileLang kernels use for what is above, and its small helpers.
# (Kept in one block; docs/tilelang.md lists them.)

half = float16
float = float32  # noqa: A001 - TileLang's `T.float`
double = float64
short = int16
int = int32  # noqa: A001 - TileLang's `T.int`
uint = uint32
long = int64
float8_e4m3fn = float8_e4m3  # tilemlir's float8_e4m3 is the finite-only e4m3 ("fn") format

Serial = serial


def vectorized(*bounds):
    """`for i in T.vectorized(n)`: TileLang's vectorized loop, here a sequential loop the backend unrolls
    (as T.unroll; the emitter picks vector widths itself)."""
    _kernel_only("T.vectorized")


vectorized.__tilemlir_intrinsic__ = "unroll"


def _strided_tensor(shape, strides, dtype_: _Any = "float32") -> Tensor:
    """TileLang's `T.StridedTensor(shape, strides, dtype)`: a tensor with the given element strides.
    tilemlir's tensor parameters are row-major and contiguous, so `strides` must be those of `shape`."""
    tensor = Tensor(shape, dtype_)
    if isinstance(strides, (_numbers.Integral, Symbolic)):
        strides = (strides,)
    if not isinstance(strides, (tuple, list)) or len(strides) != len(tensor.shape):
        raise DeclarationError(f"T.StridedTensor needs one stride per dim ({len(tensor.shape)}), got {strides!r}")
    expected = _contiguous_strides(tensor.shape)
    if tuple(_stride_key(s) for s in strides) != tuple(_stride_key(s) for s in expected):
        raise DeclarationError(
            f"T.StridedTensor with strides {tuple(strides)!r} is not supported: tilemlir's tensor parameters are "
            f"contiguous and row-major (strides {expected!r} for shape {tensor.shape!r}); pass a contiguous copy")
    return tensor


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        if isinstance(step, _PyInt) and isinstance(dim, _PyInt):
            step = step * dim
        else:
            step = _StrideProduct(step, dim)
    return tuple(reversed(strides))


@_dataclass(frozen=True)
class _StrideProduct:
    """A symbolic row-major stride: the product of the dims after it."""

    left: _Any
    right: _Any

    def __repr__(self) -> str:
        return f"{self.left!r} * {self.right!r}"


def _stride_key(stride):
    if isinstance(stride, _StrideProduct):
        return ("*", *sorted(map(repr, _factors(stride))))
    if isinstance(stride, Symbolic):
        return ("*", repr(stride))
    if not isinstance(stride, _PyBool) and isinstance(stride, _numbers.Integral):
        return _PyInt(stride)
    raise DeclarationError(f"T.StridedTensor strides must be ints or T.symbolic dims, got {stride!r}")


def _factors(stride) -> list:
    if isinstance(stride, _StrideProduct):
        return [f for part in (stride.left, stride.right) for f in _factors(part) if f != 1]
    return [stride]


StridedTensor = _strided_tensor
StridedTensor.__name__ = StridedTensor.__qualname__ = "StridedTensor"


@_intrinsic
def Cast(dtype, value):  # noqa: N802 - TVM's spelling
    """TVM's `T.Cast(dtype, value)`: `T.cast(value, dtype)` (note the argument order)."""
    _kernel_only("T.Cast")


@_intrinsic
def Select(condition, true_value, false_value):  # noqa: N802 - TVM's spelling
    """TVM's `T.Select(cond, a, b)`: `a` where `cond` holds, else `b`; both sides are evaluated."""
    _kernel_only("T.Select")


@_intrinsic
def And(a, b):  # noqa: N802 - TVM's spelling
    """Logical and of two bools (both sides are evaluated)."""
    _kernel_only("T.And")


@_intrinsic
def Or(a, b):  # noqa: N802 - TVM's spelling
    """Logical or of two bools (both sides are evaluated)."""
    _kernel_only("T.Or")


@_intrinsic
def clamp(value, min_value, max_value):
    """`T.min(T.max(value, min_value), max_value)`, as TileLang computes it."""
    _kernel_only("T.clamp")


@_intrinsic
def max_value(dtype):
    """The largest finite value of `dtype` (TVM's `T.max_value`)."""
    _kernel_only("T.max_value")


@_intrinsic
def min_value(dtype):
    """The lowest finite value of `dtype`: the most negative int, or minus the largest finite float."""
    _kernel_only("T.min_value")


@_intrinsic
def alloc_var(dtype, init=None, scope="local.var"):
    """TileLang's `T.alloc_var(dtype[, init])`: a per-thread variable, a one-element buffer read and
    written as `v[0]`, starting at `init` (0 without, as TileLang)."""
    _kernel_only("T.alloc_var")


@_intrinsic
def const(names: str):
    """`M, N = T.const("M, N")` in an eager kernel: dims read from the arguments' shapes, fixed per
    compiled specialization (docs/tilelang.md, "Eager kernels")."""
    _kernel_only("T.const")


@_intrinsic
def empty(shape, dtype="float32"):
    """`C = T.empty(shape, dtype)` at the top of an eager kernel: an output the runtime allocates and the
    call returns (`return C`)."""
    _kernel_only("T.empty")


def _thread_query(name: str, doc: str) -> _Callable:
    def marker(dim: int = 0):
        _kernel_only(f"T.{name}")

    marker.__name__ = marker.__qualname__ = name
    marker.__doc__ = doc + " (docs/tilelang.md, \"Thread-level code\")"
    return _intrinsic(marker)


get_thread_binding = _thread_query("get_thread_binding", "The thread's index along `dim` (0: x, 1: y, 2: z) of threads=")
get_thread_bindings = _thread_query("get_thread_bindings", "[x, y, z] thread indices")
get_thread_extent = _thread_query("get_thread_extent", "The block's thread count along `dim`, a Python int")
get_thread_extents = _thread_query("get_thread_extents", "The block's thread counts [x, y, z]")
get_block_binding = _thread_query("get_block_binding", "The block's index along `dim` of the grid (0 past it)")
get_block_bindings = _thread_query("get_block_bindings", "The block's indices [x, y, z]")
get_block_extent = _thread_query("get_block_extent", "The grid's extent along `dim` (1 past it)")
get_block_extents = _thread_query("get_block_extents", "The grid's extents [x, y, z]")


@_intrinsic
def reshape(src, shape):
    """TileLang's `T.reshape(src, shape)`: the same elements (row-major) under another shape, for element access."""
    _kernel_only("T.reshape")


@_intrinsic
def view(src, shape=None, dtype=None):
    """TileLang's `T.view(src, shape)`: as T.reshape (a different dtype is not supported)."""
    _kernel_only("T.view")


@_intrinsic
def alloc_reducer(shape, dtype, op="sum", replication=None):
    """TileLang's reducer: a deferred "sum" / "max" / "min" over contributions (docs/tilelang.md, "Reducers")."""
    _kernel_only("T.alloc_reducer")


@_intrinsic
def reducer_init(reducer, init=None):
    """Open a reducer's epoch; `init` (the op's identity without one) is combined once per element."""
    _kernel_only("T.reducer_init")


@_intrinsic
def reducer_update(target, value):
    """`T.reducer_update(acc[indices], value)`: contribute `value` to one element, exactly once per point."""
    _kernel_only("T.reducer_update")


@_intrinsic
def finalize_reducer(reducer, dst=None, batch=1, annotations=None):
    """Close a reducer's epoch: its results go into the fragment `dst`."""
    _kernel_only("T.finalize_reducer")


@_intrinsic
def sync_threads(barrier_id=None, arrive_count=None):
    """Barrier for every thread of the block (`__syncthreads()`), ending the per-thread code before it."""
    _kernel_only("T.sync_threads")


def cdiv(a, b):
    """ceil(a / b) of Python ints (TileLang's `tilelang.cdiv`, for host code and factories); of dims, a DimExpr."""
    if any(isinstance(v, (Symbolic, DimExpr)) for v in (a, b)):
        return DimExpr.make("ceildiv", a, b)
    if not all(isinstance(v, _numbers.Integral) and not isinstance(v, _PyBool) for v in (a, b)):
        raise TypeError(f"cdiv takes two ints, got {a!r} and {b!r}")
    return -(-a // b)


def next_power_of_2(n) -> int:
    """The smallest power of two >= n, for a Python int n (1 for n <= 1), as `tilelang.next_power_of_2`."""
    if not isinstance(n, _numbers.Integral) or isinstance(n, _PyBool):
        raise TypeError(f"next_power_of_2 takes an int, got {n!r}")
    return 1 if n <= 1 else 1 << _PyInt(n - 1).bit_length()


class LanguageAttributeError(_CompileError, AttributeError):
    """`T.name` for a name the language lacks, located at the Python code that wrote it (an annotation or
    factory code runs before the frontend); says so when the name is a TileLang feature tilemlir lacks."""

    def __init__(self, text: str, tilelang_feature: bool):
        self.text = text
        self.tilelang_feature = tilelang_feature
        super().__init__(text, _caller_location())


# TileLang features that are not (yet) part of tilemlir's language (docs/tilelang.md, "Not supported").
_TILELANG_UNSUPPORTED = {
    "alloc_barrier": "mbarriers",
    "atomic_max": "atomic max", "atomic_min": "atomic min", "cumsum": "scans", "reduce": "custom reductions",
    "reduce_prod": "product reductions", "async_copy": "explicit asynchronous copies",
    "float8_e4m3fnuz": "the fnuz fp8 formats", "float8_e5m2fnuz": "the fnuz fp8 formats",
    "float8_e8m0fnu": "e8m0 scale factors", "float4_e2m1fn": "fp4", "int4": "4-bit integers",
    "tfloat32": "tf32 as a storage type",
}


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module 'tilemlir.language' has no attribute '{name}'")
    if name in _TILELANG_UNSUPPORTED:
        raise LanguageAttributeError(f"T.{name} (TileLang's {_TILELANG_UNSUPPORTED[name]}) is not supported by "
                                     "tilemlir (docs/tilelang.md lists what is)", tilelang_feature=True)
    import difflib

    close = difflib.get_close_matches(name, __all__, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise LanguageAttributeError(f"'T' has no attribute '{name}'{hint}", tilelang_feature=False)


_TILELANG_NAMES = [
    "half", "float", "double", "short", "int", "uint", "long", "float8_e4m3fn",
    "Serial", "vectorized", "StridedTensor", "Cast", "Select", "And", "Or", "clamp", "max_value", "min_value",
    "alloc_var", "const", "empty", "cdiv", "next_power_of_2",
    "get_thread_binding", "get_thread_bindings", "get_thread_extent", "get_thread_extents", "get_block_binding",
    "get_block_bindings", "get_block_extent", "get_block_extents", "sync_threads",
    "alloc_reducer", "reducer_init", "reducer_update", "finalize_reducer", "reshape", "view",
]


__all__ = [
    *DTYPES,
    "DType", "DTYPES", "dtype", "Symbolic", "DimExpr", "symbolic", "dynamic", "Tensor", "Buffer", "prim_func", "macro", "Layout",
    "Fragment",
    "Kernel", "use_swizzle", "Parallel", "serial", "unroll", "Pipelined",
    "alloc_shared", "alloc_fragment", "alloc_local",
    "copy", "fill", "clear", "reduce_sum", "reduce_max", "reduce_min", "reduce_abssum", "reduce_absmax",
    "gemm", "GemmWarpPolicy", "atomic_add", "annotate_layout", "print", "device_assert", "assume", "cast", "if_then_else", "infinity", "ceildiv",
    "max", "min", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "pow",
    "erfc", "expm1", "log10", "log1p", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
    "cosh", "asinh", "acosh", "atanh", "round", "trunc",
    "floor", "ceil", "fma",
    *_TILELANG_NAMES,
]

del annotations  # the __future__ import binds this name; it is not part of the language
