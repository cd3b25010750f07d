// The SASS helper on probe kernels with known instructions (needs cuobjdump, not a GPU).
#include <doctest/doctest.h>

#include "tut/sass.hpp"

#include <string>

TEST_CASE("disassembled probe kernels show the instructions their source implies" *
          doctest::skip(!tut::find_cuobjdump())) {
  const auto kernels = tut::disassemble(tut::sass_subject());
  const auto& vec = tut::find_kernel(kernels, "probe_vector_copy");
  const auto& sca = tut::find_kernel(kernels, "probe_scalar_copy");
  const auto& warp = tut::find_kernel(kernels, "probe_warp_sum");
  CHECK(tut::count_memory_ops(vec, "LDG", 128) >= 1);
  CHECK(tut::count_memory_ops(vec, "STG", 128) >= 1);
  CHECK(tut::count_memory_ops(sca, "LDG", 128) == 0);
  CHECK(tut::count_memory_ops(sca, "LDG", 32) >= 1);
  CHECK(tut::count_opcode(warp, "SHFL") >= 1);
  CHECK(tut::count_opcode(warp, "LDL") == 0);
}

TEST_CASE("__activemask() shows as a vote of the constant true; a ballot over the whole warp does not" *
          doctest::skip(!tut::find_cuobjdump())) {
  const auto kernels = tut::disassemble(tut::sass_subject());
  const auto& active = tut::find_kernel(kernels, "probe_activemask_ballot");
  const auto& full = tut::find_kernel(kernels, "probe_full_ballot");
  CHECK(tut::count_active_mask_reads(active) >= 1);
  CHECK(tut::count_opcode(full, "VOTE") >= 1);
  CHECK(tut::count_active_mask_reads(full) == 0);
}
