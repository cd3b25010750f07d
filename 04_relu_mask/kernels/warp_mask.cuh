// From ballots to mask words, for a warp whose lanes each hold a pack of kPer consecutive elements
// (v3: 16 bytes, so 4 floats or 8 halves per lane; the warp holds 32 * kPer elements = kPer words).
//
// Ballot k (k = 0 .. kPer-1) asks every lane about its k-th element: bit t of ballot k is element
// kPer * t + k of the warp's chunk. The format wants element e at bit e % 32 of word e / 32, so
// word w is made of lanes (32 / kPer) * w .. (32 / kPer) * (w + 1) - 1, and lane t's k-th element
// goes to bit kPer * (t - (32 / kPer) * w) + k. Each ballot therefore contributes a field of
// 32 / kPer bits to word w, spread out so that consecutive bits land kPer apart, shifted by k:
//
//   word w = OR over k of  spread<kPer>( (ballot_k >> (32 / kPer) * w) & field ) << k
//
// spread<4> puts bit i of an 8-bit field at bit 4i; spread<8> puts bit i of a 4-bit field at 8i.
// Both are three shift-or-mask steps (the bit interleave of Morton codes). Host and device, so the
// CPU tests check them against the plain loop.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CH04_HD __host__ __device__ __forceinline__
#else
#define CH04_HD inline
#endif

namespace ch04 {

// The plain definition: bit i of x (i < 32 / kPer) to bit kPer * i.
template <int kPer>
CH04_HD std::uint32_t spread_loop(std::uint32_t x) {
  std::uint32_t out = 0;
  for (int i = 0; i < 32 / kPer; ++i) out |= ((x >> i) & 1u) << (kPer * i);
  return out;
}

template <int kPer>
CH04_HD std::uint32_t spread(std::uint32_t x) {
  static_assert(kPer == 1 || kPer == 2 || kPer == 4 || kPer == 8, "a pack of 1, 2, 4 or 8 elements");
  if constexpr (kPer == 1) {
    return x;
  } else if constexpr (kPer == 2) {
    x &= 0xffffu;
    x = (x | (x << 8)) & 0x00ff00ffu;
    x = (x | (x << 4)) & 0x0f0f0f0fu;
    x = (x | (x << 2)) & 0x33333333u;
    return (x | (x << 1)) & 0x55555555u;
  } else if constexpr (kPer == 4) {
    x &= 0xffu;
    x = (x | (x << 12)) & 0x000f000fu;
    x = (x | (x << 6)) & 0x03030303u;
    return (x | (x << 3)) & 0x11111111u;
  } else {
    x &= 0xfu;
    x = (x | (x << 14)) & 0x00030003u;
    return (x | (x << 7)) & 0x01010101u;
  }
}

// Word w (0 .. kPer-1) of the warp's chunk from its kPer ballots.
template <int kPer>
CH04_HD std::uint32_t word_from_ballots(const std::uint32_t (&ballots)[kPer], int w) {
  constexpr int kLanesPerWord = 32 / kPer;
  constexpr std::uint32_t kField = kLanesPerWord == 32 ? 0xffffffffu : (1u << kLanesPerWord) - 1u;
  std::uint32_t word = 0;
  for (int k = 0; k < kPer; ++k) word |= spread<kPer>((ballots[k] >> (kLanesPerWord * w)) & kField) << k;
  return word;
}

}  // namespace ch04

#undef CH04_HD
