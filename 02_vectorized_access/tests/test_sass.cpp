// The lesson's claims about the generated code, checked on the built benchmark's SASS
// (cuobjdump; no GPU needed). Where the compiler disagrees with the source this chapter follows,
// the test states what the compiler really does.
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
int wide(const tut::SassKernel& k, int bits) {
  return tut::count_memory_ops(k, "LDG", bits) + tut::count_memory_ops(k, "STG", bits);
}
const bool kNoCuobjdump = !tut::find_cuobjdump();
}  // namespace

TEST_CASE("copy_int4 moves 128 bits per access, copy_int2 64, copy_scalar 32" * doctest::skip(kNoCuobjdump)) {
  const auto& v4 = kernel("copy_kernel<int4>");
  const auto& v2 = kernel("copy_kernel<int2>");
  const auto& v1 = kernel("copy_kernel<int>");
  CHECK(tut::count_memory_ops(v4, "LDG", 128) >= 1);
  CHECK(tut::count_memory_ops(v4, "STG", 128) >= 1);
  CHECK(wide(v4, 64) == 0);
  CHECK(tut::count_memory_ops(v2, "LDG", 64) >= 1);
  CHECK(tut::count_memory_ops(v2, "STG", 64) >= 1);
  CHECK(wide(v2, 128) == 0);
  CHECK(wide(v1, 64) + wide(v1, 128) == 0);
  // The tail is scalar in every width: 32-bit accesses appear in the vector kernels too.
  CHECK(tut::count_memory_ops(v4, "LDG", 32) >= 1);
  CHECK(tut::count_memory_ops(v2, "LDG", 32) >= 1);
}

TEST_CASE("bytes in flight per thread: what each copy issues before its first store" * doctest::skip(kNoCuobjdump)) {
  // The grid-stride copies: the compiler unrolls each loop; how far depends on the width.
  const int scalar = tut::load_bytes_before_first_store(kernel("copy_kernel<int>"));
  const int v2 = tut::load_bytes_before_first_store(kernel("copy_kernel<int2>"));
  const int v4 = tut::load_bytes_before_first_store(kernel("copy_kernel<int4>"));
  MESSAGE("bytes before the first store: copy_scalar " << scalar << ", copy_int2 " << v2 << ", copy_int4 " << v4);
  CHECK(scalar == 16);
  CHECK(v2 == 32);
  CHECK(v4 == 32);
  // The tiles: every load of the tile goes out before the first store.
  CHECK(tut::load_bytes_before_first_store(kernel("copy_tiles_kernel<256, 4>")) == 64);
  CHECK(tut::load_bytes_before_first_store(kernel("copy_tiles_kernel<1024, 2>")) == 32);
  CHECK(tut::load_bytes_before_first_store(kernel("copy_tiles_kernel<256, 1>")) == 16);
}

TEST_CASE("k0, k2, k3 and k4 load and store 128 bits; k1 moves one half per access" * doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"mul_k0_packed", "mul_k2_cast_in_loop", "mul_k3_half_index", "mul_k4_int4_container"}) {
    const auto& k = kernel(name);
    INFO(name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) == 2);  // x and y
    CHECK(tut::count_memory_ops(k, "STG", 128) == 1);  // z
  }
  const auto& k1 = kernel("mul_k1_from_global");
  CHECK(wide(k1, 64) + wide(k1, 128) == 0);
  // Eight 16-bit loads per operand per pack, eight stores: 16 + 8 in the loop.
  const auto loop = tut::main_loop(k1, "LDG");
  int loads = 0, stores = 0;
  for (const auto& i : loop) {
    loads += i.opcode.rfind("LDG.E.U16", 0) == 0;
    stores += i.opcode.rfind("STG.E.U16", 0) == 0;
  }
  CHECK(loads == 16);
  CHECK(stores == 8);
}

TEST_CASE("a cast inside the loop and an int4 container change nothing: k2 and k4 are k0" *
          doctest::skip(kNoCuobjdump)) {
  CHECK(tut::same_code(kernel("mul_k0_packed"), kernel("mul_k2_cast_in_loop")));
  CHECK(tut::same_code(kernel("mul_k0_packed"), kernel("mul_k4_int4_container")));
}

TEST_CASE("k3's half-element index costs nothing per iteration: the x8 is hoisted out of the loop" *
          doctest::skip(kNoCuobjdump)) {
  const auto& k0 = kernel("mul_k0_packed");
  const auto& k3 = kernel("mul_k3_half_index");
  CHECK_FALSE(tut::same_code(k0, k3));  // the code does differ...
  const auto loop0 = tut::main_loop(k0, "LDG.E.128");
  const auto loop3 = tut::main_loop(k3, "LDG.E.128");
  REQUIRE(!loop0.empty());
  REQUIRE(!loop3.empty());
  CHECK(loop3.size() <= loop0.size());  // ...but not inside the loop
  MESSAGE("loop body: k0 " << loop0.size() << " instructions, k3 " << loop3.size() << "; whole kernel: k0 "
                           << k0.code.size() << ", k3 " << k3.code.size());
}

TEST_CASE("the half products are paired: two per instruction" * doctest::skip(kNoCuobjdump)) {
  // Eight __hmul calls per pack become four paired instructions: ptxas issues some as HMUL2 and
  // some as HFMA2.MMA x*y + (-0), the same product on another pipe.
  const auto loop = tut::main_loop(kernel("mul_k0_packed"), "LDG.E.128");
  int paired = 0;
  for (const auto& i : loop) paired += i.opcode.rfind("HMUL2", 0) == 0 || i.opcode.rfind("HFMA2", 0) == 0;
  CHECK(paired == 4);
}

TEST_CASE("no version spills to local memory" * doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"copy_tiles_kernel<256, 1>", "copy_tiles_kernel<256, 4>", "copy_tiles_kernel<1024, 2>", "copy_kernel<int4>", "copy_kernel<int2>", "copy_kernel<int>", "mul_k0_packed",
                           "mul_k1_from_global", "mul_k2_cast_in_loop", "mul_k3_half_index", "mul_k4_int4_container"}) {
    INFO(name);
    CHECK(tut::count_opcode(kernel(name), "LDL") + tut::count_opcode(kernel(name), "STL") == 0);
  }
}

#if TUT_EXERCISES
TEST_CASE("exercise: a*x + y loads and stores 128 bits at a time" * doctest::skip(kNoCuobjdump)) {
  const auto& k = kernel("fma_f16_kernel");
  CHECK_MESSAGE(tut::count_memory_ops(k, "LDG", 128) >= 3, "expected three LDG.E.128 (a, x, y) in ", k.name);
  CHECK_MESSAGE(tut::count_memory_ops(k, "STG", 128) >= 1, "expected an STG.E.128 in ", k.name);
}
#endif
