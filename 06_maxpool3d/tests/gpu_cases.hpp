// The GPU tests' cases, apart from the tests so that a CPU test can check that every one of them
// is a valid case (a case the GPU tests could not even build would only fail on a GPU).
#pragma once

#include "cases.hpp"
#include "tut/gpu_test.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace ch06::test_cases {

inline const char* const kFormats[] = {"none", "int64", "compact"};

// Kernels 1, 2, 3, 4, 5, 8; strides 1, 2, the kernel, and past it; padding 0, 1 and kernel / 2;
// odd sizes a little larger than the window. Layout and index format rotate from case to case,
// so each combination meets every format and both layouts somewhere in the list. Under
// compute-sanitizer, every third case.
inline std::vector<tut::Case> window_cases() {
  std::vector<tut::Case> out;
  int n = 0;
  for (std::int64_t k : {1, 2, 3, 4, 5, 8}) {
    std::set<std::int64_t> strides = {1, 2, k, k + 1};
    std::set<std::int64_t> pads = {0, 1, k / 2};
    for (std::int64_t s : strides)
      for (std::int64_t p : pads) {
        if (2 * p > k) continue;
        ++n;
        if (tut::under_sanitizer() && n % 3 != 0) continue;
        Spec spec{{2, 3, k + 3, k + 4, k + 6}, {k}, {s}, {p}};
        spec.layout = n % 2 ? "NCDHW" : "NDHWC";
        spec.indices = kFormats[n % 3];
        out.push_back(ch06::make_pool_case(spec, false));
      }
  }
  return out;
}

// The rest of the lesson's list: non-cubic windows, dilation, ceil_mode, a 1x1x1x1x1 tensor, a
// window the size of the input, channel counts that do and do not fill v7's 16-byte packs, and a
// window of more than 256 cells (the 16-bit compact index).
inline std::vector<tut::Case> special_cases() {
  std::vector<Spec> specs = {
      {{2, 5, 6, 11, 13}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}},
      {{2, 3, 9, 10, 11}, {2, 3, 4}, {2, 3, 4}, {1, 1, 2}},
      {{1, 4, 9, 10, 11}, {2, 3, 4}, {1, 2, 3}, {0, 1, 2}},
      {{2, 3, 9, 10, 11}, {3}, {1}, {1}, {2}},                  // dilation 2
      {{1, 2, 13, 12, 11}, {3, 2, 2}, {2, 1, 3}, {1, 1, 0}, {2, 3, 1}},  // dilation per axis
      {{2, 3, 9, 10, 11}, {2}, {2}, {1}, {1}, 1},               // ceil_mode with padding
      {{2, 3, 7, 9, 11}, {3}, {2}, {0}, {1}, 1},                // ceil_mode: windows past the end
      {{2, 3, 10, 10, 10}, {3}, {3}, {1}, {2}, 1},              // both
      {{1, 1, 1, 1, 1}, {1}, {1}, {0}},                         // one element
      {{2, 3, 5, 6, 7}, {5, 6, 7}, {1}, {2, 3, 3}},             // a window the size of the input, padded
      {{3, 2, 5, 6, 7}, {5, 6, 7}, {}, {0}},                    // the whole volume, one output
      {{1, 2, 12, 12, 12}, {8}, {1}, {4}},                      // 512 cells: the int16 compact index
      {{2, 6, 5, 7, 9}, {3}, {2}, {1}},                         // C = 6: not a multiple of 4
      {{2, 8, 5, 7, 9}, {2}, {1}, {1}},                         // C = 8: v7's 16-byte packs
      {{1, 16, 9, 9, 9}, {3}, {1}, {1}},
      {{2, 3, 5, 6, 8}, {5, 6, 8}, {}, {0}},                    // one run per plane, W = 8: v9's 16-byte pieces
      {{2, 3, 8, 8, 8}, {8}, {}, {0}},                          // a run of 512 cells: 32 lanes, int16 compact
      {{2, 3, 9, 6, 8}, {3, 6, 8}, {2, 6, 8}, {1, 0, 0}},       // runs of whole planes, padded along D
      {{2, 3, 10, 6, 8}, {2, 6, 8}, {3, 6, 8}, {0}, {1}, 1},    // runs of planes, ceil_mode: the last one short
      {{2, 3, 4, 9, 12}, {1, 3, 12}, {1, 2, 12}, {0, 1, 0}},    // kD = 1: runs of rows, padded along H
      {{3, 5, 4, 5, 7}, {2, 5, 7}, {2, 5, 7}, {1, 0, 0}},       // runs with W = 7: one-element pieces
      {{2, 2, 5, 6, 10}, {2}, {2}, {0}},                        // C = 2: v7's 16-byte row pieces, 2 cells each
      {{1, 2, 6, 7, 12}, {4}, {4}, {2}},                        // C = 2, padded along W by whole pieces
      {{2, 4, 7, 9, 10}, {2}, {2}, {0}, {1}, 1},                // C = 4 (half: pieces of 2 cells), ceil_mode
  };
  std::vector<tut::Case> out;
  int n = 0;
  for (Spec s : specs) {
    for (const char* layout : {"NCDHW", "NDHWC"})
      for (const char* idx : kFormats) {
        ++n;
        if (tut::under_sanitizer() && n % 4 != 0) continue;
        s.layout = layout;
        s.indices = idx;
        out.push_back(ch06::make_pool_case(s, false));
      }
  }
  return out;
}

inline std::vector<tut::Case> backward_cases() {
  std::vector<Spec> specs = {
      {{2, 3, 9, 10, 11}, {3}, {2}, {1}},       // overlap 1-2 per axis
      {{2, 3, 8, 10, 12}, {2}, {2}, {0}},       // no overlap
      {{1, 4, 9, 9, 9}, {3}, {1}, {1}},         // stride 1: up to 27 outputs per input
      {{1, 2, 12, 12, 12}, {8}, {1}, {4}},      // 512 cells, int16 compact
      {{2, 3, 9, 10, 11}, {2, 3, 4}, {1, 2, 3}, {1, 1, 2}},
      {{2, 3, 9, 10, 11}, {3}, {1}, {1}, {2}},  // dilation
      {{2, 3, 9, 10, 11}, {2}, {2}, {1}, {1}, 1},  // ceil_mode
      {{1, 1, 1, 1, 1}, {1}, {1}, {0}},
      {{2, 3, 11, 12, 13}, {2}, {4}, {1}, {2}},    // dilated windows that do not overlap (v3)
      {{2, 3, 9, 10, 11}, {3, 4, 5}, {1, 1, 1}, {1, 2, 2}},  // v4 with a bit per (D, H) slot (60 outputs)
      {{2, 8, 8, 10, 12}, {2}, {3}, {1}},          // gaps between windows, C = 8 (v3's 16-byte stores)
      {{2, 3, 8, 8, 16}, {2, 2, 4}, {2, 2, 4}, {0}},  // 4-element chunks in one output, rows split (v13)
  };
  std::vector<tut::Case> out;
  int n = 0;
  for (Spec s : specs)
    for (const char* layout : {"NCDHW", "NDHWC"})
      for (const char* idx : {"int64", "compact"}) {
        ++n;
        if (tut::under_sanitizer() && n % 3 != 0) continue;
        s.layout = layout;
        s.indices = idx;
        out.push_back(ch06::make_pool_case(s, true));
      }
  return out;
}

// The exercise's cases for a window of k^3 cells: strides 1, 2, k and k + 1, padding 0 to k / 2,
// floor and ceil mode, every index format.
inline std::vector<tut::Case> exercise_cases(std::int64_t k) {
  std::vector<tut::Case> cases;
  int n = 0;
  for (std::int64_t s : std::set<std::int64_t>{1, 2, k, k + 1})
    for (std::int64_t p = 0; 2 * p <= k; ++p)
      for (std::int64_t ceil : {0, 1}) {
        Spec spec{{2, 3, k + 4, k + 5, k + 7}, {k}, {s}, {p}, {1}, ceil};
        spec.indices = kFormats[n++ % 3];
        cases.push_back(ch06::make_pool_case(spec, false));
      }
  return cases;
}

}  // namespace ch06::test_cases
