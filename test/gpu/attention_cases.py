"""The FlashAttention kernels (examples/flash_attention.py) test_attention_gpu.py runs, by name: compiled here
(with the compiler) or loaded from test/gpu/artifacts/<name>/, which build_artifacts.py exports. The sequence
length is symbolic, so one artifact serves every length; batch and heads are compile-time."""

from example_cases import ExampleCase, kernel_for

_SM90 = {"arch": "sm_90a"}
_MMA = {**_SM90, "tensor_cores": "mma_sync"}  # both gemms on mma.sync (P V reads P from registers)
_WGMMA = {**_SM90, "tensor_cores": "wgmma"}  # S = Q K^T on wgmma, P V on mma.sync
_BLOCK_128x64 = {"block_M": 128, "block_N": 64, "threads": 256}
_BLOCK_128x128 = {"block_M": 128, "block_N": 128, "threads": 256}


def _case(name, options, **params):
    return ExampleCase(name, "flash_attention", "flash_attention", params, options=options)


ATTENTION_CASES = (
    _case("fa_d128", _MMA, batch=2, heads=4, dim=128, **_BLOCK_128x64),
    _case("fa_d128_causal", _MMA, batch=2, heads=4, dim=128, causal=True, **_BLOCK_128x64),
    _case("fa_d64_gqa_causal", _MMA, batch=2, heads=8, kv_heads=2, dim=64, causal=True, **_BLOCK_128x64),
    _case("fa_d64_64x64", _MMA, batch=1, heads=4, dim=64, block_M=64, block_N=64, threads=128),
    _case("fa_wgmma_d128", _WGMMA, batch=2, heads=4, dim=128, **_BLOCK_128x128),
    _case("fa_wgmma_d128_gqa_causal", _WGMMA, batch=2, heads=8, kv_heads=2, dim=128, causal=True,
          **_BLOCK_128x128),
)
ATTENTION_CASES_BY_NAME = {case.name: case for case in ATTENTION_CASES}
# what each kernel's CUDA must call: P V from P's registers on mma.sync, and S = Q K^T on its instruction
MARKERS = {case.name: ("tl_mma_m16n8k16_f32_bf16a(",
                       "tl_wgmma_m64n" if case.options["tensor_cores"] == "wgmma" else "tl_mma_m16n8k16_f32_bf16(")
           for case in ATTENTION_CASES}


def attention_kernel(name: str):
    kernel = kernel_for(ATTENTION_CASES_BY_NAME[name])
    source = kernel.cuda_source()
    for marker in MARKERS[name]:
        assert marker in source, f"{name}'s CUDA does not call {marker}"
    return kernel
