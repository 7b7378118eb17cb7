"""Mutated-IR fuzzer (issue 14): the lit inputs with ops dropped or duplicated, types, attributes, numbers and
operands changed, run through `tile-opt` with the passes they were written for (their RUN lines) and with whole
pipelines (`thread`+`final` stages, the CPU lowering, the thread simulation). The result must be exit 0 or
located errors: never an internal error, a Python traceback or a bindings crash (test_robustness's rules), and
on a mutant that parses and verifies, never IR that a pass left failing the verifier.

Where test_robustness mutates bytes and tokens (mostly parse errors), these mutations are line- and op-level,
so most mutants parse and verify differently and reach the passes. tile-opt runs in a worker process
(fuzz_support.Worker), so a crash fails the case with its seed.
"""

from __future__ import annotations

import json
import random
import re
import sys

import pytest

import test_robustness as robustness
from fuzz_support import Worker, fuzz_seeds

LIT_ROOT = robustness.LIT_ROOT
INPUTS = robustness.LIT_INPUTS
PIPELINES = [
    "lower-gemm-simt,infer-layouts,lower-tile-ops,partition-threads,insert-guards,eliminate-guards,vectorize,"
    "canonicalize,cse",
    "insert-guards,eliminate-guards,vectorize,canonicalize,cse",
    "lower-tile-to-loops,canonicalize,cse",
    "simulate-threads,canonicalize,cse",
]
OP_LINE = re.compile(r'^\s*(?:%[\w#:]+(?:, %[\w#:]+)* = )?"?[a-z_]+\.[a-z_.]+')
TYPES = ["f32", "f16", "bf16", "i32", "i1", "i8", "index", "i64", "f64"]
NUMBERS = ["0", "1", "-1", "3", "7", "64", "2147483648", "4294967296", "9223372036854775807"]


def _pipelines_of(text: str) -> list[str]:
    found = re.findall(r"RUN:.*?tile-opt\b.*?\s(?:-p|--pass-pipeline)[= ]('[^']*'|\"[^\"]*\"|\S+)", text)
    return [p.strip("'\"") for p in found]


def _mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    lines = text.split("\n")
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        ops = [i for i, line in enumerate(lines) if OP_LINE.match(line) and not line.lstrip().startswith("//")]
        if not ops:
            break
        at = rng.choice(ops)
        line = lines[at]
        kind = rng.choice(["drop", "duplicate", "type", "number", "operands", "attr_drop", "move"])
        if kind == "drop":
            del lines[at]
        elif kind == "duplicate":
            copy = re.sub(r"^(\s*)%([\w#:]+)", lambda m: f"{m.group(1)}%dup{at}_{m.group(2).replace('#', '_')}",
                          line, count=1)
            lines.insert(at + 1, copy)
        elif kind == "type":
            found = [m for m in re.finditer(r"\b(?:f32|f16|bf16|i32|i1|i8|index|i64|f64)\b", line)]
            if not found:
                continue
            m = rng.choice(found)
            lines[at] = line[:m.start()] + rng.choice(TYPES) + line[m.end():]
        elif kind == "number":
            found = list(re.finditer(r"(?<![\w#%^.])\d+(?![\w.])", line))
            if not found:
                continue
            m = rng.choice(found)
            lines[at] = line[:m.start()] + rng.choice(NUMBERS) + line[m.end():]
        elif kind == "operands":
            names = re.findall(r"%[\w#]+", line.split(" = ", 1)[-1])
            if len(set(names)) < 2:
                continue
            a, b = rng.sample(sorted(set(names)), 2)
            lines[at] = line.replace(a, "\0").replace(b, a).replace("\0", b)
        elif kind == "attr_drop":
            attrs = list(re.finditer(r"(?:, )?\b[a-z_]+ = [^,{}]+(?=[,}])", line))
            if not attrs:
                continue
            m = rng.choice(attrs)
            lines[at] = line[:m.start()] + line[m.end():]
        else:  # move an op one line up or down: uses before definitions, ops out of their region
            other = min(max(at + rng.choice([-2, -1, 1, 2]), 0), len(lines) - 1)
            lines[at], lines[other] = lines[other], lines[at]
        done.append(f"{kind}@{at + 1}")
    return "\n".join(lines), done


def _draw(seed: int) -> dict:
    rng = random.Random(seed)
    path = rng.choice(INPUTS)
    text = path.read_text()
    own = _pipelines_of(text)
    pipeline = rng.choice(own) if own and rng.random() < 0.6 else rng.choice(PIPELINES)
    mutant, mutations = _mutate(text, rng)
    return {"input": str(path.relative_to(LIT_ROOT)), "pipeline": pipeline, "mutations": mutations,
            "ir": mutant}


@pytest.fixture(scope="module")
def tile_opt_worker():
    worker = Worker("test_fuzz_ir_passes")
    yield worker
    worker.close()


def test_there_are_inputs_with_pass_pipelines():
    own = {p.name: _pipelines_of(p.read_text()) for p in INPUTS}
    assert sum(1 for pipelines in own.values() if pipelines) >= 15, own
    assert own["lower-tile-ops.mlir"] == ["lower-tile-ops", "lower-tile-ops"] and not own["ops.mlir"]


@pytest.mark.parametrize("seed", fuzz_seeds("ir_passes", 100))
def test_mutated_ir_through_the_passes_ends_in_ir_or_located_errors(tile_opt_worker, seed):
    case = _draw(seed)
    reply = tile_opt_worker.ask(case)
    data = case["ir"].encode()
    first_error = next((ln for ln in reply.get("stderr", "").splitlines() if ": error: " in ln), "")
    print(f"seed {seed}: {case['input']} {case['mutations']} -p {case['pipeline'][:40]}: {reply.get('status')} "
          f"{first_error[:200]}")
    assert "status" in reply, f"seed {seed}: {case['input']} {case['mutations']} -p {case['pipeline']}: {reply}"
    try:
        robustness.check_outcome(reply["status"], reply["stderr"], data)
        # MLIR's verifier after a pass quotes the op it rejects: on input that parses and verifies, a pass
        # of ours made invalid IR.
        assert not reply["verifies"] or "note: see current operation" not in reply["stderr"], \
            f"a pass produced IR that does not verify\nstderr was:\n{reply['stderr'][:6000]}"
    except AssertionError as err:
        raise AssertionError(f"seed {seed}: {case['input']} mutated {case['mutations']}, -p {case['pipeline']}\n"
                             f"{err}") from None


def serve() -> None:
    """The worker: tile-opt in-process (robustness.run_in_process, with its time limit) on each case."""
    for line in sys.stdin:
        case = json.loads(line)
        data = case["ir"].encode()
        try:
            verifies = robustness.run_in_process(data, ["--split-input-file"])[0] == 0
            status, stderr = robustness.run_in_process(data, ["--split-input-file", "-p", case["pipeline"]])
        except TimeoutError as exc:
            verifies, status, stderr = False, 3, f"timeout: {exc}"
        sys.stdout.write(json.dumps({"status": status, "stderr": stderr, "verifies": verifies}) + "\n")
        sys.stdout.flush()
