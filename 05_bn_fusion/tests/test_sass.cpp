// The lesson's claims about generated code, checked on the built benchmark's SASS (cuobjdump, no
// GPU needed).
#include <doctest/doctest.h>

#include "tut/sass.hpp"

#include <algorithm>
#include <tuple>
#include <string>
#include <vector>

namespace {
const std::vector<tut::SassKernel>& sass() {
  static const auto k = tut::disassemble(tut::sass_subject());
  return k;
}
const tut::SassKernel& kernel(const std::string& fragment) { return tut::find_kernel(sass(), fragment); }
const bool kNoCuobjdump = !tut::find_cuobjdump();

int count_in(const std::vector<tut::SassInstruction>& code, const std::string& prefix, int bits = -1) {
  int n = 0;
  for (const auto& i : code)
    if (i.opcode.rfind(prefix, 0) == 0 && (bits < 0 || tut::access_bits(i.opcode) == bits)) ++n;
  return n;
}

// The position in `code` of the n-th instruction whose opcode starts with one of `prefixes`, or the
// code's length.
std::size_t nth(const std::vector<tut::SassInstruction>& code, const std::vector<std::string>& prefixes, int n) {
  for (std::size_t i = 0; i < code.size(); ++i)
    for (const auto& p : prefixes)
      if (code[i].opcode.rfind(p, 0) == 0 && --n == 0) return i;
  return code.size();
}
}  // namespace

TEST_CASE("v2's normalize pass: one 16-byte load of x (and r), one 16-byte store of y, a ballot per pack position" *
          doctest::skip(kNoCuobjdump)) {
  struct Form {
    std::string name;
    int loads, votes;
  };
  for (const Form& f : {Form{"fwd_v2_apply_kernel<4, float, false>", 1, 4}, Form{"fwd_v2_apply_kernel<4, float, true>", 2, 4},
                        Form{"fwd_v2_apply_kernel<8, __half, false>", 1, 8}, Form{"fwd_v2_apply_kernel<8, __half, true>", 2, 8}}) {
    const auto& k = kernel(f.name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) >= f.loads);
    CHECK(tut::count_memory_ops(k, "STG", 128) == 1);
    CHECK(tut::count_opcode(k, "VOTE") >= f.votes);
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("the channel of an element: v1 divides in 64 bits (a called routine), v2 multiplies in double" *
          doctest::skip(kNoCuobjdump)) {
  const auto& v1 = kernel("fwd_v1_apply_kernel<float, false>");
  CHECK(tut::count_opcode(v1, "CALL") >= 1);
  CHECK(tut::count_opcode(v1, "DMUL") == 0);
  CHECK(tut::count_memory_ops(v1, "LDG", 128) == 0);
  const auto& v2 = kernel("fwd_v2_apply_kernel<4, float, false>");
  CHECK(tut::count_opcode(v2, "DMUL") >= 1);
  CHECK(tut::count_opcode(v2, "CALL") == 0);
}

TEST_CASE("v2's statistics: four 16-byte loads in flight per thread in the main loop, both layouts" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"fwd_v2_stats_nchw_kernel<4, float>", "fwd_v2_stats_nhwc_kernel<4, float>",
                           "bwd_v2_sums_nchw_kernel<4, float>", "bwd_v2_sums_nhwc_kernel<4, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    int most = 0;  // the unrolled main loop: the loop with the most 16-byte loads
    for (const auto& loop : tut::loops(k)) most = std::max(most, count_in(loop, "LDG", 128));
    const bool backward = k.name.find("bwd") != std::string::npos;  // dy and x per pack
    CHECK(most >= (backward ? 8 : 4));
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
  // The one-block-per-channel statistics of v1 load one float at a time.
  CHECK(tut::count_memory_ops(kernel("fwd_v1_stats_kernel<float>"), "LDG", 128) == 0);
}

TEST_CASE("v3: one kernel with the statistics' and the pass's 16-byte accesses, two grid barriers, no spills" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"fwd_v3_single_read_kernel<4, 4, float, false>", "fwd_v3_single_read_kernel<8, 8, __half, false>",
                           "bwd_v3_single_read_kernel<4, 4, float, false>", "bwd_v3_single_read_kernel<8, 8, __half, true>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) >= 5);
    CHECK(tut::count_memory_ops(k, "STG", 128) >= 1);
    CHECK(tut::count_opcode(k, "ATOM") >= 2);  // grid.sync(): each arrives on a counter in global memory
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

// Among the loops that store 16-byte packs, the one that issues the most 16-byte loads before its
// first store (phase 3's main loop), and that count.
std::pair<std::vector<tut::SassInstruction>, int> phase3_loop(const tut::SassKernel& k) {
  int most = 0;
  std::vector<tut::SassInstruction> body;
  for (const auto& loop : tut::loops(k)) {
    if (count_in(loop, "STG", 128) == 0) continue;
    int before = 0;
    for (const auto& i : loop) {
      if (i.opcode.rfind("STG", 0) == 0) break;
      if (i.opcode.rfind("LDG", 0) == 0 && tut::access_bits(i.opcode) == 128) ++before;
    }
    if (before > most) most = before, body = loop;
  }
  return {body, most};
}

TEST_CASE("v4 to v6: phase 3's loop loads 64 bytes per thread before its first store, and spills nothing" *
          doctest::skip(kNoCuobjdump)) {
  struct Form {
    std::string name;
    int packs;  // 16-byte loads per thread in one iteration of phase 3's loop, before it stores
  };
  for (const Form& f : {Form{"fwd_v4_own_packs_kernel<4, float, false, ch05::NoCache<4> >", 4},
                        Form{"fwd_v4_own_packs_kernel<4, float, true, ch05::NoCache<4> >", 4},  // 2 of x, 2 of r
                        Form{"fwd_v4_own_packs_kernel<8, __half, false, ch05::NoCache<3> >", 4},
                        Form{"fwd_v4_own_packs_kernel<4, float, false, ch05::SmemCache<float, 1, 4> >", 4},
                        Form{"fwd_v4_own_packs_kernel<8, __half, false, ch05::SmemCache<__half, 1, 3> >", 4},
                        Form{"bwd_v4_own_packs_kernel<4, float, false, ch05::SmemCache<float, 2, 3> >", 4},  // 2 of dy, 2 of x
                        Form{"bwd_v4_own_packs_kernel<4, float, true, ch05::SmemCache<float, 2, 3> >", 4},
                        Form{"bwd_v4_own_packs_kernel<8, __half, false, ch05::SmemCache<__half, 2, 3> >", 4},
                        Form{"bwd_v4_own_packs_kernel<4, float, false, ch05::NoCache<3> >", 4},
                        Form{"fwd_v6_balanced_kernel<4, float, false, ch05::SmemCache<float, 1, 3> >", 4},
                        Form{"fwd_v6_balanced_kernel<4, float, true, ch05::SmemCache<float, 1, 3> >", 4},
                        Form{"fwd_v6_balanced_kernel<8, __half, false, ch05::SmemCache<__half, 1, 3> >", 4},
                        Form{"bwd_v6_balanced_kernel<4, float, false, ch05::SmemCache<float, 2, 3> >", 4},
                        Form{"bwd_v6_balanced_kernel<8, __half, true, ch05::SmemCache<__half, 2, 2> >", 4}}) {
    const auto& k = kernel(f.name);
    INFO(k.name);
    const auto [body, most] = phase3_loop(k);  // y's or dx's
    CHECK(most >= f.packs);
    CHECK(count_in(body, "LDL") == 0);
    CHECK(count_in(body, "STL") == 0);
  }
}

TEST_CASE("v5: the cache is 16-byte shared-memory stores in phase 1 and loads in phase 3" * doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"fwd_v4_own_packs_kernel<4, float, false, ch05::SmemCache<float, 1, 4> >",
                           "fwd_v4_own_packs_kernel<8, __half, true, ch05::SmemCache<__half, 1, 3> >",
                           "bwd_v4_own_packs_kernel<4, float, false, ch05::SmemCache<float, 2, 3> >"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "STS", 128) >= 1);
    CHECK(tut::count_memory_ops(k, "LDS", 128) >= 1);
  }
  // v4 is the same kernel without the cache: fewer 16-byte shared-memory accesses.
  for (const char* op : {"STS", "LDS"})
    CHECK(tut::count_memory_ops(kernel("fwd_v4_own_packs_kernel<4, float, false, ch05::NoCache<4> >"), op, 128) <
          tut::count_memory_ops(kernel("fwd_v4_own_packs_kernel<4, float, false, ch05::SmemCache<float, 1, 4> >"), op, 128));
}


TEST_CASE("v7: phase 3's loop stores a byte of the mask per pack, with no vote, 64 bytes loaded first, no spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"fwd_v7_mask_bytes_kernel<__half, false, ch05::SmemCache<__half, 1, 3> >",
                           "fwd_v7_mask_bytes_kernel<__half, true, ch05::SmemCache<__half, 1, 3> >"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    const auto [body, most] = phase3_loop(k);
    CHECK(most >= 4);
    CHECK(count_in(body, "STG", 8) >= 1);
    CHECK(count_in(body, "VOTE") == 0);
    CHECK(count_in(body, "SHFL") == 0);
    CHECK(count_in(body, "LDL") == 0);
    CHECK(count_in(body, "STL") == 0);
  }
  // The votes, shuffles and bit interleave v5 spends on the mask words are gone: v7's loop (the same
  // four packs) is at least 80 instructions per pack shorter than v5's (on sm_90 with nvcc 13.0:
  // 960 against 1383).
  const auto v5 = phase3_loop(kernel("fwd_v4_own_packs_kernel<8, __half, false, ch05::SmemCache<__half, 1, 3> >")).first;
  const auto v7 = phase3_loop(kernel("fwd_v7_mask_bytes_kernel<__half, false, ch05::SmemCache<__half, 1, 3> >")).first;
  MESSAGE("phase 3's loop: v5 ", v5.size(), " instructions, v7 ", v7.size());
  CHECK(v7.size() + 4 * 80 <= v5.size());
}

TEST_CASE("the backward's dx pass: 16-byte dy and x, one 16-byte store of dx (and of dr)" * doctest::skip(kNoCuobjdump)) {
  const auto& plain = kernel("bwd_v2_apply_kernel<4, float, false>");
  CHECK(tut::count_memory_ops(plain, "LDG", 128) >= 2);
  CHECK(tut::count_memory_ops(plain, "STG", 128) == 1);
  CHECK(tut::count_memory_ops(kernel("bwd_v2_apply_kernel<4, float, true>"), "STG", 128) == 2);
  CHECK(tut::count_memory_ops(kernel("bwd_v2_apply_kernel<8, __half, false>"), "STG", 128) == 1);
}

#if TUT_EXERCISES
TEST_CASE("exercise: the pass builds its mask words with a warp ballot" * doctest::skip(kNoCuobjdump)) {
  const auto& k = kernel("bn_relu_apply_kernel");
  CHECK_MESSAGE(tut::count_opcode(k, "VOTE") >= 1, "no VOTE in ", k.name, ": use __ballot_sync");
}
#endif

TEST_CASE("v8: each thread's packs loaded into registers at once, one cluster barrier, mask bytes or runs of lanes, no match, no spill" *
          doctest::skip(kNoCuobjdump)) {
  // The forward's float NHWC kernel with whole mask bytes: 16 packs of x in registers (16 loads of
  // 16 bytes before the pass), the mask as byte stores, no __match_any_sync.
  const auto& f = kernel("fwd_v8_cluster_kernel<float, 4, 16, false, false, true, 2>");
  CHECK(tut::count_memory_ops(f, "LDG", 128) >= 16);
  CHECK(tut::count_memory_ops(f, "STG", 8) >= 1);
  CHECK(tut::count_opcode(f, "MATCH") == 0);
  CHECK(tut::count_opcode(f, "UCGABAR_ARV") >= 1);
  // The general mask path: runs of lanes found by a ballot and merged by shuffles, no match.
  const auto& g = kernel("fwd_v8_cluster_kernel<float, 1, 32, false, true, false, 2>");
  CHECK(tut::count_opcode(g, "MATCH") == 0);
  CHECK(tut::count_opcode(g, "VOTE") >= 1);
  // The backward: 8 packs of dy and 8 of x.
  const auto& b = kernel("bwd_v8_cluster_kernel<float, 4, 8, false, false>");
  CHECK(tut::count_memory_ops(b, "LDG", 128) >= 16);
  for (const auto* k : {&f, &b}) {
    INFO(k->name);
    CHECK(tut::count_opcode(*k, "LDL") == 0);
    CHECK(tut::count_opcode(*k, "STL") == 0);
  }
}

TEST_CASE("v9: the statistics kernel lets the pass start (PREEXIT), 4 packs in flight; the pass waits (ACQBULK), 4 packs, no spill" *
          doctest::skip(kNoCuobjdump)) {
  // griddepcontrol.launch_dependents compiles to PREEXIT, griddepcontrol.wait to ACQBULK.
  for (const char* name : {"fwd_v9_stats_kernel<float, 4, 4, (ch05::V9Walk)1>", "fwd_v9_stats_kernel<float, 4, 4, (ch05::V9Walk)0>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "PREEXIT") == 1);
    CHECK(tut::count_memory_ops(k, "LDG", 128) == 4);
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
  // The pass: float rows with whole mask bytes (64x1024x7x7 NHWC), and the flat walk (C <= 64),
  // whose mask words come from three butterfly shuffles per pack.
  const auto& rows = kernel("fwd_v9_apply_kernel<float, 4, 4, false, (ch05::V9Walk)1, true>");
  const auto& flat = kernel("fwd_v9_apply_kernel<float, 4, 4, false, (ch05::V9Walk)0, false>");
  for (const auto* k : {&rows, &flat}) {
    INFO(k->name);
    CHECK(tut::count_opcode(*k, "ACQBULK") == 1);
    CHECK(tut::count_memory_ops(*k, "LDG", 128) == 4);
    CHECK(tut::count_memory_ops(*k, "STG", 128) == 4);
    CHECK(tut::count_opcode(*k, "LDL") == 0);
    CHECK(tut::count_opcode(*k, "STL") == 0);
  }
  CHECK(count_in(flat.code, "SHFL.BFLY") == 12);
  CHECK(tut::count_memory_ops(rows, "STG", 8) >= 4);
}

TEST_CASE("v11: x in flight by cp.async before the pass waits, with gamma, beta and the running statistics; no spill" *
          doctest::skip(kNoCuobjdump)) {
  const auto& stats = kernel("fwd_v11_stats_kernel<float, 4, 8, (ch05::V9Walk)1>");
  const auto& rows = kernel("fwd_v11_apply_kernel<float, 4, 8, false, (ch05::V9Walk)1, true>");
  const auto& add = kernel("fwd_v11_apply_kernel<float, 4, 4, true, (ch05::V9Walk)1, true>");
  CHECK(tut::count_opcode(stats, "PREEXIT") == 1);
  CHECK(count_in(stats.code, "LDGSTS", 128) == 8);
  for (const auto* k : {&stats, &rows, &add}) {
    INFO(k->name);
    CHECK(tut::count_opcode(*k, "LDL") == 0);
    CHECK(tut::count_opcode(*k, "STL") == 0);
  }
  // In the pass, the first batch's copies (8 of x; 4 of x and 4 of r) and the per-channel loads
  // (gamma, beta, the running statistics) come before the wait (ACQBULK); after it, the partials,
  // 4 loads of 16 bytes at a time.
  for (const auto* k : {&rows, &add}) {
    INFO(k->name);
    const auto wait = std::find_if(k->code.begin(), k->code.end(),
                                   [](const tut::SassInstruction& i) { return i.opcode == "ACQBULK"; });
    REQUIRE(wait != k->code.end());
    const std::vector<tut::SassInstruction> before(k->code.begin(), wait), after(wait, k->code.end());
    CHECK(count_in(before, "LDGSTS", 128) == 8);
    CHECK(count_in(before, "LDG", 32) == 4);
    CHECK(count_in(after, "LDG.E.128.STRONG.GPU") == 4);
  }
}

TEST_CASE("v10: v8's kernel cut for 4 blocks per SM in float spills its packs; v8's own does not" *
          doctest::skip(kNoCuobjdump)) {
  // The float NHWC kernel with whole mask bytes, 8 packs per thread at 64 registers (v10), beside
  // v8's 16 at 128: the lesson's reason for v10's extra DRAM bytes at 64x1024x7x7.
  const auto& narrow = kernel("fwd_v8_cluster_kernel<float, 4, 8, false, false, true, 4>");
  const auto& wide = kernel("fwd_v8_cluster_kernel<float, 4, 16, false, false, true, 2>");
  CHECK(tut::count_opcode(narrow, "LDL") > 0);
  CHECK(tut::count_opcode(narrow, "STL") > 0);
  CHECK(tut::count_opcode(wide, "LDL") == 0);
  CHECK(tut::count_opcode(wide, "STL") == 0);
}

TEST_CASE("v12: x by the copy engine (4 UBLKCP, waited on barriers), r prefetched to the L2, the partials 4 at a "
          "time, y by evict-first 16-byte stores from shared memory, the mask by shuffles; no spill" *
          doctest::skip(kNoCuobjdump)) {
  struct Form {
    std::string name;
    bool add;
    int shuffles;  // log2 of the lanes that share a mask word: 32 / 4 for float, 32 / 8 for half
  };
  for (const Form& f : {Form{"fwd_v12_resident_kernel<float, false>", false, 3}, Form{"fwd_v12_resident_kernel<float, true>", true, 3},
                        Form{"fwd_v12_resident_kernel<__half, false>", false, 2},
                        Form{"fwd_v12_resident_kernel<__half, true>", true, 2}}) {
    const auto& k = kernel(f.name);
    INFO(k.name);
    CHECK(count_in(k.code, "UBLKCP") == 4);  // one per piece
    CHECK(count_in(k.code, "SYNCS.PHASECHK") >= 4);
    CHECK(count_in(k.code, "UBLKPF.L2") == (f.add ? 1 : 0));
    CHECK(count_in(k.code, "LDG.E.128.STRONG.GPU") == 4);  // the partials after the grid barrier (__ldcg)
    CHECK(count_in(k.code, "STG.E.EF.128") == 1);          // y's pack
    CHECK(count_in(k.code, "LDG.E.128") - count_in(k.code, "LDG.E.128.STRONG") == (f.add ? 1 : 0));  // r's pack
    CHECK(count_in(k.code, "LDS.128") >= 1);  // x's pack, from shared memory
    CHECK(count_in(k.code, "VOTE.ANY") == 0);  // no ballots
    CHECK(count_in(k.code, "SHFL.BFLY") >= f.shuffles);
    CHECK(count_in(k.code, "SHFL.BFLY") % f.shuffles == 0);
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v13: v12's copies without the grid barrier or any fence (tagged 64-bit words stored and loaded 16 bytes at "
          "a time, 5 blocks' at once, a flag slept on where they are not in, one count out), the block merges by shuffles; y in 16-byte packs in float, "
          "8-byte in half, the mask by 3 shuffles; no spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const auto& [name, add, half] : {std::tuple{"fwd_v13_arrivals_kernel<float, false>", false, false},
                                        std::tuple{"fwd_v13_arrivals_kernel<float, true>", true, false},
                                        std::tuple{"fwd_v13_arrivals_kernel<__half, false>", false, true},
                                        std::tuple{"fwd_v13_arrivals_kernel<__half, true>", true, true}}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(count_in(k.code, "UBLKCP") == 4);
    CHECK(count_in(k.code, "UBLKPF.L2") == (add ? 1 : 0));
    CHECK(count_in(k.code, "ATOM.E") == 0);                  // v12's grid barrier is gone
    CHECK(count_in(k.code, "ATOMG.E.ADD.STRONG.GPU") == 1);  // the count out
    CHECK(count_in(k.code, "MEMBAR.ALL.GPU") + count_in(k.code, "MEMBAR.SC") + count_in(k.code, "CCTL") == 0);  // no fence
    CHECK(count_in(k.code, "STG.E.128.STRONG.GPU") == 1);   // the block's tagged (mean, M2) of a channel
    CHECK(count_in(k.code, "LDG.E.128.STRONG.GPU") == 5);   // the words of up to 5 blocks, loaded at once
    CHECK(count_in(k.code, "LDG.E.STRONG.GPU") >= 2);       // the launch count; the flag waited on
    CHECK(count_in(k.code, "NANOSLEEP") > count_in(k.code, "NANOSLEEP.SYNCS"));  // a warp waiting on a flag sleeps
    CHECK(count_in(k.code, "SHFL.DOWN") >= 2 * 5 * 3);      // two block merges: 5 levels of 3 floats
    CHECK(count_in(k.code, half ? "STG.E.EF.64" : "STG.E.EF.128") == 1);  // y's pack
    CHECK(count_in(k.code, half ? "LDS.64" : "LDS.128") >= 1);            // x's pack, from shared memory
    CHECK(count_in(k.code, "SHFL.BFLY") >= 3);
    CHECK(count_in(k.code, "SHFL.BFLY") % 3 == 0);  // 8 lanes of 4 bits share a mask word
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v14: v13's copies, tags and flags, every merge a sum in double (DADD, shuffles of 64-bit halves) with no "
          "reciprocal before the statistics' end; y and the mask as v13; no spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const auto& [name, add, half] : {std::tuple{"fwd_v14_shifted_sums_kernel<float, false>", false, false},
                                        std::tuple{"fwd_v14_shifted_sums_kernel<float, true>", true, false},
                                        std::tuple{"fwd_v14_shifted_sums_kernel<__half, false>", false, true},
                                        std::tuple{"fwd_v14_shifted_sums_kernel<__half, true>", true, true}}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(count_in(k.code, "UBLKCP") == 4);
    CHECK(count_in(k.code, "ATOM.E") == 0);                  // no grid barrier
    CHECK(count_in(k.code, "ATOMG.E.ADD.STRONG.GPU") == 1);  // the count out
    CHECK(count_in(k.code, "MEMBAR.ALL.GPU") + count_in(k.code, "MEMBAR.SC") + count_in(k.code, "CCTL") == 0);  // no fence
    CHECK(count_in(k.code, "STG.E.128.STRONG.GPU") == 1);   // the block's tagged words of a channel
    CHECK(count_in(k.code, "LDG.E.128.STRONG.GPU") == 5);   // 5 blocks' words at once
    CHECK(count_in(k.code, "NANOSLEEP") > count_in(k.code, "NANOSLEEP.SYNCS"));
    CHECK(count_in(k.code, "DADD") >= 2 * 2 * 4);             // two block sums: at least 4 levels of two additions
    CHECK(count_in(k.code, "SHFL.BFLY") >= 2 * 2 * 2 * 4 + 3);  // each level shuffles two doubles in halves; the mask's 3
    CHECK(count_in(k.code, "SHFL.DOWN") == 0);                // no Chan tree
    CHECK(count_in(k.code, half ? "STG.E.EF.64" : "STG.E.EF.128") == 1);  // y's pack
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("bwd v21: dy and x by the copy engine (4 UBLKCP each), v14's tags and flags with no fence, the sums in "
          "double (DADD, butterflies), dx (and dr) in packs of 4 from shared memory; no spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const auto& [name, add, half] : {std::tuple{"bwd_v21_resident_kernel<float, false>", false, false},
                                        std::tuple{"bwd_v21_resident_kernel<float, true>", true, false},
                                        std::tuple{"bwd_v21_resident_kernel<__half, false>", false, true},
                                        std::tuple{"bwd_v21_resident_kernel<__half, true>", true, true}}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(count_in(k.code, "UBLKCP") == 8);                  // 4 pieces of x, 4 of dy
    CHECK(count_in(k.code, "ATOM.E") == 0);                  // no grid barrier
    CHECK(count_in(k.code, "ATOMG.E.ADD.STRONG.GPU") == 1);  // the count out
    CHECK(count_in(k.code, "MEMBAR.ALL.GPU") + count_in(k.code, "MEMBAR.SC") + count_in(k.code, "CCTL") == 0);  // no fence
    CHECK(count_in(k.code, "STG.E.128.STRONG.GPU") == 1);   // the block's tagged sums of a channel
    CHECK(count_in(k.code, "LDG.E.128.STRONG.GPU") == 5);   // 5 blocks' words at once
    CHECK(count_in(k.code, "NANOSLEEP") > count_in(k.code, "NANOSLEEP.SYNCS"));
    CHECK(count_in(k.code, "DADD") >= 2 * 2 * 4);  // two block sums in double
    CHECK(count_in(k.code, "SHFL.DOWN") == 0);     // no Chan tree
    CHECK(count_in(k.code, half ? "LDS.64" : "LDS.128") >= 2);  // a pack of x and of dy from shared memory
    CHECK(count_in(k.code, half ? "STG.E.64.STRONG.SM" : "STG.E.128.STRONG.SM") == (add ? 2 : 1));  // dx's pack (and dr's)
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v15: every value's load issued before the first sum, the sums in double, one cluster barrier and the other "
          "blocks' sums read from their shared memory, the mask's words ORed in shared memory; no spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const auto& [name, fwd, half] : {std::tuple{"fwd_v15_one_cluster_kernel<float, false>", true, false},
                                        std::tuple{"fwd_v15_one_cluster_kernel<float, true>", true, false},
                                        std::tuple{"fwd_v15_one_cluster_kernel<__half, false>", true, true},
                                        std::tuple{"fwd_v15_one_cluster_kernel<__half, true>", true, true},
                                        std::tuple{"bwd_v15_one_cluster_kernel<float, false>", false, false},
                                        std::tuple{"bwd_v15_one_cluster_kernel<float, true>", false, false},
                                        std::tuple{"bwd_v15_one_cluster_kernel<__half, false>", false, true},
                                        std::tuple{"bwd_v15_one_cluster_kernel<__half, true>", false, true}}) {
    const auto& k = kernel(name);
    INFO(k.name);
    // x's 8 values (and dy's in the backward) before the first conversion to double.
    const std::string load = half ? "LDG.E.U16" : "LDG.E";
    CHECK(nth(k.code, {load}, fwd ? 8 : 16) < nth(k.code, {"F2F.F64"}, 1));
    CHECK(count_in(k.code, "DADD") >= 2 * 2 * 4);  // the block's sum: at least 4 butterfly levels of two additions
    CHECK(count_in(k.code, "UCGABAR_ARV") == 2);   // the cluster barrier, and the arrival after the reads
    CHECK(count_in(k.code, "UCGABAR_WAIT") == 2);
    CHECK(count_in(k.code, "LD.E.64") >= 2);       // another block's sums of a channel, through the cluster's window
    CHECK(count_in(k.code, "ATOMG") + count_in(k.code, "RED.E") + count_in(k.code, "ATOM.E") == 0);  // nothing merged in global memory
    CHECK(count_in(k.code, "ATOMS.OR") == (fwd ? 2 * 8 - 1 : 0));  // per value, a word or two; the first lands on a word's start
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v30: v15's loads before the first sum; a relaxed arrival before the loads, its wait before the first 16-byte "
          "store to another block's shared memory, the cluster barrier after the last; none read from them; no spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* dir : {"fwd", "bwd"})
    for (const char* type : {"float", "__half"})
      for (const char* add : {"false", "true"}) {
        const auto& k = kernel(std::string(dir) + "_v30_pushed_sums_kernel<" + type + ", " + add + ">");
        INFO(k.name);
        const bool fwd = std::string(dir) == "fwd", half = std::string(type) == "__half";
        CHECK(nth(k.code, {half ? "LDG.E.U16" : "LDG.E"}, fwd ? 8 : 16) < nth(k.code, {"F2F.F64"}, 1));
        CHECK(count_in(k.code, "UCGABAR_ARV") == 2);  // the start's arrival and the cluster barrier: none at the end
        CHECK(count_in(k.code, "UCGABAR_WAIT") == 2);
        const int stores = count_in(k.code, "ST.E.128");  // a (block, channel)'s two sums, through the cluster's window
        CHECK(stores >= 1);
        CHECK(nth(k.code, {"UCGABAR_ARV"}, 1) < nth(k.code, {"LDG"}, 1));
        CHECK(nth(k.code, {"UCGABAR_WAIT"}, 1) < nth(k.code, {"ST.E.128"}, 1));
        CHECK(nth(k.code, {"ST.E.128"}, stores) < nth(k.code, {"UCGABAR_ARV"}, 2));
        CHECK(count_in(k.code, "LD.E.64") + count_in(k.code, "LD.E.128") == 0);  // nothing read from another block
        CHECK(tut::count_opcode(k, "LDL") == 0);
        CHECK(tut::count_opcode(k, "STL") == 0);
      }
}

TEST_CASE("v16: every value's load (x, r, K*) issued before the block's first barrier, the sums in double, shared mask "
          "words by reductions in global memory; no spill" * doctest::skip(kNoCuobjdump)) {
  for (const char* type : {"float", "__half"})
    for (const char* add : {"false", "true"})
      for (const int items : {8, 16, 32}) {  // blocks of 512, 256 and 128 threads
        const auto& k = kernel(std::string("fwd_v16_channel_blocks_kernel<") + type + ", " + add + ", " + std::to_string(items) + ">");
        INFO(k.name);
        const bool half = std::string(type) == "__half", with_r = std::string(add) == "true";
        const std::string load = half ? "LDG.E.U16" : "LDG.E";
        CHECK(nth(k.code, {load}, items * (with_r ? 2 : 1) + 1) < nth(k.code, {"BAR.SYNC"}, 1));  // x (and r), and K*
        CHECK(count_in(k.code, "DADD") >= 2 * items);  // a deviation and a sum per value, in double
        CHECK(count_in(k.code, "SHFL.BFLY") >= 2 * 2 * 5);  // the warp's butterfly: two doubles, five levels
        CHECK(count_in(k.code, "REDG.E.AND") == items);  // a word shared with another block: its bits cleared,
        CHECK(count_in(k.code, "REDG.E.OR") == items);   // then set
        CHECK(count_in(k.code, "ATOMS") == 0);
        CHECK(tut::count_opcode(k, "LDL") == 0);
        CHECK(tut::count_opcode(k, "STL") == 0);
      }
}

TEST_CASE("v20: the pass fills its stages by 16-byte cp.async before it waits (ACQBULK), the backward's 4 of dy and x "
          "with the mask word by a 4-byte one, the forward's 8 of x or 4 of x and r; in its loop it waits for the oldest "
          "stage (DEPBAR) and refills it" *
          doctest::skip(kNoCuobjdump)) {
  struct Pass {
    const char* name;
    int packs_before, words_before, packs_after;  // LDGSTS of 16 and of 4 bytes
  };
  for (const Pass& c : {Pass{"bwd_v20_pass_kernel<4, float, false, 4>", 8, 4, 2},
                        Pass{"bwd_v20_pass_kernel<8, __half, false, 4>", 8, 4, 2},
                        Pass{"bwd_v20_pass_kernel<8, __half, true, 4>", 8, 4, 2},
                        Pass{"fwd_v20_pass_kernel<4, float, false, 8>", 8, 0, 1},
                        Pass{"fwd_v20_pass_kernel<8, __half, false, 8>", 8, 0, 1},
                        Pass{"fwd_v20_pass_kernel<8, __half, true, 4>", 8, 0, 2}}) {
    const auto& k = kernel(c.name);
    INFO(k.name);
    const auto wait = std::find_if(k.code.begin(), k.code.end(),
                                   [](const tut::SassInstruction& i) { return i.opcode == "ACQBULK"; });
    REQUIRE(wait != k.code.end());
    const std::vector<tut::SassInstruction> before(k.code.begin(), wait), after(wait, k.code.end());
    CHECK(count_in(before, "LDGSTS", 128) == c.packs_before);
    CHECK(count_in(before, "LDGSTS", 32) == c.words_before);
    CHECK(count_in(after, "LDGSTS", 128) == c.packs_after);  // the refill, once a chunk
    CHECK(count_in(after, "DEPBAR") >= 1);
  }
}

TEST_CASE("v26: a thread's packs loaded as 16-byte loads and y stored as 16-byte stores, R of each; one grid barrier; no spill" *
          doctest::skip(kNoCuobjdump)) {
  // R = 8 in each type, with and without the add (x's 8 packs, and r's in the pass).
  for (const auto& [name, loads] : std::vector<std::pair<const char*, int>>{
           {"fwd_v26_channel_groups_kernel<__half, false, 8>", 8},
           {"fwd_v26_channel_groups_kernel<__half, true, 8>", 16},
           {"fwd_v26_channel_groups_kernel<float, false, 8>", 8},
           {"fwd_v26_channel_groups_kernel<float, true, 8>", 16}}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) == loads);
    CHECK(tut::count_memory_ops(k, "STG", 128) == 8);
    CHECK(tut::count_opcode(k, "ATOM") >= 1);  // grid.sync(): an arrival on a counter in global memory
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v28: the walk's 8 loads of 16 bytes issued before the first sum, in both types, no spill; built as v27 was "
          "(3 blocks an SM, 4 loads), the half walk uses its first load before it issues the second" *
          doctest::skip(kNoCuobjdump)) {
  // A sum: the half walk converts first (HADD2.F32), the float walk subtracts K (FADD).
  const std::vector<std::string> use = {"HADD2.F32", "FADD"};
  for (const char* name : {"fwd_v28_stats_kernel<8, __half, 2, 8>", "fwd_v28_stats_kernel<4, float, 2, 8>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    const auto loop = tut::main_loop(k, "LDG.E.128");  // the walk
    CHECK(count_in(loop, "LDG", 128) == 8);
    CHECK(nth(loop, {"LDG.E.128"}, 8) < nth(loop, use, 1));
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
  const auto loop = tut::main_loop(kernel("fwd_v28_stats_kernel<8, __half, 3, 4>"), "LDG.E.128");
  CHECK(count_in(loop, "LDG", 128) == 4);
  CHECK(nth(loop, {"LDG.E.128"}, 2) > nth(loop, use, 1));
}

TEST_CASE("v29: the walk's 4 loads of 16 bytes issued before its first sum, the kept packs to shared memory in 16 "
          "bytes and back in the pass, y in 16-byte stores, no spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"fwd_v29_kernel<__half, false>", "fwd_v29_kernel<__half, true>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    const auto walk = tut::loop_around(k, "STS.128");  // the walk stores the packs it keeps
    CHECK(count_in(walk, "LDG", 128) == 4);
    CHECK(nth(walk, {"LDG.E.128"}, 4) < nth(walk, {"HADD2.F32"}, 1));
    CHECK(tut::count_memory_ops(k, "LDS", 128) >= 1);
    CHECK(tut::count_memory_ops(k, "STG", 128) >= 1);
    CHECK(tut::count_opcode(k, "ATOM") >= 1);  // grid.sync(): an arrival on a counter in global memory
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}

TEST_CASE("v31: the walk's 6 packs of dy and 6 of x (16 bytes each) issued before its first sum, the held packs "
          "to shared memory in 16 bytes and back in the pass, dx in 16-byte stores, no spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"bwd_v31_kernel<__half, false>", "bwd_v31_kernel<__half, true>", "bwd_v31_kernel<float, false>",
                           "bwd_v31_kernel<float, true>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    const auto walk = tut::loop_around(k, "STS.128");  // the walk stores the packs it keeps
    CHECK(count_in(walk, "LDG", 128) == 12);  // kV31Ahead packs of dy and of x
    CHECK(nth(walk, {"LDG.E.128"}, 12) < nth(walk, {"HADD2.F32", "FADD", "FFMA"}, 1));
    CHECK(tut::count_memory_ops(k, "LDS", 128) >= 2);
    CHECK(tut::count_memory_ops(k, "STG", 128) >= 1);
    CHECK(tut::count_opcode(k, "ATOM") >= 1);  // grid.sync(): an arrival on a counter in global memory
    CHECK(tut::count_opcode(k, "LDL") == 0);
    CHECK(tut::count_opcode(k, "STL") == 0);
  }
}
