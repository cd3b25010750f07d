// What PyTorch's kernel does differently from v4: its blocks. Nsight Compute shows torch.mul as a
// vectorized_elementwise_kernel of 128-thread blocks with one 16-byte pack per input per thread,
// v4's work per thread; v4's blocks have 256 threads, and torch.mul's achieved occupancy is lower
// (63 % against 81 % on the H100, the chapter's profile table). Either could be worth the fraction
// of a percent between them. This tool times v4's own kernel (tut::ew::apply_tiles) with 64 to 1024
// threads per block, and with the threads an SM holds capped at 1536, 1024 or 512 (by dynamic
// shared memory the kernel never touches), on both of the chapter's problems, in one process, the
// configurations interleaved in rounds. "vs v4" is, per round, v4's time (256 threads, no cap) over
// the configuration's: above 1 is faster than v4. Every configuration's output is compared with
// v4's, byte for byte.
//
//   ./build/subprojects/01_elementwise/block_size [--n N] [--rounds R] [--reps K]
//   ncu --profile-from-start off ... block_size --profile --problem mul_f16 --threads 128 [--cap 1024]
//
// results/<gpu>.block_size.txt is this table (the lesson, after v4, reads it). The counters the lesson
// quotes come from one launch per configuration, appended to one CSV:
//   ncu --profile-from-start off --clock-control none --csv --print-units base --metrics M
//     block_size --profile --problem P --threads T --cap C >> results/<gpu>.block_size_ncu.csv
// where M is gpu__time_duration.sum, launch__grid_size, launch__block_size,
// launch__occupancy_limit_shared_mem, launch__occupancy_limit_warps,
// dram__throughput.avg.pct_of_peak_sustained_elapsed, sm__warps_active.avg.pct_of_peak_sustained_active,
// sm__warps_active.avg.per_cycle_active, sm__cycles_active.avg and smsp__warps_launched.sum, joined by commas.
// torch.mul's row: the same ncu command over a Python process that runs torch.mul(a, b, out=o) on
// 2^28 halves once to warm up, then once between torch.cuda.cudart().cudaProfilerStart() and Stop().
// block_size_ncu.py turns the CSV into results/<gpu>.block_size_ncu.txt.
#include "kernels/ops.cuh"
#include "tut/arrays.cuh"
#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/elementwise.cuh"
#include "tut/problem.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>
#include <cuda_fp16.h>
#include <cuda_profiler_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using ThreadCounts = std::integer_sequence<int, 64, 128, 256, 512, 1024>;
constexpr int kCaps[] = {0, 1536, 1024, 512};  // threads an SM may hold; 0: as many as fit

template <int... Ts>
std::vector<int> as_vector(std::integer_sequence<int, Ts...>) {
  return {Ts...};
}

// One problem's kernel at one block size, with the dynamic shared memory that caps residency.
struct Setup {
  std::string problem;
  int threads = 0, cap = 0, blocks_per_sm = 0, regs = 0;
  std::size_t smem = 0;
  std::function<void(cudaStream_t)> launch;
  const void* out = nullptr;
  const void* expected = nullptr;
  std::size_t out_bytes = 0;
  double bytes = 0;  // the floor: inputs read and output written once
};

// The dynamic shared memory that leaves room for at most cap / threads blocks per SM (0 for no
// cap), and makes it launchable.
std::size_t cap_smem(const void* kernel, int threads, int cap) {
  if (cap == 0) return 0;
  int dev = 0, per_sm = 0, reserved = 0, per_block_optin = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  TUT_CUDA(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  TUT_CUDA(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  TUT_CUDA(cudaDeviceGetAttribute(&per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const int blocks = std::max(1, cap / threads);
  // One byte more than a share of the SM's memory when `blocks + 1` blocks would share it.
  const std::size_t smem = std::min<std::size_t>(per_block_optin, per_sm / (blocks + 1) - reserved + 1);
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  return smem;
}

template <int N, int T, class Op, class R, class... IN>
Setup make_setup(const char* problem, int cap, std::int64_t n, R* out, const R* expected, const IN*... in) {
  const void* kernel = reinterpret_cast<const void*>(&tut::ew::apply_tiles<N, T, tut::ew::SimpleFactory<Op>, R, IN...>);
  Setup s;
  s.problem = problem;
  s.threads = T;
  s.cap = cap;
  s.smem = cap_smem(kernel, T, cap);
  TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s.blocks_per_sm, kernel, T, s.smem));
  cudaFuncAttributes attr{};
  TUT_CUDA(cudaFuncGetAttributes(&attr, kernel));
  s.regs = attr.numRegs;
  const std::size_t smem = s.smem;
  s.launch = [=](cudaStream_t stream) {
    const cudaError_t e = tut::ew::launch_tiles_packed_smem<N, T>(tut::ew::SimpleFactory<Op>{}, stream, smem, n, out, in...);
    TUT_CUDA(e);
  };
  s.out = out;
  s.expected = expected;
  s.out_bytes = static_cast<std::size_t>(n) * sizeof(R);
  s.bytes = static_cast<double>(n) * static_cast<double>(sizeof(R) + (sizeof(IN) + ...));
  return s;
}

// Every block size under every cap, leaving out caps below one block.
template <int N, class Op, int... Ts, class R, class... IN>
void add_setups(std::integer_sequence<int, Ts...>, std::vector<Setup>& out, const char* problem, std::int64_t n, R* y,
                const R* expected, const IN*... in) {
  for (int cap : kCaps) {
    auto add = [&](auto threads) {
      if (cap == 0 || cap >= decltype(threads)::value)
        out.push_back(make_setup<N, decltype(threads)::value, Op>(problem, cap, n, y, expected, in...));
    };
    (add(std::integral_constant<int, Ts>{}), ...);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("v4's kernel at 64 to 1024 threads per block, with and without a cap on the threads an SM holds");
  std::int64_t n = std::int64_t{1} << 28;
  int rounds = 5, reps = 20, profile_threads = 256, profile_cap = 0;
  bool profile = false;
  std::string profile_problem = "mul_f16";
  app.add_option("--n", n, "Elements per array (a multiple of 8)")
      ->check(CLI::Range(std::int64_t{8}, std::int64_t{1} << 31));
  app.add_option("--rounds", rounds, "Rounds; each times every configuration once")->check(CLI::Range(1, 1000));
  app.add_option("--reps", reps, "Timed launches per configuration and round")->check(CLI::Range(1, 100000));
  app.add_flag("--profile", profile, "Run one configuration once between cudaProfilerStart and Stop, and nothing else");
  app.add_option("--problem", profile_problem, "With --profile: relu_f32 or mul_f16")
      ->check(CLI::IsMember({"relu_f32", "mul_f16"}));
  app.add_option("--threads", profile_threads, "With --profile: threads per block")
      ->check(CLI::IsMember(as_vector(ThreadCounts{})));
  app.add_option("--cap", profile_cap, "With --profile: threads an SM may hold (0: no cap)")
      ->check(CLI::IsMember(std::vector<int>(std::begin(kCaps), std::end(kCaps))));
  CLI11_PARSE(app, argc, argv);
  if (n % 8 != 0) {
    std::fprintf(stderr, "error: --n must be a multiple of 8 (whole packs: this tool has no tail), got %lld\n",
                 static_cast<long long>(n));
    return 2;
  }
  if (!tut::has_cuda_device()) {
    std::puts("no CUDA device: nothing to measure");
    return 77;
  }
  try {
    const tut::DeviceInfo dev = tut::query_device();
    auto x = tut::random_input<float>(n, 11, tut::InputSpec::uniform(-1, 1));
    tut::DeviceBuffer<float> y(static_cast<std::size_t>(n)), y_v4(static_cast<std::size_t>(n));
    auto a = tut::random_input<__half>(n, 12, tut::InputSpec::uniform(-4, 4));
    auto b = tut::random_input<__half>(n, 13, tut::InputSpec::uniform(-4, 4));
    tut::DeviceBuffer<__half> z(static_cast<std::size_t>(n)), z_v4(static_cast<std::size_t>(n));
    // v4 itself (256 threads, through launch_tiles' alignment check) writes the expected outputs.
    TUT_CUDA(tut::ew::launch_tiles(tut::ew::SimpleFactory<ch01::Relu>{}, nullptr, n, y_v4.data(), x.data()));
    TUT_CUDA(tut::ew::launch_tiles(tut::ew::SimpleFactory<ch01::Mul>{}, nullptr, n, z_v4.data(), a.data(), b.data()));
    TUT_CUDA(cudaDeviceSynchronize());

    std::vector<Setup> setups;
    add_setups<4, ch01::Relu>(ThreadCounts{}, setups, "relu_f32", n, y.data(), y_v4.data(), x.data());
    add_setups<8, ch01::Mul>(ThreadCounts{}, setups, "mul_f16", n, z.data(), z_v4.data(), a.data(), b.data());

    if (profile) {
      for (const Setup& s : setups) {
        if (s.problem != profile_problem || s.threads != profile_threads || s.cap != profile_cap) continue;
        s.launch(nullptr);  // warm-up
        TUT_CUDA(cudaDeviceSynchronize());
        TUT_CUDA(cudaProfilerStart());
        s.launch(nullptr);
        TUT_CUDA(cudaDeviceSynchronize());
        TUT_CUDA(cudaProfilerStop());
        return 0;
      }
      throw std::invalid_argument("--threads " + std::to_string(profile_threads) + " is more than --cap " +
                                  std::to_string(profile_cap) + " allows");
    }

    const tut::CopyCeiling ceiling = tut::measure_copy_ceiling();
    tut::TimingOptions opt;
    opt.warmup = 3;
    opt.reps = reps;
    opt.flush_bytes = tut::l2_flush_bytes(static_cast<std::size_t>(2 * n * sizeof(float)), dev.l2_bytes);
    // medians[k][r]: setup k's median in round r; reference[p]: v4's setup for setup k's problem.
    std::vector<std::vector<double>> medians(setups.size());
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t k = 0; k < setups.size(); ++k) {
        const Setup& s = setups[k];
        medians[k].push_back(tut::time_kernel(s.launch, opt).median);
        if (r == 0 && tut::count_different_bytes(s.out, s.expected, s.out_bytes) != 0)
          throw std::runtime_error(s.problem + ", " + std::to_string(s.threads) + " threads, cap " +
                                   std::to_string(s.cap) + ": output differs from v4's");
      }
    }
    std::printf("%s: v4's kernel, n = %lld; copy ceiling %.1f GB/s (%s); %d rounds of %d launches per configuration, "
                "the median of the rounds' medians; \"vs v4\": v4's time over this one's, per round, median "
                "[min-max]\n",
                dev.name.c_str(), static_cast<long long>(n), ceiling.GBps, ceiling.shape.c_str(), rounds, reps);
    std::printf("%-9s %7s %5s %5s %9s %10s %9s %8s  %s\n", "problem", "threads", "cap", "regs", "blocks/SM",
                "threads/SM", "ms", "of copy", "vs v4");
    for (std::size_t k = 0; k < setups.size(); ++k) {
      const Setup& s = setups[k];
      std::size_t ref = k;
      for (std::size_t j = 0; j < setups.size(); ++j)
        if (setups[j].problem == s.problem && setups[j].threads == tut::ew::kBlockSize && setups[j].cap == 0) ref = j;
      std::vector<double> ratio;
      for (int r = 0; r < rounds; ++r) ratio.push_back(medians[ref][r] / medians[k][r]);
      const tut::Stats t = tut::summarize(medians[k]), q = tut::summarize(ratio);
      const double gbps = s.bytes / (t.median * 1e6);
      std::printf("%-9s %7d %5s %5d %9d %10d %9.4f %8.3f  %.3f [%.3f-%.3f]\n", s.problem.c_str(), s.threads,
                  s.cap ? std::to_string(s.cap).c_str() : "-", s.regs, s.blocks_per_sm, s.blocks_per_sm * s.threads,
                  t.median, gbps / ceiling.GBps, q.median, q.min, q.max);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
