// doctest loops over a problem's versions, shared by every chapter's GPU tests and exercise grader.
//
//   check_sizes(problem)       every version at the awkward sizes, inputs with NaN, ±inf and ±0
//   check_offsets(problem)     every version that claims any alignment, with each input and the
//                              output moved by their own 0..7 elements off the vector alignment
//   check_all_at(problem, c)   every version on one shared instance of case c (the > 2^31 tests)
//
// Each launch writes into poisoned outputs and is compared element by element, guards included.
#pragma once

#include "tut/check.hpp"
#include "tut/buffer.hpp"
#include "tut/problem.hpp"
#include "tut/random.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace tut {

// Empty, single, around a warp, around a block, primes, 2^20+1, and one large size that is a
// multiple of no pack width. Under compute-sanitizer (TUT_SANITIZER set by the test setups), where
// every access is instrumented, the large size is left out.
inline std::vector<std::int64_t> grade_sizes() {
  std::vector<std::int64_t> sizes = {0, 1, 7, 31, 32, 33, 255, 1000, 4099, (1 << 20) + 1};
  const char* sanitizer = std::getenv("TUT_SANITIZER");
  if (!sanitizer || !*sanitizer) sizes.push_back((std::int64_t{1} << 26) + 3);
  return sizes;
}

// A seed per (problem, case, offsets), derived from the printed test seed.
inline std::uint64_t case_seed(const std::string& problem, std::int64_t n, const std::vector<int>& offsets) {
  std::uint64_t h = splitmix64(test_seed()) ^ splitmix64(static_cast<std::uint64_t>(n));
  for (char ch : problem) h = splitmix64(h ^ static_cast<unsigned char>(ch));
  for (int o : offsets) h = splitmix64(h ^ static_cast<std::uint64_t>(o + 1));
  return h;
}

// Test options: special values on, and the given offsets.
inline InstanceOptions test_options(const std::string& problem, std::int64_t n, std::vector<int> in_offsets = {},
                                    std::vector<int> out_offsets = {}) {
  std::vector<int> all = in_offsets;
  all.insert(all.end(), out_offsets.begin(), out_offsets.end());
  InstanceOptions o;
  o.seed = case_seed(problem, n, all);
  o.specials = true;
  o.input_offsets = std::move(in_offsets);
  o.output_offsets = std::move(out_offsets);
  return o;
}

template <class Inst>
void check_cases(const Problem<Inst>& p, const std::vector<Case>& cases) {
  for (const auto& v : p.versions) {
    for (const Case& c : cases) {
      const CheckResult r = grade(p, v, c, test_options(p.name, c.numel()));
      CHECK_MESSAGE(r.ok(), p.name, " ", v.name, " ", c.name, ": ", r.summary());
    }
  }
}

// The same for a flat problem at each size.
template <class Inst>
void check_sizes(const Problem<Inst>& p, const std::vector<std::int64_t>& sizes = grade_sizes()) {
  std::vector<Case> cases;
  for (std::int64_t n : sizes) cases.push_back(flat_case(n));
  check_cases(p, cases);
}

// A flat problem with `inputs` inputs and one output, for each output offset 0..7: every operand
// at that same offset (aligned to each other, not to 16 bytes), then input k at (offset + 5k) % 8
// and the output at (offset + 3) % 8 (no two aligned alike).
template <class Inst>
void check_offsets(const Problem<Inst>& p, std::size_t inputs, const std::vector<std::int64_t>& sizes = {33, 1000, 4099}) {
  for (const auto& v : p.versions) {
    if (!v.any_alignment) continue;
    for (std::int64_t n : sizes) {
      for (int off = 0; off < 8; ++off) {
        for (bool apart : {false, true}) {
          std::vector<int> in_off;
          for (std::size_t k = 0; k < inputs; ++k) in_off.push_back(apart ? static_cast<int>((off + 5 * k) % 8) : off);
          const int out_off = apart ? (off + 3) % 8 : off;
          const CheckResult r = grade(p, v, flat_case(n), test_options(p.name, n, in_off, {out_off}));
          std::string offs;
          for (int o : in_off) offs += " in+" + std::to_string(o);
          CHECK_MESSAGE(r.ok(), p.name, " ", v.name, " n=", n, offs, " out+", out_off, ": ", r.summary());
        }
      }
    }
  }
}

// Every version on one instance of `c` (built once: the > 2^31-element inputs are big). The first
// version is compared with the CPU reference element by element. Where every output's rule is
// exact or bitwise and that comparison passed, each later version is then compared with the first
// version's outputs byte for byte on the device: equal bytes to outputs that match the reference
// match it too, and the check costs milliseconds instead of a host pass over gigabytes. A version
// that differs anywhere gets the full comparison with the reference, which says where. Says how
// long each part took, since these are the slowest tests.
template <class Inst>
void check_all_at(const Problem<Inst>& p, const Case& c) {
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
  };
  auto t0 = clock::now();
  const auto inst = p.make(c, test_options(p.name, c.numel()));
  TUT_CUDA(cudaDeviceSynchronize());
  MESSAGE(p.name, " ", c.name, ": instance built in ", ms(t0, clock::now()), " ms");
  std::vector<DeviceBuffer<unsigned char>> first;  // the first version's outputs, once they passed
  const std::vector<OutputView> views = inst->output_views();
  bool exact = !views.empty();
  for (const auto& v : views) exact = exact && v.rule.kind != Rule::Kind::tolerance;
  for (std::size_t k = 0; k < p.versions.size(); ++k) {
    const auto& v = p.versions[k];
    t0 = clock::now();
    const Trial t = make_trial(v, *inst);
    t.poison(nullptr);
    t.before(nullptr);
    t.launch(nullptr);
    TUT_CUDA(cudaDeviceSynchronize());
    const auto t1 = clock::now();
    std::uint64_t differ = 1;
    if (!first.empty()) {
      differ = 0;
      for (std::size_t o = 0; o < views.size(); ++o) differ += count_different_bytes(views[o].data, first[o].data(), views[o].bytes);
    }
    if (differ == 0) {
      MESSAGE(p.name, " ", v.name, ": launch ", ms(t0, t1), " ms; every output byte equals ", p.versions[0].name,
              "'s (", ms(t1, clock::now()), " ms on the device)");
      CHECK(differ == 0);
      continue;
    }
    const CheckResult r = t.check();
    MESSAGE(p.name, " ", v.name, ": launch ", ms(t0, t1), " ms, compared with the reference in ", ms(t1, clock::now()),
            " ms");
    CHECK_MESSAGE(r.ok(), p.name, " ", v.name, " ", c.name, ": ", r.summary());
    if (k == 0 && r.ok() && exact) {
      for (const auto& view : views) {
        first.emplace_back(view.bytes);
        TUT_CUDA(cudaMemcpy(first.back().data(), view.data, view.bytes, cudaMemcpyDeviceToDevice));
      }
    }
  }
}

}  // namespace tut
