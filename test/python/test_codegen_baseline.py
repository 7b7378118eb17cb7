"""The codegen baseline of issue 14 (benchmarks/codegen_baseline.py, benchmarks/codegen_baseline.json).

Every benchmark build and every example is compiled here (NVRTC, no GPU) and
its speed metrics (vector accesses, guards, registers, spills, shared bytes)
must equal the checked-in baseline's: a worse one is a regression, a better
one a stale baseline, and both fail with the diff and the update command. The
generated CUDA's text is not compared (a kernel file's edit moves its line
comments); --check-identical does that. Also: the comparison's verdicts, the
file format, the line-comment stripping, and the command's modes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import codegen_baseline as cb  # noqa: E402

BUILDS = cb.all_builds()
SMALL = next(b for b in BUILDS if b.id == "examples/elementwise_add")


@pytest.fixture(scope="module")
def baseline():
    return cb.load()


@pytest.fixture(scope="module")
def toolchain():
    pytest.importorskip("cuda.bindings.nvrtc")
    return cb.toolchain()


def _nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")


# -- the baseline against this tree --------------------------------------------------------------
def test_the_baseline_holds_exactly_the_builds(baseline):
    comparison = cb.compare_all(baseline["builds"], {b.id: {} for b in BUILDS})
    assert not comparison.missing and not comparison.extra, \
        cb.describe(comparison) + "\n" + cb.advice(comparison, cb.BASELINE)


def test_every_registry_kernel_and_example_has_a_build():
    ids = {b.id for b in BUILDS}
    examples = {f"examples/{p.stem}" for p in cb.EXAMPLES.glob("*.py")} - {"examples/harness"}
    assert {i.split("/")[0] for i in ids} == set(cb.REGISTRY) | {"examples"}
    assert {i for i in ids if i.startswith("examples/")} == examples and "examples/softmax" in examples
    # rows stay symbolic: the four row shapes are four column counts, softmax's long row a fifth
    assert sorted(i for i in ids if i.startswith("softmax_bf16/")) == [
        f"softmax_bf16/N={n},dtype=bfloat16" for n in ("4096", "576", "65536", "7168", "8192")]
    assert len(ids) == len(BUILDS) == 8 + 2 * 5 + 9 * 4 + len(examples)


@pytest.mark.parametrize("build", BUILDS, ids=[b.id for b in BUILDS])
def test_build_has_the_baseline_speed_metrics(build, baseline, toolchain):
    measured = cb.measure(build).metrics
    comparison = cb.compare_all(baseline["builds"], {build.id: measured}, complete=False)
    if not comparison.ok:
        pytest.fail(cb.describe(comparison, (baseline.get("toolchain"), toolchain)) + "\n"
                    + cb.advice(comparison, cb.BASELINE), pytrace=False)


def test_a_worse_or_better_build_fails_with_its_diff(toolchain):
    measured = cb.measure(SMALL).metrics
    assert measured["ir_loads"].get("16B", 0) > 0 and measured["registers"] > 0
    worse = {**measured, "registers": measured["registers"] - 1,
             "ir_loads": {**measured["ir_loads"], "16B": measured["ir_loads"]["16B"] + 1}}
    comparison = cb.compare_all({SMALL.id: worse}, {SMALL.id: measured}, complete=False)
    text = cb.describe(comparison)
    assert not comparison.ok and "examples/elementwise_add: REGRESSION" in text
    assert f"registers: {measured['registers'] - 1} -> {measured['registers']} (worse)" in text
    assert "ir_loads:" in text and cb.UPDATE_COMMAND in cb.advice(comparison, cb.BASELINE)
    better = {**measured, "guards": measured["guards"] + 1}
    comparison = cb.compare_all({SMALL.id: better}, {SMALL.id: measured}, complete=False)
    assert list(comparison.changed) == [SMALL.id]
    assert "REGRESSION" not in cb.describe(comparison) and "(better)" in cb.describe(comparison)
    assert cb.advice(comparison, cb.BASELINE).startswith("The baseline is stale")


# -- verdicts ------------------------------------------------------------------------------------
METRICS = {"guards": 2, "ir_loads": {"16B": 4, "2B": 3}, "ir_stores": {"16B": 2}, "ir_atomics": 0,
           "sass_loads": {"16B": 8}, "sass_stores": {"16B": 4}, "registers": 40, "local_instructions": 0,
           "local_bytes": 0, "stack_bytes": 0, "dynamic_shared_bytes": 64, "static_shared_bytes": 0,
           "cuda_sha256": "ab"}


def _verdicts(**changed) -> dict[str, str]:
    return {c.metric: c.verdict for c in cb.compare(METRICS, {**METRICS, **changed})}


@pytest.mark.parametrize("metric", ["guards", "registers", "local_instructions", "local_bytes", "stack_bytes",
                                    "dynamic_shared_bytes", "static_shared_bytes", "ir_atomics"])
def test_more_of_a_cost_is_worse_and_less_better(metric):
    assert _verdicts(**{metric: METRICS[metric] + 8}) == {metric: "worse"}
    if METRICS[metric]:
        assert _verdicts(**{metric: METRICS[metric] - 1}) == {metric: "better"}


@pytest.mark.parametrize("old, new, verdict", [
    ({"16B": 4}, {"4B": 16}, "worse"),  # the same bytes in scalar accesses: a vector access lost
    ({"16B": 4}, {"16B": 3, "8B": 2}, "worse"),  # one narrowed
    ({"16B": 4}, {"16B": 4, "2B": 14}, "worse"),  # a new tail of scalar accesses
    ({"16B": 4, "8B": 1}, {"16B": 5, "2B": 1}, "worse"),  # a larger share at >= 16B, a smaller at >= 8B
    ({"4B": 8}, {"16B": 2}, "better"),  # widened
    ({"16B": 2, "8B": 2}, {"16B": 3}, "better"),
    ({"16B": 4, "2B": 14}, {"16B": 4}, "better"),  # the scalar tail gone
    ({"16B": 4}, {"16B": 3}, "changed"),  # one access fewer, all as wide
    ({}, {"16B": 1}, "changed"),
])
def test_access_widths_compare_the_share_of_bytes_at_least_each_width(old, new, verdict):
    assert cb.width_verdict(old, new) == verdict
    assert _verdicts(ir_stores=old) == {"ir_stores": cb.width_verdict(METRICS["ir_stores"], old)}


def test_symbolic_shared_missing_metrics_and_text_alone():
    assert _verdicts(dynamic_shared_bytes="4 * N") == {"dynamic_shared_bytes": "changed"}
    assert {c.metric: (c.before, c.after) for c in cb.compare(METRICS, {})}["registers"] == (40, None)
    assert cb.compare(METRICS, {**METRICS, "cuda_sha256": "cd"}) == []
    comparison = cb.compare_all({"a": METRICS, "b": METRICS}, {"a": {**METRICS, "cuda_sha256": "cd"}, "c": METRICS})
    assert comparison.changed == {} and comparison.text_changed == ["a"]
    assert comparison.missing == ["c"] and comparison.extra == ["b"] and not comparison.ok
    assert cb.compare_all({"a": METRICS, "b": METRICS}, {"a": METRICS}, complete=False).ok


def test_describe_lists_each_change_and_the_toolchain():
    comparison = cb.compare_all({"k": METRICS}, {"k": {**METRICS, "registers": 48, "ir_loads": {"4B": 16, "2B": 3}}})
    text = cb.describe(comparison, ({"nvrtc": "13.5"}, {"nvrtc": "13.6"}))
    assert text.splitlines()[:3] == ["k: REGRESSION", "  ir_loads: {16B: 4, 2B: 3} -> {4B: 16, 2B: 3} (worse)",
                                     "  registers: 40 -> 48 (worse)"]
    assert "made with {nvrtc: 13.5}, this run uses {nvrtc: 13.6}" in text


# -- the file and the source text ----------------------------------------------------------------
def test_the_file_is_sorted_one_metric_a_line_and_round_trips():
    text = cb.dump({"b": {**METRICS, "registers": 1}, "a": dict(reversed(METRICS.items()))}, {"arch": "sm_90a"})
    data = json.loads(text)
    assert list(data["builds"]) == ["a", "b"] and list(data["builds"]["a"]) == list(METRICS)
    assert data["builds"]["a"] == METRICS and data["toolchain"] == {"arch": "sm_90a"}
    assert '      "ir_loads": {"16B": 4, "2B": 3},\n' in text and '"ir_atomics": 0,\n' in text


def test_load_rejects_a_missing_or_broken_file(tmp_path):
    with pytest.raises(cb.BaselineError, match="no baseline .*--update"):
        cb.load(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(cb.BaselineError, match="is not JSON"):
        cb.load(tmp_path / "bad.json")
    (tmp_path / "old.json").write_text("{}")
    with pytest.raises(cb.BaselineError, match='no "builds" object'):
        cb.load(tmp_path / "old.json")


KERNEL = '''import tilemlir
import tilemlir.language as T


@tilemlir.jit
def scale(N=1024):{gap}
    @T.prim_func
    def scale_kernel(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32), Z: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 256), threads=128) as bx:{gap}
            for i in T.Parallel(256):
                Y[bx * 256 + i] = X[bx * 256 + i] * 2.0{gap}
                Z[bx * 256 + i] = X[bx * 256 + i] + 1.0

    return scale_kernel
'''


def test_moving_kernel_lines_leaves_the_stripped_source_alone(tmp_path):
    _nvrtc()
    import tilemlir

    sources = []
    for name, gap in (("near", ""), ("far", "\n\n        # a comment\n")):
        path = tmp_path / f"{name}.py"
        path.write_text(KERNEL.replace("{gap}", gap))
        kernel = tilemlir.compile(cb.example_kernel(path), target="cuda", use_cache=False)
        sources.append(kernel.cuda_source().replace(f"{name}.py", "kernel.py"))
    assert sources[0] != sources[1] and "// kernel.py:" in sources[0]
    stripped = [cb.strip_line_comments(s) for s in sources]
    assert stripped[0] == stripped[1] and "kernel.py:" not in stripped[0]
    assert "generated by tilemlir from kernel.py\n" in stripped[0] and "\n\n" not in stripped[0]


def test_an_example_defines_one_jit_function(tmp_path):
    path = tmp_path / "two.py"
    path.write_text(KERNEL.replace("{gap}", "") + KERNEL.replace("{gap}", "").replace("def scale(", "def other("))
    with pytest.raises(cb.BaselineError, match="two.py: an example defines one @tilemlir.jit function, this one 2"):
        cb.example_kernel(path)


# -- the command ---------------------------------------------------------------------------------
def test_update_check_identical_and_dump_on_one_build(tmp_path, capsys):
    _nvrtc()
    path = tmp_path / "baseline.json"
    one = ["--builds", SMALL.id, "--baseline", str(path)]
    assert cb.main([*one, "--update"]) == 0
    assert list(cb.load(path)["builds"]) == [SMALL.id]
    assert cb.main(one) == 0 and cb.main([*one, "--check-identical"]) == 0
    data = cb.load(path)
    data["builds"][SMALL.id]["registers"] -= 1
    data["builds"][SMALL.id]["cuda_sha256"] = "0" * 64
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert cb.main(one) == 1
    out = capsys.readouterr().out
    assert f"{SMALL.id}: REGRESSION" in out and "(worse)" in out and cb.UPDATE_COMMAND in out
    assert cb.main([*one, "--check-identical"]) == 1
    assert f"{SMALL.id}: CUDA differs" in capsys.readouterr().out
    assert cb.main(["--builds", SMALL.id, "--dump-sources", str(tmp_path / "src")]) == 0
    dumped = (tmp_path / "src" / "examples" / "elementwise_add.cu").read_text()
    assert "__global__" in dumped and "elementwise_add.py:" not in dumped


def test_unknown_builds_and_a_missing_baseline_are_errors(tmp_path, capsys):
    assert cb.main(["--builds", "softmaxx*"]) == 2
    assert "no build matches softmaxx*" in capsys.readouterr().err
    assert cb.main(["--builds", "softmax_bf16/*", "--list"]) == 0
    assert len(capsys.readouterr().out.split()) == 5
    assert cb.main(["--baseline", str(tmp_path / "none.json")]) == 2
    assert "no baseline" in capsys.readouterr().err


def test_dumping_into_a_used_directory_and_mixing_toolchains_are_errors(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "old.cu").write_text("")
    assert cb.main(["--builds", SMALL.id, "--dump-sources", str(tmp_path / "src")]) == 2
    assert "is not empty" in capsys.readouterr().err
    _nvrtc()
    path = tmp_path / "baseline.json"
    path.write_text(cb.dump({"other": METRICS}, {"arch": "sm_90a", "nvrtc": "12.0"}))
    assert cb.main(["--builds", SMALL.id, "--baseline", str(path), "--update"]) == 2
    assert "not a mix of toolchains" in capsys.readouterr().err
    assert list(cb.load(path)["builds"]) == ["other"]
