// Chapter 04 benchmark: every version of the ReLU and AddReLU forwards (y and a mask) and of the
// ReLU backward, on float32 and half, as tables and JSON. `bench_04_relu_mask --help` lists the
// options; --list the problems, cases and versions.
#include "tut/bench.hpp"
#include "problems.hpp"

int main(int argc, char** argv) {
  tut::BenchApp app("04_relu_mask", "ReLU with a mask for its backward: byte masks, per-thread bytes, warp ballots");
  app.add(ch04::problems());
  return app.main(argc, argv);
}
