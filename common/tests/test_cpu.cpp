// Host-only tests of common: verification, inputs, statistics, naming.
#include <doctest/doctest.h>

#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/random.hpp"
#include "tut/timing.hpp"
#include "tut/verify.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

TEST_CASE("verify: tolerance is atol + rtol*|ref|") {
  const tut::Tolerance tol{1e-3, 1e-2};
  CHECK(tut::element_matches(100.5f, 100.0f, tol));   // 0.5 <= 0.001 + 1.0
  CHECK(!tut::element_matches(102.0f, 100.0f, tol));  // 2 > 1.001
  CHECK(tut::element_matches(0.0009f, 0.0f, tol));
  CHECK(!tut::element_matches(0.0011f, 0.0f, tol));
  CHECK(tut::element_matches(-0.0f, 0.0f, tut::kExact));
  CHECK(!tut::element_matches(1.0f, std::nextafter(1.0f, 2.0f), tut::kExact));
}

TEST_CASE("verify: NaN and infinity must match the reference exactly") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const tut::Tolerance loose{1e30, 1e30};
  CHECK(tut::element_matches(nan, nan, loose));
  CHECK(!tut::element_matches(nan, 1.0f, loose));  // a NaN where the reference has none fails
  CHECK(!tut::element_matches(1.0f, nan, loose));  // and a missing NaN fails
  CHECK(tut::element_matches(inf, inf, loose));
  CHECK(!tut::element_matches(-inf, inf, loose));
  CHECK(!tut::element_matches(1e30f, inf, loose));
}

TEST_CASE("verify: integers compare exactly, half through float") {
  CHECK(tut::element_matches<std::int32_t>(7, 7, tut::Tolerance{10, 10}));
  CHECK(!tut::element_matches<std::int32_t>(7, 8, tut::Tolerance{10, 10}));
  CHECK(tut::element_matches(__float2half(1.0f), __float2half(1.0f), tut::kExact));
  CHECK(!tut::element_matches(__float2half(1.0f), __float2half(1.0009765625f), tut::kExact));
}

TEST_CASE("verify reports the count and the first mismatches with index, got and expected") {
  std::vector<float> ref(100, 1.0f), got(ref);
  got[3] = 2.0f;
  got[50] = std::nanf("");
  got[99] = -1.0f;
  const auto r = tut::verify(got, ref, tut::kExact);
  CHECK(!r.ok());
  CHECK(r.mismatches == 3);
  REQUIRE(r.first.size() == 3);
  CHECK(r.first[0].index == 3);
  CHECK(r.first[0].got == "2");
  CHECK(r.first[0].expected == "1");
  CHECK(r.first[1].index == 50);
  CHECK(r.summary().find("[99] got -1, expected 1") != std::string::npos);
  CHECK(!tut::verify(std::vector<float>(3), std::vector<float>(4)).ok());
  CHECK(tut::verify(ref, ref).ok());
}

TEST_CASE("random inputs are a pure function of seed and index") {
  const tut::Random a(42), b(42), c(43);
  CHECK(a.bits(1000) == b.bits(1000));
  CHECK(a.bits(1000) != c.bits(1000));
  CHECK(a.bits(1) != a.bits(2));
  const auto v = a.vector<float>(10000, -2.0, 3.0);
  double lo = 1e9, hi = -1e9, sum = 0;
  for (float x : v) lo = std::min<double>(lo, x), hi = std::max<double>(hi, x), sum += x;
  CHECK(lo >= -2.0);
  CHECK(hi < 3.0);
  CHECK(sum / v.size() == doctest::Approx(0.5).epsilon(0.05));
}

TEST_CASE("sprinkle_specials puts every special value in, at both ends too") {
  std::vector<float> v(1000, 0.5f);
  tut::sprinkle_specials(v, tut::Random(7));
  CHECK(std::isnan(v[4]));
  CHECK(std::isinf(v[2]));
  CHECK(std::signbit(v[1]));
  int nans = 0, infs = 0, interior = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    nans += std::isnan(v[i]);
    infs += std::isinf(v[i]);
    if (i >= 7 && i < v.size() - 7 && v[i] != 0.5f) ++interior;
  }
  CHECK(nans >= 2);
  CHECK(infs >= 4);
  CHECK(interior > 3);
  std::vector<float> tiny(1, 0.5f);
  tut::sprinkle_specials(tiny, tut::Random(7));
  CHECK(tiny[0] != 0.5f);
}

TEST_CASE("summarize gives median, min and max") {
  const auto s = tut::summarize({5, 1, 3, 2, 4});
  CHECK(s.median == 3);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(tut::summarize({4, 1, 3, 2}).median == 2.5);
  CHECK_THROWS(tut::summarize({}));
}

TEST_CASE("L2 is flushed only when the working set could fit in it") {
  const std::size_t l2 = 50u << 20;
  CHECK(tut::l2_flush_bytes(10u << 20, l2) == 2 * l2);
  CHECK(tut::l2_flush_bytes(4 * l2 - 1, l2) == 2 * l2);
  CHECK(tut::l2_flush_bytes(4 * l2, l2) == 0);
}

TEST_CASE("GPU names become file names") {
  CHECK(tut::gpu_slug("NVIDIA H100 80GB HBM3") == "NVIDIA_H100_80GB_HBM3");
  CHECK(tut::gpu_slug("  A/B (x) ") == "A_B_x");
  CHECK(tut::gpu_slug("") == "unknown_gpu");
}

TEST_CASE("a CUDA error names the call, the place and the reason") {
  const std::string m = tut::describe_cuda_error(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "x.cu", 12);
  CHECK(m.find("cudaMalloc(&p, n)") != std::string::npos);
  CHECK(m.find("x.cu:12") != std::string::npos);
  CHECK(m.find("cudaErrorMemoryAllocation") != std::string::npos);
  CHECK_THROWS_AS(tut::check_cuda(cudaErrorInvalidValue, "f()", "y.cu", 3), tut::CudaError);
  CHECK_NOTHROW(tut::check_cuda(cudaSuccess, "f()", "y.cu", 3));
}
