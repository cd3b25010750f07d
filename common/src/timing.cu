#include "tut/timing.hpp"

#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace tut {

Stats summarize(std::vector<double> s) {
  if (s.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(s.begin(), s.end());
  const std::size_t m = s.size() / 2;
  Stats st;
  st.median = s.size() % 2 ? s[m] : 0.5 * (s[m - 1] + s[m]);
  st.min = s.front();
  st.max = s.back();
  st.reps = static_cast<int>(s.size());
  return st;
}

namespace {
class Event {
 public:
  Event() { TUT_CUDA(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};
}  // namespace

Stats time_kernel(const std::function<void(cudaStream_t)>& launch, const TimingOptions& opt,
                  cudaStream_t stream) {
  if (opt.reps < 1) throw std::invalid_argument("time_kernel: reps must be at least 1");
  DeviceBuffer<unsigned char> flush(opt.flush_bytes);
  for (int i = 0; i < opt.warmup; ++i) launch(stream);
  TUT_CUDA(cudaStreamSynchronize(stream));

  std::vector<Event> start(opt.reps), stop(opt.reps);
  for (int i = 0; i < opt.reps; ++i) {
    if (flush.size()) flush.fill_bytes(static_cast<unsigned char>(i), stream);
    TUT_CUDA(cudaEventRecord(start[i].get(), stream));
    launch(stream);
    TUT_CUDA(cudaEventRecord(stop[i].get(), stream));
  }
  TUT_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> ms(opt.reps);
  for (int i = 0; i < opt.reps; ++i) {
    float t = 0;
    TUT_CUDA(cudaEventElapsedTime(&t, start[i].get(), stop[i].get()));
    ms[i] = t;
  }
  return summarize(std::move(ms));
}

std::size_t l2_flush_bytes(std::size_t working_set_bytes, std::size_t l2_bytes) {
  return working_set_bytes < 4 * l2_bytes ? 2 * l2_bytes : 0;
}

namespace {
// The ceiling's kernel: a grid-stride copy of 16-byte values, U independent loads in flight per
// thread before their stores. The benchmarks divide each version's bandwidth by what the best
// launch shape of this kernel achieves.
template <int U>
__global__ void copy_ceiling_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::int64_t n,
                                    std::int64_t stride) {
  std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// One contiguous tile of 256 x 4 values per block, four loads in flight per thread, a block per
// tile: on the H100 this shape comes within a percent of cudaMemcpyAsync, where grid-stride
// loops stay a few percent short. n must be a multiple of the tile.
__global__ void copy_ceiling_tiles_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst) {
  const std::int64_t base = blockIdx.x * std::int64_t{1024} + threadIdx.x;
  uint4 v[4];
#pragma unroll
  for (int u = 0; u < 4; ++u) v[u] = src[base + u * 256];
#pragma unroll
  for (int u = 0; u < 4; ++u) dst[base + u * 256] = v[u];
}

std::size_t ceiling_bytes(const DeviceInfo& d, std::size_t min_bytes) {
  std::size_t want = std::max<std::size_t>(min_bytes, 8 * static_cast<std::size_t>(d.l2_bytes));
  std::size_t free_b = 0, total_b = 0;
  TUT_CUDA(cudaMemGetInfo(&free_b, &total_b));
  // Source and destination must both fit, with room to spare for the flush buffer.
  while (want > (std::size_t{64} << 20) && 2 * want > free_b / 2) want /= 2;
  return want;
}
}  // namespace

CopyCeiling measure_copy_ceiling(int reps, std::size_t min_bytes) {
  const DeviceInfo d = query_device();
  const std::size_t bytes = ceiling_bytes(d, min_bytes);
  const std::int64_t n = static_cast<std::int64_t>(bytes / sizeof(uint4)) / 1024 * 1024;  // whole tiles
  DeviceBuffer<uint4> src(n), dst(n);
  src.fill_bytes(1);
  constexpr int block = 256;
  const std::int64_t resident = std::int64_t{d.sm_count} * (d.max_threads_per_sm / block);
  TimingOptions opt;
  opt.warmup = 3;
  opt.reps = reps;
  CopyCeiling best;
  const std::size_t moved = 2 * static_cast<std::size_t>(n) * sizeof(uint4);
  auto consider = [&](const std::string& shape, const std::function<void(cudaStream_t)>& launch) {
    const Stats st = time_kernel(launch, opt);
    const double GBps = static_cast<double>(moved) / (st.median * 1e-3) / 1e9;
    if (GBps > best.GBps) best = {GBps, moved, st, shape};
  };
  // Grid-stride loops with one or four loads in flight per thread over 32 waves of blocks, and
  // one tile per block.
  const std::int64_t grid = std::max<std::int64_t>(1, std::min<std::int64_t>((n + block - 1) / block, resident * 32));
  const std::int64_t stride = grid * block;
  consider("grid-stride, 1 load in flight per thread, " + std::to_string(grid) + " blocks", [&](cudaStream_t s) {
    copy_ceiling_kernel<1><<<static_cast<unsigned>(grid), block, 0, s>>>(src.data(), dst.data(), n, stride);
    TUT_CHECK_LAUNCH("copy_ceiling_kernel<1>");
  });
  consider("grid-stride, 4 loads in flight per thread, " + std::to_string(grid) + " blocks", [&](cudaStream_t s) {
    copy_ceiling_kernel<4><<<static_cast<unsigned>(grid), block, 0, s>>>(src.data(), dst.data(), n, stride);
    TUT_CHECK_LAUNCH("copy_ceiling_kernel<4>");
  });
  consider("one 16 KiB tile per block, 4 loads in flight per thread, " + std::to_string(n / 1024) + " blocks",
           [&](cudaStream_t s) {
             copy_ceiling_tiles_kernel<<<static_cast<unsigned>(n / 1024), block, 0, s>>>(src.data(), dst.data());
             TUT_CHECK_LAUNCH("copy_ceiling_tiles_kernel");
           });
  return best;
}

}  // namespace tut
