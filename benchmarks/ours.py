"""Our kernels in the benchmark: precompiled artifact directories loaded with
`tilemlir.runtime.load` (no MLIR on the GPU machine), checked against the
calling convention of `cases.Kernel`, and inspected for registers, spills,
shared memory and 16-byte loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.cases import Case, Kernel
from benchmarks.sass import inspect_cubin

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


class Missing(Exception):
    """Our kernel for a case cannot be run; the message says why."""


def artifact_dir(case: Case, root: Path = ARTIFACTS) -> Path:
    return root / case.id


def signature_problems(signature: Any, kernel: Kernel) -> list[str]:
    """How a KernelSignature departs from `kernel`'s calling convention (inputs,
    outputs, scalars in order; out_idx empty or exactly the outputs)."""
    expected = kernel.params()
    got = [("tensor" if hasattr(p, "shape") else "scalar", p.name, p.dtype, len(getattr(p, "shape", ())))
           for p in signature.params]
    problems = []
    if len(got) != len(expected):
        problems.append(f"{len(got)} params ({', '.join(g[1] for g in got)}), expected {len(expected)} "
                        f"({', '.join(e[1] for e in expected)})")
    for position, (want, have) in enumerate(zip(expected, got)):
        if (want[0], want[2], want[3]) != (have[0], have[2], have[3]):
            problems.append(f"param {position} ({have[1]}): {have[0]} {have[2]} of rank {have[3]}, expected "
                            f"{want[0]} {want[2]} of rank {want[3]} (like {want[1]})")
    outputs = tuple(range(len(kernel.inputs), len(kernel.inputs) + len(kernel.outputs)))
    out_idx = tuple(signature.out_idx)
    if out_idx and tuple(sorted(out_idx)) != outputs:
        problems.append(f"out_idx {list(out_idx)} should be empty or the outputs {list(outputs)}")
    return problems


class OursImpl:
    """Calls a loaded CompiledKernel as fn(inputs, outputs, scalars) -> outputs."""

    def __init__(self, compiled: Any, kernel: Kernel, directory: Path):
        self.compiled = compiled
        self.kernel = kernel
        self.directory = directory
        self.allocates = bool(compiled.signature.out_idx)
        self.scalar_names = tuple(name for name, _ in kernel.scalars)

    def __call__(self, inputs, outputs, scalars):
        values = [scalars[name] for name in self.scalar_names]
        if self.allocates:
            result = self.compiled(*inputs, *values)
            return result if isinstance(result, tuple) else (result,)
        self.compiled(*inputs, *outputs, *values)
        return tuple(outputs)

    def describe(self) -> str:
        return f"{self.directory.name}: outputs {'allocated (out_idx)' if self.allocates else 'passed'}"


def load_artifact(directory: Path, absent: str) -> Any:
    """The runtime kernel exported into `directory`; Missing(`absent`) when there is none, Missing(why)
    when the runtime does not import or the artifact does not load."""
    if not (directory / "signature.json").is_file():
        raise Missing(absent)
    try:
        from tilemlir.runtime import load
    except ImportError as exc:
        raise Missing(f"tilemlir.runtime does not import: {exc}") from None
    try:
        return load(directory)
    except Exception as exc:  # a LaunchError names the broken file
        raise Missing(f"artifact {directory.name} does not load: {exc}") from None


def load_ours(case: Case, root: Path = ARTIFACTS) -> OursImpl:
    """Our compiled kernel for `case`; Missing(reason) when there is none or it does not fit."""
    directory = artifact_dir(case, root)
    compiled = load_artifact(directory, f"no artifact {directory.name} (run benchmarks/build_artifacts.py)")
    problems = signature_problems(compiled.signature, case.kernel)
    if problems:
        raise Missing(f"artifact {directory.name} does not follow the calling convention: " + "; ".join(problems))
    return OursImpl(compiled, case.kernel, directory)


def resources(impl: OursImpl) -> dict[str, Any]:
    """Registers, stack/local/shared bytes and SASS counts (cuobjdump), cross-checked
    with cuFuncGetAttribute on the loaded cubin when a CUDA context is current."""
    name = impl.compiled.signature.name
    cubin = impl.directory / f"{name}.cubin"
    found = inspect_cubin(cubin, name)
    found.pop("cuobjdump", None)
    attributes = function_attributes(cubin.read_bytes(), name)
    if attributes:
        found["driver"] = attributes
    build = impl.directory / "build.json"
    if build.is_file():
        found["build"] = json.loads(build.read_text())
    return found


def function_attributes(cubin: bytes, name: str) -> dict[str, Any]:
    """cuFuncGetAttribute's registers, local (spill/stack) bytes per thread and static shared bytes."""
    try:
        from cuda.bindings import driver as drv
    except ImportError as exc:
        return {"error": f"cuda.bindings missing: {exc}"}
    err, module = drv.cuModuleLoadData(cubin)
    if int(err) != 0:
        return {"error": f"cuModuleLoadData: {err}"}
    try:
        err, function = drv.cuModuleGetFunction(module, name.encode())
        if int(err) != 0:
            return {"error": f"cuModuleGetFunction: {err}"}
        attr = drv.CUfunction_attribute
        wanted = {"regs": attr.CU_FUNC_ATTRIBUTE_NUM_REGS, "local": attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                  "shared": attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                  "max_threads": attr.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK}
        values = {}
        for key, which in wanted.items():
            err, value = drv.cuFuncGetAttribute(which, function)
            values[key] = int(value) if int(err) == 0 else f"error {err}"
        return values
    finally:
        drv.cuModuleUnload(module)
