// Mean and variance in float32 on the host, four ways, with the kernels' own arithmetic (the same
// merge, the same fused multiply-adds), for the CPU tests and the lesson's table
// (tools/welford_demo.cu, results/welford_float32.txt):
//
//   naive       one pass, sum and sum of squares: var = sum(x^2) / n - mean^2. Cancels: for
//               x = 1000 +- 3, sum(x^2) / n and mean^2 are both about 10^6 and agree in all but
//               their last few bits, which is where the variance (3) was.
//   two_pass    the mean, then sum((x - mean)^2) / n: v0's kernels. Accurate, two reads of x.
//   welford     one value at a time: n += 1; d = x - mean; mean += d / n; M2 += d * (x - mean).
//   welford_gpu `threads` interleaved Welford streams (thread t takes values t, t + threads, ...),
//               merged pairwise in a tree (Chan): how v1's block (512 threads) reduces a channel,
//               and v2's and v3's blocks their shares.
//   two_pass_gpu the same arrangement of float sums, for v0's two passes.
// One float chain over all the values (welford, two_pass) is what a single thread would do; its
// rounding errors grow with the chain's length, and a GPU never runs one that long.
#pragma once

#include "kernels/common.cuh"
#include "tut/random.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace ch05 {

struct FloatMoments {
  float mean, var;
};

inline FloatMoments naive_float(const std::vector<float>& x) {
  float s = 0, q = 0;
  for (float v : x) {
    s += v;
    q = std::fma(v, v, q);
  }
  const float n = static_cast<float>(x.size()), mean = s / n;
  return {mean, q / n - mean * mean};
}

inline FloatMoments two_pass_float(const std::vector<float>& x) {
  float s = 0;
  for (float v : x) s += v;
  const float n = static_cast<float>(x.size()), mean = s / n;
  float q = 0;
  for (float v : x) q = std::fma(v - mean, v - mean, q);
  return {mean, q / n};
}

// The kernels' update (kernels/layout.cuh, WelfordStreams::add): one reciprocal per count.
inline void welford_add(Welford& w, float v) {
  w.n += 1.0f;
  const float r = 1.0f / w.n;
  const float d = v - w.mean;
  w.mean = std::fma(d, r, w.mean);
  w.m2 = std::fma(d, v - w.mean, w.m2);
}

inline FloatMoments welford_float(const std::vector<float>& x) {
  Welford w{};
  for (float v : x) welford_add(w, v);
  return {w.mean, w.m2 / w.n};
}

inline FloatMoments welford_gpu_float(const std::vector<float>& x, int threads) {
  std::vector<Welford> t(static_cast<std::size_t>(threads), Welford{});
  for (std::size_t i = 0; i < x.size(); ++i) welford_add(t[i % t.size()], x[i]);
  for (std::size_t half = 1; half < t.size(); half *= 2)  // a tree, as the shuffles and shared memory merge
    for (std::size_t i = 0; i + half < t.size(); i += 2 * half) t[i] = merge(t[i], t[i + half]);
  return {t[0].mean, t[0].m2 / t[0].n};
}

inline FloatMoments two_pass_gpu_float(const std::vector<float>& x, int threads) {
  const auto tree_sum = [&](auto term) {
    std::vector<float> t(static_cast<std::size_t>(threads), 0.0f);
    for (std::size_t i = 0; i < x.size(); ++i) t[i % t.size()] += term(x[i]);
    for (std::size_t half = 1; half < t.size(); half *= 2)
      for (std::size_t i = 0; i + half < t.size(); i += 2 * half) t[i] += t[i + half];
    return t[0];
  };
  const float n = static_cast<float>(x.size());
  const float mean = tree_sum([](float v) { return v; }) / n;
  return {mean, tree_sum([&](float v) { return (v - mean) * (v - mean); }) / n};
}

// The values one channel of a case holds: uniform in [shift - 3, shift + 3), as the instances draw x.
inline std::vector<float> channel_values(std::int64_t n, double shift, std::uint64_t seed) {
  const tut::Random rng(seed);
  const tut::InputSpec spec = tut::InputSpec::uniform(shift - 3, shift + 3);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    x[static_cast<std::size_t>(i)] = rng.value<float>(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(n), spec);
  return x;
}

inline double exact_mean(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += v;
  return s / static_cast<double>(x.size());
}
inline double exact_var(const std::vector<float>& x) {
  const double m = exact_mean(x);
  double q = 0;
  for (float v : x) q += (v - m) * (v - m);
  return q / static_cast<double>(x.size());
}

}  // namespace ch05
