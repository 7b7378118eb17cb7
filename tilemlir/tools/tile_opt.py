"""tile-opt: text IR in, named passes, IR out, with mlir-opt's conventions.

    tile-opt [FILE|-] [-o OUT] [--pass-pipeline='builtin.module(a,b{opt=1})'] [-p a,b]
             [--stage STAGE | --pipeline NAME]
             [--split-input-file] [--verify-diagnostics] [--mlir-print-ir-after-all]
             [--mlir-print-ir-before=NAME] [--mlir-print-ir-after=NAME] [--mlir-print-debuginfo]
             [--mlir-timing] [--pass-statistics] [--list-passes]

Our passes and upstream MLIR passes mix freely in one pipeline. `--stage
STAGE` runs every stage pipeline of `tilemlir.pipeline` from the frontend
IR up to STAGE (so `tile-opt --stage final` of `k.ir("frontend")` prints
`k.ir("final")`), `--pipeline NAME` one named pipeline (`PIPELINES`);
either runs before the passes of `-p`. Diagnostics
print as `FILE:LINE:COL: error: ...` on stderr; the exit status is 1 after
any error. Bad input never produces a Python traceback: it is a located
error. A bug inside one of our passes is an `internal compiler error`
(TILEMLIR_TRACEBACK=1 adds the traceback). The work runs on a thread with a
large stack, so deep recursion in MLIR's parser or passes on pathological
input cannot overflow the process stack.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import dataclass
from typing import BinaryIO, TextIO

from tilemlir.diagnostics import CompileError, Diagnostic, format_diagnostics
from tilemlir.pipeline import PIPELINES, STAGES, passes_until

SPLIT_MARKER = "// -----"
STACK_BYTES = 512 << 20
STDIN_NAME = "<stdin>"


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="tile-opt", description="Run tilemlir and MLIR passes on text IR.",
                             allow_abbrev=False)
    parser.add_argument("input", nargs="?", default="-", help="input file, or - for stdin (default)")
    parser.add_argument("-o", dest="output", default="-", help="output file, or - for stdout (default)")
    parser.add_argument("--pass-pipeline", "-p", dest="pipelines", action="append", default=[],
                        metavar="PIPELINE", help="passes to run, e.g. 'builtin.module(a,b{opt=1})' or 'a,b'")
    named = parser.add_mutually_exclusive_group()
    named.add_argument("--stage", choices=STAGES, help="run every stage pipeline from the frontend IR up to STAGE")
    named.add_argument("--pipeline", dest="named_pipeline", choices=list(PIPELINES), metavar="NAME",
                       help=f"run the named pipeline NAME ({', '.join(PIPELINES)})")
    parser.add_argument("--split-input-file", action="store_true",
                        help=f"process each chunk between '{SPLIT_MARKER}' lines on its own")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check diagnostics against expected-* comments instead of printing them")
    parser.add_argument("--mlir-print-ir-before-all", action="store_true", help="print the IR before every pass")
    parser.add_argument("--mlir-print-ir-after-all", action="store_true", help="print the IR after every pass")
    parser.add_argument("--mlir-print-ir-before", action="append", default=[], metavar="NAME",
                        help="print the IR before pass NAME (repeatable, comma lists allowed)")
    parser.add_argument("--mlir-print-ir-after", action="append", default=[], metavar="NAME",
                        help="print the IR after pass NAME (repeatable, comma lists allowed)")
    parser.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations with the IR")
    parser.add_argument("--mlir-print-op-generic", action="store_true", help="print every op in generic form")
    parser.add_argument("--mlir-timing", action="store_true", help="report the wall time of every pass")
    parser.add_argument("--pass-statistics", action="store_true", help="report the counters of our passes")
    parser.add_argument("--allow-unregistered-dialect", action="store_true", help="accept ops of unknown dialects")
    parser.add_argument("--list-passes", action="store_true", help="list the registered passes and exit")
    return parser


def _mlir_style(argv: list[str]) -> list[str]:
    """Accept mlir-opt's single-dash long options (`-split-input-file`) as well."""
    return [f"-{arg}" if arg.startswith("-") and not arg.startswith("--") and len(arg.split("=")[0]) > 2 else arg
            for arg in argv]


@dataclass
class _Streams:
    stdin: BinaryIO
    stdout: TextIO
    stderr: TextIO


@dataclass
class _ChunkResult:
    output: str | None = None  # the printed module, when the chunk went through
    failed: bool = False


def main(argv: list[str] | None = None, stdin: BinaryIO | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run tile-opt; returns the exit status (0, or 1 after any error)."""
    args = _parser().parse_args(_mlir_style(list(sys.argv[1:] if argv is None else argv)))
    streams = _Streams(stdin or sys.stdin.buffer, stdout or sys.stdout, stderr or sys.stderr)
    status: list[int] = []
    previous = threading.stack_size()
    threading.stack_size(STACK_BYTES)
    try:
        worker = threading.Thread(target=lambda: status.append(_run_guarded(args, streams)), daemon=True)
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    return status[0] if status else 1


def _run_guarded(args: argparse.Namespace, streams: _Streams) -> int:
    try:
        return _run(args, streams)
    except BrokenPipeError:
        return 1
    except Exception as exc:  # a bug in tile-opt itself: say so in one line, keep the traceback opt-in
        from tilemlir.config import settings

        if settings().traceback:
            import traceback

            traceback.print_exc(file=streams.stderr)
        streams.stderr.write(f"tile-opt: internal error: {type(exc).__name__}: {exc}\n")
        return 1


def _run(args: argparse.Namespace, streams: _Streams) -> int:
    if args.list_passes:
        streams.stdout.write(format_pass_list())
        return 0
    filename, data = _read_input(args.input, streams)
    if data is None:
        return 1
    return _Session(args, streams, filename).run(data)


def _read_input(path: str, streams: _Streams) -> tuple[str, bytes | None]:
    if path == "-":
        return STDIN_NAME, streams.stdin.read()
    try:
        with open(path, "rb") as handle:
            return path, handle.read()
    except OSError as err:
        streams.stderr.write(f"tile-opt: error: cannot open input file '{path}': {err.strerror or err}\n")
        return path, None


def _remember_source(filename: str, text: str) -> None:
    """Let diagnostics quote source lines of what was parsed, stdin included."""
    import linecache

    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)


def _chunks(text: str, split: bool) -> list[tuple[str, int]]:
    """(chunk text, line of the file it starts on); one chunk unless splitting on `// -----` lines."""
    if not split:
        return [(text, 1)]
    chunks, current, start = [], [], 1
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip().startswith(SPLIT_MARKER) and set(line.strip()[2:].strip()) == {"-"}:
            chunks.append(("\n".join(current), start))
            current, start = [], number + 1
        else:
            current.append(line)
    chunks.append(("\n".join(current), start))
    return chunks


class _Session:
    """One tile-opt run over the chunks of one input: parse, run the pipeline, print, report."""

    def __init__(self, args: argparse.Namespace, streams: _Streams, filename: str):
        from tilemlir.context import make_context
        from tilemlir.pass_infra.runner import PipelineReport

        self.args, self.streams, self.filename = args, streams, filename
        self.context = make_context()
        self.context.enable_multithreading(False)
        self.context.allow_unregistered_dialects = args.allow_unregistered_dialect
        self.report = PipelineReport()
        self.parse_seconds = self.output_seconds = 0.0
        self.results: list[_ChunkResult] = []

    def run(self, data: bytes) -> int:
        from tilemlir.pass_infra.runner import build_stages
        from tilemlir.tools.ir_source import decode_source

        try:
            text = decode_source(data, self.filename)
            self.stages = build_stages(_named_passes(self.args) + self.args.pipelines, self.context)
        except CompileError as err:
            _print_diagnostics(err.diagnostics, self.streams)
            return 1
        _remember_source(self.filename, text)
        for chunk, first_line in _chunks(text, self.args.split_input_file):
            self.results.append(self.process(chunk, first_line))
        failed = any(r.failed for r in self.results)
        failed = not _write_output(self.args, self.results, self.streams, failed) or failed
        if self.args.mlir_timing:
            self.streams.stderr.write(self.report.format_timing([("Parser", self.parse_seconds)],
                                                                [("Output", self.output_seconds)]))
        if self.args.pass_statistics:
            self.streams.stderr.write(self.report.format_statistics())
        return 1 if failed else 0

    def process(self, chunk: str, first_line: int) -> _ChunkResult:
        """Parse, transform and print one chunk; print (or verify) its diagnostics."""
        diagnostics, module = self.transform(chunk, first_line)
        result = _ChunkResult()
        if module is not None:
            start = time.perf_counter()
            result.output = module.operation.get_asm(enable_debug_info=self.args.mlir_print_debuginfo,
                                                     print_generic_op_form=self.args.mlir_print_op_generic,
                                                     assume_verified=True)
            self.output_seconds += time.perf_counter() - start
        if self.args.verify_diagnostics:
            diagnostics = _verify(chunk, first_line, self.filename, diagnostics)
        result.failed = any(d.severity == "error" for d in diagnostics)
        _print_diagnostics(diagnostics, self.streams)
        return result

    def transform(self, chunk: str, first_line: int):
        """(diagnostics, module or None when parsing or the pipeline failed)."""
        from tilemlir.pass_infra.runner import run_pipeline
        from tilemlir.tools.ir_source import parse_source

        start = time.perf_counter()
        try:
            module = parse_source(chunk, self.filename, self.context, first_line)
        except CompileError as err:
            return err.diagnostics, None
        finally:
            self.parse_seconds += time.perf_counter() - start
        try:
            run_pipeline(module, self.stages, print_ir=_ir_printing(self.args, self.streams), report=self.report)
            return list(self.report.diagnostics), module
        except CompileError as err:
            return err.diagnostics, None
        finally:
            self.report.diagnostics.clear()


def _named_passes(args: argparse.Namespace) -> list[str]:
    if args.stage is not None:
        return passes_until(args.stage)
    return list(PIPELINES[args.named_pipeline]) if args.named_pipeline is not None else []


def _verify(chunk: str, first_line: int, filename: str, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    from tilemlir.tools.verify_diagnostics import parse_expectations, verify_diagnostics

    expectations, problems = parse_expectations(chunk, filename, first_line)
    return problems + verify_diagnostics(diagnostics, expectations, filename)


def _ir_printing(args, streams: _Streams):
    from tilemlir.pass_infra.runner import IRPrinting

    before = frozenset(n for arg in args.mlir_print_ir_before for n in arg.split(",") if n)
    after = frozenset(n for arg in args.mlir_print_ir_after for n in arg.split(",") if n)
    if not (before or after or args.mlir_print_ir_before_all or args.mlir_print_ir_after_all):
        return None
    return IRPrinting(streams.stderr, before, after, args.mlir_print_ir_before_all, args.mlir_print_ir_after_all,
                         args.mlir_print_debuginfo)


def _write_output(args, results: list[_ChunkResult], streams: _Streams, failed: bool) -> bool:
    """Print what went through to stdout; write an output file only when everything did. False on an I/O error."""
    outputs = [r.output for r in results if r.output is not None]
    text = f"{SPLIT_MARKER}\n".join(out if out.endswith("\n") else out + "\n" for out in outputs)
    if args.output == "-":
        streams.stdout.write(text)
        streams.stdout.flush()
        return True
    if failed:
        return True
    try:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
        return True
    except OSError as err:
        streams.stderr.write(f"tile-opt: error: cannot write output file '{args.output}': {err.strerror or err}\n")
        return False


def format_pass_list() -> str:
    """The --list-passes text: our passes with their options, and a word on upstream passes."""
    import dataclasses

    from tilemlir.pass_infra.registry import load_passes

    lines = ["tilemlir passes:"]
    for name, info in sorted(load_passes().items()):
        lines.append(f"  {name}")
        lines.append(f"      {info.description}")
        for option in dataclasses.fields(info.options):
            type_name = option.type if isinstance(option.type, str) else option.type.__name__
            lines.append(f"      --{option.name.replace('_', '-')}=<{type_name}> (default: {_default_text(option)})")
    lines.append("")
    lines.append("Upstream MLIR passes are accepted too, by their mlir-opt names, in the same pipeline")
    lines.append("(e.g. canonicalize, cse, symbol-dce, convert-scf-to-cf, or nested: func.func(canonicalize)).")
    return "\n".join(lines) + "\n"


def _default_text(option) -> str:
    import dataclasses

    if option.default is not dataclasses.MISSING:
        value = option.default
    elif option.default_factory is not dataclasses.MISSING:
        value = option.default_factory()
    else:
        return "required"
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _print_diagnostics(diagnostics: list[Diagnostic], streams: _Streams) -> None:
    if diagnostics:
        streams.stderr.write(format_diagnostics(diagnostics) + "\n")
        streams.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
