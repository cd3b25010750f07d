// A chapter's problems, defined once in its problems.cu and read by everything common builds for
// it: the benchmark (common/src/bench_main.cpp), the race module PyTorch's process loads
// (common/src/race_module.cpp), and the tools through them.
//
//   // problems.cu
//   #include "tut/chapter.hpp"
//   #include "versions.cuh"
//   const tut::Chapter& tut::chapter() {
//     static const Chapter c{"04_relu_mask", "ReLU with a mask for its backward",
//                            {erase(ch04::relu_mask_f32()), erase(ch04::relu_backward_f32()), ...}};
//     return c;
//   }
#pragma once

#include "tut/problem.hpp"

#include <string>
#include <vector>

namespace tut {

struct Chapter {
  std::string name;         // the folder: "04_relu_mask"
  std::string description;  // one line for the benchmark's header and --help
  std::vector<ProblemEntry> problems;  // in the order the benchmark runs them
};

// Defined by each chapter, in its problems.cu.
const Chapter& chapter();

}  // namespace tut
