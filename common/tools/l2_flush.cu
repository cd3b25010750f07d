// tut_l2_flush: what the benchmarks' L2 flush leaves for the timed launch to pay. Two kernels, one
// reading S bytes (tut::read_through, the flush's own read kernel) and one copying S/2 bytes to S/2
// others, are timed after each of three preparations, interleaved repetition by repetition:
//   read   - tut::L2Flush, the benchmarks' flush: a kernel reads a buffer of twice the L2 (clean lines)
//   memset - the same buffer overwritten by cudaMemsetAsync instead (every line left dirty)
//   warm   - nothing: what the previous launch left in L2
// When the memset column is slower than the read column, the timed kernel paid for writing back
// the flush's dirty lines. Prints a table; exits 77 without a CUDA device.
#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/timing.hpp"

#include <cstdio>
#include <exception>
#include <vector>

namespace {

__global__ void copy_all(const uint4* __restrict__ p, uint4* __restrict__ q, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    q[i] = p[i];
}

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    TUT_CUDA(cudaEventCreate(&start));
    TUT_CUDA(cudaEventCreate(&stop));
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

int run() {
  const tut::DeviceInfo dev = tut::query_device();
  const std::size_t flush_bytes = 2 * static_cast<std::size_t>(dev.l2_bytes);
  tut::L2Flush read_flush(flush_bytes);
  tut::DeviceBuffer<unsigned char> memset_flush(flush_bytes);
  tut::DeviceBuffer<uint4> sink(256);
  sink.fill_bytes(0);
  const unsigned grid = static_cast<unsigned>(dev.sm_count) * 8;
  constexpr int kWarmup = 5, kReps = 40;
  const char* arm_names[3] = {"read", "memset", "warm"};
  std::printf("%s, L2 %zu MiB, flush buffer %zu MiB; median of %d repetitions per cell, the three preparations "
              "interleaved; microseconds\n",
              dev.name.c_str(), flush_bytes >> 21, flush_bytes >> 20, kReps);
  std::printf("%-6s %6s %10s %10s %10s %13s\n", "kernel", "MiB", arm_names[0], arm_names[1], arm_names[2], "memset/read");
  Events ev;
  for (int k = 0; k < 2; ++k) {
    for (std::size_t mib : {8, 16, 32, 64, 128, 512}) {
      const std::size_t bytes = mib << 20;
      tut::DeviceBuffer<uint4> data(bytes / sizeof(uint4));
      data.fill_bytes(0);
      std::vector<double> t[3];
      for (int rep = 0; rep < kWarmup + kReps; ++rep) {
        for (int arm = 0; arm < 3; ++arm) {
          if (arm == 0) read_flush(nullptr);
          if (arm == 1) memset_flush.fill_bytes(static_cast<unsigned char>(rep), nullptr);
          TUT_CUDA(cudaEventRecord(ev.start));
          if (k == 0) {
            tut::read_through(data.data(), data.size(), sink.data(), grid, nullptr);  // the flush's own kernel
          } else {
            copy_all<<<grid, 256>>>(data.data(), data.data() + data.size() / 2, data.size() / 2);
            TUT_CHECK_LAUNCH("copy_all");
          }
          TUT_CUDA(cudaEventRecord(ev.stop));
          TUT_CUDA(cudaEventSynchronize(ev.stop));
          float ms = 0;
          TUT_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
          if (rep >= kWarmup) t[arm].push_back(1e3 * ms);
        }
      }
      double med[3];
      for (int arm = 0; arm < 3; ++arm) med[arm] = tut::summarize(t[arm]).median;
      std::printf("%-6s %6zu %10.2f %10.2f %10.2f %13.3f\n", k == 0 ? "read" : "copy", mib, med[0], med[1], med[2],
                  med[1] / med[0]);
    }
  }
  return 0;
}

}  // namespace

int main() {
  if (!tut::has_cuda_device()) {
    std::printf("no CUDA device\n");
    return 77;
  }
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
