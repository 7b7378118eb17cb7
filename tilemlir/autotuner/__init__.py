"""Autotuning of `@tilemlir.jit` factories and parallel compilation (`tilemlir.autotune`,
`tilemlir.compile_many`).

- `space`: the config space (a list of dicts, a dict of lists, or a callable).
- `parallel`: `compile_many`, one config per worker process (spawned, each with its own MLIR).
- `select`: the check run and timing that pick a config (no MLIR: usable on a GPU machine
  without the compiler, on precompiled artifacts).
- `store`: the best config per key on disk, next to the kernel cache.
- `tuner`: the decorator, `TunedKernel` and `TuneReport`.
"""

from tilemlir.autotuner.parallel import CompileResult, compile_many
from tilemlir.autotuner.select import Candidate, Trial, select
from tilemlir.autotuner.tuner import AutotuneError, Autotuned, TunedKernel, TuneReport, autotune

__all__ = ["AutotuneError", "Autotuned", "Candidate", "CompileResult", "Trial", "TuneReport", "TunedKernel",
           "autotune", "compile_many", "select"]
