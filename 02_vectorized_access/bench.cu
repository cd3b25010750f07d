// Chapter 02 benchmark: int32 copies of three widths and two tile shapes against cudaMemcpyAsync,
// the five half multiplies against the generic template, and the three-input a*x + y.
// `bench_02_vectorized_access --help` lists the options; --list the problems, cases and versions.
#include "tut/bench.hpp"
#include "problems.hpp"

int main(int argc, char** argv) {
  tut::BenchApp app("02_vectorized_access", "Vectorized access: int32 copies, half multiplies, half a*x + y");
  app.add(ch02::problems());
  return app.main(argc, argv);
}
