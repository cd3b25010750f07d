// How every version (and the student's exercise) is graded: fresh random inputs with NaN, ±inf
// and ±0, an output full of poison, a launch, and a comparison of every element with the CPU
// reference plus a check that nothing outside [0, n) was written.
#pragma once

#include "problems.cuh"
#include "reference.hpp"
#include "tut/random.hpp"
#include "versions.cuh"

#include <cstdint>
#include <vector>

namespace ch01 {

// The awkward sizes: empty, single, around a warp, around a block, primes, 2^20+1, and one large
// size that is not a multiple of any pack width.
inline const std::vector<std::int64_t> kGradeSizes = {0,    1,    7,    31,          32,
                                                      33,   255,  1000, 4099,        (1 << 20) + 1,
                                                      (std::int64_t{1} << 26) + 3};

// A seed per (case, n, offsets), derived from the printed test seed.
inline std::uint64_t case_seed(std::uint64_t salt, std::int64_t n, int in_off, int out_off) {
  return tut::splitmix64(tut::test_seed() ^ tut::splitmix64(salt * 1000003 + static_cast<std::uint64_t>(n) * 64 +
                                                            static_cast<std::uint64_t>(in_off) * 8 + out_off));
}

inline tut::VerifyResult grade_relu(ReluLaunch launch, std::int64_t n, int in_off = 0, int out_off = 0) {
  ElementwiseInstance<float, float> inst(n, case_seed(1, n, in_off, out_off), &relu_ref, InputSpec{}, tut::kExact,
                                         in_off, out_off);
  inst.poison(nullptr);
  inst.run(launch, nullptr);
  return inst.check();
}

inline tut::VerifyResult grade_mul(MulLaunch launch, std::int64_t n, int in_off = 0, int out_off = 0) {
  ElementwiseInstance<__half, __half, __half> inst(n, case_seed(2, n, in_off, out_off), &mul_ref, InputSpec{},
                                                   tut::kExact, in_off, out_off);
  inst.poison(nullptr);
  inst.run(launch, nullptr);
  return inst.check();
}

}  // namespace ch01
