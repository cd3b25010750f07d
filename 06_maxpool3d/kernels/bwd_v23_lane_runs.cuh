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

// v24's term: glob_term's key and integer computed without a branch, every check a predicate and
// the result selected once (glob_term returns early at each check, and the compiler wraps each of
// its returns in a reconvergence point and resets the results it returns). `live` is false for a
// lane's output past the plane's end. An int64 index past the plane is decoded as garbage and then
// refused by the predicate; the integer's shifts are clamped, and on an exact plane only zero bits
// fall off (v19's check), as in to_fixed.
template <class I, class T>
__device__ __forceinline__ void glob_term_flat(const Window& w, const GlobArgs& g, bool live, I ix, T y, int od, int oh,
                                               int ow, int unit, int& key, long long& v) {
  const int sd = od * w.s[0] - w.p[0], sh = oh * w.s[1] - w.p[1], sw = ow * w.s[2] - w.p[2];
  bool ok;
  int cell;
  if constexpr (std::is_same_v<I, std::int64_t>) {
    const std::uint32_t r = static_cast<std::uint32_t>(ix);
    const int d = static_cast<int>(g.dec.by_hw.div(r));
    const std::uint32_t rem = r - static_cast<std::uint32_t>(d) * g.dec.by_hw.divisor;
    const int h = static_cast<int>(g.dec.by_w.div(rem));
    const int x = static_cast<int>(rem - static_cast<std::uint32_t>(h) * w.W);
    ok = live & (static_cast<std::uint64_t>(ix) < static_cast<std::uint64_t>(w.in_plane())) &
         (static_cast<unsigned>(d - sd) < static_cast<unsigned>(w.k[0])) &
         (static_cast<unsigned>(h - sh) < static_cast<unsigned>(w.k[1])) &
         (static_cast<unsigned>(x - sw) < static_cast<unsigned>(w.k[2]));
    cell = static_cast<int>(r);
  } else {
    const int j = static_cast<int>(ix);
    const int jd = static_cast<int>(g.dec.by_khw.div(static_cast<std::uint32_t>(j)));
    const int rr = j - jd * w.k[1] * w.k[2];
    const int jh = static_cast<int>(g.dec.by_kw.div(static_cast<std::uint32_t>(rr)));
    const int d = sd + jd, h = sh + jh, x = sw + rr - jh * w.k[2];
    ok = live & (static_cast<unsigned>(j) < static_cast<unsigned>(w.cells())) &
         (static_cast<unsigned>(d) < static_cast<unsigned>(w.D)) & (static_cast<unsigned>(h) < static_cast<unsigned>(w.H)) &
         (static_cast<unsigned>(x) < static_cast<unsigned>(w.W));
    cell = (d * w.H + h) * w.W + x;
  }
  const FloatParts f = float_parts(y);
  const int up = f.e - unit;
  const std::uint64_t mag = up >= 0 ? static_cast<std::uint64_t>(f.m) << min(up, 63)
                                    : static_cast<std::uint64_t>(f.m >> min(-up, 31));
  const long long signed_mag = f.neg ? -static_cast<long long>(mag) : static_cast<long long>(mag);
  key = ok ? cell : -1;
  v = ok ? signed_mag : 0;
}

// With Mark (v26), each add also sets its cell's bit in the plane's marks. With Early (v27), a
// warp's first outputs of a plane are loaded before the block waits for the plane's scale.
template <bool Flat, bool Mark, bool Early, class I, class T>
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
    [[maybe_unused]] I early_ix[kRunOutputs];
    [[maybe_unused]] T early_y[kRunOutputs];
    if constexpr (Early) {  // the warp's first outputs, in flight across the barrier below
      const std::uint32_t r0 = ((blockIdx.x * kGlobBlock + tid) & ~31u) * kRunOutputs + kRunOutputs * lane;
#pragma unroll
      for (int j = 0; j < kRunOutputs; ++j) {
        early_ix[j] = r0 + j < plane_out ? __ldcs(idx + nc * plane_out + r0 + j) : I(0);
        early_y[j] = r0 + j < plane_out ? __ldcs(a.dy + nc * plane_out + r0 + j) : T(0);
      }
    }
    glob_plane_scale(parts, g, nc, scale, plane_scale);
    const int unit = plane_scale.x;
    if (plane_scale.y) {
      const T* dyp = a.dy + nc * plane_out;
      const I* ip = idx + nc * plane_out;
      unsigned long long* cp = counters + (nc - g.first) * plane_in;
      unsigned* mp = Mark ? g.marks + (nc - g.first) * g.mark_words : nullptr;
      const auto add = [&](int key, long long v) {
        if (key >= 0 && v != 0) {
          atomicAdd(cp + key, static_cast<unsigned long long>(v));
          if constexpr (Mark) atomicOr(mp + (key >> 7), 1u << ((key >> 2) & 31));  // the cell's 4 counters' bit
        }
      };
      // A warp takes 32 * kRunOutputs consecutive outputs, lane l those from base + kRunOutputs * l;
      // the loop's bounds are the same for the whole warp.
      const std::uint32_t stride = gridDim.x * kGlobBlock * kRunOutputs;
      for (std::uint32_t base = ((blockIdx.x * kGlobBlock + tid) & ~31u) * kRunOutputs; base < plane_out; base += stride) {
        const std::uint32_t r0 = base + kRunOutputs * lane;
        I ix[kRunOutputs];
        T y[kRunOutputs];
        if (Early && base == ((blockIdx.x * kGlobBlock + tid) & ~31u) * kRunOutputs) {
#pragma unroll
          for (int j = 0; j < kRunOutputs; ++j) ix[j] = early_ix[j], y[j] = early_y[j];
        } else {
#pragma unroll
          for (int j = 0; j < kRunOutputs; ++j) {  // read once: evict-first
            ix[j] = r0 + j < plane_out ? __ldcs(ip + r0 + j) : I(0);
            y[j] = r0 + j < plane_out ? __ldcs(dyp + r0 + j) : T(0);
          }
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
          if constexpr (Flat) glob_term_flat(w, g, r0 + j < plane_out, ix[j], y[j], od, oh, ow, unit, k, v);
          else if (r0 + j < plane_out) glob_term(w, g, ix[j], y[j], od, oh, ow, unit, k, v);
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

template <bool Flat, bool Mark = false, bool Early = false>
struct RunScatterOf {
  template <class I, class T>
  static auto kernel() { return &bwd_v23_scatter_kernel<Flat, Mark, Early, I, T>; }
};
using RunScatter = RunScatterOf<false>;   // v23's
using FlatScatter = RunScatterOf<true>;   // v24's and v25's
using MarkScatter = RunScatterOf<true, true>;  // v26's
using EarlyScatter = RunScatterOf<true, false, true>;  // v27's

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
  glob_run<ZeroedCounters<false>, RunScatter>(s, a, scratch, scratch_bytes, "bwd_v23_lane_runs", a.w.N * a.w.C, kGlobMaxParts);
}

template <class T>
std::vector<const void*> bwd_v23_kernels() {
  return glob_kernels<ZeroedCounters<false>, RunScatter, T>();
}

// bwd v24_flat_terms: v23 with each output's term computed without a branch (glob_term_flat).
// Why: v23's scatter spent 84 % of its 13.5 M warp instructions on arithmetic, moves and compares,
// about 120 SASS instructions per output (results/NVIDIA_H200.v23_source.txt); glob_term's early
// returns add a reconvergence point each, and reset the results on each path.
// Measured without a GPU (cuobjdump, sm_90, nvcc 13.0): from the lane's loads to its first scan
// step, v23's int64 scatter has 452 SASS instructions with 11 BSSY, v24's 374 with 2; the whole
// kernel 976 against 888 (tests/test_sass.cpp checks that v24 has fewer of both).
// Prediction, before any run: the scatter's warp instructions about 15 % below v23's 13.5 M, and
// its 23.0 us about 15 % lower if its issue rate stays; still behind PyTorch on kernel 8 stride 1.
// Measured (H200; results/NVIDIA_H200.v24.ncu.txt, .v24_source.txt, .v24_race.txt, .v24_sweep.txt):
// 11.4 M warp instructions against v23's 13.5 M in the same session, 20.5 us against 23.6; branches
// and barriers 6.3 % of them (v23: 12.0 %). Raced on kernel 8 stride 1, 0.874x PyTorch (0.880x
// compact) where v23 ran 0.820x (0.831x). With the L2 kept (.v24.kept.ncu.txt) its three kernels
// took 17.2 + 20.2 + 12.7 us: the scatter was no longer what lost, the zeroing and the rounding
// were; v25 takes that up.
template <class T>
std::string bwd_v24_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v24_flat_terms");
}

template <class T>
void bwd_v24_flat_terms(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  glob_run<ZeroedCounters<false>, FlatScatter>(s, a, scratch, scratch_bytes, "bwd_v24_flat_terms", a.w.N * a.w.C, kGlobMaxParts);
}

template <class T>
std::vector<const void*> bwd_v24_kernels() {
  return glob_kernels<ZeroedCounters<false>, FlatScatter, T>();
}

}  // namespace ch06
