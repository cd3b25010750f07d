// Exercise 03, part 2: three numbers. Replace each -1 with your answer; the CPU tests check them
// when the build has -Dexercises=true. Work them out from the kernels' code, not by running them.
#pragma once

namespace exercise {

// 1. With segments of 100 elements, how many __syncthreads() does one block of v1_shared execute
//    for one segment (the barrier after the load included)?
inline constexpr long long kV1BarriersSegment100 = -1;

// 2. How many bytes does v6_reduce_then_scan move through DRAM for n = 10^8 int32 elements,
//    counting every read of x and every write of y (leave out the small partials array)?
inline constexpr long long kV6BytesFor100M = -1;

// 3. How many tiles does v7_decoupled_lookback cut n = 10^8 elements into?
inline constexpr long long kV7TilesFor100M = -1;

}  // namespace exercise
