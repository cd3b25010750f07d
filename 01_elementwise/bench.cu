// Chapter 01 benchmark: every version of ReLU (f32) and multiply (f16), as a table and JSON.
//   bench_01_elementwise [--n N] [--problem relu_f32|mul_f16|all] [--version NAME|all] [--list]
//                        [--reps R] [--warmup W] [--json FILE] [--results-dir DIR] [--no-check]
#include "tut/elementwise_problem.hpp"
#include "reference.hpp"
#include "tut/bench.hpp"
#include "versions.cuh"

#include <iostream>
#include <optional>

int main(int argc, char** argv) {
  tut::BenchApp app("01_elementwise", "Element-wise kernels: ReLU on float32 and multiply on half");
  std::int64_t n = std::int64_t{1} << 28;
  app.cli().add_option("--n", n, "Elements per array (default 2^28)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 36));
  const auto& relu = ch01::relu_ladder();
  const auto& mul = ch01::mul_ladder();
  app.add_problem(relu.problem.name, relu.names());
  app.add_problem(mul.problem.name, mul.names());
  try {
    if (auto rc = app.parse(argc, argv)) return *rc;
    // Benchmark inputs are finite (no specials): NaN and inf are for the tests.
    const tut::InputSpec finite{-4.0, 4.0, false};
    std::optional<tut::ElementwiseInstance<float, float>> relu_inst;
    std::optional<tut::ElementwiseInstance<__half, __half, __half>> mul_inst;
    app.add_instance(relu_inst, relu, n, &ch01::relu_ref, finite);
    app.add_instance(mul_inst, mul, n, &ch01::mul_ref, finite);
    return app.run();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
