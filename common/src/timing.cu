#include "tut/timing.hpp"

#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/random.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
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
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Enqueues `reps` timed repetitions and returns their samples in milliseconds.
std::vector<double> samples(const std::function<void(cudaStream_t)>& launch, int reps, cudaStream_t stream,
                            const std::function<void(cudaStream_t)>& before) {
  std::vector<Event> start(reps), stop(reps);
  for (int i = 0; i < reps; ++i) {
    before(stream);
    TUT_CUDA(cudaEventRecord(start[i].get(), stream));
    launch(stream);
    TUT_CUDA(cudaEventRecord(stop[i].get(), stream));
  }
  TUT_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> ms(reps);
  for (int i = 0; i < reps; ++i) {
    float t = 0;
    TUT_CUDA(cudaEventElapsedTime(&t, start[i].get(), stop[i].get()));
    ms[i] = t;
  }
  return ms;
}
}  // namespace

namespace {
// The flush: every 16-byte value of `src` read once, grid-stride. The store is never taken for the
// contents L2Flush gives it, but the compiler cannot know that, so every load stays.
__global__ void read_through_kernel(const uint4* __restrict__ src, std::size_t n, uint4* __restrict__ sink) {
  unsigned x = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = src[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9E3779B9u) sink[threadIdx.x] = make_uint4(x, x, x, x);
}
}  // namespace

L2Flush::L2Flush(std::size_t bytes) : buf_((bytes + sizeof(uint4) - 1) / sizeof(uint4)), sink_(bytes ? 256 : 0) {
  if (!bytes) return;
  buf_.fill_bytes(0);  // all zero: read_through_kernel's store is never taken
  TUT_CUDA(cudaStreamSynchronize(nullptr));
}

void read_through(const uint4* src, std::size_t n, uint4* sink, unsigned grid, cudaStream_t stream) {
  read_through_kernel<<<grid, 256, 0, stream>>>(src, n, sink);
  TUT_CHECK_LAUNCH("read_through (the L2 flush's read)");
}

void L2Flush::operator()(cudaStream_t stream) {
  if (!buf_.size()) return;
  read_through(buf_.data(), buf_.size(), sink_.data(), 1024, stream);
}

namespace {
// One thread holds the stream for `cycles` SM clock cycles.
__global__ void busy_wait_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
}  // namespace

Stats time_kernel(const std::function<void(cudaStream_t)>& launch, const TimingOptions& opt, cudaStream_t stream,
                  const std::function<void(cudaStream_t)>& before) {
  if (opt.reps < 1) throw std::invalid_argument("time_kernel: reps must be at least 1");
  if (opt.busy_cycles < 0) throw std::invalid_argument("time_kernel: busy_cycles must not be negative");
  L2Flush flush(opt.flush_bytes);
  auto prepare = [&](cudaStream_t s) {
    if (before) before(s);
    flush(s);
    if (opt.busy_cycles > 0) {
      busy_wait_kernel<<<1, 1, 0, s>>>(opt.busy_cycles);
      TUT_CHECK_LAUNCH("busy_wait_kernel (the spin before a timed repetition)");
    }
  };
  for (int i = 0; i < opt.warmup; ++i) {
    prepare(stream);
    launch(stream);
  }
  TUT_CUDA(cudaStreamSynchronize(stream));
  return summarize(samples(launch, opt.reps, stream, prepare));
}

std::size_t l2_flush_bytes(std::size_t working_set_bytes, std::size_t l2_bytes) {
  return working_set_bytes < 4 * l2_bytes ? 2 * l2_bytes : 0;
}

const CopyShape* CopyCeiling::best_own() const {
  const CopyShape* best = nullptr;
  for (const auto& c : candidates)
    if (c.own && (!best || c.GBps > best->GBps)) best = &c;
  return best;
}

namespace {
// The ceiling's own copies. They time launch shapes, not lessons: chapter 02 builds the copy
// ladder step by step. n is a multiple of every tile.

// Grid-stride loop, U independent 16-byte loads in flight per thread before their stores.
template <int U>
__global__ void copy_grid_stride(const uint4* __restrict__ src, uint4* __restrict__ dst, std::int64_t n,
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

// One contiguous tile of B x L values per block, L loads in flight per thread, a block per tile.
template <int B, int L>
__global__ void __launch_bounds__(B) copy_tiles(const uint4* __restrict__ src, uint4* __restrict__ dst) {
  const std::int64_t base = blockIdx.x * static_cast<std::int64_t>(B * L) + threadIdx.x;
  uint4 v[L];
#pragma unroll
  for (int u = 0; u < L; ++u) v[u] = src[base + u * B];
#pragma unroll
  for (int u = 0; u < L; ++u) dst[base + u * B] = v[u];
}

// Reads every value once; the store never happens for these inputs but the compiler cannot know.
template <int B, int L>
__global__ void __launch_bounds__(B) read_tiles(const uint4* __restrict__ src, uint4* __restrict__ sink) {
  const std::int64_t base = blockIdx.x * static_cast<std::int64_t>(B * L) + threadIdx.x;
  uint4 v[L];
#pragma unroll
  for (int u = 0; u < L; ++u) v[u] = src[base + u * B];
  unsigned x = 0;
#pragma unroll
  for (int u = 0; u < L; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  if (x == 0x9E3779B9u) sink[threadIdx.x] = v[0];
}

template <int B, int L>
__global__ void __launch_bounds__(B) write_tiles(uint4* __restrict__ dst, unsigned value) {
  const std::int64_t base = blockIdx.x * static_cast<std::int64_t>(B * L) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < L; ++u) dst[base + u * B] = make_uint4(value, value, value, value);
}

constexpr std::int64_t kTileQuantum = 4096;  // uint4 values: every tile shape divides it

std::size_t ceiling_bytes(const DeviceInfo& d, std::size_t min_bytes) {
  std::size_t want = std::max<std::size_t>(min_bytes, 8 * static_cast<std::size_t>(d.l2_bytes));
  std::size_t free_b = 0, total_b = 0;
  TUT_CUDA(cudaMemGetInfo(&free_b, &total_b));
  // Source and destination must both fit, with room to spare for the flush buffer.
  while (want > (std::size_t{64} << 20) && 2 * want > free_b / 2) want /= 2;
  return want;
}

double GBps_of(std::size_t bytes, const Stats& st) { return st.median > 0 ? bytes / (st.median * 1e-3) / 1e9 : 0; }
}  // namespace

CopyCeiling measure_copy_ceiling(int reps, std::size_t min_bytes) {
  const DeviceInfo d = query_device();
  const std::int64_t n = static_cast<std::int64_t>(ceiling_bytes(d, min_bytes) / sizeof(uint4)) / kTileQuantum * kTileQuantum;
  DeviceBuffer<uint4> src(n), dst(n), sink(1024);
  src.fill_bytes(1);
  const std::size_t one_way = static_cast<std::size_t>(n) * sizeof(uint4);
  constexpr int block = 256;
  const std::int64_t grid = std::max<std::int64_t>(
      1, std::min<std::int64_t>(n / block, std::int64_t{d.sm_count} * (d.max_threads_per_sm / block) * 32));
  const std::int64_t stride = grid * block;
  const auto tiles = [n](int per_block) { return static_cast<unsigned>(n / per_block); };

  struct Candidate {
    CopyShape shape;
    std::function<void(cudaStream_t)> launch;
    std::vector<double> ms;
  };
  std::vector<Candidate> cands;
  auto candidate = [&](std::string name, bool own, std::function<void(cudaStream_t)> launch) {
    Candidate c;
    c.shape.name = std::move(name);
    c.shape.own = own;
    c.launch = std::move(launch);
    cands.push_back(std::move(c));
  };
  candidate("grid-stride, 1 load in flight per thread, " + std::to_string(grid) + " blocks of 256", true,
            [&](cudaStream_t s) {
              copy_grid_stride<1><<<static_cast<unsigned>(grid), block, 0, s>>>(src.data(), dst.data(), n, stride);
              TUT_CHECK_LAUNCH("copy_grid_stride<1>");
            });
  candidate("grid-stride, 4 loads in flight per thread, " + std::to_string(grid) + " blocks of 256", true,
            [&](cudaStream_t s) {
              copy_grid_stride<4><<<static_cast<unsigned>(grid), block, 0, s>>>(src.data(), dst.data(), n, stride);
              TUT_CHECK_LAUNCH("copy_grid_stride<4>");
            });
  candidate("4 KiB tile per block: 256 threads x 1 load in flight", true, [&](cudaStream_t s) {
    copy_tiles<256, 1><<<tiles(256), 256, 0, s>>>(src.data(), dst.data());
    TUT_CHECK_LAUNCH("copy_tiles<256, 1>");
  });
  candidate("16 KiB tile per block: 256 threads x 4 loads in flight", true, [&](cudaStream_t s) {
    copy_tiles<256, 4><<<tiles(1024), 256, 0, s>>>(src.data(), dst.data());
    TUT_CHECK_LAUNCH("copy_tiles<256, 4>");
  });
  candidate("32 KiB tile per block: 1024 threads x 2 loads in flight", true, [&](cudaStream_t s) {
    copy_tiles<1024, 2><<<tiles(2048), 1024, 0, s>>>(src.data(), dst.data());
    TUT_CHECK_LAUNCH("copy_tiles<1024, 2>");
  });
  candidate("cudaMemcpyAsync device to device", false, [&](cudaStream_t s) {
    TUT_CUDA(cudaMemcpyAsync(dst.data(), src.data(), one_way, cudaMemcpyDeviceToDevice, s));
  });
  // Rounds of every candidate in turn, so a drifting clock or temperature touches all alike; each
  // candidate's statistics pool the samples of every round.
  constexpr int rounds = 3;
  const int per_round = std::max(1, (reps + rounds - 1) / rounds);
  for (auto& c : cands) c.launch(nullptr);  // warm-up
  const auto nothing = [](cudaStream_t) {};
  for (int r = 0; r < rounds; ++r)
    for (auto& c : cands) {
      const auto ms = samples(c.launch, per_round, nullptr, nothing);
      c.ms.insert(c.ms.end(), ms.begin(), ms.end());
    }
  CopyCeiling out;
  out.bytes = 2 * one_way;
  for (auto& c : cands) {
    c.shape.stats = summarize(c.ms);
    c.shape.GBps = GBps_of(out.bytes, c.shape.stats);
    out.candidates.push_back(c.shape);
    if (c.shape.GBps > out.GBps) {
      out.GBps = c.shape.GBps;
      out.stats = c.shape.stats;
      out.shape = c.shape.name;
    }
  }
  const Stats rd = time_kernel([&](cudaStream_t s) {
    read_tiles<1024, 2><<<tiles(2048), 1024, 0, s>>>(src.data(), sink.data());
    TUT_CHECK_LAUNCH("read_tiles<1024, 2>");
  }, TimingOptions{2, reps, 0});
  const Stats wr = time_kernel([&](cudaStream_t s) {
    write_tiles<1024, 2><<<tiles(2048), 1024, 0, s>>>(dst.data(), 7u);
    TUT_CHECK_LAUNCH("write_tiles<1024, 2>");
  }, TimingOptions{2, reps, 0});
  out.read_GBps = GBps_of(one_way, rd);
  out.write_GBps = GBps_of(one_way, wr);
  return out;
}

namespace {
constexpr int kChains = 8;  // independent accumulators per thread: enough to hide the FMA latency

// Each thread runs kChains independent chains of a = a * b + c. b and c are kernel arguments, so
// nothing folds; the result is stored only if it equals a value it never reaches, which the
// compiler cannot know, so no chain is dead code.
__global__ void fma_f32_chains(int iterations, float b, float c, float* __restrict__ sink,
                               unsigned long long* __restrict__ clocks) {
  long long t0 = 0, c0 = 0;
  if (threadIdx.x == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    c0 = clock64();
  }
  float a[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) a[k] = static_cast<float>(threadIdx.x + k);
#pragma unroll 16
  for (int i = 0; i < iterations; ++i)
#pragma unroll
    for (int k = 0; k < kChains; ++k) a[k] = fmaf(a[k], b, c);
  float s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s += a[k];
  if (s == -1.0f) sink[threadIdx.x] = s;
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    long long t1 = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    clocks[0] = static_cast<unsigned long long>(clock64() - c0);
    clocks[1] = static_cast<unsigned long long>(t1 - t0);
  }
}

__global__ void hfma2_chains(int iterations, __half2 b, __half2 c, __half2* __restrict__ sink) {
  __half2 a[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) a[k] = __floats2half2_rn(threadIdx.x * 1e-3f, k * 1e-3f);
#pragma unroll 16
  for (int i = 0; i < iterations; ++i)
#pragma unroll
    for (int k = 0; k < kChains; ++k) a[k] = __hfma2(a[k], b, c);
  __half2 s = a[0];
#pragma unroll
  for (int k = 1; k < kChains; ++k) s = __hadd2(s, a[k]);
  if (__low2float(s) == -1.0f) sink[threadIdx.x] = s;
}
}  // namespace

ComputeCeiling measure_compute_ceiling(int reps) {
  const DeviceInfo d = query_device();
  constexpr int block = 256, iterations = 1 << 14;
  const unsigned grid = static_cast<unsigned>(d.sm_count * std::max(1, d.max_threads_per_sm / block) * 4);
  const double threads = static_cast<double>(grid) * block;
  DeviceBuffer<float> sink32(block);
  DeviceBuffer<__half2> sink16(block);
  DeviceBuffer<unsigned long long> clocks(2);
  ComputeCeiling out;
  out.fp32 = time_kernel([&](cudaStream_t s) {
    fma_f32_chains<<<grid, block, 0, s>>>(iterations, 0.999f, 0.001f, sink32.data(), clocks.data());
    TUT_CHECK_LAUNCH("fma_f32_chains");
  }, TimingOptions{2, reps, 0});
  out.fp16 = time_kernel([&](cudaStream_t s) {
    hfma2_chains<<<grid, block, 0, s>>>(iterations, __floats2half2_rn(0.999f, 0.999f), __floats2half2_rn(1e-3f, 1e-3f),
                                        sink16.data());
    TUT_CHECK_LAUNCH("hfma2_chains");
  }, TimingOptions{2, reps, 0});
  const double flops32 = threads * iterations * kChains * 2.0, flops16 = flops32 * 2.0;
  out.fp32_fma_GFLOPs = flops32 / (out.fp32.median * 1e-3) / 1e9;
  out.fp16_hfma2_GFLOPs = flops16 / (out.fp16.median * 1e-3) / 1e9;
  unsigned long long c[2] = {0, 0};
  clocks.download(c, 2);
  out.sm_clock_MHz = c[1] > 0 ? static_cast<double>(c[0]) / static_cast<double>(c[1]) * 1e3 : 0;
  return out;
}

namespace {
__global__ void pointer_chase(const std::uint32_t* __restrict__ next, std::uint32_t start, int hops,
                              std::uint32_t* __restrict__ end) {
  std::uint32_t i = start;
  for (int h = 0; h < hops; ++h) i = next[i];
  *end = i;
}

__global__ void link_cycle(const std::uint32_t* __restrict__ order, std::size_t slots, std::uint32_t stride,
                           std::uint32_t* __restrict__ next) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < slots;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    next[static_cast<std::size_t>(order[k]) * stride] = order[(k + 1) % slots] * stride;
}
}  // namespace

double measure_dram_latency_ns(std::size_t bytes, int hops) {
  // One link per 4 KiB, visited in a random cycle: a hop never finds its line in L1 or L2 (each
  // line is visited once) and lands on another DRAM row.
  constexpr std::uint32_t stride = 4096 / sizeof(std::uint32_t);
  const std::size_t slots = std::max<std::size_t>(2, bytes / 4096);
  constexpr int warm = 1000;
  if (static_cast<std::size_t>(warm + hops) >= slots)
    throw std::invalid_argument("measure_dram_latency_ns: too many hops for the region");
  std::vector<std::uint32_t> order(slots);
  std::iota(order.begin(), order.end(), 0u);
  const Random rng(20261122);
  for (std::size_t i = slots - 1; i > 0; --i) std::swap(order[i], order[rng.bits(i) % (i + 1)]);
  DeviceBuffer<std::uint32_t> d_order(order), d_next(slots * stride), d_end(1);
  link_cycle<<<256, 256>>>(d_order.data(), slots, stride, d_next.data());
  TUT_CHECK_LAUNCH("link_cycle");
  // The warm-up ends where the timed chase begins, so the timed hops all visit fresh lines.
  pointer_chase<<<1, 1>>>(d_next.data(), order[0] * stride, warm, d_end.data());
  TUT_CHECK_LAUNCH("pointer_chase");
  std::uint32_t start = 0;
  d_end.download(&start, 1);
  const Stats st = time_kernel([&](cudaStream_t s) {
    pointer_chase<<<1, 1, 0, s>>>(d_next.data(), start, hops, d_end.data());
    TUT_CHECK_LAUNCH("pointer_chase");
  }, TimingOptions{0, 1, 0});
  return st.median * 1e6 / hops;
}

}  // namespace tut
