// Chapter 02 benchmark: int32 copies of three widths against cudaMemcpyAsync, the five half
// multiplies against chapter 01's generic template, and the three-input a*x + y.
//   bench_02_vectorized_access [--n N] [--problem copy_i32|mul_f16|fma_f16|all] [--version NAME|all]
//                              [--list] [--reps R] [--warmup W] [--json FILE] [--results-dir DIR] [--no-check]
#include "reference.hpp"
#include "tut/bench.hpp"
#include "tut/elementwise_problem.hpp"
#include "versions.cuh"

#include <iostream>
#include <optional>

int main(int argc, char** argv) {
  tut::BenchApp app("02_vectorized_access", "Vectorized access: int32 copies, half multiplies, half a*x + y");
  std::int64_t n = std::int64_t{1} << 28;
  app.cli().add_option("--n", n, "Elements per array (default 2^28)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 36));
  const auto& copy = ch02::copy_ladder();
  const auto& mul = ch02::mul_ladder();
  const auto& fma = ch02::fma_ladder();
  app.add_problem(copy.problem.name, copy.names());
  app.add_problem(mul.problem.name, mul.names());
  app.add_problem(fma.problem.name, fma.names());
  try {
    if (auto rc = app.parse(argc, argv)) return *rc;
    const tut::InputSpec finite{-4.0, 4.0, false};
    std::optional<tut::ElementwiseInstance<std::int32_t, std::int32_t>> copy_inst;
    std::optional<tut::ElementwiseInstance<__half, __half, __half>> mul_inst;
    std::optional<tut::ElementwiseInstance<__half, __half, __half, __half>> fma_inst;
    app.add_instance(copy_inst, copy, n, &ch02::copy_ref, finite);
    app.add_instance(mul_inst, mul, n, &ch02::mul_ref, finite);
    app.add_instance(fma_inst, fma, n, &ch02::fma_ref, finite);
    return app.run();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
