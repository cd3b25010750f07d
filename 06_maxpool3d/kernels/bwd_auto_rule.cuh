// The backward dispatcher's rule (kernels/bwd_auto.cuh states it), apart from the kernels so that
// the CPU tests can check which version each case gets; and what v4 refuses.
#pragma once

#include "kernels/bwd_v6_staged_tile.cuh"  // bwd_v6_refuses
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

enum class BwdPick { v1_gather, v3_segment_writer, v5_chunk_writer, v6_staged_tile };

inline const char* bwd_pick_name(BwdPick p) {
  switch (p) {
    case BwdPick::v3_segment_writer: return "v3_segment_writer";
    case BwdPick::v5_chunk_writer: return "v5_chunk_writer";
    case BwdPick::v6_staged_tile: return "v6_staged_tile";
    default: return "v1_gather";
  }
}

//   1. windows that do not overlap: each output owns a segment of s0 * s1 * s2 cells. Small
//      segments (fewer than 64 cells, kernel 2 stride 2 in the suite): v3, a thread per output's
//      piece of a slice, one index read for several stores. Larger ones (kernel 8 stride 8): v5,
//      a thread per 16-byte chunk of dx, which writes like a memset where v3's threads wrote 8
//      rows each, one after another;
//   2. overlapping windows that v6 takes (undilated, at most 64 covering outputs over D and H, a
//      tile that fits its shared memory): v6;
//   3. anything else: v1.
inline BwdPick bwd_pick(const Window& w) {
  if (windows_disjoint(w) && plane_fits_32_bits(w))
    return static_cast<std::int64_t>(w.s[0]) * w.s[1] * w.s[2] >= 64 ? BwdPick::v5_chunk_writer
                                                                      : BwdPick::v3_segment_writer;
  if (bwd_v6_refuses<float>(w).empty()) return BwdPick::v6_staged_tile;
  return BwdPick::v1_gather;
}

}  // namespace ch06
