// Host-only tests of common: verification, inputs, shapes and parameters, statistics, naming, and
// the bitmask writer's arithmetic.
#include <doctest/doctest.h>

#include "tut/bitmask.cuh"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/problem.hpp"
#include "tut/random.hpp"
#include "tut/timing.hpp"
#include "tut/verify.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

TEST_CASE("verify: tolerance is atol + rtol*|ref|, and can grow with the number of terms") {
  const tut::Rule tol = tut::Rule::tolerance(1e-3, 1e-2);
  CHECK(tut::element_matches(100.5f, 100.0f, tol));   // 0.5 <= 0.001 + 1.0
  CHECK(!tut::element_matches(102.0f, 100.0f, tol));  // 2 > 1.001
  CHECK(tut::element_matches(0.0009f, 0.0f, tol));
  CHECK(!tut::element_matches(0.0011f, 0.0f, tol));
  const tut::Rule grow = tut::Rule::growing(0, 0, 1e-3);
  CHECK(!tut::element_matches(1.01f, 1.0f, grow, 1));   // 0.01 > 1e-3 * 1
  CHECK(tut::element_matches(1.01f, 1.0f, grow, 100));  // 0.01 <= 1e-3 * 100
}

TEST_CASE("verify: exact compares values, bitwise compares bytes") {
  CHECK(tut::element_matches(-0.0f, 0.0f, tut::Rule::exact()));
  CHECK(!tut::element_matches(-0.0f, 0.0f, tut::Rule::bitwise()));
  CHECK(!tut::element_matches(1.0f, std::nextafter(1.0f, 2.0f), tut::Rule::exact()));
  CHECK(tut::element_matches(std::nanf(""), std::nanf(""), tut::Rule::exact()));
  CHECK(tut::element_matches(std::nanf(""), std::nanf(""), tut::Rule::bitwise()));
  CHECK(!tut::element_matches(std::nanf(""), -std::nanf(""), tut::Rule::bitwise()));  // another NaN
  CHECK(tut::element_matches<std::uint32_t>(0x80000001u, 0x80000001u, tut::Rule::bitwise()));
  CHECK(!tut::element_matches<std::uint32_t>(0x80000001u, 0x00000001u, tut::Rule::bitwise()));
}

TEST_CASE("verify: NaN and infinity must match the reference exactly") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const tut::Rule loose = tut::Rule::tolerance(1e30, 1e30);
  CHECK(tut::element_matches(nan, nan, loose));
  CHECK(!tut::element_matches(nan, 1.0f, loose));  // a NaN where the reference has none fails
  CHECK(!tut::element_matches(1.0f, nan, loose));  // and a missing NaN fails
  CHECK(tut::element_matches(inf, inf, loose));
  CHECK(!tut::element_matches(-inf, inf, loose));
  CHECK(!tut::element_matches(1e30f, inf, loose));
}

TEST_CASE("verify: integers compare exactly, half through float") {
  CHECK(tut::element_matches<std::int32_t>(7, 7, tut::Rule::tolerance(10, 10)));
  CHECK(!tut::element_matches<std::int32_t>(7, 8, tut::Rule::tolerance(10, 10)));
  CHECK(tut::element_matches(__float2half(1.0f), __float2half(1.0f), tut::Rule::exact()));
  CHECK(!tut::element_matches(__float2half(1.0f), __float2half(1.0009765625f), tut::Rule::exact()));
}

TEST_CASE("verify reports the count and the first mismatches with index, got and expected") {
  std::vector<float> ref(100, 1.0f), got(ref);
  got[3] = 2.0f;
  got[50] = std::nanf("");
  got[99] = -1.0f;
  const auto r = tut::verify(got, ref, tut::Rule::exact());
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

TEST_CASE("a check result names the output that failed") {
  tut::CheckResult r;
  std::vector<std::uint32_t> mask(4, 0);
  auto bad = mask;
  bad[2] = 1;
  r.add("y", tut::verify(std::vector<float>(8, 1.0f), std::vector<float>(8, 1.0f)));
  r.add("mask", tut::verify(bad, mask, tut::Rule::bitwise()));
  CHECK(!r.ok());
  CHECK(r["y"].ok());
  CHECK(r["mask"].mismatches == 1);
  CHECK(r.summary().find("mask: 1 of 4 elements differ; [2] got 1") != std::string::npos);
  CHECK(r.summary().find("y: all 8 elements match") != std::string::npos);
  CHECK_THROWS_AS(r["dx"], std::out_of_range);
}

TEST_CASE("random inputs are a pure function of seed and index, and honour their ranges") {
  const tut::Random a(42), b(42), c(43);
  CHECK(a.bits(1000) == b.bits(1000));
  CHECK(a.bits(1000) != c.bits(1000));
  CHECK(a.bits(1) != a.bits(2));
  const auto spec = tut::InputSpec::uniform(-2.0, 3.0);
  double lo = 1e9, hi = -1e9, sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const float x = a.value<float>(i, 10000, spec);
    lo = std::min<double>(lo, x), hi = std::max<double>(hi, x), sum += x;
  }
  CHECK(lo >= -2.0);
  CHECK(hi < 3.0);
  CHECK(sum / 10000 == doctest::Approx(0.5).epsilon(0.05));
  // Integers: both ends of [lo, hi] are drawn, nothing outside.
  const auto small = tut::InputSpec::uniform(-3, 3);
  int seen_lo = 0, seen_hi = 0, outside = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::int32_t v = a.value<std::int32_t>(i, 10000, small);
    seen_lo += v == -3;
    seen_hi += v == 3;
    outside += v < -3 || v > 3;
  }
  CHECK(seen_lo > 0);
  CHECK(seen_hi > 0);
  CHECK(outside == 0);
  // Whole-number floats: the same integers as the int32 draw, so a float sum of them is exact.
  const auto whole = tut::InputSpec::whole_numbers(-3, 3);
  for (int i = 0; i < 1000; ++i) {
    const float f = a.value<float>(i, 1000, whole);
    REQUIRE(f == static_cast<float>(a.value<std::int32_t>(i, 1000, whole)));
    CHECK(f == std::trunc(f));
    CHECK(std::fabs(f) <= 3.0f);
  }
}

TEST_CASE("special values: every one of them, at both ends and inside, for floats only") {
  const tut::Random rng(7);
  const auto spec = tut::InputSpec::uniform(0.25, 0.75).with_specials();
  const std::int64_t n = 1000;
  int nans = 0, infs = 0, negzero = 0, interior = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = rng.value<float>(i, n, spec);
    nans += std::isnan(v);
    infs += std::isinf(v);
    negzero += v == 0 && std::signbit(v);
    if (i >= 7 && i < n - 7 && !(v >= 0.25f && v < 0.75f)) ++interior;
  }
  CHECK(std::isnan(rng.value<float>(4, n, spec)));
  CHECK(std::isinf(rng.value<float>(2, n, spec)));
  CHECK(nans >= 2);
  CHECK(infs >= 4);
  CHECK(negzero >= 2);
  CHECK(interior > 3);
  CHECK(std::isnan(__half2float(rng.value<__half>(4, n, spec))));
  // Without specials, every value is in range; integers never carry specials.
  for (std::int64_t i = 0; i < n; ++i) CHECK_FALSE(std::isnan(rng.value<float>(i, n, tut::InputSpec::uniform(0, 1))));
  CHECK(rng.value<std::int32_t>(4, n, tut::InputSpec::uniform(5, 5).with_specials()) == 5);
}

TEST_CASE("seeds: TUT_SEED and --seed take a non-negative integer, and say so otherwise") {
  CHECK(tut::parse_seed("1234") == 1234);
  CHECK(tut::parse_seed("0x10") == 16);
  CHECK_THROWS_WITH_AS(tut::parse_seed("abc"), "seed 'abc' is not a non-negative integer", std::invalid_argument);
  CHECK_THROWS_AS(tut::parse_seed("-1"), std::invalid_argument);
  CHECK_THROWS_AS(tut::parse_seed("12x"), std::invalid_argument);
  CHECK_THROWS_AS(tut::parse_seed("99999999999999999999999"), std::invalid_argument);
  CHECK_THROWS_AS(tut::parse_seed(""), std::invalid_argument);
}

TEST_CASE("shapes parse from 1000, 2^28 and 2x64x16, and bad text says what is wrong") {
  CHECK(tut::parse_shape("1000") == std::vector<std::int64_t>{1000});
  CHECK(tut::parse_shape("2^28") == std::vector<std::int64_t>{std::int64_t{1} << 28});
  CHECK(tut::parse_shape("2x64x16x56x56") == std::vector<std::int64_t>{2, 64, 16, 56, 56});
  CHECK_THROWS_WITH_AS(tut::parse_shape("abc"), "shape 'abc': 'abc' is not a whole number (write digits, or 2^k)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(tut::parse_shape("-5"), "shape '-5': '-5' is negative; a dimension counts elements",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(tut::parse_shape("0x10"), doctest::Contains("hexadecimal"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(tut::parse_shape("1e99"), doctest::Contains("not a whole number"), std::invalid_argument);
  CHECK_THROWS_AS(tut::parse_shape("2x"), std::invalid_argument);
  CHECK_THROWS_AS(tut::parse_shape("-5"), std::invalid_argument);
  CHECK_THROWS_AS(tut::parse_shape("2^99"), std::invalid_argument);
  const tut::Case c{"c", {2, 3, 4}, {}};
  CHECK(c.numel() == 24);
  CHECK(c.shape_text() == "2x3x4");
  CHECK(tut::flat_case(7).name == "n=7");
}

TEST_CASE("case parameters keep their order and types") {
  tut::Params p;
  p.set("kernel", std::vector<std::int64_t>{3, 3, 3}).set("layout", std::string("NCHW")).set("eps", 1e-5);
  p.set("layout", std::string("NHWC"));
  REQUIRE(p.items().size() == 3);
  CHECK(p.items()[1].first == "layout");
  CHECK(p.get<std::string>("layout") == "NHWC");
  CHECK(tut::to_string(*p.find("kernel")) == "3x3x3");
  CHECK(p.get<double>("eps") == 1e-5);
  CHECK_THROWS_AS(p.get<std::int64_t>("eps"), std::out_of_range);
  CHECK_THROWS_AS(p.get<std::int64_t>("stride"), std::out_of_range);
}

namespace {
// A problem of rank-5 cases with a kernel, a stride and a layout: what make_case checks.
tut::ProblemEntry pool_like() {
  tut::ProblemEntry p;
  p.name = "pool";
  p.params = {{"kernel", std::vector<std::int64_t>{3, 3, 3}, "window", {}},
              {"stride", std::int64_t{2}, "step", {}},
              {"layout", std::string("NCDHW"), "memory order", {"NCDHW", "NDHWC"}}};
  p.case_for = [](const std::vector<std::int64_t>& shape, const tut::Params& params) {
    if (shape.size() != 5) throw std::invalid_argument("takes N x C x D x H x W, not rank " + std::to_string(shape.size()));
    if (params.get<std::int64_t>("stride") < 1) throw std::invalid_argument("stride must be at least 1");
    return tut::Case{tut::case_name(shape, params), shape, params};
  };
  p.floor = [](const tut::Case& c) { return tut::Floor{static_cast<std::uint64_t>(c.numel()) * 4, 0, {}}; };
  p.default_case = p.case_for({1, 2, 4, 4, 4}, tut::Params{}
                                                   .set("kernel", std::vector<std::int64_t>{3, 3, 3})
                                                   .set("stride", std::int64_t{2})
                                                   .set("layout", std::string("NCDHW")));
  return p;
}
}  // namespace

TEST_CASE("--param: a case from a shape and key=value text, defaults filled, bad keys and values named") {
  const auto p = pool_like();
  const auto c = tut::make_case(p, {2, 64, 16, 56, 56}, {{"stride", "1"}, {"kernel", "1x3x3"}});
  CHECK(c.name == "2x64x16x56x56 kernel=1x3x3 stride=1 layout=NCDHW");
  CHECK(c.params.get<std::vector<std::int64_t>>("kernel") == std::vector<std::int64_t>{1, 3, 3});
  CHECK(c.params.get<std::string>("layout") == "NCDHW");
  CHECK(tut::make_case(p, {2, 64, 16, 56, 56}, {{"kernel", "2,2,2"}}).params.get<std::vector<std::int64_t>>("kernel") ==
        std::vector<std::int64_t>{2, 2, 2});
  CHECK_THROWS_WITH_AS(tut::make_case(p, {2, 64, 16, 56, 56}, {{"padding", "1"}}),
                       "pool has no parameter 'padding' (it takes: kernel, stride, layout)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tut::make_case(p, {2, 64, 16, 56, 56}, {{"stride", "two"}}),
                       "parameter 'stride': 'two' is not a whole number", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tut::make_case(p, {2, 64, 16, 56, 56}, {{"layout", "NHWC"}}),
                       "parameter 'layout': 'NHWC' is not one of NCDHW, NDHWC", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tut::make_case(p, {2, 64, 16, 56, 56}, {{"stride", "0"}}), "pool: stride must be at least 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(tut::make_case(p, {2, 64}, {}), "pool: takes N x C x D x H x W, not rank 2", std::invalid_argument);
  // A case's name reads back as the same case; "" is the default case.
  const auto again = tut::parse_case_text(p, c.name);
  CHECK(again.shape == c.shape);
  CHECK(again.name == c.name);
  CHECK(tut::parse_case_text(p, "").name == p.default_case.name);
  CHECK(tut::parse_case_text(p, "1x1x8x8x8 stride=3").name == "1x1x8x8x8 kernel=3x3x3 stride=3 layout=NCDHW");
  CHECK_THROWS_AS(tut::parse_case_text(p, "1x1x8x8x8 stride"), std::invalid_argument);
  // with_params keeps a suite case's other parameters.
  CHECK(tut::with_params(p, c, {{"layout", "NDHWC"}}).name == "2x64x16x56x56 kernel=1x3x3 stride=1 layout=NDHWC");
  // A flat case is named n=...
  CHECK(tut::case_name({1000}, tut::Params{}.set("segment", std::int64_t{256})) == "n=1000 segment=256");
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

namespace bm = tut::bitmask;

TEST_CASE("spread: bit i to bit kPer * i, equal to the plain loop for every field") {
  for (std::uint32_t x = 0; x < 256; ++x) CHECK(bm::spread<4>(x) == bm::spread_loop<4>(x));
  for (std::uint32_t x = 0; x < 16; ++x) CHECK(bm::spread<8>(x) == bm::spread_loop<8>(x));
  for (std::uint32_t x = 0; x < 65536; x += 37) CHECK(bm::spread<2>(x) == bm::spread_loop<2>(x));
  CHECK(bm::spread<4>(0xffu) == 0x11111111u);
  CHECK(bm::spread<8>(0xfu) == 0x01010101u);
}

TEST_CASE("word_from_ballots: a warp's kPer ballots give the format's kPer words") {
  // Simulate the warp of v3: lane t holds elements kPer*t .. kPer*t + kPer-1 of a 32*kPer chunk.
  auto check = [](auto per_tag) {
    constexpr int kPer = decltype(per_tag)::value;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      auto keep = [&](std::int64_t e) { return (tut::splitmix64(seed * 1000 + static_cast<std::uint64_t>(e)) & 1) != 0; };
      std::uint32_t ballots[kPer] = {};
      for (int k = 0; k < kPer; ++k)
        for (int t = 0; t < 32; ++t)
          if (keep(kPer * t + k)) ballots[k] |= 1u << t;
      const auto ref = bm::reference(32 * kPer, keep);
      for (int w = 0; w < kPer; ++w) CHECK(bm::word_from_ballots<kPer>(ballots, w) == ref[w]);
    }
  };
  check(std::integral_constant<int, 4>{});
  check(std::integral_constant<int, 8>{});
  check(std::integral_constant<int, 2>{});
}
