// The peer: CUB's DeviceScan (it ships with the CUDA toolkit), what a CUDA C++ user would call.
// Its temporary storage is the version's scratch: the size comes from CUB's own query. CUB
// initializes its tile flags inside the call, so that work is timed, as ours is.
#pragma once

#include "tut/check.hpp"

#include <cub/device/device_scan.cuh>

#include <climits>
#include <cstdint>

namespace ch03 {

// CUB picks its offset type from the type of num_items: 32-bit when n fits, as a caller would pass.
template <class T, class Fn>
cudaError_t cub_call(std::int64_t n, Fn&& fn) {
  if (n <= INT_MAX) return fn(static_cast<int>(n));
  return fn(n);
}

template <class T>
std::size_t cub_scan_scratch_bytes(std::int64_t n, bool exclusive) {
  std::size_t bytes = 0;
  TUT_CUDA((cub_call<T>(n, [&](auto items) {
    const T* in = nullptr;
    T* out = nullptr;
    return exclusive ? cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, items)
                     : cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, items);
  })));
  return bytes;
}

template <class T>
void cub_scan(cudaStream_t stream, std::int64_t n, bool exclusive, T* y, const T* x, void* scratch,
              std::size_t scratch_bytes) {
  if (n == 0) return;
  TUT_CUDA((cub_call<T>(n, [&](auto items) {
    return exclusive ? cub::DeviceScan::ExclusiveSum(scratch, scratch_bytes, x, y, items, stream)
                     : cub::DeviceScan::InclusiveSum(scratch, scratch_bytes, x, y, items, stream);
  })));
}

}  // namespace ch03
