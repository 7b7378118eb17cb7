"""`math.ipowi` in the CUDA emitter: the `tl_ipowi_iN` prelude helpers, their use, and their numerics.

The helpers are plain C apart from CUDA's function qualifiers, so the numeric
tests compile them for the host with the system C compiler (under UBSan where
it links, to show that no signed arithmetic overflows) and compare them, on
random and edge-case bases and exponents of every width, with the CPU
backend's `math.ipowi` (the reference) and with Python's modular powers.
"""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest
from support import body_of, compiles, elementwise_module, emit_text, emitted_cuda, kernel_module, normalized

import tilemlir
import tilemlir.language as T
from tilemlir.diagnostics import CompileError
from tilemlir.emit_cuda.prelude import HELPERS

WIDTHS = (8, 16, 32, 64)
SIGNED = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}
C_TYPES = {8: "signed char", 16: "short", 32: "int", 64: "long long"}


# -- the emitted text ------------------------------------------------------------------------------


def test_ipowi_calls_the_helper_of_its_width():
    inputs = {**{f"X{w}": f"i{w}" for w in WIDTHS}, **{f"K{w}": f"i{w}" for w in WIDTHS}}
    ops = "\n".join(f"      %Y{w}_r = math.ipowi %X{w}_v, %K{w}_v : i{w}" for w in WIDTHS)
    emitted = emit_text(elementwise_module(inputs, {f"Y{w}": f"i{w}" for w in WIDTHS}, ops))
    text = normalized(emitted.source, *inputs)
    for w in WIDTHS:
        assert f"Y{w}[bx * 64 + tx] = tl_ipowi_i{w}(X{w}_v, K{w}_v);" in text, body_of(emitted.source)
        signature = f"__device__ __forceinline__ {C_TYPES[w]} tl_ipowi_i{w}({C_TYPES[w]} base, {C_TYPES[w]} exponent)"
        assert emitted.source.count(signature) == 1
    compiles(emitted)


def test_ipowi_helpers_appear_only_where_used():
    ops = "      %Y_r = math.ipowi %X_v, %K_v : i16\n      %Z_r = arith.muli %X_v, %K_v : i16"
    emitted = emit_text(elementwise_module({"X": "i16", "K": "i16"}, {"Y": "i16", "Z": "i16"}, ops))
    assert "tl_ipowi_i16(" in emitted.source
    assert all(f"tl_ipowi_i{w}" not in emitted.source for w in (8, 32, 64))
    plain = emit_text(elementwise_module({"X": "i16", "K": "i16"}, {"Z": "i16"},
                                         "      %Z_r = arith.muli %X_v, %K_v : i16"))
    assert "tl_ipowi" not in plain.source


def test_ipowi_on_vectors_applies_the_helper_per_element():
    body = """
      %col = arith.muli %tx, %c4 : index
      %x = vector.load %X[%bx, %col] : memref<?x64xi8>, vector<4xi8>
      %k = vector.load %K[%bx, %col] : memref<?x64xi8>, vector<4xi8>
      %three = arith.constant dense<3> : vector<4xi8>
      %p = math.ipowi %x, %k : vector<4xi8>
      %q = math.ipowi %p, %three : vector<4xi8>
      vector.store %q, %Y[%bx, %col] : memref<?x64xi8>, vector<4xi8>"""
    params = [(n, "memref<?x64xi8>") for n in ("X", "K", "Y")]
    emitted = emit_text(kernel_module(body, params, threads=16))
    body_text = body_of(emitted.source)
    assert "for (int e = 0; e < 4; ++e) yv.v[e] = tl_ipowi_i8(tl_ipowi_i8(xv.v[e], kv.v[e]), 3);" in body_text, \
        body_text
    ptx = compiles(emitted)
    assert ".local" not in ptx


def test_ipowi_on_index_is_a_located_error():
    body = '      %p = math.ipowi %tx, %bx : index loc("p.py":3:4)'
    with pytest.raises(CompileError, match=r"p.py:3:4: error: 'math.ipowi' on index is not supported"):
        emit_text(kernel_module(body, [("Y", "memref<?x64xf32>")]))


# -- kernels through the whole pipeline --------------------------------------------------------------


def power_kernel(dtype, block=64):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[2, 3])
    def power(X: T.Tensor((N,), dtype), K: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype),
              Z: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                n = bx * block + i
                Y[n] = X[n] ** K[n]
                Z[n] = T.pow(X[n], 3)

    return power


@pytest.mark.parametrize("dtype", [*SIGNED.values(), "uint8", "uint16", "uint32", "uint64"])
def test_integer_power_kernels_emit_the_helper_and_compile(dtype):
    bits = np.iinfo(dtype).bits
    emitted = emitted_cuda(power_kernel(dtype))
    body = body_of(emitted.source)
    assert f"tl_ipowi_i{bits}(" in body and ", 3)" in body, body
    if dtype.startswith("uint"):  # the frontend's reduction of an exponent with its top bit set
        assert f"& {(1 << (bits - 1)) - 1}" in body, body
    compiles(emitted)


# -- the helpers' numerics on the host ------------------------------------------------------------------

_HOST_PREFIX = "#define __device__\n#define __forceinline__ static inline\n"
_HOST_LOOP = """
void ipowi_i{bits}(const {t}* base, const {t}* exponent, {t}* out, long n) {{
  for (long i = 0; i < n; ++i) out[i] = tl_ipowi_i{bits}(base[i], exponent[i]);
}}"""


@pytest.fixture(scope="module")
def host_helpers(tmp_path_factory):
    """The four helpers compiled for the host, with array loops around them; (library, sanitized)."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler: the helpers cannot be run on the host")
    directory = tmp_path_factory.mktemp("ipowi")
    source = directory / "ipowi.c"
    source.write_text(_HOST_PREFIX + "\n".join(HELPERS[f"ipowi_i{w}"] + _HOST_LOOP.format(bits=w, t=C_TYPES[w])
                                               for w in WIDTHS))
    library = directory / "ipowi.so"
    command = ["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", str(source),
               "-o", str(library)]
    sanitized = subprocess.run(command + ["-fsanitize=undefined", "-fsanitize-recover=all"], capture_output=True,
                               text=True)
    if sanitized.returncode != 0:  # no UBSan runtime here: the numerics still count
        plain = subprocess.run(command, capture_output=True, text=True)
        assert plain.returncode == 0, plain.stderr
    return ctypes.CDLL(str(library)), sanitized.returncode == 0


def run_helper(host_helpers, bits, base, exponent, capfd):
    library, sanitized = host_helpers
    out = np.full(base.shape, 0x5A, base.dtype)  # poisoned
    as_pointer = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    getattr(library, f"ipowi_i{bits}")(as_pointer(base), as_pointer(exponent), as_pointer(out),
                                        ctypes.c_long(base.size))
    if sanitized:
        assert "runtime error" not in capfd.readouterr().err
    return out


def ipowi_model(base: int, exponent: int, bits: int) -> int:
    """MLIR's math.ipowi (convert-math-to-funcs) on `bits`-bit integers; 0 ** negative as the CPU backend gives."""
    if exponent < 0:
        if base == -1:
            return -1 if exponent % 2 else 1
        return 1 if base in (0, 1) else 0
    power = pow(base, exponent, 1 << bits)
    return power - (1 << bits) if power >= 1 << (bits - 1) else power


def operands(rng, bits):
    """Every pair of edge values (0, +-1, +-2, 3, the extremes, exponents near the width), then random pairs."""
    info = np.iinfo(SIGNED[bits])
    edges = np.array([0, 1, -1, 2, -2, 3, -3, 7, bits - 1, bits, bits + 1, info.min, info.max, info.min + 1,
                      info.max - 1], SIGNED[bits])
    base, exponent = (a.reshape(-1) for a in np.meshgrid(edges, edges))
    small = rng.integers(-40, 40, 500, dtype=SIGNED[bits])  # exponents whose powers do not vanish modulo 2**bits
    random_bases = rng.integers(info.min, info.max, 1500, dtype=SIGNED[bits], endpoint=True)
    random_exponents = np.concatenate([small, rng.integers(info.min, info.max, 1000, dtype=SIGNED[bits],
                                                           endpoint=True)])
    return np.concatenate([base, random_bases]), np.concatenate([exponent, random_exponents])


@pytest.mark.parametrize("bits", WIDTHS)
def test_host_helper_matches_the_cpu_backend_and_modular_powers(bits, host_helpers, rng, capfd):
    base, exponent = operands(rng, bits)
    got = run_helper(host_helpers, bits, base, exponent, capfd)
    cpu_result, _ = tilemlir.compile(power_kernel(SIGNED[bits]), target="cpu")(base, exponent)
    mismatched = np.flatnonzero(got != cpu_result)
    assert mismatched.size == 0, [(int(base[i]), int(exponent[i]), int(got[i]), int(cpu_result[i]))
                                  for i in mismatched[:10]]
    model = [ipowi_model(int(b), int(k), bits) for b, k in zip(base, exponent)]
    assert got.tolist() == model
    assert np.count_nonzero(got) > base.size // 5  # not a vanishing test: many powers survive the wrap-around
