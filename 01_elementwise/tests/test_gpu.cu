// Every registered version against the CPU reference on the GPU, and the grader against
// known-wrong kernels.
#include <doctest/doctest.h>

#include "tests/wrong_solutions.cuh"
#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "versions.cuh"

#include <string>

namespace {
// One graded launch of a launcher that is not in the registry (the known-wrong kernels).
tut::CheckResult grade_relu(ch01::ReluInstance::Launch launch, std::int64_t n) {
  const auto v = tut::elementwise_version<float, float>("wrong", "", launch, {});
  return tut::grade(ch01::relu_problem(), v, tut::flat_case(n));
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("relu_f32: every version matches the reference at awkward sizes" * tut::needs_gpu()) {
    tut::check_sizes(ch01::relu_problem());
  }

  TEST_CASE("mul_f16: every version matches the reference at awkward sizes" * tut::needs_gpu()) {
    tut::check_sizes(ch01::mul_problem());
  }

  TEST_CASE("relu_f32: versions stay correct with every operand moved 0-7 elements off alignment" * tut::needs_gpu()) {
    tut::check_offsets(ch01::relu_problem());
  }

  TEST_CASE("mul_f16: versions stay correct with every operand moved 0-7 elements off alignment" * tut::needs_gpu()) {
    tut::check_offsets(ch01::mul_problem());
  }

  TEST_CASE("the grader rejects known-wrong solutions" * tut::needs_gpu()) {
    // Dropping the tail passes when n is a multiple of 4 and fails otherwise: why the sizes are odd.
    CHECK(grade_relu(ch01::wrong::drops_tail, 1024).ok());
    const auto tail = grade_relu(ch01::wrong::drops_tail, 1027);
    CHECK_FALSE(tail.ok());
    CHECK(tail["y"].mismatches == 3);
    CHECK_FALSE(grade_relu(ch01::wrong::drops_tail, 33).ok());
    // fmaxf turns NaN into 0; the inputs contain NaN, so this must fail.
    CHECK_FALSE(grade_relu(ch01::wrong::swallows_nan, 4099).ok());
    // A ReLU that turns -0 into +0 differs only in the sign of zero: the bitwise rule catches it.
    const auto sign = grade_relu(ch01::wrong::loses_negative_zero, 4099);
    CHECK_FALSE(sign.ok());
    CHECK(sign.summary().find("-0") != std::string::npos);
    // Writing past n is only visible through the guard elements.
    const auto overrun = grade_relu(ch01::wrong::writes_past_end, 1001);
    CHECK_FALSE(overrun.ok());
    CHECK(overrun.summary().find("outside [0, n)") != std::string::npos);
    CHECK(grade_relu(ch01::wrong::writes_past_end, 1000).ok());
  }

  TEST_CASE("the generic template takes the packed path only when every pointer is aligned" * tut::needs_gpu()) {
    // The decision launch() makes, for the pointers the offset tests use.
    tut::DeviceBuffer<float> f(64);
    const float* in = f.data();
    CHECK(tut::ew::pack_for(f.data(), in + 4) == 4);
    CHECK(tut::ew::pack_for(f.data(), in + 1) == 1);
    CHECK(tut::ew::pack_for(f.data() + 2, in + 4) == 1);
    tut::DeviceBuffer<__half> h(64);
    const __half* hin = h.data();
    CHECK(tut::ew::pack_for(h.data(), hin + 8, hin + 16) == 8);
    CHECK(tut::ew::pack_for(h.data(), hin + 8, hin + 4) == 1);
    // And both paths give the reference's answer: one aligned run, one with the input moved.
    const auto& v3 = ch01::relu_problem().versions.at(3);
    REQUIRE(v3.name == "v3_generic");
    CHECK(tut::grade(ch01::relu_problem(), v3, tut::flat_case(4099)).ok());
    CHECK(tut::grade(ch01::relu_problem(), v3, tut::flat_case(4099),
                     tut::test_options("relu_f32", tut::flat_case(4099), {{"x", 1}}))
              .ok());
    CHECK(tut::ew::launch(tut::ew::SimpleFactory<ch01::Relu>{}, nullptr, -1, f.data(), in) == cudaErrorInvalidValue);
    CHECK(tut::ew::launch(tut::ew::SimpleFactory<ch01::Relu>{}, nullptr, 0, f.data(), in) == cudaSuccess);
  }
}

// More than 2^31 elements: 32-bit indexing would wrap here. ReLU needs ~17 GB of device memory and
// the product ~13 GB; run with `meson test -C build --suite large`.
TEST_SUITE("large") {
  const std::int64_t kHuge = (std::int64_t{1} << 31) + 9;

  TEST_CASE("relu_f32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{24} << 30)) {
    tut::check_all_at(ch01::relu_problem(), tut::flat_case(kHuge));
  }

  TEST_CASE("mul_f16: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{24} << 30)) {
    tut::check_all_at(ch01::mul_problem(), tut::flat_case(kHuge));
  }
}
