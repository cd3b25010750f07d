// Per-element problems (one output, 1-3 inputs, out[i] = ref(in0[i], ...)), the shape of
// chapters 01 and 02, on the problem model (tut/problem.hpp).
//
//   auto p = tut::elementwise_problem<float, float>("relu_f32", "y = max(x, 0) on float32",
//                                                   &relu_ref, {"x", "y"}, 1, tut::Rule::bitwise());
//   p.versions.push_back(tut::elementwise_version<float, float>("v0_naive", "...", &v0_naive<...>,
//                                                               {TUT_KERNEL(v0_naive_kernel<...>)}));
//
// The floor follows from the operands: each input read once and the output written once, so
// sizeof(R) + sizeof(In)... bytes per element, and `flops_per_element` operations. A version's
// launcher keeps the plain signature (stream, n, out, in...), so a kernel file needs nothing from
// this header.
#pragma once

#include "tut/arrays.cuh"
#include "tut/problem.hpp"

#include <array>
#include <functional>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tut {

// The sizes of the built-in suite of a per-element problem, 2^10 to 2^28 by factors of 4: the
// launch-latency region, the L2 region and the DRAM plateau (the sweep plots it).
inline std::vector<std::int64_t> elementwise_suite_sizes() {
  std::vector<std::int64_t> out;
  for (int p = 10; p <= 28; p += 2) out.push_back(std::int64_t{1} << p);
  return out;
}

inline constexpr std::int64_t kDefaultElements = std::int64_t{1} << 28;
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 36;

// The case for --n N or --shape N: one dimension, 1 <= n <= 2^36 (and no parameters).
inline Case elementwise_case(const std::vector<std::int64_t>& shape, const Params& params = {}) {
  if (shape.size() != 1)
    throw std::invalid_argument("a per-element problem takes one dimension (n), not a shape of rank " +
                                std::to_string(shape.size()));
  if (shape[0] < 1 || shape[0] > kMaxElements)
    throw std::invalid_argument("n must be in [1, 2^36], got " + std::to_string(shape[0]));
  return Case{case_name(shape, params), shape, params};
}

// A flat problem's cases: the default (2^28) and the suite (2^10 ... 2^28), with `params` set.
template <class Inst>
void flat_cases(Problem<Inst>& p, const Params& params = {}) {
  p.default_case = p.case_for({kDefaultElements}, params);
  p.suite.clear();
  for (std::int64_t n : elementwise_suite_sizes()) p.suite.push_back(p.case_for({n}, params));
}

template <class R, class... In>
class ElementwiseInstance : public Instance {
 public:
  using Launch = void (*)(cudaStream_t, std::int64_t, R*, const In*...);
  using Reference = R (*)(In...);
  static constexpr std::size_t kInputs = sizeof...(In);

  // names: the inputs', then the output's ("x", "y"). Each input is drawn by `spec` (with the
  // special values when the options ask for them and spec.specials is set).
  ElementwiseInstance(const Case& c, const InstanceOptions& opt, Reference ref, const std::array<std::string, kInputs + 1>& names,
                      InputSpec spec, Rule rule)
      : ElementwiseInstance(c.numel(), opt, ref, names, spec, rule, std::index_sequence_for<In...>{}) {}

  std::int64_t n() const { return n_; }
  R* out() { return out_.data(); }
  template <std::size_t K>
  const auto* in() const { return std::get<K>(in_).get().data(); }

  void run(Launch launch, cudaStream_t stream) {
    std::apply([&](auto&... a) { launch(stream, n_, out_.data(), a.get().data()...); }, in_);
  }

  R reference_at(std::int64_t i) const {
    return std::apply([&](const auto&... a) { return ref_(a.get().at(i)...); }, in_);
  }

 private:
  template <std::size_t... K>
  ElementwiseInstance(std::int64_t n, const InstanceOptions& opt, Reference ref, const std::array<std::string, kInputs + 1>& names,
                      InputSpec spec, Rule rule, std::index_sequence<K...>)
      : Instance(opt),
        n_(n),
        ref_(ref),
        in_{std::ref(input<In>(names[K], n, spec))...},  // braces: declared in order
        out_(output<R>(names[kInputs], n, rule).expect([this](std::int64_t i) { return reference_at(i); })) {}

  std::int64_t n_;
  Reference ref_;
  std::tuple<std::reference_wrapper<Array<In>>...> in_;
  Array<R>& out_;
};

// A per-element problem: `names` are its inputs' and output's names, `flops_per_element` its
// arithmetic, `rule` how its output is compared, `spec` how its inputs are drawn.
template <class R, class... In>
Problem<ElementwiseInstance<R, In...>> elementwise_problem(std::string name, std::string description, R (*ref)(In...),
                                                           std::array<std::string, sizeof...(In) + 1> names,
                                                           std::uint64_t flops_per_element, Rule rule,
                                                           InputSpec spec = InputSpec{}.with_specials()) {
  using Inst = ElementwiseInstance<R, In...>;
  Problem<Inst> p;
  p.name = std::move(name);
  p.description = std::move(description);
  p.dtype = dtype_name<R>();
  p.case_for = [](const std::vector<std::int64_t>& shape, const Params& params) { return elementwise_case(shape, params); };
  flat_cases(p);
  constexpr std::uint64_t bytes_per_element = sizeof(R) + (sizeof(In) + ... + 0);
  p.floor = [=](const Case& c) {
    const auto n = static_cast<std::uint64_t>(c.numel());
    return Floor{n * bytes_per_element, n * flops_per_element, {}};
  };
  p.make = [=](const Case& c, const InstanceOptions& opt) { return std::make_unique<Inst>(c, opt, ref, names, spec, rule); };
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
  v.launch = [launcher](ElementwiseInstance<R, In...>& inst, Workspace&, cudaStream_t s) { inst.run(launcher, s); };
  v.kernels = std::move(kernels);
  v.kind = kind;
  v.library = std::move(library);
  v.any_alignment = any_alignment;
  return v;
}

}  // namespace tut
