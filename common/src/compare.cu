#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/problem.hpp"

#include <cstdint>

namespace tut {

namespace {
// Bytes [0, bytes) of a and b; by 16-byte words when both start 16-byte aligned, else byte by byte.
__global__ void count_different(const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                                std::size_t bytes, bool words, unsigned long long* __restrict__ count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t n_words = words ? bytes / 16 : 0;
  const uint4* wa = reinterpret_cast<const uint4*>(a);
  const uint4* wb = reinterpret_cast<const uint4*>(b);
  unsigned long long local = 0;
  for (std::size_t i = tid; i < n_words; i += stride) {
    const uint4 x = wa[i], y = wb[i];
    const unsigned d[4] = {x.x ^ y.x, x.y ^ y.y, x.z ^ y.z, x.w ^ y.w};
    for (unsigned v : d)
      for (int k = 0; k < 4; ++k) local += ((v >> (8 * k)) & 0xffu) != 0;
  }
  for (std::size_t i = n_words * 16 + tid; i < bytes; i += stride) local += a[i] != b[i];
  if (local) atomicAdd(count, local);
}
}  // namespace

std::uint64_t count_different_bytes(const void* a, const void* b, std::size_t bytes) {
  const bool words = reinterpret_cast<std::uintptr_t>(a) % 16 == 0 && reinterpret_cast<std::uintptr_t>(b) % 16 == 0;
  DeviceBuffer<unsigned long long> count(1);
  count.fill_bytes(0);
  count_different<<<1024, 256>>>(static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), bytes,
                                 words, count.data());
  TUT_CHECK_LAUNCH("count_different");
  unsigned long long total = 0;
  count.download(&total, 1);
  return total;
}

}  // namespace tut
