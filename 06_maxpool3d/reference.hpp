// The CPU reference every kernel is checked against: PyTorch's max_pool3d and its backward, in
// plain C++.
//
// The forward, per output: scan the window's cells in order (d, then h, then w), skipping padding;
// start from -inf and the first cell that lies inside the input; a value replaces the best so far
// when it is larger, or when it is NaN. So
//   - a NaN in the window wins, and of several NaNs the last in scan order;
//   - otherwise the maximum wins, and of equal maxima the first in scan order (+0 and -0 are
//     equal: the first of them);
//   - a window whose cells are all -inf returns -inf at its first inside cell.
// That is the loop of PyTorch's CUDA kernel (aten/src/ATen/native/cuda/DilatedMaxPool3d.cu,
// `if ((max < val) || at::_isnan(val))`); the lesson shows PyTorch giving the same indices on the
// device.
//
// The fold is associative: `combine` below takes two results of consecutive runs of cells, the
// earlier first, and gives the result of the whole run. So a window can be reduced along W, then
// H, then D (the separable form, v6) and give the same value and the same cell.
#pragma once

#include "window.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace ch06 {

// The best value of a run of cells and its cell number.
struct Best {
  float value;
  int cell;
};

// PyTorch's replacement rule.
inline bool reference_replaces(float best, float v) { return best < v || std::isnan(v); }

// The result of two consecutive runs, `a` first.
inline Best combine(Best a, Best b) { return reference_replaces(a.value, b.value) ? b : a; }

// The reference result of output (n, c, od, oh, ow); `at(e)` is input element e as float.
template <class At>
Best window_max(const Window& w, std::int64_t n, std::int64_t c, int od, int oh, int ow, At&& at) {
  const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
  const int fd = first_inside(d0, w.k[0], w.dil[0], w.D), fh = first_inside(h0, w.k[1], w.dil[1], w.H),
            fw = first_inside(w0, w.k[2], w.dil[2], w.W);
  Best best{-INFINITY, (fd * w.k[1] + fh) * w.k[2] + fw};
  for (int jd = 0; jd < w.k[0]; ++jd) {
    const int d = d0 + jd * w.dil[0];
    if (d < 0 || d >= w.D) continue;
    for (int jh = 0; jh < w.k[1]; ++jh) {
      const int h = h0 + jh * w.dil[1];
      if (h < 0 || h >= w.H) continue;
      for (int jw = 0; jw < w.k[2]; ++jw) {
        const int x = w0 + jw * w.dil[2];
        if (x < 0 || x >= w.W) continue;
        const float v = at(in_element(w, n, c, (static_cast<std::int64_t>(d) * w.H + h) * w.W + x));
        if (reference_replaces(best.value, v)) best = {v, (jd * w.k[1] + jh) * w.k[2] + jw};
      }
    }
  }
  return best;
}

// The separable form on the CPU: along W within each (d, h) row, then H, then D, with `combine`.
// A test compares it with window_max on every output.
template <class At>
Best window_max_separable(const Window& w, std::int64_t n, std::int64_t c, int od, int oh, int ow, At&& at) {
  const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
  bool have_d = false;
  Best by_d{0, 0};
  for (int jd = 0; jd < w.k[0]; ++jd) {
    const int d = d0 + jd * w.dil[0];
    if (d < 0 || d >= w.D) continue;
    bool have_h = false;
    Best by_h{0, 0};
    for (int jh = 0; jh < w.k[1]; ++jh) {
      const int h = h0 + jh * w.dil[1];
      if (h < 0 || h >= w.H) continue;
      bool have_w = false;
      Best by_w{0, 0};
      for (int jw = 0; jw < w.k[2]; ++jw) {
        const int x = w0 + jw * w.dil[2];
        if (x < 0 || x >= w.W) continue;
        const Best cell{at(in_element(w, n, c, (static_cast<std::int64_t>(d) * w.H + h) * w.W + x)), jw};
        by_w = have_w ? combine(by_w, cell) : cell;  // a run starts from its first cell
        have_w = true;
      }
      const Best row{by_w.value, jh * w.k[2] + by_w.cell};
      by_h = have_h ? combine(by_h, row) : row;
      have_h = true;
    }
    const Best plane{by_h.value, jd * w.k[1] * w.k[2] + by_h.cell};
    by_d = have_d ? combine(by_d, plane) : plane;
    have_d = true;
  }
  return by_d;
}

}  // namespace ch06
