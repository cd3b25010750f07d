// EXERCISE (chapter 02), part 2: three numeric questions. Replace each -1 with your answer; with
// -Dexercises=true, tests/test_cpu.cu checks them.
#pragma once

namespace exercise {

// 1. Suppose fma_f16 (z = a * x + y: three half inputs) were written in k1_from_global's style,
//    naming one element of each pack at a time. How many global load instructions would one thread
//    issue per pack of eight halves?
inline constexpr long long kK1StyleFmaLoadsPerPack = -1;

// 2. A warp's 32 threads each load one 2-byte half, 8 bytes from the next thread's (k1's access,
//    with packs of four halves instead of eight); thread 0's address is the start of a 32-byte
//    sector. How many 32-byte sectors does that one warp-wide load touch?
inline constexpr long long kHalfStride8SectorsPerRequest = -1;

// 3. What is the floor of copy_i32 at n = 2^28 on a GPU whose copy ceiling is 4000 GB/s, in
//    microseconds (rounded to the nearest whole one)?
inline constexpr long long kCopyFloorMicroseconds = -1;

}  // namespace exercise
