// Two of the source's mistakes, reproduced for compute-sanitizer (tests/sanitizer_demo.py runs
// them; nothing in the chapter's ladder uses this code):
//
//   read_past_end    kernel_3 reads input[gtid] before it checks gtid < n. With n = 1000 and
//                    1024-thread blocks, 24 threads read past the end of a 1000-element allocation;
//                    memcheck reports "Invalid __global__ read". The results are right, which is why
//                    only a tool finds it.
//   missing_barrier  v1_shared without the barrier between a step's reads and its writes: a thread
//                    may add a value its neighbour already updated. racecheck reports the hazard on
//                    the shared buffer. (v0 keeps its buffer in global memory, where racecheck does
//                    not look: remove v0's barrier and only wrong results show it.)
//
//   source_bugs --probe | read_past_end | missing_barrier
#include "kernels/warp_scan.cuh"
#include "tut/check.hpp"
#include "tut/device.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kBlock = 1024;

__global__ void reads_before_check(const int* input, int* output, int n) {
  __shared__ ch03::BlockScanStorage<int> storage;
  const int gtid = threadIdx.x + blockIdx.x * blockDim.x;
  const int val = input[gtid];  // the source's order: read first
  int total;
  const int before = ch03::block_exclusive_scan(val, total, storage);
  if (gtid < n) output[gtid] = before + val;
}

__global__ void shared_without_middle_barrier(const int* input, int* output, int n) {
  __shared__ int buffer[kBlock];
  const int tid = threadIdx.x;
  const int gtid = blockIdx.x * blockDim.x + tid;
  buffer[tid] = gtid < n ? input[gtid] : 0;
  __syncthreads();
  for (int offset = 1; offset < kBlock; offset <<= 1) {
    int before = 0;
    if (tid >= offset) before = buffer[tid - offset];
    // the barrier that belongs here is missing
    if (tid >= offset) buffer[tid] += before;
    __syncthreads();
  }
  if (gtid < n) output[gtid] = buffer[tid];
}

}  // namespace

int main(int argc, char** argv) {
  if (!tut::has_cuda_device()) {
    std::puts("no CUDA device: skipping");
    return 77;
  }
  if (argc != 2 || std::strcmp(argv[1], "--probe") == 0) return argc == 2 ? 0 : 2;
  const int n = 1000;
  int *x = nullptr, *y = nullptr;
  TUT_CUDA(cudaMalloc(&x, n * sizeof(int)));  // exactly n elements: no slack to read into
  TUT_CUDA(cudaMalloc(&y, n * sizeof(int)));
  const std::vector<int> ones(n, 1);
  TUT_CUDA(cudaMemcpy(x, ones.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  if (std::strcmp(argv[1], "read_past_end") == 0) {
    reads_before_check<<<1, kBlock>>>(x, y, n);
  } else if (std::strcmp(argv[1], "missing_barrier") == 0) {
    shared_without_middle_barrier<<<1, kBlock>>>(x, y, n);
  } else {
    std::fprintf(stderr, "unknown bug '%s': read_past_end or missing_barrier\n", argv[1]);
    return 2;
  }
  // Under memcheck the bad read also fails the launch; that is the point, so report and go on.
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s: %s\n", argv[1], cudaGetErrorString(e));
  cudaFree(x);
  cudaFree(y);
  return 0;
}
