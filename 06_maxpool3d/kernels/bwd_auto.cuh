// bwd auto: the deterministic backward a user calls. Its rule (kernels/bwd_auto_rule.cuh) reads only
// the window, so it is decided on the host, and a case gets the same kernels (and the same bits)
// every time:
//   1. windows that do not overlap (span (k - 1) * dil + 1 <= stride on every axis): in NCDHW,
//      undilated, where an output owns at least 27 cells and a plane at least 1024, v20, a block per
//      span that loads its outputs' index first, fills the span, then stores the named cells; else
//      one pass of 16-byte stores in NCDHW (and NDHWC with one channel): v10 (v13, the next item's loads
//      ahead, ran behind it on kernel 8 stride 8 in three suite runs; v16 and v17 lost to both: not
//      choices); in NDHWC v3 where an output owns fewer than 64 cells, else v7, a
//      memset and a plain store per output;
//   2. (v14's channel gather lost to v9 on the NDHWC stem case, 0.300 against v9's first form's 0.366 of copy: not a choice);
//   3. overlapping windows, undilated, at most 8 covering outputs per cell: v9, the ordered tile;
//   4. other overlapping windows with stride 1, NCDHW, undilated, cubic kernel 2 to 8: v15, the
//      separable stages (3k candidates per cell); on kernel 3 v18, the same stages with D walked in
//      registers; on kernels 4 to 8 v29, exact fixed-point integers added to a counter per cell in
//      global memory, a lane's runs added in registers first, the counters left zero by the launch
//      (auto then needs its scratch, v25's, 8 bytes per dx element, zeroed once when allocated and
//      kept by the caller between launches); v29 is v25 with a leaner kernel 1 and v25's bits (v21
//      to v24 zero their counters first, v26 also marks them, v27 issues its loads earlier: they
//      lost to v25: not choices);
//   5. other overlapping windows, undilated, at most 64 covering outputs over D and H: v6, the staged tile;
//   6. anything else (dilated overlapping windows, or larger windows over small strides): v1.
// The atomic scatter (v0) is not deterministic, so it is not a choice.
#pragma once

#include "kernels/bwd_auto_rule.cuh"
#include "kernels/bwd_v1_gather.cuh"
#include "kernels/bwd_v3_segment_writer.cuh"
#include "kernels/bwd_v6_staged_tile.cuh"
#include "kernels/bwd_v7_zero_then_store.cuh"
#include "kernels/bwd_v9_ordered_tile.cuh"
#include "kernels/bwd_v10_row_writer.cuh"
#include "kernels/bwd_v15_separable_stages.cuh"
#include "kernels/bwd_v18_column_walk.cuh"
#include "kernels/bwd_v20_plane_fill.cuh"
#include "kernels/bwd_v25_clean_counters.cuh"
#include "kernels/bwd_v29_lean_scale.cuh"

namespace ch06 {

// Scratch: v25's where the rule takes v29, else none. It must be zero before the first launch and
// is left zero by each (tut::Workspace zeroes it when allocated and keeps it for the instance).
template <class T>
std::size_t bwd_auto_scratch_bytes(const Window& w) {
  switch (bwd_pick(w)) {
    case BwdPick::v29_lean_scale: return bwd_v25_scratch_bytes<T>(w);
    default: return 0;
  }
}

template <class T>
void bwd_auto(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  switch (bwd_pick(a.w)) {
    case BwdPick::v3_segment_writer: return bwd_v3_segment_writer(s, a);
    case BwdPick::v6_staged_tile: return bwd_v6_staged_tile(s, a);
    case BwdPick::v7_zero_then_store: return bwd_v7_zero_then_store(s, a);
    case BwdPick::v9_ordered_tile: return bwd_v9_ordered_tile(s, a);
    case BwdPick::v10_row_writer: return bwd_v10_row_writer(s, a);
    case BwdPick::v15_separable_stages: return bwd_v15_separable_stages(s, a);
    case BwdPick::v18_column_walk: return bwd_v18_column_walk(s, a);
    case BwdPick::v20_plane_fill: return bwd_v20_plane_fill(s, a);
    case BwdPick::v29_lean_scale: return bwd_v29_lean_scale(s, a, scratch, scratch_bytes);
    default: return bwd_v1_gather(s, a);
  }
}

}  // namespace ch06
