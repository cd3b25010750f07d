// The lesson's claims about generated code, checked on the built benchmark's SASS (cuobjdump, no
// GPU needed).
#include <doctest/doctest.h>

#include "tut/sass.hpp"

#include <string>
#include <vector>

namespace {
const std::vector<tut::SassKernel>& sass() {
  static const auto k = tut::disassemble(tut::sass_subject());
  return k;
}
// Demangled-name fragments that pick one instantiation each.
const char* kV0Relu = "v0_naive_kernel<ch01::Relu, float, float>";
const char* kV0Mul = "v0_naive_kernel<ch01::Mul, __half, __half, __half>";
const char* kV3Relu = "apply_generic<4, ew::SimpleFactory<ch01::Relu>, float, float>";
const char* kV3Mul = "apply_generic<8, ew::SimpleFactory<ch01::Mul>, __half, __half, __half>";
}  // namespace

TEST_CASE("v0 moves one element per access: 32-bit (float) and 16-bit (half) loads and stores" *
          doctest::skip(!tut::find_cuobjdump())) {
  const auto& relu = tut::find_kernel(sass(), kV0Relu);
  CHECK(tut::count_memory_ops(relu, "LDG", 32) == 1);
  CHECK(tut::count_memory_ops(relu, "STG", 32) == 1);
  CHECK(tut::count_memory_ops(relu, "LDG", 128) == 0);
  const auto& mul = tut::find_kernel(sass(), kV0Mul);
  CHECK(tut::count_memory_ops(mul, "LDG", 16) == 2);
  CHECK(tut::count_memory_ops(mul, "STG", 16) == 1);
}

TEST_CASE("v3's packed kernels load and store 128 bits at a time" * doctest::skip(!tut::find_cuobjdump())) {
  for (const char* name : {kV3Relu, kV3Mul}) {
    const auto& k = tut::find_kernel(sass(), name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) >= 1);
    CHECK(tut::count_memory_ops(k, "STG", 128) >= 1);
    CHECK(tut::count_opcode(k, "LDL") == 0);  // no spills to local memory
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v3's half product uses paired instructions, two products each" * doctest::skip(!tut::find_cuobjdump())) {
  // 8 halves per pack need 4 paired products. ptxas issues some as HMUL2 and some as
  // HFMA2.MMA x*y + (-0), which is the same product on a second pipe.
  const auto& k = tut::find_kernel(sass(), kV3Mul);
  CHECK(tut::count_opcode(k, "HMUL2") >= 1);
  CHECK(tut::count_opcode(k, "HMUL2") + tut::count_opcode(k, "HFMA2") >= 4);
}

#if TUT_EXERCISES
TEST_CASE("exercise: the vectorized ReLU loads and stores 128 bits at a time" * doctest::skip(!tut::find_cuobjdump())) {
  const auto& k = tut::find_kernel(sass(), "relu_vectorized_kernel");
  CHECK_MESSAGE(tut::count_memory_ops(k, "LDG", 128) >= 1, "no LDG.E.128 in ", k.name);
  CHECK_MESSAGE(tut::count_memory_ops(k, "STG", 128) >= 1, "no STG.E.128 in ", k.name);
}
#endif
