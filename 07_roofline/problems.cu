// Chapter 07's problems, in the order the benchmark runs them: what common builds the benchmark and
// the race module from (tut/chapter.hpp). The sweeps are compiled here, once.
#include "tut/chapter.hpp"
#include "versions.cuh"

const tut::Chapter& tut::chapter() {
  static const Chapter c{"07_roofline", "The empirical roofline: F FLOPs per element, 8 bytes per element, F = 1 to 2048",
                         {erase(ch07::sweep_f32_problem()), erase(ch07::sweep_f16_problem())}};
  return c;
}
