// Reproducible inputs. Every value is a pure function of (seed, index), so any element of a
// multi-gigabyte input can be regenerated without storing it, and a failure reproduces from the
// printed seed alone: set TUT_SEED to rerun with the same data.
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace tut {

inline constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Random {
 public:
  explicit Random(std::uint64_t seed) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }

  std::uint64_t bits(std::uint64_t i) const { return splitmix64(seed_ ^ splitmix64(i)); }
  // Uniform in [0, 1) with 24 random bits.
  double unit(std::uint64_t i) const { return static_cast<double>(bits(i) >> 40) * 0x1.0p-24; }
  double uniform(std::uint64_t i, double lo, double hi) const { return lo + (hi - lo) * unit(i); }

  // A value of type T at index i: uniform in [lo, hi) for floating types (rounded to T),
  // any bit pattern for integers.
  template <class T>
  T value(std::uint64_t i, double lo = -1.0, double hi = 1.0) const {
    if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(uniform(i, lo, hi)));
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(uniform(i, lo, hi));
    else return static_cast<T>(bits(i));
  }

  template <class T>
  std::vector<T> vector(std::size_t n, double lo = -1.0, double hi = 1.0) const {
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = value<T>(i, lo, hi);
    return v;
  }

 private:
  std::uint64_t seed_;
};

// The special floating-point values every element-wise test should see.
template <class T>
std::vector<T> special_values() {
  auto h = [](float f) {
    if constexpr (std::is_same_v<T, __half>) return __float2half_rn(f);
    else return static_cast<T>(f);
  };
  const float inf = std::numeric_limits<float>::infinity();
  return {h(0.0f), h(-0.0f), h(inf), h(-inf), h(std::nanf("")), h(-1.0f), h(1.0f)};
}

// Where the special values (±0, ±inf, NaN, ±1) go in an n-element input: the first and last
// seven elements, and about one in `every` elsewhere, at positions chosen from the seed. A pure
// function of the index, so a parallel fill can place them. Returns the index into
// special_values<T>(), or -1 for "keep the random value".
inline int special_slot(std::uint64_t i, std::uint64_t n, const Random& rng, int count = 7, std::uint64_t every = 61) {
  const std::uint64_t k = static_cast<std::uint64_t>(count);
  if (i < k) return static_cast<int>(i);
  if (i + k >= n) return static_cast<int>((n - 1 - i + 3) % k);
  const std::uint64_t b = rng.bits(i ^ 0xA5A5A5A5ull);
  return b % every == 0 ? static_cast<int>((b >> 32) % k) : -1;
}

// Overwrites the elements special_slot() picks with the special values.
template <class T>
void sprinkle_specials(std::vector<T>& v, const Random& rng) {
  const auto specials = special_values<T>();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (const int s = special_slot(i, v.size(), rng, static_cast<int>(specials.size())); s >= 0) v[i] = specials[s];
}

// The seed for tests: TUT_SEED from the environment, else a fixed default. Printed by the
// test runner so a failure can be replayed.
std::uint64_t test_seed();

}  // namespace tut
