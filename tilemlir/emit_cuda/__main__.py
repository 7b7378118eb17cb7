"""`python -m tilemlir.emit_cuda FILE.mlir`: print the CUDA source of a thread-level module.

`--signature` prints the kernel signature JSON instead; `--fast-math`,
`--index-bits {32,64}` and `--arch sm_XX` are emit()'s options. Errors print as located
diagnostics on stderr with exit status 1.
"""

from __future__ import annotations

import argparse
import sys

from tilemlir.diagnostics import CompileError, Diagnostic, format_diagnostics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tilemlir.emit_cuda", description=__doc__.splitlines()[0])
    parser.add_argument("input", help="thread-level .mlir file ('-' for stdin)")
    parser.add_argument("--signature", action="store_true", help="print the signature JSON instead of the source")
    parser.add_argument("--fast-math", action="store_true", help="use the fast CUDA intrinsics")
    parser.add_argument("--index-bits", type=int, choices=(32, 64),
                        help="force the index width (default: 32 where proven to fit, else 64; 32 is an error "
                             "where it could overflow)")
    parser.add_argument("--arch", help="check the shared memory against this arch's limit (e.g. sm_90a)")
    args = parser.parse_args(argv)

    from tilemlir.context import make_context
    from tilemlir.diagnostics.reporting import source_location
    from tilemlir.emit_cuda import emit
    from tilemlir.mlir import MLIRError, ir

    text = sys.stdin.read() if args.input == "-" else _read(args.input)
    if text is None:
        return 1
    with make_context():
        try:
            module = ir.Module.parse(text)
            emitted = emit(module, fast_math=args.fast_math, index_bits=args.index_bits, arch=args.arch)
        except MLIRError as exc:
            diags = [Diagnostic("error", d.message, source_location(d.location)) for d in exc.error_diagnostics]
            print(format_diagnostics(diags or [Diagnostic("error", str(exc))]), file=sys.stderr)
            return 1
        except CompileError as exc:
            print(str(exc), file=sys.stderr)
            return 1
    sys.stdout.write(emitted.signature.to_json() if args.signature else emitted.source)
    return 0


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return None


if __name__ == "__main__":
    sys.exit(main())
