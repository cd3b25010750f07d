// Exercise 05, part 2: three numbers (exercises/README.md). tests/test_cpu.cu checks them in a
// build with -Dexercises=true; a wrong one fails with its question's number and a hint, never the
// expected value. -1 means not answered yet.
#pragma once

namespace exercise {

// 1. A float32 BN+ReLU layer, forward and backward together, each at its single-read count: how
//    many bytes move through device memory for every 32 elements of x?
inline constexpr long long kFwdBwdBytesPer32Elements = -1;

// 2. NHWC with C = 33, float32, 16-byte packs: how many elements does one row of version 2's walk
//    hold (kernels/layout.cuh)?
inline constexpr long long kNhwcRowElementsC33 = -1;

// 3. And how many packs is that row?
inline constexpr long long kNhwcRowPacksC33 = -1;

}  // namespace exercise
