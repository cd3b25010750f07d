// CPU reference for chapter 05, in double precision, and the tolerances every float kernel is
// judged with. Plain C++ on the host (the half type comes from cuda_fp16.h).
//
// Training forward, per channel c over its M = N * H * W values (PyTorch's BatchNorm2d in training
// mode, then ReLU):
//   mean     = sum(x) / M
//   var      = sum((x - mean)^2) / M                     (biased: what normalizes)
//   invstd   = 1 / sqrt(var + eps)                       (saved for the backward, with mean)
//   running_mean <- (1 - momentum) * running_mean + momentum * mean
//   running_var  <- (1 - momentum) * running_var  + momentum * var * M / (M - 1)   (unbiased)
//   s = gamma * (x - mean) * invstd + beta [+ r],  y = relu(s),  mask bit = !(s <= 0)
// For half, s is rounded to half before the ReLU and the mask bit: y and the bit agree exactly.
//
// Training backward, with the saved mean and invstd, x^ = (x - mean) * invstd, g = bit ? dy : 0:
//   dbeta  = sum(g),  dgamma = sum(g * x^)
//   dx     = gamma * invstd * (g - dbeta / M - x^ * dgamma / M),   dr = g (the Add form)
//
// Inference: y = relu(gamma * (x - running_mean) / sqrt(running_var + eps) + beta).
#pragma once

#include "bn_shape.hpp"
#include "tut/parallel.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace ch05 {

inline double as_double(float v) { return v; }
inline double as_double(__half v) { return static_cast<double>(__half2float(v)); }

// ---- Tolerances ---------------------------------------------------------------------------------
//
// The kernels accumulate in float32: Welford streams of up to a few thousand values per thread,
// merged pairwise. A float sum's rounding errors are random in sign, so they grow like the square
// root of the chain: about sqrt(2000) * 2^-24 = 3e-6 of the sum's magnitude here. The bounds below
// leave a factor of three to ten over that (test_cpu.cu runs the kernels' own float arithmetic on
// the host and checks it), and are still far below what a wrong formula gives: the naive
// sum-of-squares variance is off by tens of percent at mean 1000, and a missing or doubled term is
// off by the term.
inline constexpr double kU = 0x1p-24;         // float32's unit roundoff
inline constexpr double kMeanTol = 1e-5;      // saved mean: relative to |mean| + std
inline constexpr double kVarTol = 3e-5;       // variance (running_var): relative
inline constexpr double kInvstdTol = 2e-5;    // saved invstd: relative (half the variance's, plus roundings)
inline constexpr double kSumTol = 4e-6;       // dgamma, dbeta: relative to the sum of the terms' magnitudes

// The rounding of an output of type T: half rounds to 11 significant bits (and 2^-24 steps below
// 2^-14); float's own rounding is inside the 4 * kU terms.
template <class T>
constexpr double out_rel() {
  return std::is_same_v<T, __half> ? 0x1p-11 : 0.0;
}
template <class T>
constexpr double out_abs() {
  return std::is_same_v<T, __half> ? 0x1p-24 : 1e-30;
}

// "ref ± tol" for a mismatch message, or "" when got is within tol of ref.
inline std::string within(double got, double ref, double tol) {
  if (!std::isnan(got) && std::fabs(got - ref) <= tol) return "";
  std::ostringstream s;
  s.precision(9);
  s << ref << " ± " << tol;
  return s.str();
}

// ---- Walking the tensor on the host ------------------------------------------------------------

// f(e, c) for each element e in [begin, end) with its channel c, without a division per element.
template <class F>
void for_each_in(const Shape4& s, std::int64_t begin, std::int64_t end, F&& f) {
  const std::int64_t inner = s.inner();
  std::int64_t run = begin / inner, pos = begin - run * inner, c = run % s.C;
  for (std::int64_t e = begin; e < end; ++e) {
    f(e, c);
    if (++pos == inner) {
      pos = 0;
      if (++c == s.C) c = 0;
    }
  }
}

// Per channel, the sums over its elements of the K values term(e, c) returns (a std::array of
// K doubles), on every core.
template <std::size_t K, class Term>
std::vector<std::array<double, K>> channel_sums(const Shape4& s, Term&& term) {
  using Acc = std::vector<std::array<double, K>>;
  const int most = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Acc> parts(static_cast<std::size_t>(most), Acc(static_cast<std::size_t>(s.C), std::array<double, K>{}));
  const int used = tut::parallel_chunks(s.numel(), [&](int k, std::int64_t b, std::int64_t e) {
    Acc& mine = parts[static_cast<std::size_t>(k)];
    for_each_in(s, b, e, [&](std::int64_t i, std::int64_t c) {
      const std::array<double, K> t = term(i, c);
      for (std::size_t q = 0; q < K; ++q) mine[static_cast<std::size_t>(c)][q] += t[q];
    });
  });
  Acc out(static_cast<std::size_t>(s.C), std::array<double, K>{});
  for (int k = 0; k < used; ++k)
    for (std::size_t c = 0; c < out.size(); ++c)
      for (std::size_t q = 0; q < K; ++q) out[c][q] += parts[static_cast<std::size_t>(k)][c][q];
  return out;
}

// Mean and biased variance per channel, two passes in double.
struct ChannelStats {
  std::vector<double> mean, var;
};
template <class XAt>
ChannelStats channel_stats(const Shape4& s, XAt&& x_at) {
  ChannelStats out;
  const double M = static_cast<double>(s.per_channel());
  for (const auto& t : channel_sums<1>(s, [&](std::int64_t e, std::int64_t) { return std::array<double, 1>{x_at(e)}; }))
    out.mean.push_back(t[0] / M);
  const auto sq = channel_sums<1>(s, [&](std::int64_t e, std::int64_t c) {
    const double d = x_at(e) - out.mean[static_cast<std::size_t>(c)];
    return std::array<double, 1>{d * d};
  });
  for (const auto& t : sq) out.var.push_back(t[0] / M);
  return out;
}

// ---- Shape checks (the problems' case_for) -----------------------------------------------------

// The first thing wrong with a BN case, or "" when it is valid. Training needs more than one value
// per channel (PyTorch: "Expected more than 1 value per channel when training").
inline std::string bn_case_error(const std::vector<std::int64_t>& shape, double eps, double momentum, bool training) {
  static const char* names[] = {"N", "C", "H", "W"};
  if (shape.size() != 4) return "a BN input has 4 dimensions, N x C x H x W; got " + std::to_string(shape.size());
  for (int k = 0; k < 4; ++k)
    if (shape[static_cast<std::size_t>(k)] < 1)
      return std::string("dimension ") + names[k] + " is " + std::to_string(shape[static_cast<std::size_t>(k)]) +
             ": every dimension must be at least 1";
  if (training && shape[0] * shape[2] * shape[3] < 2) {
    std::ostringstream s;
    s << "expected more than 1 value per channel when training, got input size [" << shape[0] << ", " << shape[1]
      << ", " << shape[2] << ", " << shape[3] << "] (N * H * W = 1)";
    return s.str();
  }
  if (!(eps > 0)) return "eps must be positive, got " + std::to_string(eps);
  if (!(momentum >= 0 && momentum <= 1)) return "momentum must be in [0, 1], got " + std::to_string(momentum);
  if (shape[1] > (std::int64_t{1} << 30)) return "more than 2^30 channels";
  const double n = static_cast<double>(shape[0]) * shape[1] * shape[2] * shape[3];
  if (n >= 0x1p50) return "more than 2^50 elements";
  return "";
}

}  // namespace ch05
