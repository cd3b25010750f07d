// How v7's tile shape was chosen: times v7_decoupled_lookback in several configurations against
// CUB's InclusiveSum on int32, in one process, at the sizes the chapter's target names (2^24 to
// 2^28), and checks every configuration's output against CUB's on the device.
//
//   ./build/tune_lookback [--reps 20] [--timeline]
//
// Columns: time over CUB's time at each size (below 1: faster than CUB). A configuration is
// LookbackConfig<rows of 16-byte packs per lane, minimum blocks per SM, nanoseconds of sleep in the
// spin, flags per lane per look-back step, a look-back warp of its own that starts at once (true)
// or warp 0 after the scan (false, the paper's order), data warps>. kernels/v7_decoupled_lookback.cuh's
// V7Config is the one the chapter uses.
//
// --timeline: where a tile's time goes, at n = 2^28. Each tile records (%globaltimer) when its block
// took the ticket, when the tile's total was published, when the look-back's sum was known, when
// the prefix was published and when thread 0 had issued its stores, and how many rounds of flag
// reads its look-back took. The table gives the median and the 90th percentile of each phase.
#include "kernels/cub_scan.cuh"
#include "kernels/v7_decoupled_lookback.cuh"
#include "tut/buffer.hpp"
#include "tut/arrays.cuh"
#include "tut/device.hpp"
#include "tut/problem.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

// The timeline's storage: NoMarks::kCount words per tile.
__device__ unsigned long long* g_marks;

struct TimelineMarks : ch03::NoMarks {
  __device__ static void mark(int what, std::int64_t tile, unsigned value = 0) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    g_marks[tile * kCount + what] = what == kRounds ? value : t;
  }
};

struct Candidate {
  std::string name;
  bool own_warp;
  std::function<std::size_t(std::int64_t)> scratch;
  std::function<void(cudaStream_t, std::int64_t, int*, const int*, void*, std::size_t)> run;
};

template <class C>
std::string config_name() {
  return "<" + std::to_string(C::rows) + ", " + std::to_string(C::min_blocks) + ", " + std::to_string(C::sleep_ns) +
         ", " + std::to_string(C::flags) + ", " + (C::own_warp ? "true" : "false") + ", " +
         std::to_string(C::data_warps) + ", " + (C::smem_tile ? "true" : "false") + ">";
}

template <int ROWS, int MIN_BLOCKS, int SLEEP, int FLAGS, bool OWN_WARP, int DATA_WARPS, bool SMEM = false,
          class MARKS = ch03::NoMarks>
Candidate candidate() {
  using C = ch03::LookbackConfig<ROWS, MIN_BLOCKS, SLEEP, FLAGS, OWN_WARP, DATA_WARPS, SMEM, MARKS>;
  return {config_name<C>(), C::own_warp, [](std::int64_t n) { return ch03::v7_scratch_bytes<C>(n); },
          [](cudaStream_t s, std::int64_t n, int* y, const int* x, void* scratch, std::size_t bytes) {
            ch03::v7_decoupled_lookback<int, C>(s, n, false, y, x, scratch, bytes);
          }};
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// One recorded launch of `c` (a candidate built with TimelineMarks) at n, and its table row.
void timeline(const Candidate& c, std::int64_t n, const int* x, int* y, const int* expected) {
  using M = ch03::NoMarks;
  const std::size_t bytes = c.scratch(n);
  const auto tiles = static_cast<std::size_t>((bytes - ch03::kFlagsOffset) / sizeof(unsigned long long));
  tut::DeviceBuffer<unsigned char> scratch(bytes);
  scratch.fill_bytes(0);
  tut::DeviceBuffer<unsigned long long> marks(tiles * M::kCount);
  unsigned long long* p = marks.data();
  TUT_CUDA(cudaMemcpyToSymbol(g_marks, &p, sizeof p));
  c.run(nullptr, n, y, x, scratch.data(), bytes);
  TUT_CUDA(cudaDeviceSynchronize());
  if (tut::count_different_bytes(y, expected, n * sizeof(int)) != 0) throw std::runtime_error(c.name + ": wrong result");
  std::vector<unsigned long long> m(tiles * M::kCount);
  TUT_CUDA(cudaMemcpy(m.data(), marks.data(), m.size() * sizeof(m[0]), cudaMemcpyDeviceToHost));
  std::vector<double> load, wait, store, life, rounds, per_round;
  unsigned long long first = ~0ull, last = 0;
  for (std::size_t t = 1; t < tiles; ++t) {  // tile 0 does not look back
    const unsigned long long* r = &m[t * M::kCount];
    first = std::min(first, r[M::kStart]);
    last = std::max(last, r[M::kStored]);
    const auto us = [](unsigned long long a, unsigned long long b) { return (static_cast<double>(b) - static_cast<double>(a)) * 1e-3; };
    load.push_back(us(r[M::kStart], r[M::kTotal]));
    wait.push_back(us(r[M::kTotal], r[M::kPrefix]));
    store.push_back(us(r[M::kPrefix], r[M::kStored]));
    life.push_back(us(r[M::kStart], r[M::kStored]));
    rounds.push_back(static_cast<double>(r[M::kRounds]));
    // From the look-back's first read to its sum: the start (own warp) or the total (warp 0).
    const unsigned long long from = c.own_warp ? r[M::kStart] : r[M::kTotal];
    if (r[M::kRounds] > 0) per_round.push_back(us(from, r[M::kBefore]) / static_cast<double>(r[M::kRounds]));
  }
  const auto cell = [](const std::vector<double>& v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%6.2f %6.2f", percentile(v, 0.5), percentile(v, 0.9));
    return std::string(buf);
  };
  std::printf("%-32s %8.3f %s  %s  %s  %s  %s  %s\n", c.name.c_str(), (static_cast<double>(last) - static_cast<double>(first)) * 1e-6,
              cell(load).c_str(), cell(wait).c_str(), cell(store).c_str(), cell(life).c_str(), cell(rounds).c_str(),
              cell(per_round).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Times v7's tile configurations against CUB's InclusiveSum");
  int reps = 20;
  bool show_timeline = false;
  app.add_option("--reps", reps, "Timed repetitions per configuration and size");
  app.add_flag("--timeline", show_timeline, "Where a tile's time goes, at n = 2^28, instead of the timing table");
  CLI11_PARSE(app, argc, argv);
  if (!tut::has_cuda_device()) {
    std::puts("no CUDA device: nothing to tune");
    return 77;
  }
  try {
    const tut::DeviceInfo dev = tut::query_device();
    if (show_timeline) {
      const std::int64_t n = std::int64_t{1} << 28;
      auto x = tut::random_input<int>(n, 7, tut::InputSpec::uniform(-1000, 1000));
      tut::DeviceBuffer<int> expected(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
      const std::size_t cub_bytes = ch03::cub_scan_scratch_bytes<int>(n, false);
      tut::DeviceBuffer<unsigned char> cub_scratch(cub_bytes);
      ch03::cub_scan<int>(nullptr, n, false, expected.data(), x.data(), cub_scratch.data(), cub_bytes);
      std::printf("%s: where a tile's time goes, int32, n = 2^28, one recorded launch each; microseconds, median "
                  "and 90th percentile over the tiles\n",
                  dev.name.c_str());
      std::printf("%-32s %8s %13s  %13s  %13s  %13s  %13s  %13s\n", "config", "span ms", "load+scan",
                  "wait prefix", "store", "tile life", "flag rounds", "us per round");
      using TM = TimelineMarks;
      for (const Candidate& c :
           {candidate<16, 2, 0, 1, false, 8, false, TM>(), candidate<16, 2, 256, 1, true, 7, false, TM>(),
            candidate<32, 1, 512, 1, true, 7, false, TM>(), candidate<32, 2, 512, 1, true, 7, true, TM>()})
        timeline(c, n, x.data(), y.data(), expected.data());
      return 0;
    }
    const std::vector<Candidate> candidates = {
        // The paper's order: warp 0 looks back after the scan; the tile in registers.
        candidate<8, 4, 0, 1, false, 8>(),
        candidate<16, 2, 0, 1, false, 8>(),
        // A warp of its own looks back from the start.
        candidate<16, 2, 256, 1, true, 7>(),
        candidate<32, 1, 256, 1, true, 7>(),
        candidate<32, 1, 512, 1, true, 7>(),
        // The tile waits in shared memory: more tiles per SM.
        candidate<8, 6, 256, 1, true, 8, true>(),
        candidate<12, 4, 256, 1, true, 8, true>(),
        candidate<16, 3, 256, 1, true, 8, true>(),
        candidate<16, 3, 512, 1, true, 8, true>(),
        candidate<24, 2, 256, 1, true, 8, true>(),
        candidate<32, 2, 512, 1, true, 7, true>(),
        candidate<16, 3, 0, 1, false, 8, true>(),
    };
    std::printf("%s: v7 time / CUB InclusiveSum time, int32, median of %d\n%-32s", dev.name.c_str(), reps, "config");
    const std::vector<int> powers = {24, 25, 26, 27, 28};
    for (int p : powers) std::printf("    2^%d", p);
    std::printf("\n");
    std::vector<std::vector<double>> ratio(candidates.size(), std::vector<double>(powers.size()));
    std::vector<double> cub_ms(powers.size());
    for (std::size_t k = 0; k < powers.size(); ++k) {
      const std::int64_t n = std::int64_t{1} << powers[k];
      auto x = tut::random_input<int>(n, 7, tut::InputSpec::uniform(-1000, 1000));
      tut::DeviceBuffer<int> expected(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
      tut::TimingOptions opt;
      opt.reps = reps;
      opt.flush_bytes = tut::l2_flush_bytes(2 * n * sizeof(int), dev.l2_bytes);
      const std::size_t cub_bytes = ch03::cub_scan_scratch_bytes<int>(n, false);
      tut::DeviceBuffer<unsigned char> cub_scratch(cub_bytes);
      const auto cub = [&](cudaStream_t s) { ch03::cub_scan<int>(s, n, false, expected.data(), x.data(), cub_scratch.data(), cub_bytes); };
      cub_ms[k] = tut::time_kernel(cub, opt).median;
      for (std::size_t c = 0; c < candidates.size(); ++c) {
        const std::size_t bytes = candidates[c].scratch(n);
        tut::DeviceBuffer<unsigned char> scratch(bytes);
        scratch.fill_bytes(0);
        const auto run = [&](cudaStream_t s) { candidates[c].run(s, n, y.data(), x.data(), scratch.data(), bytes); };
        const double ms = tut::time_kernel(run, opt).median;
        const std::uint64_t differ = tut::count_different_bytes(y.data(), expected.data(), n * sizeof(int));
        ratio[c][k] = differ == 0 ? ms / cub_ms[k] : -1;
      }
    }
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      std::printf("%-32s", candidates[c].name.c_str());
      for (double r : ratio[c]) r < 0 ? std::printf("    WRONG") : std::printf("  %7.3f", r);
      std::printf("\n");
    }
    std::printf("%-32s", "CUB ms");
    for (double ms : cub_ms) std::printf("  %7.4f", ms);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
