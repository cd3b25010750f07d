// The sweep's claims about generated code, on the built benchmark's SASS (cuobjdump, no GPU): the
// work is not optimized away, and the three unroll forms compile as the lesson says.
#include <doctest/doctest.h>

#include "../kernels/sweep_shape.hpp"  // the shape the kernels are built with
#include "tut/sass.hpp"

#include <string>
#include <vector>

namespace {
const std::vector<tut::SassKernel>& sass() {
  static const auto k = tut::disassemble(tut::sass_subject());
  return k;
}
const tut::SassKernel& kernel(const std::string& fragment) { return tut::find_kernel(sass(), fragment); }
const bool kNoCuobjdump = !tut::find_cuobjdump();

// HFMA2s that do arithmetic: the compiler also writes `HFMA2.MMA Rd, -RZ, RZ, 0, 0` to set a
// register to zero, and issues the chain's HFMA2s to both pipes (HFMA2 and HFMA2.MMA).
int count_hfma2(const tut::SassKernel& k) {
  int n = 0;
  for (const auto& i : k.code)
    if (i.opcode.rfind("HFMA2", 0) == 0 && i.text.find("-RZ, RZ, 0, 0") == std::string::npos) ++n;
  return n;
}
}  // namespace

// The pack kernel of F = f, in unroll form u, on float or on pairs of halves, as built
// (kernels/sweep_shape.hpp: kPacksF32 / kPacksF16 16-byte packs per thread).
std::string pack(int f, int u, const char* type = "float") {
  const int packs = std::string(type) == "float" ? ch07::kPacksF32 : ch07::kPacksF16;
  return "sweep_pack_kernel<" + std::to_string(f) + ", " + std::to_string(u) + ", " + std::to_string(packs) + ", " +
         type + ",";
}

// The one loop of the fully unrolled kernel is the walk over a block's tiles: every FMA of a tile is
// inside it, straight-line, and it is the only loop.
TEST_CASE("full unrolling: exactly 4 x packs x F / 2 FFMAs per thread, none dropped, no FMA loop" *
          doctest::skip(kNoCuobjdump)) {
  constexpr int values = 4 * ch07::kPacksF32;
  for (int f : {2, 8, 64, 2048}) {
    const auto& k = kernel(pack(f, 0));
    CHECK_MESSAGE(tut::count_opcode(k, "FFMA") == values * f / 2, k.name);
    REQUIRE(tut::loops(k).size() == 1);
    int in_loop = 0;
    for (const auto& i : tut::loop_around(k, "FFMA")) in_loop += i.opcode.rfind("FFMA", 0) == 0;
    CHECK_MESSAGE(in_loop == values * f / 2, k.name);
    CHECK(tut::count_opcode(k, "LDL") + tut::count_opcode(k, "STL") == 0);
  }
  CHECK(tut::count_opcode(kernel(pack(1, 0)), "FADD") == values);
  CHECK(count_hfma2(kernel(pack(2048, 0, "__half2"))) == 4 * ch07::kPacksF16 * 2048 / 4);
  // 16-byte loads and stores: a tile's packs before the loop, the next tile's inside it.
  CHECK(tut::count_memory_ops(kernel(pack(64, 0)), "LDG", 128) == 2 * ch07::kPacksF32);
  CHECK(tut::count_memory_ops(kernel(pack(64, 0)), "STG", 128) == ch07::kPacksF32);
  CHECK(tut::count_memory_ops(kernel(pack(64, 0, "__half2")), "LDG", 128) == 2 * ch07::kPacksF16);
  CHECK(tut::count_memory_ops(kernel(pack(64, 0, "__half2")), "STG", 128) == ch07::kPacksF16);
}

TEST_CASE("#pragma unroll 1: one FFMA per chain per loop iteration; unroll 4: four" * doctest::skip(kNoCuobjdump)) {
  constexpr int values = 4 * ch07::kPacksF32;
  for (int unroll : {1, 4}) {
    const auto& k = kernel(pack(2048, unroll));
    const auto body = tut::loop_around(k, "FFMA");
    REQUIRE_MESSAGE(!body.empty(), k.name, " has no loop around its FFMAs");
    int ffma = 0;
    for (const auto& i : body) ffma += i.opcode.rfind("FFMA", 0) == 0;
    CHECK_MESSAGE(ffma == values * unroll, k.name);
    // The loop's overhead, which the lesson's prediction counts: a counter update, a compare and
    // the backward branch, three instructions per iteration besides the FFMAs (with two packs per
    // thread the compiler also reloads a and b from the constant bank in the loop: one LDC more).
    const int overhead = 3 + (ch07::kPacksF32 == 2 ? 1 : 0);
    CHECK_MESSAGE(static_cast<int>(body.size()) == values * unroll + overhead, k.name, ": ", body.size(), " instructions");
  }
}
