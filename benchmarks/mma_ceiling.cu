// The mma.sync m16n8k16 throughput ceiling (issue 16): built and run by benchmarks/mma_ceiling.py,
// which documents the variants and checks the check-mode dumps against the PTX ISA model.
//
//   mma_ceiling check DIR     2 warps, 8 iterations of every variant; writes DIR/<name>.in/.out
//   mma_ceiling bench [MS]    every variant at 4, 8, 16, 32 warps/SM on every SM, ~MS ms a launch
//
// Lines on stdout: "CHECK key=value ...", "RESULT key=value ...", "SKIP key=value ...", "DEVICE ...".
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t status_ = (call);                                                         \
    if (status_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
                   cudaGetErrorString(status_));                                          \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

namespace {

constexpr int kWarp = 32;
constexpr int kSlices = 4;          // k16 slices of a shared tile, iteration i reads slice i % kSlices
constexpr int kAtomABytes = 512;    // a 16x16 A atom: four 8x8 matrices (ldmatrix.x4 order), 16 B rows
constexpr int kAtomBBytes = 256;    // a 16x8 B atom stored K x N: two 8x8 matrices (k 0-7, k 8-15)

// -- instructions ------------------------------------------------------------------------------
// D = A * B + D with f32 accumulators; TYPES is the instruction's ".atype.btype" middle.
#define MMA_F32_ACCUMULATE(TYPES, d, a, b)                                                         \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPES                                     \
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                         \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                     \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))

template <bool kBf16Inputs>
struct F32Accumulate {
  using Word = float;
  static constexpr int kWords = 4;
  static constexpr bool kBf16 = kBf16Inputs;
  static constexpr const char* kName = kBf16Inputs ? "f32.bf16.bf16.f32" : "f32.f16.f16.f32";
  __device__ static void mma(float* d, const uint32_t* a, const uint32_t* b) {
    if constexpr (kBf16Inputs) {
      MMA_F32_ACCUMULATE("bf16.bf16", d, a, b);
    } else {
      MMA_F32_ACCUMULATE("f16.f16", d, a, b);
    }
  }
};
using F32Bf16 = F32Accumulate<true>;
using F32F16 = F32Accumulate<false>;

struct F16F16 {
  using Word = uint32_t;
  static constexpr int kWords = 2;
  static constexpr bool kBf16 = false;
  static constexpr const char* kName = "f16.f16.f16.f16";
  __device__ static void mma(uint32_t* d, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
        : "+r"(d[0]), "+r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

__device__ __forceinline__ uint32_t word_bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ uint32_t word_bits(uint32_t x) { return x; }

__device__ __forceinline__ void ldmatrix_x4(uint32_t* r, uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t* r, uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t* r, uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(address));
}

// Accumulator j of the warp, word w, lane l at out[((warp * kAcc + j) * kWords + w) * 32 + l].
template <class Op, int kAcc>
__device__ void store_accumulators(uint32_t* out, typename Op::Word (&acc)[kAcc][Op::kWords]) {
  const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int j = 0; j < kAcc; ++j)
#pragma unroll
    for (int w = 0; w < Op::kWords; ++w)
      out[((warp * kAcc + j) * Op::kWords + w) * kWarp + lane] = word_bits(acc[j][w]);
}

// -- kernels -----------------------------------------------------------------------------------
// Operands in registers: in = A words [2][32 lanes][4] then B words [2][32][2]; accumulator j
// uses operand set j % 2. kAcc independent accumulators per warp hide the mma latency.
template <class Op, int kAcc>
__global__ void mma_registers(const uint32_t* __restrict__ in, uint32_t* __restrict__ out,
                              long long* __restrict__ cycles, int iters) {
  const int lane = threadIdx.x % kWarp;
  uint32_t a[2][4], b[2][2];
#pragma unroll
  for (int s = 0; s < 2; ++s) {
#pragma unroll
    for (int r = 0; r < 4; ++r) a[s][r] = in[(s * kWarp + lane) * 4 + r];
#pragma unroll
    for (int r = 0; r < 2; ++r) b[s][r] = in[2 * kWarp * 4 + (s * kWarp + lane) * 2 + r];
  }
  typename Op::Word acc[kAcc][Op::kWords] = {};
  __syncthreads();
  const long long start = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < kAcc; ++j) Op::mma(acc[j], a[j % 2], b[j % 2]);
  }
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - start;
  store_accumulators<Op, kAcc>(out, acc);
}

// Copy the kSlices shared slices in (every warp reads the same tile) and return its address.
__device__ uint32_t load_tile(const uint32_t* __restrict__ in, int slice_bytes) {
  extern __shared__ uint4 tile[];
  const uint4* source = reinterpret_cast<const uint4*>(in);
  for (int i = threadIdx.x; i < kSlices * slice_bytes / 16; i += blockDim.x) tile[i] = source[i];
  __syncthreads();
  return static_cast<uint32_t>(__cvta_generic_to_shared(tile));
}

// Fresh operands for every mma: accumulator j reads A atom j by ldmatrix.x4 and B atom j by
// ldmatrix.x2.trans (2 loads per mma). A slice holds kAcc A atoms, then kAcc B atoms.
template <class Op, int kAcc>
__global__ void mma_ldmatrix_fresh(const uint32_t* __restrict__ in, uint32_t* __restrict__ out,
                                   long long* __restrict__ cycles, int iters) {
  constexpr int kSliceBytes = kAcc * (kAtomABytes + kAtomBBytes);
  const uint32_t base = load_tile(in, kSliceBytes);
  const int lane = threadIdx.x % kWarp;
  typename Op::Word acc[kAcc][Op::kWords] = {};
  const long long start = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    const uint32_t slice = base + (it % kSlices) * kSliceBytes;
#pragma unroll
    for (int j = 0; j < kAcc; ++j) {
      uint32_t a[4], b[2];
      ldmatrix_x4(a, slice + j * kAtomABytes + 16 * lane);
      ldmatrix_x2_trans(b, slice + kAcc * kAtomABytes + j * kAtomBBytes + 16 * (lane % 16));
      Op::mma(acc[j], a, b);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - start;
  store_accumulators<Op, kAcc>(out, acc);
}

// A warp tile of kM x kN atoms (16*kM x 8*kN) per k16 step, as lower-gemm-mma plans it: kM
// ldmatrix.x4 for A, kN / 2 ldmatrix.x4.trans for B (two n-atoms each), kM * kN mmas.
// A slice holds kM A atoms, then kN B atoms; accumulator (i, j) is number i * kN + j.
template <class Op, int kM, int kN>
__global__ void mma_ldmatrix_tile(const uint32_t* __restrict__ in, uint32_t* __restrict__ out,
                                  long long* __restrict__ cycles, int iters) {
  static_assert(kN % 2 == 0, "B is loaded two n-atoms at a time");
  constexpr int kSliceBytes = kM * kAtomABytes + kN * kAtomBBytes;
  const uint32_t base = load_tile(in, kSliceBytes);
  const int lane = threadIdx.x % kWarp;
  typename Op::Word acc[kM * kN][Op::kWords] = {};
  const long long start = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    const uint32_t slice = base + (it % kSlices) * kSliceBytes;
    uint32_t a[kM][4], b[kN / 2][4];  // b[p]: n-atom 2p in registers 0-1, n-atom 2p + 1 in 2-3
#pragma unroll
    for (int i = 0; i < kM; ++i) ldmatrix_x4(a[i], slice + i * kAtomABytes + 16 * lane);
#pragma unroll
    for (int p = 0; p < kN / 2; ++p)
      ldmatrix_x4_trans(b[p], slice + kM * kAtomABytes + 2 * p * kAtomBBytes + 16 * lane);
#pragma unroll
    for (int i = 0; i < kM; ++i)
#pragma unroll
      for (int j = 0; j < kN; ++j) Op::mma(acc[i * kN + j], a[i], &b[j / 2][2 * (j % 2)]);
  }
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - start;
  store_accumulators<Op, kM * kN>(out, acc);
}

// -- host --------------------------------------------------------------------------------------
using Kernel = void (*)(const uint32_t*, uint32_t*, long long*, int);

struct Variant {
  std::string name;
  const char* inst;
  const char* feed;  // registers, fresh or tile
  int tile_m, tile_n, accumulators, words, in_words, shared_bytes;
  bool bf16;
  Kernel kernel;
};

template <class Op, int kAcc>
Variant registers_variant() {
  return {std::string("registers-acc") + std::to_string(kAcc) + "-" + Op::kName, Op::kName, "registers", 0, 0,
          kAcc, Op::kWords, 2 * kWarp * 6, 0, Op::kBf16, mma_registers<Op, kAcc>};
}

template <class Op, int kAcc>
Variant fresh_variant() {
  const int bytes = kSlices * kAcc * (kAtomABytes + kAtomBBytes);
  return {std::string("fresh-acc") + std::to_string(kAcc) + "-" + Op::kName, Op::kName, "fresh", 0, 0, kAcc,
          Op::kWords, bytes / 4, bytes, Op::kBf16, mma_ldmatrix_fresh<Op, kAcc>};
}

template <class Op, int kM, int kN>
Variant tile_variant() {
  const int bytes = kSlices * (kM * kAtomABytes + kN * kAtomBBytes);
  return {std::string("tile") + std::to_string(kM) + "x" + std::to_string(kN) + "-" + Op::kName, Op::kName, "tile",
          kM, kN, kM * kN, Op::kWords, bytes / 4, bytes, Op::kBf16, mma_ldmatrix_tile<Op, kM, kN>};
}

template <class Op>
void add_variants(std::vector<Variant>& variants) {
  variants.push_back(registers_variant<Op, 4>());
  variants.push_back(registers_variant<Op, 8>());
  variants.push_back(fresh_variant<Op, 4>());
  variants.push_back(tile_variant<Op, 2, 4>());
  variants.push_back(tile_variant<Op, 4, 8>());
}

// Elements q / 8 with q in -2..2: every product and partial sum of the check is exact in f16 and f32.
uint16_t element_bits(int q, bool bf16) {
  static const uint16_t f16[3] = {0x0000, 0x3000, 0x3400};   // 0, 0.125, 0.25
  static const uint16_t bf16v[3] = {0x0000, 0x3E00, 0x3E80};
  const uint16_t magnitude = (bf16 ? bf16v : f16)[q < 0 ? -q : q];
  return q < 0 ? static_cast<uint16_t>(magnitude | 0x8000) : magnitude;
}

std::vector<uint32_t> make_input(const Variant& v, uint64_t seed) {
  std::vector<uint32_t> words(v.in_words);
  uint64_t state = seed;
  auto next = [&state]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % 5) - 2;
  };
  for (uint32_t& w : words) {
    const uint32_t low = element_bits(next(), v.bf16);
    w = low | (static_cast<uint32_t>(element_bits(next(), v.bf16)) << 16);
  }
  return words;
}

struct Launch {
  const Variant& v;
  int blocks, threads, shared_bytes;
  uint32_t *in, *out;
  long long* cycles;

  Launch(const Variant& variant, int blocks_, int threads_, int shared_bytes_)
      : v(variant), blocks(blocks_), threads(threads_), shared_bytes(shared_bytes_) {
    const std::vector<uint32_t> input = make_input(v, 0x5EEDULL);
    CUDA_CHECK(cudaMalloc(&in, input.size() * 4));
    CUDA_CHECK(cudaMemcpy(in, input.data(), input.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMalloc(&out, out_words() * 4));
    CUDA_CHECK(cudaMemset(out, 0xFF, out_words() * 4));  // poisoned
    CUDA_CHECK(cudaMalloc(&cycles, blocks * sizeof(long long)));
    CUDA_CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  }
  ~Launch() {
    cudaFree(in);
    cudaFree(out);
    cudaFree(cycles);
  }
  size_t out_words() const { return static_cast<size_t>(blocks) * threads * v.accumulators * v.words; }
  void run(int iters) const {
    v.kernel<<<blocks, threads, shared_bytes>>>(in, out, cycles, iters);
    CUDA_CHECK(cudaGetLastError());
  }
  float time_ms(int iters) const {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start));
    run(iters);
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return ms;
  }
  double mean_cycles() const {
    std::vector<long long> host(blocks);
    CUDA_CHECK(cudaMemcpy(host.data(), cycles, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
    double sum = 0;
    for (long long c : host) sum += static_cast<double>(c);
    return sum / blocks;
  }
};

void write_file(const std::string& path, const void* data, size_t bytes) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(data, 1, bytes, file) != bytes || std::fclose(file) != 0) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

void print_fields(const char* tag, const Variant& v) {
  std::printf("%s name=%s inst=%s feed=%s tile_m=%d tile_n=%d accumulators=%d slices=%d", tag, v.name.c_str(), v.inst,
              v.feed, v.tile_m, v.tile_n, v.accumulators, kSlices);
}

constexpr int kCheckThreads = 2 * kWarp;
constexpr int kCheckIters = 8;

void check(const std::vector<Variant>& variants, const std::string& dir) {
  for (const Variant& v : variants) {
    Launch launch(v, 1, kCheckThreads, std::max(v.shared_bytes, 1));
    launch.run(kCheckIters);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<uint32_t> out(launch.out_words());
    CUDA_CHECK(cudaMemcpy(out.data(), launch.out, out.size() * 4, cudaMemcpyDeviceToHost));
    const std::vector<uint32_t> input = make_input(v, 0x5EEDULL);
    write_file(dir + "/" + v.name + ".in", input.data(), input.size() * 4);
    write_file(dir + "/" + v.name + ".out", out.data(), out.size() * 4);
    print_fields("CHECK", v);
    std::printf(" warps=%d iters=%d\n", kCheckThreads / kWarp, kCheckIters);
  }
}

// One block of `warps` warps on every SM: the dynamic shared memory asked for is over half an
// SM's, so no SM can hold two blocks.
void bench(const std::vector<Variant>& variants, const cudaDeviceProp& prop, float target_ms) {
  const int one_block_per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor / 2) + 1024;
  for (const Variant& v : variants) {
    cudaFuncAttributes attributes;
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, v.kernel));
    const int shared_bytes = std::max(v.shared_bytes, one_block_per_sm);
    CUDA_CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
    for (int warps : {4, 8, 16, 32}) {
      int resident = 0;
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, v.kernel, warps * kWarp, shared_bytes));
      if (resident != 1) {
        print_fields("SKIP", v);
        std::printf(" warps=%d regs=%d resident_blocks=%d\n", warps, attributes.numRegs, resident);
        continue;
      }
      Launch launch(v, prop.multiProcessorCount, warps * kWarp, shared_bytes);
      launch.run(64);  // warm up
      const float probe_ms = launch.time_ms(256);
      const double scaled = 256.0 * target_ms / std::max(probe_ms, 1e-3f);
      const int iters = static_cast<int>(std::min(std::max(scaled, 256.0), 1e8));
      std::vector<float> runs;
      double cycles = 0;
      for (int r = 0; r < 5; ++r) {
        runs.push_back(launch.time_ms(iters));
        cycles += launch.mean_cycles() / 5;
      }
      print_fields("RESULT", v);
      std::printf(" warps=%d regs=%d local_bytes=%zu sms=%d iters=%d cycles=%.0f ms=", warps, attributes.numRegs,
                  attributes.localSizeBytes, prop.multiProcessorCount, iters, cycles);
      for (size_t r = 0; r < runs.size(); ++r) std::printf("%s%.4f", r ? "," : "", runs[r]);
      std::printf("\n");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if ((mode != "check" || argc != 3) && (mode != "bench" || argc > 3)) {
    std::fprintf(stderr, "usage: %s check DIR | bench [TARGET_MS]\n", argv[0]);
    return 2;
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  std::printf("DEVICE sms=%d cc=%d.%d clock_khz=%d name=%s\n", prop.multiProcessorCount, prop.major, prop.minor,
              clock_khz, prop.name);
  std::vector<Variant> variants;
  add_variants<F32Bf16>(variants);
  add_variants<F32F16>(variants);
  add_variants<F16F16>(variants);
  if (mode == "check") {
    check(variants, argv[2]);
  } else {
    bench(variants, prop, argc == 3 ? std::strtof(argv[2], nullptr) : 25.0f);
  }
  std::fflush(stdout);
  return 0;
}
