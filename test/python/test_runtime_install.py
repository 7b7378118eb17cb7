"""The runtime-only install (pyproject's `runtime` extra): a clean virtual environment with tilemlir installed
without its dependencies plus exactly that extra's list loads a kernel exported by the full install, reads its
signature and gets as far as the CUDA driver, with none of torch-mlir, z3 or llvmlite there; compiling says
that this install has no compiler. About 30 s (two pip installs from the package index)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import tilemlir
import tilemlir.language as T

REPO = Path(__file__).resolve().parents[2]
PIP_SECONDS = 300


@tilemlir.jit(out_idx=[1])
def double():
    M = T.symbolic("M")

    @T.prim_func
    def kernel(X: T.Tensor((M,), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = X[bx * 128 + i] * 2.0

    return kernel


def runtime_requirements() -> list[str]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["runtime"]


def test_the_runtime_extra_leaves_the_compiler_out():
    names = {requirement.split(">")[0].split("=")[0].strip().lower() for requirement in runtime_requirements()}
    assert names == {"numpy", "ml_dtypes", "cuda-bindings"}


def run(command: list, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=PIP_SECONDS)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result


def runtime_only_python(tmp_path: Path, env: dict) -> Path:
    """A new venv with tilemlir (copied sources, installed with --no-deps) and the runtime extra's packages."""
    source = tmp_path / "source"
    shutil.copytree(REPO / "tilemlir", source / "tilemlir", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], tmp_path, env)
    python = tmp_path / "venv" / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--disable-pip-version-check"]
    run([*pip, "--no-deps", str(source)], tmp_path, env)
    run([*pip, *runtime_requirements()], tmp_path, env)
    return python


DEPLOYED = '''
import importlib.util
import sys

import tilemlir
import tilemlir.language as T
import tilemlir.runtime as runtime
from tilemlir.diagnostics import CompileError, LaunchError

print("compiler modules:", [m for m in ("torch_mlir", "z3", "llvmlite") if importlib.util.find_spec(m)])
kernel = runtime.load(sys.argv[1])
signature = kernel.signature
print("signature:", signature.name, kernel.arch, [(p.name, p.dtype, p.shape) for p in signature.params],
      signature.out_idx, signature.grid, signature.block)
x = type("DeviceArray", (), {"__cuda_array_interface__": {"shape": (300,), "typestr": "<f4", "data": (1 << 40, False),
                                                          "version": 3}})()
try:
    kernel(x)
except LaunchError as exc:
    print("launch:", exc)


@tilemlir.jit(out_idx=[1])
def copy():
    M = T.symbolic("M")

    @T.prim_func
    def kernel(X: T.Tensor((M,), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=32) as bx:
            Y[bx] = X[bx]

    return kernel


try:
    copy()
except CompileError as exc:
    print("compile:", exc)
print("imported:", sorted({m.split(".")[0] for m in sys.modules} & {"torch_mlir", "z3", "llvmlite", "tilemlir"}))
'''


def test_a_runtime_only_install_loads_an_exported_kernel(tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")  # the export compiles a cubin (the cuda extra; no GPU needed)
    artifact = double().export(tmp_path / "artifact")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    python = runtime_only_python(tmp_path, env)
    script = tmp_path / "deployed.py"
    script.write_text(textwrap.dedent(DEPLOYED))
    out = run([str(python), str(script), str(artifact)], tmp_path, env).stdout
    lines = dict(line.split(": ", 1) for line in out.splitlines())
    assert lines["compiler modules"] == "[]"
    assert lines["signature"] == ("kernel sm_90a [('X', 'float32', ('M',)), ('Y', 'float32', ('M',))] (1,) "
                                  "('(M + 127) // 128', '1', '1') (128, 1, 1)")
    if Path("/dev/nvidiactl").exists():
        assert lines["launch"].startswith("argument 'X'")  # a GPU: the fake pointer is no device memory
    else:
        assert lines["launch"].startswith("no usable CUDA driver (") and lines["launch"].endswith(
            "GPU kernels need an NVIDIA GPU and driver; on a machine without one, compile with target='cpu'"), out
    assert lines["compile"] == ("error: compiling a kernel needs tilemlir's compiler, but torch-mlir, z3-solver, llvmlite are "
                                "not installed (a runtime-only install): install tilemlir with its dependencies to "
                                "compile; tilemlir.runtime.load(directory) runs kernels exported elsewhere")
    assert lines["imported"] == "['tilemlir']"
