// Per-element problems (one output, 1-3 inputs, out[i] = ref(in0[i], ...)), the shape of
// chapters 01 and 02, on the general problem model (tut/problem.hpp).
//
//   auto p = tut::elementwise_problem<float, float>("relu_f32", "y = max(x, 0) on float32",
//                                                   &relu_ref, 8, 1, tut::Rule::bitwise());
//   p.versions.push_back(tut::elementwise_version<float, float>("v0_naive", "...", &v0_naive<...>,
//                                                               {TUT_KERNEL(v0_naive_kernel<...>)}));
//
// A version's launcher keeps the plain signature (stream, n, out, in...), so a kernel file needs
// nothing from this header.
#pragma once

#include "tut/arrays.cuh"
#include "tut/problem.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tut {

template <class T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same_v<T, __half>) return "f16";
  else if constexpr (std::is_same_v<T, float>) return "f32";
  else if constexpr (std::is_same_v<T, double>) return "f64";
  else if constexpr (std::is_same_v<T, std::int8_t>) return "i8";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "u8";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "i32";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "u32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "i64";
  else return "?";
}

template <class R, class... In>
class ElementwiseInstance : public Instance {
 public:
  using Launch = void (*)(cudaStream_t, std::int64_t, R*, const In*...);
  using Reference = R (*)(In...);

  // Input k is drawn with seed `opt.seed + k * 1000003` and moved `opt.input_offset(k)` elements off
  // its alignment; the output, named "y", by `opt.output_offset(0)`.
  ElementwiseInstance(const Case& c, const InstanceOptions& opt, Reference ref, InputSpec spec, Rule rule)
      : ElementwiseInstance(c.numel(), opt, ref, spec.with_specials(opt.specials && spec.specials), rule,
                            std::index_sequence_for<In...>{}) {}

  std::int64_t n() const { return n_; }
  R* out() { return out_.data(); }
  template <std::size_t K>
  const auto* in() const { return std::get<K>(in_).data(); }

  void run(Launch launch, cudaStream_t stream) {
    std::apply([&](auto&... a) { launch(stream, n_, out_.data(), a.data()...); }, in_);
  }

  void poison(cudaStream_t stream) override { out_.poison(stream); }
  CheckResult check() override {
    CheckResult r;
    r.add(out_.name(), out_.check([&](std::int64_t i) { return reference_at(i); }));
    return r;
  }
  std::size_t working_set() const override { return static_cast<std::size_t>(n_) * (sizeof(R) + (sizeof(In) + ... + 0)); }
  std::vector<OutputView> output_views() const override {
    return {OutputView{out_.name(), out_.data(), out_.bytes(), out_.rule()}};
  }

  R reference_at(std::int64_t i) const {
    return std::apply([&](const auto&... a) { return ref_(a.at(i)...); }, in_);
  }

 private:
  template <std::size_t... K>
  ElementwiseInstance(std::int64_t n, const InstanceOptions& opt, Reference ref, InputSpec spec, Rule rule,
                      std::index_sequence<K...>)
      : n_(n),
        ref_(ref),
        in_(InputArray<In>(n, opt.seed + 1000003 * K, spec, opt.input_offset(K))...),
        out_("y", n, rule, opt.output_offset(0)) {}

  std::int64_t n_;
  Reference ref_;
  std::tuple<InputArray<In>...> in_;
  OutputArray<R> out_;
};

// The sizes of the built-in suite of a per-element problem, 2^10 to 2^28 by factors of 4: the
// launch-latency region, the L2 region and the DRAM plateau (the sweep plots it).
inline std::vector<std::int64_t> elementwise_suite_sizes() {
  std::vector<std::int64_t> out;
  for (int p = 10; p <= 28; p += 2) out.push_back(std::int64_t{1} << p);
  return out;
}

inline constexpr std::int64_t kDefaultElements = std::int64_t{1} << 28;
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 36;

// The case for --n N or --shape N: one dimension, 1 <= n <= 2^36.
inline Case elementwise_case(const std::vector<std::int64_t>& shape) {
  if (shape.size() != 1)
    throw std::invalid_argument("a per-element problem takes one dimension (n), not a shape of rank " +
                                std::to_string(shape.size()));
  if (shape[0] < 1 || shape[0] > kMaxElements)
    throw std::invalid_argument("n must be in [1, 2^36], got " + std::to_string(shape[0]));
  return flat_case(shape[0]);
}

// A per-element problem: `bytes_per_element` and `flops_per_element` give its floor, `rule` how
// its output is compared, `spec` how its inputs are drawn (the tests add the special values when
// spec.specials is set).
template <class R, class... In>
Problem<ElementwiseInstance<R, In...>> elementwise_problem(std::string name, std::string description,
                                                           R (*ref)(In...), std::uint64_t bytes_per_element,
                                                           std::uint64_t flops_per_element, Rule rule,
                                                           InputSpec spec = InputSpec{}.with_specials()) {
  using Inst = ElementwiseInstance<R, In...>;
  Problem<Inst> p;
  p.name = std::move(name);
  p.description = std::move(description);
  p.dtype = dtype_name<R>();
  p.default_case = flat_case(kDefaultElements);
  for (std::int64_t n : elementwise_suite_sizes()) p.suite.push_back(flat_case(n));
  p.case_for_shape = &elementwise_case;
  p.floor = [=](const Case& c) {
    const auto n = static_cast<std::uint64_t>(c.numel());
    return Floor{n * bytes_per_element, n * flops_per_element};
  };
  p.make = [=](const Case& c, const InstanceOptions& opt) { return std::make_unique<Inst>(c, opt, ref, spec, rule); };
  return p;
}

// A version of a per-element problem from a plain launcher (stream, n, out, in...).
template <class R, class... In>
Version<ElementwiseInstance<R, In...>> elementwise_version(std::string name, std::string summary,
                                                           typename ElementwiseInstance<R, In...>::Launch launcher,
                                                           std::vector<const void*> kernels, bool any_alignment = true,
                                                           Kind kind = Kind::own, std::string library = {}) {
  Version<ElementwiseInstance<R, In...>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launcher](ElementwiseInstance<R, In...>& inst, Scratch&, cudaStream_t s) { inst.run(launcher, s); };
  v.kernels = std::move(kernels);
  v.kind = kind;
  v.library = std::move(library);
  v.any_alignment = any_alignment;
  return v;
}

}  // namespace tut
