"""`@tilemlir.autotune`: the fastest config of a `@tilemlir.jit` factory, per key, kept on disk.

    @tilemlir.autotune(configs={"block_M": [64, 128], "num_stages": [2, 3]}, key=["M"])
    @tilemlir.jit(out_idx=[-1])
    def matmul(N, K, block_M=128, num_stages=3): ...

    gemm = matmul(N=4096, K=4096)   # a TunedKernel: the fixed arguments, no compile yet
    C = gemm(A, B)                  # tunes for this key (the M of A), then launches the best
    report = gemm.tune(A, B)        # the TuneReport (best config and kernel, every trial), no launch

A call computes the key from the arguments `key` names (an argument's shape
and dtype, a scalar's value, a symbolic dim's size): a call whose key was
tuned before, in this process or (TILEMLIR_AUTOTUNE=on, the default) in any
process on the same GPU with the same compiler, launches that choice;
otherwise every config is compiled (`compile_many`, in worker processes),
checked and timed on the call's arguments (`select`), and the fastest kept.
A config the caller passes as a fixed argument replaces that config value.
Target "cpu", TILEMLIR_AUTOTUNE=off and a space of one config do not tune:
the first config that compiles is used (the CPU target says so in a
warning: timing needs a GPU).
"""

from __future__ import annotations

import functools
import inspect
import logging
import textwrap
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from tilemlir.autotuner.parallel import CompileResult, compile_many
from tilemlir.autotuner.select import Candidate, Trial, best, kernel_run, select
from tilemlir.autotuner.space import expand, label
from tilemlir.autotuner.store import Store, as_json, digest
from tilemlir.config import settings
from tilemlir.diagnostics import LaunchError, TilemlirError

log = logging.getLogger("tilemlir.autotuner")


class AutotuneError(TilemlirError):
    """No config of a tuned kernel compiled, or none passed its check run and timing."""


@dataclass(frozen=True)
class TuneOptions:
    configs: Any
    key: tuple[str, ...]
    warmup: float = 25
    rep: float = 100
    ref_prog: Callable[..., Any] | None = None
    check: Callable[[str, Any, Any], None] | None = None
    rtol: float | None = None
    atol: float | None = None
    skip_check: bool = False
    restore_value: tuple[str, ...] = ()
    cache_results: bool = True
    workers: int | None = None
    progress: bool | None = None
    do_bench: Callable[[Callable[[], Any]], float] | None = None
    run: Callable[[Any, tuple, dict], Any] | None = None


def autotune(fn: Any = None, /, *, configs: Any = None, key: Sequence[str] | None = None, warmup: float = 25,
             rep: float = 100, ref_prog: Callable[..., Any] | None = None,
             check: Callable[[str, Any, Any], None] | None = None, rtol: float | None = None,
             atol: float | None = None, skip_check: bool = False, restore_value: Sequence[str] = (),
             cache_results: bool = True, workers: int | None = None, progress: bool | None = None,
             do_bench: Callable[[Callable[[], Any]], float] | None = None,
             run: Callable[[Any, tuple, dict], Any] | None = None, **tilelang_keywords: Any) -> Callable[[Any], Any]:
    """Decorate a `@tilemlir.jit` factory (write it above the `@tilemlir.jit`).

    configs: a list of dicts of factory arguments, a dict of lists (every combination), or a
        callable of the fixed arguments returning either.
    key: names of kernel arguments and symbolic dims whose values select a tuning (`[]`: one
        tuning for every shape), like `triton.autotune`'s.
    warmup, rep: `tilemlir.testing.do_bench`'s, in ms. do_bench: a replacement, fn -> ms.
    ref_prog: (*args) -> the kernel's written tensors in parameter order, to check every config
        against (default: the first config that runs); check: (output name, actual, expected) ->
        AssertionError if wrong, on numpy arrays (default `assert_close` with rtol, atol, whose
        defaults go by dtype); skip_check: no check run.
    restore_value: arguments the kernel reads and writes, copied back before every run.
    cache_results: keep the choice on disk (TILEMLIR_AUTOTUNE: on, force, off).
    workers, progress: `compile_many`'s. run: (kernel, args, config) -> outputs, replacing the
        launch (tests on a machine without a GPU).

    Without key=, TileLang's form `@tilelang.autotune(configs=..., warmup=, rep=, timeout=, ...)`:
    `tilemlir.autotuner.tilelang_style` (calls that pass a tunable argument are not tuned)."""
    if key is None and configs is not None and fn is None:
        return _tilelang_style(configs, tilelang_keywords)
    if tilelang_keywords:
        raise TypeError(f"tilemlir.autotune got unexpected keyword argument(s) {', '.join(sorted(tilelang_keywords))}")
    if fn is not None:
        raise TypeError("@tilemlir.autotune needs its configs and key: write "
                        "@tilemlir.autotune(configs=[...], key=[...]) above @tilemlir.jit(...)")
    if configs is None:
        raise TypeError("tilemlir.autotune needs configs=: a list of dicts or a dict of lists of factory arguments")
    if isinstance(key, str) or not all(isinstance(k, str) for k in key):
        raise TypeError("tilemlir.autotune needs key=: a list of the argument names and symbolic dims whose "
                        f"values select a tuning (e.g. ['M']; [] tunes once for every shape), got {key!r}")
    options = TuneOptions(configs, tuple(key), warmup, rep, ref_prog, check, rtol, atol, skip_check,
                          tuple(restore_value), cache_results, workers, progress, do_bench, run)
    return lambda function: Autotuned(function, options)


def _tilelang_style(configs: Any, keywords: dict) -> Callable[[Any], Any]:
    from tilemlir.autotuner.tilelang_style import TILELANG_KEYWORDS, TileLangAutotuned

    unknown = sorted(set(keywords) - TILELANG_KEYWORDS)
    if unknown:
        raise TypeError(f"autotune got unexpected keyword argument(s) {', '.join(unknown)} (TileLang's form, without "
                        f"key=, takes configs= and {', '.join(sorted(TILELANG_KEYWORDS))})")
    return lambda function: TileLangAutotuned(function, configs)


class Autotuned:
    """An autotuned factory: call it with the factory's fixed arguments for a `TunedKernel`."""

    def __init__(self, function: Any, options: TuneOptions):
        from tilemlir.api import JitFunction

        if not isinstance(function, JitFunction):
            raise TypeError(f"@tilemlir.autotune goes above @tilemlir.jit: it tunes a jit factory, got {function!r}")
        if function.kind != "factory":
            raise TypeError(f"@tilemlir.autotune tunes a kernel factory; '{function.fn.__name__}' is a kernel "
                            "(it takes no compile-time arguments to tune)")
        self.function = function
        self.options = options
        self._kernels: dict[tuple, TunedKernel] = {}
        functools.update_wrapper(self, function.fn, updated=())

    def __repr__(self) -> str:
        return f"<tilemlir.autotune '{self.function.fn.__name__}'>"

    def __call__(self, *args: Any, **kwargs: Any) -> "TunedKernel":
        fixed = dict(inspect.signature(self.function.fn).bind_partial(*args, **kwargs).arguments)
        try:
            cache_key = tuple(fixed.items())
            hash(cache_key)
        except TypeError:
            raise TypeError(f"the arguments of factory '{self.function.fn.__name__}' must be hashable compile-time "
                            "values (ints, floats, strings, dtypes, tuples)") from None
        if cache_key not in self._kernels:
            self._kernels[cache_key] = TunedKernel(self, fixed)
        return self._kernels[cache_key]


@dataclass
class TuneReport:
    """The choice for one key: `config` and its `kernel`, how it was made (`source`: "tuned",
    "stored" on disk, or "untuned": target "cpu", TILEMLIR_AUTOTUNE=off or one config), and the
    `trials` of a tuning (every config: its time, or where and why it failed)."""

    name: str
    key: tuple
    config: dict[str, Any]
    kernel: Any
    ms: float | None
    source: str
    trials: list[Trial] = field(default_factory=list)
    seconds: float = 0.0

    def __str__(self) -> str:
        keys = ", ".join(f"{n}={v}" for n, v in self.key) or "any shape"
        timing = f", {self.ms:.4f} ms" if self.ms is not None else ""
        lines = [f"{self.name} [{keys}]: {label(self.config)}{timing} ({self.source}"
                 + (f", {len(self.trials)} configs in {self.seconds:.1f} s)" if self.trials else ")")]
        ranked = sorted(self.trials, key=lambda t: (not t.ok, t.ms or 0.0))
        lines += [_indented(t.describe()) for t in ranked]
        return "\n".join(lines)


class TunedKernel:
    """A factory's fixed arguments and config space; calling it launches the best kernel for the key."""

    def __init__(self, autotuned: Autotuned, fixed: dict[str, Any]):
        self.function = autotuned.function
        self.options = autotuned.options
        self.fixed = fixed
        self.name = self.function.fn.__name__
        parameters = list(inspect.signature(self.function.fn).parameters)
        self.configs = expand(self.options.configs, parameters, fixed, self.name)
        self.target = "cpu" if settings().interpret else self.function.target or "cuda"
        self._compiled: dict[int, CompileResult] = {}
        self._reports: dict[tuple, TuneReport] = {}
        self._untuned_report: TuneReport | None = None
        self._layout: dict | None = None
        self._store: Store | None | bool = None  # False: no store
        self._compile_options: dict | None = None

    def __repr__(self) -> str:
        return f"<tilemlir.TunedKernel '{self.name}' over {len(self.configs)} configs>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Launch the best kernel for these arguments' key (tuning first if needed); keyword
        arguments (stream=) go to the launch. With a `run` hook, that runs it instead."""
        report = self.tune(*args)
        if self.options.run is not None and not kwargs:
            return self.options.run(report.kernel, args, report.config)
        return report.kernel(*args, **kwargs)

    def tune(self, *args: Any) -> TuneReport:
        """The choice for these arguments' key (tuned now, found in memory or on disk)."""
        mode = settings().autotune
        if self.target != "cuda" or mode == "off" or len(self.configs) == 1:
            return self._untuned(mode)
        start = time.perf_counter()
        key = key_values(self._inputs(), args, self.options.key, self.name)
        report = self._reports.get(key)
        if report is None:
            report = (None if mode == "force" else self._stored(key)) or self._tune(key, args, start)
            self._reports[key] = report
        return report

    # -- compiling -------------------------------------------------------------------------------
    def _options(self) -> dict:
        if self._compile_options is None:
            if self.target == "cuda":  # workers and the parent must agree on it, without a GPU query each
                from tilemlir.runtime.nvrtc import default_arch, normalize_arch

                self._compile_options = {"arch": normalize_arch(self.function.options.get("arch") or default_arch())}
            else:
                self._compile_options = {}
        return self._compile_options

    def _compile(self, indices: Sequence[int], workers: int | None = None) -> list[CompileResult]:
        wanted = [i for i in indices if i not in self._compiled]
        if wanted:
            results = compile_many(self.function, [{**self.fixed, **self.configs[i]} for i in wanted],
                                   target=self.target, workers=workers or self.options.workers,
                                   progress=self.options.progress, **self._options())
            self._compiled.update(zip(wanted, results))
        return [self._compiled[i] for i in indices]

    def _compile_failures(self) -> list[Trial]:
        return [Trial(self.configs[i], error=r.error, stage="compile")
                for i, r in sorted(self._compiled.items()) if not r.ok]

    def _untuned(self, mode: str) -> TuneReport:
        if self._untuned_report is None:
            for index in range(len(self.configs)):
                result = self._compile([index], workers=1)[0]
                if result.ok:
                    break
            else:
                raise AutotuneError(_failure_text(f"no config of '{self.name}' compiles", self._compile_failures()))
            config = self.configs[index]
            if self.target != "cuda":
                warnings.warn(f"autotuning '{self.name}' needs a GPU (target={self.target!r}): using the first "
                              f"config that compiles, {label(config)}", RuntimeWarning, stacklevel=4)
            elif mode == "off" and len(self.configs) > 1:
                log.info("TILEMLIR_AUTOTUNE=off: %s uses its first config that compiles, %s", self.name, label(config))
            self._untuned_report = TuneReport(self.name, (), config, result.kernel, None, "untuned",
                                              self._compile_failures())
        return self._untuned_report

    # -- keys ------------------------------------------------------------------------------------
    def _inputs(self) -> dict:
        """The kernel's argument layout: from disk, else from the first config that compiles."""
        if self._layout is None:
            store = self._store_or_none()
            self._layout = store.inputs() if store is not None else None
            if self._layout is None:
                results = self._compile(range(len(self.configs)))
                first = next((r for r in results if r.ok), None)
                if first is None:
                    raise AutotuneError(_failure_text(f"no config of '{self.name}' compiles",
                                                      self._compile_failures()))
                self._layout = input_layout(first.kernel.signature)
                if store is not None:
                    store.save_inputs(self._layout)
        return self._layout

    # -- the store -------------------------------------------------------------------------------
    def _store_or_none(self) -> Store | None:
        if self._store is None:
            self._store = self._make_store() or False
        return self._store or None

    def _make_store(self) -> Store | None:
        if not self.options.cache_results or settings().disable_cache:
            return None
        from tilemlir import __version__, source_cache
        from tilemlir.runtime.nvrtc import nvrtc_version

        options = {**self.function.options, **self._options()}
        factory = source_cache.kernel_key(self.function.fn, self.target, options, self.function.out_idx)
        if factory is None:
            log.debug("%s reads values the kernel cache cannot describe: its tunings are not kept on disk", self.name)
            return None
        material = {
            "factory": factory,
            "fixed": sorted((k, repr(v)) for k, v in self.fixed.items()),
            "configs": [sorted((k, repr(v)) for k, v in c.items()) for c in self.configs],
            "key": list(self.options.key),
            "device": device_identity(options["arch"]),
            "nvrtc": nvrtc_version(),
            "tilemlir": __version__,
        }
        return Store(digest(material))

    def _stored(self, key: tuple) -> TuneReport | None:
        store = self._store_or_none()
        record = store.choice(as_json(key)) if store is not None else None
        if record is None:
            return None
        index = record.get("index")
        if not isinstance(index, int) or not 0 <= index < len(self.configs) \
                or as_json(self.configs[index]) != record["config"]:
            return None
        result = self._compile([index], workers=1)[0]
        if not result.ok:
            log.warning("%s: the stored best config %s no longer compiles (%s); tuning again",
                        self.name, label(self.configs[index]), result.error)
            return None
        return TuneReport(self.name, key, self.configs[index], result.kernel, record.get("ms"), "stored")

    # -- tuning ----------------------------------------------------------------------------------
    def _tune(self, key: tuple, args: tuple, start: float) -> TuneReport:
        results = self._compile(range(len(self.configs)))
        candidates = [Candidate(self.configs[i], r.kernel) for i, r in enumerate(results) if r.ok]
        if not candidates:
            raise AutotuneError(_failure_text(f"no config of '{self.name}' compiles", self._compile_failures()))
        options = self.options
        timed = select(candidates, args, run=options.run or kernel_run, bench=options.do_bench or self._bench,
                       ref_prog=options.ref_prog, check=options.check, rtol=options.rtol, atol=options.atol,
                       skip_check=options.skip_check, restore_value=options.restore_value,
                       progress=options.progress, name=self.name)
        by_config = iter(timed)
        trials = [next(by_config) if r.ok else Trial(self.configs[i], error=r.error, stage="compile")
                  for i, r in enumerate(results)]
        winner = best(trials)
        if winner is None:
            raise AutotuneError(_failure_text(f"no config of '{self.name}' passed for {_key_text(key)}", trials))
        index = next(i for i, t in enumerate(trials) if t is winner)
        report = TuneReport(self.name, key, winner.config, results[index].kernel, winner.ms, "tuned", trials,
                            time.perf_counter() - start)
        log.info("autotuned %s", report)
        store = self._store_or_none()
        if store is not None:
            store.save_choice(as_json(key), {"index": index, "config": as_json(winner.config), "ms": winner.ms,
                                             "trials": [t.describe() for t in trials]})
        return report

    def _bench(self, fn: Callable[[], Any]) -> float:
        from tilemlir.testing import do_bench

        return do_bench(fn, warmup=self.options.warmup, rep=self.options.rep)


def input_layout(signature: Any) -> dict:
    """What computing a key needs of a signature: the inputs (name, kind, shape with symbol names)
    and the names of the outputs the kernel allocates."""
    params = signature.params
    inputs = [{"name": params[i].name, "shape": list(getattr(params[i], "shape", ())) or None}
              for i in signature.input_indices]
    return {"kernel": signature.name, "inputs": inputs, "outputs": [params[i].name for i in signature.out_idx]}


def key_values(layout: dict, args: tuple, names: Sequence[str], name: str) -> tuple:
    """((name, value), ...) for the key `names`: an array argument's (shape, dtype), a scalar's
    value, a symbolic dim's size."""
    inputs = layout["inputs"]
    if len(args) != len(inputs):
        raise LaunchError(f"kernel '{name}' takes {len(inputs)} arguments "
                          f"({', '.join(p['name'] for p in inputs)}), got {len(args)}")
    positions = {p["name"]: i for i, p in enumerate(inputs)}
    symbols: dict[str, tuple[int, int]] = {}
    for i, p in enumerate(inputs):
        for d, dim in enumerate(p["shape"] or ()):
            if isinstance(dim, str):
                symbols.setdefault(dim, (i, d))
    values = []
    for key in names:
        if key in positions:
            arg = args[positions[key]]
            value = (_shape(arg), _dtype(arg)) if inputs[positions[key]]["shape"] else arg
        elif key in symbols:
            position, dim = symbols[key]
            value = _shape(args[position])[dim]
        else:
            raise ValueError(_unknown_key(key, layout, symbols, name))
        values.append((key, value))
    return tuple(values)


def _unknown_key(key: str, layout: dict, symbols: dict, name: str) -> str:
    if key in layout["outputs"]:
        return (f"autotune key names '{key}', an output kernel '{name}' allocates (out_idx), not an argument: "
                "key on its inputs or symbolic dims")
    arguments = ", ".join(p["name"] for p in layout["inputs"])
    return (f"autotune key names '{key}', which is neither an argument of kernel '{name}' ({arguments}) nor "
            f"a symbolic dim ({', '.join(symbols) or 'none'})")


def _shape(array: Any) -> tuple[int, ...]:
    shape = getattr(array, "shape", None)
    if shape is None:
        from tilemlir.runtime.arrays import describe

        shape = describe(array, "key argument").shape
    return tuple(int(d) for d in shape)


def _dtype(array: Any) -> str:
    dtype = getattr(array, "dtype", None)
    return getattr(dtype, "name", None) or str(dtype).removeprefix("torch.")


def device_identity(arch: str) -> dict[str, str]:
    """The current GPU's name and the arch kernels are compiled for ('no GPU' without one)."""
    from tilemlir.runtime import driver

    try:
        cuda = driver.cuda()
        _, device = driver.current()
        raw = driver.check(cuda.cuDeviceGetName(256, device), "cuDeviceGetName")
        gpu = raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)
    except LaunchError:
        gpu = "no GPU"
    return {"gpu": gpu, "arch": arch}


def _key_text(key: tuple) -> str:
    return "key " + (", ".join(f"{n}={v}" for n, v in key) or "(any shape)")


def _indented(text: str) -> str:
    return textwrap.indent(text, "    ").replace("    ", "  ", 1)


def _failure_text(headline: str, trials: Sequence[Trial]) -> str:
    return headline + ":\n" + "\n".join(_indented(t.describe()) for t in trials if not t.ok)
