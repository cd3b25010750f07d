// The tensor as every part of the chapter sees it: N x C x H x W in one of two memory orders.
// Host and device; no CUDA needed to include it.
//
//   NCHW  element (n, c, hw) at ((n * C + c) * HW + hw): a channel is N runs of HW contiguous
//         elements, C * HW apart.
//   NHWC  element (n, c, hw) at ((n * HW + hw) * C + c): a channel is every C-th element.
//
// In both, the channel of the element at memory index e is (e / inner) % C, with inner = HW for
// NCHW and 1 for NHWC. The mask is indexed by e, the memory order: bit e % 32 of word e / 32.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CH05_HD __host__ __device__
#else
#define CH05_HD
#endif

namespace ch05 {

enum class Layout : int { nchw = 0, nhwc = 1 };

struct Shape4 {
  std::int64_t N = 1, C = 1, HW = 1;
  Layout layout = Layout::nchw;

  CH05_HD std::int64_t numel() const { return N * C * HW; }
  // M: the number of values each channel's statistics are taken over.
  CH05_HD std::int64_t per_channel() const { return N * HW; }
  // The length of one channel's contiguous runs in memory.
  CH05_HD std::int64_t inner() const { return layout == Layout::nchw ? HW : 1; }
  CH05_HD std::int64_t channel_of(std::int64_t e) const { return (e / inner()) % C; }
  // The memory index of value j (0 <= j < M, in (n, hw) order) of channel c.
  CH05_HD std::int64_t index_of(std::int64_t c, std::int64_t j) const {
    return layout == Layout::nchw ? ((j / HW) * C + c) * HW + j % HW : j * C + c;
  }
};

}  // namespace ch05
