// Chapter 01 benchmark: every version of ReLU (f32) and multiply (f16), as a table and JSON.
// `bench_01_elementwise --help` lists the options; --list the problems, cases and versions.
#include "tut/bench.hpp"
#include "problems.hpp"

int main(int argc, char** argv) {
  tut::BenchApp app("01_elementwise", "Element-wise kernels: ReLU on float32 and multiply on half");
  app.add(ch01::problems());
  return app.main(argc, argv);
}
