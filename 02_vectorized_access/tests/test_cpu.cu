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
#include "kernels/mul_tail.cuh"

TEST_CASE("exercise: the three numeric answers") {
  CHECK_MESSAGE(exercise::kK1LoadsPerPack == 2 * ch02::kPack, "question 1: one 2-byte load per element per input");
  CHECK_MESSAGE(exercise::kK1SectorsPerRequest == 32 * static_cast<long long>(sizeof(ch02::Pack)) / 32,
                "question 2: the warp's addresses span 32 x 16 bytes");
  const double floor_us = (std::int64_t{1} << 28) * 8.0 / 4000e9 * 1e6;
  CHECK_MESSAGE(exercise::kCopyFloorMicroseconds == static_cast<long long>(floor_us + 0.5),
                "question 3: bytes read plus bytes written, over the ceiling");
}
#endif
