// The geometry of one MaxPool3D case, on the host and on the device, and every rule a case must
// satisfy before anything is launched.
//
// PyTorch's max_pool3d on an N x C x D x H x W input, window (kD, kH, kW), stride, padding,
// dilation and ceil_mode:
//
//   out = floor((in + 2p - dil*(k-1) - 1 + (ceil_mode ? s-1 : 0)) / s) + 1,
//   and with ceil_mode, one less if the last window would start at or past in + p
//   (the last window must start inside the input or the left padding).
//
// Window o along an axis covers the cells o*s - p + j*dil for j = 0 .. k-1; cells outside
// [0, in) are padding and count as -inf. A window's cells are numbered in scan order,
// cell = (jd * kH + jh) * kW + jw: the compact index format stores that number.
//
// The rules (window_of throws std::invalid_argument naming the parameter and its value):
//   - the shape is 5-D and no dimension is 0;
//   - kernel, stride, dilation >= 1 on every axis; padding >= 0;
//   - padding <= kernel / 2 on every axis: the check PyTorch's 3-D pooling makes (its message
//     speaks of the dilated window, its test compares with the kernel itself);
//   - every output size >= 1;
//   - every window holds at least one input cell. PyTorch accepts a case where one does not
//     (kernel 2, dilation 3, padding 1 on an axis of 2), and returns -inf there with an index
//     outside the input, which its backward then adds into another plane. This chapter refuses it.
//   - the compact index holds a window of at most 32768 cells (int16).
#pragma once

#include "tut/random.hpp"  // TUT_HD

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ch06 {

enum class Layout : int { ncdhw = 0, ndhwc = 1 };
// none: y only. int64: PyTorch's index, the flat position in the D*H*W volume. compact: the
// window cell, uint8 for windows of at most 256 cells, int16 up to 32768.
enum class IndexFormat : int { none = 0, int64 = 1, compact = 2 };

inline constexpr int kMaxCompactCells = 32768;
inline constexpr int kMaxByteCells = 256;
inline constexpr int kMaxSeparableCells = 65535;  // v6 carries a cell in 16 bits

struct Window {
  std::int64_t N = 1, C = 1;
  int D = 1, H = 1, W = 1;     // input
  int oD = 1, oH = 1, oW = 1;  // output
  int k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, dil[3] = {1, 1, 1};  // D, H, W
  bool ceil_mode = false;
  Layout layout = Layout::ncdhw;
  IndexFormat indices = IndexFormat::none;

  TUT_HD int cells() const { return k[0] * k[1] * k[2]; }
  TUT_HD std::int64_t in_plane() const { return static_cast<std::int64_t>(D) * H * W; }
  TUT_HD std::int64_t out_plane() const { return static_cast<std::int64_t>(oD) * oH * oW; }
  TUT_HD std::int64_t in_numel() const { return N * C * in_plane(); }
  TUT_HD std::int64_t out_numel() const { return N * C * out_plane(); }
  TUT_HD bool dilated() const { return dil[0] != 1 || dil[1] != 1 || dil[2] != 1; }
  TUT_HD bool compact8() const { return cells() <= kMaxByteCells; }
  // Bytes of one output's index in this case's format.
  TUT_HD int index_bytes() const {
    return indices == IndexFormat::int64 ? 8 : indices == IndexFormat::compact ? (compact8() ? 1 : 2) : 0;
  }

  // The window cell `cell` of output (od, oh, ow) as a position in the volume, or the flat index
  // PyTorch returns, d * H * W + h * W + w.
  TUT_HD void cell_of(int cell, int& jd, int& jh, int& jw) const {
    jw = cell % k[2];
    const int t = cell / k[2];
    jh = t % k[1];
    jd = t / k[1];
  }
  TUT_HD std::int64_t flat_index(int od, int oh, int ow, int cell) const {
    int jd, jh, jw;
    cell_of(cell, jd, jh, jw);
    const std::int64_t d = od * s[0] - p[0] + jd * dil[0], h = oh * s[1] - p[1] + jh * dil[1],
                       w = ow * s[2] - p[2] + jw * dil[2];
    return (d * H + h) * W + w;
  }
};

// PyTorch's output size along one axis (Pool.h, pooling_output_shape).
inline std::int64_t pooled_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t dil,
                                bool ceil_mode) {
  const std::int64_t num = in + 2 * p - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  // Division rounding toward -inf: num may be negative when the window is larger than the input.
  const std::int64_t q = num >= 0 ? num / s : -((-num + s - 1) / s);
  std::int64_t out = q + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// The first window cell j along an axis that lies inside [0, in), for a window starting at
// `start`; k when there is none.
TUT_HD inline int first_inside(int start, int k, int dil, int in) {
  int j = start >= 0 ? 0 : (-start + dil - 1) / dil;
  return (j < k && start + j * dil < in) ? j : k;
}

namespace detail {
inline const char* axis_name(int a) { return a == 0 ? "D" : a == 1 ? "H" : "W"; }
inline std::string list_text(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
  return s;
}
// One value, or three (D, H, W): the rest of a one-value list repeats it.
inline std::vector<std::int64_t> per_axis(const std::string& key, const std::vector<std::int64_t>& v) {
  if (v.size() == 1) return {v[0], v[0], v[0]};
  if (v.size() == 3) return v;
  throw std::invalid_argument(key + " takes one value or three (D, H, W), got '" + list_text(v) + "'");
}
}  // namespace detail

// The window of a case: shape [N, C, D, H, W] and the parameters, checked. The parameters are
// taken as std::int64_t lists (kernel, stride, padding, dilation: one or three values; stride
// empty: the kernel), ceil_mode 0 or 1, the layout and index format by name.
inline Window window_of(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& kernel,
                        const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& padding,
                        const std::vector<std::int64_t>& dilation, std::int64_t ceil_mode, const std::string& layout,
                        const std::string& indices) {
  using detail::axis_name;
  using std::to_string;
  const auto bad = [](const std::string& why) { return std::invalid_argument(why); };
  if (shape.size() != 5)
    throw bad("MaxPool3D takes a 5-D shape N x C x D x H x W, got rank " + to_string(shape.size()) + " ('" +
              detail::list_text(shape) + "')");
  const char* dims = "NCDHW";
  for (int i = 0; i < 5; ++i) {
    if (shape[i] == 0)
      throw bad(std::string("dimension ") + dims[i] + " of shape " + detail::list_text(shape) +
                " is 0: every dimension needs at least one element");
    if (i >= 2 && shape[i] > (std::int64_t{1} << 30))
      throw bad(std::string("dimension ") + dims[i] + " = " + to_string(shape[i]) + " is more than 2^30");
  }
  const auto k = detail::per_axis("kernel", kernel);
  const auto s = stride.empty() ? k : detail::per_axis("stride", stride);
  const auto p = detail::per_axis("padding", padding);
  const auto dl = detail::per_axis("dilation", dilation);
  if (ceil_mode != 0 && ceil_mode != 1) throw bad("ceil_mode is 0 or 1, got " + to_string(ceil_mode));
  if (layout != "NCDHW" && layout != "NDHWC") throw bad("layout is NCDHW or NDHWC, got '" + layout + "'");
  if (indices != "none" && indices != "int64" && indices != "compact")
    throw bad("indices is none, int64 or compact, got '" + indices + "'");
  Window w;
  w.N = shape[0];
  w.C = shape[1];
  w.D = static_cast<int>(shape[2]);
  w.H = static_cast<int>(shape[3]);
  w.W = static_cast<int>(shape[4]);
  w.ceil_mode = ceil_mode == 1;
  w.layout = layout == "NDHWC" ? Layout::ndhwc : Layout::ncdhw;
  w.indices = indices == "int64" ? IndexFormat::int64 : indices == "compact" ? IndexFormat::compact : IndexFormat::none;
  const std::int64_t in[3] = {shape[2], shape[3], shape[4]};
  int out[3];
  for (int a = 0; a < 3; ++a) {
    const std::string ax = std::string(" along ") + axis_name(a);
    if (k[a] < 1) throw bad("kernel " + to_string(k[a]) + ax + ": a window needs at least one cell");
    if (s[a] < 1) throw bad("stride " + to_string(s[a]) + ax + ": must be at least 1");
    if (dl[a] < 1) throw bad("dilation " + to_string(dl[a]) + ax + ": must be at least 1");
    if (p[a] < 0) throw bad("padding " + to_string(p[a]) + ax + ": must not be negative");
    if (k[a] > 4096 || s[a] > (1 << 24) || dl[a] > 4096)
      throw bad("kernel" + ax + " past 4096, stride past 2^24 or dilation past 4096: too large");
    if (2 * p[a] > k[a])
      throw bad("padding " + to_string(p[a]) + ax + " is more than half of kernel " + to_string(k[a]) +
                " (PyTorch's rule for 3-D pooling: padding <= kernel / 2)");
    const std::int64_t o = pooled_size(in[a], k[a], s[a], p[a], dl[a], w.ceil_mode);
    if (o < 1)
      throw bad("output size" + ax + " is " + to_string(o) + " (input " + to_string(in[a]) + ", kernel " +
                to_string(k[a]) + ", stride " + to_string(s[a]) + ", padding " + to_string(p[a]) + ", dilation " +
                to_string(dl[a]) + "): the window does not fit");
    out[a] = static_cast<int>(o);
    w.k[a] = static_cast<int>(k[a]);
    w.s[a] = static_cast<int>(s[a]);
    w.p[a] = static_cast<int>(p[a]);
    w.dil[a] = static_cast<int>(dl[a]);
    // A window that starts inside [0, in) holds its first cell. So only the windows that start in
    // the left padding, and the last one (which may start in the right padding), need a look.
    for (int oi = 0; oi < out[a]; ++oi) {
      const std::int64_t start = static_cast<std::int64_t>(oi) * s[a] - p[a];
      if (start >= 0 && oi != out[a] - 1) {
        oi = out[a] - 2;  // on to the last window
        continue;
      }
      if (start >= in[a] || first_inside(static_cast<int>(start), w.k[a], w.dil[a], static_cast<int>(in[a])) == w.k[a])
        throw bad("window " + to_string(oi) + ax + " (cells " + to_string(start) + ", " + to_string(start + dl[a]) +
                  ", ...) holds no input cell (input " + to_string(in[a]) + ", kernel " + to_string(k[a]) +
                  ", dilation " + to_string(dl[a]) + ", padding " + to_string(p[a]) +
                  "); PyTorch would return -inf there with an index outside the input");
    }
  }
  w.oD = out[0];
  w.oH = out[1];
  w.oW = out[2];
  const double numel = static_cast<double>(w.N) * static_cast<double>(w.C) * static_cast<double>(w.in_plane());
  if (numel > 0x1p62) throw bad("shape " + detail::list_text(shape) + " has more than 2^62 elements");
  if (w.indices == IndexFormat::compact && w.cells() > kMaxCompactCells)
    throw bad("the compact index holds windows of at most " + to_string(kMaxCompactCells) + " cells; kernel " +
              detail::list_text(k) + " has " + to_string(w.cells()) + " (use indices=int64)");
  return w;
}

// Position of output element o and of input element e in the case's layout.
struct OutPos {
  std::int64_t n, c;
  int od, oh, ow;
};
TUT_HD inline OutPos out_pos(const Window& w, std::int64_t o) {
  OutPos r;
  if (w.layout == Layout::ncdhw) {
    r.ow = static_cast<int>(o % w.oW);
    o /= w.oW;
    r.oh = static_cast<int>(o % w.oH);
    o /= w.oH;
    r.od = static_cast<int>(o % w.oD);
    o /= w.oD;
    r.c = o % w.C;
    r.n = o / w.C;
  } else {
    r.c = o % w.C;
    o /= w.C;
    r.ow = static_cast<int>(o % w.oW);
    o /= w.oW;
    r.oh = static_cast<int>(o % w.oH);
    o /= w.oH;
    r.od = static_cast<int>(o % w.oD);
    r.n = o / w.oD;
  }
  return r;
}
// The input element at volume position `flat` (d * H * W + h * W + w) of plane (n, c).
TUT_HD inline std::int64_t in_element(const Window& w, std::int64_t n, std::int64_t c, std::int64_t flat) {
  return w.layout == Layout::ncdhw ? (n * w.C + c) * w.in_plane() + flat : (n * w.in_plane() + flat) * w.C + c;
}

}  // namespace ch06
