// Chapter 02's problems, in the order the benchmark runs them: what common builds the benchmark and
// the race module from (tut/chapter.hpp). The ladders are compiled here, once.
#include "tut/chapter.hpp"
#include "versions.cuh"

const tut::Chapter& tut::chapter() {
  static const Chapter c{"02_vectorized_access", "Vectorized access: int32 copies, half multiplies, half a*x + y",
                         {erase(ch02::copy_problem()), erase(ch02::mul_problem()), erase(ch02::fma_problem())}};
  return c;
}
