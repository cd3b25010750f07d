// EXERCISE (chapter 01), part 2: four numeric questions. Replace each -1 with your answer; with
// -Dexercises=true, tests/test_cpu.cu checks them. Work them out from the lesson and the code, not
// by running anything.
#pragma once

namespace exercise {

// 1. The floor of mul_f16 counts each input read and the output written once. How many bytes per
//    element would it count for the same multiply on float32 (z = x * y, x, y and z all float)?
inline constexpr long long kMulF32BytesPerElement = -1;

// 2. How many blocks does v2_waves launch for n = 5,000,000 on a GPU with 108 SMs and at most 2048
//    resident threads per SM (an A100; 256 threads per block, 32 waves)?
inline constexpr long long kV2Blocks = -1;

// 3. v3's half multiply loads one 16-byte pack of x and one of y before its first store. At 2048
//    resident threads per SM, how many KiB does one SM have in flight?
inline constexpr long long kV3HalfKiBPerSm = -1;

// 4. block_size caps an SM at 1024 resident threads. How many KiB does one SM then have in flight
//    in v4's ReLU (one 16-byte pack per thread), if every resident thread waits on its load?
inline constexpr long long kReluCappedKiBPerSm = -1;

}  // namespace exercise
