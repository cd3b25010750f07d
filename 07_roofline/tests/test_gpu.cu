// The sweep's versions against the host reference on the GPU: every F, awkward sizes, operands off
// their alignment (float), and past 2^31 elements.
#include <doctest/doctest.h>

#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "versions.cuh"

#include <vector>

namespace {
// Every F at a few sizes, and the sizes at F = 256.
std::vector<tut::Case> cases(const tut::ProblemEntry& p) {
  std::vector<tut::Case> out;
  for (std::int64_t f = ch07::kMinFlops; f <= ch07::kMaxFlops; f *= 2)
    out.push_back(tut::make_case(p, {4099}, {{"flops", std::to_string(f)}}));
  // 18437: 18 (or 9) whole tiles, so the last block takes fewer tiles than the others, and a tail.
  for (std::int64_t n : {1, 31, 33, 1000, 18437, (1 << 20) + 1})
    out.push_back(tut::make_case(p, {n}, {{"flops", "256"}}));
  return out;
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("sweep_f32: every unroll form at every F matches the reference, NaN and infinities included" *
            tut::needs_gpu()) {
    tut::check_cases(ch07::sweep_f32_problem(), cases(tut::erase(ch07::sweep_f32_problem())));
  }
  TEST_CASE("sweep_f16: every unroll form at every F matches the reference" * tut::needs_gpu()) {
    tut::check_cases(ch07::sweep_f16_problem(), cases(tut::erase(ch07::sweep_f16_problem())));
  }
  TEST_CASE("sweep_f32 with x and y moved 0-7 elements off their alignment" * tut::needs_gpu()) {
    const auto p = tut::erase(ch07::sweep_f32_problem());
    tut::check_offsets(ch07::sweep_f32_problem(), {tut::make_case(p, {1000}, {{"flops", "8"}})});
  }
}

// More than 2^31 elements (about 17 GB of device memory): the index is 64-bit.
TEST_SUITE("large") {
  TEST_CASE("sweep_f32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{24} << 30)) {
    const auto p = tut::erase(ch07::sweep_f32_problem());
    tut::check_all_at(ch07::sweep_f32_problem(), tut::make_case(p, {(std::int64_t{1} << 31) + 9}, {{"flops", "8"}}));
  }
}
