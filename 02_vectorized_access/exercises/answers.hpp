// EXERCISE (chapter 02), part 2: three numeric questions. Replace each -1 with your answer; with
// -Dexercises=true, tests/test_cpu.cu checks them.
#pragma once

namespace exercise {

// 1. How many global load instructions does one thread of k1_from_global issue per pack of eight
//    halves, counting both inputs?
inline constexpr long long kK1LoadsPerPack = -1;

// 2. In k1, the 32 threads of a warp each load a 2-byte element 16 bytes apart from the next
//    thread's. How many 32-byte sectors does that one warp-wide load touch?
inline constexpr long long kK1SectorsPerRequest = -1;

// 3. What is the floor of copy_i32 at n = 2^28 on a GPU whose copy ceiling is 4000 GB/s, in
//    microseconds (rounded to the nearest whole one)?
inline constexpr long long kCopyFloorMicroseconds = -1;

}  // namespace exercise
