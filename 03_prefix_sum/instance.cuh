// One case of a chapter 03 problem on the device: the input x, the output y, and the CPU
// reference (reference.hpp), computed before the first check and kept for the next.
//
// A segmented case carries its segment length as the parameter "segment"; a device-wide scan is
// one segment as long as the array. The reference of a multi-gigabyte case is computed on every
// core: segment by segment, or for a device-wide scan in two passes (each core sums its chunk, the
// chunk sums are scanned, each core scans its chunk from its offset). The float problems draw whole
// numbers, whose sums are exact in any order, so that split gives the same bits as one loop.
#pragma once

#include "reference.hpp"
#include "tut/arrays.cuh"
#include "tut/parallel.hpp"
#include "tut/problem.hpp"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace ch03 {

inline constexpr std::int64_t kDefaultSegment = 1024;

template <class T>
class ScanInstance : public tut::Instance {
 public:
  // `segmented`: the case's "segment" parameter applies; otherwise one segment.
  ScanInstance(const tut::Case& c, const tut::InstanceOptions& o, bool segmented, bool exclusive, tut::InputSpec spec)
      : Instance(o),
        n_(c.numel()),
        segment_(segmented ? c.params.get<std::int64_t>("segment") : std::max<std::int64_t>(1, c.numel())),
        exclusive_(exclusive),
        x_(input<T>("x", n_, spec)),
        y_(output<T>("y", n_, tut::Rule::exact()).expect([this](std::int64_t i) { return ref_[static_cast<std::size_t>(i)]; })) {}

  std::int64_t n() const { return n_; }
  std::int64_t segment() const { return segment_; }
  bool exclusive() const { return exclusive_; }
  const T* x() const { return x_.data(); }
  T* y() { return y_.data(); }
  const T* y() const { return y_.data(); }

  const std::vector<T>& reference() {
    if (static_cast<std::int64_t>(ref_.size()) != n_) compute_reference();
    return ref_;
  }

 protected:
  void prepare_reference() override { reference(); }

 private:
  void compute_reference() {
    ref_.assign(static_cast<std::size_t>(n_), T{});
    T* out = ref_.data();
    const auto at = [this](std::int64_t i) { return x_.at(i); };
    if (segment_ < n_) {
      const std::int64_t segments = ceil_segments();
      tut::parallel_chunks(segments, [&](int, std::int64_t first, std::int64_t last) {
        const std::int64_t b = first * segment_, e = std::min(n_, last * segment_);
        scan_ref<T>([&](std::int64_t i) { return at(b + i); }, e - b, segment_, exclusive_, out + b);
      });
      return;
    }
    // parallel_chunks makes at most one chunk per hardware thread, the same chunks on both passes.
    std::vector<T> chunk_sum(std::max(1u, std::thread::hardware_concurrency()), T{});
    const int chunks = tut::parallel_chunks(n_, [&](int k, std::int64_t b, std::int64_t e) {
      T s{};
      for (std::int64_t i = b; i < e; ++i) s = s + at(i);
      chunk_sum[k] = s;
    });
    std::vector<T> offset(static_cast<std::size_t>(chunks), T{});
    for (int k = 1; k < chunks; ++k) offset[k] = offset[k - 1] + chunk_sum[k - 1];
    tut::parallel_chunks(n_, [&](int k, std::int64_t b, std::int64_t e) {
      T running = offset[k];
      for (std::int64_t i = b; i < e; ++i) {
        const T v = at(i);
        if (exclusive_) {
          out[i] = running;
          running = running + v;
        } else {
          running = running + v;
          out[i] = running;
        }
      }
    });
  }
  std::int64_t ceil_segments() const { return (n_ + segment_ - 1) / segment_; }

  std::int64_t n_, segment_;
  bool exclusive_;
  tut::Array<T>& x_;
  tut::Array<T>& y_;
  std::vector<T> ref_;
};

}  // namespace ch03
