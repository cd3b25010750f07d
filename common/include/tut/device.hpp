// What the benchmark needs to know about the GPU, read through cudaDeviceGetAttribute
// (CUDA 13 removed memoryClockRate and memoryBusWidth from cudaDeviceProp).
#pragma once

#include <cstddef>
#include <string>

namespace tut {

struct DeviceInfo {
  int id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int l2_bytes = 0;
  int mem_clock_khz = 0;     // peak memory clock
  int bus_width_bits = 0;
  std::size_t total_mem_bytes = 0;

  // Datasheet-style peak: two transfers per clock over the whole bus. A number to compare
  // with, never a ceiling to report against: the benchmarks use the measured copy ceiling.
  double theoretical_dram_GBps() const {
    return 2.0 * mem_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
  }
};

// True when at least one usable CUDA device is visible. Never throws: "no driver" and
// "no device" both answer false, so callers can skip cleanly.
bool has_cuda_device() noexcept;

// Properties of `device` (the current device when negative). Throws tut::CudaError.
DeviceInfo query_device(int device = -1);

// Registers per thread of a compiled kernel, read with cudaFuncGetAttributes; -1 for null.
int registers_per_thread(const void* kernel);

// "NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3": the results file name for this GPU.
std::string gpu_slug(const std::string& name);

}  // namespace tut
