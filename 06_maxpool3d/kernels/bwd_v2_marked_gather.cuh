// bwd v2_marked_gather: v1's gather, run only where it can find something. Where windows overlap,
// v1 visits every covering output of every input (27 for k = 3, s = 1; 512 for k = 8, s = 1), yet
// most inputs are the maximum of no window at all and get dx = 0. So:
//   1. mark:    one thread per output sets mark[e] = 1 at the input element its index names (plain
//               byte stores: every writer writes the same 1, so the order does not matter);
//   2. split:   one thread per input writes dx = 0 where unmarked, and appends a marked element to
//               a list (one atomicAdd per warp on a counter, for the whole warp's marked lanes);
//   3. gather:  one thread per listed element runs v1's gather for it.
// Still deterministic: each dx element is written by one thread, which adds its dy in v1's fixed
// order; the list's order varies from run to run, but no sum depends on it.
//
// Cost: the marks (a byte per input, zeroed, then scattered), the list (8 bytes per marked input),
// one more pass over the inputs, and the scans only for marked inputs: at most one per output, so
// out * prod(ceil(k / s)) candidates instead of in * prod(ceil(k / s)). Where windows do not
// overlap every output marks a different input and v1 does no extra work: there v1 is cheaper.
//
// Measured: the split takes one atomicAdd per warp on a single counter, and on the stem case its
// 800 thousand warps serialize there (the split kernel alone takes 0.57 ms, the scatter's whole
// backward 0.12). Taking one atomic per block instead is the next step; it is not measured here.
#pragma once

#include "kernels/bwd_v1_gather.cuh"

namespace ch06 {

struct MarkedScratch {
  std::size_t mark = 0, count = 0, list = 0, bytes = 0;
};

inline MarkedScratch marked_scratch(const Window& w) {
  MarkedScratch m;
  const auto in = static_cast<std::size_t>(w.in_numel());
  m.mark = 0;
  m.count = (in + 255) / 256 * 256;
  m.list = m.count + 256;
  m.bytes = m.list + in * sizeof(std::int64_t);
  return m;
}

template <class T>
std::size_t bwd_v2_scratch_bytes(const Window& w) {
  return marked_scratch(w).bytes;
}

template <class T>
__global__ void __launch_bounds__(256) bwd_v2_mark_kernel(BackwardArgs<T> a, OutDecoder dec, std::uint8_t* mark) {
  const Window& w = a.w;
  const std::int64_t total = w.out_numel();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = dec(o);
    const std::int64_t flat = w.indices == IndexFormat::int64 ? a.index[o] : w.flat_index(q.od, q.oh, q.ow, saved_cell(a, o));
    mark[in_element(w, q.n, q.c, flat)] = 1;
  }
}

// The loop runs over whole warps (`base` is the same in all 32 lanes), so every ballot has all 32.
template <class T>
__global__ void __launch_bounds__(256) bwd_v2_split_kernel(BackwardArgs<T> a, const std::uint8_t* __restrict__ mark,
                                                           unsigned long long* count, std::int64_t* list) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t total = a.w.in_numel(), stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane; base < total;
       base += stride) {
    const std::int64_t e = base + lane;
    const bool valid = e < total, marked = valid && mark[e];
    if (valid && !marked) a.dx[e] = T(0);
    const unsigned m = __ballot_sync(0xffffffffu, marked);
    if (m == 0) continue;
    unsigned long long first = 0;
    if (lane == __ffs(m) - 1) first = atomicAdd(count, static_cast<unsigned long long>(__popc(m)));
    first = __shfl_sync(0xffffffffu, first, __ffs(m) - 1);
    if (marked) list[first + __popc(m & ((1u << lane) - 1u))] = e;
  }
}

template <bool kDilated, class T>
__global__ void __launch_bounds__(256) bwd_v2_gather_list_kernel(BackwardArgs<T> a, GatherDivs dv,
                                                                 const unsigned long long* count,
                                                                 const std::int64_t* __restrict__ list) {
  const auto total = static_cast<std::int64_t>(*count);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t e = list[i];
    a.dx[e] = gather_one<kDilated>(a, dv, e);
  }
}

template <class T>
void bwd_v2_marked_gather(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  check_backward(a, "bwd_v2_marked_gather");
  const Window& w = a.w;
  const MarkedScratch m = marked_scratch(w);
  if (!scratch || scratch_bytes < m.bytes)
    throw std::invalid_argument("bwd_v2_marked_gather: needs " + std::to_string(m.bytes) + " bytes of scratch");
  auto* base = static_cast<unsigned char*>(scratch);
  auto* mark = base + m.mark;
  auto* count = reinterpret_cast<unsigned long long*>(base + m.count);
  auto* list = reinterpret_cast<std::int64_t*>(base + m.list);
  TUT_CUDA(cudaMemsetAsync(base, 0, m.list, s));  // the marks and the counter
  constexpr int kBlock = 256;
  bwd_v2_mark_kernel<T><<<grid_for(w.out_numel(), kBlock, "bwd_v2 mark"), kBlock, 0, s>>>(a, OutDecoder(w), mark);
  TUT_CHECK_LAUNCH("bwd_v2_mark_kernel");
  bwd_v2_split_kernel<T><<<grid_for(w.in_numel(), kBlock, "bwd_v2 split"), kBlock, 0, s>>>(a, mark, count, list);
  TUT_CHECK_LAUNCH("bwd_v2_split_kernel");
  // At most one marked input per output: the grid covers out_numel list entries.
  const GatherDivs dv = gather_divs(w);
  const unsigned grid = grid_for(std::min(w.out_numel(), w.in_numel()), kBlock, "bwd_v2 gather");
  if (w.dilated()) bwd_v2_gather_list_kernel<true, T><<<grid, kBlock, 0, s>>>(a, dv, count, list);
  else bwd_v2_gather_list_kernel<false, T><<<grid, kBlock, 0, s>>>(a, dv, count, list);
  TUT_CHECK_LAUNCH("bwd_v2_gather_list_kernel");
}

}  // namespace ch06
