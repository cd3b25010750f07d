// Host-only tests: the CPU reference and its NaN and zero policy, the mask format
// (tut/bitmask.cuh), the floors, and the launchers' argument checks. No GPU needed.
#include <doctest/doctest.h>

#include "reference.hpp"
#include "tut/bitmask.cuh"
#include "tut/random.hpp"
#include "versions.cuh"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace {
namespace bm = tut::bitmask;
const float kInf = std::numeric_limits<float>::infinity();
__half h(float f) { return __float2half_rn(f); }
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
std::uint16_t bits_of(__half v) {
  std::uint16_t u;
  std::memcpy(&u, &v, 2);
  return u;
}
}  // namespace

TEST_CASE("relu_ref: negatives to +0, NaN and -0 pass through unchanged, +inf stays") {
  CHECK(ch04::relu_ref(-3.5f) == 0.0f);
  CHECK_FALSE(std::signbit(ch04::relu_ref(-3.5f)));
  CHECK(ch04::relu_ref(2.25f) == 2.25f);
  CHECK(ch04::relu_ref(-kInf) == 0.0f);
  CHECK(ch04::relu_ref(kInf) == kInf);
  const float nan = std::nanf("7");
  CHECK(bits_of(ch04::relu_ref(nan)) == bits_of(nan));  // the same NaN, payload included
  CHECK(bits_of(ch04::relu_ref(-0.0f)) == bits_of(-0.0f));
  CHECK(bits_of(ch04::relu_ref(h(-0.0f))) == 0x8000);
  CHECK(bits_of(ch04::relu_ref(h(-2.0f))) == 0x0000);
  CHECK(std::isnan(__half2float(ch04::relu_ref(h(NAN)))));
  CHECK(__half2float(ch04::relu_ref(h(INFINITY))) == kInf);
}

TEST_CASE("kept_ref: the mask bit is !(s <= 0), so NaN is kept and both zeros are not") {
  CHECK(ch04::kept_ref(1e-30f));
  CHECK(ch04::kept_ref(std::numeric_limits<float>::denorm_min()));
  CHECK(ch04::kept_ref(kInf));
  CHECK(ch04::kept_ref(std::nanf("")));
  CHECK_FALSE(ch04::kept_ref(0.0f));
  CHECK_FALSE(ch04::kept_ref(-0.0f));
  CHECK_FALSE(ch04::kept_ref(-kInf));
  CHECK_FALSE(ch04::kept_ref(-1.0f));
  CHECK(ch04::kept_ref(h(NAN)));
  CHECK_FALSE(ch04::kept_ref(h(-0.0f)));
  CHECK(ch04::kept_ref(h(0x1p-24f)));  // the smallest half subnormal
}

TEST_CASE("the mask and y agree: kept(s) == kept(relu(s)) for every special value") {
  // Why v0_from_y (PyTorch's y <= 0 test) and the mask versions give the same dx, bit for bit.
  for (int k = 0; k < tut::kSpecialCount; ++k) {
    const float s = tut::special_value<float>(k);
    CHECK(ch04::kept_ref(s) == ch04::kept_ref(ch04::relu_ref(s)));
    const __half hs = tut::special_value<__half>(k);
    CHECK(ch04::kept_ref(hs) == ch04::kept_ref(ch04::relu_ref(hs)));
  }
}

TEST_CASE("backward_ref: dy where kept, +0 elsewhere; dy's own NaN and -0 pass where kept") {
  CHECK(ch04::backward_ref(2.5f, true) == 2.5f);
  CHECK(bits_of(ch04::backward_ref(2.5f, false)) == 0u);
  CHECK(bits_of(ch04::backward_ref(-0.0f, true)) == bits_of(-0.0f));
  CHECK(std::isnan(ch04::backward_ref(std::nanf(""), true)));
  CHECK(bits_of(ch04::backward_ref(std::nanf(""), false)) == 0u);
  CHECK(bits_of(ch04::backward_ref(h(-3.0f), false)) == 0u);
}

TEST_CASE("add_ref: one rounding, the canonical NaN for NaN sums, -0 + -0 = -0") {
  CHECK(ch04::add_ref(1.5f, -0.25f) == 1.25f);
  CHECK(bits_of(ch04::add_ref(kInf, -kInf)) == 0x7fffffffu);
  CHECK(bits_of(ch04::add_ref(std::nanf("3"), 1.0f)) == 0x7fffffffu);
  CHECK(bits_of(ch04::add_ref(-0.0f, -0.0f)) == bits_of(-0.0f));
  CHECK(bits_of(ch04::add_ref(-0.0f, 0.0f)) == 0u);
  CHECK(bits_of(ch04::add_ref(h(INFINITY), h(-INFINITY))) == 0x7fff);
  CHECK(__half2float(ch04::add_ref(h(65504.0f), h(15.0f))) == 65504.0f);          // below 65520: the largest half
  CHECK(std::isinf(__half2float(ch04::add_ref(h(65504.0f), h(17.0f)))));             // above it: overflows
  CHECK(__half2float(ch04::add_ref(h(2048.0f), h(1.0f))) == 2048.0f);       // 2049: a tie, to even
  CHECK(__half2float(ch04::add_ref(h(2048.0f), h(3.0f))) == 2052.0f);       // 2051: a tie, to even
}

TEST_CASE("bitmask: word count, positions and the padding rule") {
  CHECK(bm::word_count(0) == 0);
  CHECK(bm::word_count(1) == 1);
  CHECK(bm::word_count(31) == 1);
  CHECK(bm::word_count(32) == 1);
  CHECK(bm::word_count(33) == 2);
  CHECK(bm::word_count(1000) == 32);
  CHECK(bm::word_count((std::int64_t{1} << 36) + 1) == (std::int64_t{1} << 31) + 1);  // no 32-bit overflow
  CHECK(bm::word_of(31) == 0);
  CHECK(bm::word_of(32) == 1);
  CHECK(bm::bit_of(33) == 1);
  CHECK(bm::word_of(std::int64_t{1} << 35) == std::int64_t{1} << 30);
  CHECK(bm::valid_bits(33, 0) == 0xffffffffu);
  CHECK(bm::valid_bits(33, 1) == 0x1u);
  CHECK(bm::valid_bits(33, 2) == 0u);
  CHECK(bm::valid_bits(64, 1) == 0xffffffffu);
  CHECK(bm::padding_bits(64) == 0u);
  CHECK(bm::padding_bits(65) == 0xfffffffeu);
  CHECK(bm::padding_bits(1000) == 0xffffff00u);  // 1000 = 31 * 32 + 8: bits 8..31 of word 31
  const std::vector<bm::Word> words = {0x80000001u, 0x2u};
  CHECK(bm::test(words.data(), 0));
  CHECK_FALSE(bm::test(words.data(), 1));
  CHECK(bm::test(words.data(), 31));
  CHECK(bm::test(words.data(), 33));
  CHECK_FALSE(bm::test(words.data(), 32));
}

TEST_CASE("bitmask::reference: bit j of word i is element 32i + j, zeros past n") {
  for (std::int64_t n : {0, 1, 31, 32, 33, 63, 64, 65, 1000}) {
    INFO("n = ", n);
    const auto all = bm::reference(n, [](std::int64_t) { return true; });
    REQUIRE(static_cast<std::int64_t>(all.size()) == bm::word_count(n));
    for (std::int64_t w = 0; w < bm::word_count(n); ++w) CHECK(all[w] == bm::valid_bits(n, w));
    if (n > 0) CHECK((all.back() & bm::padding_bits(n)) == 0u);
    const auto odd = bm::reference(n, [](std::int64_t i) { return i % 3 == 1; });
    for (std::int64_t i = 0; i < n; ++i) CHECK(bm::test(odd.data(), i) == (i % 3 == 1));
  }
  CHECK_THROWS_AS(bm::reference(-1, [](std::int64_t) { return true; }), std::invalid_argument);
}

TEST_CASE("a byte per 8 elements, stored in order, reads back as the words (little-endian)") {
  // What fwd v1 relies on: byte b of the word array holds elements 8b .. 8b + 7.
  const std::int64_t n = 77;
  auto keep = [](std::int64_t i) { return (i * 7) % 5 < 2; };
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(4 * bm::word_count(n)), 0);
  for (std::int64_t i = 0; i < n; ++i)
    if (keep(i)) bytes[static_cast<std::size_t>(i / 8)] |= static_cast<std::uint8_t>(1u << (i % 8));
  std::vector<bm::Word> words(static_cast<std::size_t>(bm::word_count(n)));
  std::memcpy(words.data(), bytes.data(), bytes.size());
  CHECK(words == bm::reference(n, keep));
}

TEST_CASE("floors: the bitmask strategy's bytes, the same for every version") {
  const std::int64_t n = std::int64_t{1} << 28;
  CHECK(ch04::relu_mask_f32().floor(tut::flat_case(n)).bytes == 8ull * n + 4ull * (n / 32));
  CHECK(ch04::relu_backward_f32().floor(tut::flat_case(n)).bytes == 8ull * n + 4ull * (n / 32));
  CHECK(ch04::add_relu_mask_f32().floor(tut::flat_case(n)).bytes == 12ull * n + 4ull * (n / 32));
  CHECK(ch04::relu_mask_f16().floor(tut::flat_case(n)).bytes == 4ull * n + 4ull * (n / 32));
  CHECK(ch04::relu_mask_f32().floor(tut::flat_case(33)).bytes == 8ull * 33 + 8);  // two words
}

TEST_CASE("every launcher rejects a negative n before touching the device") {
  ch04::ForwardArgs<float> f;
  f.n = -1;
  CHECK_THROWS_AS((ch04::fwd_v0_two_kernels<float, false>(nullptr, f)), std::invalid_argument);
  CHECK_THROWS_AS((ch04::fwd_v1_thread_per_byte<float, false>(nullptr, f)), std::invalid_argument);
  CHECK_THROWS_AS((ch04::fwd_v2_warp_ballot<float, true>(nullptr, f)), std::invalid_argument);
  CHECK_THROWS_AS((ch04::fwd_v3_ballot_vectorized<float, false>(nullptr, f)), std::invalid_argument);
  ch04::BackwardArgs<__half> b;
  b.n = -5;
  CHECK_THROWS_AS(ch04::bwd_v0_from_y<__half>(nullptr, b), std::invalid_argument);
  CHECK_THROWS_AS(ch04::bwd_v1_from_byte_mask<__half>(nullptr, b), std::invalid_argument);
  CHECK_THROWS_AS(ch04::bwd_v2_from_bitmask<__half>(nullptr, b), std::invalid_argument);
  CHECK_THROWS_AS(ch04::bwd_v3_from_bitmask_vectorized<__half>(nullptr, b), std::invalid_argument);
  CHECK_THROWS_AS(ch04::relu_mask_f32().case_for({-3}, {}), std::invalid_argument);
  CHECK_THROWS_AS(ch04::relu_backward_f32().case_for({0}, {}), std::invalid_argument);
}

#if TUT_EXERCISES
#include "exercises/answers.hpp"
#include "tut/exercise.hpp"
#include "kernels/fwd_v3_ballot_vectorized.cuh"

#include <string>

// A wrong answer fails with its question's number and hint, never the expected value
// (tut/exercise.hpp); the expected values and how they follow from the code are below, for after
// you have your own.
using tut::grade_answer;

TEST_CASE("exercise: the three numeric answers") {
  // 1. Forward: x 4 + r 4 read, y 4 written; backward: dy 4 + y 4 read, dx 4 written.
  grade_answer(1, exercise::kAddReluYBasedBytesPerElement, (4 + 4 + 4) + (4 + 4 + 4),
        "forward: read x and r, write y; backward: read dy and y, write dx (autograd hands the same dx to x and r)");
  // 2. ceil(1000 / 32) = 32 words of 4 bytes.
  grade_answer(2, exercise::kMaskBytesFor1000, 4 * tut::bitmask::word_count(1000),
        "ceil(n / 32) words of 4 bytes");
  // 3. A half chunk is 32 lanes x 8 halves = 256 elements, 8 words. 2000 / 256 = 7 whole chunks,
  //    7 x 8 = 56 words; the other 208 elements (7 words) go through the partial chunk's ballots.
  constexpr long long per_lane = ch04::kPackOf<__half>;
  grade_answer(3, exercise::kV3HalfPackedWordsFor2000, 2000 / (32 * per_lane) * per_lane,
        "a warp's chunk is 32 lanes x one 16-byte pack of halves; only whole chunks take the packed path, "
        "and a chunk stores one word per 32 of its elements");
}
#endif
