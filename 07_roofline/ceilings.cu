// ceilings: this GPU's roofs, each measured now and printed next to its theoretical value.
//
//   ceilings [--json FILE] [--results-dir DIR]       (DIR/<gpu>.ceilings.json; ./tutorial bench runs it)
//
//   DRAM     the copy ceiling (the best of several copy kernels and cudaMemcpyAsync, bytes read plus
//            written), a read-only and a write-only stream, against two transfers per memory clock
//            over the bus (cudaDevAttrMemoryClockRate, cudaDevAttrGlobalMemoryBusWidth)
//   L2       a read-only stream over a quarter of the L2, loaded with ld.global.cg (L2 only, not L1)
//            and read 32 times in one launch; no device attribute gives the L2's bandwidth, so it
//            has no theoretical value here
//   FP32     FFMA chains (tut::measure_compute_ceiling), against SMs x FP32 lanes x 2 x the clock
//            the kernel saw (clock64() over %globaltimer); the lanes per SM come from a small table
//            by architecture (roofline.hpp), the one number no attribute gives
//   FP16     HFMA2 chains, against the FP32 rate times the architecture's FP16 multiple
//
// Exits 77 without a CUDA device.
#include "roofline.hpp"
#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

namespace {

// Reads `passes` times the first n values, through L2 only; the xor is stored only if it equals a
// value it never takes, so no load is dead.
__global__ void l2_read_kernel(const uint4* __restrict__ src, std::int64_t n, int passes, uint4* __restrict__ sink) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  unsigned x = 0;
  for (int p = 0; p < passes; ++p)
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
      const uint4 v = __ldcg(src + i);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  if (x == 0x9E3779B9u) sink[threadIdx.x] = make_uint4(x, x, x, x);
}

struct L2Result {
  double GBps = 0;
  std::size_t bytes = 0;
  tut::Stats stats;
};

L2Result measure_l2(const tut::DeviceInfo& d) {
  constexpr int passes = 32;
  const std::int64_t n = static_cast<std::int64_t>(d.l2_bytes / 4 / sizeof(uint4));
  tut::DeviceBuffer<uint4> src(static_cast<std::size_t>(n)), sink(1024);
  src.fill_bytes(3);
  const unsigned grid = static_cast<unsigned>(d.sm_count * (d.max_threads_per_sm / 256));
  L2Result r;
  r.bytes = static_cast<std::size_t>(n) * sizeof(uint4) * passes;
  r.stats = tut::time_kernel(
      [&](cudaStream_t s) {
        l2_read_kernel<<<grid, 256, 0, s>>>(src.data(), n, passes, sink.data());
        TUT_CHECK_LAUNCH("l2_read_kernel");
      },
      tut::TimingOptions{2, 20, 0});
  r.GBps = r.bytes / (r.stats.median * 1e-3) / 1e9;
  return r;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("This GPU's roofs, measured now, beside their theoretical values", "ceilings");
  std::string json_path, results_dir;
  app.add_option("--json", json_path, "Write the ceilings to this JSON file");
  app.add_option("--results-dir", results_dir, "Write the ceilings to DIR/<gpu>.ceilings.json");
  CLI11_PARSE(app, argc, argv);
  if (!tut::has_cuda_device()) {
    std::cout << "no CUDA device: no ceilings measured\n";
    return 77;
  }
  try {
    const tut::DeviceInfo d = tut::query_device();
    const tut::CopyCeiling copy = tut::measure_copy_ceiling();
    const L2Result l2 = measure_l2(d);
    const tut::ComputeCeiling fma = tut::measure_compute_ceiling();
    const ch07::Lanes lanes = ch07::lanes_of(d.cc_major, d.cc_minor);
    const double clock_hz = fma.sm_clock_MHz * 1e6;
    const double dram_theory = d.theoretical_dram_GBps();
    const double fp32_theory = lanes.fp32_per_sm ? ch07::fp32_peak(d.sm_count, lanes, clock_hz) / 1e9 : 0;
    const double fp16_theory = lanes.fp32_per_sm ? ch07::fp16_peak(d.sm_count, lanes, clock_hz) / 1e9 : 0;

    std::cout << d.name << ", compute capability " << d.cc_major << "." << d.cc_minor << ", " << d.sm_count
              << " SMs, SM clock seen " << fmt("%.0f", fma.sm_clock_MHz) << " MHz\n";
    std::cout << "roof                       measured       theoretical   measured / theoretical\n";
    auto row = [](const std::string& name, double got, double theory, const char* unit) {
      std::cout << name << std::string(name.size() < 26 ? 26 - name.size() : 1, ' ') << fmt("%9.1f ", got) << unit
                << (theory > 0 ? fmt("   %9.1f ", theory) + unit + fmt("   %.3f", got / theory) : "   (none: see below)")
                << "\n";
    };
    row("DRAM copy (read+write)", copy.GBps, dram_theory, "GB/s    ");
    row("DRAM read-only", copy.read_GBps, dram_theory, "GB/s    ");
    row("DRAM write-only", copy.write_GBps, dram_theory, "GB/s    ");
    row("L2 read", l2.GBps, 0, "GB/s    ");
    row("FP32 FMA", fma.fp32_fma_GFLOPs, fp32_theory, "GFLOP/s ");
    row("FP16 HFMA2", fma.fp16_hfma2_GFLOPs, fp16_theory, "GFLOP/s ");
    std::cout << "DRAM: two transfers per memory clock over the bus. L2: no attribute gives it. FP32: "
              << (lanes.fp32_per_sm ? std::to_string(lanes.fp32_per_sm) + " lanes per SM for this architecture"
                                    : std::string("this architecture is not in roofline.hpp's table"))
              << "; FP16: " << (lanes.fp32_per_sm ? std::to_string(lanes.fp16_per_fp32) + "x the FP32 rate" : "-")
              << ". Ridge (FP32 / copy): " << fmt("%.1f", fma.fp32_fma_GFLOPs / copy.GBps) << " FLOP/B measured"
              << (fp32_theory > 0 ? ", " + fmt("%.1f", fp32_theory / dram_theory) + " theoretical" : "") << "\n";

    std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    auto theory = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
    const nlohmann::json doc = {
        {"schema_version", 3},
        {"chapter", "07_roofline"},
        {"gpu", d.name},
        {"date", date},
        {"device",
         {{"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"sm_count", d.sm_count},
          {"l2_bytes", d.l2_bytes},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"datasheet_dram_GBps", dram_theory}}},
        {"sm_clock_MHz", fma.sm_clock_MHz},
        {"fp32_lanes_per_sm", lanes.fp32_per_sm ? nlohmann::json(lanes.fp32_per_sm) : nlohmann::json(nullptr)},
        {"fp16_per_fp32", lanes.fp32_per_sm ? nlohmann::json(lanes.fp16_per_fp32) : nlohmann::json(nullptr)},
        {"roofs",
         {{"dram_copy_GBps", {{"measured", copy.GBps}, {"theoretical", theory(dram_theory)}, {"how", copy.shape}}},
          {"dram_read_GBps", {{"measured", copy.read_GBps}, {"theoretical", theory(dram_theory)}, {"how", "read-only stream"}}},
          {"dram_write_GBps", {{"measured", copy.write_GBps}, {"theoretical", theory(dram_theory)}, {"how", "write-only stream"}}},
          {"l2_read_GBps", {{"measured", l2.GBps}, {"theoretical", nullptr},
                            {"how", "ld.global.cg over a quarter of the L2, 32 passes"}}},
          {"fp32_fma_GFLOPs", {{"measured", fma.fp32_fma_GFLOPs}, {"theoretical", theory(fp32_theory)}, {"how", "FFMA chains"}}},
          {"fp16_hfma2_GFLOPs",
           {{"measured", fma.fp16_hfma2_GFLOPs}, {"theoretical", theory(fp16_theory)}, {"how", "HFMA2 chains"}}}}}};
    for (const std::string& path :
         {json_path, results_dir.empty() ? std::string() : results_dir + "/" + tut::gpu_slug(d.name) + ".ceilings.json"}) {
      if (path.empty()) continue;
      const std::filesystem::path p(path);
      if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
      std::ofstream out(p);
      if (!out) throw std::runtime_error("cannot write " + path);
      out << doc.dump(2) << "\n";
      std::cout << "wrote " << path << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
