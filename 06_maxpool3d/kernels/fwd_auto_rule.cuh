// The dispatcher's rule (kernels/fwd_auto.cuh states it), apart from the kernels so that the CPU
// tests can check which version each case gets.
#pragma once

#include "kernels/pool.cuh"

namespace ch06 {

enum class AutoPick { v0_naive, v2_interior_border, v6_separable, v7_channels_last };

inline const char* auto_pick_name(AutoPick p) {
  switch (p) {
    case AutoPick::v0_naive: return "v0_naive";
    case AutoPick::v2_interior_border: return "v2_interior_border";
    case AutoPick::v6_separable: return "v6_separable";
    default: return "v7_channels_last";
  }
}

// How many windows cover an input cell, on average (>= 1 only counts overlap).
inline double window_overlap(const Window& w) {
  return static_cast<double>(w.cells()) / (static_cast<double>(w.s[0]) * w.s[1] * w.s[2]);
}

inline AutoPick auto_pick(const Window& w) {
  if (w.cells() >= 64 && window_overlap(w) >= 8 && w.cells() <= kMaxSeparableCells) return AutoPick::v6_separable;
  if (w.layout == Layout::ndhwc) return AutoPick::v7_channels_last;
  if (!w.dilated() && plane_fits_32_bits(w)) return AutoPick::v2_interior_border;
  return AutoPick::v0_naive;
}

}  // namespace ch06
