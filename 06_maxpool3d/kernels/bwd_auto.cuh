// bwd auto: the deterministic backward a user calls. Its rule (kernels/bwd_auto_rule.cuh) reads only
// the window, so it is decided on the host, and a case gets the same kernels (and the same bits)
// every time:
//   1. windows that do not overlap (span (k - 1) * dil + 1 <= stride on every axis): v3, each output
//      writes its segment of dx;
//   2. overlapping windows, undilated, at most 64 covering outputs over D and H: v4, the tile mask;
//   3. anything else (dilated overlapping windows, or larger windows over small strides): v1.
// The atomic scatter (v0) is not deterministic, so it is not a choice.
#pragma once

#include "kernels/bwd_auto_rule.cuh"
#include "kernels/bwd_v1_gather.cuh"
#include "kernels/bwd_v3_segment_writer.cuh"
#include "kernels/bwd_v4_tile_mask.cuh"

namespace ch06 {

template <class T>
void bwd_auto(cudaStream_t s, const BackwardArgs<T>& a) {
  switch (bwd_pick(a.w)) {
    case BwdPick::v3_segment_writer: return bwd_v3_segment_writer(s, a);
    case BwdPick::v4_tile_mask: return bwd_v4_tile_mask(s, a);
    default: return bwd_v1_gather(s, a);
  }
}

}  // namespace ch06
