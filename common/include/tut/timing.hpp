// Timing with CUDA events, and the machine's own ceilings measured in the same process.
#pragma once

#include "tut/buffer.hpp"

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
  // When non-zero, a buffer of this many bytes is read before every repetition (L2Flush, outside
  // the timed interval), so no repetition finds the previous one's data in L2.
  std::size_t flush_bytes = 0;
  // When non-zero, one GPU thread spins this many SM clock cycles before each repetition's start
  // event (untimed), so that the host has enqueued the launch before the GPU reaches it: the events
  // then time the GPU's work, not a wait for the host. common/tools/torch_peers.py's races do the same.
  long long busy_cycles = 0;
};

// The L2 flush: a kernel that reads a buffer of `bytes` (filled once, at construction). Reading
// twice the L2's size leaves it full of clean lines of that buffer: the timed launch finds none of
// its data there, and no dirty line to write back either. Overwriting the buffer instead (a
// memset) would leave every line dirty, and the timed launch would pay for writing them back:
// 1.2-1.3x the time of a 8-128 MiB read on the H100 (tut_l2_flush, common/results/). Nsight
// Compute's --cache-control all likewise starts each kernel with clean caches. bytes = 0: nothing.
class L2Flush {
 public:
  explicit L2Flush(std::size_t bytes);
  void operator()(cudaStream_t stream);  // enqueues the read on `stream`
  std::size_t bytes() const { return buf_.bytes(); }

 private:
  DeviceBuffer<uint4> buf_;
  DeviceBuffer<uint4> sink_;
};

// The flush's kernel, for tools that time it: reads every 16-byte value of src[0, n) once,
// grid-stride, `grid` blocks of 256 threads. `sink` (256 values) is stored to only if the XOR of the
// values a thread read is 0x9E3779B9, which keeps every load; an all-zero buffer never stores.
void read_through(const uint4* src, std::size_t n, uint4* sink, unsigned grid, cudaStream_t stream);

// What is timed: for each repetition, `before(stream)` (resets), the L2 flush and the spin are
// enqueued first, then a start event, `launch(stream)`, and a stop event; the sample is the time between
// the two events. The launch must not synchronize. Warm-up launches (with `before`) come first
// and are not timed. Throws tut::CudaError on any CUDA failure.
Stats time_kernel(const std::function<void(cudaStream_t)>& launch, const TimingOptions& opt,
                  cudaStream_t stream = nullptr, const std::function<void(cudaStream_t)>& before = {});

// The flush size the benchmarks use: twice the L2 when the working set is under four times the
// L2 (it could otherwise be served from cache), zero otherwise.
std::size_t l2_flush_bytes(std::size_t working_set_bytes, std::size_t l2_bytes);

struct CopyShape {
  std::string name;
  bool own = true;  // false: the driver's cudaMemcpyAsync
  double GBps = 0;  // bytes read + bytes written per second, median repetition
  Stats stats;
};

struct CopyCeiling {
  double GBps = 0;          // the best candidate: every "fraction of copy" divides by this
  std::size_t bytes = 0;    // bytes moved per repetition (read + write)
  Stats stats;
  std::string shape;        // the candidate that won
  std::vector<CopyShape> candidates;
  double read_GBps = 0;     // a read-only stream over the same bytes
  double write_GBps = 0;    // a write-only stream
  const CopyShape* best_own() const;
};

// The device's copy bandwidth, measured now over max(min_bytes, 8 x L2) of source (less only if
// free memory is short): our own copy kernels in several launch shapes and the driver's
// device-to-device cudaMemcpyAsync, interleaved in rounds; the best one is the ceiling. Also
// times a read-only and a write-only stream, which explain how a read-heavy problem can run
// above the copy's even mix of reads and writes.
CopyCeiling measure_copy_ceiling(int reps = 30, std::size_t min_bytes = std::size_t{1} << 30);

// The SM's arithmetic throughput, measured now: many threads, each with independent chains of
// fused multiply-adds (FFMA on float, HFMA2 on pairs of halves, two FLOPs per lane per
// instruction), long enough to run about a millisecond. `sm_clock_MHz` is the SM clock the FP32
// kernel saw while it ran (clock64() cycles over %globaltimer nanoseconds in one of its blocks):
// the clock a theoretical peak should be computed at.
struct ComputeCeiling {
  double fp32_fma_GFLOPs = 0;
  double fp16_hfma2_GFLOPs = 0;
  double sm_clock_MHz = 0;
  Stats fp32, fp16;  // per launch
};
ComputeCeiling measure_compute_ceiling(int reps = 10);

// Latency of one dependent load that misses the caches (a pointer chase over `bytes`), in ns.
// Unloaded: a lower bound on the latency loads see while the memory system is busy.
double measure_dram_latency_ns(std::size_t bytes = std::size_t{1} << 30, int hops = 20000);

}  // namespace tut
