// The bitmask format: one bit per element of a tensor, packed into 32-bit words. Chapter 04's
// ReLU forward writes it and its backward reads it; chapter 05's fused BN+ReLU uses the same
// definition. Include this header rather than restating the format.
//
//   Bit j of word i is set iff element 32·i + j passed the forward's test ("kept": for ReLU,
//   x > 0 or x is NaN, see the chapter). Bit j is (word >> j) & 1: bit 0 is the least
//   significant.
//   An n-element tensor has word_count(n) = ceil(n / 32) words. In the last word, the bits of
//   elements past n (bits n % 32 .. 31 when n % 32 != 0) are zero. This padding rule makes a mask
//   a function of the tensor alone, so two masks are compared word for word, and a reader that
//   counts set bits need not know n.
//   The mask is indexed by element, not by address: element 0 is bit 0 of word 0 whatever the
//   alignment of the tensor it describes. The words themselves are plain uint32_t, 4-byte aligned.
//
// On a little-endian GPU (all of them), byte b of the word array holds elements 8·b .. 8·b + 7 with
// element 8·b + j at bit j: a kernel may write the mask one byte at a time (chapter 04's v1) and
// the words read back the same.
//
// Helpers (host and device):
//   word_count(n), word_of(i), bit_of(i), test(words, i), valid_bits(n, w), padding_bits(n)
// Host only: reference_word(n, w, keep) and reference(n, keep) build a mask from a predicate
// keep(i) on element indices, for CPU references and tests.
//
// Writing the mask from a warp (host and device, so CPU tests check the arithmetic):
//   One element per lane: __ballot_sync(0xffffffff, keep) is the word of the warp's 32
//   consecutive elements (all 32 lanes must vote; lanes past n vote false).
//   A pack of kPer consecutive elements per lane (16-byte loads: 4 floats, 8 halves): the warp
//   holds 32 * kPer elements, exactly kPer words. Ballot k (k = 0 .. kPer-1) asks every lane
//   about its k-th element, so bit t of ballot k is element kPer * t + k of the warp's chunk. Word
//   w is made of lanes (32 / kPer) * w .. (32 / kPer) * (w + 1) - 1, and lane t's k-th element
//   goes to bit kPer * (t - (32 / kPer) * w) + k. Each ballot therefore contributes a field of
//   32 / kPer bits to word w, spread out so that consecutive bits land kPer apart, shifted by k:
//
//     word w = OR over k of  spread<kPer>( (ballot_k >> (32 / kPer) * w) & field ) << k
//
//   word_from_ballots<kPer>(ballots, w) computes it; spread<4> puts bit i of an 8-bit field at bit
//   4i, spread<8> bit i of a 4-bit field at 8i, each in three shift-or-mask steps (the bit
//   interleave of Morton codes); spread_loop is the plain definition the tests compare with.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define TUT_BITMASK_HD __host__ __device__
#define TUT_BITMASK_INLINE __host__ __device__ __forceinline__
#else
#define TUT_BITMASK_HD
#define TUT_BITMASK_INLINE inline
#endif

namespace tut::bitmask {

using Word = std::uint32_t;
inline constexpr int kBitsPerWord = 32;

// ceil(n / 32) in 64 bits: n may exceed 2^31. n must be >= 0.
TUT_BITMASK_HD constexpr std::int64_t word_count(std::int64_t n) { return (n + kBitsPerWord - 1) / kBitsPerWord; }

// Where element i lives.
TUT_BITMASK_HD constexpr std::int64_t word_of(std::int64_t i) { return i / kBitsPerWord; }
TUT_BITMASK_HD constexpr int bit_of(std::int64_t i) { return static_cast<int>(i % kBitsPerWord); }

// Whether element i's bit is set.
TUT_BITMASK_HD inline bool test(const Word* words, std::int64_t i) { return (words[word_of(i)] >> bit_of(i)) & 1u; }

// The bits of word w that belong to elements in [0, n): all 32 for a full word, the low n % 32 for
// a partial last word, none past it.
TUT_BITMASK_HD constexpr Word valid_bits(std::int64_t n, std::int64_t w) {
  const std::int64_t first = w * kBitsPerWord;
  if (first >= n) return 0u;
  const std::int64_t count = n - first;
  return count >= kBitsPerWord ? ~Word{0} : (Word{1} << count) - 1u;
}

// The bits of the last word that must be zero (0 when n is a multiple of 32).
TUT_BITMASK_HD constexpr Word padding_bits(std::int64_t n) {
  return n % kBitsPerWord == 0 ? Word{0} : ~valid_bits(n, word_count(n) - 1);
}

// Word w of the mask of an n-element tensor: bit j set iff keep(32·w + j), zero past n.
template <class Keep>
Word reference_word(std::int64_t n, std::int64_t w, Keep&& keep) {
  Word out = 0;
  const std::int64_t first = w * kBitsPerWord;
  for (int j = 0; j < kBitsPerWord && first + j < n; ++j)
    if (keep(first + j)) out |= Word{1} << j;
  return out;
}

// The whole mask, on the host.
template <class Keep>
std::vector<Word> reference(std::int64_t n, Keep&& keep) {
  if (n < 0) throw std::invalid_argument("bitmask::reference: n must be >= 0, got " + std::to_string(n));
  std::vector<Word> out(static_cast<std::size_t>(word_count(n)));
  for (std::int64_t w = 0; w < word_count(n); ++w) out[static_cast<std::size_t>(w)] = reference_word(n, w, keep);
  return out;
}

// ---- Writing words from a warp's ballots ----------------------------------------------------------

// The plain definition: bit i of x (i < 32 / kPer) to bit kPer * i.
template <int kPer>
TUT_BITMASK_INLINE Word spread_loop(Word x) {
  Word out = 0;
  for (int i = 0; i < kBitsPerWord / kPer; ++i) out |= ((x >> i) & 1u) << (kPer * i);
  return out;
}

template <int kPer>
TUT_BITMASK_INLINE Word spread(Word x) {
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

// Word w (0 .. kPer-1) of the warp's chunk of 32 * kPer elements, from its kPer ballots.
template <int kPer>
TUT_BITMASK_INLINE Word word_from_ballots(const Word (&ballots)[kPer], int w) {
  constexpr int kLanesPerWord = kBitsPerWord / kPer;
  constexpr Word kField = kLanesPerWord == 32 ? ~Word{0} : (Word{1} << kLanesPerWord) - 1u;
  Word word = 0;
  for (int k = 0; k < kPer; ++k) word |= spread<kPer>((ballots[k] >> (kLanesPerWord * w)) & kField) << k;
  return word;
}

}  // namespace tut::bitmask

#undef TUT_BITMASK_HD
#undef TUT_BITMASK_INLINE
