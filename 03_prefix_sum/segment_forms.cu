// What the compiled segment buys: times v1-v3 in their two forms on the same data, in one process,
// alternating, and checks both against v5's output on the device.
//
//   ./build/segment_forms [--segment 256 --segment 1024] [--log2n 28] [--reps 20] [--rounds 3] [--once]
//
// The run-time form (SEG = 0) reads the segment from its argument: the step loop keeps its
// counter, compare and branch, and the number of segments is a 64-bit division. The compiled form
// (SEG = the segment, kCompiledSegments in kernels/segments.cuh) is what the ladder launches for
// the segments it was compiled for. Columns: each form's median time (the median of the rounds'
// medians), its rate (4 bytes read and 4 written per element, over the time), its fraction of the
// copy ceiling measured in the same process, and the run-time form's time over the compiled one's.
//
// --once launches each form once per segment, untimed, for Nsight Compute (the lesson's appendix
// shows the command); kernels are named v1_shared_kernel<SEG, int> and so on.
#include "kernels/v1_shared.cuh"
#include "kernels/v2_double_buffer.cuh"
#include "kernels/v3_warp_shuffle.cuh"
#include "kernels/v5_coarsened_vector.cuh"
#include "tut/arrays.cuh"
#include "tut/buffer.hpp"
#include "tut/device.hpp"
#include "tut/problem.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using Launch = void (*)(cudaStream_t, std::int64_t, std::int64_t, int*, const int*);

struct Ladder {
  const char* name;
  Launch runtime;   // SEG = 0 at every segment
  Launch compiled;  // the ladder's launcher: the compiled form where there is one
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Times v1-v3 with the segment read at run time and compiled for it");
  std::vector<std::int64_t> segments = {256, 512, 1024};
  int log2n = 28, reps = 20, rounds = 3;
  bool once = false;
  app.add_option("--segment", segments, "Segments to time (each must be one the ladder compiles: 128, 256, 512, 1024)");
  app.add_option("--log2n", log2n, "n = 2^log2n elements")->check(CLI::Range(10, 31));
  app.add_option("--reps", reps, "Timed launches per form per round")->check(CLI::Range(1, 10000));
  app.add_option("--rounds", rounds, "Rounds, each timing the run-time form then the compiled one")->check(CLI::Range(1, 100));
  app.add_flag("--once", once, "Launch each form once per segment, untimed (for a profiler)");
  CLI11_PARSE(app, argc, argv);
  for (std::int64_t s : segments)
    if (std::find(std::begin(ch03::kCompiledSegments), std::end(ch03::kCompiledSegments), s) ==
        std::end(ch03::kCompiledSegments)) {
      std::fprintf(stderr, "error: segment %lld has no compiled form (128, 256, 512 or 1024)\n", static_cast<long long>(s));
      return 2;
    }
  if (!tut::has_cuda_device()) {
    std::puts("no CUDA device: nothing to time");
    return 77;
  }
  const Ladder ladder[] = {
      {"v1_shared", &ch03::v1_shared_form<0, int>, &ch03::v1_shared<int>},
      {"v2_double_buffer", &ch03::v2_double_buffer_form<0, int>, &ch03::v2_double_buffer<int>},
      {"v3_warp_shuffle", &ch03::v3_warp_shuffle_form<0, int>, &ch03::v3_warp_shuffle<int>},
  };
  try {
    const tut::DeviceInfo dev = tut::query_device();
    const std::int64_t n = std::int64_t{1} << log2n;
    const auto bytes = static_cast<double>(2 * n * sizeof(int));
    auto x = tut::random_input<int>(n, 7, tut::InputSpec::uniform(-1000, 1000));
    tut::DeviceBuffer<int> expected(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
    if (once) {
      for (std::int64_t s : segments)
        for (const Ladder& l : ladder) {
          l.runtime(nullptr, n, s, y.data(), x.data());
          l.compiled(nullptr, n, s, y.data(), x.data());
        }
      TUT_CUDA(cudaDeviceSynchronize());
      return 0;
    }
    const tut::CopyCeiling ceiling = tut::measure_copy_ceiling();
    std::printf("%s: v1-v3 with the segment read at run time (SEG = 0) and compiled for it (SEG = segment); int32, "
                "n = %lld, %d rounds of %d timed launches; copy ceiling %.1f GB/s measured in this process\n",
                dev.name.c_str(), static_cast<long long>(n), rounds, reps, ceiling.GBps);
    std::printf("%-18s %7s  %11s %7s %7s  %11s %7s %7s  %7s\n", "version", "segment", "run-time ms", "GB/s", "of copy",
                "compiled ms", "GB/s", "of copy", "speedup");
    tut::TimingOptions opt;
    opt.reps = reps;
    opt.flush_bytes = tut::l2_flush_bytes(static_cast<std::size_t>(bytes), dev.l2_bytes);
    for (std::int64_t s : segments) {
      ch03::v5_coarsened_vector<int>(nullptr, n, s, expected.data(), x.data());
      for (const Ladder& l : ladder) {
        std::vector<double> runtime_ms, compiled_ms;
        bool right = true;
        for (int r = 0; r < rounds; ++r)
          for (Launch f : {l.runtime, l.compiled}) {
            const auto run = [&](cudaStream_t st) { f(st, n, s, y.data(), x.data()); };
            (f == l.runtime ? runtime_ms : compiled_ms).push_back(tut::time_kernel(run, opt).median);
            right = right && tut::count_different_bytes(y.data(), expected.data(), n * sizeof(int)) == 0;
          }
        const double rt = tut::summarize(runtime_ms).median, ct = tut::summarize(compiled_ms).median;
        const auto rate = [&](double ms) { return bytes / (ms * 1e6); };
        std::printf("%-18s %7lld  %11.4f %7.1f %7.3f  %11.4f %7.1f %7.3f  %7.3f%s\n", l.name, static_cast<long long>(s), rt,
                    rate(rt), rate(rt) / ceiling.GBps, ct, rate(ct), rate(ct) / ceiling.GBps, rt / ct,
                    right ? "" : "  WRONG");
        if (!right) return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
