// For doctest files with GPU tests. Decorate each such test case:
//
//   TEST_CASE("..." * tut::needs_gpu()) { ... }
//
// Without a CUDA device the case is reported as skipped, never as passed. Link the executable
// with common's gpu test main (the `common_gpu_test_main_dep` dependency): it prints the seed,
// and exits 77 (Meson's skip code) when there is no device and nothing failed, so the whole
// executable also counts as skipped.
#pragma once

#include "tut/device.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>

namespace tut {

// True when the tests run under compute-sanitizer (the test setups set TUT_SANITIZER to the
// tool's name). Timing claims do not hold there, and deliberate API errors are reported.
inline bool under_sanitizer() {
  const char* s = std::getenv("TUT_SANITIZER");
  return s && *s;
}

// Decorators combine by the last one winning, so a further reason to skip is passed in here
// rather than as a second doctest::skip.
inline doctest::skip needs_gpu(bool skip_anyway = false) { return doctest::skip(skip_anyway || !has_cuda_device()); }

// Skips when the device has less than `bytes` of total memory (for the > 2^31-element tests).
doctest::skip needs_gpu_memory(std::size_t bytes);

}  // namespace tut
