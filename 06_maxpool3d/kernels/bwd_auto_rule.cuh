// The backward dispatcher's rule (kernels/bwd_auto.cuh states it), apart from the kernels so that
// the CPU tests can check which version each case gets; and what v4 refuses.
#pragma once

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

enum class BwdPick { v1_gather, v3_segment_writer, v4_tile_mask };

inline const char* bwd_pick_name(BwdPick p) {
  switch (p) {
    case BwdPick::v3_segment_writer: return "v3_segment_writer";
    case BwdPick::v4_tile_mask: return "v4_tile_mask";
    default: return "v1_gather";
  }
}

//   1. windows that do not overlap: v3, each output writes its segment of dx;
//   2. overlapping windows that v4 takes (undilated, at most 64 covering outputs over D and H): v4;
//   3. anything else: v1.
inline BwdPick bwd_pick(const Window& w) {
  if (windows_disjoint(w) && plane_fits_32_bits(w)) return BwdPick::v3_segment_writer;
  if (tile_mask_refuses(w).empty()) return BwdPick::v4_tile_mask;
  return BwdPick::v1_gather;
}

}  // namespace ch06
