// Host-only tests: the CPU reference, and the grid-size, pack-width and alignment logic of the
// generic template. No GPU needed.
#include <doctest/doctest.h>

#include "kernels/elementwise.cuh"
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

TEST_CASE("pack width: 16 bytes, at most 8 elements, the narrowest over all operands") {
  CHECK(ew::pack_size<float>() == 4);
  CHECK(ew::pack_size<__half>() == 8);
  CHECK(ew::pack_size<double>() == 2);
  CHECK(ew::pack_size<std::int8_t>() == 8);  // 16 would fit; capped at 8 elements
  CHECK(ew::pack_size<__half, float>() == 4);
  CHECK(ew::pack_size<__half, __half, __half>() == 8);
  CHECK(ew::pack_size<double, std::int8_t>() == 2);
  struct Big { char b[32]; };
  CHECK(ew::pack_size<Big>() == 1);
  CHECK(sizeof(ew::Packed<__half, 8>) == 16);
  CHECK(alignof(ew::Packed<__half, 8>) == 16);
  CHECK(alignof(ew::Packed<float, 1>) == 4);
}

TEST_CASE("alignment check: every pointer aligned to its own pack size") {
  alignas(16) static float f[16];
  alignas(16) static __half h[32];
  CHECK(ew::all_aligned<4>(f, f + 4, f + 8));
  CHECK_FALSE(ew::all_aligned<4>(f, f + 1));
  CHECK_FALSE(ew::all_aligned<4>(f + 2, f + 4));
  CHECK(ew::all_aligned<2>(f + 2, f + 4));
  CHECK(ew::all_aligned<8>(h, h + 8));
  CHECK_FALSE(ew::all_aligned<8>(h, h + 4));
  CHECK(ew::all_aligned<4>(h + 4, f));  // 4 halves = 8 bytes
  CHECK(ew::all_aligned<1>(f + 1, h + 3));
}

TEST_CASE("waves grid size: capped by the work, by the device, and at least one block") {
  // H100: 132 SMs x 2048 threads / 256 x 32 waves = 33792 blocks.
  CHECK(ew::waves_grid_size(std::int64_t{1} << 28, 256, 132, 2048) == 33792);
  CHECK(ew::waves_grid_size(std::int64_t{1} << 28, 256, 132, 2048, 1) == 1056);
  CHECK(ew::waves_grid_size(1000, 256, 132, 2048) == 4);
  CHECK(ew::waves_grid_size(1024, 256, 132, 2048) == 4);
  CHECK(ew::waves_grid_size(1025, 256, 132, 2048) == 5);
  CHECK(ew::waves_grid_size(1, 256, 132, 2048) == 1);
  CHECK(ew::waves_grid_size(0, 256, 132, 2048) == 1);
  CHECK(ew::waves_grid_size(std::int64_t{1} << 40, 256, 1, 1536) == 6 * 32);  // 1536/256 = 6 blocks per SM
}
