// doctest loops over a chapter's registry: every version at every awkward size, and every
// version that claims any alignment at every pointer offset. `grade(launch, n, in_off, out_off)`
// returns a VerifyResult.
#pragma once

#include "tut/elementwise_problem.hpp"

#include <doctest/doctest.h>

namespace tut {

template <class Ladder, class Grade>
void check_ladder_sizes(const Ladder& ladder, Grade grade) {
  for (const auto& v : ladder.versions) {
    for (std::int64_t n : kGradeSizes) {
      const auto r = grade(v.launch, n, 0, 0);
      CHECK_MESSAGE(r.ok(), ladder.problem.name, " ", v.name, " n=", n, ": ", r.summary());
    }
  }
}

// Every version at one size (the > 2^31-element tests).
template <class Ladder, class Grade>
void check_ladder_at(const Ladder& ladder, Grade grade, std::int64_t n) {
  for (const auto& v : ladder.versions) {
    const auto r = grade(v.launch, n, 0, 0);
    CHECK_MESSAGE(r.ok(), ladder.problem.name, " ", v.name, " n=", n, ": ", r.summary());
  }
}

// Offsets 0-7 elements for input and output: equal offsets (pointers aligned to each other but
// not to 16 bytes) and offsets 3 apart (not even aligned to each other).
template <class Ladder, class Grade>
void check_ladder_offsets(const Ladder& ladder, Grade grade) {
  for (const auto& v : ladder.versions) {
    if (!v.any_alignment) continue;
    for (std::int64_t n : {33, 1000, 4099}) {
      for (int off = 0; off < kGuard; ++off) {
        for (int out_off : {off, (off + 3) % kGuard}) {
          const auto r = grade(v.launch, n, off, out_off);
          CHECK_MESSAGE(r.ok(), ladder.problem.name, " ", v.name, " n=", n, " in+", off, " out+", out_off, ": ",
                        r.summary());
        }
      }
    }
  }
}

}  // namespace tut
