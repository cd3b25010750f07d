// fwd auto: the function a user calls. It picks one of the versions per case, by the rule in
// kernels/fwd_auto_rule.cuh, which the suite measures (the lesson's table of auto against the
// best single version). The rule reads only the window, so it is decided on the host before the
// launch, and a case gets the same version every time.
#pragma once

#include "kernels/fwd_auto_rule.cuh"
#include "kernels/fwd_v0_naive.cuh"
#include "kernels/fwd_v2_interior_border.cuh"
#include "kernels/fwd_v4_layout_ncdt.cuh"
#include "kernels/fwd_v6_separable.cuh"
#include "kernels/fwd_v7_channels_last.cuh"
#include "kernels/fwd_v8_wide_loads.cuh"
#include "kernels/fwd_v10_max_first.cuh"
#include "kernels/fwd_v11_columns_max.cuh"
#include "kernels/fwd_v13_output_packs.cuh"
#include "kernels/fwd_v15_packs_max_first.cuh"

namespace ch06 {

template <class T>
std::size_t fwd_auto_scratch_bytes(const Window& w) {
  return auto_pick(w, static_cast<int>(sizeof(T))) == AutoPick::v6_separable ? fwd_v6_scratch_bytes<T>(w) : 0;
}

template <class T>
void fwd_auto(cudaStream_t s, const ForwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  switch (auto_pick(a.w, static_cast<int>(sizeof(T)))) {
    case AutoPick::v4_layout_ncdt: return fwd_v4_layout_ncdt(s, a);
    case AutoPick::v6_separable: return fwd_v6_separable(s, a, scratch, scratch_bytes);
    case AutoPick::v7_channels_last: return fwd_v7_channels_last(s, a);
    case AutoPick::v8_wide_loads: return fwd_v8_wide_loads(s, a);
    case AutoPick::v10_max_first: return fwd_v10_max_first(s, a);
    case AutoPick::v11_columns_max: return fwd_v11_columns_max(s, a);
    case AutoPick::v13_output_packs: return fwd_v13_output_packs(s, a);
    case AutoPick::v14_row_lanes: return fwd_v14_row_lanes(s, a);
    case AutoPick::v15_packs_max_first: return fwd_v15_packs_max_first(s, a);
    case AutoPick::v2_interior_border: {
      // NDHWC with C = 1 has NCDHW's addresses, y's and the index's included.
      ForwardArgs<T> same = a;
      same.w.layout = Layout::ncdhw;
      return fwd_v2_interior_border(s, same);
    }
    default: return fwd_v0_naive(s, a);
  }
}

}  // namespace ch06
