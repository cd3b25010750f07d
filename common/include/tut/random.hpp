// Reproducible inputs: every element is a pure function of (seed, index), computed the same way
// on the host and on the device. A device kernel fills a multi-gigabyte input at memory speed,
// and the CPU reference regenerates any element it needs without a host copy of the input.
// A failure reproduces from the printed seed alone: set TUT_SEED to rerun with the same data.
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__CUDACC__)
#define TUT_HD __host__ __device__
#else
#define TUT_HD
#endif

namespace tut {

TUT_HD inline constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// How an input is drawn.
//   floating types: uniform in [lo, hi), rounded to the type; with `specials`, about one element
//                   in 61 (and the first and last seven) is one of ±0, ±inf, NaN, ±1. With
//                   `whole`, a whole number uniform in [lo, hi] instead: sums of a few million
//                   of them are exact in float, so a float scan can be compared exactly.
//   integer types:  uniform in [lo, hi], both ends included; with `any_bits`, any bit pattern.
struct InputSpec {
  double lo = -4.0, hi = 4.0;
  bool specials = false;
  bool any_bits = false;
  bool whole = false;

  static constexpr InputSpec uniform(double lo, double hi) { return {lo, hi, false, false, false}; }
  static constexpr InputSpec bits() { return {0, 0, false, true, false}; }
  static constexpr InputSpec whole_numbers(double lo, double hi) { return {lo, hi, false, false, true}; }
  constexpr InputSpec with_specials(bool on = true) const { return {lo, hi, on, any_bits, whole}; }
};

inline constexpr int kSpecialCount = 7;

template <class T>
TUT_HD T from_float(float f) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(f);
  else return static_cast<T>(f);
}

// The special floating-point values a test input carries: ±0, ±inf, NaN, ±1.
template <class T>
TUT_HD T special_value(int k) {
  const float inf = INFINITY;
  switch (k) {
    case 0: return from_float<T>(0.0f);
    case 1: return from_float<T>(-0.0f);
    case 2: return from_float<T>(inf);
    case 3: return from_float<T>(-inf);
    case 4: return from_float<T>(NAN);
    case 5: return from_float<T>(-1.0f);
    default: return from_float<T>(1.0f);
  }
}

class Random {
 public:
  TUT_HD explicit Random(std::uint64_t seed) : seed_(seed) {}
  TUT_HD std::uint64_t seed() const { return seed_; }

  // The i-th output of the SplitMix64 generator started at the seed: one mixing per element.
  TUT_HD std::uint64_t bits(std::uint64_t i) const { return splitmix64(seed_ + i * 0x9E3779B97F4A7C15ull); }
  // Uniform in [0, 1) with 24 random bits.
  TUT_HD double unit(std::uint64_t i) const { return static_cast<double>(bits(i) >> 40) * 0x1.0p-24; }

  // Where special values go in an n-element input: the first and last seven elements, and about
  // one in 61 elsewhere, at positions chosen from the seed (the low bits of element i's random
  // bits; a value uses the top 24). Returns the index of the special value (0..6), or -1 for
  // "keep the random value".
  TUT_HD int special_slot(std::uint64_t i, std::uint64_t n) const {
    const std::uint64_t k = kSpecialCount;
    if (i < k) return static_cast<int>(i);
    if (i + k >= n) return static_cast<int>((n - 1 - i + 3) % k);
    const std::uint64_t b = bits(i);
    return (b & 0xFFFFFFFFull) % 61 == 0 ? static_cast<int>((b >> 32) % k) : -1;
  }

  // Element i of an n-element input drawn by `spec`.
  template <class T>
  TUT_HD T value(std::uint64_t i, std::uint64_t n, const InputSpec& spec) const {
    if constexpr (std::is_integral_v<T>) {
      if (spec.any_bits) return static_cast<T>(bits(i));
      return static_cast<T>(whole(i, spec));
    } else {
      if (spec.specials) {
        const int s = special_slot(i, n);
        if (s >= 0) return special_value<T>(s);
      }
      if (spec.whole) return from_float<T>(static_cast<float>(whole(i, spec)));
      const double v = spec.lo + (spec.hi - spec.lo) * unit(i);
      if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(v));
      else return static_cast<T>(v);
    }
  }

  // A whole number uniform in [lo, hi], both ends included.
  TUT_HD std::int64_t whole(std::uint64_t i, const InputSpec& spec) const {
    const std::int64_t lo = static_cast<std::int64_t>(spec.lo), hi = static_cast<std::int64_t>(spec.hi);
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(bits(i) % span);
  }

 private:
  std::uint64_t seed_;
};

// The seed for tests and benchmarks: TUT_SEED from the environment, else a fixed default. Throws
// std::invalid_argument when TUT_SEED is not a non-negative integer.
std::uint64_t test_seed();

// Parses a seed ("1234", "0x4d2"). Throws std::invalid_argument naming the text.
std::uint64_t parse_seed(const char* text);

}  // namespace tut
