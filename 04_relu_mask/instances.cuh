// Chapter 04's instances (tut/problem.hpp): one case's device buffers and their CPU reference.
//
// ForwardInstance<T, kAdd>   inputs x (and r for AddReLU); outputs y, mask (ceil(n/32) words) and
//                            byte_mask (n bytes). A version writes y and one of the two masks, and
//                            says which when it launches (declare()); check() compares y and that
//                            mask with the reference, bit for bit, guards included.
// BackwardInstance<T>        input dy, and the forward's record in all three forms, built on the
//                            device from the same (seed, index) inputs as the forward instance's:
//                            y, the byte mask and the bitmask. A version reads one; check()
//                            compares dx bit for bit. The chained GPU test replaces the record with
//                            what each forward version wrote (record_*()).
// Both draw x from seed `opt.seed`, r from seed + 1000003 and dy from seed + 2 * 1000003, so a
// backward instance built with the forward's options describes the same tensors.
#pragma once

#include "kernels/ops.cuh"
#include "reference.hpp"
#include "tut/arrays.cuh"
#include "tut/bitmask.cuh"
#include "tut/problem.hpp"

#include <cstdint>
#include <vector>

namespace ch04 {

enum class MaskFormat { bits, bytes };
inline const char* format_name(MaskFormat f) { return f == MaskFormat::bits ? "bitmask" : "byte mask"; }

inline constexpr std::uint64_t kSeedStep = 1000003;

// Inputs: uniform in [-4, 4), so about half the elements are kept; the tests add ±0, ±inf, NaN, ±1.
inline tut::InputSpec input_spec(bool specials) { return tut::InputSpec{}.with_specials(specials); }

template <class T, bool kAdd>
class ForwardInstance : public tut::Instance {
 public:
  // Operand offsets: inputs x, r; outputs y, mask, byte_mask.
  ForwardInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : n_(c.numel()),
        x_(n_, o.seed, input_spec(o.specials), o.input_offset(0)),
        r_(kAdd ? n_ : 0, o.seed + kSeedStep, input_spec(o.specials), o.input_offset(1)),
        y_("y", n_, tut::Rule::bitwise(), o.output_offset(0)),
        mask_("mask", tut::bitmask::word_count(n_), tut::Rule::bitwise(), o.output_offset(1)),
        bytes_("byte_mask", n_, tut::Rule::bitwise(), o.output_offset(2)) {}

  std::int64_t n() const { return n_; }
  // The version's outputs, for the checks that follow its launch.
  void declare(MaskFormat f) { format_ = f; }
  MaskFormat format() const { return format_; }

  ForwardArgs<T> args() {
    return {n_, x_.data(), kAdd ? r_.data() : nullptr, y_.data(), mask_.data(), bytes_.data()};
  }
  const T* y() const { return y_.data(); }
  const Word* mask() const { return mask_.data(); }
  const std::uint8_t* byte_mask() const { return bytes_.data(); }

  void poison(cudaStream_t s) override {
    y_.poison(s);
    mask_.poison(s);
    bytes_.poison(s);
  }
  tut::CheckResult check() override {
    tut::CheckResult r;
    r.add(y_.name(), y_.check([&](std::int64_t i) { return relu_ref(s_at(i)); }));
    if (format_ == MaskFormat::bits)
      r.add(mask_.name(), mask_.check([&](std::int64_t w) {
        return tut::bitmask::reference_word(n_, w, [&](std::int64_t i) { return kept_ref(s_at(i)); });
      }));
    else
      r.add(bytes_.name(), bytes_.check([&](std::int64_t i) { return static_cast<std::uint8_t>(kept_ref(s_at(i)) ? 1 : 0); }));
    return r;
  }
  std::size_t working_set() const override {
    return x_.bytes() + r_.bytes() + y_.bytes() + mask_.bytes() + bytes_.bytes();
  }
  std::vector<tut::OutputView> output_views() const override {
    return {{y_.name(), y_.data(), y_.bytes(), y_.rule()},
            {mask_.name(), mask_.data(), mask_.bytes(), mask_.rule()},
            {bytes_.name(), bytes_.data(), bytes_.bytes(), bytes_.rule()}};
  }

  // The pre-activation of element i, on the host.
  T s_at(std::int64_t i) const {
    if constexpr (kAdd) return add_ref(x_.at(i), r_.at(i));
    else return x_.at(i);
  }

 private:
  std::int64_t n_;
  MaskFormat format_ = MaskFormat::bits;
  tut::InputArray<T> x_, r_;
  tut::OutputArray<T> y_;
  tut::OutputArray<Word> mask_;
  tut::OutputArray<std::uint8_t> bytes_;
};

// The backward's record of the forward, from (seed, index): y, the byte mask and the bitmask words.
// One warp per 32 elements; all 32 lanes vote, lanes past n vote false.
template <class T>
__global__ void build_record_kernel(std::int64_t n, tut::Random rx, tut::Random rr, bool add_r, tut::InputSpec spec,
                                    T* __restrict__ y, std::uint8_t* __restrict__ bytes, Word* __restrict__ mask) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const auto un = static_cast<std::uint64_t>(n);
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane; base < n;
       base += stride) {
    const std::int64_t i = base + lane;
    bool keep = false;
    if (i < n) {
      const auto ui = static_cast<std::uint64_t>(i);
      T s = rx.value<T>(ui, un, spec);
      if (add_r) s = add(s, rr.value<T>(ui, un, spec));
      keep = kept(s);
      y[i] = relu(s);
      bytes[i] = keep ? 1 : 0;
    }
    const Word word = __ballot_sync(kFullWarp, keep);
    if (lane == 0) mask[base / 32] = word;
  }
}

template <class T>
class BackwardInstance : public tut::Instance {
 public:
  // Operand offsets: inputs dy, y, byte_mask, mask; output dx.
  BackwardInstance(const tut::Case& c, const tut::InstanceOptions& o) : BackwardInstance(c.numel(), o, false) {}
  // `add_r`: the record describes relu(x + r) (AddReLU's forward) rather than relu(x).
  BackwardInstance(std::int64_t n, const tut::InstanceOptions& o, bool add_r)
      : n_(n),
        add_r_(add_r),
        rx_(o.seed),
        rr_(o.seed + kSeedStep),
        spec_(input_spec(o.specials)),
        dy_(n_, o.seed + 2 * kSeedStep, input_spec(o.specials), o.input_offset(0)),
        y_("y", n_, tut::Rule::bitwise(), o.input_offset(1)),
        bytes_("byte_mask", n_, tut::Rule::bitwise(), o.input_offset(2)),
        mask_("mask", tut::bitmask::word_count(n_), tut::Rule::bitwise(), o.input_offset(3)),
        dx_("dx", n_, tut::Rule::bitwise(), o.output_offset(0)) {
    y_.poison(nullptr);
    bytes_.poison(nullptr);
    mask_.poison(nullptr);
    if (n_ > 0) {
      const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((n_ + 255) / 256, 65536));
      build_record_kernel<T><<<blocks, 256>>>(n_, rx_, rr_, add_r_, spec_, y_.data(), bytes_.data(), mask_.data());
      TUT_CHECK_LAUNCH("build_record_kernel");
    }
  }

  std::int64_t n() const { return n_; }
  BackwardArgs<T> args() { return {n_, dy_.data(), y_.data(), bytes_.data(), mask_.data(), dx_.data()}; }
  // The record's buffers, for a test that puts a forward version's outputs there.
  T* record_y() { return y_.data(); }
  std::uint8_t* record_byte_mask() { return bytes_.data(); }
  Word* record_mask() { return mask_.data(); }

  void poison(cudaStream_t s) override { dx_.poison(s); }
  tut::CheckResult check() override {
    tut::CheckResult r;
    r.add(dx_.name(), dx_.check([&](std::int64_t i) { return backward_ref(dy_.at(i), kept_ref(s_at(i))); }));
    return r;
  }
  std::size_t working_set() const override { return dy_.bytes() + y_.bytes() + bytes_.bytes() + mask_.bytes() + dx_.bytes(); }
  std::vector<tut::OutputView> output_views() const override { return {{dx_.name(), dx_.data(), dx_.bytes(), dx_.rule()}}; }

  T s_at(std::int64_t i) const {
    const auto ui = static_cast<std::uint64_t>(i), un = static_cast<std::uint64_t>(n_);
    const T x = rx_.value<T>(ui, un, spec_);
    return add_r_ ? add_ref(x, rr_.value<T>(ui, un, spec_)) : x;
  }

 private:
  std::int64_t n_;
  bool add_r_;
  tut::Random rx_, rr_;
  tut::InputSpec spec_;
  tut::InputArray<T> dy_;
  // Inputs built by a kernel rather than drawn: kept in OutputArrays for their guard layout.
  tut::OutputArray<T> y_;
  tut::OutputArray<std::uint8_t> bytes_;
  tut::OutputArray<Word> mask_;
  tut::OutputArray<T> dx_;
};

}  // namespace ch04
