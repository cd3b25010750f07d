// Host-only tests of the element-wise toolkit (tut/elementwise.cuh): pack widths, the alignment
// check and the grid rule. No GPU needed.
#include <doctest/doctest.h>

#include "tut/elementwise.cuh"

#include <cuda_fp16.h>

#include <cstdint>

TEST_CASE("pack width: 16 bytes, at most 8 elements, the narrowest over all operands") {
  CHECK(tut::ew::pack_size<float>() == 4);
  CHECK(tut::ew::pack_size<__half>() == 8);
  CHECK(tut::ew::pack_size<double>() == 2);
  CHECK(tut::ew::pack_size<std::int8_t>() == 8);  // 16 would fit; capped at 8 elements
  CHECK(tut::ew::pack_size<__half, float>() == 4);
  CHECK(tut::ew::pack_size<__half, __half, __half>() == 8);
  CHECK(tut::ew::pack_size<double, std::int8_t>() == 2);
  struct Big { char b[32]; };
  CHECK(tut::ew::pack_size<Big>() == 1);
  CHECK(sizeof(tut::ew::Packed<__half, 8>) == 16);
  CHECK(alignof(tut::ew::Packed<__half, 8>) == 16);
  CHECK(alignof(tut::ew::Packed<float, 1>) == 4);
}

TEST_CASE("alignment check: every pointer aligned to its own pack size") {
  alignas(16) static float f[16];
  alignas(16) static __half h[32];
  CHECK(tut::ew::all_aligned<4>(f, f + 4, f + 8));
  CHECK_FALSE(tut::ew::all_aligned<4>(f, f + 1));
  CHECK_FALSE(tut::ew::all_aligned<4>(f + 2, f + 4));
  CHECK(tut::ew::all_aligned<2>(f + 2, f + 4));
  CHECK(tut::ew::all_aligned<8>(h, h + 8));
  CHECK_FALSE(tut::ew::all_aligned<8>(h, h + 4));
  CHECK(tut::ew::all_aligned<4>(h + 4, f));  // 4 halves = 8 bytes
  CHECK(tut::ew::all_aligned<1>(f + 1, h + 3));
}

TEST_CASE("waves grid size: capped by the work, by the device, and at least one block") {
  // H100: 132 SMs x 2048 threads / 256 x 32 waves = 33792 blocks.
  CHECK(tut::ew::waves_grid_size(std::int64_t{1} << 28, 256, 132, 2048) == 33792);
  CHECK(tut::ew::waves_grid_size(std::int64_t{1} << 28, 256, 132, 2048, 1) == 1056);
  CHECK(tut::ew::waves_grid_size(1000, 256, 132, 2048) == 4);
  CHECK(tut::ew::waves_grid_size(1024, 256, 132, 2048) == 4);
  CHECK(tut::ew::waves_grid_size(1025, 256, 132, 2048) == 5);
  CHECK(tut::ew::waves_grid_size(1, 256, 132, 2048) == 1);
  CHECK(tut::ew::waves_grid_size(0, 256, 132, 2048) == 1);
  CHECK(tut::ew::waves_grid_size(std::int64_t{1} << 40, 256, 1, 1536) == 6 * 32);  // 1536/256 = 6 blocks per SM
}
