// What the backward kernels share: their arguments, and the input element an output's saved
// index names, in either format.
#pragma once

#include "kernels/pool.cuh"

#include <type_traits>

namespace ch06 {

template <class T>
struct BackwardArgs {
  Window w;
  const T* dy = nullptr;
  const std::int64_t* index = nullptr;     // w.indices == int64
  const std::uint8_t* offset8 = nullptr;   // compact, at most 256 cells
  const std::int16_t* offset16 = nullptr;  // compact, more
  T* dx = nullptr;
};

template <class T>
void check_backward(const BackwardArgs<T>& a, const char* who) {
  const Window& w = a.w;
  const auto fail = [who](const std::string& why) { throw std::invalid_argument(std::string(who) + ": " + why); };
  if (w.N < 1 || w.C < 1 || w.D < 1 || w.H < 1 || w.W < 1 || w.oD < 1 || w.oH < 1 || w.oW < 1)
    fail("every dimension must be at least 1");
  for (int i = 0; i < 3; ++i)
    if (w.k[i] < 1 || w.s[i] < 1 || w.dil[i] < 1 || w.p[i] < 0 || 2 * w.p[i] > w.k[i])
      fail("kernel, stride and dilation must be >= 1 and padding in [0, kernel / 2]");
  if (!a.dy || !a.dx) fail("dy and dx must be device pointers");
  if (w.indices == IndexFormat::none) fail("the backward needs the forward's indices (int64 or compact)");
  if (w.indices == IndexFormat::int64 && !a.index) fail("indices=int64 needs the index array");
  if (w.indices == IndexFormat::compact && !(w.compact8() ? static_cast<const void*>(a.offset8)
                                                          : static_cast<const void*>(a.offset16)))
    fail("indices=compact needs the offset array of its width");
}

// Calls f(idx) with the saved index in the case's format: the int64 array, or the compact offsets
// of their width (uint8 up to 256 window cells, else int16).
template <class T, class F>
void with_index(const BackwardArgs<T>& a, F&& f) {
  if (a.w.indices == IndexFormat::int64) f(a.index);
  else if (a.w.compact8()) f(a.offset8);
  else f(a.offset16);
}

// The decode of a saved index: an int64 one is a flat position d * H * W + h * W + w, a compact one
// a window cell (jd * kH + jh) * kW + jw.
struct IndexDecode {
  FastDiv by_hw, by_w, by_khw, by_kw;
};
inline IndexDecode index_decode(const Window& w) {
  return {FastDiv(static_cast<std::int64_t>(w.H) * w.W), FastDiv(w.W), FastDiv(w.k[1] * w.k[2]), FastDiv(w.k[2])};
}

// The cell of the plane that saved index ix names, for an undilated output whose window starts at
// (sd, sh, sw); `in_window` false when the index names no cell of that window (an int64 index past
// the plane or outside the window, a compact one past the window's cells), which no gather would
// collect. A compact cell may still lie in the padding: the caller's bounds decide. The plane fits
// 32-bit offsets (the versions that call this refuse larger ones).
struct NamedCell {
  int d, h, x;
  bool in_window;
};
template <class I>
__device__ __forceinline__ NamedCell window_cell(const Window& w, const IndexDecode dec, I ix, int sd, int sh, int sw) {
  NamedCell c{0, 0, 0, false};
  if constexpr (std::is_same_v<I, std::int64_t>) {
    if (static_cast<std::uint64_t>(ix) >= static_cast<std::uint64_t>(w.in_plane())) return c;
    std::uint32_t r = static_cast<std::uint32_t>(ix);
    c.d = static_cast<int>(dec.by_hw.div(r));
    r -= static_cast<std::uint32_t>(c.d) * dec.by_hw.divisor;
    c.h = static_cast<int>(dec.by_w.div(r));
    c.x = static_cast<int>(r - static_cast<std::uint32_t>(c.h) * w.W);
    c.in_window = static_cast<unsigned>(c.d - sd) < static_cast<unsigned>(w.k[0]) &&
                  static_cast<unsigned>(c.h - sh) < static_cast<unsigned>(w.k[1]) &&
                  static_cast<unsigned>(c.x - sw) < static_cast<unsigned>(w.k[2]);
  } else {
    const int j = static_cast<int>(ix);
    if (j < 0 || j >= w.cells()) return c;
    const int jd = static_cast<int>(dec.by_khw.div(static_cast<std::uint32_t>(j)));
    const int r = j - jd * w.k[1] * w.k[2];
    const int jh = static_cast<int>(dec.by_kw.div(static_cast<std::uint32_t>(r)));
    c = {sd + jd, sh + jh, sw + r - jh * w.k[2], true};
  }
  return c;
}

// The outputs along one axis whose undilated windows reach cells [x0, x0 + n): [lo, hi], empty
// when lo > hi.
TUT_HD inline void reaching_outputs(int x0, int n, int k, int s, int p, int out, int& lo, int& hi) {
  const int first = x0 + p - k + 1;  // o * s >= first
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  hi = (x0 + n - 1 + p) / s;
  if (hi > out - 1) hi = out - 1;
}

// The window cell output o chose, from the compact format.
template <class T>
__device__ __forceinline__ int saved_cell(const BackwardArgs<T>& a, std::int64_t o) {
  return a.w.compact8() ? a.offset8[o] : a.offset16[o];
}

// The same, on the host too (the kernels of v5 and v6 run in the CPU tests as well).
template <class T>
TUT_HD inline int saved_window_cell(const BackwardArgs<T>& a, std::int64_t o) {
  return a.w.compact8() ? a.offset8[o] : a.offset16[o];
}

// Along an axis, the output whose segment [o*s - p, (o+1)*s - p) holds cell x: floor((x + p) / s),
// the last output for cells past the last window. It is also the last output whose window can
// cover x.
TUT_HD inline int owning_output(int x, int p, int out, const FastDiv& by_s) {
  const int o = static_cast<int>(by_s.div(static_cast<std::uint32_t>(x + p)));
  return o < out - 1 ? o : out - 1;
}

// Cell x's place along an axis in output o's window (what compact indices are built from), or -1
// when x is not one of its cells: before it, in the gap after it, or between dilated cells.
TUT_HD inline int place_in_window(int x, int o, int k, int s, int p, int dil) {
  const int r = x + p - o * s;
  if (dil == 1) return r >= 0 && r < k ? r : -1;
  if (r < 0 || r % dil != 0 || r / dil >= k) return -1;
  return r / dil;
}

}  // namespace ch06
