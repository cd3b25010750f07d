// tut_machine: this GPU's ceilings as JSON, for the profile tool and the lessons' worksheets: the
// device's attributes, the copy ceiling with every candidate shape, the read-only and write-only
// streams, and the latency of a load that misses the caches. Exits 77 without a CUDA device.
#include "tut/device.hpp"
#include "tut/timing.hpp"

#include <nlohmann/json.hpp>

#include <exception>
#include <iostream>

int main() {
  if (!tut::has_cuda_device()) {
    std::cout << "no CUDA device\n";
    return 77;
  }
  try {
    const tut::DeviceInfo d = tut::query_device();
    const tut::CopyCeiling c = tut::measure_copy_ceiling();
    const double latency = tut::measure_dram_latency_ns();
    nlohmann::json cands = nlohmann::json::array();
    for (const auto& s : c.candidates) cands.push_back({{"shape", s.name}, {"own", s.own}, {"GBps", s.GBps}});
    const nlohmann::json j = {
        {"gpu", d.name},
        {"sm_count", d.sm_count},
        {"max_threads_per_sm", d.max_threads_per_sm},
        {"l2_bytes", d.l2_bytes},
        {"datasheet_dram_GBps", d.theoretical_dram_GBps()},
        {"copy_ceiling", {{"GBps", c.GBps}, {"winner", c.shape}, {"candidates", cands},
                          {"read_only_GBps", c.read_GBps}, {"write_only_GBps", c.write_GBps}}},
        {"dram_latency_ns", latency},
        // Little's law: bytes that must be in flight to sustain the copy ceiling at that latency.
        {"bytes_in_flight_needed", c.GBps * latency},
        {"bytes_in_flight_needed_per_sm", c.GBps * latency / d.sm_count}};
    std::cout << j.dump(2) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
