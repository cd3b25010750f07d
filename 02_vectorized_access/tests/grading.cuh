// How chapter 02's versions (and the exercise) are graded: tut::grade_elementwise with this
// chapter's references (fresh inputs with special values, poisoned output, guard check).
#pragma once

#include "reference.hpp"
#include "tut/elementwise_problem.hpp"
#include "versions.cuh"

namespace ch02 {

inline tut::VerifyResult grade_copy(CopyLaunch launch, std::int64_t n, int in_off = 0, int out_off = 0) {
  return tut::grade_elementwise<std::int32_t, std::int32_t>(launch, &copy_ref, 11, n, in_off, out_off);
}

inline tut::VerifyResult grade_mul(MulLaunch launch, std::int64_t n, int in_off = 0, int out_off = 0) {
  return tut::grade_elementwise<__half, __half, __half>(launch, &mul_ref, 12, n, in_off, out_off);
}

inline tut::VerifyResult grade_fma(FmaLaunch launch, std::int64_t n, int in_off = 0, int out_off = 0) {
  return tut::grade_elementwise<__half, __half, __half, __half>(launch, &fma_ref, 13, n, in_off, out_off);
}

}  // namespace ch02
