// fwd auto: the function a user calls. It picks one of the versions per case, by a rule stated
// here and measured on the suite (the lesson's table "auto against the best single version"):
//
//   1. Large overlapping windows go to the separable passes (v6): at least 64 cells and, on
//      average, at least 8 windows over each input cell (cells / (sD*sH*sW) >= 8). There the
//      direct window's loads and compares grow with the window and the passes' bytes do not.
//   2. Otherwise NDHWC goes to v7 (16-byte channel groups).
//   3. Otherwise NCDHW with dilation 1 goes to v2 (interior without tests, border with), when its
//      plane can be indexed in 32 bits.
//   4. Everything else (dilation > 1 on NCDHW, planes past 2^31) to v0, the generic loop.
// The rule reads only the window, so it is decided on the host before the launch, untimed.
#pragma once

#include "kernels/fwd_auto_rule.cuh"
#include "kernels/fwd_v0_naive.cuh"
#include "kernels/fwd_v2_interior_border.cuh"
#include "kernels/fwd_v6_separable.cuh"
#include "kernels/fwd_v7_channels_last.cuh"

namespace ch06 {

template <class T>
std::size_t fwd_auto_scratch_bytes(const Window& w) {
  return auto_pick(w) == AutoPick::v6_separable ? fwd_v6_scratch_bytes<T>(w) : 0;
}

template <class T>
void fwd_auto(cudaStream_t s, const ForwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  switch (auto_pick(a.w)) {
    case AutoPick::v6_separable: return fwd_v6_separable(s, a, scratch, scratch_bytes);
    case AutoPick::v7_channels_last: return fwd_v7_channels_last(s, a);
    case AutoPick::v2_interior_border: return fwd_v2_interior_border(s, a);
    default: return fwd_v0_naive(s, a);
  }
}

}  // namespace ch06
