// Why v4 beats v3: how much work one block does. Times ReLU on float32 with 16-byte packs, one pack
// in flight per thread (as v4), where each block of 256 threads moves K tiles of 4 KiB instead of
// one, for K = 1 (v4's shape) up to 128, in one process against the copy ceiling measured there.
//
//   ./build/subprojects/01_elementwise/block_work [--n N] [--reps R]
//   ncu --profile-from-start off ... block_work --profile K [--order scattered]   one launch, for Nsight Compute
//
// Three ways to hand out the tiles:
//   strided     block b moves tiles b, b + G, b + 2G, ... (G = the grid): v3's grid-stride loop, one
//               pack per step
//   contiguous  block b moves tiles bK ... bK + K - 1: each block walks its own stretch of the array
//   scattered   one tile per block, as v4, but block b (the scheduler starts blocks in about this
//               order) moves tile (b mod G) x K + b / G: blocks that run at the same time are K tiles
//               apart, so they touch K times as wide a stretch of memory as v4's, as in the other two
// In the first two, blocks live K times longer and the memory touched at once is K times wider; in
// the third, only the memory is wider. If the loss follows the lifetime, scattered stays at v4's
// speed; if it follows the width, it loses as much as the others.
//
// The prediction for "how long a block lives": the grid's last blocks start when the queue of
// blocks runs dry, and the SMs that finish first sit idle while the rest finish theirs. On
// average an SM idles for about half a block's lifetime, so the loss is about
//   K x S / (2 x tiles)        (S = blocks resident at once, tiles = n / 1024)
// The tool also measures the idle time itself: each block records when it ends and on which SM
// (%globaltimer, %smid; a separate launch, not a timed one), and "SM idle at the end" is the mean,
// over SMs, of the time from the SM's last block ending to the kernel's end, over the kernel's span.
//
// results/<gpu>.block_work.txt is this table; results/<gpu>.block_work_ncu.csv the Nsight Compute
// rows of --profile runs (the lesson, v4_tiles, reads both).
#include "kernels/ops.cuh"
#include "tut/arrays.cuh"
#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/problem.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>
#include <cuda_profiler_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

namespace {

constexpr int kThreads = 256;  // 256 packs of 16 bytes: a 4 KiB tile per block and step

struct BlockRecord {
  unsigned long long start_ns, end_ns;
  unsigned sm;
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned sm_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

enum Order : int { kStrided, kContiguous, kScattered };
const char* order_name(int order) {
  return order == kStrided ? "strided" : order == kContiguous ? "contiguous" : "scattered";
}

template <int ORDER>
__global__ __launch_bounds__(kThreads) void relu_block_work(const float4* __restrict__ x, float4* __restrict__ y,
                                                            std::int64_t n_pack, std::int64_t tiles, int k_tiles,
                                                            BlockRecord* records) {
  unsigned long long start = 0;
  if (records != nullptr && threadIdx.x == 0) start = global_ns();
  const std::int64_t b = blockIdx.x, groups = (tiles + k_tiles - 1) / k_tiles;
  const int steps = ORDER == kScattered ? 1 : k_tiles;
#pragma unroll 1
  for (int k = 0; k < steps; ++k) {
    const std::int64_t tile = ORDER == kContiguous ? b * k_tiles + k
                              : ORDER == kStrided  ? b + static_cast<std::int64_t>(k) * gridDim.x
                                                   : (b % groups) * k_tiles + b / groups;
    if (tile >= tiles) break;
    const std::int64_t i = tile * kThreads + threadIdx.x;
    if (i < n_pack) {
      const float4 v = x[i];
      const ch01::Relu relu;
      y[i] = make_float4(relu(v.x), relu(v.y), relu(v.z), relu(v.w));
    }
  }
  if (records != nullptr) {
    __syncthreads();  // the block's last loads have returned
    if (threadIdx.x == 0) records[blockIdx.x] = {start, global_ns(), sm_id()};
  }
}

struct Row {
  int k;
  int order;
  double ms, fraction, idle_tail, predicted_loss;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ReLU with K tiles per block: the cost of long-lived blocks");
  std::int64_t n = std::int64_t{1} << 28;
  int reps = 30, profile_k = 0;
  std::string profile_order = "strided";
  app.add_option("--profile", profile_k, "Run K tiles per block once between cudaProfilerStart and Stop, and nothing else")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--order", profile_order, "With --profile: strided, contiguous or scattered")
      ->check(CLI::IsMember({"strided", "contiguous", "scattered"}));
  app.add_option("--n", n, "Elements (a multiple of 1024)")->check(CLI::Range(std::int64_t{1024}, std::int64_t{1} << 32));
  app.add_option("--reps", reps, "Timed repetitions per configuration");
  CLI11_PARSE(app, argc, argv);
  if (n % (4 * kThreads) != 0) {
    std::fprintf(stderr, "error: --n must be a multiple of %d, got %lld\n", 4 * kThreads, static_cast<long long>(n));
    return 2;
  }
  if (!tut::has_cuda_device()) {
    std::puts("no CUDA device: nothing to measure");
    return 77;
  }
  try {
    const tut::DeviceInfo dev = tut::query_device();
    const std::int64_t n_pack = n / 4, tiles = n_pack / kThreads;
    auto x = tut::random_input<float>(n, 11, tut::InputSpec::uniform(-1, 1));
    tut::DeviceBuffer<float> y(static_cast<std::size_t>(n)), expected(static_cast<std::size_t>(n));
    const auto* px = reinterpret_cast<const float4*>(x.data());
    int per_sm = 0;
    TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, relu_block_work<kStrided>, kThreads, 0));
    const std::int64_t resident = static_cast<std::int64_t>(per_sm) * dev.sm_count;

    const auto grid_of = [&](int order, int k) {
      const std::int64_t groups = (tiles + k - 1) / k;
      return static_cast<unsigned>(order == kScattered ? groups * k : groups);
    };
    const auto launch = [&](int order, int k, float* out, BlockRecord* rec, cudaStream_t s) {
      const unsigned grid = grid_of(order, k);
      auto* py = reinterpret_cast<float4*>(out);
      if (order == kContiguous) relu_block_work<kContiguous><<<grid, kThreads, 0, s>>>(px, py, n_pack, tiles, k, rec);
      else if (order == kStrided) relu_block_work<kStrided><<<grid, kThreads, 0, s>>>(px, py, n_pack, tiles, k, rec);
      else relu_block_work<kScattered><<<grid, kThreads, 0, s>>>(px, py, n_pack, tiles, k, rec);
      TUT_CHECK_LAUNCH("relu_block_work");
    };
    if (profile_k > 0) {
      const int order = profile_order == "contiguous" ? kContiguous : profile_order == "scattered" ? kScattered : kStrided;
      launch(order, profile_k, y.data(), nullptr, nullptr);  // warm-up
      TUT_CUDA(cudaDeviceSynchronize());
      TUT_CUDA(cudaProfilerStart());
      launch(order, profile_k, y.data(), nullptr, nullptr);
      TUT_CUDA(cudaDeviceSynchronize());
      TUT_CUDA(cudaProfilerStop());
      return 0;
    }
    launch(kStrided, 1, expected.data(), nullptr, nullptr);  // K = 1: one tile per block, v4's shape

    const tut::CopyCeiling ceiling = tut::measure_copy_ceiling();
    tut::TimingOptions opt;
    opt.reps = reps;
    opt.flush_bytes = tut::l2_flush_bytes(2 * n * sizeof(float), dev.l2_bytes);
    const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
    std::vector<Row> rows;
    for (int k : {1, 2, 4, 8, 16, 32, 64, 128}) {
      for (int order : {kStrided, kContiguous, kScattered}) {
        if (k == 1 && order != kStrided) continue;  // the same launch
        const tut::Stats t = tut::time_kernel([&](cudaStream_t s) { launch(order, k, y.data(), nullptr, s); }, opt);
        if (tut::count_different_bytes(y.data(), expected.data(), n * sizeof(float)) != 0)
          throw std::runtime_error(std::string(order_name(order)) + ", K = " + std::to_string(k) +
                                   ": output differs from K = 1");
        // One more launch that records when each block ends and on which SM.
        const std::size_t grid = grid_of(order, k);
        tut::DeviceBuffer<BlockRecord> records(grid);
        launch(order, k, y.data(), records.data(), nullptr);
        TUT_CUDA(cudaDeviceSynchronize());
        std::vector<BlockRecord> rec(grid);
        TUT_CUDA(cudaMemcpy(rec.data(), records.data(), grid * sizeof(BlockRecord), cudaMemcpyDeviceToHost));
        unsigned long long first = ~0ull, last = 0;
        std::vector<unsigned long long> sm_last(static_cast<std::size_t>(dev.sm_count), 0);
        for (const auto& r : rec) {
          first = std::min(first, r.start_ns);
          last = std::max(last, r.end_ns);
          if (r.sm < sm_last.size()) sm_last[r.sm] = std::max(sm_last[r.sm], r.end_ns);
        }
        double idle = 0;
        for (unsigned long long e : sm_last) idle += static_cast<double>(last - std::max(e, first));
        idle /= static_cast<double>(sm_last.size()) * static_cast<double>(last - first);
        const double gbps = bytes / (t.median * 1e6);
        rows.push_back({k, order, t.median, gbps / ceiling.GBps, idle,
                        static_cast<double>(order == kScattered ? 1 : k) * resident / (2.0 * static_cast<double>(tiles))});
      }
    }
    std::printf("%s: ReLU f32, n = %lld, 256 threads x 1 pack per step; copy ceiling %.1f GB/s (%s); %lld blocks "
                "resident at once, %lld tiles; median of %d\n",
                dev.name.c_str(), static_cast<long long>(n), ceiling.GBps, ceiling.shape.c_str(),
                static_cast<long long>(resident), static_cast<long long>(tiles), reps);
    std::printf("%-5s %-11s %9s %8s %14s %16s\n", "K", "tiles", "ms", "of copy", "SM idle at end",
                "predicted loss");
    for (const Row& r : rows)
      std::printf("%-5d %-11s %9.4f %8.3f %13.1f%% %15.1f%%\n", r.k, order_name(r.order), r.ms,
                  r.fraction, 100 * r.idle_tail, 100 * r.predicted_loss);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
