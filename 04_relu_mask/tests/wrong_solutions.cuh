// Known-wrong forward and backward kernels. The grader must reject each one; if it ever accepts
// one, the grader (not the kernel) is broken.
#pragma once

#include "kernels/ops.cuh"
#include "tut/check.hpp"

#include <cstdint>

namespace ch04::wrong {

// The source's scheme as written: a grid-stride loop over elements and
// __ballot_sync(__activemask(), ...), here with 48-thread blocks. Warps no longer start at multiples
// of 32 elements (block 1's first warp holds 48..79), so lane 0 stores bits of the wrong elements
// under the wrong word, and words overwrite each other.
__global__ void activemask_ballot_kernel(std::int64_t n, const float* __restrict__ x, float* __restrict__ y,
                                         Word* __restrict__ mask) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const bool keep = kept(x[i]);
    const Word word = __ballot_sync(__activemask(), keep);
    if (lane == 0) mask[i / 32] = word;
    y[i] = relu(x[i]);
  }
}
inline void activemask_ballot_block48(cudaStream_t s, const ForwardArgs<float>& a) {
  if (a.n == 0) return;
  activemask_ballot_kernel<<<static_cast<unsigned>((a.n + 47) / 48), 48, 0, s>>>(a.n, a.x, a.y, a.mask);
  TUT_CHECK_LAUNCH("activemask_ballot_kernel");
}

// The same __activemask() trap in whole warps of 256-thread blocks, where the indexing is right: the
// source's ballot taken inside a data-dependent branch (y written one way for kept elements and
// another for the rest). The warp diverges on the branch, and __activemask() names only the lanes
// on the same side: each side's ballot sees its own lanes, and lane 0 stores its side's word. The
// word is right only when lane 0 is kept, or when no lane of the warp is.
__global__ void activemask_in_branch_kernel(std::int64_t n, const float* __restrict__ x, float* __restrict__ y,
                                            Word* __restrict__ mask) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane;
  const std::int64_t i = base + lane;
  if (i >= n) return;
  Word word;
  if (kept(x[i])) {
    y[i] = x[i];
    word = __ballot_sync(__activemask(), true);
  } else {
    y[i] = relu(x[i]);
    word = __ballot_sync(__activemask(), false);
  }
  if (lane == 0) mask[base / 32] = word;
}
inline void activemask_in_branch(cudaStream_t s, const ForwardArgs<float>& a) {
  if (a.n == 0) return;
  activemask_in_branch_kernel<<<static_cast<unsigned>((a.n + 255) / 256), 256, 0, s>>>(a.n, a.x, a.y, a.mask);
  TUT_CHECK_LAUNCH("activemask_in_branch_kernel");
}

// Builds each word as the complement of a ballot of "not kept". Lanes past n vote false, so their
// bits come out set: the padding of a partial last word is garbage. Right whenever n % 32 == 0.
__global__ void complement_kernel(std::int64_t n, const float* __restrict__ x, float* __restrict__ y,
                                  Word* __restrict__ mask) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane;
  const std::int64_t i = base + lane;
  bool dropped = false;
  if (i < n) {
    dropped = !kept(x[i]);
    y[i] = relu(x[i]);
  }
  const Word word = ~__ballot_sync(kFullWarp, dropped);
  if (lane == 0) mask[base / 32] = word;
}
inline void padding_bits_set(cudaStream_t s, const ForwardArgs<float>& a) {
  if (a.n == 0) return;
  complement_kernel<<<static_cast<unsigned>((a.n + 255) / 256), 256, 0, s>>>(a.n, a.x, a.y, a.mask);
  TUT_CHECK_LAUNCH("complement_kernel");
}

// The source's predicate and output: bit = x > 0 and y = x > 0 ? x : 0. NaN loses its gradient
// bit and becomes 0 in y, and -0 becomes +0.
__global__ void positive_only_kernel(std::int64_t n, const float* __restrict__ x, float* __restrict__ y,
                                     Word* __restrict__ mask) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane;
  const std::int64_t i = base + lane;
  bool positive = false;
  if (i < n) {
    positive = x[i] > 0.0f;
    y[i] = positive ? x[i] : 0.0f;
  }
  const Word word = __ballot_sync(kFullWarp, positive);
  if (lane == 0) mask[base / 32] = word;
}
inline void source_predicate(cudaStream_t s, const ForwardArgs<float>& a) {
  if (a.n == 0) return;
  positive_only_kernel<<<static_cast<unsigned>((a.n + 255) / 256), 256, 0, s>>>(a.n, a.x, a.y, a.mask);
  TUT_CHECK_LAUNCH("positive_only_kernel");
}

// Handles whole warps only (`base + 32 <= n`): the partial last warp's outputs and word are never
// written. Right whenever n % 32 == 0.
__global__ void whole_warps_kernel(std::int64_t n, const float* __restrict__ x, float* __restrict__ y,
                                   Word* __restrict__ mask) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane;
  if (base + 32 > n) return;
  const std::int64_t i = base + lane;
  const Word word = __ballot_sync(kFullWarp, kept(x[i]));
  y[i] = relu(x[i]);
  if (lane == 0) mask[base / 32] = word;
}
inline void drops_partial_warp(cudaStream_t s, const ForwardArgs<float>& a) {
  if (a.n == 0) return;
  whole_warps_kernel<<<static_cast<unsigned>((a.n + 255) / 256), 256, 0, s>>>(a.n, a.x, a.y, a.mask);
  TUT_CHECK_LAUNCH("whole_warps_kernel");
}

// A backward that reads bit 31 - j for element 32i + j (the format's bits in the wrong order).
__global__ void msb_first_kernel(std::int64_t n, const float* __restrict__ dy, const Word* __restrict__ mask,
                                 float* __restrict__ dx) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dx[i] = masked_grad(dy[i], ((mask[i / 32] >> (31 - i % 32)) & 1u) != 0);
}
inline void reads_bits_msb_first(cudaStream_t s, const BackwardArgs<float>& a) {
  if (a.n == 0) return;
  msb_first_kernel<<<static_cast<unsigned>((a.n + 255) / 256), 256, 0, s>>>(a.n, a.dy, a.mask, a.dx);
  TUT_CHECK_LAUNCH("msb_first_kernel");
}

}  // namespace ch04::wrong
