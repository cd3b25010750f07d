// Comparison of a kernel's outputs with the CPU reference, output by output.
//
// Each output has its own rule:
//   exact      equal values: integers equal; floats equal (+0 == -0), NaN where the reference has NaN;
//   bitwise    the same bytes (a bitmask, or a float whose sign of zero matters);
//   tolerance  |got - ref| <= atol + rtol * |ref| + atol_per_term * terms(i), where terms(i) is the
//              number of values summed into element i (a prefix sum's error grows with it; 0
//              elsewhere). A NaN passes only where the reference has one, an infinity only where
//              the reference has the same infinity.
// A failure names the output, the first few indices, and got and expected at each.
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tut {

struct Rule {
  enum class Kind { exact, bitwise, tolerance };
  Kind kind = Kind::exact;
  double atol = 0, rtol = 0, atol_per_term = 0;

  static constexpr Rule exact() { return {Kind::exact, 0, 0, 0}; }
  static constexpr Rule bitwise() { return {Kind::bitwise, 0, 0, 0}; }
  static constexpr Rule tolerance(double atol, double rtol) { return {Kind::tolerance, atol, rtol, 0}; }
  // A tolerance that grows with the number of terms behind each element.
  static constexpr Rule growing(double atol, double rtol, double atol_per_term) {
    return {Kind::tolerance, atol, rtol, atol_per_term};
  }
  std::string describe() const;
};

// The tolerance the tests use for a type when a problem does not choose one.
template <class T>
Rule default_rule() {
  if constexpr (std::is_same_v<T, __half>) return Rule::tolerance(1e-3, 1e-3);  // ~2 ulp of half at 1
  else if constexpr (std::is_same_v<T, float>) return Rule::tolerance(1e-6, 1e-5);
  else if constexpr (std::is_same_v<T, double>) return Rule::tolerance(1e-12, 1e-10);
  else return Rule::exact();
}

namespace detail {
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<double>(__half2float(v));
  else return static_cast<double>(v);
}
template <class T>
std::string show(T v) {
  std::ostringstream s;
  if constexpr (std::is_integral_v<T>) {
    s << +v;
    if constexpr (sizeof(T) >= 4) s << " (0x" << std::hex << static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<T>>(v)) << ")";
  } else {
    s.precision(9);
    const double d = as_double(v);
    if (d == 0 && std::signbit(d)) s << "-0";
    else s << d;
  }
  return s.str();
}
}  // namespace detail

// One element: does `got` match `ref` under `rule`, for an element built from `terms` values?
template <class T>
bool element_matches(T got, T ref, const Rule& rule, double terms = 0) {
  if (rule.kind == Rule::Kind::bitwise) return std::memcmp(&got, &ref, sizeof(T)) == 0;
  if constexpr (std::is_integral_v<T>) {
    return got == ref;
  } else {
    const double g = detail::as_double(got), r = detail::as_double(ref);
    if (std::isnan(r) || std::isnan(g)) return std::isnan(r) && std::isnan(g);
    if (g == r) return true;  // equal values, equal infinities, +0 and -0
    if (rule.kind == Rule::Kind::exact || std::isinf(r) || std::isinf(g)) return false;
    return std::fabs(g - r) <= rule.atol + rule.rtol * std::fabs(r) + rule.atol_per_term * terms;
  }
}

struct Mismatch {
  std::int64_t index;  // negative, or past the end: a guard element around the output
  std::string got, expected;
};

// One output's comparison.
struct VerifyResult {
  std::int64_t checked = 0;
  std::int64_t mismatches = 0;
  std::vector<Mismatch> first;  // the first few, in index order

  bool ok() const { return mismatches == 0; }
  std::string summary() const;
  // Merges the result of a check done in chunks, whose indices start at `base`.
  void merge(const VerifyResult& o, std::int64_t base = 0, std::size_t keep = 5);
  void add(std::int64_t index, std::string got, std::string expected, std::size_t keep = 5) {
    ++mismatches;
    if (first.size() < keep) first.push_back({index, std::move(got), std::move(expected)});
  }
};

// Every output of a launch.
struct CheckResult {
  struct Output {
    std::string name;
    VerifyResult result;
  };
  std::vector<Output> outputs;

  bool ok() const;
  // "y: all 1000 elements match" or "mask: 2 of 32 elements differ; [3] got 0x0, expected 0x1".
  std::string summary() const;
  const VerifyResult& operator[](const std::string& name) const;  // throws if absent
  void add(std::string name, VerifyResult r) { outputs.push_back({std::move(name), std::move(r)}); }
};

// Compares n elements; `ref_at(i)` gives the expected value at i and `terms_at(i)` the number of
// values summed into it, so a reference can be computed on the fly for inputs too large to hold twice.
template <class T, class RefAt, class TermsAt>
VerifyResult verify_with(const T* got, std::int64_t n, RefAt&& ref_at, const Rule& rule, TermsAt&& terms_at,
                         std::size_t report = 5) {
  VerifyResult r;
  r.checked = n;
  for (std::int64_t i = 0; i < n; ++i) {
    const T ref = ref_at(i);
    if (!element_matches(got[i], ref, rule, static_cast<double>(terms_at(i))))
      r.add(i, detail::show(got[i]), detail::show(ref), report);
  }
  return r;
}

template <class T, class RefAt>
VerifyResult verify_with(const T* got, std::int64_t n, RefAt&& ref_at, const Rule& rule, std::size_t report = 5) {
  return verify_with(got, n, ref_at, rule, [](std::int64_t) { return 0; }, report);
}

template <class T>
VerifyResult verify(const std::vector<T>& got, const std::vector<T>& ref, const Rule& rule = default_rule<T>()) {
  if (got.size() != ref.size()) {
    VerifyResult r;
    r.checked = static_cast<std::int64_t>(ref.size());
    r.add(-1, "size " + std::to_string(got.size()), "size " + std::to_string(ref.size()));
    return r;
  }
  return verify_with(got.data(), static_cast<std::int64_t>(ref.size()), [&](std::int64_t i) { return ref[i]; }, rule);
}

}  // namespace tut
