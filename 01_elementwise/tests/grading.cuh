// How chapter 01's versions (and the student's exercise) are graded: fresh random inputs with NaN,
// ±inf and ±0, an output full of poison, a launch, and a comparison of every element with the
// CPU reference plus a check that nothing outside [0, n) was written (tut/elementwise_problem.hpp).
#pragma once

#include "reference.hpp"
#include "tut/elementwise_problem.hpp"
#include "versions.cuh"

namespace ch01 {

inline tut::VerifyResult grade_relu(ReluLaunch launch, std::int64_t n, int in_off = 0, int out_off = 0) {
  return tut::grade_elementwise<float, float>(launch, &relu_ref, 1, n, in_off, out_off);
}

inline tut::VerifyResult grade_mul(MulLaunch launch, std::int64_t n, int in_off = 0, int out_off = 0) {
  return tut::grade_elementwise<__half, __half, __half>(launch, &mul_ref, 2, n, in_off, out_off);
}

}  // namespace ch01
