"""A standalone CUDA host program that launches one exported kernel once and times it.

`host_launcher_source(signature)` is the text of `<name>_host.cu`; with the
kernel's `<name>.cu` it builds with
``nvcc -gencode=arch=compute_90a,code=sm_90a <name>.cu <name>_host.cu -o <name>``
and runs as ``./<name> M=1000 N=4096 [eps=0.5] [iters=20]``: it allocates
random inputs (uniform in [-1, 1) for floats, [0, 8) for integers) for the
given symbol values, poisons the outputs, launches once, checks for errors,
then prints the mean time of `iters` further launches.

A kernel with tensor maps (signature.py) gets each map encoded once with the
driver's cuTensorMapEncodeTiled from its tensor, as the runtime does
(tensor_map.py); it then also links ``-lcuda``.
"""

from __future__ import annotations

from tilemlir.runtime import tensor_map
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorMapParam, TensorParam

_PRELUDE = r"""#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
              cudaGetErrorString(err_));                                              \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

// Python's floor division and modulo, used by the grid and assumption formulas.
static long long tl_floordiv(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static long long tl_floormod(long long a, long long b) {
  long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// wrap(a, bits) and wrapu(a, bits): a's low `bits` bits read as signed or unsigned, as a sized integer holds them.
static long long tl_wrap(long long a, int bits) {
  if (bits >= 64) return a;
  unsigned long long low = (unsigned long long)a & ((1ull << bits) - 1), sign = 1ull << (bits - 1);
  return (long long)(low ^ sign) - (long long)sign;
}
static long long tl_wrapu(long long a, int bits) {
  return bits >= 64 ? a : (long long)((unsigned long long)a & ((1ull << bits) - 1));
}
template <typename A, typename B> static auto tl_min(A a, B b) { return a < b ? a : b; }
template <typename A, typename B> static auto tl_max(A a, B b) { return a < b ? b : a; }

// "NAME=value" from the command line, or `fallback` (a missing required value is an error).
static double arg_value(int argc, char** argv, const char* name, bool required, double fallback) {
  size_t len = strlen(name);
  for (int i = 1; i < argc; ++i)
    if (strncmp(argv[i], name, len) == 0 && argv[i][len] == '=') return atof(argv[i] + len + 1);
  if (required) {
    fprintf(stderr, "missing %s=<value> on the command line\n", name);
    exit(2);
  }
  return fallback;
}

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static unsigned int next_random() {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned int)(rng_state >> 33);
}
static float uniform() { return (float)next_random() / 2147483648.0f - 1.0f; }  // [-1, 1)

template <typename T> static void* device_array(size_t n, bool random, bool integral) {
  std::vector<T> host(n > 0 ? n : 1);
  for (size_t i = 0; i < n; ++i) host[i] = T(integral ? (float)(next_random() % 8) : uniform());
  void* ptr = nullptr;
  CHECK(cudaMalloc(&ptr, host.size() * sizeof(T)));
  if (random)
    CHECK(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  else
    CHECK(cudaMemset(ptr, 0xFF, host.size() * sizeof(T)));  // poison outputs
  return ptr;
}
"""

_MAP_HELPER = r"""#include <cuda.h>

// One tensor map of a tensor: dims innermost first, strides in bytes of the dims above the innermost.
static CUtensorMap encode_map(const char* name, CUtensorMapDataType type, cuuint32_t rank, void* address,
                              const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                              CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2) {
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMap map;
  CUresult err = cuTensorMapEncodeTiled(&map, type, rank, address, dims, strides, box, element_strides,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (err != CUDA_SUCCESS) {
    const char* text = nullptr;
    cuGetErrorName(err, &text);
    fprintf(stderr, "cuTensorMapEncodeTiled for tensor map %s failed: %s\n", name, text ? text : "?");
    exit(1);
  }
  return map;
}
"""


def host_launcher_source(sig: KernelSignature) -> str:
    index_type = "int" if sig.index_bits == 32 else "long long"
    params = {p.name: p for p in sig.params}
    rename = {s: f"sym_{s}" for s in sig.symbols} | {p.name: f"arg_{p.name}" for p in sig.params}
    rename |= {m.name: f"map_{m.name}" for m in sig.tensor_maps}
    maps = {m.name: m for m in sig.tensor_maps}
    decl = ", ".join(_declaration(name, params, index_type, rename, maps) for name in sig.cuda_params)
    exprs = sig.exprs
    c = lambda expr: expr.to_c(rename.__getitem__)  # noqa: E731
    usage = " ".join([f"{s}=<int>" for s in sig.symbols] + [f"[{p.name}=1]" for p in sig.params
                                                          if isinstance(p, ScalarParam)] + ["[iters=20]"])
    libraries = " -lcuda" if sig.tensor_maps else ""
    lines = [
        f"// Standalone launcher for the tilemlir kernel `{sig.name}` (generated; see signature.json).",
        f"// Build: nvcc -gencode=arch=compute_90a,code=sm_90a {sig.name}.cu {sig.name}_host.cu -o {sig.name}"
        f"{libraries}",
        f"// Run:   ./{sig.name} {usage}",
        _PRELUDE + (_MAP_HELPER if sig.tensor_maps else ""),
        f'extern "C" __global__ void {sig.name}({decl});',
        "",
        "int main(int argc, char** argv) {",
    ]
    for s in sig.symbols:
        lines.append(f'  {index_type} sym_{s} = ({index_type})arg_value(argc, argv, "{s}", true, 0);')
    for p in sig.params:
        if isinstance(p, ScalarParam):
            d = DTYPES[p.dtype]
            via_float = "(float)" if d.kind == "float" and d.itemsize < 4 else ""
            lines.append(f'  {d.cxx} arg_{p.name} = ({d.cxx}){via_float}arg_value(argc, argv, "{p.name}", false, 1);')
    lines.append('  int iters = (int)arg_value(argc, argv, "iters", false, 20);')
    for expr in exprs.assumes:
        lines += [f"  if (!({c(expr)})) {{",
                  f'    fprintf(stderr, "assumption {_c_string(expr.text)} does not hold for these sizes\\n");',
                  "    return 2;", "  }"]
    outputs = set(sig.out_idx)
    for i, p in enumerate(sig.params):
        if isinstance(p, TensorParam):
            numel = " * ".join(f"(size_t)sym_{d}" if isinstance(d, str) else f"(size_t){d}" for d in p.shape) or "1"
            d = DTYPES[p.dtype]
            integral = "true" if d.kind in ("int", "uint", "bool") else "false"
            random = "false" if i in outputs else "true"
            lines.append(f"  void* arg_{p.name} = device_array<{d.cxx}>({numel}, {random}, {integral});")
    for m in sig.tensor_maps:
        lines += _map_lines(m, params[m.tensor], rename)
    grid = ", ".join(f"(unsigned int)({c(e)})" for e in exprs.grid)
    lines += [
        f"  dim3 grid({grid});",
        f"  dim3 block({sig.block[0]}, {sig.block[1]}, {sig.block[2]});",
        f"  size_t shared = (size_t)({c(exprs.shared)});",
        "  if (shared > 48 * 1024)",
        f"    CHECK(cudaFuncSetAttribute((const void*){sig.name}, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));",
        "  if (grid.x == 0 || grid.y == 0 || grid.z == 0) {",
        '    printf("empty grid: nothing to launch\\n");',
        "    return 0;",
        "  }",
        f"  {sig.name}<<<grid, block, shared>>>({', '.join(rename[n] for n in sig.cuda_params)});",
        "  CHECK(cudaGetLastError());",
        "  CHECK(cudaDeviceSynchronize());",
        "  cudaEvent_t start, stop;",
        "  CHECK(cudaEventCreate(&start));",
        "  CHECK(cudaEventCreate(&stop));",
        "  CHECK(cudaEventRecord(start));",
        "  for (int i = 0; i < iters; ++i)",
        f"    {sig.name}<<<grid, block, shared>>>({', '.join(rename[n] for n in sig.cuda_params)});",
        "  CHECK(cudaEventRecord(stop));",
        "  CHECK(cudaEventSynchronize(stop));",
        "  CHECK(cudaGetLastError());",
        "  float ms = 0.0f;",
        "  CHECK(cudaEventElapsedTime(&ms, start, stop));",
        f'  printf("{sig.name}: grid (%u, %u, %u) block (%u, %u, %u) shared %zu B: %.3f us per launch (%d launches)\\n",',
        "         grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, 1000.0f * ms / (iters > 0 ? iters : 1), iters);",
        "  return 0;",
        "}",
        "",
    ]
    return "\n".join(lines)


def _map_lines(m: TensorMapParam, tensor: TensorParam, rename: dict[str, str]) -> list[str]:
    """The encoding of map `m` of `tensor` (tensor_map.encode_arguments's conventions)."""
    dims = [f"(cuuint64_t)sym_{d}" if isinstance(d, str) else f"(cuuint64_t){d}" for d in reversed(tensor.shape)]
    strides, stride = [], f"(cuuint64_t){DTYPES[m.dtype].itemsize}"
    for dim in dims[:-1]:
        stride = f"{stride} * {dim}"
        strides.append(stride)
    box = ", ".join(str(b) for b in reversed(m.box))
    enums = (f"(CUtensorMapDataType){tensor_map.DATA_TYPES[m.dtype]}",
             f"(CUtensorMapSwizzle){tensor_map.SWIZZLES[m.swizzle]}",
             f"(CUtensorMapL2promotion){tensor_map.L2_PROMOTIONS[m.l2_promotion]}")
    return [
        f"  const cuuint64_t dims_{m.name}[] = {{{', '.join(dims)}}};",
        f"  const cuuint64_t strides_{m.name}[] = {{{', '.join(strides) or '0'}}};",
        f"  const cuuint32_t box_{m.name}[] = {{{box}}};",
        f'  CUtensorMap {rename[m.name]} = encode_map("{m.name}", {enums[0]}, {m.rank}, arg_{m.tensor}, '
        f"dims_{m.name}, strides_{m.name}, box_{m.name}, {enums[1]}, {enums[2]});",
    ]


def _declaration(name: str, params: dict, index_type: str, rename: dict[str, str],
                 maps: dict[str, TensorMapParam]) -> str:
    if name in maps:
        return f"CUtensorMap {rename[name]}"
    p = params.get(name)
    if isinstance(p, TensorParam):
        return f"void* {rename[name]}"
    if isinstance(p, ScalarParam):
        return f"{DTYPES[p.dtype].cxx} {rename[name]}"
    return f"{index_type} {rename[name]}"


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
