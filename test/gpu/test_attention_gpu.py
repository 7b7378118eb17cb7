"""examples/flash_attention.py on the GPU against torch's F.scaled_dot_product_attention.

Per case (attention_cases.py: mma.sync and wgmma builds, head dims 64 and 128, causal, grouped-query) and
sequence length (one block, ragged lengths, several thousand): fresh `randn` bf16 inputs (seed printed), the
outputs filled with NaN bytes first, O compared with SDPA's math backend on the same inputs in float32 and
the log-sum-exp with a float64 one, by relative norm error. Skipped without a GPU."""

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from attention_cases import ATTENTION_CASES, ATTENTION_CASES_BY_NAME, attention_kernel  # noqa: E402

OUTPUT_BOUND = 1e-2  # bf16 P and O: about 2e-3 in the CPU runs
LSE_BOUND = 1e-5


def caller_outputs(kernel):
    from tilemlir.runtime.kernel import CompiledKernel

    signature = dataclasses.replace(kernel.signature, out_idx=())
    return CompiledKernel(signature, kernel.cuda_source(), kernel.cubin, kernel.options)


def relative_error(got, want) -> float:
    got = got.double()
    assert torch.isfinite(got).all(), "output has unwritten (NaN) or non-finite elements"
    return float(torch.linalg.norm(got - want.double()) / torch.linalg.norm(want.double()))


def references(q, k, v, causal):
    """SDPA (math backend, float32) output and the float64 log-sum-exp of the scaled scores."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    with sdpa_kernel(SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    scores = q.double() @ k.double().transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        seq = q.shape[2]
        scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return out, torch.logsumexp(scores, dim=-1)


@pytest.mark.parametrize("seq", [1, 100, 128, 1000, 4096])
@pytest.mark.parametrize("name", [case.name for case in ATTENTION_CASES])
def test_matches_sdpa(name, seq):
    params = ATTENTION_CASES_BY_NAME[name].params
    kernel = caller_outputs(attention_kernel(name))
    batch, heads, dim = params["batch"], params["heads"], params["dim"]
    kv_heads = params.get("kv_heads") or heads
    seed = int(np.random.SeedSequence().entropy % 2**31)
    print(f"seed {seed}")
    generator = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(batch, heads, seq, dim, generator=generator, device="cuda").to(torch.bfloat16)
    k, v = (torch.randn(batch, kv_heads, seq, dim, generator=generator, device="cuda").to(torch.bfloat16)
            for _ in range(2))
    out = torch.empty_like(q)
    lse = torch.empty(batch, heads, seq, dtype=torch.float32, device="cuda")
    for poisoned in (out, lse):
        poisoned.view(torch.uint8).fill_(0xFF)
    kernel(q, k, v, out, lse)
    torch.cuda.synchronize()
    want_out, want_lse = references(q, k, v, params.get("causal", False))
    assert relative_error(out, want_out) <= OUTPUT_BOUND
    assert relative_error(lse, want_lse) <= LSE_BOUND
