// The backward dispatcher's rule (kernels/bwd_auto.cuh states it), apart from the kernels so that
// the CPU tests can check which version each case gets; and what v4 refuses.
#pragma once

#include "kernels/bwd_v6_staged_tile.cuh"  // bwd_v6_refuses
#include "kernels/bwd_v9_ordered_tile.cuh"  // ordered_plan
#include "kernels/bwd_v10_row_writer.cuh"
#include "kernels/bwd_v11_window_gather.cuh"
#include "kernels/bwd_v12_class_scatter.cuh"
#include "kernels/pool.cuh"

namespace ch06 {

// What v4 refuses ("" when it takes the case): its mask holds a bit per covering output when there
// are at most 32 of them, else a bit per (D slot, H slot) pair, at most 64 of those.
inline std::string tile_mask_refuses(const Window& w) {
  if (w.dilated()) return "bwd_v4_tile_mask takes dilation 1 only (v1 takes any)";
  const int c0 = (w.k[0] + w.s[0] - 1) / w.s[0], c1 = (w.k[1] + w.s[1] - 1) / w.s[1];
  if (c0 * c1 > 64) return "bwd_v4_tile_mask: more than 64 covering outputs over D and H (v1 takes any)";
  if (!plane_fits_32_bits(w)) return "bwd_v4_tile_mask indexes a plane in 32 bits; this one is larger";
  return {};
}

enum class BwdPick {
  v1_gather,
  v3_segment_writer,
  v6_staged_tile,
  v7_zero_then_store,
  v9_ordered_tile,
  v10_row_writer,
  v11_window_gather,
  v12_class_scatter
};

inline const char* bwd_pick_name(BwdPick p) {
  switch (p) {
    case BwdPick::v3_segment_writer: return "v3_segment_writer";
    case BwdPick::v6_staged_tile: return "v6_staged_tile";
    case BwdPick::v7_zero_then_store: return "v7_zero_then_store";
    case BwdPick::v9_ordered_tile: return "v9_ordered_tile";
    case BwdPick::v10_row_writer: return "v10_row_writer";
    case BwdPick::v11_window_gather: return "v11_window_gather";
    case BwdPick::v12_class_scatter: return "v12_class_scatter";
    default: return "v1_gather";
  }
}

//   1. windows that do not overlap: each output owns a segment of s0 * s1 * s2 cells. Small
//      segments (fewer than 64 cells, kernel 2 stride 2 in the suite): v3, a thread per output's
//      piece of a slice, with the int64 index; v9 with the compact index (on the H100 v9 took
//      1/1.091 and 1/1.09 of v3's time on 2x64x32x112^2 in two runs; v3 was faster with int64).
//      Larger ones (kernel 8 stride 8): v10 in NCDHW, one pass that writes each 16-byte chunk of
//      dx once, where v7 is a memset and a store per output (0.917 of copy, 0.91x PyTorch's fill
//      and scatter); v7 in NDHWC with several channels, which v10 refuses;
//   2. overlapping windows with at most 8 covering outputs per cell (kernel 3 stride 2: ceil(k / s)
//      multiplied over the axes) in NCDHW: v9, the ordered tile (1.21x PyTorch on the stem case);
//   3. other overlapping windows with at most 27 classes of outputs (v12's passes): v12. In NDHWC
//      v9's tiles hold few positions (0.367 of copy on the stem case against the scatter's 0.411);
//      with 27 ranks (kernel 3 stride 1) v9's passes and v6's search cost more than a scatter;
//   4. other overlapping windows that v6 takes (undilated, at most 64 covering outputs over D and H,
//      a tile that fits its shared memory): v6;
//   5. anything else: v1.
inline constexpr int kOrderedAutoMaxRanks = 8;

inline BwdPick bwd_pick(const Window& w) {
  const OrderedPlan plan = ordered_plan(w);
  const bool ordered = plan.refused.empty() && plan.ot.passes <= kOrderedAutoMaxRanks;
  if (windows_disjoint(w) && plane_fits_32_bits(w)) {
    if (static_cast<std::int64_t>(w.s[0]) * w.s[1] * w.s[2] < 64)
      return w.indices == IndexFormat::compact && ordered ? BwdPick::v9_ordered_tile : BwdPick::v3_segment_writer;
    return bwd_v10_refuses<float>(w).empty() ? BwdPick::v10_row_writer : BwdPick::v7_zero_then_store;
  }
  const bool channels_last = w.layout == Layout::ndhwc && w.C > 1;
  if (ordered && !channels_last) return BwdPick::v9_ordered_tile;
  if (bwd_v12_refuses<float>(w).empty()) return BwdPick::v12_class_scatter;
  if (ordered) return BwdPick::v9_ordered_tile;
  if (bwd_v6_refuses<float>(w).empty()) return BwdPick::v6_staged_tile;
  return BwdPick::v1_gather;
}

}  // namespace ch06
