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

// Global loads with and without a predicate (@P0 LDG ...).
int loads(const tut::SassKernel& k, bool predicated) {
  int n = 0;
  for (const auto& i : k.code)
    if (i.opcode.rfind("LDG", 0) == 0 && (i.text.rfind("@", 0) == 0) == predicated) ++n;
  return n;
}
int spills(const tut::SassKernel& k) { return tut::count_opcode(k, "LDL") + tut::count_opcode(k, "STL"); }

const std::vector<std::string> kUnrolled = {"fwd_v1_unrolled_kernel<", "fwd_v2_interior_border_kernel<",
                                            "fwd_v4_layout_ncdt_kernel<", "fwd_v5_layout_dhw_kernel<"};
}  // namespace

TEST_CASE("v1 unrolls a 3x3x3 window: 27 loads, nearly all behind a bounds predicate" * doctest::skip(kNoCuobjdump)) {
  // The compiler turns one or two of the predicates into a branch around the load; the others stay
  // predicated (@P LDG), with -inf moved into the register beforehand.
  const auto& k = kernel("fwd_v1_unrolled_kernel<3, float>");
  CHECK(loads(k, true) + loads(k, false) >= 27);
  CHECK(loads(k, true) >= 24);
  const auto& k2 = kernel("fwd_v1_unrolled_kernel<2, float>");
  CHECK(loads(k2, true) + loads(k2, false) >= 8);
}

TEST_CASE("replaces() compiles to compares and selects, with no bool materialized per cell" *
          doctest::skip(kNoCuobjdump)) {
  // With `||` the compiler stored each cell's verdict as a byte (PRMT) and tested it again.
  for (const auto& name : {"fwd_v1_unrolled_kernel<3, float>", "fwd_v2_interior_border_kernel<3, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "PRMT") <= 2);
    CHECK(tut::count_opcode(k, "FSETP") >= 27);
  }
}

TEST_CASE("v2's interior path loads without predicates, its border path keeps them, and the warp votes" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* t : {"float", "__half"}) {
    const auto& k = kernel(std::string("fwd_v2_interior_border_kernel<3, ") + t + ">");
    INFO(k.name);
    CHECK(loads(k, false) >= 27);
    CHECK(loads(k, true) >= 24);
    CHECK(tut::count_opcode(k, "VOTE") >= 1);
  }
}

TEST_CASE("v0 divides in 64 bits by calls to a routine; v1's 32-bit path multiplies instead" *
          doctest::skip(kNoCuobjdump)) {
  // v0 decodes every output with 64-bit / and %: the compiler calls its division routine.
  const auto& v0 = kernel("fwd_v0_naive_kernel<float>");
  CHECK(tut::count_opcode(v0, "CALL") >= 4);
  // v1's decoder divides with FastDiv when the output has < 2^31 elements: IMAD.HI, the multiply-high.
  CHECK(tut::count_opcode(kernel("fwd_v1_unrolled_kernel<3, float>"), "IMAD.HI") >= 3);
}

TEST_CASE("no local-memory spills in the unrolled, tiled, separable, channels-last and backward kernels" *
          doctest::skip(kNoCuobjdump)) {
  // The generic bodies (K = 0) keep a word or two on the stack in some of them (v1, v4, v5 at
  // this writing): not checked.
  for (const auto& prefix : kUnrolled)
    for (const char* k : {"2", "3", "4", "8"}) {
      const auto& kk = kernel(prefix + k + ", float>");
      INFO(kk.name);
      CHECK(spills(kk) == 0);
    }
  for (const char* name : {"fwd_v3_shared_tile_kernel<float>", "fwd_v6_pass_kernel<true, false, float>",
                           "fwd_v6_pass_kernel<false, false, float>", "fwd_v6_last_pass_kernel<false, float>", "fwd_v7_channels_last_kernel<4, float>",
                           "bwd_v0_scatter_atomic_kernel<float>", "bwd_v1_gather_kernel<false, float>",
                           "bwd_v3_segments_ncdhw_kernel<4, float>", "bwd_v3_segments_ndhwc_kernel<4, float>",
                           "bwd_v4_tile_mask_kernel<float>", "bwd_v5_chunk_writer_kernel<4, float>",
                           "bwd_v6_staged_tile_kernel<float>", "fwd_v8_ncdhw_kernel<4, float>",
                           "fwd_v8_ndhwc_kernel<4, float>"}) {
    const auto& kk = kernel(name);
    INFO(kk.name);
    CHECK(spills(kk) == 0);
  }
}

TEST_CASE("v6's van Herk passes: 2 FSETPs per combine, 20 combines per 8 outputs for k = 8, no spills" *
          doctest::skip(kNoCuobjdump)) {
  // Combines per 8 outputs (kernels/fwd_v6_separable.cuh): 20 for k = 8, 18 for k = 5, 13 for k = 3;
  // each is a compare and a NaN test. The direct form's kernel has k's loop for any k up to 8.
  const std::vector<std::pair<std::string, int>> combines = {{"8", 20}, {"5", 18}, {"3", 13}};
  for (const auto& [k, n] : combines) {
    for (const char* form : {"false, false", "true, false", "false, true"}) {
      const auto& kk = kernel("fwd_v6_van_herk_kernel<" + k + ", " + form + ", float>");
      INFO(kk.name);
      CHECK(tut::count_opcode(kk, "FSETP") == 2 * n);
      CHECK(spills(kk) == 0);
    }
    const auto& row = kernel("fwd_v6_row_kernel<" + k + ", float>");
    INFO(row.name);
    CHECK(tut::count_opcode(row, "FSETP") == 2 * n);
    CHECK(tut::count_opcode(row, "LDS") >= 8 + std::stoi(k) - 1);  // the thread's cells, from shared memory
    CHECK(tut::count_opcode(row, "BAR") >= 2);
    CHECK(spills(row) == 0);
  }
  CHECK(tut::count_opcode(kernel("fwd_v6_slide_kernel<false, false, float>"), "FSETP") >= 2 * 56);
}

TEST_CASE("v3 stages through shared memory: stores, loads and barriers" * doctest::skip(kNoCuobjdump)) {
  const auto& k = kernel("fwd_v3_shared_tile_kernel<float>");
  CHECK(tut::count_opcode(k, "STS") >= 1);
  CHECK(tut::count_opcode(k, "LDS") >= 1);
  CHECK(tut::count_opcode(k, "BAR") >= 2);
}

TEST_CASE("v8 reads 16 bytes per load, a batch before the compares; its NDHWC lanes combine with shuffles" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"fwd_v8_ncdhw_kernel<4, float>", "fwd_v8_ndhwc_kernel<4, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) >= 8);
  }
  CHECK(tut::count_opcode(kernel("fwd_v8_ndhwc_kernel<4, float>"), "SHFL.BFLY") >= 8);  // 4 channels x (value, cell)
}

TEST_CASE("v7 moves 16 bytes per load and per store of y" * doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"fwd_v7_channels_last_kernel<4, float>", "fwd_v7_channels_last_kernel<8, __half>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) >= 1);
    CHECK(tut::count_memory_ops(k, "STG", 128) == 1);
  }
  CHECK(tut::count_memory_ops(kernel("fwd_v7_channels_last_kernel<1, float>"), "LDG", 128) == 0);
  // Narrow cells (C = 2 floats, 8 bytes): the row-pieces kernel reads 16 bytes, two cells, per load,
  // a batch of 4 before the first compare, and nothing narrower.
  const auto& pieces = kernel("fwd_v7_row_pieces_kernel<2, float>");
  CHECK(tut::count_memory_ops(pieces, "LDG", 128) >= 4);
  CHECK(tut::count_memory_ops(pieces, "LDG", 64) == 0);
  CHECK(tut::count_memory_ops(kernel("fwd_v7_disjoint_kernel<2, float>"), "LDG", 64) >= 1);  // what it replaces there
}

TEST_CASE("the scatter adds with atomics; the gathers add without" * doctest::skip(kNoCuobjdump)) {
  const auto& scatter = kernel("bwd_v0_scatter_atomic_kernel<float>");
  CHECK(tut::count_opcode(scatter, "RED") + tut::count_opcode(scatter, "ATOM") >= 1);
  for (const char* name : {"bwd_v1_gather_kernel<false, float>", "bwd_v2_gather_list_kernel<false, float>"}) {
    const auto& gather = kernel(name);
    INFO(gather.name);
    CHECK(tut::count_opcode(gather, "RED") + tut::count_opcode(gather, "ATOM") == 0);
  }
  // v2's list append is one integer atomic per warp, not a float one.
  const auto& split = kernel("bwd_v2_split_kernel<float>");
  CHECK(tut::count_opcode(split, "ATOMG") + tut::count_opcode(split, "RED") + tut::count_opcode(split, "ATOM") >= 1);
}

TEST_CASE("v3 and v4 write dx without global atomics; v4 marks in shared memory; v3 stores 16 bytes" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"bwd_v3_segments_ncdhw_kernel<4, float>", "bwd_v3_segments_ndhwc_kernel<4, float>",
                           "bwd_v4_tile_mask_kernel<float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "RED") + tut::count_opcode(k, "ATOMG") == 0);
  }
  const auto& tile = kernel("bwd_v4_tile_mask_kernel<float>");
  CHECK(tut::count_opcode(tile, "ATOMS.OR") >= 1);  // the marks
  CHECK(tut::count_opcode(tile, "BAR") >= 3);
  CHECK(tut::count_memory_ops(kernel("bwd_v3_segments_ncdhw_kernel<4, float>"), "STG", 128) >= 1);
  CHECK(tut::count_memory_ops(kernel("bwd_v3_segments_ndhwc_kernel<4, float>"), "STG", 128) >= 1);
}

TEST_CASE("v5 stores 16 bytes per thread and v6 marks in shared memory; neither has a global atomic" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"bwd_v5_chunk_writer_kernel<4, float>", "bwd_v6_staged_tile_kernel<float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "RED") + tut::count_opcode(k, "ATOMG") == 0);
  }
  // One 16-byte store per layout's path (NCDHW rows, NDHWC channels).
  CHECK(tut::count_memory_ops(kernel("bwd_v5_chunk_writer_kernel<4, float>"), "STG", 128) == 2);
  const auto& staged = kernel("bwd_v6_staged_tile_kernel<float>");
  CHECK(tut::count_opcode(staged, "ATOMS.OR") >= 1);   // the marks
  CHECK(tut::count_opcode(staged, "BAR") >= 3);        // stage | zero or list | gather the listed
  CHECK(tut::count_opcode(staged, "VOTE") >= 1);       // the list: one shared atomic per warp
  // v4 divided its tile number in 64 bits at every tile (calls to the division routine); v6 adds.
  CHECK(tut::count_opcode(staged, "CALL") == 0);
  CHECK(tut::count_opcode(kernel("bwd_v4_tile_mask_kernel<float>"), "CALL") >= 1);
}

TEST_CASE("v7, v8 and v9 write dx without atomics; v8 zeroes in 16-byte stores; v9 adds in shared memory between barriers" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"bwd_v7_store_kernel<float>", "bwd_v8_slab_writer_kernel<4, float>",
                           "bwd_v9_ordered_tile_kernel<float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "RED") + tut::count_opcode(k, "ATOM") == 0);  // ATOM covers ATOMS and ATOMG
    // v9 holds 8 outputs per thread in 64 registers (two blocks of 512 per SM): the compiler keeps one
    // value on the stack, stored once and read back twice per tile.
    CHECK(spills(k) <= (std::string(name).find("v9") != std::string::npos ? 3 : 0));
  }
  CHECK(tut::count_memory_ops(kernel("bwd_v8_slab_writer_kernel<4, float>"), "STG", 128) >= 1);
  const auto& tile = kernel("bwd_v9_ordered_tile_kernel<float>");
  CHECK(tut::count_opcode(tile, "BAR") >= 3);  // before each rank's adds, after the last, after the write
  CHECK(tut::count_opcode(tile, "LDS") >= 1);
  CHECK(tut::count_opcode(tile, "STS") >= 1);
  // The NDHWC kernel: 4 channels of an output per thread, dy in one 16-byte load, dx written 16 bytes
  // at a time, no atomics, nothing on the stack.
  const auto& channels = kernel("bwd_v9_ordered_channels_kernel<float>");
  CHECK(tut::count_opcode(channels, "RED") + tut::count_opcode(channels, "ATOM") == 0);
  CHECK(tut::count_memory_ops(channels, "LDG", 128) >= 2);
  CHECK(tut::count_memory_ops(channels, "STG", 128) >= 1);
  CHECK(tut::count_opcode(channels, "BAR") >= 3);
  CHECK(spills(channels) == 0);
}

TEST_CASE("bwd v18's kernel-3 kernels, asked for 5 blocks of 256 threads per SM: the byte-index one keeps nothing on the stack, the int64 one 4 local loads and stores" *
          doctest::skip(kNoCuobjdump)) {
  CHECK(spills(kernel("bwd_v18_column_walk_kernel<3, 8, 32, unsigned char, float, 5>")) == 0);
  CHECK(spills(kernel("bwd_v18_column_walk_kernel<3, 8, 32, long, float, 5>")) <= 4);
}

TEST_CASE("bwd v13 stores 16 bytes per chunk without atomics; v14 loads and stores 16 bytes of channels without them" *
          doctest::skip(kNoCuobjdump)) {
  const auto& rows = kernel("bwd_v13_prefetch_rows_kernel<4, true, true, float>");
  CHECK(tut::count_opcode(rows, "RED") + tut::count_opcode(rows, "ATOM") == 0);
  CHECK(tut::count_memory_ops(rows, "STG", 128) >= 1);
  CHECK(spills(rows) == 0);
  const auto& gather = kernel("bwd_v14_channel_gather_kernel<4, 0, float>");
  CHECK(tut::count_opcode(gather, "RED") + tut::count_opcode(gather, "ATOM") == 0);
  CHECK(tut::count_memory_ops(gather, "LDG", 128) >= 12);  // a half of 4 slots x (dy, and the int64 index in 2)
  CHECK(tut::count_memory_ops(gather, "STG", 128) >= 1);
  CHECK(spills(gather) == 0);
}

TEST_CASE("bwd v16 stores zeros 16 bytes at a time and each named cell's dy 4 bytes at a time, without atomics" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"bwd_v16_zeros_then_value_kernel<4, true, true, float>", "bwd_v16_zeros_then_value_kernel<4, false, true, float>",
                           "bwd_v16_zeros_then_value_kernel<4, true, false, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "RED") + tut::count_opcode(k, "ATOM") == 0);
    CHECK(tut::count_memory_ops(k, "STG", 128) >= 2);  // the zeros, a loop per item in flight
    CHECK(tut::count_memory_ops(k, "STG", 32) >= 1);   // the named cells
    CHECK(spills(k) == 0);
  }
}

TEST_CASE("bwd v17 writes dx's spans with the bulk copy (UBLKCP), no 16-byte store, no atomics" * doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"bwd_v17_bulk_store_kernel<true, float>", "bwd_v17_bulk_store_kernel<false, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "UBLKCP") >= 1);  // the sm_90 bulk copy from shared to global memory
    CHECK(tut::count_opcode(k, "RED") + tut::count_opcode(k, "ATOM") == 0);
    CHECK(tut::count_memory_ops(k, "STG", 128) == 0);  // the body goes by the copy engine
    CHECK(tut::count_memory_ops(k, "STG", 32) >= 1);   // a span's unaligned ends, by threads
    CHECK(spills(k) == 0);
  }
}

TEST_CASE("fwd v9 reads 16-byte pieces: its NCDHW lanes merge with shuffles, its NDHWC rows through shared memory" *
          doctest::skip(kNoCuobjdump)) {
  // A batch of 8 loads in NCDHW, of 4 in NDHWC (held to 64 registers for 8 blocks per SM), unspilt.
  for (const auto& [name, batch] : {std::pair{"fwd_v9_runs_kernel<4, float>", 8}, std::pair{"fwd_v9_columns_kernel<4, float>", 4}}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "LDG", 128) >= batch);
    CHECK(spills(k) == 0);
  }
  CHECK(tut::count_opcode(kernel("fwd_v9_runs_kernel<4, float>"), "SHFL.BFLY") >= 2);  // (value, cell), in a loop over the lanes
  CHECK(tut::count_opcode(kernel("fwd_v9_columns_kernel<4, float>"), "BAR") >= 2);
}

TEST_CASE("fwd v10 takes the maximum with FMNMX.NAN, in 16-byte pieces" * doctest::skip(kNoCuobjdump)) {
  // 4 pieces of 4 floats a batch, their maximum a tree of 15, the lanes' butterfly after it.
  const auto& runs = kernel("fwd_v10_runs_kernel<4, float>");
  CHECK(tut::count_memory_ops(runs, "LDG", 128) >= 4);
  CHECK(tut::count_opcode(runs, "FMNMX.NAN") >= 15);
  CHECK(spills(runs) == 0);
}

TEST_CASE("fwd v11 takes NDHWC windows with FMNMX.NAN (HMNMX2.NAN, two halves at a time, in half), in 16-byte packs, its rows merged through shared memory" *
          doctest::skip(kNoCuobjdump)) {
  // 4 packs of 4 floats a batch, each channel's maximum a tree of 3: 12 per batch; the rows' merge
  // is one 16-byte store per thread.
  const auto& k = kernel("fwd_v11_columns_kernel<4, float>");
  CHECK(tut::count_memory_ops(k, "LDG", 128) >= 4);
  CHECK(tut::count_opcode(k, "FMNMX.NAN") >= 12);
  CHECK(tut::count_memory_ops(k, "STS", 128) >= 1);
  CHECK(tut::count_opcode(k, "BAR") >= 2);
  CHECK(spills(k) == 0);
  // Half: 4 packs of 8 halves a batch, each channel's tree of 3 taken a pair of channels at a time:
  // 12 HMNMX2.NAN per batch, where a value-by-value rule (v7's) compares each half on its own.
  const auto& h = kernel("fwd_v11_columns_kernel<8, __half>");
  CHECK(tut::count_memory_ops(h, "LDG", 128) >= 4);
  CHECK(tut::count_opcode(h, "HMNMX2.NAN") >= 12);
  // Not asserted: at its 64 registers this kernel keeps 20 bytes a thread in local memory (a few
  // values stored once and reloaded in the loops), where the float one keeps none.
}

TEST_CASE("v10 stores 16 bytes per chunk without atomics; v11 gathers and v12 adds without them" *
          doctest::skip(kNoCuobjdump)) {
  const auto& rows = kernel("bwd_v10_row_writer_kernel<4, true, float>");
  CHECK(tut::count_opcode(rows, "RED") + tut::count_opcode(rows, "ATOM") == 0);
  CHECK(tut::count_memory_ops(rows, "STG", 128) >= 1);
  CHECK(spills(rows) == 0);
  for (const char* name : {"bwd_v11_window_gather_kernel<2, float>", "bwd_v11_window_gather_kernel<3, float>",
                           "bwd_v12_class_pass_kernel<float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "RED") + tut::count_opcode(k, "ATOM") == 0);
    CHECK(spills(k) == 0);
  }
}

TEST_CASE("bwd v15 stages in shared memory between barriers and writes dx without atomics" * doctest::skip(kNoCuobjdump)) {
  // Kernel 3 (int64, uint8) and kernel 8 (int64, int16), the suite's tilings: no global or shared
  // atomic (the stages' sums are plain adds in a fixed order), two barriers per plane plus the one
  // after the ring is emptied and the one at the end of an (n, c) plane; (value, code) pairs move
  // as 64-bit shared loads and stores.
  for (const char* name : {"bwd_v15_separable_stages_kernel<3, 4, 64, long, float>",
                           "bwd_v15_separable_stages_kernel<3, 8, 32, unsigned char, float>",
                           "bwd_v15_separable_stages_kernel<8, 16, 32, long, float>",
                           "bwd_v15_separable_stages_kernel<8, 16, 16, short, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "RED") + tut::count_opcode(k, "ATOM") == 0);  // ATOM covers ATOMS and ATOMG
    CHECK(tut::count_opcode(k, "BAR") >= 4);
    CHECK(tut::count_memory_ops(k, "LDS", 64) >= 1);
    CHECK(tut::count_memory_ops(k, "STS", 64) >= 1);
  }
}

TEST_CASE("bwd v19 adds 32-bit integer pieces with native shared atomics: no compare-and-swap loop, no float or global atomic" *
          doctest::skip(kNoCuobjdump)) {
  // Three ATOMS.ADD per term (the 21-bit pieces); a 64-bit shared add would be ATOMS.CAST.SPIN.64 in
  // a loop. dx is stored once per cell, with no global atomic; the block's range of dy is reduced
  // with REDUX (the warp) and shared ATOMS.MAX / MIN.
  for (const char* name : {"bwd_v19_fixed_point_tile_kernel<long, float>",
                           "bwd_v19_fixed_point_tile_kernel<unsigned char, float>",
                           "bwd_v19_fixed_point_tile_kernel<short, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "ATOMS.ADD") >= 3);
    CHECK(tut::count_opcode(k, "ATOMS.CAS") == 0);
    CHECK(tut::count_opcode(k, "RED.") + tut::count_opcode(k, "ATOMG") == 0);  // "RED." leaves out REDUX
    CHECK(tut::count_opcode(k, "REDUX") >= 2);
    CHECK(spills(k) == 0);
  }
}

TEST_CASE("bwd v21 adds each run's 64-bit integer with one native global reduction: no compare-and-swap loop, no float atomic, no spills" *
          doctest::skip(kNoCuobjdump)) {
  // REDG.E.ADD.64 is the native 64-bit integer add at the L2 (atomicAdd on unsigned long long whose
  // result is unused); a float atomic would be REDG.E.ADD.F32, a CAS loop ATOMG.E.CAS. The runs'
  // sums are a scan of SHFL.UP: 5 steps of a 64-bit value, 2 shuffles each, and one for the key.
  constexpr int kV21Chunks = 4;  // kGlobChunks in kernels/bwd_v21_fixed_point_global.cuh
  for (const char* name : {"bwd_v21_scatter_kernel<long, float>", "bwd_v21_scatter_kernel<unsigned char, float>",
                           "bwd_v21_scatter_kernel<short, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "REDG.E.ADD.64") == kV21Chunks);  // one per chunk of the unrolled loop
    CHECK(tut::count_opcode(k, "REDG.E.ADD.F") + tut::count_opcode(k, "ATOM") == 0);
    CHECK(tut::count_opcode(k, "SHFL.UP") >= 11 * kV21Chunks);
    CHECK(spills(k) == 0);
  }
}

TEST_CASE("bwd v23 adds each run's 64-bit integer with a native global reduction, and v22 drops its counters from the L2 once rounded: no compare-and-swap loop, no float atomic, no spills" *
          doctest::skip(kNoCuobjdump)) {
  // A lane's runs are added where they close: inside the lane (one site per later output of its 4),
  // its first run, and its last; the warp's scan is a chain of SHFL.UP as in v21.
  for (const char* name : {"bwd_v23_scatter_kernel<false, false, false, long, float>", "bwd_v23_scatter_kernel<false, false, false, unsigned char, float>",
                           "bwd_v23_scatter_kernel<false, false, false, short, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_opcode(k, "REDG.E.ADD.64") >= 2);
    CHECK(tut::count_opcode(k, "REDG.E.ADD.F") + tut::count_opcode(k, "ATOM") == 0);
    CHECK(tut::count_opcode(k, "SHFL.UP") >= 11);
    CHECK(spills(k) == 0);
  }
  // discard.global.L2 is CCTL.E.RML2 on sm_90: in v22's rounding, not in v21's (which v23 takes).
  const auto& round = kernel("bwd_v21_round_kernel<true, false, float, 4>");
  CHECK(tut::count_opcode(round, "CCTL.E.RML2") == 1);
  CHECK(tut::count_opcode(kernel("bwd_v21_round_kernel<false, false, float, 4>"), "CCTL") == 0);
  CHECK(spills(round) == 0);
}

TEST_CASE("bwd v24's scatter computes each term without a branch: fewer reconvergence points and fewer instructions than v23's, no spills" *
          doctest::skip(kNoCuobjdump)) {
  // glob_term returns early at each check; glob_term_flat selects once. On sm_90 with nvcc 13.0,
  // v23's scatter for the int64 index has 976 instructions with 17 BSSY, v24's 888 with 8.
  for (const char* index : {"long", "unsigned char", "short"}) {
    const auto& v23 = kernel(std::string("bwd_v23_scatter_kernel<false, false, false, ") + index + ", float>");
    const auto& v24 = kernel(std::string("bwd_v23_scatter_kernel<true, false, false, ") + index + ", float>");
    INFO(v24.name);
    CHECK(tut::count_opcode(v24, "BSSY") < tut::count_opcode(v23, "BSSY"));
    CHECK(v24.code.size() < v23.code.size());
    CHECK(tut::count_opcode(v24, "REDG.E.ADD.64") >= 2);
    CHECK(tut::count_opcode(v24, "REDG.E.ADD.F") + tut::count_opcode(v24, "ATOM") == 0);
    CHECK(spills(v24) == 0);
  }
}

TEST_CASE("bwd v25 and v26 do not zero their counters in kernel 1; v26's scatter sets a mark beside each add, and its rounding stores dx 16 bytes at a time" *
          doctest::skip(kNoCuobjdump)) {
  // v21's kernel 1 zeroes the counters with 16-byte stores; v25's (Zero false) stores only its partial.
  CHECK(tut::count_memory_ops(kernel("bwd_v21_scale_kernel<true, float>"), "STG", 128) >= 1);
  CHECK(tut::count_memory_ops(kernel("bwd_v21_scale_kernel<false, float>"), "STG", 128) == 0);
  for (const char* index : {"long", "unsigned char", "short"}) {
    const auto& v24 = kernel(std::string("bwd_v23_scatter_kernel<true, false, false, ") + index + ", float>");
    const auto& v26 = kernel(std::string("bwd_v23_scatter_kernel<true, true, false, ") + index + ", float>");
    INFO(v26.name);
    // atomicOr with its result unused: a reduction (RED.E.OR), one beside each 64-bit add.
    CHECK(tut::count_opcode(v24, "REDG.E.OR") == 0);
    CHECK(tut::count_opcode(v26, "REDG.E.OR") == tut::count_opcode(v26, "REDG.E.ADD.64"));
    CHECK(tut::count_opcode(v26, "ATOM") == 0);
    CHECK(spills(v26) == 0);
  }
  for (const char* index : {"long", "unsigned char", "short"})  // v27's scatter: v25's, its first loads earlier
    CHECK(spills(kernel(std::string("bwd_v23_scatter_kernel<true, false, true, ") + index + ", float>")) == 0);
  CHECK(spills(kernel("bwd_v21_round_kernel<false, true, float, 8>")) == 0);
  const auto& round = kernel("bwd_v26_round_kernel<float>");
  CHECK(tut::count_memory_ops(round, "STG", 128) >= 1);  // dx, 4 cells a lane
  CHECK(tut::count_opcode(round, "RED") + tut::count_opcode(round, "ATOM") == 0);
  CHECK(spills(round) == 0);
}

TEST_CASE("fwd v13 reads a window row of its outputs with one 16-byte load where rows allow, cell by cell otherwise, and does not spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* t : {"float", "__half"})
    for (const char* kw : {"1", "2"}) {
      const auto& wide = kernel(std::string("fwd_v13_output_packs_kernel<") + kw + ", " + t + ", true>");
      const auto& narrow = kernel(std::string("fwd_v13_output_packs_kernel<") + kw + ", " + t + ", false>");
      INFO(wide.name);
      CHECK(tut::count_memory_ops(wide, "LDG", 128) >= 1);
      CHECK(tut::count_memory_ops(narrow, "LDG", 128) == 0);
      CHECK(spills(wide) == 0);
      CHECK(spills(narrow) == 0);
    }
}

TEST_CASE("fwd v15 folds its rows with NaN-propagating max, pairs of halves at a time, from 16-byte loads where rows allow, and does not spill" *
          doctest::skip(kNoCuobjdump)) {
  // Kernel 2: a batch is 4 window rows of 16 bytes. In half each row is 4 pairs; sm_90 folds them
  // with VHMNMX.NAN, a three-input form (a pair from each of two rows into the running maximum), 8
  // a batch. In float each row is 4 cells, 16 FMNMX.NAN a batch.
  for (const char* t : {"float", "__half"}) {
    const auto& wide = kernel(std::string("fwd_v15_packs_max_first_kernel<2, ") + t + ", true>");
    const auto& narrow = kernel(std::string("fwd_v15_packs_max_first_kernel<2, ") + t + ", false>");
    INFO(wide.name);
    const bool half = std::string(t) == "__half";
    CHECK(tut::count_memory_ops(wide, "LDG", 128) >= 4);
    CHECK(tut::count_memory_ops(narrow, "LDG", 128) == 0);
    CHECK(tut::count_opcode(wide, half ? "VHMNMX.NAN" : "FMNMX.NAN") >= (half ? 8 : 16));
    CHECK(tut::count_memory_ops(wide, "STG", 64) >= 1);  // y of a pack in one 8-byte store
    CHECK(spills(wide) == 0);
    CHECK(spills(narrow) == 0);
  }
}

TEST_CASE("fwd v14 reads 16-byte pieces where x allows, element by element otherwise, meets its lanes in shuffles, and does not spill" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* t : {"float", "__half"}) {
    const auto& wide = kernel(std::string("fwd_v14_row_lanes_kernel<") + t + ", true>");
    const auto& narrow = kernel(std::string("fwd_v14_row_lanes_kernel<") + t + ", false>");
    INFO(wide.name);
    CHECK(tut::count_memory_ops(wide, "LDG", 128) >= 1);
    CHECK(tut::count_memory_ops(narrow, "LDG", 128) == 0);
    CHECK(tut::count_opcode(wide, "SHFL.BFLY") >= 2);
    CHECK(spills(wide) == 0);
    CHECK(spills(narrow) == 0);
  }
}

TEST_CASE("bwd v29's kernel 1 is shorter than v25's, stores no counters and does not spill" * doctest::skip(kNoCuobjdump)) {
  const auto& v25 = kernel("bwd_v21_scale_kernel<false, float>");
  const auto& v29 = kernel("bwd_v29_scale_kernel<float>");
  CHECK(v29.code.size() < v25.code.size());
  CHECK(tut::count_memory_ops(v29, "STG", 128) == 0);
  CHECK(tut::count_opcode(v29, "FLO") == 12);  // a lowest set bit per dy of a strip of 3 kGlobUnroll, one copy
  CHECK(spills(v29) == 0);
}

TEST_CASE("bwd v20 fills its span with 16-byte stores, meets at a barrier, and has no atomics or spills" *
          doctest::skip(kNoCuobjdump)) {
  for (const char* name : {"bwd_v20_plane_fill_kernel<long, float>", "bwd_v20_plane_fill_kernel<unsigned char, float>",
                           "bwd_v20_plane_fill_kernel<short, float>"}) {
    const auto& k = kernel(name);
    INFO(k.name);
    CHECK(tut::count_memory_ops(k, "STG", 128) >= 1);
    CHECK(tut::count_opcode(k, "BAR") >= 1);
    CHECK(tut::count_opcode(k, "RED.") + tut::count_opcode(k, "ATOM") == 0);
    CHECK(spills(k) == 0);
  }
}
