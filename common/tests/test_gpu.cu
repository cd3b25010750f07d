// common on a real device: buffers, error reporting, device info, timing, the copy ceiling.
#include <doctest/doctest.h>

#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/gpu_test.hpp"
#include "tut/timing.hpp"

#include <cstdint>
#include <numeric>
#include <vector>

namespace {
__global__ void add_one(int* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}
}  // namespace

TEST_CASE("DeviceBuffer round-trips, poisons and moves" * tut::needs_gpu()) {
  std::vector<int> host(1000);
  std::iota(host.begin(), host.end(), -500);
  tut::DeviceBuffer<int> d(host);
  CHECK(d.size() == 1000);
  CHECK(d.bytes() == 4000);
  CHECK(d.to_host() == host);
  d.poison();
  const auto poisoned = d.to_host();
  CHECK(poisoned[0] == static_cast<int>(0xCDCDCDCDu));
  CHECK(poisoned[999] == static_cast<int>(0xCDCDCDCDu));
  tut::DeviceBuffer<int> moved(std::move(d));
  CHECK(d.data() == nullptr);
  CHECK(moved.size() == 1000);
  CHECK_THROWS_AS(moved.upload(host.data(), 10, 995), std::out_of_range);
  tut::DeviceBuffer<int> empty(0);
  CHECK(empty.to_host().empty());
}

// compute-sanitizer reports the deliberate API errors below as findings, so this case is skipped there.
TEST_CASE("a failing call throws with the expression and CUDA's reason" * tut::needs_gpu(tut::under_sanitizer())) {
  try {
    TUT_CUDA(cudaSetDevice(4096));
    FAIL("cudaSetDevice(4096) should have thrown");
  } catch (const tut::CudaError& e) {
    const std::string what = e.what();
    CHECK(e.code() == cudaErrorInvalidDevice);
    CHECK(what.find("cudaSetDevice(4096)") != std::string::npos);
    CHECK(what.find("test_gpu.cu") != std::string::npos);
  }
  // A launch with an impossible block size is reported at the launch site, then cleared.
  tut::DeviceBuffer<int> d(std::vector<int>(10, 0));
  add_one<<<1, 4096>>>(d.data(), 10);
  CHECK_THROWS_AS(TUT_CHECK_LAUNCH("add_one"), tut::CudaError);
  add_one<<<1, 32>>>(d.data(), 10);
  CHECK_NOTHROW(TUT_CHECK_LAUNCH("add_one"));
  CHECK_NOTHROW(TUT_CUDA(cudaDeviceSynchronize()));
}

TEST_CASE("device info is plausible" * tut::needs_gpu()) {
  const auto d = tut::query_device();
  CHECK(!d.name.empty());
  CHECK(d.sm_count > 0);
  CHECK(d.max_threads_per_sm >= 1024);
  CHECK(d.l2_bytes > 0);
  CHECK(d.theoretical_dram_GBps() > 50);
  CHECK(d.total_mem_bytes > (std::size_t{1} << 30));
  CHECK(tut::registers_per_thread(reinterpret_cast<const void*>(&add_one)) > 0);
  CHECK(tut::registers_per_thread(nullptr) == -1);
}

TEST_CASE("time_kernel returns ordered statistics and runs the launch warmup+reps times" * tut::needs_gpu()) {
  tut::DeviceBuffer<int> d(std::vector<int>(1 << 20, 0));
  tut::TimingOptions opt;
  opt.warmup = 2;
  opt.reps = 7;
  opt.flush_bytes = 1 << 20;
  const auto s = tut::time_kernel([&](cudaStream_t st) {
    add_one<<<(1 << 20) / 256, 256, 0, st>>>(d.data(), 1 << 20);
    TUT_CHECK_LAUNCH("add_one");
  }, opt);
  CHECK(s.reps == 7);
  CHECK(s.min > 0);
  CHECK(s.min <= s.median);
  CHECK(s.median <= s.max);
  const auto h = d.to_host();
  CHECK(h.front() == 9);
  CHECK(h.back() == 9);
}

TEST_CASE("the copy ceiling is positive and below the datasheet DRAM bandwidth" * tut::needs_gpu()) {
  const auto d = tut::query_device();
  const auto c = tut::measure_copy_ceiling(5, std::size_t{256} << 20);
  MESSAGE("copy ceiling " << c.GBps << " GB/s (" << c.shape << "); datasheet " << d.theoretical_dram_GBps() << " GB/s");
  CHECK(c.bytes >= std::size_t{128} << 20);
  CHECK(c.GBps > 0);
  CHECK(!c.shape.empty());
  if (!tut::under_sanitizer()) {  // instrumented kernels run far slower
    CHECK(c.GBps > 0.2 * d.theoretical_dram_GBps());
    CHECK(c.GBps < 1.05 * d.theoretical_dram_GBps());
  }
}
