// Exercise 05, part 2: three numbers (exercises/README.md). tests/test_cpu.cu checks them in a
// build with -Dexercises=true; a wrong one fails with its question's number and a hint.
#pragma once

namespace exercise::answers {

// 1. Bytes per float element through device memory for a BN+ReLU layer's forward and backward
//    together, each at its single-read count.
inline constexpr double fwd_bwd_bytes_per_element = 0;

// 2. NHWC with C = 33, float, 16-byte packs: how many elements does one row of version 2's walk
//    hold (kernels/layout.cuh)?
inline constexpr long nhwc_row_elements_c33 = 0;

// 3. And how many packs is that?
inline constexpr long nhwc_packs_per_row_c33 = 0;

}  // namespace exercise::answers
