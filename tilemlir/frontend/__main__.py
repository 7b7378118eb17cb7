"""`tilemlir-frontend FILE.py` (or `python -m tilemlir.frontend FILE.py`): print the frontend IR of a file's kernels.

The file is imported as a module (its `if __name__ == "__main__":` block does
not run). Every `@tilemlir.jit` kernel it defines is printed, in source
order, with locations (`loc("FILE":LINE:COL)`) unless `--no-debuginfo`;
a factory whose parameters all have defaults is instantiated with them.
Modules are separated by `// -----`, so `tile-opt --split-input-file`
reads the output back. Errors print as `FILE:LINE:COL: error: ...` with the
source line, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import traceback
import types
from pathlib import Path

from tilemlir.diagnostics import CompileError

SEPARATOR = "// -----"


def _load(path: str):
    """Import the file as a module named after it. Its code keeps `path` as given as its file name, so
    locations read the way the command line spelled the file (relative stays relative)."""
    module = types.ModuleType(f"_tilemlir_frontend_{Path(path).stem}")
    module.__file__ = path
    sys.modules[module.__name__] = module
    sys.path.insert(0, str(Path(path).parent))
    code = compile(Path(path).read_text(), path, "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


def _user_traceback(exc: BaseException, file: str) -> str:
    """The traceback of `exc` from the first frame in the user's file on (none of this tool's frames)."""
    trace = exc.__traceback__
    while trace is not None and trace.tb_frame.f_code.co_filename != file:
        trace = trace.tb_next
    return "".join(traceback.format_exception(type(exc), exc, trace)).rstrip()


def _kernels(module, only: str | None):
    """(name, JitFunction of a kernel) for each jit kernel or defaulted factory, in source order."""
    from tilemlir.api import JitFunction

    found = []
    for name, value in vars(module).items():
        if not isinstance(value, JitFunction) or (only and name != only):
            continue
        if value.fn.__module__ != module.__name__:
            continue  # imported from elsewhere
        found.append((value.fn.__code__.co_firstlineno, name, value))
    found.sort(key=lambda item: item[0])
    result = []
    for _, name, jit_fn in found:
        if jit_fn.kind == "kernel":
            result.append((name, jit_fn))
            continue
        if jit_fn.kind == "eager":
            print(f"note: skipping eager kernel '{name}': its signature comes from the arguments it is called with",
                  file=sys.stderr)
            continue
        params = inspect.signature(jit_fn.fn).parameters.values()
        if all(p.default is not inspect.Parameter.empty for p in params):
            result.append((name, jit_fn.instantiate()))
        else:
            print(f"note: skipping factory '{name}': its parameters have no defaults to instantiate it with",
                  file=sys.stderr)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tilemlir-frontend", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a Python file defining @tilemlir.jit kernels")
    parser.add_argument("--kernel", help="print only the kernel (or factory) bound to this name")
    parser.add_argument("--no-debuginfo", action="store_true", help="print without locations")
    parser.add_argument("-o", "--output", help="write to this file instead of stdout")
    args = parser.parse_args(argv)
    path = Path(args.file)
    if not path.is_file():
        print(f"{args.file}: error: no such file", file=sys.stderr)
        return 1
    try:
        module = _load(args.file)
    except CompileError as err:
        print(err, file=sys.stderr)
        return 1
    except SyntaxError as err:
        print(f"{err.filename}:{err.lineno}:{err.offset}: error: {err.msg}", file=sys.stderr)
        return 1
    except Exception as exc:  # the user's module failed at import
        print(f"{args.file}: error: importing the file failed:\n{_user_traceback(exc, args.file)}", file=sys.stderr)
        return 1
    try:
        kernels = _kernels(module, args.kernel)
        if not kernels:
            print(f"{args.file}: error: no @tilemlir.jit kernels found", file=sys.stderr)
            return 1
        texts = [jit_fn.frontend().ir(debuginfo=not args.no_debuginfo) for _, jit_fn in kernels]
    except CompileError as err:
        print(err, file=sys.stderr)
        return 1
    except Exception as exc:  # a factory's own Python code failed
        print(f"{args.file}: error: a kernel factory failed:\n{_user_traceback(exc, args.file)}", file=sys.stderr)
        return 1
    output = f"\n{SEPARATOR}\n".join(t.rstrip("\n") for t in texts) + "\n"
    if args.output:
        Path(args.output).write_text(output)
    else:
        sys.stdout.write(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
