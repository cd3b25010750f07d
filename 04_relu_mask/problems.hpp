// Chapter 04's problems, for the programs that take them all: the benchmark (bench.cu) and the race
// module (race.cu). problems.cu defines them, so the ladders are compiled once for both.
#pragma once

#include "tut/problem.hpp"

#include <vector>

namespace ch04 {

// Every problem, in the order the benchmark runs them.
std::vector<tut::ProblemEntry> problems();

}  // namespace ch04
