// Chapter 04's instances (tut/problem.hpp): one case's operands, declared once, and their CPU
// reference.
//
// ForwardInstance<T, kAdd>   inputs x (and r for AddReLU); outputs y, mask (ceil(n/32) words) and
//                            byte_mask (n bytes). A version writes y and one of the two masks, and
//                            says which (Version::writes); the check compares those, bit for bit,
//                            guards included.
// BackwardInstance<T>        input dy; the forward's record as saved inputs, in all three forms a
//                            version may read: y, the byte mask and the bitmask. The chain
//                            (versions.cuh) fills them by running the forward's versions on the
//                            same case and seed, each run checked; dx's reference reads the saved
//                            bitmask, so the backward is graded on whatever forward wrote it
//                            (ReLU's or AddReLU's, tut::check_chains).
#pragma once

#include "kernels/ops.cuh"
#include "reference.hpp"
#include "tut/arrays.cuh"
#include "tut/bitmask.cuh"
#include "tut/problem.hpp"

#include <cstdint>
#include <vector>

namespace ch04 {

// Inputs: uniform in [-4, 4), so about half the elements are kept; the tests add ±0, ±inf, NaN, ±1.
inline tut::InputSpec input_spec() { return tut::InputSpec{}.with_specials(); }

template <class T, bool kAdd>
class ForwardInstance : public tut::Instance {
 public:
  ForwardInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        n_(c.numel()),
        x_(input<T>("x", n_, input_spec())),
        r_(kAdd ? &input<T>("r", n_, input_spec()) : nullptr),
        y_(output<T>("y", n_, tut::Rule::bitwise()).expect([this](std::int64_t i) { return relu_ref(s_at(i)); })),
        mask_(output<Word>("mask", tut::bitmask::word_count(n_), tut::Rule::bitwise()).expect([this](std::int64_t w) {
          return tut::bitmask::reference_word(n_, w, [&](std::int64_t i) { return kept_ref(s_at(i)); });
        })),
        bytes_(output<std::uint8_t>("byte_mask", n_, tut::Rule::bitwise()).expect([this](std::int64_t i) {
          return static_cast<std::uint8_t>(kept_ref(s_at(i)) ? 1 : 0);
        })) {}

  std::int64_t n() const { return n_; }
  ForwardArgs<T> args() {
    return {n_, x_.data(), r_ ? r_->data() : nullptr, y_.data(), mask_.data(), bytes_.data()};
  }

  // The pre-activation of element i, on the host.
  T s_at(std::int64_t i) const {
    if constexpr (kAdd) return add_ref(x_.at(i), r_->at(i));
    else return x_.at(i);
  }

 private:
  std::int64_t n_;
  tut::Array<T>& x_;
  tut::Array<T>* r_;  // AddReLU only
  tut::Array<T>& y_;
  tut::Array<Word>& mask_;
  tut::Array<std::uint8_t>& bytes_;
};

template <class T>
class BackwardInstance : public tut::Instance {
 public:
  BackwardInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        n_(c.numel()),
        dy_(input<T>("dy", n_, input_spec())),
        y_(saved<T>("y", n_)),
        bytes_(saved<std::uint8_t>("byte_mask", n_)),
        mask_(saved<Word>("mask", tut::bitmask::word_count(n_))),
        dx_(output<T>("dx", n_, tut::Rule::bitwise()).expect([this](std::int64_t i) {
          return backward_ref(dy_.at(i), kept_at(i));
        })) {}

  std::int64_t n() const { return n_; }
  BackwardArgs<T> args() { return {n_, dy_.data(), y_.data(), bytes_.data(), mask_.data(), dx_.data()}; }

  // Whether the forward kept element i, from the saved bitmask (checked when it was written).
  bool kept_at(std::int64_t i) const {
    return (mask_.host(tut::bitmask::word_of(i)) >> tut::bitmask::bit_of(i)) & 1u;
  }

 private:
  std::int64_t n_;
  tut::Array<T>& dy_;
  tut::Array<T>& y_;
  tut::Array<std::uint8_t>& bytes_;
  tut::Array<Word>& mask_;
  tut::Array<T>& dx_;
};

}  // namespace ch04
