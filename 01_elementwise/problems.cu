// Chapter 01's problems, in the order the benchmark runs them: what common builds the benchmark and
// the race module from (tut/chapter.hpp). The ladders are compiled here, once.
#include "tut/chapter.hpp"
#include "versions.cuh"

const tut::Chapter& tut::chapter() {
  static const Chapter c{"01_elementwise", "Element-wise kernels: ReLU on float32 and multiply on half",
                         {erase(ch01::relu_problem()), erase(ch01::mul_problem())}};
  return c;
}
