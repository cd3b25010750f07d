// Timing with CUDA events: warm up, repeat, report the median with min and max.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tut {

struct Stats {
  double median = 0, min = 0, max = 0;  // milliseconds
  int reps = 0;
};

Stats summarize(std::vector<double> samples_ms);

struct TimingOptions {
  int warmup = 5;
  int reps = 50;
  // When non-zero, a buffer of this many bytes is overwritten before every repetition
  // (outside the timed interval), so no repetition finds the previous one's data in L2.
  std::size_t flush_bytes = 0;
};

// Times `launch(stream)` once per repetition between two events. The callable enqueues work
// on the stream and must not synchronise. Throws tut::CudaError on any CUDA failure.
Stats time_kernel(const std::function<void(cudaStream_t)>& launch, const TimingOptions& opt,
                  cudaStream_t stream = nullptr);

// The flush size the benchmarks use: twice the L2 when the working set is under four times
// the L2 (it could otherwise be served from cache), zero otherwise.
std::size_t l2_flush_bytes(std::size_t working_set_bytes, std::size_t l2_bytes);

struct CopyCeiling {
  double GBps = 0;           // bytes read + bytes written per second, median repetition
  std::size_t bytes = 0;     // bytes moved per repetition (read + write)
  Stats stats;
  std::string shape;         // the launch shape that achieved it
};

// The device's copy bandwidth, measured now: a grid-stride copy of 16-byte values over
// max(min_bytes, 8 x L2) of source (less only if free memory is short), timed in a few launch
// shapes (grid-stride loops with 1 or 4 loads in flight per thread, and one 16 KiB tile per
// block); the best one counts.
CopyCeiling measure_copy_ceiling(int reps = 30, std::size_t min_bytes = std::size_t{1} << 30);

}  // namespace tut
