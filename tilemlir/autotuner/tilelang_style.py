"""TileLang's `@tilelang.autotune(configs=...)` (no `key=`) over a `@tilelang.jit` function.

    @tilelang.autotune(configs=get_configs())
    @tilelang.jit
    def topk(logits, topk, blk_m, threads=128): ...        # eager, or a factory returning a T.prim_func

    gates, indices = topk(logits, 6, blk_m=64)              # blk_m is a tunable argument: no tuning
    kernel = gemv.compile(M=1024, N=1024, block_M=128)      # the same for compile()

As TileLang does, a call (or `compile`) that passes any tunable argument (a
name some config sets) is not tuned: it is the jit function's own call with
those arguments. A call that passes none picks a config: on the CPU target
(timing needs a GPU) and with TILEMLIR_AUTOTUNE=off the first config that
compiles, as `tilemlir.autotune` does. Tuning on the GPU the TileLang way (on
inputs it generates itself) is not supported: a located error says to pass the
tunable arguments, or to use `tilemlir.autotune(configs=, key=)`, which tunes on
the call's arguments.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

from tilemlir.autotuner.space import expand, label
from tilemlir.config import settings
from tilemlir.diagnostics import CompileError, SourceLocation

# TileLang's autotune keywords besides configs: profiling and checking details of its own tuner, accepted
# (a tuning they would steer is refused anyway, see the module docstring).
TILELANG_KEYWORDS = frozenset({
    "warmup", "rep", "timeout", "supply_type", "ref_prog", "supply_prog", "rtol", "atol", "max_mismatched_ratio",
    "skip_check", "manual_check_prog", "cache_input_tensors", "do_not_specialize", "early_stop",
    "early_stop_factor",
})


class TileLangAutotuned:
    """A `@tilelang.jit` function under TileLang's `@autotune(configs=...)`: called and compiled as the jit
    function is."""

    def __init__(self, function: Any, configs: Any):
        from tilemlir.api import JitFunction

        if not isinstance(function, JitFunction):
            raise TypeError(f"@tilelang.autotune goes above @tilelang.jit, got {function!r}")
        self.function = function
        self.configs = configs
        self.name = function.fn.__name__
        self.parameters = list(inspect.signature(function.fn).parameters)
        functools.update_wrapper(self, function.fn, updated=())

    def __repr__(self) -> str:
        return f"<tilelang-style autotune '{self.name}'>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._with_config(args, kwargs, lambda a, k: self.function(*a, **k))

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """The kernel for these arguments (an eager function's T.const dims as keywords), as TileLang's."""
        if self.function.kind == "eager":
            return self._with_config(args, kwargs, lambda a, k: self.function.compile(**self._keywords(a, k)))
        return self._with_config(args, kwargs, lambda a, k: self.function(*a, **k))

    def _keywords(self, args: tuple, kwargs: dict) -> dict:
        return {**dict(zip(self.parameters, args)), **kwargs}

    def _with_config(self, args: tuple, kwargs: dict, run) -> Any:
        given = self._keywords(args, kwargs)
        space = expand(self.configs, self.parameters, {}, self.name)
        if any(name in given for config in space for name in config):
            return run(args, kwargs)  # TileLang: tunable arguments given, no tuning
        target = "cpu" if settings().interpret else self.function.target or "cuda"
        if target == "cuda" and settings().autotune != "off" and len(space) > 1:
            raise CompileError(
                f"autotuning '{self.name}' the way TileLang's @autotune(configs=...) does (on inputs it makes "
                f"itself) is not supported by tilemlir: pass the tunable arguments "
                f"({', '.join(sorted({n for c in space for n in c}))}) to use one config, as TileLang allows, or "
                "write @tilemlir.autotune(configs=..., key=[...]), which tunes on the call's arguments "
                "(docs/autotune.md)", self._location())
        return self._first_that_compiles(space, args, kwargs, run, target)

    def _first_that_compiles(self, space: list[dict], args: tuple, kwargs: dict, run, target: str) -> Any:
        errors = []
        for config in space:
            try:
                self._instance(args, {**kwargs, **config})
            except CompileError as exc:
                errors.append(f"{label(config)}: {exc}")
                continue
            if target != "cuda":
                warnings.warn(f"autotuning '{self.name}' needs a GPU (target={target!r}): using the first config "
                              f"that compiles, {label(config)}", RuntimeWarning, stacklevel=4)
            return run(args, {**kwargs, **config})
        raise CompileError(f"no config of '{self.name}' compiles:\n  " + "\n  ".join(errors), self._location())

    def _instance(self, args: tuple, kwargs: dict) -> Any:
        """Compile the kernel these arguments make (the compile is cached for the call that follows)."""
        function = self.function
        if function.kind == "eager":
            keywords = self._keywords(args, kwargs)
            if any(hasattr(keywords.get(name), "shape") for name in self.parameters):
                return function.instantiate(*args, **kwargs).compile()
            return function.compile(**keywords)
        return function(*args, **kwargs)

    def _location(self) -> SourceLocation | None:
        code = getattr(self.function.fn, "__code__", None)
        return SourceLocation(code.co_filename, code.co_firstlineno, 1) if code else None
