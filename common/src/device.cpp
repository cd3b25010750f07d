#include "tut/device.hpp"

#include "tut/check.hpp"

#include <cctype>

namespace tut {

bool has_cuda_device() noexcept {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count > 0;
}

DeviceInfo query_device(int device) {
  if (device < 0) TUT_CUDA(cudaGetDevice(&device));
  DeviceInfo d;
  d.id = device;
  cudaDeviceProp prop{};
  TUT_CUDA(cudaGetDeviceProperties(&prop, device));
  d.name = prop.name;
  d.total_mem_bytes = prop.totalGlobalMem;
  auto attr = [device](cudaDeviceAttr a) {
    int v = 0;
    TUT_CUDA(cudaDeviceGetAttribute(&v, a, device));
    return v;
  };
  d.cc_major = attr(cudaDevAttrComputeCapabilityMajor);
  d.cc_minor = attr(cudaDevAttrComputeCapabilityMinor);
  d.sm_count = attr(cudaDevAttrMultiProcessorCount);
  d.max_threads_per_sm = attr(cudaDevAttrMaxThreadsPerMultiProcessor);
  d.l2_bytes = attr(cudaDevAttrL2CacheSize);
  d.mem_clock_khz = attr(cudaDevAttrMemoryClockRate);
  d.bus_width_bits = attr(cudaDevAttrGlobalMemoryBusWidth);
  return d;
}

int registers_per_thread(const void* kernel) {
  if (!kernel) return -1;
  cudaFuncAttributes a{};
  TUT_CUDA(cudaFuncGetAttributes(&a, kernel));
  return a.numRegs;
}

std::string gpu_slug(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
    if (keep) out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "unknown_gpu" : out;
}

}  // namespace tut
