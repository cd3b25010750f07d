// EXERCISE (chapter 01), part 2: four numeric questions. Replace each -1 with your answer; with
// -Dexercises=true, tests/test_cpu.cu checks them. Work them out from the lesson, not by running.
#pragma once

namespace exercise {

// 1. How many bytes per element does the floor of mul_f16 count (reads and writes)?
inline constexpr long long kMulBytesPerElement = -1;

// 2. How many blocks does v2_waves launch for n = 2^28 on a GPU with 132 SMs and at most 2048
//    resident threads per SM (256 threads per block, 32 waves)?
inline constexpr long long kV2Blocks = -1;

// 3. v3's half multiply loads one 16-byte pack of x and one of y before its first store. At 2048
//    resident threads per SM, how many KiB does one SM have in flight?
inline constexpr long long kV3HalfKiBPerSm = -1;

// 4. block_size caps an SM at 1024 resident threads. How many KiB does one SM then have in flight
//    in v4's ReLU (one 16-byte pack per thread), if every resident thread waits on its load?
inline constexpr long long kReluCappedKiBPerSm = -1;

}  // namespace exercise
