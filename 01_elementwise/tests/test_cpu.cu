// Host-only tests of the CPU reference. (The generic template's grid, pack-width and alignment
// rules are tested where they live, in common/tests/test_elementwise.cu.) No GPU needed.
#include <doctest/doctest.h>

#include "reference.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

TEST_CASE("relu_ref: negatives to 0, NaN propagates, -0 and +inf pass through") {
  CHECK(ch01::relu_ref(-3.5f) == 0.0f);
  CHECK(ch01::relu_ref(2.25f) == 2.25f);
  CHECK(ch01::relu_ref(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(std::isinf(ch01::relu_ref(std::numeric_limits<float>::infinity())));
  CHECK(std::isnan(ch01::relu_ref(std::nanf(""))));
  CHECK(std::signbit(ch01::relu_ref(-0.0f)));
  CHECK(ch01::relu_ref(std::numeric_limits<float>::denorm_min()) == std::numeric_limits<float>::denorm_min());
  CHECK(ch01::relu_ref(-std::numeric_limits<float>::denorm_min()) == 0.0f);
}

TEST_CASE("mul_ref: the correctly rounded half product") {
  auto h = [](float f) { return __float2half_rn(f); };
  auto f = [](__half x) { return __half2float(x); };
  CHECK(f(ch01::mul_ref(h(3.0f), h(0.5f))) == 1.5f);
  CHECK(f(ch01::mul_ref(h(-2.0f), h(1.25f))) == -2.5f);
  CHECK(std::isinf(f(ch01::mul_ref(h(256.0f), h(256.0f)))));                // 65536 > 65504 overflows
  CHECK(f(ch01::mul_ref(h(0x1p-14f), h(0x1p-10f))) == 0x1p-24f);            // smallest subnormal
  CHECK(f(ch01::mul_ref(h(0x1p-14f), h(0x1p-11f))) == 0.0f);                // half-way: ties to even
  CHECK(f(ch01::mul_ref(h(0x1p-14f), h(0x1.8p-11f))) == 0x1p-24f);          // above half-way rounds up
  CHECK(std::isnan(f(ch01::mul_ref(h(INFINITY), h(0.0f)))));
  // 1.0009765625 = 1 + 2^-10 is a half; its square 1 + 2^-9 + 2^-20 needs rounding.
  CHECK(f(ch01::mul_ref(h(1.0009765625f), h(1.0009765625f))) == 1.001953125f);
}

#if TUT_EXERCISES
#include "exercises/answers.hpp"
#include "versions.cuh"

TEST_CASE("exercise: the four numeric answers") {
  CHECK_MESSAGE(exercise::kMulBytesPerElement ==
                    static_cast<long long>(ch01::mul_problem().floor(tut::flat_case(1)).bytes),
                "question 1: count each input read and the output written");
  CHECK_MESSAGE(exercise::kV2Blocks == tut::ew::waves_grid_size(std::int64_t{1} << 28, 256, 132, 2048),
                "question 2: SMs x (threads per SM / block size) x waves, capped by the work");
  CHECK_MESSAGE(exercise::kV3HalfKiBPerSm == 2048 * 2 * 16 / 1024, "question 3: threads x bytes in flight per thread");
  CHECK_MESSAGE(exercise::kReluCappedKiBPerSm == 1024 * 16 / 1024,
                "question 4: the capped threads x the one 16-byte pack each has in flight");
}
#endif
