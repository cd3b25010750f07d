// Chapter 07's problems: the empirical roofline, one problem per precision. A case is n elements
// and `--param flops=F`, the FLOPs each element gets (kernels/sweep.cuh): 8 bytes move per element,
// so its arithmetic intensity is F / 8. The suite runs F = 1, 2, 4, ... 2048 (intensity 1/8 to
// 256) at n = 2^26; the three versions are the same kernel with the FMA loop in the performance
// guide's three unroll forms.
#pragma once

#include "kernels/sweep.cuh"
#include "tut/arrays.cuh"
#include "tut/elementwise_problem.cuh"
#include "tut/problem.hpp"

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ch07 {

inline constexpr std::int64_t kSweepElements = std::int64_t{1} << 26;
inline constexpr std::int64_t kDefaultFlops = 256;

// What the kernel computes for one element, on the host: the same operations, each rounded once.
inline float sweep_ref(float x, int flops) {
  if (flops == 1) return x + kB;
  for (int k = 0; k < flops / 2; ++k) x = std::fmaf(x, kA, kB);
  return x;
}
// One half of a pair: exact in double (a product of halves has 22 bits), rounded to half once.
inline __half hfma_ref(__half v, double a, double b) {
  return __double2half(static_cast<double>(__half2float(v)) * a + b);
}
inline __half sweep_ref_half(__half x, bool low, int flops) {
  if (flops == 1) return low ? __double2half(static_cast<double>(__half2float(x)) + kB) : x;
  if (flops == 2) return __double2half(static_cast<double>(__half2float(x)) + kB);
  for (int k = 0; k < flops / 4; ++k) x = hfma_ref(x, kA, kB);
  return x;
}

// T is the stored type: float, or __half with two halves per element. The inputs are whole numbers
// in [-2048, 2048] (exact in both types), so the reference computes each chain once per value, in a
// table of 4097 (a chain of 1024 FMAs per element would take the host far longer than the GPU);
// the tests' special values (NaN, infinities, signed zeros) are computed one by one.
template <class T>
class SweepInstance : public tut::Instance {
 public:
  static constexpr int kPer = std::is_same_v<T, float> ? 1 : 2;  // stored values per element
  static constexpr int kRange = 2048;

  SweepInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        n_(c.numel()),
        flops_(static_cast<int>(c.params.get<std::int64_t>("flops"))),
        x_(input<T>("x", kPer * n_, tut::InputSpec::whole_numbers(-kRange, kRange).with_specials())),
        y_(output<T>("y", kPer * n_, tut::Rule::exact()).expect([this](std::int64_t i) { return ref(i); })) {}

  std::int64_t n() const { return n_; }
  int flops() const { return flops_; }
  const T* x() const { return x_.data(); }
  T* y() { return y_.data(); }

 protected:
  void prepare_reference() override {
    if (!table_.empty()) return;
    for (int v = -kRange; v <= kRange; ++v) table_.push_back(chain(static_cast<T>(static_cast<float>(v)), true));
  }

 private:
  T chain(T x, bool low) const {
    if constexpr (kPer == 1) return sweep_ref(x, flops_);
    else return sweep_ref_half(x, low, flops_);
  }
  T ref(std::int64_t i) const {
    const T x = x_.at(i);
    const bool low = i % 2 == 0;
    if (kPer == 2 && flops_ == 1 && !low) return x;  // F = 1 adds to the low half only
    const float f = static_cast<float>(x);
    if (std::isfinite(f) && f == std::trunc(f) && std::fabs(f) <= kRange && !(f == 0 && std::signbit(f)))
      return table_[static_cast<std::size_t>(static_cast<int>(f) + kRange)];
    return chain(x, low);
  }
  std::int64_t n_;
  int flops_;
  tut::Array<T>& x_;
  tut::Array<T>& y_;
  std::vector<T> table_;
};

template <class T>
using SweepLaunch = void (*)(cudaStream_t, std::int64_t, int, const std::conditional_t<std::is_same_v<T, float>, float, __half2>*,
                             std::conditional_t<std::is_same_v<T, float>, float, __half2>*);

template <class T>
tut::Version<SweepInstance<T>> sweep_version(std::string name, std::string summary, SweepLaunch<T> launch) {
  using Elem = std::conditional_t<std::is_same_v<T, float>, float, __half2>;
  tut::Version<SweepInstance<T>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](SweepInstance<T>& i, tut::Workspace&, cudaStream_t s) {
    launch(s, i.n(), i.flops(), reinterpret_cast<const Elem*>(i.x()), reinterpret_cast<Elem*>(i.y()));
  };
  v.any_alignment = std::is_same_v<T, float>;  // pairs of halves need 4-byte alignment
  return v;
}

template <class T>
tut::Problem<SweepInstance<T>> sweep_problem() {
  constexpr bool f32 = std::is_same_v<T, float>;
  tut::Problem<SweepInstance<T>> p;
  p.name = f32 ? "sweep_f32" : "sweep_f16";
  p.description = f32 ? "y = F FLOPs of FADD/FFMA on x, float32: intensity F / 8 FLOP per byte"
                      : "y = F FLOPs of HADD/HFMA2 on a pair of halves: intensity F / 8 FLOP per byte";
  p.dtype = f32 ? "f32" : "f16";
  p.params = {{"flops", kDefaultFlops, "FLOPs per element (8 bytes): a power of two from 1 to 2048", {}}};
  p.case_for = [](const std::vector<std::int64_t>& shape, const tut::Params& params) {
    const tut::Case c = tut::elementwise_case(shape, params);
    const std::int64_t f = params.get<std::int64_t>("flops");
    if (!valid_flops(f))
      throw std::invalid_argument("flops must be a power of two from 1 to 2048, got " + std::to_string(f));
    return c;
  };
  p.default_case = p.case_for({kSweepElements}, tut::Params{}.set("flops", kDefaultFlops));
  for (std::int64_t f = kMinFlops; f <= kMaxFlops; f *= 2)
    p.suite.push_back(p.case_for({kSweepElements}, tut::Params{}.set("flops", f)));
  p.floor = [](const tut::Case& c) {
    const auto n = static_cast<std::uint64_t>(c.numel());
    return tut::Floor{8 * n, n * static_cast<std::uint64_t>(c.params.get<std::int64_t>("flops")), {}};
  };
  p.make = [](const tut::Case& c, const tut::InstanceOptions& o) { return std::make_unique<SweepInstance<T>>(c, o); };
  if constexpr (f32) {
    p.versions = {sweep_version<T>("v0_unroll1", "#pragma unroll 1: FFMA, counter, compare, branch per FMA", &sweep_f32<1>),
                  sweep_version<T>("v1_unroll4", "#pragma unroll 4: four FFMAs per loop iteration", &sweep_f32<4>),
                  sweep_version<T>("v2_unrolled", "#pragma unroll: the chain as straight-line FFMAs", &sweep_f32<0>)};
  } else {
    p.versions = {sweep_version<T>("v0_unroll1", "#pragma unroll 1: HFMA2, counter, compare, branch per FMA", &sweep_f16<1>),
                  sweep_version<T>("v1_unroll4", "#pragma unroll 4: four HFMA2s per loop iteration", &sweep_f16<4>),
                  sweep_version<T>("v2_unrolled", "#pragma unroll: the chain as straight-line HFMA2s", &sweep_f16<0>)};
  }
  return p;
}

inline const tut::Problem<SweepInstance<float>>& sweep_f32_problem() {
  static const auto p = sweep_problem<float>();
  return p;
}
inline const tut::Problem<SweepInstance<__half>>& sweep_f16_problem() {
  static const auto p = sweep_problem<__half>();
  return p;
}

}  // namespace ch07
