"""Compiled kernels as torch custom ops (tilemlir.runtime.torch_ops): a kernel called inside a
`torch.compile`d function is one op of the graph (no graph break), computing what the eager call does;
the fake implementation gives the outputs' shapes and dtypes from the signature and the kernel's own
argument errors. CPU-target kernels on torch CPU tensors; the GPU side is test/gpu/test_torch_compile_gpu.py.
Skipped where torch is not installed (it is no dependency)."""

import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.diagnostics import CompileError, LaunchError
from tilemlir.runtime import torch_ops
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam
from support import accumulate, scale_rows as scale

torch = pytest.importorskip("torch")
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402 - needs the skip above


@tilemlir.jit(out_idx=[1, 2])
def scale_and_shift():
    M = T.symbolic("M")

    @T.prim_func
    def both(X: T.Tensor((M, 64), "float32"), Y: T.Tensor((M, 64), "float32"), Z: T.Tensor((M, 64), "float16"),
             alpha: T.float32):
        with T.Kernel(M, threads=32) as row:
            y = T.alloc_fragment((64,), "float32")
            z = T.alloc_fragment((64,), "float32")
            T.copy(X[row, 0], y)
            for i in T.Parallel(64):
                z[i] = y[i] + alpha
                y[i] = y[i] * alpha
            T.copy(y, Y[row, 0])
            T.copy(z, Z[row, 0])

    return both


@tilemlir.jit(out_idx=[1], target="cpu")
def doubled(X: T.Tensor((16,), "float32"), Y: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=16) as _:
        for i in T.Parallel(16):
            Y[i] = X[i] * 2.0


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def cpu(factory, **values):
    return tilemlir.compile(factory.instantiate(**values), target="cpu")


def graphs_and_breaks(fn, *args):
    explained = torch._dynamo.explain(fn)(*args)
    return explained.graph_count, explained.graph_break_count, explained.graphs


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_compiled_function_calling_a_kernel_is_one_graph_and_equals_eager(backend):
    kernel = cpu(scale)

    def model(x):
        return kernel(x + 1, 2.5) * 3

    x = torch.randn(37, 64)
    count, breaks, graphs = graphs_and_breaks(model, x)
    assert (count, breaks) == (1, 0)
    assert f"torch.ops.tilemlir.{kernel.as_torch_op().name().split('::')[1].split('.')[0]}" in graphs[0].code
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    got = compiled(x)
    assert torch.equal(got, model(x))
    assert torch.equal(got, (x + 1) * 2.5 * 3)  # each fp32 operation rounded once, as torch does
    fresh = torch.randn(37, 64)
    assert torch.equal(compiled(fresh), (fresh + 1) * 2.5 * 3)


def test_inductor_compiles_around_the_op():
    kernel = cpu(scale)
    compiled = torch.compile(lambda x: kernel(torch.relu(x), 0.5) - 1, fullgraph=True, backend="inductor")
    x = torch.randn(9, 64)
    assert torch.equal(compiled(x), torch.relu(x) * 0.5 - 1)


def test_an_in_place_kernel_is_a_mutating_op_whose_writes_the_compiled_function_keeps():
    kernel = cpu(accumulate)
    assert "Tensor(a0!) Acc" in str(kernel.as_torch_op()._schema)
    assert "Tensor X" in str(kernel.as_torch_op()._schema)

    def step(x, acc):
        kernel(x * 2, acc)
        return acc + 1

    x, acc = torch.randn(100), torch.randn(100)
    expected_acc = acc + x * 2
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    before = x.clone()
    got = compiled(x, acc)
    assert torch.equal(acc, expected_acc)  # the input the kernel writes is updated, as in eager
    assert torch.equal(got, expected_acc + 1)
    assert torch.equal(x, before)  # a tensor the kernel only reads is untouched


def test_several_outputs_and_their_dtypes_propagate():
    kernel = cpu(scale_and_shift)
    x = torch.randn(11, 64)
    compiled = torch.compile(lambda x: kernel(x, 1.5), fullgraph=True, backend="aot_eager")
    y, z = compiled(x)
    assert y.dtype == torch.float32 and z.dtype == torch.float16
    assert torch.equal(y, x * 1.5) and torch.equal(z, (x + 1.5).to(torch.float16))


def test_fake_tensors_get_the_signatures_shapes_and_dtypes():
    op = cpu(scale_and_shift).as_torch_op()
    with FakeTensorMode():
        y, z = op(torch.empty(13, 64), 2.0)
    assert (tuple(y.shape), y.dtype, tuple(z.shape), z.dtype) == ((13, 64), torch.float32, (13, 64), torch.float16)
    y, z = op(torch.empty(5, 64, device="meta"), 2.0)  # meta tensors take the same path
    assert y.device.type == "meta" and tuple(z.shape) == (5, 64)


def test_a_dynamic_dim_compiles_once_for_every_size():
    kernel = cpu(scale)
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(lambda x: kernel(x, 3.0), backend=counter, dynamic=True, fullgraph=True)
    for rows in (3, 17, 40):
        x = torch.randn(rows, 64)
        assert torch.equal(compiled(x), x * 3.0)
    assert counter.frame_count == 1


def test_opcheck_finds_the_schema_and_the_fake_implementation_right():
    x = torch.randn(6, 64)
    torch.library.opcheck(cpu(scale).as_torch_op(), (x, 2.0))
    torch.library.opcheck(cpu(accumulate).as_torch_op(), (torch.randn(8), torch.randn(8)))
    torch.library.opcheck(cpu(scale_and_shift).as_torch_op(), (x, -1.0))


def test_a_jit_kernel_first_called_inside_the_compiled_function_compiles_outside_the_trace():
    x = torch.randn(16)
    count, breaks, _ = graphs_and_breaks(lambda x: doubled(x) + 1, x)
    assert (count, breaks) == (1, 0)
    assert torch.equal(torch.compile(lambda x: doubled(x) + 1, fullgraph=True, backend="aot_eager")(x), x * 2 + 1)


def test_a_factory_called_inside_the_compiled_function_returns_its_kernel():
    @tilemlir.jit(out_idx=[1], target="cpu")
    def scale_by(factor):
        @T.prim_func
        def scaled(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8) as _:
                for i in T.Parallel(8):
                    Y[i] = X[i] * factor

        return scaled

    x = torch.randn(8)
    compiled = torch.compile(lambda x: scale_by(4.0)(x) - scale_by(0.5)(x), fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x), x * 4.0 - x * 0.5)


def test_the_op_name_is_the_kernels_content():
    first, other = cpu(scale), cpu(scale, dtype="float16")
    again = tilemlir.jit(scale.instantiate().fn, out_idx=[1]).compile("cpu")  # a new JitFunction: compiled anew
    assert again is not first and again.compiled is not first.compiled
    name = first.as_torch_op().name()
    assert name.startswith("tilemlir::scaled_") and len(name.split("_")[-1]) == 16
    assert again.as_torch_op() is first.as_torch_op()  # the same kernel made twice: one op
    assert other.as_torch_op().name() != name


@pytest.mark.parametrize("call, message", [
    (lambda k, x, acc: k(x.double(), 2.0), "argument 'X': expected dtype float32, got float64"),
    (lambda k, x, acc: k(x[:, :32], 2.0), r"argument 'X': dim 1 must be 64, got 32"),
    (lambda k, x, acc: k(x.t(), 2.0), r"argument 'X': expected a C-contiguous array"),
    (lambda k, x, acc: k(x, 2.0, 3.0), r"kernel 'scaled' takes 2 argument\(s\) \(X, alpha\), got 3"),
    (lambda k, x, acc: acc(x[0], x[1, :32]), r"argument 'Acc': dim 0 is 32, but symbol M = 64"),
])
@pytest.mark.parametrize("fullgraph", [True, False])
def test_a_bad_call_inside_the_compiled_function_fails_its_trace_with_the_kernels_error(call, message, fullgraph):
    """The fake implementation runs the launch's checks: torch.compile stops with a RuntimeError whose
    message holds the kernel's LaunchError (fullgraph or not: a failing fake call is no graph break); a wrong
    argument count is a graph break, so without fullgraph the eager call raises the LaunchError itself."""
    kernel, accumulator = cpu(scale), cpu(accumulate)
    with pytest.raises((RuntimeError, LaunchError), match=message.replace("'", "\\\\?'")):
        torch.compile(lambda x: call(kernel, x, accumulator), fullgraph=fullgraph, backend="aot_eager")(
            torch.randn(64, 64))


def test_stream_is_refused_inside_the_compiled_function():
    kernel = cpu(scale)
    with pytest.raises(RuntimeError, match="stream= is not supported inside torch.compile"):
        torch.compile(lambda x: kernel(x, 1.0, stream=0), fullgraph=True, backend="eager")(torch.randn(2, 64))


def test_an_eager_kernel_inside_the_compiled_function_says_to_compile_it_first():
    @tilemlir.jit
    def add_one(X):
        M = T.const("M")
        X: T.Tensor((M,), "float32")
        Y = T.empty((M,), "float32")
        with T.Kernel(1, threads=M) as _:
            for i in T.Parallel(M):
                Y[i] = X[i] + 1.0
        return Y

    with pytest.raises((CompileError, RuntimeError), match=r"\\?'add_one\\?' is an eager kernel.*add_one.compile\(\.\.\.\)"):
        torch.compile(lambda x: add_one(x), fullgraph=True, backend="eager")(torch.randn(4))


# -- the schema and the fake implementation from a signature alone (no compiler) -------------------------
def signature(**changes):
    fields = dict(name="k", params=(TensorParam("X", "bfloat16", ("M", 8), written=False),
                                    TensorParam("Out", "float32", ("M", 8), written=True),
                                    TensorParam("Y", "float16", ("M",)), ScalarParam("eps", "float32"),
                                    ScalarParam("n", "uint32"), ScalarParam("flag", "bool")),
                  symbols=("M",), grid=("M", "1", "1"), block=(32, 1, 1),
                  cuda_params=("X", "Out", "Y", "eps", "n", "flag", "M"), out_idx=(2,))
    return KernelSignature(**{**fields, **changes})


def test_the_schema_reads_the_signature():
    assert torch_ops.schema(signature()) == ("(Tensor X, Tensor(a0!) Out, float eps, SymInt n, bool flag) -> Tensor")
    assert torch_ops.schema(signature(out_idx=())) == (
        "(Tensor X, Tensor(a0!) Out, Tensor(a1!) Y, float eps, SymInt n, bool flag) -> ()")
    assert torch_ops.schema(signature(out_idx=(1, 2))) == "(Tensor X, float eps, SymInt n, bool flag) -> (Tensor, Tensor)"


def test_the_fake_implementation_checks_like_the_launch_and_shapes_the_outputs():
    fake = torch_ops.AbstractOutputs(signature(assumes=("M % 2 == 0",)), "cpu")
    with FakeTensorMode():
        x, out = torch.empty(6, 8, dtype=torch.bfloat16), torch.empty(6, 8)
        y = fake(x, out, 1.0, 3, True)
        assert (tuple(y.shape), y.dtype) == ((6,), torch.float16)
        with pytest.raises(LaunchError, match="argument 'Out': dim 0 is 4, but symbol M = 6"):
            fake(x, torch.empty(4, 8), 1.0, 3, True)
        with pytest.raises(LaunchError, match=r"argument 'n': expected a uint32 scalar"):
            fake(x, out, 1.0, -1, True)
        with pytest.raises(LaunchError, match=r"assumption 'M % 2 == 0' does not hold: M = 5"):
            fake(torch.empty(5, 8, dtype=torch.bfloat16), torch.empty(5, 8), 1.0, 3, True)
    with pytest.raises(LaunchError, match="argument 'X': got a torch tensor on cpu; GPU kernels take device arrays"):
        torch_ops.AbstractOutputs(signature(), "cuda")(torch.empty(6, 8, dtype=torch.bfloat16), torch.empty(6, 8),
                                                       1.0, 3, True)
