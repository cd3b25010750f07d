// bwd v23_lane_runs: v21 with a scatter that spends fewer instructions per output.
//
// Why. v21's scatter issued 17.2 M warp instructions on kernel 8 stride 1, 1 x 16 x 64^3 (2.96 M
// outputs): about 186 per output, each lane one output, and every output paying the decode of its
// position (two divisions), its loads' addresses and a segmented scan of shuffles across the warp.
// v22 kept v21's counters in the L2 and ran slower: v21 was not waiting on its bytes (with the L2
// left as the kernel before left it, its three kernels moved 102 MB in 56.6 us, 1.8 TB/s).
//
// How. A lane takes 4 consecutive outputs of a row-major plane instead of 1:
//   - its position is decoded once, and stepped along W (a row's end wraps to the next row);
//   - neighbouring windows share their maximum, so consecutive outputs often name one cell: the
//     lane adds its own runs in registers, and only a run that reaches the lane's last output can
//     go on in the next lane;
//   - the warp's scan then joins those runs across lanes: one scan per 128 outputs instead of one
//     per 32. A lane whose 4 outputs hold more than one run adds its first run to what the lanes
//     before it carried, and adds each run that ends inside it at once.
// Every sum is still an integer sum, so the order of the adds does not change dx: v21's bits. The
// launches are v21's (every plane at once); the first and the third kernel are v21's.
//
// Prediction (made before any measurement), the same case: about a third of v21's scatter
// instructions (the decode, the scan and the loop once per 4 outputs), the scatter from 27.9 us to
// about 12 us if its issue rate stays; v23 at or ahead of PyTorch's 44.7 us.
//
// Measured (H200; results/NVIDIA_H200.v23_race.txt, .v23_sweep_k*.json, .v23.ncu.csv and
// .v23.kept.ncu.csv, where this code ran under the name v23_one_group): the scatter issued 13.5 M
// warp instructions against v21's 16.3 M in the same session, 0.83 of them, not a third, and took
// 23.0 us against 26.5; the lane's per-output work (the index's check, the conversion to an
// integer), not the scan, is most of them. Raced in one process on kernel 8 stride 1: 0.829x
// PyTorch (0.843x compact) where v21 ran 0.770x (0.783x). Against v15 and v21 in one process per
// kernel (stride 1, int64): the fastest on kernels 5 to 8 (0.0524 ms on kernel 8 against v21's
// 0.0565 and v15's 0.0763), level with v15 on kernel 4 (0.0628 against 0.0633), behind v18 on
// kernel 3. In v22's groups of planes the same scatter ran 0.682x (results/forms/v22_groups.*).
//
// Limits: v21's. Scratch: v21's.
#pragma once

#include "kernels/bwd_v21_fixed_point_global.cuh"

#include <cstdint>

namespace ch06 {

inline constexpr int kRunOutputs = 4;  // consecutive outputs a lane takes

template <class I, class T>
__global__ void __launch_bounds__(kGlobBlock)
    bwd_v23_scatter_kernel(const BackwardArgs<T> a, const I* __restrict__ idx, const GlobArgs g,
                           const FixBits* __restrict__ parts, int2* __restrict__ scale,
                           unsigned long long* __restrict__ counters) {
  __shared__ int2 plane_scale;
  const Window& w = a.w;
  const int tid = threadIdx.x, lane = tid % 32;
  const auto plane_out = static_cast<std::uint32_t>(w.out_plane());
  const std::int64_t plane_in = w.in_plane();
  for (std::int64_t nc = g.first + blockIdx.y; nc < g.first + g.count; nc += gridDim.y) {
    glob_plane_scale(parts, g, nc, scale, plane_scale);
    const int unit = plane_scale.x;
    if (plane_scale.y) {
      const T* dyp = a.dy + nc * plane_out;
      const I* ip = idx + nc * plane_out;
      unsigned long long* cp = counters + (nc - g.first) * plane_in;
      const auto add = [&](int key, long long v) {
        if (key >= 0 && v != 0) atomicAdd(cp + key, static_cast<unsigned long long>(v));
      };
      // A warp takes 32 * kRunOutputs consecutive outputs, lane l those from base + kRunOutputs * l;
      // the loop's bounds are the same for the whole warp.
      const std::uint32_t stride = gridDim.x * kGlobBlock * kRunOutputs;
      for (std::uint32_t base = ((blockIdx.x * kGlobBlock + tid) & ~31u) * kRunOutputs; base < plane_out; base += stride) {
        const std::uint32_t r0 = base + kRunOutputs * lane;
        I ix[kRunOutputs];
        T y[kRunOutputs];
#pragma unroll
        for (int j = 0; j < kRunOutputs; ++j) {  // read once: evict-first
          ix[j] = r0 + j < plane_out ? __ldcs(ip + r0 + j) : I(0);
          y[j] = r0 + j < plane_out ? __ldcs(dyp + r0 + j) : T(0);
        }
        int od = 0, oh = 0, ow = 0;
        if (r0 < plane_out) {
          od = static_cast<int>(g.by_ohw.div(r0));
          const std::uint32_t rr = r0 - static_cast<std::uint32_t>(od) * g.by_ohw.divisor;
          oh = static_cast<int>(g.by_ow.div(rr));
          ow = static_cast<int>(rr - static_cast<std::uint32_t>(oh) * w.oW);
        }
        // The lane's runs: the first (head), the one still open (tail), and those between, added
        // as they close.
        int head_key = -1, key = -1;
        long long head_sum = 0, sum = 0;
        bool several = false;
#pragma unroll
        for (int j = 0; j < kRunOutputs; ++j) {
          int k = -1;
          long long v = 0;
          if (r0 + j < plane_out) glob_term(w, g, ix[j], y[j], od, oh, ow, unit, k, v);
          if (j == 0) {
            key = k, sum = v;
          } else if (k == key) {
            sum += v;
          } else {
            if (several) add(key, sum);  // a run inside the lane: complete
            else head_key = key, head_sum = sum, several = true;
            key = k, sum = v;
          }
          if (++ow == w.oW) {
            ow = 0;
            if (++oh == w.oH) oh = 0, ++od;
          }
        }
        if (!several) head_key = key;
        // Across lanes: a lane's tail run goes on in the next lane when that lane's head names the
        // same cell. The scan sums tails over segments that start at lane 0, at a lane with several
        // runs (its tail began inside it), and where the head differs from the tail before it.
        const int prev_tail = __shfl_up_sync(0xFFFFFFFFu, key, 1);
        const int next_head = __shfl_down_sync(0xFFFFFFFFu, head_key, 1);
        const unsigned starts = __ballot_sync(0xFFFFFFFFu, lane == 0 || several || head_key != prev_tail);
        sum = segment_scan(starts, sum);
        const long long carried = __shfl_up_sync(0xFFFFFFFFu, sum, 1);  // the run the lane before ends with
        if (several) add(head_key, head_sum + (lane > 0 && head_key == prev_tail ? carried : 0));
        if (lane == 31 || next_head != key) add(key, sum);
      }
    }
    __syncthreads();  // plane_scale is set again for the next plane
  }
}

struct RunScatter {
  template <class I, class T>
  static auto kernel() { return &bwd_v23_scatter_kernel<I, T>; }
};

template <class T>
std::string bwd_v23_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v23_lane_runs");
}

template <class T>
std::size_t bwd_v23_scratch_bytes(const Window& w) {
  return bwd_v21_scratch_bytes<T>(w);
}

template <class T>
void bwd_v23_lane_runs(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  glob_run<false, RunScatter>(s, a, scratch, scratch_bytes, "bwd_v23_lane_runs", a.w.N * a.w.C, kGlobMaxParts);
}

template <class T>
std::vector<const void*> bwd_v23_kernels() {
  return {TUT_KERNEL(bwd_v21_scale_kernel<T>), TUT_KERNEL(bwd_v23_scatter_kernel<std::int64_t, T>),
          TUT_KERNEL(bwd_v23_scatter_kernel<std::uint8_t, T>), TUT_KERNEL(bwd_v23_scatter_kernel<std::int16_t, T>),
          TUT_KERNEL(bwd_v21_round_kernel<false, T>)};
}

}  // namespace ch06
