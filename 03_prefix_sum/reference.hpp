// CPU references for chapter 03. Plain C++: no CUDA.
//
// A segmented (block-wise) scan restarts at every `segment` elements: with segments of 4,
// [0, 1, 2, 3, 4, 5, 6, 7] scans to [0, 1, 3, 6, 4, 9, 15, 22]. A device-wide scan is the same with
// one segment as long as the array. Inclusive: y[i] = x[start] + ... + x[i]. Exclusive:
// y[i] = x[start] + ... + x[i - 1], and 0 at the start of each segment.
//
// The sums run in the element type, left to right, as a learner would write them. For the float
// problems the inputs are whole numbers (tut::InputSpec::whole_numbers), so every partial sum is
// exact and any order of additions gives the same bits: the tests compare exactly.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ch03 {

// Scans x[0, n) into y, restarting every `segment` elements (segment >= n: one device-wide scan).
template <class T, class InputAt>
void scan_ref(InputAt&& x_at, std::int64_t n, std::int64_t segment, bool exclusive, T* y) {
  if (segment < 1) throw std::invalid_argument("a scan's segment must be at least 1, got " + std::to_string(segment));
  T running{};
  for (std::int64_t i = 0; i < n; ++i) {
    if (i % segment == 0) running = T{};
    const T x = x_at(i);
    if (exclusive) {
      y[i] = running;
      running = running + x;
    } else {
      running = running + x;
      y[i] = running;
    }
  }
}

template <class T>
std::vector<T> scan_ref(const std::vector<T>& x, std::int64_t segment, bool exclusive) {
  std::vector<T> y(x.size());
  scan_ref<T>([&](std::int64_t i) { return x[static_cast<std::size_t>(i)]; }, static_cast<std::int64_t>(x.size()),
              segment, exclusive, y.data());
  return y;
}

}  // namespace ch03
