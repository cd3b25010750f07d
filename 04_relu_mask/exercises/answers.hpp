// EXERCISE (chapter 04), part 2: three numeric questions. Replace each -1 with your answer; with
// -Dexercises=true, tests/test_cpu.cu checks them. Work them out from the lesson, not by running.
#pragma once

namespace exercise {

// 1. A float32 ReLU layer's forward and backward together, PyTorch's way (the backward reads y):
//    how many bytes per element move through device memory, counting each read and write once?
inline constexpr long long kYBasedBytesPerElement = -1;

// 2. How many bytes does the bitmask of a 1000-element tensor occupy, padding included?
inline constexpr long long kMaskBytesFor1000 = -1;

// 3. fwd v3_ballot_vectorized on half: how many mask words does one warp store per chunk?
inline constexpr long long kV3HalfWordsPerWarp = -1;

}  // namespace exercise
