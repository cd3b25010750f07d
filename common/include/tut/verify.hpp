// Comparison of a kernel's output with the CPU reference.
//
// Floating point: |got - ref| <= atol + rtol * |ref|, with atol and rtol chosen per type or per
// problem. Integers: exact. A NaN passes only where the reference has a NaN, and an infinity
// only where the reference has the same infinity. The first few mismatches are reported with
// index, got and expected.
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tut {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

inline constexpr Tolerance kExact{0, 0};

template <class T>
Tolerance default_tolerance() {
  if constexpr (std::is_same_v<T, __half>) return {1e-3, 1e-3};  // ~2 ulp of half at 1
  else if constexpr (std::is_same_v<T, float>) return {1e-6, 1e-5};
  else if constexpr (std::is_same_v<T, double>) return {1e-12, 1e-10};
  else return kExact;
}

struct Mismatch {
  std::int64_t index;
  std::string got, expected;
};

struct VerifyResult {
  std::int64_t checked = 0;
  std::int64_t mismatches = 0;
  std::vector<Mismatch> first;  // the first few, in index order
  bool ok() const { return mismatches == 0; }
  std::string summary() const {
    std::ostringstream s;
    if (ok()) {
      s << "all " << checked << " elements match";
      return s.str();
    }
    s << mismatches << " of " << checked << " elements differ";
    for (const auto& m : first) s << "; [" << m.index << "] got " << m.got << ", expected " << m.expected;
    return s.str();
  }
  // Merges another result whose indices were offset by `base` (for checks done in chunks).
  void merge(const VerifyResult& o, std::int64_t base, std::size_t keep = 5) {
    checked += o.checked;
    mismatches += o.mismatches;
    for (const auto& m : o.first)
      if (first.size() < keep) first.push_back({m.index + base, m.got, m.expected});
  }
};

namespace detail {
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<double>(__half2float(v));
  else return static_cast<double>(v);
}
template <class T>
std::string show(T v) {
  std::ostringstream s;
  if constexpr (std::is_integral_v<T>) s << +v;
  else s.precision(9), s << as_double(v);
  return s.str();
}
}  // namespace detail

// One element: does `got` match `ref` under `tol`?
template <class T>
bool element_matches(T got, T ref, Tolerance tol) {
  if constexpr (std::is_integral_v<T>) {
    return got == ref;
  } else {
    const double g = detail::as_double(got), r = detail::as_double(ref);
    if (std::isnan(r) || std::isnan(g)) return std::isnan(r) && std::isnan(g);
    if (g == r) return true;  // equal values, equal infinities, +0 and -0
    if (std::isinf(r) || std::isinf(g)) return false;
    return std::fabs(g - r) <= tol.atol + tol.rtol * std::fabs(r);
  }
}

// Compares n elements; `ref_at(i)` gives the expected value at i, so a reference can be computed
// on the fly for inputs too large to hold twice.
template <class T, class RefAt>
VerifyResult verify_with(const T* got, std::int64_t n, RefAt&& ref_at, Tolerance tol,
                         std::size_t report = 5) {
  VerifyResult r;
  r.checked = n;
  for (std::int64_t i = 0; i < n; ++i) {
    const T ref = ref_at(i);
    if (!element_matches(got[i], ref, tol)) {
      if (r.first.size() < report) r.first.push_back({i, detail::show(got[i]), detail::show(ref)});
      ++r.mismatches;
    }
  }
  return r;
}

template <class T>
VerifyResult verify(const T* got, const T* ref, std::int64_t n, Tolerance tol = default_tolerance<T>(),
                    std::size_t report = 5) {
  return verify_with(got, n, [ref](std::int64_t i) { return ref[i]; }, tol, report);
}

template <class T>
VerifyResult verify(const std::vector<T>& got, const std::vector<T>& ref,
                    Tolerance tol = default_tolerance<T>()) {
  if (got.size() != ref.size()) {
    VerifyResult r;
    r.checked = static_cast<std::int64_t>(ref.size());
    r.mismatches = r.checked ? r.checked : 1;
    r.first.push_back({-1, "size " + std::to_string(got.size()), "size " + std::to_string(ref.size())});
    return r;
  }
  return verify(got.data(), ref.data(), static_cast<std::int64_t>(ref.size()), tol);
}

}  // namespace tut
