// Host cost of one launch on this machine, without Python: loops of N launches of a tiny add.
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>

extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

static double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
  int n = 1024;
  float *a, *b, *c;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&c, n * 4);
  cudaStream_t stream; cudaStreamCreate(&stream);
  CUfunction fn; cudaGetFuncBySymbol((cudaFunction_t*)&fn, (const void*)add);
  void* params[] = {&a, &b, &c, &n};
  for (int counts : {100, 1000, 10000, 100000}) {
    for (int mode = 0; mode < 3; ++mode) {
      for (int w = 0; w < 200; ++w) add<<<4, 256, 0, stream>>>(a, b, c, n);
      cudaStreamSynchronize(stream);
      double t0 = now_us();
      if (mode == 0) for (int i = 0; i < counts; ++i) add<<<4, 256, 0, stream>>>(a, b, c, n);
      if (mode == 1) for (int i = 0; i < counts; ++i) cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, (CUstream)stream, params, nullptr);
      if (mode == 2) for (int i = 0; i < counts; ++i) { void* p = nullptr; cuMemAllocAsync((CUdeviceptr*)&p, 4096, (CUstream)stream); cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, (CUstream)stream, params, nullptr); cuMemFreeAsync((CUdeviceptr)p, (CUstream)stream); }
      double t1 = now_us();
      cudaStreamSynchronize(stream);
      double t2 = now_us();
      const char* names[] = {"<<<>>>", "cuLaunchKernel", "cuMemAllocAsync+launch+free"};
      printf("%-28s N=%6d host %.2f us/launch, until done %.2f us/launch\n", names[mode], counts, (t1 - t0) / counts, (t2 - t0) / counts);
    }
  }
  // the default (legacy) stream, as torch's current stream by default
  for (int counts : {1000, 10000}) {
    double t0 = now_us();
    for (int i = 0; i < counts; ++i) cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, 0, params, nullptr);
    double t1 = now_us();
    cudaDeviceSynchronize();
    printf("%-28s N=%6d host %.2f us/launch, until done %.2f us/launch\n", "cuLaunchKernel legacy stream", counts, (t1 - t0) / counts, (now_us() - t0) / counts);
  }
  printf("error: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
