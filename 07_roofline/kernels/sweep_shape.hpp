// The shape of the sweep's pack kernel (kernels/sweep.cuh), in plain C++ so that the SASS test
// (tests/test_sass.cpp) reads the same numbers the kernels are built with.
//
// A tile is kBlock threads x packs 16-byte packs: 4 x packs values per thread, each its own chain of
// FMAs. A block takes tiles_per_block(...) consecutive tiles and loads tile k + 1 before it computes
// tile k.
#pragma once

namespace ch07 {

inline constexpr int kBlock = 256;
inline constexpr int kPacksF32 = 1;         // float: 4 chains per thread
inline constexpr int kPacksF16 = 2;         // pairs of halves: 8 chains per thread
inline constexpr int kTilesPerBlock = 4;    // near the ridge, so loads overlap FMAs
inline constexpr int kLongBody = 4096;      // FMA instructions from which a block takes one tile

// FMA instructions in one thread's unrolled body, and the tiles a block takes.
constexpr int body_fmas(int packs, int fmas_per_value) { return 4 * packs * fmas_per_value; }
constexpr int tiles_per_block(int packs, int fmas_per_value) {
  return body_fmas(packs, fmas_per_value) >= kLongBody ? 1 : kTilesPerBlock;
}

}  // namespace ch07
