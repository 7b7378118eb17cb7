"""Tensor-map parameters without a GPU: the schema, the cuTensorMapEncodeTiled arguments, the cache,
and every launch path (general, Python fast path, C call plan) with a fake encoder that records its
arguments and writes a recognizable map."""

import ctypes
import json
import struct
import sys
import types

import pytest

from tilemlir.diagnostics import CompileError, LaunchError
from tilemlir.runtime import arrays, driver, native, tensor_map
from tilemlir.runtime.cuda_decl import check_declaration
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.fastpath import SLOW, FastCall
from tilemlir.runtime.host_launcher import host_launcher_source
from tilemlir.runtime.kernel import CompiledKernel
from tilemlir.runtime.native_call import plan_spec
from tilemlir.runtime.nvrtc import CompileOptions
from tilemlir.runtime.signature import KernelSignature, ScalarParam, SignatureError, TensorMapParam, TensorParam
from tilemlir.runtime.tensor_map import EncodeArguments, TensorMapCache, driver_encode, encode_arguments

import test_runtime_fastpath as fastpath_fakes
from test_runtime_fastpath import CONTEXT, FakeModule, fake_torch, launcher  # noqa: F401  (fixture)
from test_runtime_native_call import FakeTensor as DLPackTensor
from test_runtime_native_call import ext, provider  # noqa: F401  (fixtures)

MARK = 0x7E45_0A11


# -- signatures --------------------------------------------------------------------------------------
def gemm_signature(**map_changes):
    """C = A @ B with a map of A (bf16, 128-byte swizzle) and of the output C."""
    a_map = dict(tensor="A", name="A_map", dtype="bfloat16", box=(64, 64), swizzle=128, l2_promotion=256)
    a_map.update(map_changes)
    return KernelSignature(
        name="gemm",
        params=(TensorParam("A", "bfloat16", ("M", "K"), written=False),  # align 2: the map asks for 16
                TensorParam("B", "bfloat16", ("K", 256), 16, written=False),
                ScalarParam("alpha", "float32"),
                TensorParam("C", "float32", ("M", 256), 16)),
        symbols=("M", "K"),
        grid=("(M + 127) // 128", "2", "1"),
        block=(128, 1, 1),
        cuda_params=("A", "A_map", "B", "alpha", "C_map", "C", "M", "K"),
        out_idx=(3,),
        tensor_maps=(TensorMapParam(**a_map), TensorMapParam("C", "C_map", "float32", (128, 32))),
    )


def test_a_signature_with_tensor_maps_round_trips_through_json():
    sig = gemm_signature()
    data = json.loads(sig.to_json())
    assert data["version"] == 1
    assert data["tensor_maps"] == [
        dict(tensor="A", name="A_map", dtype="bfloat16", box=[64, 64], swizzle=128, interleave="none",
             l2_promotion=256, oob_fill="zero", element_strides=[1, 1]),
        dict(tensor="C", name="C_map", dtype="float32", box=[128, 32], swizzle=0, interleave="none",
             l2_promotion=0, oob_fill="zero", element_strides=[1, 1])]
    again = KernelSignature.from_json(sig.to_json())
    assert again == sig and again.tensor_maps[1].element_strides == (1, 1)


def test_a_signature_without_maps_keeps_its_json_and_old_json_loads():
    sig = fastpath_fakes.add_signature()
    assert "tensor_maps" not in sig.to_dict()
    old = {k: v for k, v in sig.to_dict().items()}
    assert KernelSignature.from_dict(old).tensor_maps == ()
    minimal = json.loads(gemm_signature().to_json())
    for entry in minimal["tensor_maps"]:  # the settings with defaults may be left out
        for key in ("swizzle", "interleave", "l2_promotion", "oob_fill", "element_strides"):
            del entry[key]
    loaded = KernelSignature.from_dict(minimal)
    assert [(m.swizzle, m.l2_promotion, m.interleave, m.oob_fill, m.element_strides) for m in loaded.tensor_maps] \
        == [(0, 0, "none", "zero", (1, 1))] * 2


@pytest.mark.parametrize("changes, message", [
    (dict(tensor="alpha"), "tensor map 'A_map': 'alpha' is not a tensor param"),
    (dict(tensor="Z"), "tensor map 'A_map': 'Z' is not a tensor param"),
    (dict(dtype="float16"), "dtype float16 is not the dtype bfloat16 of tensor 'A'"),
    (dict(dtype="complex64"), "dtype 'complex64' has no tensor-map data type"),
    (dict(box=(64,)), r"box \[64\] must have one dim per dim of tensor 'A' \(rank 2\)"),
    (dict(box=(0, 64)), r"box \[0, 64\]: each dim must be an int from 1 to 256"),
    (dict(box=(257, 64)), r"box \[257, 64\]: each dim must be an int from 1 to 256"),
    (dict(box=(64, 12)), "the innermost box dim spans 24 bytes .* which must be a multiple of 16"),
    (dict(box=(64, 128)), "the innermost box dim spans 256 bytes, more than the 128-byte swizzle width"),
    (dict(box=(64, 32), swizzle=32), "spans 64 bytes, more than the 32-byte swizzle width"),
    (dict(swizzle=16), "swizzle 16 is not one of 0, 32, 64, 128"),
    (dict(swizzle=True), "swizzle True is not one of"),
    (dict(l2_promotion=512), "l2_promotion 512 is not one of 0, 64, 128, 256"),
    (dict(interleave="32b"), "interleave '32b' is not one of 'none'"),
    (dict(oob_fill="nan"), "oob_fill 'nan' is not one of 'zero'"),
    (dict(element_strides=(2, 1)), r"element_strides \[2, 1\] must be 2 ones"),
    (dict(name="B"), "names used twice among params, symbols and tensor maps: B"),
    (dict(name="K"), "names used twice among params, symbols and tensor maps: K"),
    (dict(name="not an identifier"), "name 'not an identifier' is not an identifier"),
])
def test_invalid_tensor_maps_are_signature_errors(changes, message):
    with pytest.raises(SignatureError, match=message):
        gemm_signature(**changes)


def test_maps_must_be_kernel_parameters_and_fit_their_tensors_rank_and_static_strides():
    fields = dict(name="k", params=(TensorParam("X", "float16", ("M", 12)),), symbols=("M",), grid=("M", "1", "1"),
                  block=(32, 1, 1), cuda_params=("X", "M"))
    with pytest.raises(SignatureError, match="params X_map are not passed to the CUDA kernel"):
        KernelSignature(**dict(fields, params=(TensorParam("X", "float16", ("M", 16)),)),
                        tensor_maps=(TensorMapParam("X", "X_map", "float16", (8, 8)),))
    with pytest.raises(SignatureError, match=r"shape \['M', 12\] has a stride of 24 bytes in dim 0; a tensor map "
                                             "needs multiples of 16"):
        KernelSignature(**dict(fields, cuda_params=("X", "X_map", "M")),
                        tensor_maps=(TensorMapParam("X", "X_map", "float16", (8, 8)),))
    rank6 = dict(fields, params=(TensorParam("X", "float16", ("M", 1, 1, 1, 1, 8)),), cuda_params=("X", "X_map", "M"))
    with pytest.raises(SignatureError, match="a tensor map has rank 1 to 5"):
        KernelSignature(**rank6, tensor_maps=(TensorMapParam("X", "X_map", "float16", (1,) * 5 + (8,)),))


@pytest.mark.parametrize("entry, message", [
    ({"tensor": "A", "name": "A_map", "dtype": "bfloat16", "box": [64, 64], "swizle": 128}, "unknown key.*swizle"),
    ({"tensor": "A", "name": "A_map", "dtype": "bfloat16", "box": 64}, "box and element_strides are lists"),
    ({"tensor": "A", "name": "A_map", "dtype": "bfloat16"}, "lacks the required key 'box'"),
    ("A_map", "a tensor_maps entry is a JSON object"),
])
def test_malformed_tensor_map_json_is_a_signature_error(entry, message):
    data = json.loads(gemm_signature().to_json())
    data["tensor_maps"][0] = entry
    with pytest.raises(SignatureError, match=message):
        KernelSignature.from_dict(data)


# -- the encode arguments ------------------------------------------------------------------------------
def test_encode_arguments_list_dims_innermost_first_with_byte_strides_and_driver_enums():
    sig = gemm_signature()
    a_map, c_map = sig.tensor_maps
    assert encode_arguments(a_map, 0x7000, (300, 72)) == EncodeArguments(
        data_type=9, rank=2, address=0x7000, dims=(72, 300), strides=(144,), box=(64, 64), element_strides=(1, 1),
        interleave=0, swizzle=3, l2_promotion=3, oob_fill=0)
    assert encode_arguments(c_map, 0x7100, (300, 256)) == EncodeArguments(
        data_type=7, rank=2, address=0x7100, dims=(256, 300), strides=(1024,), box=(32, 128), element_strides=(1, 1),
        interleave=0, swizzle=0, l2_promotion=0, oob_fill=0)
    cube = TensorMapParam("X", "X_map", "uint8", (2, 4, 16), swizzle=32)
    assert encode_arguments(cube, 0x10, (5, 3, 48)) == EncodeArguments(
        data_type=0, rank=3, address=0x10, dims=(48, 3, 5), strides=(48, 144), box=(16, 4, 2), element_strides=(1,) * 3,
        interleave=0, swizzle=1, l2_promotion=0, oob_fill=0)
    line = TensorMapParam("X", "X_map", "float64", (32,), swizzle=64, l2_promotion=128)
    assert encode_arguments(line, 0x20, (1000,)) == EncodeArguments(
        data_type=8, rank=1, address=0x20, dims=(1000,), strides=(), box=(32,), element_strides=(1,),
        interleave=0, swizzle=2, l2_promotion=2, oob_fill=0)


def test_every_dtype_has_its_driver_data_type_of_its_size():
    sizes = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}  # CUtensorMapDataType -> bytes (cuda.h)
    assert set(tensor_map.DATA_TYPES) == set(DTYPES)
    for name, code in tensor_map.DATA_TYPES.items():
        assert sizes[code] == DTYPES[name].itemsize, name


@pytest.mark.parametrize("address, shape, message", [
    (0x7008, (300, 72), r"data pointer 0x7008 is not 16-byte aligned"),
    (0x7000, (300, 68), r"the stride of dim 0 is 136 bytes \(shape \(300, 68\), bfloat16\); TMA needs a multiple "
                        r"of 16 below 2\*\*40 \(pad the rows to a multiple of 8 elements\)"),
    (0x7000, (0, 64), r"dim 0 is 0; each dim must be from 1 to 2\*\*31 \(a tensor map cannot describe an empty"),
    (0x7000, (2**31 + 1, 64), r"dim 0 is 2147483649; each dim must be from 1 to 2\*\*31"),
    (0x7000, (64,), r"expected a tensor of rank 2, got shape \(64,\)"),
])
def test_a_call_breaking_a_requirement_is_a_launch_error_naming_map_and_tensor(address, shape, message):
    with pytest.raises(LaunchError, match=r"tensor map 'A_map' of argument 'A': " + message):
        encode_arguments(gemm_signature().tensor_maps[0], address, shape)


def test_strides_stay_below_2_to_the_40():
    cube = TensorMapParam("X", "X_map", "uint8", (1, 1, 16))
    assert encode_arguments(cube, 0, (2, 2**31, 256)).strides == (256, 2**39)
    with pytest.raises(LaunchError, match=r"the stride of dim 0 is 1099511627776 bytes"):
        encode_arguments(cube, 0, (2, 2**31, 512))


# -- a fake cuTensorMapEncodeTiled ------------------------------------------------------------------------
ENCODE = ctypes.CFUNCTYPE(ctypes.c_int, *tensor_map.ENCODE_ARGTYPES)


class FakeEncoder:
    """cuTensorMapEncodeTiled as a C callback: records its decoded arguments and writes
    (MARK, address, dims..., swizzle) into the map it is given, whose offset from 128-byte alignment it records."""

    def __init__(self):
        self.calls, self.code = [], 0
        self.function = ENCODE(self.encode)
        self.address = ctypes.cast(self.function, ctypes.c_void_p).value

    def encode(self, out, data_type, rank, address, dims, strides, box, element_strides, interleave, swizzle, l2,
               oob):
        read = lambda pointer, ctype, n: tuple((ctype * n).from_address(pointer)) if n else ()  # noqa: E731
        args = EncodeArguments(data_type, rank, address or 0, read(dims, ctypes.c_uint64, rank),
                               read(strides, ctypes.c_uint64, rank - 1), read(box, ctypes.c_uint32, rank),
                               read(element_strides, ctypes.c_uint32, rank), interleave, swizzle, l2, oob)
        self.calls.append((out % 128, args))
        if not self.code:
            ctypes.memmove(out, expected_map(args), 128)
        return self.code


def expected_map(args):
    return struct.pack("<16Q", MARK, args.address, *args.dims, *[0] * (13 - len(args.dims)), args.swizzle)


def test_driver_encode_passes_the_arguments_as_c_arrays():
    encoder = FakeEncoder()
    encode = driver_encode(encoder.function)
    args = encode_arguments(TensorMapParam("X", "X_map", "uint8", (2, 4, 16), swizzle=32), 0x10, (5, 3, 48))
    out = tensor_map.EncodedMap()
    assert encode(args, out.address) == 0
    assert encoder.calls == [(0, args)]
    assert out.raw() == expected_map(args)


def test_the_cache_encodes_once_per_pointer_and_shape():
    encoder = FakeEncoder()
    cache = TensorMapCache(gemm_signature().tensor_maps[0], driver_encode(encoder.function), capacity=2)
    first = cache.get(0x7000, (300, 72))
    assert first.address % 128 == 0 and first.raw() == expected_map(encode_arguments(cache.tmap, 0x7000, (300, 72)))
    assert cache.get(0x7000, (300, 72)) is first and cache.lookup(0x7000, (300, 72)) is first
    assert cache.encodes == 1 and len(encoder.calls) == 1
    other_pointer = cache.get(0x8000, (300, 72))
    other_shape = cache.get(0x7000, (301, 72))
    assert other_pointer.raw() != first.raw() != other_shape.raw() and cache.encodes == 3
    assert cache.get(0x7000, (301, 72)) is other_shape  # kept; the oldest, first, was dropped
    assert cache.get(0x7000, (300, 72)) is not first and cache.encodes == 4
    assert first.raw() == expected_map(encode_arguments(cache.tmap, 0x7000, (300, 72)))  # still valid for its holder


def test_a_map_the_cache_cannot_encode_is_an_error_on_the_general_path_and_none_on_the_fast_path():
    encoder = FakeEncoder()
    cache = TensorMapCache(gemm_signature().tensor_maps[0], driver_encode(encoder.function))
    assert cache.lookup(0x7008, (300, 72)) is None and encoder.calls == []
    with pytest.raises(LaunchError, match="not 16-byte aligned"):
        cache.get(0x7008, (300, 72))
    encoder.code = 1  # CUDA_ERROR_INVALID_VALUE
    assert cache.lookup(0x7000, (300, 72)) is None
    with pytest.raises(LaunchError, match=r"tensor map 'A_map' of argument 'A': cuTensorMapEncodeTiled failed with "
                                          r"CUDA_ERROR_INVALID_VALUE \(1\)"):
        cache.get(0x7000, (300, 72))
    encoder.code = 0
    assert cache.lookup(0x7000, (300, 72)) is not None and cache.encodes == 1


# -- launches: the general path and the Python fast path ----------------------------------------------------
class MapDriver(fastpath_fakes.FakeDriver):
    """The fast-path tests' fake driver, reading a tensor map parameter as its 128 bytes."""

    def __init__(self, signature, encoder):
        super().__init__(signature)
        self.raw = driver.RawDriver(self.raw.get_context, self.raw.launch, encoder.function)

    def read_params(self, address):
        sig = self.signature
        maps = {m.name for m in sig.tensor_maps}
        params = {p.name: p for p in sig.params}
        values = {}
        for slot, name in zip((ctypes.c_void_p * len(sig.cuda_params)).from_address(address), sig.cuda_params):
            p = params.get(name)
            if name in maps:
                assert slot % 128 == 0
                values[name] = ctypes.string_at(slot, 128)
            elif isinstance(p, TensorParam):
                values[name] = ctypes.c_void_p.from_address(slot).value
            else:
                ctype = DTYPES[p.dtype].scalar_ctype if isinstance(p, ScalarParam) else ctypes.c_int64
                values[name] = ctype.from_address(slot).value
        return values


@pytest.fixture
def map_kernel(monkeypatch, launcher):  # noqa: F811
    """(kernel, driver, encoder, torch) of gemm_signature with the fake torch, driver and encoder."""
    torch = fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(arrays, "_torch_dtypes", {})
    cuda = types.SimpleNamespace(CUresult=int, cuGetErrorName=lambda e: (0, b"CUDA_ERROR_FAKE"),
                                 cuGetErrorString=lambda e: (0, b"a fake failure"))
    monkeypatch.setattr(driver, "_cuda", cuda)
    encoder = FakeEncoder()
    fake_driver = MapDriver(gemm_signature(), encoder)
    monkeypatch.setattr(driver, "current", lambda: (fake_driver.context, fake_driver.device))
    monkeypatch.setattr(driver, "raw", lambda: fake_driver.raw)
    kernel = CompiledKernel(gemm_signature(), "// no source", b"", CompileOptions())
    kernel._modules[CONTEXT] = FakeModule()
    return kernel, fake_driver, encoder, torch


def gemm_args(torch, M=300, K=72, a_address=None):
    Tensor = fastpath_fakes.FakeTensor
    return [Tensor((M, K), torch.bfloat16, address=a_address), Tensor((K, 256), torch.bfloat16), 0.5]


def test_every_launch_passes_each_map_by_value_and_repeats_encode_nothing(map_kernel):
    kernel, fake_driver, encoder, torch = map_kernel
    a, b, _ = args = gemm_args(torch)
    c = kernel(*args)  # the general path
    assert kernel._fast is not None and isinstance(kernel._fast, FastCall)  # the fake torch has no DLPack API
    c2 = kernel(*args)  # the fast path
    c3 = kernel(*args)
    assert len(fake_driver.launches) == 3
    a_map = expected_map(encode_arguments(kernel.signature.tensor_maps[0], a.data_ptr(), (300, 72)))
    for launch, out in zip(fake_driver.launches, (c, c2, c3)):
        c_map = expected_map(encode_arguments(kernel.signature.tensor_maps[1], out.data_ptr(), (300, 256)))
        assert launch["params"] == dict(A=a.data_ptr(), A_map=a_map, B=b.data_ptr(), alpha=0.5, C_map=c_map,
                                        C=out.data_ptr(), M=300, K=72)
        assert launch["grid"] == (3, 2, 1)
    # A's map once; C's once per fresh output (a new pointer each time)
    assert [args.address for _, args in encoder.calls] == [a.data_ptr(), c.data_ptr(), c2.data_ptr(), c3.data_ptr()]
    assert all(offset == 0 for offset, _ in encoder.calls)


def test_a_map_breaking_a_requirement_fails_before_any_launch_on_every_path(map_kernel):
    kernel, fake_driver, encoder, torch = map_kernel
    kernel(*gemm_args(torch))
    assert kernel._fast is not None
    with pytest.raises(LaunchError, match=r"tensor map 'A_map' of argument 'A': the stride of dim 0 is 140 bytes"):
        kernel(*gemm_args(torch, K=70))  # 70 bf16 per row: 140 bytes
    with pytest.raises(LaunchError, match=r"tensor map 'A_map' of argument 'A': data pointer 0x7f0000012358 is not "
                                          r"16-byte aligned"):
        kernel(*gemm_args(torch, a_address=0x7F0000012358))  # fine for A's own alignment (2 bytes)
    assert len(fake_driver.launches) == 1


def test_a_driver_refusing_the_map_is_a_launch_error_with_its_name(map_kernel):
    kernel, fake_driver, encoder, torch = map_kernel
    encoder.code = 1
    with pytest.raises(LaunchError, match="cuTensorMapEncodeTiled failed with"):
        kernel(*gemm_args(torch))
    assert fake_driver.launches == []


def test_a_driver_without_the_entry_point_is_a_clear_error(map_kernel, monkeypatch):
    kernel, fake_driver, encoder, torch = map_kernel
    monkeypatch.setattr(fake_driver, "raw", driver.RawDriver(fake_driver.raw.get_context, fake_driver.raw.launch))
    with pytest.raises(LaunchError, match="this CUDA driver has no cuTensorMapEncodeTiled"):
        kernel(*gemm_args(torch))


# -- the C call plan --------------------------------------------------------------------------------------
class PlanDriver:
    """cuCtxGetCurrent and cuLaunchKernel for the plan, reading tensor maps as their bytes."""

    def __init__(self, sig):
        import test_runtime_native_call as native_fakes

        self.inner = native_fakes.Driver(sig)
        self.maps = {m.name for m in sig.tensor_maps}
        self.sig = sig
        self.launches = []
        self._launch = native_fakes.LAUNCH(self.launch)
        self.launch_address = ctypes.cast(self._launch, ctypes.c_void_p).value

    def launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        values = {}
        for i, (name, ctype) in enumerate(self.inner.types):
            if name in self.maps:
                assert params[i] % 128 == 0
                values[name] = (ctypes.string_at(params[i], 128), params[i])
            else:
                values[name] = ctype.from_address(params[i]).value
        self.launches.append(dict(grid=(gx, gy, gz), params=values))
        return 0


@pytest.fixture
def plan(ext, provider):  # noqa: F811
    import test_runtime_native_call as native_fakes

    sig = gemm_signature()
    plan_driver, encoder, allocator = PlanDriver(sig), FakeEncoder(), native_fakes.Allocator()
    provider.configure(factory=allocator, stream=0x5151)
    provider.stream_queries()
    provider.allocation_errors()
    call_plan = ext.CallPlan(plan_spec(sig), DLPackTensor.__dlpack_c_exchange_api__, DLPackTensor, SLOW,
                             lambda s: s, lambda *a: None, plan_driver.inner.get_context_address,
                             plan_driver.launch_address, encoder.address)
    call_plan.register(native_fakes.CONTEXT, 0xF00D, 0, 48 * 1024)
    yield call_plan, plan_driver, encoder, allocator
    provider.configure()


def test_the_call_plan_encodes_each_map_in_c_and_caches_it(plan):
    call_plan, plan_driver, encoder, allocator = plan
    sig = gemm_signature()
    a, b = DLPackTensor((300, 72), "bfloat16"), DLPackTensor((72, 256), "bfloat16")
    c = call_plan.call((a, b, 0.5), None)
    c2 = call_plan.call((a, b, 0.5), None)
    assert len(plan_driver.launches) == 2
    a_map = expected_map(encode_arguments(sig.tensor_maps[0], a.pointer, (300, 72)))
    first, second = plan_driver.launches
    for launch, out in ((first, c), (second, c2)):
        c_map = expected_map(encode_arguments(sig.tensor_maps[1], out.pointer, (300, 256)))
        assert {k: v[0] if k.endswith("_map") else v for k, v in launch["params"].items()} == dict(
            A=a.pointer, A_map=a_map, B=b.pointer, alpha=0.5, C_map=c_map, C=out.pointer, M=300, K=72)
    assert first["params"]["A_map"][1] == second["params"]["A_map"][1]  # the cached bytes themselves
    assert [args for _, args in encoder.calls] == [
        encode_arguments(sig.tensor_maps[0], a.pointer, (300, 72)),
        encode_arguments(sig.tensor_maps[1], c.pointer, (300, 256)),
        encode_arguments(sig.tensor_maps[1], c2.pointer, (300, 256))]


def test_the_call_plan_keeps_eight_maps_per_map_and_replaces_the_oldest(plan):
    call_plan, plan_driver, encoder, allocator = plan
    b = DLPackTensor((72, 256), "bfloat16")
    tensors = [DLPackTensor((300, 72), "bfloat16") for _ in range(9)]
    for a in tensors[:8] * 2:
        call_plan.call((a, b, 0.5), None)
    a_encodes = lambda: [args.address for _, args in encoder.calls if args.data_type == 9]  # noqa: E731
    assert a_encodes() == [a.pointer for a in tensors[:8]]
    call_plan.call((tensors[8], b, 0.5), None)  # replaces tensors[0]'s
    call_plan.call((tensors[1], b, 0.5), None)
    call_plan.call((tensors[0], b, 0.5), None)
    assert a_encodes()[8:] == [tensors[8].pointer, tensors[0].pointer]
    shapes = [DLPackTensor((rows, 72), "bfloat16", data=tensors[1].data) for rows in (100, 200)]
    for a in shapes:
        call_plan.call((a, b, 0.5), None)
    assert a_encodes()[10:] == [tensors[1].pointer] * 2  # same pointer, other shapes: other maps


def test_the_call_plan_answers_slow_for_a_map_it_cannot_encode_before_allocating(plan, provider):  # noqa: F811
    call_plan, plan_driver, encoder, allocator = plan
    b = DLPackTensor((72, 256), "bfloat16")
    odd_rows = DLPackTensor((300, 68), "bfloat16")  # 136-byte rows
    misaligned = DLPackTensor((300, 72), "bfloat16", byte_offset=8)  # fine for A's own alignment (2 bytes)
    for a in (odd_rows, misaligned):
        assert call_plan.call((a, DLPackTensor((68 if a is odd_rows else 72, 256), "bfloat16"), 0.5), None) is SLOW
    assert allocator.calls == [] and encoder.calls == [] and plan_driver.launches == []
    encoder.code = 1
    assert call_plan.call((DLPackTensor((300, 72), "bfloat16"), b, 0.5), None) is SLOW
    assert plan_driver.launches == [] and provider.live_managed() == 0


def test_a_call_plan_with_maps_needs_the_encoder(ext, provider):  # noqa: F811
    sig = gemm_signature()
    plan_driver = PlanDriver(sig)
    with pytest.raises(ValueError, match="needs cuTensorMapEncodeTiled's address"):
        ext.CallPlan(plan_spec(sig), DLPackTensor.__dlpack_c_exchange_api__, DLPackTensor, SLOW, lambda s: s,
                     lambda *a: None, plan_driver.inner.get_context_address, plan_driver.launch_address)


# -- the CUDA declaration and the host launcher ----------------------------------------------------------------
GEMM_DECLARATION = ('extern "C" __global__ void gemm(const __nv_bfloat16* A, const __grid_constant__ CUtensorMap '
                    'A_map, const __nv_bfloat16* B, float alpha, const __grid_constant__ CUtensorMap C_map, float* C, '
                    'long long M, long long K) {}\n')


@pytest.mark.parametrize("source", [
    GEMM_DECLARATION,
    GEMM_DECLARATION.replace("const __grid_constant__ CUtensorMap A_map", "__grid_constant__ const CUtensorMap a"),
    GEMM_DECLARATION.replace("CUtensorMap C_map", "struct CUtensorMap_st C_map"),
])
def test_a_source_declaring_grid_constant_maps_matches(source):
    check_declaration(source, gemm_signature(), "the source")


A_MAP = r"parameter 2 is the tensor map A_map \(`const __grid_constant__ CUtensorMap A_map`\), declared "


@pytest.mark.parametrize("edit, message", [
    (("const __grid_constant__ CUtensorMap A_map", "const CUtensorMap A_map"),
     A_MAP + "`const CUtensorMap A_map`: not __grid_constant__"),
    (("const __grid_constant__ CUtensorMap A_map", "const CUtensorMap* A_map"), A_MAP + ".*: a pointer"),
    (("const __grid_constant__ CUtensorMap A_map", "const __grid_constant__ CUtensorMap& A_map"),
     A_MAP + ".*: a reference"),
    (("const __grid_constant__ CUtensorMap A_map", "long long A_map"), A_MAP + "`long long A_map`: another type"),
    (("float alpha", "CUtensorMap alpha"), r"parameter 4 is the float32 scalar alpha .*: another type"),
])
def test_a_map_declared_otherwise_is_an_error(edit, message):
    with pytest.raises(CompileError, match=message):
        check_declaration(GEMM_DECLARATION.replace(*edit), gemm_signature(), "the source")


def test_the_host_launcher_encodes_each_map_from_its_tensor():
    source = host_launcher_source(gemm_signature())
    assert "-o gemm -lcuda" in source and "#include <cuda.h>" in source
    assert "extern \"C\" __global__ void gemm(void* arg_A, CUtensorMap map_A_map, void* arg_B, float arg_alpha, " \
           "CUtensorMap map_C_map, void* arg_C, long long sym_M, long long sym_K);" in source
    assert ("  const cuuint64_t dims_A_map[] = {(cuuint64_t)sym_K, (cuuint64_t)sym_M};\n"
            "  const cuuint64_t strides_A_map[] = {(cuuint64_t)2 * (cuuint64_t)sym_K};\n"
            "  const cuuint32_t box_A_map[] = {64, 64};\n"
            '  CUtensorMap map_A_map = encode_map("A_map", (CUtensorMapDataType)9, 2, arg_A, dims_A_map, '
            "strides_A_map, box_A_map, (CUtensorMapSwizzle)3, (CUtensorMapL2promotion)3);") in source
    launch = "gemm<<<grid, block, shared>>>(arg_A, map_A_map, arg_B, arg_alpha, map_C_map, arg_C, sym_M, sym_K);"
    assert launch in source
    assert source.index("void* arg_C = ") < source.index("CUtensorMap map_C_map = encode_map")
    assert "cuda.h" not in host_launcher_source(fastpath_fakes.add_signature())
