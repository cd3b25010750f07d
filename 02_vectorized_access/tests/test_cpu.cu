// Host-only tests: the CPU references and the alignment rule the checked launchers use.
#include <doctest/doctest.h>

#include "tut/elementwise.cuh"
#include "reference.hpp"

#include <cmath>
#include <cstdint>

namespace {
__half h(float f) { return __float2half_rn(f); }
float f(__half x) { return __half2float(x); }
}  // namespace

TEST_CASE("copy_ref is the identity on every bit pattern") {
  for (std::int32_t v : {0, -1, 1, INT32_MIN, INT32_MAX, static_cast<std::int32_t>(0xCDCDCDCDu)})
    CHECK(ch02::copy_ref(v) == v);
}

TEST_CASE("mul_ref rounds the exact product once") {
  CHECK(f(ch02::mul_ref(h(1.5f), h(-2.0f))) == -3.0f);
  CHECK(f(ch02::mul_ref(h(1.0009765625f), h(1.0009765625f))) == 1.001953125f);
  CHECK(std::isinf(f(ch02::mul_ref(h(300.0f), h(300.0f)))));
}

TEST_CASE("fma_ref rounds once, unlike a multiply then an add") {
  // a*x = 1 + 2^-9 + 2^-20 exactly. Rounded to half first it is 1 + 2^-9, and adding
  // y = -(1 + 2^-9) gives 0; fused, the 2^-20 survives (a half subnormal).
  const __half a = h(1.0009765625f), x = h(1.0009765625f), y = h(-1.001953125f);
  CHECK(f(ch02::fma_ref(a, x, y)) == 0x1p-20f);
  CHECK(f(h(f(ch02::mul_ref(a, x)) + f(y))) == 0.0f);
  CHECK(f(ch02::fma_ref(h(2.0f), h(3.0f), h(1.0f))) == 7.0f);
  CHECK(std::isnan(f(ch02::fma_ref(h(INFINITY), h(0.0f), h(1.0f)))));
  CHECK(std::isnan(f(ch02::fma_ref(h(INFINITY), h(1.0f), h(-INFINITY)))));
}

TEST_CASE("the checked launchers' rule: every pointer aligned to 16 bytes") {
  alignas(16) static std::int32_t i32[16];
  alignas(16) static __half f16[32];
  CHECK(tut::ew::all_aligned<4>(i32, i32 + 4));
  for (int off = 1; off < 4; ++off) CHECK_FALSE(tut::ew::all_aligned<4>(i32 + off, i32));
  CHECK(tut::ew::all_aligned<8>(f16, f16 + 8, f16 + 16));
  for (int off = 1; off < 8; ++off) CHECK_FALSE(tut::ew::all_aligned<8>(f16, f16 + off, f16 + 16));
}

#if TUT_EXERCISES
#include "exercises/answers.hpp"
#include "tut/exercise.hpp"
#include "kernels/mul_tail.cuh"

#include <string>

// A wrong answer fails with its question's number and hint, never the expected value
// (tut/exercise.hpp); the expected values and how they follow from the code are below, for after
// you have your own.
using tut::grade_answer;

TEST_CASE("exercise: the three numeric answers") {
  // 1. k1 writes one 2-byte load per element of each input: 3 inputs x 8 halves per pack.
  grade_answer(1, exercise::kK1StyleFmaLoadsPerPack, 3 * ch02::kPack,
        "k1's loop issues one 2-byte load per element per input; count fma_f16's inputs");
  // 2. Lane l reads bytes 8l and 8l + 1: the warp spans bytes 0 .. 31 x 8 + 1 = 249 of a
  //    sector-aligned array, which lie in sectors 0 .. 7.
  const long long last_byte = 31 * 8 + static_cast<long long>(sizeof(__half)) - 1;
  grade_answer(2, exercise::kHalfStride8SectorsPerRequest, last_byte / 32 + 1,
        "find the first and the last byte the warp's load touches, and count the 32-byte sectors from one to the other");
  // 3. 2^28 x (4 read + 4 written) bytes / 4000 GB/s = 536.9 us.
  const double floor_us = (std::int64_t{1} << 28) * 8.0 / 4000e9 * 1e6;
  grade_answer(3, exercise::kCopyFloorMicroseconds, static_cast<long long>(floor_us + 0.5),
        "bytes read plus bytes written, over the ceiling");
}
#endif
