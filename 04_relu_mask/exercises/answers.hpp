// EXERCISE (chapter 04), part 2: three numeric questions. Replace each -1 with your answer; with
// -Dexercises=true, tests/test_cpu.cu checks them. Work them out from the lesson and the code, not
// by running anything.
#pragma once

namespace exercise {

// 1. A float32 AddReLU layer (y = relu(x + r)), forward and backward together, PyTorch's way (the
//    backward reads y): how many bytes per element move through device memory, counting each read
//    and write once?
inline constexpr long long kAddReluYBasedBytesPerElement = -1;

// 2. How many bytes does the bitmask of a 1000-element tensor occupy, padding included?
inline constexpr long long kMaskBytesFor1000 = -1;

// 3. fwd v3_ballot_vectorized on half, n = 2000, every pointer 16-byte aligned: how many mask words
//    do the warps of whole chunks store (the packed path)?
inline constexpr long long kV3HalfPackedWordsFor2000 = -1;

}  // namespace exercise
