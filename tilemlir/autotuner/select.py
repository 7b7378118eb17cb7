"""Choosing among compiled kernels: a check run of each on the caller's arguments, then timing.

`select(candidates, args, ...)` runs every candidate once on `args` and
compares its outputs (the tensors its signature says it writes: the
`out_idx` outputs it returns and the written arguments) with a reference:
`ref_prog(*args)` when given, else the first candidate that runs. Before
each check run the written arguments are filled with 0xFF bytes (NaN
floats, -1 integers), so an element a candidate leaves unwritten shows,
and the outputs of a checked run are filled the same way before they are
freed, so the next candidate's fresh outputs cannot land on finished
results. Arguments named in `restore_value` (kernels that read what they
write) are copied back from a snapshot instead, before every check run
and before and after each candidate's timing; at the end every written argument
holds what it held before. The candidates
that pass are timed with `bench` (default `tilemlir.testing.do_bench`).
Configs that compiled to the same kernel are run once for all of them.

Imports no MLIR: `benchmarks/tune.py` picks among precompiled artifacts on a
GPU machine without the compiler with it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from tilemlir.autotuner.progress import Progress
from tilemlir.autotuner.space import label
from tilemlir.runtime.signature import KernelSignature, TensorParam
from tilemlir.testing import as_numpy, assert_close

POISON_BYTE = 0xFF

Run = Callable[[Any, tuple, dict], Any]  # (kernel, args, config) -> what the kernel returns
Bench = Callable[[Callable[[], Any]], float]  # a call -> its time in ms
Check = Callable[[str, np.ndarray, np.ndarray], None]  # (output name, actual, expected); AssertionError if wrong


@dataclass
class Candidate:
    config: dict[str, Any]
    kernel: Any  # callable on the arguments, with a `.signature` (KernelSignature)


@dataclass
class Trial:
    """What became of one config: `ms` when it was timed, else `error` (and the `stage` it failed in:
    "compile", "run", "check" or "time")."""

    config: dict[str, Any]
    ms: float | None = None
    error: str | None = None
    stage: str | None = None
    same_as: dict[str, Any] | None = None  # the config with the same kernel, which ran for this one

    @property
    def ok(self) -> bool:
        return self.error is None and self.ms is not None

    def describe(self) -> str:
        same = f" (the kernel of {label(self.same_as)})" if self.same_as is not None else ""
        if self.ok:
            return f"{label(self.config)}: {self.ms:.4f} ms{same}"
        return f"{label(self.config)}: {self.stage} failed{same}: {self.error}"


def kernel_run(kernel: Any, args: tuple, config: dict) -> Any:
    """The default `run`: launch the kernel on the arguments."""
    return kernel(*args)


def select(candidates: Sequence[Candidate], args: tuple, *, run: Run | None = None, bench: Bench | None = None,
           ref_prog: Callable[..., Any] | None = None, check: Check | None = None, rtol: float | None = None,
           atol: float | None = None, skip_check: bool = False, restore_value: Sequence[str] = (),
           progress: bool | None = None, name: str = "kernel") -> list[Trial]:
    """One Trial per candidate, in order (see the module docstring); the best is the fastest `ok` one.

    `check(name, actual, expected)` raises AssertionError for a wrong output (default:
    `assert_close` with `rtol`, `atol`). Candidates whose kernels are the same (same cubin and
    signature: configs the compiler maps to one kernel) are run once; the others get their trial,
    with `same_as` naming the config that ran."""
    if not candidates:
        return []
    run = run or kernel_run
    if bench is None:
        from tilemlir.testing import do_bench

        bench = do_bench
    if check is None:
        check = lambda output, got, want: assert_close(got, want, rtol=rtol, atol=atol, msg=f"output {output}")  # noqa: E731
    firsts = _first_of_each_kernel(candidates)
    distinct = [candidates[i] for i in sorted(set(firsts))]
    arguments = _Arguments(distinct[0].kernel.signature, args, restore_value)
    trials = [Trial(c.config) for c in distinct]
    try:
        if not skip_check:
            _check_all(distinct, trials, arguments, run, ref_prog, check, progress, name)
        meter = Progress(f"timing {name}", sum(t.error is None for t in trials), progress)
        for candidate, trial in zip(distinct, trials):
            if trial.error is None:
                _time(candidate, trial, arguments, run, bench)
                meter.step(trial.ok)
        meter.close()
    finally:
        arguments.restore(every=True)
    by_first = dict(zip(sorted(set(firsts)), trials))
    return [by_first[i] if i == first else replace(by_first[first], config=c.config, same_as=by_first[first].config)
            for i, (c, first) in enumerate(zip(candidates, firsts))]


def _first_of_each_kernel(candidates: Sequence[Candidate]) -> list[int]:
    """For each candidate, the index of the first candidate with the same kernel."""
    seen: dict[Any, int] = {}
    firsts = []
    for index, candidate in enumerate(candidates):
        cubin = getattr(candidate.kernel, "cubin", None)
        identity = (cubin, candidate.kernel.signature) if isinstance(cubin, bytes) else index
        firsts.append(seen.setdefault(identity, index))
    return firsts


def _check_all(candidates: Sequence[Candidate], trials: list[Trial], arguments: "_Arguments", run: Run,
               ref_prog: Callable[..., Any] | None, check: Check, progress: bool | None, name: str) -> None:
    reference = None if ref_prog is None else _reference_outputs(ref_prog, arguments)
    meter = Progress(f"checking {name}", len(candidates), progress)
    for candidate, trial in zip(candidates, trials):
        outputs = _checked_run(candidate, trial, arguments, run)
        if outputs is not None:
            if reference is None:
                reference = outputs
            else:
                _compare(trial, outputs, reference, check)
        meter.step(trial.error is None)
    meter.close()


def _reference_outputs(ref_prog: Callable[..., Any], arguments: "_Arguments") -> list[tuple[str, np.ndarray]]:
    produced = ref_prog(*arguments.args)
    produced = produced if isinstance(produced, (tuple, list)) else (produced,)
    names = arguments.output_names
    if len(produced) != len(names):
        raise ValueError(f"ref_prog returned {len(produced)} arrays; the kernel writes {len(names)} "
                         f"({', '.join(names)}), in parameter order")
    return [(n, np.array(as_numpy(p))) for n, p in zip(names, produced)]


def _checked_run(candidate: Candidate, trial: Trial, arguments: "_Arguments", run: Run
                 ) -> list[tuple[str, np.ndarray]] | None:
    arguments.prepare()
    try:
        returned = run(candidate.kernel, arguments.args, candidate.config)
        outputs = arguments.outputs(candidate.kernel.signature, returned)
        host = [(n, np.array(as_numpy(array))) for n, array in outputs]
    except Exception as exc:  # this config's failure: reported with it, the others go on
        trial.error, trial.stage = f"{type(exc).__name__}: {exc}", "run"
        return None
    for n, array in outputs:
        if not arguments.is_argument(array):
            _fill(array, n)  # freed next: the next candidate's outputs may land here
    return host


def _compare(trial: Trial, outputs: list, reference: list, check: Check) -> None:
    for (name, got), (_, want) in zip(outputs, reference):
        try:
            check(name, got, want)
        except AssertionError as exc:
            trial.error, trial.stage = f"wrong result: {exc}", "check"
            return


def _time(candidate: Candidate, trial: Trial, arguments: "_Arguments", run: Run, bench: Bench) -> None:
    kernel, args, config = candidate.kernel, arguments.args, candidate.config
    arguments.restore()
    try:
        trial.ms = float(bench(lambda: run(kernel, args, config)))
    except Exception as exc:
        trial.error, trial.stage = f"{type(exc).__name__}: {exc}", "time"
    finally:
        arguments.restore()


class _Arguments:
    """The caller's arguments, with the snapshots and fills around check runs."""

    def __init__(self, signature: KernelSignature, args: tuple, restore_value: Sequence[str]):
        self.args = tuple(args)
        params = signature.params
        inputs = {params[i].name: (pos, params[i]) for pos, i in enumerate(signature.input_indices)}
        if len(self.args) != len(inputs):
            raise TypeError(f"kernel '{signature.name}' takes {len(inputs)} arguments ({', '.join(inputs)}), "
                            f"got {len(self.args)}")
        for name in restore_value:
            if name not in inputs or not isinstance(inputs[name][1], TensorParam):
                raise ValueError(f"restore_value names {name!r}, which is not a tensor argument of kernel "
                                 f"'{signature.name}' (its arguments: {', '.join(inputs)})")
        written = [pos for pos, p in inputs.values() if isinstance(p, TensorParam) and p.written]
        self._snapshots = {pos: np.array(as_numpy(self.args[pos])) for pos in written}
        self._each_run = [inputs[n][0] for n in restore_value]
        self.output_names = [p.name for p in params if isinstance(p, TensorParam) and p.written]

    def prepare(self) -> None:
        """Before a check run: written arguments filled, restore_value ones copied back."""
        for pos, host in self._snapshots.items():
            if pos in self._each_run:
                _copy_in(self.args[pos], host)
            else:
                _fill(self.args[pos], f"argument {pos}")

    def restore(self, every: bool = False) -> None:
        """Copy back the restore_value arguments (`every`: all written arguments)."""
        for pos, host in self._snapshots.items():
            if every or pos in self._each_run:
                _copy_in(self.args[pos], host)

    def outputs(self, signature: KernelSignature, returned: Any) -> list[tuple[str, Any]]:
        """(name, array) of every tensor the kernel writes, in parameter order."""
        returned = () if returned is None else returned if isinstance(returned, tuple) else (returned,)
        if len(returned) != len(signature.out_idx):
            raise ValueError(f"the run returned {len(returned)} arrays; kernel '{signature.name}' allocates "
                             f"{len(signature.out_idx)} (out_idx)")
        by_index = dict(zip(signature.out_idx, returned))
        by_index.update(zip(signature.input_indices, self.args))
        return [(p.name, by_index[i]) for i, p in enumerate(signature.params)
                if isinstance(p, TensorParam) and p.written]

    def is_argument(self, array: Any) -> bool:
        return any(array is a for a in self.args)


def _fill(array: Any, name: str) -> None:
    if isinstance(array, np.ndarray):
        array.view(np.uint8).fill(POISON_BYTE) if array.flags.c_contiguous else _fill_strided(array)
        return
    from tilemlir.runtime.memory import fill_bytes

    fill_bytes(array, POISON_BYTE, name)


def _fill_strided(array: np.ndarray) -> None:
    array[...] = np.full(array.shape + (array.dtype.itemsize,), POISON_BYTE, np.uint8).view(array.dtype)[..., 0]


def _copy_in(array: Any, host: np.ndarray) -> None:
    if isinstance(array, np.ndarray):
        array[...] = host
        return
    from tilemlir.runtime.memory import from_host

    from_host(array, host)


def best(trials: Sequence[Trial]) -> Trial | None:
    """The fastest trial that passed (the earlier one on a tie), or None."""
    passed = [t for t in trials if t.ok]
    return min(passed, key=lambda t: t.ms) if passed else None

