// Host-only tests: the CPU reference, the launch geometry and the look-back's scratch layout. No GPU
// needed.
#include <doctest/doctest.h>

#include "reference.hpp"
#include "versions.cuh"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

TEST_CASE("scan_ref: segments of 4 restart the sums (the source's example)") {
  const std::vector<int> x = {0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(ch03::scan_ref(x, 4, false) == std::vector<int>{0, 1, 3, 6, 4, 9, 15, 22});
  CHECK(ch03::scan_ref(x, 4, true) == std::vector<int>{0, 0, 1, 3, 0, 4, 9, 15});
  CHECK(ch03::scan_ref(x, 8, false) == std::vector<int>{0, 1, 3, 6, 10, 15, 21, 28});
  CHECK(ch03::scan_ref(x, 100, true) == std::vector<int>{0, 0, 1, 3, 6, 10, 15, 21});
}

TEST_CASE("scan_ref: a partial last segment, segments of 1, and an empty array") {
  const std::vector<int> x = {1, 2, 3, 4, 5};
  CHECK(ch03::scan_ref(x, 3, false) == std::vector<int>{1, 3, 6, 4, 9});
  CHECK(ch03::scan_ref(x, 1, false) == x);
  CHECK(ch03::scan_ref(x, 1, true) == std::vector<int>{0, 0, 0, 0, 0});
  CHECK(ch03::scan_ref(std::vector<int>{}, 4, false).empty());
  CHECK_THROWS_AS(ch03::scan_ref(x, 0, false), std::invalid_argument);
}

TEST_CASE("scan_ref on floats: NaN and infinities propagate to the end of their segment only") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1, std::nanf(""), 2, 3, inf, 1, -inf, 5, 1, 2};
  const auto y = ch03::scan_ref(x, 4, false);
  CHECK(y[0] == 1);
  CHECK(std::isnan(y[1]));
  CHECK(std::isnan(y[3]));
  CHECK(y[4] == inf);
  CHECK(std::isnan(y[6]));  // inf + -inf
  CHECK(std::isnan(y[7]));
  CHECK(y[8] == 1);  // a new segment starts clean
  CHECK(y[9] == 3);
}

TEST_CASE("whole-number float inputs sum exactly, in any order") {
  // What lets the float scans be compared exactly: partial sums of whole numbers below 2^24.
  const tut::Random rng(5);
  const auto spec = ch03::input_spec<float>();
  float forward = 0, backward = 0;
  const int n = 1 << 16;
  for (int i = 0; i < n; ++i) forward += rng.value<float>(i, n, spec);
  for (int i = n - 1; i >= 0; --i) backward += rng.value<float>(i, n, spec);
  CHECK(forward == backward);
  CHECK(forward == std::trunc(forward));
}

TEST_CASE("block-wise geometry: whole warps per segment, and bad segments rejected") {
  CHECK(ch03::segment_threads(1024, 1) == 1024);
  CHECK(ch03::segment_threads(1000, 1) == 1024);
  CHECK(ch03::segment_threads(1, 1) == 32);
  CHECK(ch03::segment_threads(1024, 4) == 256);
  CHECK(ch03::segment_threads(100, 4) == 32);
  CHECK(ch03::segment_grid(1025, 1024) == 2);
  CHECK(ch03::segment_grid(std::int64_t{1} << 36, 1) == 0x7fffffffu);  // the rest by the block loop
  CHECK_THROWS_AS(ch03::check_segmented(100, 0), std::invalid_argument);
  CHECK_THROWS_AS(ch03::check_segmented(100, 1025), std::invalid_argument);
  CHECK_THROWS_AS(ch03::check_segmented(-1, 32), std::invalid_argument);
  CHECK_NOTHROW(ch03::check_segmented(0, 1));
}

TEST_CASE("device-wide tiles and scratch: one flag per tile after the counter's own line") {
  CHECK(ch03::kTile == 4096);
  CHECK(ch03::tile_count(1) == 1);
  CHECK(ch03::tile_count(4096) == 1);
  CHECK(ch03::tile_count(4097) == 2);
  const std::int64_t v7_tile = ch03::V7Config::tile;  // data threads x 4 x rows
  CHECK(v7_tile == std::int64_t{ch03::V7Config::data_threads} * 4 * ch03::V7Config::rows);
  CHECK(ch03::v7_scratch_bytes(v7_tile + 1) == 128 + 2 * 8);
  CHECK(ch03::v7_scratch_bytes(v7_tile) == 128 + 8);
  CHECK(ch03::v7_tile_count(1) == 1);
  CHECK(ch03::v6_scratch_bytes(std::int64_t{1} << 28, 4) == 65536 * 4);
  CHECK_THROWS_AS(ch03::check_scan(-5), std::invalid_argument);
  CHECK_THROWS_AS(ch03::check_scratch("v7", 10, 144), std::invalid_argument);
}

TEST_CASE("problems: cases, floors, and the segment parameter (--param segment=S)") {
  const auto seg = tut::erase(ch03::segscan_problem<int>());
  CHECK(seg.default_case.numel() == (std::int64_t{1} << 28));
  CHECK(seg.default_case.params.get<std::int64_t>("segment") == 1024);
  CHECK(seg.floor(ch03::segmented_case(1000, 1024)).bytes == 8000);
  CHECK(tut::make_case(seg, {5000}).params.get<std::int64_t>("segment") == 1024);
  const auto c = tut::make_case(seg, {5000}, {{"segment", "256"}});
  CHECK(c.name == "n=5000 segment=256");
  CHECK(c.name == ch03::segmented_case(5000, 256).name);
  CHECK_THROWS_WITH_AS(tut::make_case(seg, {5000}, {{"segment", "2048"}}), doctest::Contains("1 to 1024"),
                       std::invalid_argument);
  CHECK_THROWS_AS(tut::make_case(seg, {0}), std::invalid_argument);
  const auto scan = tut::erase(ch03::scan_problem<float>());
  CHECK(tut::make_case(scan, {5000}).params.empty());
  CHECK_THROWS_WITH_AS(tut::make_case(scan, {5000}, {{"segment", "256"}}),
                       doctest::Contains("has no parameter 'segment'"), std::invalid_argument);
  CHECK(ch03::exclusive_scan_problem<int>().name == "exclusive_scan_i32");
  CHECK(scan.versions.back().kind == tut::Kind::peer);
}

#if TUT_EXERCISES
#include "exercises/answers.hpp"
#include "tut/exercise.hpp"
#include "kernels/v7_decoupled_lookback.cuh"

#include <string>

// A wrong answer fails with its question's number and hint, never the expected value
// (tut/exercise.hpp); the expected values and how they follow from the code are below, for after
// you have your own.
using tut::grade_answer;

TEST_CASE("exercise: the three numeric answers") {
  // 1. v1_shared_kernel: one barrier after the load, then two per step of its loop
  //    `for (offset = 1; offset < len; offset <<= 1)`: offsets 1 .. 64 for len 100, 7 steps, 15 barriers.
  long long barriers = 1;
  for (std::int64_t offset = 1; offset < 100; offset <<= 1) barriers += 2;
  grade_answer(1, exercise::kV1BarriersSegment100, barriers,
        "one barrier after the load, then two per step; a step for each offset 1, 2, 4, ... below the segment's length");
  // 2. tile_reduce_kernel reads x, tile_scan_kernel reads x again and writes y: 3 x 4 bytes x 1e8.
  grade_answer(2, exercise::kV6BytesFor100M, 3 * 4 * 100'000'000LL,
        "kernel 1 reads x, kernel 3 reads x again and writes y: count the bytes of each pass over 10^8 int32");
  // 3. V7Config: 7 data warps x 32 lanes x 32 rows x 4 = 28672 elements per tile; the look-back warp
  //    holds none. ceil(1e8 / 28672) = 3488.
  grade_answer(3, exercise::kV7TilesFor100M, ch03::v7_tile_count(100'000'000),
        "a tile is what the data warps hold (the look-back warp holds none; see V7Config), and the last tile may be partial");
}
#endif
