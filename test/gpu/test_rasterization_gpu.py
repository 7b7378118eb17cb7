"""T.use_swizzle on the GPU: rasterized_gemm.py's matmul (examples/gemm.py's body plus the remap) in row and column
order with ragged last panels and ragged M, on tensor cores: every C tile is written (outputs start poisoned) and
matches float64; the CUDA source holds the remap. Cases: example_cases.RASTER_CASES (compiled here, or their
artifacts from build_artifacts.py on the GPU machine). Skipped without a GPU."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from example_cases import RASTER_CASES, kernel_for  # noqa: E402
from test_examples_gpu import check_example  # noqa: E402


@pytest.mark.parametrize("case", RASTER_CASES, ids=lambda c: c.name)
def test_rasterized_gemm_on_gpu(case):
    source = kernel_for(case).cuda_source()
    assert "bx + by * 17;" in source  # the launched block's id, which the remap starts from (17 block columns)
    check_example(case, case.rows)
