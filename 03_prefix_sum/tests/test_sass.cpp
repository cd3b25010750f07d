// The lesson's claims about generated code, checked on the built benchmark's SASS (cuobjdump, no
// GPU needed).
#include <doctest/doctest.h>

#include "tut/sass.hpp"

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

namespace {
const std::vector<tut::SassKernel>& sass() {
  static const auto k = tut::disassemble(tut::sass_subject());
  return k;
}
const tut::SassKernel& kernel(const char* fragment) { return tut::find_kernel(sass(), fragment); }
// v7's kernel for the given flags ("true, false, int": packed, inclusive, int32), whatever its
// tile configuration.
const tut::SassKernel& v7(const std::string& flags) {
  const tut::SassKernel* found = nullptr;
  for (const auto& k : sass())
    if (k.name.find("decoupled_lookback_kernel<") != std::string::npos &&
        k.name.find(">, " + flags + ">") != std::string::npos) {
      REQUIRE_MESSAGE(found == nullptr, "two v7 kernels for ", flags);
      found = &k;
    }
  REQUIRE_MESSAGE(found != nullptr, "no v7 kernel for ", flags);
  return *found;
}
const bool kNoCuobjdump = !tut::find_cuobjdump();

int count_in(const std::vector<tut::SassInstruction>& code, const char* prefix) {
  int n = 0;
  for (const auto& i : code) n += i.opcode.rfind(prefix, 0) == 0;
  return n;
}

// The innermost loop with a barrier in it: the Hillis-Steele step loop (the loop over segments
// around it has the barrier after the load as well).
std::vector<tut::SassInstruction> step_loop(const tut::SassKernel& k) {
  std::vector<tut::SassInstruction> best;
  for (const auto& loop : tut::loops(k))
    if (count_in(loop, "BAR.SYNC") > 0 && (best.empty() || loop.size() < best.size())) best = loop;
  return best;
}
}  // namespace

// The segments v1-v3 are compiled for (kCompiledSegments in kernels/segments.cuh).
constexpr int kCompiled[] = {128, 256, 512, 1024};

std::string form(const char* kernel_name, int seg, const char* type = "int") {
  return std::string(kernel_name) + "<" + std::to_string(seg) + ", " + type + ">";
}

// Instructions in the kernel, less the NOPs that pad it to an alignment.
int instructions(const tut::SassKernel& k) { return static_cast<int>(k.code.size()) - tut::count_opcode(k, "NOP"); }

int log2i(int v) {
  int k = 0;
  while ((1 << k) < v) ++k;
  return k;
}

TEST_CASE("v1 waits at two barriers per step, v2 at one, in either form" * doctest::skip(kNoCuobjdump)) {
  // The run-time form (SEG = 0): a step loop.
  const auto v1 = step_loop(kernel("v1_shared_kernel<0, int>"));
  const auto v2 = step_loop(kernel("v2_double_buffer_kernel<0, int>"));
  REQUIRE(!v1.empty());
  REQUIRE(!v2.empty());
  CHECK(count_in(v1, "BAR.SYNC") == 2);
  CHECK(count_in(v2, "BAR.SYNC") == 1);
  // The compiled forms: straight-line code, no loop at all (the steps unrolled, one segment per
  // block), with every barrier: one after the load and two (v1) or one (v2) per step, log2(SEG) steps.
  for (const int seg : kCompiled) {
    for (const auto& [name, per_step] : {std::pair{"v1_shared_kernel", 2}, std::pair{"v2_double_buffer_kernel", 1}}) {
      for (const char* type : {"int", "float"}) {
        const auto& k = kernel(form(name, seg, type).c_str());
        INFO(k.name);
        CHECK(tut::loops(k).empty());
        CHECK(tut::count_opcode(k, "BAR.SYNC") == 1 + per_step * log2i(seg));
      }
    }
  }
}

TEST_CASE("an unrolled step costs about half the instructions of a run-time one" * doctest::skip(kNoCuobjdump)) {
  // A compiled step: the kernel for SEG = 1024 against SEG = 512, one step apart. A run-time step:
  // the step loop's body. Both in instructions per thread per step.
  for (const char* name : {"v1_shared_kernel", "v2_double_buffer_kernel"}) {
    const int unrolled = instructions(kernel(form(name, 1024).c_str())) - instructions(kernel(form(name, 512).c_str()));
    const int runtime = static_cast<int>(step_loop(kernel(form(name, 0).c_str())).size());
    MESSAGE(std::string(name), ": ", runtime, " instructions per run-time step, ", unrolled, " per unrolled step");
    CHECK(unrolled <= 7);
    CHECK(runtime >= unrolled + 5);
  }
}

TEST_CASE("the compiled forms divide by a constant; the run-time forms by the segment" * doctest::skip(kNoCuobjdump)) {
  // ceil_div(n, segment): by a run-time segment, a 64-bit division (an I2F/MUFU.RCP estimate and a
  // CALL to the long path); by a power of two known at compile time, shifts.
  for (const char* name : {"v1_shared_kernel", "v2_double_buffer_kernel", "v3_warp_shuffle_kernel"}) {
    const auto& runtime = kernel(form(name, 0).c_str());
    INFO(runtime.name);
    CHECK(tut::count_opcode(runtime, "MUFU.RCP") >= 1);
    CHECK(tut::count_opcode(runtime, "CALL") >= 1);
    for (const int seg : kCompiled)
      for (const char* type : {"int", "float"}) {
        const auto& k = kernel(form(name, seg, type).c_str());
        INFO(k.name);
        CHECK(tut::count_opcode(k, "MUFU") == 0);
        CHECK(tut::count_opcode(k, "CALL") == 0);
      }
  }
}

TEST_CASE("v3 and every later scan use warp shuffles (SHFL.UP)" * doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"v3_warp_shuffle_kernel<0, int>", "v3_warp_shuffle_kernel<1024, int>",
                           "coarsened_segment_kernel<4, false, int>", "coarsened_segment_kernel<4, true, int>",
                           "tile_scan_kernel<true, false, int>"}) {
    INFO(name);
    CHECK(tut::count_opcode(kernel(name), "SHFL.UP") >= 5);
  }
  CHECK(tut::count_opcode(v7("true, false, int"), "SHFL.UP") >= 5);
  CHECK(tut::count_opcode(v7("true, true, float"), "SHFL.UP") >= 5);
  CHECK(tut::count_opcode(kernel("v0_global_kernel<int>"), "SHFL") == 0);
  for (const int seg : {0, 128, 256, 512, 1024})
    for (const char* name : {"v1_shared_kernel", "v2_double_buffer_kernel"}) {
      INFO(form(name, seg));
      CHECK(tut::count_opcode(kernel(form(name, seg).c_str()), "SHFL") == 0);
    }
}

TEST_CASE("v4 loads 32 bits at a time; v5 and the tiles 128" * doctest::skip(kNoCuobjdump)) {
  const auto& v4 = kernel("coarsened_segment_kernel<4, false, int>");
  CHECK(tut::count_memory_ops(v4, "LDG", 128) == 0);
  CHECK(tut::count_memory_ops(v4, "LDG", 32) >= 4);
  for (const tut::SassKernel* k : {&kernel("coarsened_segment_kernel<4, true, int>"), &v7("true, false, int"),
                                   &kernel("tile_scan_kernel<true, false, int>")}) {
    INFO(k->name);
    CHECK(tut::count_memory_ops(*k, "LDG", 128) >= 1);
    CHECK(tut::count_memory_ops(*k, "STG", 128) >= 1);
  }
  // Sixteen items per thread: four 16-byte loads issued before the tile's first store.
  CHECK(tut::load_bytes_before_first_store(kernel("tile_scan_kernel<true, false, int>")) >= 64);
  CHECK(tut::load_bytes_before_first_store(v7("true, false, int")) >= 64);
}

TEST_CASE("v7 keeps everything in registers: no local-memory spills" * doctest::skip(kNoCuobjdump)) {
  for (const char* flags : {"true, false, int", "true, true, int", "false, false, int", "true, false, float"}) {
    const auto& k = v7(flags);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
  // The look-back reads flags with 64-bit loads that bypass L1 (.STRONG.GPU), and the spin is a loop.
  const auto& packed = v7("true, false, int");
  bool strong_load = false;
  for (const auto& i : packed.code) {
    const bool load = i.opcode.rfind("LD.", 0) == 0 || i.opcode.rfind("LDG", 0) == 0;
    strong_load = strong_load || (load && i.opcode.find("STRONG.GPU") != std::string::npos);
  }
  CHECK(strong_load);
  CHECK(!tut::loops(packed).empty());
}

TEST_CASE("v7's block scan waits at a named barrier the look-back warp is not part of" * doctest::skip(kNoCuobjdump)) {
  // With a look-back warp of its own, the data warps' two scan barriers are barrier 1 counting
  // only their threads (bar.sync 1, data_threads); barrier 0 is the whole block's.
  const auto& k = v7("true, false, int");
  std::smatch m;  // LookbackConfig<rows, min blocks, sleep, flags, own warp, data warps, ...
  const std::regex config(R"(LookbackConfig<\d+, \d+, \d+, \d+, (true|false), (\d+))");
  REQUIRE(std::regex_search(k.name, m, config));
  char data_threads[16];
  std::snprintf(data_threads, sizeof data_threads, "0x%x", 32 * std::stoi(m[2].str()));
  int named = 0;
  for (const auto& i : k.code)
    named += i.opcode.rfind("BAR.SYNC", 0) == 0 && i.text.find("0x1, " + std::string(data_threads)) != std::string::npos;
  CHECK(named == (m[1].str() == "true" ? 2 : 0));
}

#if TUT_EXERCISES
TEST_CASE("exercise: the block scan uses warp shuffles" * doctest::skip(kNoCuobjdump)) {
  const auto& k = kernel("block_scan_shuffle_kernel<int>");
  CHECK_MESSAGE(tut::count_opcode(k, "SHFL.UP") >= 5, "no SHFL.UP in ", k.name, ": scan each warp with __shfl_up_sync");
}
#endif
