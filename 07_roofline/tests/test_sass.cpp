// The sweep's claims about generated code, on the built benchmark's SASS (cuobjdump, no GPU): the
// work is not optimized away, and the three unroll forms compile as the lesson says.
#include <doctest/doctest.h>

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

TEST_CASE("full unrolling: exactly F / 2 FFMAs, none dropped, no loop" * doctest::skip(kNoCuobjdump)) {
  for (int f : {2, 8, 64, 2048}) {
    const auto& k = kernel("sweep_f32_kernel<" + std::to_string(f) + ", 0>");
    CHECK_MESSAGE(tut::count_opcode(k, "FFMA") == f / 2, k.name);
    CHECK(tut::loops(k).empty());
  }
  CHECK(tut::count_opcode(kernel("sweep_f32_kernel<1, 0>"), "FADD") == 1);
  CHECK(count_hfma2(kernel("sweep_f16_kernel<2048, 0>")) == 512);
}

TEST_CASE("#pragma unroll 1: one FFMA per loop iteration; unroll 4: four" * doctest::skip(kNoCuobjdump)) {
  for (int unroll : {1, 4}) {
    const auto& k = kernel("sweep_f32_kernel<2048, " + std::to_string(unroll) + ">");
    const auto body = tut::loop_around(k, "FFMA");
    REQUIRE_MESSAGE(!body.empty(), k.name, " has no loop around its FFMAs");
    int ffma = 0;
    for (const auto& i : body) ffma += i.opcode.rfind("FFMA", 0) == 0;
    CHECK_MESSAGE(ffma == unroll, k.name);
    // The loop's overhead: at least a counter update and the backward branch besides the FFMAs.
    CHECK(static_cast<int>(body.size()) >= unroll + 2);
  }
}
