// Every registered version against the CPU reference on the GPU: at the awkward sizes, with every
// operand moved off its alignment, the backward on the masks each forward version wrote, the
// grader against known-wrong kernels, and past 2^31 elements.
#include <doctest/doctest.h>

#include "tests/wrong_solutions.cuh"
#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "versions.cuh"

#include <cstdlib>
#include <string>
#include <vector>

namespace {

// Sizes around one and two warps' words, an odd thousand, 2^20 + 1, and 2^26 + 5 (left out under
// compute-sanitizer, where every access is instrumented; the `large` suite goes past 2^31).
std::vector<std::int64_t> sizes() {
  std::vector<std::int64_t> s = {0, 1, 31, 32, 33, 63, 64, 65, 1000, (1 << 20) + 1};
  if (!tut::under_sanitizer()) s.push_back((std::int64_t{1} << 26) + 5);
  return s;
}

std::vector<tut::Case> chain_cases() {
  std::vector<tut::Case> out;
  for (std::int64_t n : {1, 33, 1000, (1 << 20) + 1}) out.push_back(tut::flat_case(n));
  return out;
}

tut::CheckResult grade_forward(ch04::ForwardLaunch<float, false> launch, std::int64_t n) {
  const auto v = ch04::forward_version<float, false>("wrong", "", ch04::MaskFormat::bits, launch, {});
  return tut::grade(ch04::relu_mask_f32(), v, tut::flat_case(n));
}
tut::CheckResult grade_backward(ch04::BackwardLaunch<float> launch, std::int64_t n) {
  const auto v = ch04::backward_version<float>("wrong", "", "mask", launch, {});
  return tut::grade(ch04::relu_backward_f32(), v, tut::flat_case(n));
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("relu_mask_f32: every version matches the reference, y and mask bit for bit" * tut::needs_gpu()) {
    tut::check_sizes(ch04::relu_mask_f32(), sizes());
  }
  TEST_CASE("relu_mask_f16: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::relu_mask_f16(), sizes());
  }
  TEST_CASE("add_relu_mask_f32: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::add_relu_mask_f32(), sizes());
  }
  TEST_CASE("add_relu_mask_f16: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::add_relu_mask_f16(), sizes());
  }
  TEST_CASE("relu_backward_f32: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::relu_backward_f32(), sizes());
  }
  TEST_CASE("relu_backward_f16: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::relu_backward_f16(), sizes());
  }

  TEST_CASE("forward versions stay correct with every operand moved 0-7 elements" * tut::needs_gpu()) {
    // The mask moves by whole words: it is indexed by element, so its alignment never changes
    // which bits go where.
    tut::check_offsets(ch04::relu_mask_f32());
    tut::check_offsets(ch04::relu_mask_f16());
    tut::check_offsets(ch04::add_relu_mask_f32());
    tut::check_offsets(ch04::add_relu_mask_f16());
  }

  TEST_CASE("backward versions stay correct with every operand moved 0-7 elements" * tut::needs_gpu()) {
    tut::check_offsets(ch04::relu_backward_f32());
    tut::check_offsets(ch04::relu_backward_f16());
  }

  TEST_CASE("the backward on the record each forward version wrote, ReLU's and AddReLU's" * tut::needs_gpu()) {
    // Each forward version writes y and one mask; each backward version reads one of y, the byte
    // mask or the bitmask: the pairs are v0 -> {v0, v1} and v1, v2, v3 -> {v0, v2, v3}, 11 a case.
    const auto cases = chain_cases();
    CHECK(tut::check_chains(ch04::relu_backward_f32(), cases) == 11 * static_cast<int>(cases.size()));
    CHECK(tut::check_chains(ch04::relu_backward_f16(), cases) == 11 * static_cast<int>(cases.size()));
    const auto add32 = tut::erase(ch04::add_relu_mask_f32()), add16 = tut::erase(ch04::add_relu_mask_f16());
    CHECK(tut::check_chains(ch04::relu_backward_f32(), cases, &add32) == 11 * static_cast<int>(cases.size()));
    CHECK(tut::check_chains(ch04::relu_backward_f16(), cases, &add16) == 11 * static_cast<int>(cases.size()));
  }

  TEST_CASE("the grader rejects known-wrong solutions" * tut::needs_gpu()) {
    // The source's __activemask() ballot, in blocks that are not whole warps: the words are wrong.
    const auto am = grade_forward(ch04::wrong::activemask_ballot_block48, 1000);
    CHECK_FALSE(am.ok());
    CHECK(am["y"].ok());
    CHECK_FALSE(am["mask"].ok());
    // The same ballot in whole warps, taken in a data-dependent branch: y is right, and the words of
    // the warps whose lane 0 is not kept (about half, inputs uniform in [-4, 4)) are wrong.
    const auto branch = grade_forward(ch04::wrong::activemask_in_branch, 1000);
    CHECK(branch["y"].ok());
    CHECK_FALSE(branch["mask"].ok());
    CHECK(branch["mask"].mismatches >= 3);
    // Garbage padding bits: right at n = 1024, wrong in exactly the last word at n = 1000.
    CHECK(grade_forward(ch04::wrong::padding_bits_set, 1024).ok());
    const auto pad = grade_forward(ch04::wrong::padding_bits_set, 1000);
    CHECK_FALSE(pad.ok());
    CHECK(pad["y"].ok());
    CHECK(pad["mask"].mismatches == 1);
    CHECK(pad.summary().find("[31]") != std::string::npos);
    // The source's x > 0: the inputs hold NaN and -0, so y and the mask both differ.
    const auto src = grade_forward(ch04::wrong::source_predicate, 4099);
    CHECK_FALSE(src["y"].ok());
    CHECK_FALSE(src["mask"].ok());
    // Whole warps only: right at multiples of 32, wrong at 33 and 1000.
    CHECK(grade_forward(ch04::wrong::drops_partial_warp, 1024).ok());
    CHECK_FALSE(grade_forward(ch04::wrong::drops_partial_warp, 33).ok());
    CHECK_FALSE(grade_forward(ch04::wrong::drops_partial_warp, 1000).ok());
    // The bits in the wrong order.
    CHECK_FALSE(grade_backward(ch04::wrong::reads_bits_msb_first, 1000).ok());
  }

  TEST_CASE("a forward version that writes the byte mask is checked on it, not on the words" * tut::needs_gpu()) {
    // v0 leaves the word array poisoned; its check must pass, and must fail if it wrote nothing.
    const auto& v0 = ch04::relu_mask_f32().versions.at(0);
    REQUIRE(v0.name == "v0_two_kernels");
    const auto r = tut::grade(ch04::relu_mask_f32(), v0, tut::flat_case(1000));
    CHECK(r.ok());
    CHECK(r.outputs.size() == 2);
    CHECK(r["byte_mask"].checked == 1000);
    const auto nothing = ch04::forward_version<float, false>(
        "writes_nothing", "", ch04::MaskFormat::bytes, [](cudaStream_t, const ch04::ForwardArgs<float>&) {}, {});
    CHECK_FALSE(tut::grade(ch04::relu_mask_f32(), nothing, tut::flat_case(1000))["byte_mask"].ok());
  }
}

// More than 2^31 elements: 32-bit indexing would wrap here, and 2^31 + 9 leaves a partial last
// word. Run with `meson test -C build --suite large`. Forward versions are compared in two groups,
// by the outputs they write (y and the byte mask; y and the bitmask), each later version with the
// first one's bytes.
TEST_SUITE("large") {
  const std::int64_t kHuge = (std::int64_t{1} << 31) + 9;

  TEST_CASE("relu_mask_f32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{40} << 30)) {
    tut::check_all_at(ch04::relu_mask_f32(), tut::flat_case(kHuge));
  }

  TEST_CASE("relu_backward_f32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{48} << 30)) {
    tut::check_all_at(ch04::relu_backward_f32(), tut::flat_case(kHuge));
  }
}
