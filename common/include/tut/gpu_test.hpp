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

namespace tut {

inline doctest::skip needs_gpu() { return doctest::skip(!has_cuda_device()); }

// Skips when the device has less than `bytes` of total memory (for the > 2^31-element tests).
doctest::skip needs_gpu_memory(std::size_t bytes);

}  // namespace tut
