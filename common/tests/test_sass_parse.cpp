// The SASS parser on fixed cuobjdump text: no cuobjdump or GPU needed.
#include <doctest/doctest.h>

#include "tut/sass.hpp"

#include <stdexcept>
#include <string>

namespace {
const std::string kListing = R"sass(
	code for sm_90
		Function : _Z9probe_oneP6float4
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                  /* 0x00000a00ff017b82 */
        /*0060*/              @!P0 LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;               /* 0x0000000402047981 */
        /*0070*/                   STG.E.64 desc[UR4][R2.64], R4 ;                         /* 0x0000000402007986 */
        /*0080*/                   LDG.E.U16 R6, desc[UR4][R2.64] ;                        /* 0x0000000402067981 */
        /*0090*/                   SHFL.BFLY PT, R5, R4, 0x10, 0x1f ;                      /* 0x0e001f0004057f89 */
        /*00a0*/                   EXIT ;                                                  /* 0x000000000000794d */
		..........
		Function : probe_two
        /*0000*/                   LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64] ;            /* 0x0000000402007fae */
        /*0010*/                   STG.E desc[UR4][R2.64], R4 ;                            /* 0x0000000402007986 */
)sass";
}  // namespace

TEST_CASE("parse_sass splits kernels, demangles names and drops predicates") {
  const auto k = tut::parse_sass(kListing);
  REQUIRE(k.size() == 2);
  CHECK(k[0].name == "probe_one(float4*)");
  CHECK(k[1].name == "probe_two");
  REQUIRE(k[0].code.size() == 6);
  CHECK(k[0].code[1].opcode == "LDG.E.128.CONSTANT");
  CHECK(k[0].code[1].address == 0x60);
  CHECK(tut::count_memory_ops(k[0], "LDG", 128) == 1);
  CHECK(tut::count_memory_ops(k[0], "STG", 64) == 1);
  CHECK(tut::count_memory_ops(k[0], "LDG", 16) == 1);
  CHECK(tut::count_memory_ops(k[0], "LDG", 32) == 0);
  CHECK(tut::count_opcode(k[0], "SHFL") == 1);
  // LDGSTS is an async copy, not a global load.
  CHECK(tut::count_memory_ops(k[1], "LDG", 128) == 0);
  CHECK(tut::count_memory_ops(k[1], "STG", 32) == 1);
}

TEST_CASE("loop_around finds the body between a back edge's target and the branch") {
  const auto k = tut::parse_sass(R"sass(
		Function : loopy
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   ISETP.GE.AND P0, PT, R0, 0x10, PT ;
        /*0020*/               @P0 BRA 0x70 ;
        /*0030*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0040*/                   IADD3 R0, R0, 0x1, RZ ;
        /*0050*/                   ISETP.LT.AND P0, PT, R0, 0x10, PT ;
        /*0060*/               @P0 BRA 0x30 ;
        /*0070*/                   EXIT ;
)sass");
  REQUIRE(k.size() == 1);
  const auto body = tut::loop_around(k[0], "LDG");
  REQUIRE(body.size() == 4);
  CHECK(body.front().address == 0x30);
  CHECK(body.back().opcode == "BRA");
  CHECK(tut::loop_around(k[0], "S2R").empty());
  CHECK(tut::loop_around(k[0], "FFMA").empty());
}

TEST_CASE("same_code compares instructions and operands, not names") {
  const auto a = tut::parse_sass(kListing);
  auto b = tut::parse_sass(kListing);
  REQUIRE(a.size() == 2);
  b[0].name = "renamed";
  CHECK(tut::same_code(a[0], b[0]));   // separately parsed, same instructions
  CHECK_FALSE(tut::same_code(a[0], a[1]));
  b[0].code[2].text = "STG.E.64 desc[UR4][R2.64], R6";  // one operand differs
  CHECK_FALSE(tut::same_code(a[0], b[0]));
  b[0].code.pop_back();
  CHECK_FALSE(tut::same_code(a[0], b[0]));
}

TEST_CASE("bytes before the first store: the loop or path where they are most, or the whole kernel") {
  const auto k = tut::parse_sass(R"sass(
		Function : unrolled
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/                   LDG.E.128 R8, desc[UR4][R2.64+0x10] ;
        /*0030*/                   STG.E.128 desc[UR4][R2.64], R4 ;
        /*0040*/                   LDG.E R12, desc[UR4][R2.64] ;
        /*0050*/               @P0 BRA 0x10 ;
        /*0060*/                   EXIT ;
		Function : remainder_first
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0010*/                   STG.E desc[UR4][R6.64], R4 ;
        /*0020*/               @P0 BRA 0x0 ;
        /*0030*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0040*/                   LDG.E R5, desc[UR4][R2.64+0x400] ;
        /*0050*/                   LDG.E R8, desc[UR4][R2.64+0x800] ;
        /*0060*/                   STG.E desc[UR4][R6.64], R4 ;
        /*0070*/               @P0 BRA 0x30 ;
        /*0080*/                   EXIT ;
		Function : straight
        /*0000*/                   LDG.E.U16 R4, desc[UR4][R2.64] ;
        /*0010*/                   LDG.E.U16 R5, desc[UR4][R6.64] ;
        /*0020*/                   STG.E.U16 desc[UR4][R8.64], R4 ;
        /*0030*/                   EXIT ;
		Function : tail_first
        /*0000*/              @!P0 BRA 0x50 ;
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0020*/                   STG.E desc[UR4][R6.64], R4 ;
        /*0030*/               @P1 EXIT ;
        /*0040*/                   EXIT ;
        /*0050*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0060*/                   LDG.E.128 R8, desc[UR4][R10.64] ;
        /*0070*/                   BRA.DIV UR6, 0x90 ;
        /*0080*/                   STG.E.128 desc[UR4][R6.64], R4 ;
        /*0090*/                   EXIT ;
)sass");
  REQUIRE(k.size() == 4);
  CHECK(tut::load_bytes_before_first_store(k[0]) == 32);
  CHECK(tut::load_bytes_before_first_store(k[1]) == 12);  // the main loop, not the remainder loop
  CHECK(tut::load_bytes_before_first_store(k[2]) == 4);
  CHECK(tut::load_bytes_before_first_store(k[3]) == 32);  // the main path after the tail's EXIT
  CHECK(tut::loops(k[1]).size() == 2);
  CHECK(tut::main_loop(k[1], "LDG").size() == 5);
  CHECK(tut::main_loop(k[2], "LDG").empty());
}

TEST_CASE("access_bits reads the width modifier") {
  CHECK(tut::access_bits("LDG.E.128") == 128);
  CHECK(tut::access_bits("LDG.E.64.CONSTANT") == 64);
  CHECK(tut::access_bits("STG.E.U16") == 16);
  CHECK(tut::access_bits("LDG.E.S8") == 8);
  CHECK(tut::access_bits("LDG.E") == 32);
  CHECK(tut::access_bits("LDG.E.CONSTANT") == 32);
}

TEST_CASE("find_kernel wants exactly one match") {
  const auto k = tut::parse_sass(kListing);
  CHECK(tut::find_kernel(k, "probe_one").mangled == "_Z9probe_oneP6float4");
  CHECK_THROWS_AS(tut::find_kernel(k, "probe_"), std::runtime_error);
  CHECK_THROWS_AS(tut::find_kernel(k, "absent"), std::runtime_error);
}

