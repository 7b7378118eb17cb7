"""Kernels inside torch.compile and CUDA graphs on the GPU (tilemlir.runtime.torch_ops), MLIR-free: the
kernels are examples/rmsnorm.py and examples/elementwise_add.py, loaded from their artifacts
(`python test/gpu/build_artifacts.py rmsnorm_4096 add_f16` where the compiler is) or compiled here.

- a compiled model function calling a kernel is one graph (no break) and gives what eager gives, on the
  eager, aot_eager and inductor backends, and with inductor's CUDA graphs (mode="reduce-overhead");
- a launch captured in `torch.cuda.graph` (on torch's side capture stream: the launch must go on the
  current stream, with no host sync) replays on new inputs copied into the static buffers, an allocated
  output and a caller's output (poisoned before every replay) alike, also when the captured call is the
  kernel's very first launch (the module loads inside the capture).

Fresh random inputs every run; float64 references by relative error; bit-exact where the math is the same.
Skipped without torch or a CUDA device.
"""

import dataclasses

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from example_cases import CASES_BY_NAME, kernel_for  # noqa: E402
from tilemlir.runtime.kernel import CompiledKernel  # noqa: E402
from tilemlir.testing import relative_error  # noqa: E402

EPS = 1e-6
N = 4096


@pytest.fixture(scope="module")
def rmsnorm():
    return kernel_for(CASES_BY_NAME["rmsnorm_4096"])


@pytest.fixture(scope="module")
def add():
    return kernel_for(CASES_BY_NAME["add_f16"])


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def rmsnorm_inputs(rows):
    x = torch.randn(rows, N, device="cuda", dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(N, device="cuda")).to(torch.bfloat16)
    return x, w


def rmsnorm_reference(x, w):
    x, w = x.double(), w.double()
    return x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + EPS) * w


def caller_outputs(kernel):
    """The same cubin and checks with the output passed by the caller (who can poison it): Y is then a
    tensor the kernel writes, a mutated argument of its op."""
    kernel = getattr(kernel, "compiled", kernel)  # the runtime kernel of a tilemlir.Kernel compiled here
    signature = dataclasses.replace(kernel.signature, out_idx=())
    return CompiledKernel(signature, kernel.cuda_source(), kernel.cubin, kernel.options)


def fresh(kernel):
    """A new CompiledKernel of the same cubin: no module loaded, no fast path, never launched."""
    kernel = getattr(kernel, "compiled", kernel)
    return CompiledKernel(kernel.signature, kernel.cuda_source(), kernel.cubin, kernel.options)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_compiled_model_calling_a_kernel_is_one_graph_and_matches_eager(rmsnorm, add, backend):
    def model(x, w, bias):
        h = rmsnorm(x * 2, w, EPS)
        return add(h.reshape(-1).half(), bias).float().reshape(x.shape) * 0.5

    x, w = rmsnorm_inputs(37)
    bias = torch.randn(37 * N, device="cuda", dtype=torch.float16)
    explained = torch._dynamo.explain(model)(x, w, bias)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    for rows in (37, 37, 5):  # the second call runs the compiled graph again; 5 rows recompiles (or is dynamic)
        x, w = rmsnorm_inputs(rows)
        bias = torch.randn(rows * N, device="cuda", dtype=torch.float16)
        got = compiled(x, w, bias)
        assert torch.equal(got, model(x, w, bias))
        reference = (rmsnorm_reference(x * 2, w).reshape(-1) + bias.double()).reshape(x.shape) * 0.5
        assert relative_error(got, reference) < 1e-2


def test_a_compiled_in_place_kernel_keeps_its_writes(rmsnorm):
    kernel = caller_outputs(rmsnorm)
    assert "Tensor(a0!) Y" in str(kernel.as_torch_op()._schema)

    def step(x, w, y):
        kernel(x + 1, w, y, EPS)
        return y.float() * 3

    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    x, w = rmsnorm_inputs(64)
    y = torch.full((64, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    got = compiled(x, w, y)
    expected = torch.empty_like(y)
    kernel(x + 1, w, expected, EPS)
    assert torch.equal(y, expected)  # the caller's tensor holds the kernel's output, as in eager
    assert torch.equal(got, expected.float() * 3)
    assert relative_error(y, rmsnorm_reference(x + 1, w)) < 1e-2


def test_inductor_cuda_graphs_replay_the_kernel(rmsnorm):
    counters = torch._dynamo.utils.counters
    counters.clear()
    compiled = torch.compile(lambda x, w: rmsnorm(torch.relu(x), w, EPS) + 1, mode="reduce-overhead",
                             fullgraph=True)
    for _ in range(4):  # inductor records its CUDA graph after warm-up calls, then replays it
        x, w = rmsnorm_inputs(128)
        got = compiled(x, w).clone()  # the graph's output buffer is reused by the next replay
        assert torch.equal(got, rmsnorm(torch.relu(x), w, EPS) + 1)
        assert relative_error(got, rmsnorm_reference(torch.relu(x), w) + 1) < 1e-2
    assert not counters["inductor"]["cudagraph_skips"]  # the op did not keep inductor from its CUDA graph


def warm_up(call):
    """PyTorch's recipe before a capture: run on a side stream (the first launch loads the module and builds
    the fast path), then join the current stream."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)


@pytest.mark.parametrize("warm", [True, False], ids=["warmed-up", "first-launch-in-capture"])
def test_a_captured_launch_replays_on_new_inputs(rmsnorm, warm):
    kernel = fresh(rmsnorm)
    static_x, static_w = rmsnorm_inputs(256)
    if warm:
        warm_up(lambda: kernel(static_x, static_w, EPS))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = kernel(static_x, static_w, EPS)  # allocated from the graph's private pool
    for _ in range(3):
        x, w = rmsnorm_inputs(256)
        static_x.copy_(x)
        static_w.copy_(w)
        static_y.view(torch.int16).fill_(-1)  # NaN bytes: an element the replay does not write shows
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(static_y, rmsnorm(x, w, EPS))
        assert relative_error(static_y, rmsnorm_reference(x, w)) < 1e-2


def test_a_captured_launch_into_a_callers_buffer_replays(add):
    kernel = caller_outputs(add)
    n = 1_000_003
    a, b = (torch.randn(n, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(n, device="cuda", dtype=torch.float16)
    warm_up(lambda: kernel(a, b, c))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(a, b, c)
        kernel(c, b, a)  # two launches, the second reading the first's output: a = (a + b) + b
    for _ in range(3):
        x, y = (torch.randn(n, device="cuda", dtype=torch.float16) for _ in range(2))
        a.copy_(x)
        b.copy_(y)
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(c, x + y)  # one fp16 addition, rounded once, as torch's
        assert torch.equal(a, (x + y) + y)


def test_a_compiled_function_captured_in_a_cuda_graph(rmsnorm):
    compiled = torch.compile(lambda x, w: rmsnorm(x, w, EPS) * 2, fullgraph=True, backend="aot_eager")
    static_x, static_w = rmsnorm_inputs(100)
    warm_up(lambda: compiled(static_x, static_w))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = compiled(static_x, static_w)
    x, w = rmsnorm_inputs(100)
    static_x.copy_(x)
    static_w.copy_(w)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(static_out, rmsnorm(x, w, EPS) * 2)
