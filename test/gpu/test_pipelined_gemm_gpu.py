"""The pipelined mma.sync gemm on the GPU: examples/gemm.py's matmul (tensor_cores="mma_sync") in
T.Pipelined(num_stages=1..4) rings of cp.async copies with ragged M and K (zero fill by src_bytes), and a ring
of 128 KiB of shared memory (past 48 KiB: the runtime raises the kernel's limit at load). Cases:
example_cases.PIPELINE_CASES (compiled here, or their artifacts from build_artifacts.py on the GPU machine).
Fresh random inputs, poisoned outputs, float64 references. Skipped without a GPU.
"""

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from example_cases import PIPELINE_CASES, kernel_for  # noqa: E402
from test_examples_gpu import check_example  # noqa: E402


@pytest.mark.parametrize("case", PIPELINE_CASES, ids=lambda c: c.name)
def test_pipelined_gemm_on_gpu(case):
    source = kernel_for(case).cuda_source()
    if case.params["num_stages"] > 1:
        assert f"tl_cp_async_wait<{case.params['num_stages'] - 2}>();" in source
    if case.name.endswith("shared128k"):
        assert "131072 bytes of dynamic shared memory" in source
    check_example(case, case.rows)
