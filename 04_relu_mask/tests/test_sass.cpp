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
const tut::SassKernel& kernel(const std::string& fragment) { return tut::find_kernel(sass(), fragment); }
const bool kNoCuobjdump = !tut::find_cuobjdump();

// Demangled-name fragments, one instantiation each: (type, AddReLU?).
const std::vector<std::string> kForms = {"float, false", "float, true", "__half, false", "__half, true"};
std::string v1(const std::string& form) { return "fwd_v1_thread_per_byte_kernel<" + form + ">"; }
std::string v2(const std::string& form) { return "fwd_v2_warp_ballot_kernel<256, " + form + ">"; }
std::string v3(const std::string& form) { return "fwd_v3_ballot_vectorized_kernel<256, " + form + ">"; }
}  // namespace

TEST_CASE("the ballot forwards vote: VOTE in every v2 and v3 kernel, none in v1" * doctest::skip(kNoCuobjdump)) {
  for (const auto& form : kForms) {
    INFO(form);
    CHECK(tut::count_opcode(kernel(v2(form)), "VOTE") >= 1);
    CHECK(tut::count_opcode(kernel(v3(form)), "VOTE") >= 1);
    CHECK(tut::count_opcode(kernel(v1(form)), "VOTE") == 0);
    // No __activemask(): every ballot names the whole warp.
    CHECK(tut::count_active_mask_reads(kernel(v2(form))) == 0);
    CHECK(tut::count_active_mask_reads(kernel(v3(form))) == 0);
  }
}

TEST_CASE("v3's packed path: one ballot per element of the pack" * doctest::skip(kNoCuobjdump)) {
  // At least 4 (float) or 8 (half) VOTE.ANY. The compiler emits more: the partial chunk's loop is
  // unrolled, and each __ballot_sync also gets a copy behind `BRA.DIV` (taken only if the warp is
  // found diverged at run time) that first reconverges the named lanes with WARPSYNC.COLLECTIVE.
  CHECK(tut::count_opcode(kernel(v3("float, false")), "VOTE") >= 4);
  CHECK(tut::count_opcode(kernel(v3("__half, false")), "VOTE") >= 8);
  CHECK(tut::count_opcode(kernel(v3("float, false")), "WARPSYNC") >= 1);
}

TEST_CASE("v3 loads and stores 128 bits at a time, with no spills" * doctest::skip(kNoCuobjdump)) {
  for (const auto& form : kForms) {
    const auto& k = kernel(v3(form));
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) >= (form.find("true") != std::string::npos ? 2 : 1));
    CHECK(tut::count_memory_ops(k, "STG", 128) == 1);
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v1 reads one element per load: no wide accesses, a byte store for the mask" *
          doctest::skip(kNoCuobjdump)) {
  for (const auto& form : kForms) {
    const auto& k = kernel(v1(form));
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) == 0);
    CHECK(tut::count_memory_ops(k, "LDG", 64) == 0);
    CHECK(tut::count_memory_ops(k, "STG", 8) >= 1);
  }
  CHECK(tut::count_memory_ops(kernel(v1("float, false")), "LDG", 32) >= 8);
  CHECK(tut::count_memory_ops(kernel(v1("__half, false")), "LDG", 16) >= 8);
}

TEST_CASE("v2 moves one element per access" * doctest::skip(kNoCuobjdump)) {
  const auto& k = kernel(v2("float, false"));
  CHECK(tut::count_memory_ops(k, "LDG", 128) == 0);
  CHECK(tut::count_memory_ops(k, "STG", 128) == 0);
}

TEST_CASE("backward: v3 is 128-bit on dy and dx, v2 is not" * doctest::skip(kNoCuobjdump)) {
  for (const char* t : {"float", "__half"}) {
    const auto& k3 = kernel(std::string("bwd_v3_from_bitmask_vectorized_kernel<256, ") + t + ">");
    INFO(k3.name);
    CHECK(tut::count_memory_ops(k3, "LDG", 128) == 1);
    CHECK(tut::count_memory_ops(k3, "STG", 128) == 1);
    const auto& k2 = kernel(std::string("bwd_v2_from_bitmask_kernel<256, ") + t + ">");
    CHECK(tut::count_memory_ops(k2, "LDG", 128) == 0);
  }
}

#if TUT_EXERCISES
TEST_CASE("exercise: the AddReLU forward uses a warp ballot" * doctest::skip(kNoCuobjdump)) {
  const auto& k = kernel("add_relu_ballot_kernel");
  CHECK_MESSAGE(tut::count_opcode(k, "VOTE") >= 1, "no VOTE in ", k.name, ": use __ballot_sync");
  CHECK_MESSAGE(tut::count_active_mask_reads(k) == 0, k.name,
                " reads __activemask() (VOTE.ANY Rd, PT, PT): a ballot must name all 32 lanes, 0xffffffff");
}
#endif
