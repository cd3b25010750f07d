// Exercise 03, part 2: three numbers. Replace each -1 with your answer; the CPU tests check them
// when the build has -Dexercises=true.
#pragma once

namespace exercise {

// 1. How many __syncthreads() does one block of v1_shared execute for one full 1024-element
//    segment (the barrier after the load included)?
inline constexpr long long kV1BarriersPerSegment = -1;

// 2. How many bytes per element does v6_reduce_then_scan move through DRAM for int32, counting
//    every read of x and every write of y (leave out the small partials array)?
inline constexpr long long kV6BytesPerElement = -1;

// 3. How many tiles does v7_decoupled_lookback cut n = 2^28 elements into?
inline constexpr long long kV7Tiles = -1;

}  // namespace exercise
