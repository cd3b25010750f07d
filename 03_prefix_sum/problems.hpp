// Chapter 03's problems, for the programs that take them all: the benchmark (bench.cu) and the race
// module (race.cu). problems.cu defines them, so the ladders are compiled once for both.
#pragma once

#include "tut/problem.hpp"

#include <cstdint>
#include <vector>

namespace ch03 {

// Every problem, in the order the benchmark runs them.
std::vector<tut::ProblemEntry> problems();

// Sets the segment of the block-wise problems' --n/--shape case (bench.cu's --segment).
void set_segment(std::int64_t segment);

}  // namespace ch03
