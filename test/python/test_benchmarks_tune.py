"""benchmarks/tune.py without a GPU: the spaces, `build` into artifact directories, and the GPU half
(`tune_problem`) on those artifacts with a stand-in launch (the config's CPU-backend twin) and clock,
in a process that must not load the compiler."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import tune  # noqa: E402

# max_chunks 4 gives max_chunks 2's kernel at this width (one warp per row either way)
SMALL = tune.Problem("softmax", (64, 256), ({"max_chunks": 2}, {"max_chunks": 0}, {"max_chunks": 2, "min_blocks": 4},
                                            {"max_chunks": 4}))


def test_the_gemm_space_crosses_tiles_stages_and_threads():
    assert len(tune.GEMM_SPACE) == 28 >= 24
    assert {(c["block_M"], c["block_N"], c["block_K"]) for c in tune.GEMM_SPACE} == set(tune.GEMM_TILES)
    assert {c["num_stages"] for c in tune.GEMM_SPACE} == {2, 3}
    assert {c["threads"] for c in tune.GEMM_SPACE} == {128, 256}
    assert len({json.dumps(c, sort_keys=True) for c in tune.GEMM_SPACE}) == 28


def test_problems_by_family_and_shape():
    names = [p.name for p in tune.problems()]
    assert names[0] == "gemm_fp16_4096x4096x4096" and "softmax_bf16_8192x8192" in names
    assert "rmsnorm_bf16_4001x7168" in names and len(names) == 1 + 2 * 4
    assert [p.name for p in tune.problems(["rmsnorm"], ["128x512"])] == ["rmsnorm_bf16_128x512"]
    assert len(tune.problems(["softmax"])[0].space) == 15
    with pytest.raises(ValueError, match="unknown problem.s. conv; known: gemm, softmax, rmsnorm"):
        tune.problems(["conv"])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("tune")
    assert tune.build([SMALL], root, workers=1) == 0
    return root / SMALL.name


def test_build_exports_each_config_and_records_failures(built):
    space = json.loads((built / tune.SPACE_FILE).read_text())
    assert space["fixed"] == {"N": 256, "dtype": "bfloat16"} and space["arch"] == "sm_90a"
    good, bad, capped, same = space["configs"]
    assert good["dir"] == "00" and (built / "00" / "signature.json").is_file()
    assert bad["config"] == {"max_chunks": 0} and "max_chunks must be a positive int, got 0" in bad["error"]
    assert capped["dir"] == "02" and capped["cuda_sha256"] != good["cuda_sha256"]  # min_blocks changes the kernel
    assert (same["dir"], same["cuda_sha256"]) == ("00", good["cuda_sha256"]) and not (built / "03").exists()


def softmax_reference(x):
    e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class CpuTwin:
    """Launches a config's CPU-backend twin; the clock gives max_chunks=2 with min_blocks 10 us, else 20 us."""

    def __init__(self):
        self.last = None

    def run(self, kernel, args, config):
        import tilemlir
        from tilemlir.kernels.softmax import softmax

        self.last = config
        return tilemlir.compile(softmax.instantiate(N=256, dtype="bfloat16", **config), target="cpu")(*args)

    def bench(self, fn):
        fn()
        return 0.010 if self.last.get("min_blocks") else 0.020


def test_the_gpu_half_picks_the_fastest_correct_artifact(built, rng):
    x = rng.standard_normal((64, 256)).astype(ml_dtypes.bfloat16)
    twin = CpuTwin()
    result = tune.tune_problem(built, (x,), [softmax_reference(x)], twin.bench, rounds=2, run=twin.run)
    assert (result["best"], result["ms"]) == ({"max_chunks": 2, "min_blocks": 4}, 0.010)
    stages = [(t["config"], t["stage"]) for t in result["trials"]]
    assert stages == [({"max_chunks": 2}, None), ({"max_chunks": 0}, "compile"),
                      ({"max_chunks": 2, "min_blocks": 4}, None), ({"max_chunks": 4}, None)]
    assert (result["trials"][3]["same_as"], result["trials"][3]["ms"]) == ({"max_chunks": 2}, 0.020)
    text = tune.markdown([result])
    assert "best: max_chunks=2, min_blocks=4: 10.0 us" in text and "| max_chunks=0 | — | compile failed:" in text


def test_a_wrong_artifact_fails_its_check(built, rng):
    x = rng.standard_normal((64, 256)).astype(ml_dtypes.bfloat16)
    twin = CpuTwin()
    wrong = softmax_reference(x)
    wrong[:, 0] += 0.5
    result = tune.tune_problem(built, (x,), [wrong], twin.bench, run=twin.run)
    assert result["best"] is None
    assert "relative error" in result["trials"][0]["error"] and "above 8e-03 (bfloat16)" in result["trials"][0]["error"]


GPU_HALF = """
import json, sys
sys.path.insert(0, {repo!r})
import numpy as np, ml_dtypes
from benchmarks import tune
from tilemlir.runtime.signature import TensorParam

def run(kernel, args, config):
    assert isinstance(kernel.signature.params[0], TensorParam)
    x = args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(ml_dtypes.bfloat16)

x = np.random.default_rng().standard_normal((64, 256)).astype(ml_dtypes.bfloat16)
e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=1, keepdims=True))
result = tune.tune_problem(__import__("pathlib").Path({directory!r}), (x,), [e / e.sum(axis=1, keepdims=True)],
                           lambda fn: (fn(), 1.0)[1], run=run)
loaded = sorted(m for m in sys.modules if m == "torch_mlir" or m.startswith(("torch_mlir.", "tilemlir.mlir",
                                                                              "tilemlir.frontend.builder")))
print(json.dumps({{"best": result["best"], "compiler": loaded}}))
"""


def test_the_gpu_half_loads_no_compiler(built):
    code = textwrap.dedent(GPU_HALF.format(repo=str(REPO), directory=str(built)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"best": {"max_chunks": 2}, "compiler": []}
