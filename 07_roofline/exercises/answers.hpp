// Exercise 07: three numbers from the roofline model (exercises/README.md gives the kernel and
// both GPUs' ceilings). Replace each -1 with your answer; the CPU tests check them when the build has
// -Dexercises=true, and a wrong answer is reported with its hint, never with the right value.
#pragma once

namespace exercise {

// 1. On the H100 of the README: is the kernel memory-bound (0) or math-bound (1)?
inline constexpr long long kBoundOnH100 = -1;

// 2. The kernel's predicted time on the other GPU, in microseconds, rounded to the nearest whole one.
inline constexpr long long kPredictedMicrosecondsOnOther = -1;

// 3. On the H100, the fraction of the roof the measured kernel reaches at its intensity, in percent,
//    rounded down to a whole percent.
inline constexpr long long kPercentOfRoofOnH100 = -1;

}  // namespace exercise
