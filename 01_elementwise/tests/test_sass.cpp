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
const tut::SassKernel& kernel(const char* fragment) { return tut::find_kernel(sass(), fragment); }
const bool kNoCuobjdump = !tut::find_cuobjdump();
// Demangled-name fragments that pick one instantiation each.
const char* kV0Relu = "v0_naive_kernel<ch01::Relu, float, float>";
const char* kV0Mul = "v0_naive_kernel<ch01::Mul, __half, __half, __half>";
const char* kV1Relu = "v1_grid_stride_kernel<ch01::Relu, float, float>";
const char* kV1Mul = "v1_grid_stride_kernel<ch01::Mul, __half, __half, __half>";
const char* kV2Relu = "v2_waves_kernel<256, ch01::Relu, float, float>";
const char* kV2Mul = "v2_waves_kernel<256, ch01::Mul, __half, __half, __half>";
const char* kV3Relu = "apply_generic<4, tut::ew::SimpleFactory<ch01::Relu>, float, float>";
const char* kV3Mul = "apply_generic<8, tut::ew::SimpleFactory<ch01::Mul>, __half, __half, __half>";
const char* kV4Relu = "apply_tiles<4, 256, tut::ew::SimpleFactory<ch01::Relu>, float, float>";
const char* kV4Mul = "apply_tiles<8, 256, tut::ew::SimpleFactory<ch01::Mul>, __half, __half, __half>";
}  // namespace

TEST_CASE("v0 moves one element per access: 32-bit (float) and 16-bit (half) loads and stores" *
          doctest::skip(kNoCuobjdump)) {
  const auto& relu = kernel(kV0Relu);
  CHECK(tut::count_memory_ops(relu, "LDG", 32) == 1);
  CHECK(tut::count_memory_ops(relu, "STG", 32) == 1);
  CHECK(tut::count_memory_ops(relu, "LDG", 128) == 0);
  const auto& mul = kernel(kV0Mul);
  CHECK(tut::count_memory_ops(mul, "LDG", 16) == 2);
  CHECK(tut::count_memory_ops(mul, "STG", 16) == 1);
}

TEST_CASE("bytes in flight per thread: the float loops are unrolled x4, the half loops are not" *
          doctest::skip(kNoCuobjdump)) {
  // What one thread issues before its first store: the bytes it waits on at once.
  CHECK(tut::load_bytes_before_first_store(kernel(kV0Relu)) == 4);
  CHECK(tut::load_bytes_before_first_store(kernel(kV0Mul)) == 4);  // two 2-byte loads
  for (const char* name : {kV1Relu, kV2Relu}) {
    INFO(name);
    CHECK(tut::load_bytes_before_first_store(kernel(name)) == 16);  // four 4-byte loads
  }
  for (const char* name : {kV1Mul, kV2Mul}) {
    INFO(name);
    CHECK(tut::load_bytes_before_first_store(kernel(name)) == 4);  // one 2-byte load per input
  }
  // v3's float loop is unrolled x4 as well: three 16-byte packs go out before the first store.
  CHECK(tut::load_bytes_before_first_store(kernel(kV3Relu)) == 48);
  CHECK(tut::load_bytes_before_first_store(kernel(kV3Mul)) == 32);  // one 16-byte pack per input
  // v4 has no loop: one pack per input per thread, then the store.
  CHECK(tut::load_bytes_before_first_store(kernel(kV4Relu)) == 16);
  CHECK(tut::load_bytes_before_first_store(kernel(kV4Mul)) == 32);
  CHECK(tut::loops(kernel(kV4Relu)).empty());
}

TEST_CASE("v1 and v2 have the same float loop: what changes between them is the grid, not the code" *
          doctest::skip(kNoCuobjdump)) {
  const auto l1 = tut::main_loop(kernel(kV1Relu), "LDG");
  const auto l2 = tut::main_loop(kernel(kV2Relu), "LDG");
  REQUIRE(!l1.empty());
  REQUIRE(!l2.empty());
  auto count = [](const std::vector<tut::SassInstruction>& loop, const char* op) {
    int n = 0;
    for (const auto& i : loop) n += i.opcode.rfind(op, 0) == 0;
    return n;
  };
  CHECK(count(l1, "LDG") == 4);
  CHECK(count(l2, "LDG") == 4);
  CHECK(count(l1, "STG") == 4);
  CHECK(count(l2, "STG") == 4);
}

TEST_CASE("v3's and v4's packed kernels load and store 128 bits at a time" * doctest::skip(kNoCuobjdump)) {
  for (const char* name : {kV3Relu, kV3Mul, kV4Relu, kV4Mul}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) >= 1);
    CHECK(tut::count_memory_ops(k, "STG", 128) >= 1);
    CHECK(tut::count_opcode(k, "LDL") == 0);  // no spills to local memory
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v3's half product uses paired instructions: exactly four per pack of eight" * doctest::skip(kNoCuobjdump)) {
  // ptxas issues some as HMUL2 and some as HFMA2.MMA x*y + (-0), the same product on a second pipe.
  const auto loop = tut::main_loop(kernel(kV3Mul), "LDG.E.128");
  REQUIRE(!loop.empty());
  int paired = 0, hmul2 = 0;
  for (const auto& i : loop) {
    hmul2 += i.opcode.rfind("HMUL2", 0) == 0;
    paired += i.opcode.rfind("HMUL2", 0) == 0 || i.opcode.rfind("HFMA2", 0) == 0;
  }
  CHECK(hmul2 >= 1);
  CHECK(paired == 4);
}

#if TUT_EXERCISES
TEST_CASE("exercise: the vectorized ReLU loads and stores 128 bits at a time" * doctest::skip(kNoCuobjdump)) {
  const auto& k = kernel("relu_vectorized_kernel");
  CHECK_MESSAGE(tut::count_memory_ops(k, "LDG", 128) >= 1, "no LDG.E.128 in ", k.name);
  CHECK_MESSAGE(tut::count_memory_ops(k, "STG", 128) >= 1, "no STG.E.128 in ", k.name);
}
#endif
