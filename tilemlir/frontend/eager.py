"""TileLang's eager JIT style: tensor parameters declared in the body, dims bound from the arguments.

    @tilelang.jit
    def add(A, B, block_N: int = 256):
        M, N = T.const("M, N")            # fixed per compiled specialization, read from the arguments
        A: T.Tensor((M, N), T.float32)    # declares parameter A
        B: T.Tensor((M, N), T.float32)
        C = T.empty((M, N), T.float32)    # an output the runtime allocates
        with T.Kernel(...) as bx:
            ...
        return C

A function is eager when a top-level statement declares one of its parameters
(`A: T.Tensor(...)` without a value). Its other parameters are compile-time
values. `eager_spec` runs the host code before the `with T.Kernel` block in
Python (twice: once with each `T.const` dim a placeholder, to read the dims off
the arguments' shapes, then with the dims' values, so that `T.empty` shapes may
compute with them: `T.ceildiv(N, 128)`) and gives the kernel's
signature: the declared tensors in parameter order, then the `T.empty`
outputs in the order they are made. `T.dynamic` / `T.symbolic` dims stay
symbolic (one kernel for every size). `EagerMixin` lets `KernelBuilder` build
that kernel from the same source.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from tilemlir import language as T
from tilemlir.diagnostics import CompileError
from tilemlir.frontend.source import KernelError, KernelSource


@dataclass(frozen=True)
class EagerSpec:
    """One specialization of an eager function: its kernel's tensors and the compile-time values."""

    tensors: tuple[tuple[str, T.Tensor], ...]  # declared parameters, in parameter order
    outputs: tuple[tuple[str, T.Tensor], ...]  # T.empty outputs, in the order they are made
    values: tuple[tuple[str, Any], ...]  # the other parameters' values
    consts: tuple[tuple[str, int], ...]  # T.const dims

    @property
    def out_idx(self) -> tuple[int, ...]:
        return tuple(range(len(self.tensors), len(self.tensors) + len(self.outputs)))


def declared_params(tree: ast.FunctionDef) -> dict[str, ast.AnnAssign]:
    """The parameters a top-level `name: annotation` statement (without a value) declares."""
    names = {a.arg for a in (*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs)}
    return {s.target.id: s for s in tree.body
            if isinstance(s, ast.AnnAssign) and s.value is None and isinstance(s.target, ast.Name)
            and s.target.id in names}


def is_eager(tree: ast.FunctionDef) -> bool:
    return bool(declared_params(tree))


def const_names(text: Any) -> list[str]:
    """The dim names of `T.const("M, N")` (commas or spaces between names)."""
    if not isinstance(text, str):
        raise KernelError(f"T.const takes the dims' names in one string, as T.const(\"M, N\"), got {text!r}")
    names = [n for n in re.split(r"[\s,]+", text.strip()) if n]
    if not names or not all(n.isidentifier() for n in names):
        raise KernelError(f"T.const needs Python identifiers as dim names, got {text!r}")
    return names


def _host_prefix(tree: ast.FunctionDef) -> list[ast.stmt]:
    """The statements before the first top-level `with` (the host code that declares the signature)."""
    prefix = []
    for stmt in tree.body:
        if isinstance(stmt, ast.With):
            break
        prefix.append(stmt)
    return prefix


def _call_of(source: KernelSource, node: ast.expr, namespace: dict, marker) -> bool:
    if not isinstance(node, ast.Call):
        return False
    try:
        return eval(compile(ast.Expression(node.func), source.file, "eval"), namespace) is marker
    except Exception:
        return False


class _Evaluation:
    """One Python run of an eager function's host prefix."""

    def __init__(self, source: KernelSource, values: dict[str, Any], consts: dict[str, int] | None):
        self.source = source
        self.namespace = {**source.globals, **source.closure, **values}
        self.consts = consts  # None: the first run, with each const dim a placeholder
        self.const_dims: list[str] = []
        self.declared: dict[str, T.Tensor] = {}
        self.outputs: list[tuple[str, T.Tensor]] = []

    def run(self, declared: dict[str, ast.AnnAssign]) -> "_Evaluation":
        for stmt in _host_prefix(self.source.tree):
            try:
                self.statement(stmt, declared)
            except CompileError:
                raise
            except KernelError as exc:
                raise self.source.error(exc.node or stmt, exc.message) from None
            except Exception as exc:
                raise self.source.error(stmt, f"the host code of an eager kernel raised {type(exc).__name__}: "
                                              f"{exc}") from None
        return self

    def statement(self, stmt: ast.stmt, declared: dict[str, ast.AnnAssign]) -> None:
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None and isinstance(stmt.target, ast.Name) \
                and stmt.target.id in declared:
            self.declared[stmt.target.id] = self.tensor(stmt.annotation, f"parameter '{stmt.target.id}'")
        elif isinstance(stmt, ast.Assign) and _call_of(self.source, stmt.value, self.namespace, T.const):
            self.bind_consts(stmt)
        elif isinstance(stmt, ast.Assign) and _call_of(self.source, stmt.value, self.namespace, T.empty):
            self.empty(stmt)
        elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            exec(compile(ast.Module([stmt], type_ignores=[]), self.source.file, "exec"), self.namespace)

    def evaluate(self, node: ast.expr) -> Any:
        return eval(compile(ast.Expression(node), self.source.file, "eval"), self.namespace)

    def tensor(self, node: ast.expr, what: str) -> T.Tensor:
        try:
            value = self.evaluate(node)
        except T.DeclarationError as exc:
            raise KernelError(exc.text, node) from None
        except TypeError as exc:
            raise KernelError(f"the type of {what} cannot be evaluated ({exc}); dims are ints, T.const or "
                              "T.dynamic dims (arithmetic on dims is not supported)", node) from None
        if not isinstance(value, T.Tensor):
            raise KernelError(f"{what} must be declared as a T.Tensor, got {value!r}", node)
        return value

    def bind_consts(self, stmt: ast.Assign) -> None:
        call = stmt.value
        if len(call.args) != 1 or call.keywords or len(stmt.targets) != 1:
            raise KernelError("write `M, N = T.const(\"M, N\")`", stmt)
        names = const_names(self.evaluate(call.args[0]))
        target = stmt.targets[0]
        targets = target.elts if isinstance(target, (ast.Tuple, ast.List)) and len(names) > 1 else [target]
        if not all(isinstance(t, ast.Name) for t in targets) or len(targets) != len(names):
            raise KernelError(f"T.const({', '.join(names)}) makes {len(names)} dim(s): assign them to as many "
                              "names", target)
        for t, name in zip(targets, names):
            self.const_dims.append(name)
            self.namespace[t.id] = T.Symbolic(name) if self.consts is None else self.consts[name]

    def empty(self, stmt: ast.Assign) -> None:
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if not isinstance(target, ast.Name):
            raise KernelError("an output is made as `C = T.empty(shape, dtype)`", stmt)
        call = stmt.value
        args = [self.evaluate(a) for a in call.args]
        kwargs = {k.arg: self.evaluate(k.value) for k in call.keywords}
        try:
            tensor = T.Tensor(*args, **kwargs)
        except T.DeclarationError as exc:
            if self.consts is None:  # the first run: a shape computed from T.const dims has ints in the second
                self.namespace[target.id] = None
                return
            raise KernelError(exc.text.replace("T.Tensor", "T.empty"), call) from None
        self.outputs.append((target.id, tensor))
        self.namespace[target.id] = tensor


def eager_spec(source: KernelSource, arguments: dict[str, Any], consts: dict[str, Any] | None = None) -> EagerSpec:
    """The signature of eager function `source` called with `arguments` (parameter name -> value).

    With `consts` (T.const dim -> value, as TileLang's `f.compile(M=1024, ...)` gives them), tensor
    arguments may be left out: the dims come from `consts` instead of their shapes."""
    declared = declared_params(source.tree)
    missing = [n for n in declared if n not in arguments]
    if missing and consts is None:
        raise CompileError(f"eager kernel '{source.name}' is missing its tensor argument(s) {', '.join(missing)}",
                           source.location(source.tree))
    values = {n: v for n, v in arguments.items() if n not in declared}
    first = _Evaluation(source, values, None).run(declared)
    known = _given_consts(source, consts or {}, first.const_dims)
    for name, tensor in first.declared.items():
        if name in arguments:
            _read_dims(source, declared[name], name, tensor, arguments[name], set(first.const_dims), known)
    unbound = [n for n in first.const_dims if n not in known]
    if unbound:
        how = "pass them to compile(), e.g. compile(" + ", ".join(f"{n}=..." for n in unbound) + ")" \
            if consts is not None else "no argument gives their value"
        raise CompileError(f"T.const dim(s) {', '.join(unbound)} are not known: {how}", source.location(source.tree))
    final = _Evaluation(source, values, known).run(declared)
    order = [a.arg for a in (*source.tree.args.posonlyargs, *source.tree.args.args) if a.arg in declared]
    return EagerSpec(tuple((n, final.declared[n]) for n in order), tuple(final.outputs),
                     tuple(sorted(values.items())), tuple(sorted(known.items())))


def _given_consts(source: KernelSource, consts: dict[str, Any], names: list[str]) -> dict[str, int]:
    for name, value in consts.items():
        if name not in names:
            raise CompileError(f"'{name}' is neither a parameter nor a T.const dim of eager kernel '{source.name}' "
                               f"(its T.const dims: {', '.join(names) or 'none'})", source.location(source.tree))
        if type(value) is not int or value <= 0:
            raise CompileError(f"T.const dim {name} must be a positive int, got {value!r}",
                               source.location(source.tree))
    return dict(consts)


def _read_dims(source: KernelSource, node: ast.AST, name: str, tensor: T.Tensor, argument: Any,
               const_dims: set[str], consts: dict[str, int]) -> None:
    shape = getattr(argument, "shape", None)
    if shape is None:
        raise CompileError(f"argument '{name}' must be an array or tensor (it is declared {tensor!r}), got "
                           f"{type(argument).__name__}", source.location(node))
    shape = tuple(int(d) for d in shape)
    if len(shape) != len(tensor.shape):
        raise CompileError(f"argument '{name}' has {len(shape)} dim(s) {shape}, but is declared {tensor!r}",
                           source.location(node))
    for dim, size in zip(tensor.shape, shape):
        if not isinstance(dim, T.Symbolic) or dim.name not in const_dims:
            continue  # an int, or a T.dynamic dim: the kernel takes any size
        if consts.setdefault(dim.name, size) != size:
            raise CompileError(f"T.const dim {dim.name} is {consts[dim.name]} by one argument and {size} by "
                               f"'{name}' {shape}", source.location(node))


class EagerMixin:
    """`KernelBuilder` support for eager functions (`self.eager` is their EagerSpec, else None)."""

    def eager_params(self):
        from tilemlir.frontend.signature import Param

        declared = declared_params(self.source.tree)
        nodes = {a.arg: a for a in (*self.source.tree.args.posonlyargs, *self.source.tree.args.args)}
        params = [Param(n, nodes[n], t, t.dtype) for n, t in self.eager.tensors]
        made = {s.targets[0].id: s for s in _host_prefix(self.source.tree)
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)}
        params += [Param(n, made[n], t, t.dtype) for n, t in self.eager.outputs]
        for name, value in (*self.eager.values, *self.eager.consts):
            self.bind(name, value, nodes.get(name, self.source.tree))
        self.eager_declared = set(declared)
        return params

    def intrinsic_const(self, node: ast.Call) -> Any:
        if self.eager is None:
            raise KernelError("T.const declares the dims of an eager kernel (one whose tensor parameters are "
                              "declared in its body)")
        args = self.bind_call("T.const", node, ["names"])
        consts = dict(self.eager.consts)
        values = tuple(consts[n] for n in const_names(self.arg(args, "names")))
        return values[0] if len(values) == 1 else values

    def intrinsic_empty(self, node: ast.Call) -> Any:
        if self.eager is None or self.pending_name not in dict(self.eager.outputs):
            raise KernelError("T.empty makes an output of an eager kernel, at the top of its body: "
                              "`C = T.empty(shape, dtype)`")
        return self.lookup(self.pending_name)

    def eager_return(self, node: ast.Return) -> None:
        value = node.value
        names = value.elts if isinstance(value, ast.Tuple) else [value]
        returned = [n.id if isinstance(n, ast.Name) else None for n in names]
        outputs = [n for n, _ in self.eager.outputs]
        if returned != outputs:
            raise KernelError(f"an eager kernel returns its T.empty outputs, in the order they are made "
                              f"({', '.join(outputs) or 'none'})", value)
