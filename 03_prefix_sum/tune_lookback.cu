// How v7's tile shape was chosen: times v7_decoupled_lookback in several configurations against
// CUB's InclusiveSum on int32, in one process, at the sizes the chapter's target names (2^24 to
// 2^28), and checks every configuration's output against CUB's on the device.
//
//   ./build/tune_lookback [--reps 20]
//
// Columns: time over CUB's time at each size (below 1: faster than CUB). A configuration is
// LookbackConfig<rows of 16-byte packs per lane, minimum blocks per SM, nanoseconds of sleep in the
// spin, flags per lane per look-back step>; kernels/v7_decoupled_lookback.cuh's V7Config is the one the chapter uses.
#include "kernels/cub_scan.cuh"
#include "kernels/v7_decoupled_lookback.cuh"
#include "tut/buffer.hpp"
#include "tut/arrays.cuh"
#include "tut/device.hpp"
#include "tut/problem.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Candidate {
  std::string name;
  std::function<std::size_t(std::int64_t)> scratch;
  std::function<void(cudaStream_t, std::int64_t, int*, const int*, void*, std::size_t)> run;
};

template <int ROWS, int MIN_BLOCKS, int SLEEP, int FLAGS>
Candidate candidate() {
  using C = ch03::LookbackConfig<ROWS, MIN_BLOCKS, SLEEP, FLAGS>;
  return {"<" + std::to_string(ROWS) + ", " + std::to_string(MIN_BLOCKS) + ", " + std::to_string(SLEEP) + ", " +
              std::to_string(FLAGS) + ">",
          [](std::int64_t n) { return ch03::v7_scratch_bytes<C>(n); },
          [](cudaStream_t s, std::int64_t n, int* y, const int* x, void* scratch, std::size_t bytes) {
            ch03::v7_decoupled_lookback<int, C>(s, n, false, y, x, scratch, bytes);
          }};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Times v7's tile configurations against CUB's InclusiveSum");
  int reps = 20;
  app.add_option("--reps", reps, "Timed repetitions per configuration and size");
  CLI11_PARSE(app, argc, argv);
  if (!tut::has_cuda_device()) {
    std::puts("no CUDA device: nothing to tune");
    return 77;
  }
  try {
    const std::vector<Candidate> candidates = {
        candidate<2, 1, 0, 1>(),  candidate<4, 1, 0, 1>(),  candidate<4, 1, 0, 4>(),  candidate<4, 1, 64, 4>(),
        candidate<8, 1, 0, 1>(),  candidate<8, 4, 0, 1>(),  candidate<8, 4, 0, 4>(),  candidate<8, 4, 0, 2>(),
        candidate<16, 2, 0, 1>(), candidate<16, 2, 0, 4>(), candidate<16, 1, 0, 4>(),
    };
    const tut::DeviceInfo dev = tut::query_device();
    std::printf("%s: v7 time / CUB InclusiveSum time, int32, median of %d\n%-20s", dev.name.c_str(), reps, "config");
    const std::vector<int> powers = {24, 25, 26, 27, 28};
    for (int p : powers) std::printf("    2^%d", p);
    std::printf("\n");
    std::vector<std::vector<double>> ratio(candidates.size(), std::vector<double>(powers.size()));
    std::vector<double> cub_ms(powers.size());
    for (std::size_t k = 0; k < powers.size(); ++k) {
      const std::int64_t n = std::int64_t{1} << powers[k];
      tut::InputArray<int> x(n, 7, tut::InputSpec::uniform(-1000, 1000));
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
      std::printf("%-20s", candidates[c].name.c_str());
      for (double r : ratio[c]) r < 0 ? std::printf("    WRONG") : std::printf("  %7.3f", r);
      std::printf("\n");
    }
    std::printf("%-20s", "CUB ms");
    for (double ms : cub_ms) std::printf("  %7.4f", ms);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
