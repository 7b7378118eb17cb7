"""Argument checking and symbol binding, shared by the GPU runtime and the CPU backend.

The caller first describes each array argument as an `ArrayDesc` (shape,
strides in elements, dtype name, data address, device); `ArgumentBinder`
then checks the descriptions against the signature and binds the symbolic
dims. Every failure is a `LaunchError` that names the argument and says
what was expected and what was got.

Every tensor parameter of an emitted kernel is `__restrict__`, so `bind`
also rejects a call where a tensor the kernel writes shares bytes with
another tensor argument (the same array twice, overlapping views). The
outputs the runtime allocates (`out_idx`) are fresh and never checked.

Use from a backend (the CPU backend does exactly this with numpy arrays)::

    binder = ArgumentBinder(signature)          # once per kernel
    binder.check_count(args)                    # the caller's positional args
    values = [describe_host(a, p.name) if isinstance(p, TensorParam) else a
              for p, a in zip(binder.inputs, args)]
    env = binder.bind(values, device=HOST)      # raises LaunchError
    shapes = binder.output_shapes(env)          # [(param index, shape)] to allocate
    grid = binder.grid(env)                     # (x, y, z) ints

`env` lists the symbol values then the converted scalar values, in the
order of `signature.env_names`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from tilemlir.diagnostics import LaunchError
from tilemlir.hardware import MAX_GRID
from tilemlir.runtime.dtypes import DTYPES, scalar_converter
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

HOST = -1  # ArrayDesc.device of host memory; CUDA devices are their ordinals (0, 1, ...)
INT32_LIMIT = 2**31
# What a call beyond a 32-bit kernel's indexing needs (the compile option that exists for it).
WIDER = "compile the kernel with index_bits=64 (tilemlir.compile(..., index_bits=64) or @tilemlir.jit(index_bits=64))"


class ArrayDesc(NamedTuple):
    """What the checks need to know about one array argument.

    shape:   dims as ints
    strides: in elements, or None for C-contiguous
    dtype:   canonical dtype name (`tilemlir.runtime.dtypes`), or any other
             string describing an unsupported dtype (it then never matches)
    address: address of the first element (for alignment), or None when unknown (a fake tensor of
             torch.compile's trace: the null-pointer, alignment and aliasing checks are then skipped)
    device:  CUDA ordinal, HOST (-1) for host memory, None when unknown (not checked)
    stream:  the producer's stream from an array interface (v3), which the
             launch must wait for; None when there is none
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    dtype: str
    address: int | None
    device: int | None
    stream: int | None = None


def device_name(device: int | None) -> str:
    return "host memory" if device == HOST else "an unknown device" if device is None else f"cuda:{device}"


class ArgumentBinder:
    """Checks one kernel's arguments against its signature and binds its symbols."""

    def __init__(self, signature: KernelSignature):
        self.signature = signature
        self.inputs = tuple(signature.params[i] for i in signature.input_indices)
        self._exprs = signature.exprs
        symbol_slot = {s: i for i, s in enumerate(signature.symbols)}
        self._n_symbols = len(signature.symbols)
        self._tensor_checks = tuple(
            (pos, p.name, p.dtype, p.rank, _dim_slots(p.shape, symbol_slot), tuple(p.shape), p.align)
            for pos, p in enumerate(self.inputs) if isinstance(p, TensorParam)
        )
        # env holds the scalars after the symbols, in param order (outputs are never scalars)
        scalar_positions = [pos for pos, p in enumerate(self.inputs) if isinstance(p, ScalarParam)]
        self._scalar_checks = tuple(
            (pos, self.inputs[pos].name, self.inputs[pos].dtype, scalar_converter(DTYPES[self.inputs[pos].dtype]),
             self._n_symbols + k)
            for k, pos in enumerate(scalar_positions)
        )
        self._alias_pairs = _alias_pairs(self.inputs)
        self._outputs = tuple((i, _dim_slots(signature.params[i].shape, symbol_slot)) for i in signature.out_idx)
        self._index_limit = INT32_LIMIT if signature.index_bits == 32 else None

    # -- argument count ------------------------------------------------------------
    def check_count(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.inputs):
            raise LaunchError(self._count_message(len(args)))

    def _count_message(self, got: int) -> str:
        sig = self.signature
        names = ", ".join(p.name for p in self.inputs)
        message = f"kernel {sig.name!r} takes {len(self.inputs)} argument(s) ({names}), got {got}"
        if sig.out_idx:
            outs = ", ".join(sig.params[i].name for i in sig.out_idx)
            message += f"; output(s) {outs} are allocated by the kernel and returned, do not pass them"
        return message

    # -- binding -------------------------------------------------------------------
    def bind(self, values: Sequence[Any], device: int | None) -> list[Any]:
        """Check `values` (ArrayDesc for tensor inputs, Python values for scalars,
        in input order) and return the expression environment.

        `device`: the device every array must be on (a CUDA ordinal, or HOST);
        None skips the device check (the GPU runtime checks devices it only
        learns later with `check_devices`)."""
        if len(values) != len(self.inputs):
            raise LaunchError(self._count_message(len(values)))
        env: list[Any] = [None] * (self._n_symbols + len(self._scalar_checks))
        bound_by: list[tuple[str, int] | None] = [None] * self._n_symbols
        for pos, name, dtype, rank, dims, shape_spec, align in self._tensor_checks:
            desc = values[pos]
            if desc.dtype != dtype:
                raise LaunchError(f"argument {name!r}: expected dtype {dtype}, got {desc.dtype}")
            shape = desc.shape
            if len(shape) != rank:
                raise LaunchError(f"argument {name!r}: expected {rank} dim(s) {_spec(shape_spec)}, "
                                  f"got {len(shape)} dim(s) {_shape(shape)}")
            for axis, (slot, static) in enumerate(dims):
                got = shape[axis]
                if slot < 0:
                    if got != static:
                        raise LaunchError(f"argument {name!r}: dim {axis} must be {static}, got {got} "
                                          f"(expected shape {_spec(shape_spec)}, got {_shape(shape)})")
                    continue
                bound = env[slot]
                if bound is None:
                    env[slot] = got
                    bound_by[slot] = (name, axis)
                elif bound != got:
                    other, other_axis = bound_by[slot]  # type: ignore[misc]
                    raise LaunchError(
                        f"argument {name!r}: dim {axis} is {got}, but symbol {shape_spec[axis]} = {bound} "
                        f"was bound by argument {other!r} dim {other_axis} (shapes must agree)")
            if desc.strides is not None:
                _check_strides(name, shape, desc.strides)
            if desc.address is not None:
                if not desc.address and _numel(shape):
                    raise LaunchError(f"argument {name!r}: its data pointer is null, with {_numel(shape)} "
                                      "elements: a tensor without storage (a wrapper subclass or a fake tensor?) "
                                      "has nothing the kernel can read or write")
                if desc.address % align:
                    _check_alignment(name, desc, shape, align)
            if self._index_limit is not None:
                _check_element_count(name, shape, self._index_limit)
            if device is not None and desc.device is not None and desc.device != device:
                raise LaunchError(f"argument {name!r}: expected an array on {device_name(device)} "
                                  f"(the current device), got one on {device_name(desc.device)}")
        if self._index_limit is not None:
            self._check_symbol_limits(env)
        if self._alias_pairs:
            _check_aliasing(self._alias_pairs, values)
        for pos, name, dtype, convert, slot in self._scalar_checks:
            try:
                env[slot] = convert(values[pos])
            except (TypeError, OverflowError, ValueError) as exc:
                raise LaunchError(f"argument {name!r}: expected a {dtype} scalar: {exc}") from None
        self._check_assumes(env)
        return env

    def check_devices(self, values: Sequence[Any], device: int) -> None:
        """Device check for descriptions whose device became known after `bind`."""
        for pos, name, *_ in self._tensor_checks:
            got = values[pos].device
            if got is not None and got != device:
                raise LaunchError(f"argument {name!r}: expected an array on {device_name(device)} "
                                  f"(the current device), got one on {device_name(got)}")

    def _check_symbol_limits(self, env: list[Any]) -> None:
        """Symbols are 32-bit kernel parameters too: one bound only by empty tensors (M x 0) passes
        every element count and would reach the kernel truncated."""
        for slot, symbol in enumerate(self.signature.symbols):
            if env[slot] >= self._index_limit:
                raise LaunchError(f"symbol {symbol} = {env[slot]} exceeds the kernel's 32-bit indexing "
                                  f"(at most {self._index_limit - 1}); {WIDER}")

    def _check_assumes(self, env: list[Any]) -> None:
        for expr, fn in zip(self._exprs.assumes, self._exprs.assume_fns):
            try:
                holds = fn(env)
            except ArithmeticError as exc:
                raise LaunchError(f"assumption {expr.text!r} cannot be evaluated ({exc}) with {self._values(expr, env)}") from None
            if not holds:
                raise LaunchError(f"assumption {expr.text!r} does not hold: {self._values(expr, env)}")

    def _values(self, expr: Any, env: list[Any]) -> str:
        slots = {n: i for i, n in enumerate(self.signature.env_names)}
        return ", ".join(f"{n} = {env[slots[n]]}" for n in expr.names) or "no names"

    # -- derived launch values ----------------------------------------------------
    def output_shapes(self, env: list[Any]) -> list[tuple[int, tuple[int, ...]]]:
        """(param index, shape) of every output the runtime allocates, in out_idx order."""
        shapes = []
        for index, dims in self._outputs:
            shape = tuple(env[slot] if slot >= 0 else static for slot, static in dims)
            if self._index_limit is not None and _numel(shape) >= self._index_limit:
                raise LaunchError(f"output {self.signature.params[index].name!r} of shape {shape} has "
                                  f"{_numel(shape)} elements, beyond the kernel's 32-bit indexing (at most "
                                  f"{self._index_limit - 1}); {WIDER}")
            shapes.append((index, shape))
        return shapes

    def grid(self, env: list[Any]) -> tuple[int, int, int]:
        """Grid extents; some extent is 0 when there is nothing to launch."""
        grid = self._exprs.constant_grid
        if grid is None:
            fx, fy, fz = self._exprs.grid_fns
            try:
                grid = (fx(env), fy(env), fz(env))
            except ArithmeticError as exc:
                raise LaunchError(f"grid {list(self.signature.grid)} cannot be evaluated ({exc}) "
                                  f"with {self._env_text(env)}") from None
        x, y, z = grid
        if not (type(x) is int and type(y) is int and type(z) is int
                and 0 <= x <= MAX_GRID[0] and 0 <= y <= MAX_GRID[1] and 0 <= z <= MAX_GRID[2]):
            self._grid_error(grid, env)
        return grid

    def _grid_error(self, grid: tuple, env: list[Any]) -> None:
        for axis, (extent, limit) in enumerate(zip(grid, MAX_GRID)):
            if type(extent) is not int or not 0 <= extent <= limit:
                raise LaunchError(f"grid dim {'xyz'[axis]} = {self.signature.grid[axis]} evaluates to {extent!r} "
                                  f"with {self._env_text(env)}; it must be an int in [0, {limit}]")

    def shared_bytes(self, env: list[Any]) -> int:
        exprs = self._exprs
        value = exprs.constant_shared if exprs.constant_shared is not None else exprs.shared_fn(env)
        if not isinstance(value, int) or value < 0:
            raise LaunchError(f"shared_bytes = {self.signature.shared_bytes} evaluates to {value!r}; "
                              "it must be a non-negative int")
        return value

    def _env_text(self, env: list[Any]) -> str:
        return ", ".join(f"{n} = {v}" for n, v in zip(self.signature.env_names, env)) or "no symbols"


def _alias_pairs(inputs: Sequence[Any]) -> tuple[tuple[int, str, int, int, str, int], ...]:
    """(written position, its name, its itemsize, other position, its name, its itemsize) for every
    pair of tensor inputs of which at least one is written; the written one first (the earlier if both)."""
    tensors = [(pos, p) for pos, p in enumerate(inputs) if isinstance(p, TensorParam)]
    pairs = []
    for k, (pos_a, a) in enumerate(tensors):
        for pos_b, b in tensors[k + 1:]:
            if a.written or b.written:
                (wp, w), (op, o) = ((pos_a, a), (pos_b, b)) if a.written else ((pos_b, b), (pos_a, a))
                pairs.append((wp, w.name, DTYPES[w.dtype].itemsize, op, o.name, DTYPES[o.dtype].itemsize))
    return tuple(pairs)


def _check_aliasing(pairs: Sequence[tuple[int, str, int, int, str, int]], values: Sequence[ArrayDesc]) -> None:
    """Byte ranges [address, address + numel * itemsize) of C-contiguous arrays (checked before)."""
    for written, written_name, written_size, other, other_name, other_size in pairs:
        a, b = values[written], values[other]
        if a.address is None or b.address is None:
            continue
        a_end = a.address + _numel(a.shape) * written_size
        b_end = b.address + _numel(b.shape) * other_size
        if a.address < b_end and b.address < a_end and a.address < a_end and b.address < b_end:
            raise LaunchError(_alias_message(written_name, other_name))


def _alias_message(written: str, other: str) -> str:
    return (f"argument {written!r} (written by the kernel) overlaps argument {other!r}: the kernel assumes "
            "its tensors do not alias (__restrict__); pass a separate output")


def _check_strides(name: str, shape: Sequence[int], strides: Sequence[int]) -> None:
    expected = 1
    for axis in range(len(shape) - 1, -1, -1):
        extent = shape[axis]
        if extent != 1 and strides[axis] != expected and _numel(shape):
            raise LaunchError(f"argument {name!r}: expected a C-contiguous array (strides "
                              f"{_contiguous(shape)} in elements), got strides {tuple(strides)}; "
                              "call .contiguous() first")
        expected *= extent


def _check_alignment(name: str, desc: ArrayDesc, shape: Sequence[int], align: int) -> None:
    if _numel(shape):
        raise LaunchError(f"argument {name!r}: data pointer {desc.address:#x} is not aligned to {align} bytes, "
                          "which the kernel's vector accesses need (a slice at an odd offset? copy it)")


def _check_element_count(name: str, shape: Sequence[int], limit: int) -> None:
    if _numel(shape) >= limit:
        raise LaunchError(f"argument {name!r}: {_numel(shape)} elements exceed the kernel's 32-bit indexing "
                          f"(at most {limit - 1}); {WIDER}")


def _dim_slots(shape: Sequence[int | str], symbol_slot: dict[str, int]) -> tuple[tuple[int, int], ...]:
    """Per dim: (env slot of its symbol, -1) or (-1, static extent)."""
    return tuple((symbol_slot[d], -1) if isinstance(d, str) else (-1, d) for d in shape)


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _spec(spec: Sequence[int | str]) -> str:
    return _shape(spec)  # type: ignore[arg-type]
