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
#include "tut/exercise.hpp"
#include "tut/elementwise.cuh"

#include <string>

// A wrong answer fails with its question's number and hint, never the expected value
// (tut/exercise.hpp); the expected values and how they follow from the code are below, for after
// you have your own.
using tut::grade_answer;

TEST_CASE("exercise: the four numeric answers") {
  // 1. Two float inputs read and one float output written: 3 x 4 bytes.
  grade_answer(1, exercise::kMulF32BytesPerElement, 3 * static_cast<long long>(sizeof(float)),
        "count each input read and the output written once, at float32's size");
  // 2. v2_waves' rule: min(ceil(5e6 / 256) = 19532, 108 x (2048 / 256) x 32 = 27648): the work caps it.
  grade_answer(2, exercise::kV2Blocks, tut::ew::waves_grid_size(5'000'000, 256, 108, 2048),
        "blocks = min(ceil(n / 256), SMs x (threads per SM / 256) x 32 waves): which of the two is smaller?");
  // 3. 2048 threads x (one 16-byte pack of x + one of y) = 65536 bytes.
  grade_answer(3, exercise::kV3HalfKiBPerSm, 2048 * 2 * 16 / 1024,
        "resident threads x the bytes each has in flight: one 16-byte pack per input");
  // 4. 1024 threads x one 16-byte pack = 16384 bytes.
  grade_answer(4, exercise::kReluCappedKiBPerSm, 1024 * 16 / 1024,
        "the capped threads x the one 16-byte pack each has in flight");
}
#endif
