// Chapter 06's instances (tut/problem.hpp): one case's operands, declared once, and their CPU
// reference (reference.hpp).
//
// ForwardInstance<T>   input x (N*C*D*H*W in the case's layout); outputs y, and the index in the
//                      case's format: `index` (int64) for indices=int64, `offset8` (uint8) or
//                      `offset16` (int16) for indices=compact. The outputs a case does not use
//                      have no elements; their guards are still checked, so a version that writes
//                      an index the case did not ask for fails.
// BackwardInstance<T>  input dy (one per output); the forward's index as saved inputs under the
//                      same three names, filled by running a forward version on the same case
//                      and seed (the chain, versions.cuh); output dx.
//
// Inputs are whole numbers in [-8, 8] (the tests add NaN, +-inf, +-0 and +-1): in a window of 8
// or more cells equal maxima are common, so every case tests the tie rule, not only the
// cases built for it. dy's sums of whole numbers are exact in float in any order, so the scatter
// (whose order varies) and the gather can both be compared exactly with the reference; the
// determinism test draws non-integer dy of its own.
//
// The reference is computed once per instance, on every core, the first time a check needs it:
// each output's winning cell (forward), or dx summed in double (backward). The inputs never
// change, and the saved indices are filled once, before the first launch.
#pragma once

#include "cases.hpp"
#include "kernels/bwd.cuh"
#include "kernels/pool.cuh"
#include "reference.hpp"
#include "tut/arrays.cuh"
#include "tut/parallel.hpp"
#include "tut/problem.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ch06 {

inline tut::InputSpec pool_input_spec() { return tut::InputSpec::whole_numbers(-8, 8).with_specials(); }

inline float as_float(float v) { return v; }
inline float as_float(__half v) { return __half2float(v); }

template <class T>
class ForwardInstance : public tut::Instance {
 public:
  ForwardInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        w_(window_of_case(c)),
        x_(input<T>("x", w_.in_numel(), pool_input_spec())),
        y_(output<T>("y", w_.out_numel(), tut::Rule::bitwise()).expect([this](std::int64_t i) {
          return x_.at(winner(i));
        })),
        index_(output<std::int64_t>("index", count(IndexFormat::int64, true), tut::Rule::exact())
                   .expect([this](std::int64_t i) {
                     const OutPos q = out_pos(w_, i);
                     return w_.flat_index(q.od, q.oh, q.ow, cells_[static_cast<std::size_t>(i)]);
                   })),
        offset8_(output<std::uint8_t>("offset8", count(IndexFormat::compact, true), tut::Rule::exact())
                     .expect([this](std::int64_t i) { return static_cast<std::uint8_t>(cells_[static_cast<std::size_t>(i)]); })),
        offset16_(output<std::int16_t>("offset16", count(IndexFormat::compact, false), tut::Rule::exact())
                      .expect([this](std::int64_t i) { return static_cast<std::int16_t>(cells_[static_cast<std::size_t>(i)]); })) {}

  const Window& window() const { return w_; }
  ForwardArgs<T> args() {
    ForwardArgs<T> a;
    a.w = w_;
    a.x = x_.data();
    a.y = y_.data();
    a.index = index_.data();
    a.offset8 = offset8_.data();
    a.offset16 = offset16_.data();
    return a;
  }
  // The reference's winning cell of output i, and the input element it is.
  int cell(std::int64_t i) {
    prepare_reference();
    return cells_[static_cast<std::size_t>(i)];
  }
  std::int64_t winner(std::int64_t i) const {
    const OutPos q = out_pos(w_, i);
    return in_element(w_, q.n, q.c, w_.flat_index(q.od, q.oh, q.ow, cells_[static_cast<std::size_t>(i)]));
  }

 protected:
  void prepare_reference() override {
    if (ready_) return;
    cells_.assign(static_cast<std::size_t>(w_.out_numel()), 0);
    tut::parallel_chunks(w_.out_numel(), [this](int, std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        const OutPos q = out_pos(w_, i);
        cells_[static_cast<std::size_t>(i)] =
            window_max(w_, q.n, q.c, q.od, q.oh, q.ow, [this](std::int64_t k) { return as_float(x_.at(k)); }).cell;
      }
    });
    ready_ = true;
  }

 private:
  // Elements of an index output: the output's count where the case's format is `f` (and, for the
  // compact format, the width matches), else none.
  std::int64_t count(IndexFormat f, bool byte_wide) const {
    if (w_.indices != f) return 0;
    if (f == IndexFormat::compact && w_.compact8() != byte_wide) return 0;
    return w_.out_numel();
  }

  Window w_;
  tut::Array<T>& x_;
  tut::Array<T>& y_;
  tut::Array<std::int64_t>& index_;
  tut::Array<std::uint8_t>& offset8_;
  tut::Array<std::int16_t>& offset16_;
  std::vector<int> cells_;
  bool ready_ = false;
};

template <class T>
class BackwardInstance : public tut::Instance {
 public:
  BackwardInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        w_(window_of_case(c)),
        dy_(input<T>("dy", w_.out_numel(), pool_input_spec())),
        index_(saved<std::int64_t>("index", w_.indices == IndexFormat::int64 ? w_.out_numel() : 0)),
        offset8_(saved<std::uint8_t>("offset8",
                                     w_.indices == IndexFormat::compact && w_.compact8() ? w_.out_numel() : 0)),
        offset16_(saved<std::int16_t>("offset16",
                                      w_.indices == IndexFormat::compact && !w_.compact8() ? w_.out_numel() : 0)),
        dx_(output<T>("dx", w_.in_numel(), tut::Rule::exact()).expect([this](std::int64_t e) {
          return static_cast<T>(dx_ref_[static_cast<std::size_t>(e)]);
        })) {}

  const Window& window() const { return w_; }
  BackwardArgs<T> args() {
    BackwardArgs<T> a;
    a.w = w_;
    a.dy = dy_.data();
    a.index = index_.data();
    a.offset8 = offset8_.data();
    a.offset16 = offset16_.data();
    a.dx = dx_.data();
    return a;
  }
  // The input element output o's saved index names (the saved inputs as downloaded at a check).
  std::int64_t target(std::int64_t o) const {
    const OutPos q = out_pos(w_, o);
    std::int64_t flat;
    if (w_.indices == IndexFormat::int64) flat = index_.host(o);
    else flat = w_.flat_index(q.od, q.oh, q.ow, w_.compact8() ? offset8_.host(o) : offset16_.host(o));
    return in_element(w_, q.n, q.c, flat);
  }

 protected:
  // dx[e] = the sum of dy over the outputs whose saved index names e, in double (exact here: the
  // drawn dy are whole numbers or special values).
  void prepare_reference() override {
    if (ready_) return;
    dx_ref_.assign(static_cast<std::size_t>(w_.in_numel()), 0.0);
    const std::int64_t n = w_.out_numel();
    for (std::int64_t o = 0; o < n; ++o) {
      const std::int64_t e = target(o);
      if (e < 0 || e >= w_.in_numel())
        throw std::runtime_error("saved index of output " + std::to_string(o) + " names input element " +
                                 std::to_string(e) + ", outside the input");
      dx_ref_[static_cast<std::size_t>(e)] += static_cast<double>(as_float(dy_.at(o)));
    }
    ready_ = true;
  }

 private:
  Window w_;
  tut::Array<T>& dy_;
  tut::Array<std::int64_t>& index_;
  tut::Array<std::uint8_t>& offset8_;
  tut::Array<std::int16_t>& offset16_;
  tut::Array<T>& dx_;
  std::vector<double> dx_ref_;
  bool ready_ = false;
};

}  // namespace ch06
