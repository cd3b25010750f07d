// Every registered version against the CPU reference on the GPU, and the grader against
// known-wrong kernels.
#include <doctest/doctest.h>

#include "tests/grading.cuh"
#include "tests/wrong_solutions.cuh"
#include "tut/gpu_test.hpp"
#include "tut/ladder_tests.hpp"

#include <string>

TEST_SUITE("gpu") {
  TEST_CASE("relu_f32: every version matches the reference at awkward sizes" * tut::needs_gpu()) {
    tut::check_ladder_sizes(ch01::relu_ladder(), ch01::grade_relu);
  }

  TEST_CASE("mul_f16: every version matches the reference at awkward sizes" * tut::needs_gpu()) {
    tut::check_ladder_sizes(ch01::mul_ladder(), ch01::grade_mul);
  }

  TEST_CASE("relu_f32: versions stay correct for pointers offset by 0-7 elements" * tut::needs_gpu()) {
    tut::check_ladder_offsets(ch01::relu_ladder(), ch01::grade_relu);
  }

  TEST_CASE("mul_f16: versions stay correct for pointers offset by 0-7 elements" * tut::needs_gpu()) {
    tut::check_ladder_offsets(ch01::mul_ladder(), ch01::grade_mul);
  }

  TEST_CASE("the grader rejects known-wrong solutions" * tut::needs_gpu()) {
    // Dropping the tail passes when n is a multiple of 4 and fails otherwise: why the sizes are odd.
    CHECK(ch01::grade_relu(ch01::wrong::drops_tail, 1024).ok());
    const auto tail = ch01::grade_relu(ch01::wrong::drops_tail, 1027);
    CHECK_FALSE(tail.ok());
    CHECK(tail.mismatches == 3);
    CHECK_FALSE(ch01::grade_relu(ch01::wrong::drops_tail, 33).ok());
    // fmaxf turns NaN into 0; the inputs contain NaN, so this must fail.
    CHECK_FALSE(ch01::grade_relu(ch01::wrong::swallows_nan, 4099).ok());
    // Writing past n is only visible through the guard elements.
    const auto overrun = ch01::grade_relu(ch01::wrong::writes_past_end, 1001);
    CHECK_FALSE(overrun.ok());
    CHECK(overrun.summary().find("outside [0, n)") != std::string::npos);
    CHECK(ch01::grade_relu(ch01::wrong::writes_past_end, 1000).ok());
  }

  TEST_CASE("the generic template takes the packed path only for aligned pointers" * tut::needs_gpu()) {
    tut::DeviceBuffer<float> buf(64);
    CHECK(ew::all_aligned<4>(buf.data(), static_cast<const float*>(buf.data() + 4)));
    CHECK_FALSE(ew::all_aligned<4>(buf.data(), static_cast<const float*>(buf.data() + 1)));
    CHECK(ew::launch(ew::SimpleFactory<ch01::Relu>{}, nullptr, -1, buf.data(), static_cast<const float*>(buf.data())) ==
          cudaErrorInvalidValue);
    CHECK(ew::launch(ew::SimpleFactory<ch01::Relu>{}, nullptr, 0, buf.data(), static_cast<const float*>(buf.data())) ==
          cudaSuccess);
  }
}

// More than 2^31 elements: 32-bit indexing would wrap here. Needs ~18 GB of device memory for
// ReLU and ~13 GB for the product; run with `meson test --suite large`.
TEST_SUITE("large") {
  const std::int64_t kHuge = (std::int64_t{1} << 31) + 9;

  TEST_CASE("relu_f32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{24} << 30)) {
    tut::check_ladder_at(ch01::relu_ladder(), ch01::grade_relu, kHuge);
  }

  TEST_CASE("mul_f16: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{24} << 30)) {
    tut::check_ladder_at(ch01::mul_ladder(), ch01::grade_mul, kHuge);
  }
}
