# lit configuration of tilemlir's FileCheck tests (test/lit). Run: lit test/lit -v
# -*- Python -*-

import os
import sys

import lit.formats

config.name = "tilemlir"
# lit's internal shell: portable, and it provides `not` as a builtin.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py", ".test"]
# Tests live under test/lit. lit maps a path to its suite relative to this file's
# directory, so the suite root is the repository; `lit .` must not collect
# Python sources and pytest files as tests.
config.excludes = ["Inputs", "Output", "__pycache__", "lit.cfg.py", "lit.local.cfg",
                   "tilemlir", "benchmarks", "docs", "examples", "build", "python", "gpu", "venv"]

repo_root = os.path.dirname(os.path.abspath(__file__))
config.test_source_root = repo_root
config.test_exec_root = repo_root

python = sys.executable
bin_dir = os.path.dirname(python)


def tool(name, module):
    """The installed console script next to this Python, else `python -m module`."""
    script = os.path.join(bin_dir, name)
    return script if os.path.exists(script) else f"{python} -m {module}"


def filecheck():
    # The filecheck package ignores FILECHECK_OPTS, so the options go here.
    return f"{tool('filecheck', 'filecheck')} --enable-var-scope"


def word(name):
    """A regex matching `name` as a command word, not inside a path or a longer name."""
    return rf"(?<![\w/.-]){name}(?![\w/.-])"


config.substitutions.append(("%python", python))
config.substitutions.append((word("tile-opt"), tool("tile-opt", "tilemlir.tools.tile_opt")))
config.substitutions.append((word("FileCheck"), filecheck()))
config.substitutions.append((word("emit-cuda"), f"{python} -m tilemlir.emit_cuda"))

config.environment["PATH"] = os.pathsep.join([bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PYTHONPATH"] = repo_root
for name, value in os.environ.items():
    if name.startswith("TILEMLIR_") or name in ("HOME", "TMPDIR", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"):
        config.environment[name] = value
